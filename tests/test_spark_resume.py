"""Resume: a campaign whose Python worker is killed keeps going (the wave runs again), and one
whose driver is killed mid-campaign (SIGKILL to the command's process group: the driver and its
JVM) resumes with ``--resume`` and ends with every seed exactly once, each row equal to a run
without Spark."""

from __future__ import annotations

import os
import signal

import pytest

from streamproof.spark_harness import executor, spec as specs, testing
from streamproof.spark_harness.spec import DETERMINISTIC_COLUMNS

pytestmark = pytest.mark.timeout(2400)
PROPS = ["timers.differential", "mailbox.differential"]
SEEDS = 24  # 2 properties x 24 seeds in chunks of 2: 24 chunks (9 committed before the driver is killed)
ARGS = ["campaign", *PROPS, "--master", "local[2]", "--seeds", "0:24", "--examples", "2", "--campaign", "kill",
        "--chunk-seeds", "2", "--wave-seconds", "1", "--no-report"]


def chunks(out) -> int:
    return testing.committed_chunks(out, "kill")


wait_for = testing.wait_for


def python_workers(driver_pid: int) -> list[int]:
    """The Python workers of the campaign's JVM: children of the pyspark daemon."""
    workers = []
    for pid in testing.descendants(driver_pid):
        if "pyspark.daemon" in testing.cmdline(pid):
            workers += [c for c in testing.children(pid) if "pyspark.daemon" in testing.cmdline(c)]
    return workers


def test_killed_worker_then_killed_driver_then_resume(tmp_path):
    problem = testing.java_problem()
    if problem:
        pytest.fail(problem)
    out = tmp_path / "results"
    out.mkdir()
    log = open(tmp_path / "first-run.log", "wb")
    proc = testing.start_streamproof(*ARGS, "--out", out, cwd=tmp_path, log=log)
    try:
        wait_for(lambda: chunks(out) >= 1 or proc.poll() is not None, 900, "the first committed chunks")  # generous: a loaded machine starts slowly
        assert proc.poll() is None, (tmp_path / "first-run.log").read_text()
        before = chunks(out)
        victim = python_workers(proc.pid)[0]
        os.kill(victim, signal.SIGKILL)  # a lost executor process: its wave fails and runs again
        wait_for(lambda: chunks(out) >= before + 8 or proc.poll() is not None, 900, "more committed chunks")
        assert proc.poll() is None, "the campaign ended before the driver could be killed"
        testing.kill_group(proc)  # the lost driver
    finally:
        if proc.poll() is None:
            testing.kill_group(proc)
        log.close()
    committed = chunks(out)
    assert 0 < committed < SEEDS, committed
    assert not [p for p in testing.descendants(proc.pid)], "processes of the killed campaign are left"

    result = testing.streamproof(*ARGS, "--out", out, "--resume", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    summary = testing.summary(result)
    assert summary["verified"] and summary["holds"]
    run = summary["run"]
    assert 0 < run["chunks_resumed"] <= committed and run["chunks_run"] == SEEDS - run["chunks_resumed"]
    rows = testing.deterministic_rows(out, "kill")
    spec = specs.CampaignSpec.from_json(open(next((out / "_campaigns" / "kill" / "spec").glob("part-*"))).read())
    expected = {}
    for prop in PROPS:
        for r in executor.run_seeds_locally(spec.executor_config(prop), range(0, SEEDS)):
            expected[(r["property"], r["seed"])] = tuple(r[c] for c in DETERMINISTIC_COLUMNS)
    assert rows == expected  # every seed exactly once, each as a run without Spark computes it

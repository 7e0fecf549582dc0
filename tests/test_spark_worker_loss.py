"""A standalone cluster that loses a worker mid-campaign: the worker daemon, its executor JVM and
their Python workers are killed (SIGKILL) once the first chunks are committed. Spark reschedules
the lost tasks on the remaining worker; the campaign ends with exit 0 and every seed exactly once,
each row equal to a run without Spark."""

from __future__ import annotations

import json
import os
import signal

import pytest

from streamproof.spark_harness import executor, spec as specs, testing
from streamproof.spark_harness.cluster import LocalStandalone
from streamproof.spark_harness.spec import DETERMINISTIC_COLUMNS

pytestmark = pytest.mark.timeout(1800)
PROPS = ["timers.differential", "mailbox.differential"]
SEEDS = 10


def chunks(out) -> int:
    return testing.committed_chunks(out, "lost")


wait_for = testing.wait_for


def test_a_campaign_that_loses_a_worker_commits_every_seed_once(tmp_path):
    problem = testing.java_problem()
    if problem:
        pytest.fail(problem)
    out = tmp_path / "results"
    out.mkdir()
    with LocalStandalone(workers=2, cores=1, memory="1g", work_dir=str(tmp_path / "standalone")) as cluster:
        log_path = tmp_path / "campaign.log"
        with open(log_path, "wb") as log:
            proc = testing.start_streamproof(
                "campaign", *PROPS, "--master", cluster.master_url, "--seeds", f"0:{SEEDS}", "--examples", "2",
                "--campaign", "lost", "--chunk-seeds", "1", "--wave-seconds", "1", "--no-report", "--json",
                "--out", out, cwd=tmp_path, log=log)
            try:
                wait_for(lambda: chunks(out) >= 1 or proc.poll() is not None, 900, "the first committed chunks")
                assert proc.poll() is None, log_path.read_text()
                assert chunks(out) < 2 * SEEDS, "the campaign was over before a worker could be lost"
                worker = cluster.processes[-1]  # the second worker daemon, its executor and Python workers
                victims = [worker.pid, *testing.descendants(worker.pid)]
                assert any("CoarseGrainedExecutorBackend" in testing.cmdline(p) for p in victims), \
                    "the worker had no executor of the campaign"
                for pid in victims:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                assert proc.wait(900) == 0, log_path.read_text()[-3000:]
            finally:
                if proc.poll() is None:
                    testing.kill_group(proc)
    text = log_path.read_text()
    summary = json.loads([line for line in text.splitlines() if line.startswith("{")][-1])
    assert summary["verified"] and summary["holds"], text[-3000:]
    rows = testing.deterministic_rows(out, "lost")  # raises on a seed committed twice
    spec = specs.CampaignSpec.from_json(open(next((out / "_campaigns" / "lost" / "spec").glob("part-*"))).read())
    expected = {}
    for prop in PROPS:
        for r in executor.run_seeds_locally(spec.executor_config(prop), range(0, SEEDS)):
            expected[(r["property"], r["seed"])] = tuple(r[c] for c in DETERMINISTIC_COLUMNS)
    assert rows == expected  # every seed exactly once, each as a run without Spark computes it

"""Campaigns on an embedded classic Spark session (local[2], loopback only), in this process:
exactly once, seed for seed equal to a run without Spark, an injected bug found and replayed,
resume of an interrupted campaign (and of a tampered chunk), per-seed timeout, exhaustive small
scope, progress, the report from Spark's Parquet."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from streamproof.properties import registry
from streamproof.properties.bugzoo import get_variant
from streamproof.properties.scenario import load_scenario, load_scenario_file
from streamproof.spark_harness import campaign as camp
from streamproof.spark_harness import exhaustive, executor, progress, report, session, ship, testing
from streamproof.spark_harness.spec import DETERMINISTIC_COLUMNS, VERDICTS

BUG = "register-at-watermark-fires-at-once"
# The per-seed time limit of these campaigns: generous, so that a loaded 2-core machine never turns
# a seed into a timeout (which is not a failure anyway: the claims below never count on timeouts).
LIMIT = 600
pytestmark = pytest.mark.timeout(1800)


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    problem = testing.java_problem()
    if problem:
        pytest.fail(problem)
    s = session.start_session("local[2]", app_name="streamproof tests",
                              log_path=tmp_path_factory.mktemp("logs") / "jvm.log")
    ship.ship(s)
    camp.warm_up(s, 2)
    yield s
    session.stop_session(s)


def run(spark, spec, out, **kw):
    result = camp.run_campaign(spark, spec, str(out), camp.new_run("local[2]", "classic"), cores=2,
                               resume=kw.pop("resume", False), **kw)
    return result


def local_rows(spec, prop):
    rows = executor.run_seeds_locally(spec.executor_config(prop), range(spec.seed_start, spec.seed_end))
    return {(r["property"], r["seed"]): tuple(r[c] for c in DETERMINISTIC_COLUMNS) for r in rows}


def test_every_explorable_property_runs_exactly_once(spark, tmp_path):
    props, skipped = camp.explorable(None)
    assert "timers.differential" in props and not set(props) & set(skipped)
    spec = camp.plan("all", props, 0, 4, 1, 40, LIMIT, None, "test", 2, chunk_seeds=2)
    result = run(spark, spec, tmp_path)
    assert result.verified, result.verification
    assert [p["property"] for p in result.per_property] == props
    for p in result.per_property:
        assert p["rows"] == p["distinct_seeds"] == 4 and sum(p[v] for v in VERDICTS) == 4
    for prop in props:  # partitioned by campaign, property and chunk
        assert sorted(d.name for d in (tmp_path / "campaign=all" / f"property={prop}").iterdir()) == \
            ["chunk=0", "chunk=1"]
    assert result.run.seeds_run == 4 * len(props) and result.run.waves >= 1


def test_spark_gives_the_rows_of_a_run_without_spark(spark, tmp_path):
    spec = camp.plan("same", ["timers.differential"], 0, 16, 3, 40, LIMIT, None, "test", 2)
    result = run(spark, spec, tmp_path)
    assert result.holds and result.verified
    assert testing.deterministic_rows(tmp_path, "same") == local_rows(spec, "timers.differential")


def test_an_injected_bug_is_found_deduplicated_and_its_scenario_replays(spark, tmp_path):
    spec = camp.plan("bug", ["timers.differential"], 1, 6, 10, 40, LIMIT, BUG, "test", 2, chunk_seeds=2)
    result = run(spark, spec, tmp_path)
    assert result.verified and not result.holds
    assert result.failures, "the injected bug was not found"
    rows = report.read_rows(tmp_path, "bug")
    failed = rows[rows["verdict"] == "failed"]
    assert sum(f["seeds"] for f in result.failures) == len(failed)
    variant = get_variant(BUG)
    prop = registry.get(variant.caught_by)
    for f in result.failures:
        assert f["seed"] == failed[failed["signature"] == f["signature"]]["seed"].min()  # smallest seed
        scenario = load_scenario(f["scenario"])
        with variant.patch():
            assert not prop.check(scenario).holds
        assert prop.check(scenario).holds
        assert f["reproduce"] == f"streamproof bugzoo {BUG} --seed {f['seed']} --examples 10"
    md, reports = report.write_report(tmp_path)
    files = [f["file"] for r in reports for f in r.failures]
    assert files and all(load_scenario_file(p).family == "timers" for p in files)
    assert "Failures (deduplicated by signature)" in md.read_text()


def test_resume_runs_only_the_missing_chunks_and_ends_exactly_once(spark, tmp_path):
    spec = camp.plan("resume", ["timers.differential", "mailbox.differential"], 0, 12, 2, 40, LIMIT, None, "test", 2,
                     chunk_seeds=2)
    first = run(spark, spec, tmp_path, wave_seconds=1, max_waves=1, pipeline=1)
    assert first is None  # interrupted after one wave
    committed = camp.complete_chunks(spark, str(tmp_path), spec)
    assert 2 <= len(committed) < 12  # a wave: at least a chunk per core
    # tamper: a duplicated file in one committed chunk, a missing file in another
    (p1, c1), (p2, c2) = sorted(committed)[:2]
    d1 = tmp_path / "campaign=resume" / f"property={p1}" / f"chunk={c1}"
    part = next(d1.glob("part-*.parquet"))
    shutil.copy(part, d1 / ("part-duplicate" + part.name[4:]))
    for f in (tmp_path / "campaign=resume" / f"property={p2}" / f"chunk={c2}").glob("part-*.parquet"):
        f.unlink()
    stored = camp.load_spec(spark, str(tmp_path), "resume")
    assert stored == spec
    resumed = run(spark, stored, tmp_path, resume=True, stored=stored)
    assert resumed.verified, resumed.verification
    assert resumed.run.chunks_resumed == len(committed) - 2
    assert resumed.run.seeds_run == 24 - 2 * (len(committed) - 2)
    rows = testing.deterministic_rows(tmp_path, "resume")
    assert rows == {**local_rows(spec, "timers.differential"), **local_rows(spec, "mailbox.differential")}


def test_running_a_campaign_again_replaces_its_results(spark, tmp_path):
    first = camp.plan("again", ["timers.differential"], 0, 8, 1, 40, LIMIT, None, "test", 2, chunk_seeds=1)
    assert run(spark, first, tmp_path).verified
    other = camp.plan("keep", ["timers.differential"], 0, 2, 1, 40, LIMIT, None, "test", 2, chunk_seeds=1)
    assert run(spark, other, tmp_path).verified
    stored = camp.load_spec(spark, str(tmp_path), "again")
    second = camp.plan("again", ["timers.differential"], 0, 8, 1, 40, LIMIT, None, "test", 2, chunk_seeds=3)
    result = run(spark, second, tmp_path, stored=stored)  # not a resume: chunks of 1 seed must go
    assert result.verified, result.verification
    assert len(list((tmp_path / "campaign=again" / "property=timers.differential").glob("chunk=*"))) == 3
    assert len(testing.deterministic_rows(tmp_path, "keep")) == 2  # other campaigns stay
    # a fresh start: the old rows and run records are set aside, the report counts this run only
    assert result.run.previous == str(tmp_path / "_previous" / "again")
    assert len(list((tmp_path / "_previous" / "again" / "campaign=again").glob("property=*/chunk=*"))) == 8
    runs = report.read_meta(tmp_path, "again")[1]
    assert [r["run_id"] for r in runs] == [result.run.run_id] and runs[0]["seeds_run"] == 8
    _, reports = report.write_report(tmp_path, campaign="again")
    assert sum(run["seeds_run"] for run in reports[0].runs) == reports[0].rows == 8


def test_a_slow_seed_is_a_timeout_verdict_not_a_failed_task(spark, tmp_path):
    spec = camp.plan("slow", ["mailbox.differential"], 0, 4, 100_000, 40, 0.5, None, "test", 2, chunk_seeds=2)
    result = run(spark, spec, tmp_path)
    assert result.verified and result.per_property[0]["timeout"] == 4
    assert result.failures == [] and result.status == "timeout"  # a timeout is never a failure
    assert [f["verdict"] for f in result.timeouts] == ["timeout"] and result.timeouts[0]["seeds"] == 4


def test_exhaustive_small_scope_covers_every_scenario(spark, tmp_path):
    spec = camp.plan_exhaustive("small", ["timers.differential"], "timers", 2, {}, LIMIT, "test", 2)
    scope = exhaustive.build("timers", 2)
    assert spec.seeds == scope.total
    result = run(spark, spec, tmp_path)
    assert result.verified and result.holds
    cov = result.exhaustive["timers.differential"]
    assert cov["sequences"] == cov["sequences_total"] == scope.total
    assert cov["nodes"] == cov["nodes_total"] == scope.nodes
    states = set()  # the state after the prefix and after every step of every scenario
    for i in range(scope.total):
        states.update(scope.fingerprint(list(scope.scenario(i).steps))[len(scope.prefix) - 1:])
    assert cov["distinct_states"] == len(states) > 1


def test_progress_reaches_the_display_in_runs(spark, tmp_path):
    """The display counts runs (seeds x properties), fed by the task counts, and the executors
    report through the display's directory (the rows stay the same)."""
    console = Console(file=io.StringIO(), force_terminal=False)
    display = progress.CampaignDisplay("prog", console=console, local=True, heartbeat=1e9)
    spec = camp.plan("prog", ["timers.differential", "mailbox.differential"], 0, 6, 2, 40, LIMIT, None, "test", 2,
                     chunk_seeds=1)
    with display:
        result = run(spark, spec, tmp_path, bar=display, wave_seconds=1)
    assert result.verified and result.holds
    lines = console.file.getvalue().splitlines()
    assert lines[0].startswith("prog: 6 seeds x 2 properties: 12 runs, about "), lines
    assert "12/12 runs done, 0 queued or running" in lines[-1], lines  # the last wave committed
    assert "\r" not in console.file.getvalue() and "\x1b" not in console.file.getvalue()


def test_a_heartbeat_comes_while_a_slow_wave_runs(spark, tmp_path):
    """Seeds that each run into a 2 s limit: the one wave lasts several seconds, and progress lines
    (runs done, queued or running, elapsed) come while it runs, not only when it commits."""
    console = Console(file=io.StringIO(), force_terminal=False)
    display = progress.CampaignDisplay("beat", console=console, heartbeat=0.0)
    spec = camp.plan("beat", ["mailbox.differential"], 0, 4, 100_000, 40, 2.0, None, "test", 2, chunk_seeds=1)
    with display:
        result = run(spark, spec, tmp_path, bar=display)
    assert result.verified and result.per_property[0]["timeout"] == 4
    lines = console.file.getvalue().splitlines()
    committed = next(i for i, line in enumerate(lines) if "committed: 4/4 runs done" in line)
    assert any("runs done" in line and "queued or running" in line for line in lines[:committed]), lines
    runs = report.read_meta(tmp_path, "beat")[1]
    assert [r["status"] for r in runs] == ["completed"]


def test_local_runs_listen_on_loopback_only(spark):
    conf = {k: spark.conf.get(k) for k in ("spark.ui.enabled", "spark.driver.bindAddress", "spark.driver.host",
                                           "spark.ui.showConsoleProgress")}
    assert conf == {"spark.ui.enabled": "false", "spark.driver.bindAddress": "127.0.0.1",
                    "spark.driver.host": "127.0.0.1", "spark.ui.showConsoleProgress": "false"}
    jvm = spark.sparkContext._gateway.proc.pid
    sockets = testing.listening([jvm, *testing.descendants(jvm)])
    assert sockets, "the JVM listens somewhere (block manager, RPC)"
    assert all(s.startswith("127.0.0.1:") for s in sockets), sockets


def test_quiet_by_default():
    assert Path(session.CONF_DIR, "log4j2.properties").read_text().count("level = error") >= 2


def test_a_strategy_property_finds_its_injected_bug_on_spark(spark, tmp_path):
    """job.* properties explore through a scenario strategy (@given), not a state machine."""
    bug = "finish-drops-deferrable-mail"  # found and shrunk in seconds (a 3-step counterexample)
    variant = get_variant(bug)
    prop = registry.get(variant.caught_by)
    assert prop.machine is None and prop.strategy is not None
    spec = camp.plan("job-bug", [prop.name], 0, 4, 30, 40, LIMIT, bug, "test", 2, chunk_seeds=2)
    result = run(spark, spec, tmp_path)
    assert result.verified and not result.holds and result.failures
    for f in result.failures:  # failures only: a seed that ran out of time is a timeout, not in this list
        assert f["verdict"] == "failed" and f["scenario"]
        scenario = load_scenario(f["scenario"])
        assert scenario.family == prop.family
        with variant.patch():
            assert not prop.check(scenario).holds
        assert prop.check(scenario).holds

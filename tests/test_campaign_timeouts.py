"""A timed-out seed is its own status (``timeout``), never a property failure: failure rows
always carry their scenario, and the summary and the report count timeouts apart (no JVM)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from streamproof.properties.scenario import load_scenario
from streamproof.spark_harness import campaign as camp
from streamproof.spark_harness import executor, report
from streamproof.spark_harness import spec as specs

from tests.test_spark_unit import BUG, _write_results, config

TIMER = "timers.differential"


def _rows():
    """Seeds 1..3 of timers.differential with the bug injected (they fail), seed 4 timed out."""
    failed = executor.run_seeds_locally(config(examples=10, inject=BUG, chunk=4), range(1, 4))
    slow = executor.run_seed(config(prop=TIMER, examples=100_000, timeout=0.3, chunk=4), 4)
    assert slow["verdict"] == "timeout" and slow["scenario"] is None
    return failed + [slow]


def test_the_report_counts_timeouts_apart_and_every_failure_has_its_scenario(tmp_path):
    spec = specs.CampaignSpec(name="slow", properties=[TIMER], seed_start=1, seed_end=5, examples=10,
                              inject=BUG, version="t", chunk_seeds={TIMER: 4})
    _write_results(tmp_path, _rows(), spec)
    md, (r,) = report.write_report(tmp_path)
    assert r.per_property[0]["timeout"] == 1
    assert r.failures and all(f["verdict"] == "failed" for f in r.failures)
    for f in r.failures:
        assert load_scenario(f["scenario"]).family == "timers"
    assert [f["verdict"] for f in r.timeouts] == ["timeout"] and r.timeouts[0]["seed"] == 4
    assert "Timeouts (not failures)" in md.read_text()


def test_a_failure_without_a_scenario_is_an_error_row(monkeypatch):
    from streamproof.properties import explore as explore_mod

    def fake(prop, examples, seed=None, step_count=40, shrink=True):
        return explore_mod.Exploration(prop.name, False, 1, 1, 0.0, {}, "crash: X", "boom", None)

    monkeypatch.setattr(explore_mod, "explore", fake)
    row = executor.run_seed(config(), 3)
    assert row["verdict"] == "error" and row["invariant"] == "no-scenario" and "boom" in row["message"]


def _result(per_property, failures=(), timeouts=(), errors=()):
    spec = specs.CampaignSpec(name="t", properties=[TIMER], seed_start=0, seed_end=4, examples=2,
                              timeout=5.0, version="t", chunk_seeds={TIMER: 2})
    run = camp.new_run("local[2]", "classic")
    return camp.CampaignResult(spec, "out", run, per_property, list(failures), True, [], timeouts=list(timeouts),
                               errors=list(errors))


def test_the_summary_says_timeouts_are_not_failures(capsys):
    from streamproof.cli.campaign_summary import print_summary, summary_json
    from streamproof.spark_harness.session import parse_master

    timeout = {"property": TIMER, "verdict": "timeout", "signature": "abc", "seeds": 1, "seed": 3,
               "message": "seed 3 exceeded the per-seed timeout of 5.0 s", "scenario": None,
               "reproduce": "streamproof check timers.differential --seed 3 --examples 2"}
    per = [{"property": TIMER, "rows": 4, "held": 3, "failed": 0, "timeout": 1, "error": 0, "signatures": 1,
            "examples": 8, "steps": 80, "seconds": 1.0}]
    result = _result(per, timeouts=[timeout])
    assert result.status == "timeout" and not result.holds and result.failures == []
    print_summary(result, [], parse_master("local[2]"), None)
    out = capsys.readouterr().out
    assert not [line for line in out.splitlines() if line.startswith("failures:")]
    assert "timeouts (not failures" in out and "first seed 3" in out
    assert out.rstrip().splitlines()[-1].startswith("NOT ALL HELD: no run failed, but 1 runs timed out")
    summary = summary_json(result, [], None)
    assert summary["status"] == "timeout" and summary["failures"] == [] and len(summary["timeouts"]) == 1
    json.dumps(summary, default=str)


def test_the_report_command_counts_timeouts(tmp_path):
    from streamproof.cli import cli

    spec = specs.CampaignSpec(name="slow", properties=[TIMER], seed_start=1, seed_end=5, examples=10,
                              inject=BUG, version="t", chunk_seeds={TIMER: 4})
    _write_results(tmp_path, _rows(), spec)
    result = CliRunner().invoke(cli, ["report", str(tmp_path)])
    assert result.exit_code == 1
    assert "1 timed out" in result.output


def test_a_deadline_raised_where_python_swallows_it_is_not_printed_and_comes_again(monkeypatch):
    """The per-seed deadline raised inside a weakref callback run by the garbage collector is
    swallowed by Python, which printed it ("Exception ignored", a PytestUnraisableExceptionWarning
    in this suite's run); its interval timer raises it again, so the deadline's own
    ``sys.unraisablehook`` drops it quietly, passes anything else on, and is removed with it."""
    import sys
    import time
    import weakref

    from streamproof.spark_harness.seedrun import Deadline, SeedTimeout

    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)

    class Thing:
        pass

    def raises(error):
        def callback(_):
            raise error
        return callback

    timed_out = False
    try:
        with Deadline(0.05) as deadline:
            for error in (SeedTimeout(), ValueError("other")):
                thing = Thing()
                ref = weakref.ref(thing, raises(error))
                del thing
                assert ref() is None
            end = time.monotonic() + 30
            while time.monotonic() < end:  # the interval timer raises it again, here
                time.sleep(0.01)
    except SeedTimeout:
        timed_out = True
    assert timed_out and deadline.expired
    assert [u.exc_type for u in seen] == [ValueError]
    assert sys.unraisablehook == seen.append

"""Counts that match what was asked: ``check --examples N`` reports the N examples run (not the
ones Hypothesis gave up on, nor shrinking's re-runs); reachability says it counts events, and
how many examples reached each case."""

from __future__ import annotations

import json

import hypothesis.strategies as st
from click.testing import CliRunner

from streamproof.cli import cli
from streamproof.properties.explore import explore
from streamproof.properties.registry import Property
from streamproof.properties.registry import get as get_property
from streamproof.properties.scenario import Scenario
from streamproof.properties.verdict import Verdict


def run(*args: str):
    try:
        runner = CliRunner(mix_stderr=False)  # click < 8.2
    except TypeError:
        runner = CliRunner()
    return runner.invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_check_reports_exactly_the_examples_asked_for():
    """timers.differential's state machine gives up on some runs (too much data, a rule's
    assumption): those were counted as examples, so --examples 60 reported more than 60."""
    result = run("check", "timers.differential", "--examples", "60", "--json")
    assert result.exit_code == 0, result.output
    [line] = [json.loads(ln) for ln in result.stdout.splitlines()]
    assert line["examples"] == 60, line["examples"]
    assert set(line["reach_examples"]) == set(line["reach"])
    assert all(0 <= n <= 60 for n in line["reach_examples"].values())
    assert all(line["reach_examples"][label] <= events for label, events in line["reach"].items())


def test_check_text_says_reachability_counts_events():
    result = run("check", "timers.differential", "--examples", "20", "--reach")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[1].split()[3] == "20"
    legend = [ln for ln in lines if ln.startswith("reachability:")]
    assert legend and "events" in legend[0] and "examples" in legend[0]
    label = get_property("timers.differential").reachability[0]
    [row] = [ln for ln in lines if ln.strip().startswith(label)]
    assert "event" in row and "of 20 examples" in row


def test_shrinking_is_not_counted_as_examples():
    """A failure at the k-th example is reported as k examples, however long shrinking ran."""
    seen = []

    def check(scenario: Scenario) -> Verdict:
        seen.append(scenario.params["n"])
        return Verdict("counts.fake", scenario.params["n"] < 50, [], None if scenario.params["n"] < 50 else "small",
                       "n too large")

    prop = Property("counts.fake", "timers", "fails on large n", check=check,
                    strategy=lambda: st.integers(0, 10_000).map(
                        lambda n: Scenario(family="timers", steps=(), params={"n": n})))
    e = explore(prop, 200, seed=0, shrink=True)
    assert not e.holds
    first_failure = next(i for i, n in enumerate(seen) if n >= 50) + 1
    assert len(seen) > first_failure  # Hypothesis did shrink
    assert e.examples == first_failure, (e.examples, first_failure, len(seen))

"""``streamproof conform`` on Flink 2.3's own classes: exit codes, the per-family table, and the
divergent scenarios written with Flink's trace (replayable). Skipped only without a JDK."""

import json
import shutil

import pytest
from click.testing import CliRunner

from streamproof.cli import cli

JAVA = shutil.which("java") and shutil.which("javac")


def test_unknown_family_is_bad_input():
    result = CliRunner().invoke(cli, ["conform", "nope"])
    assert result.exit_code == 2 and "unknown conformance family" in result.output


@pytest.mark.skipif(not JAVA, reason="java/javac not installed: the Flink harness cannot be built")
def test_every_family_agrees_with_flink_on_100_random_scenarios(tmp_path):
    result = CliRunner().invoke(cli, ["conform", "--examples", "100", "--seed", "0", "--out", str(tmp_path), "--json"])
    rows = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    assert {r["family"] for r in rows} >= {"timers", "mailbox", "valve"}
    for row in rows:
        assert row["compared"] == 100, row  # make conformance: 300
        assert row["harness_errors"] == row["implementation_divergences"] == row["model_divergences"] == 0, row
    assert result.exit_code == 0, result.output
    assert not list(tmp_path.iterdir())


@pytest.mark.skipif(not JAVA, reason="java/javac not installed: the Flink harness cannot be built")
def test_a_divergence_is_written_with_flinks_trace_and_fails_its_replay(tmp_path, monkeypatch):
    from streamproof.properties.mailbox import runner

    original = runner.run_impl

    def lifo_close(steps, *args, **kwargs):  # a wrong implementation: close() reports mails reversed
        trace = original(steps, *args, **kwargs)
        return [dict(e, dropped=list(reversed(e["dropped"]))) if e["event"] == "closed" else e for e in trace]

    monkeypatch.setattr(runner, "run_impl", lifo_close)
    result = CliRunner().invoke(cli, ["conform", "mailbox", "--examples", "60", "--out", str(tmp_path)])
    assert result.exit_code == 1, result.output
    written = sorted(tmp_path.glob("conform-mailbox-*.json"))
    scenarios = [p for p in written if not p.name.endswith(".traces.json")]
    assert scenarios, result.output
    doc = json.loads(scenarios[0].read_text())
    assert doc["flink_observed"] and doc["family"] == "mailbox"
    side = json.loads((tmp_path / (scenarios[0].stem + ".traces.json")).read_text())
    assert side["flink"] != side["implementation"]


def test_the_known_differences_printed_are_those_of_the_families_compared(monkeypatch, tmp_path):
    from click.testing import CliRunner

    from streamproof.cli import cli
    from streamproof.conformance import conform as conform_mod

    monkeypatch.setattr(conform_mod, "conform", lambda family, version, examples, seed:
                        conform_mod.ConformReport(family, version, examples, compared=examples))
    result = CliRunner().invoke(cli, ["conform", "mailbox", "timers", "--examples", "3", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    notes = [line for line in result.output.splitlines() if line.startswith("known, expected difference")]
    assert notes and all(line.startswith("known, expected difference (timers,") for line in notes), notes

"""The ``streamproof`` command line: exit codes (0 held, 1 failed, 2 bad input with one line on
stderr), replay of the examples and of Flink's vectors, check / bugzoo tables and JSON Lines, and
the round trip check → scenario file → replay under a bug variant."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamproof.properties.bugzoo import get_variant
from streamproof.properties import registry
from streamproof.properties.registry import get as get_property
from streamproof.properties.scenario import load_scenario_file
from streamproof import __version__, replay
from streamproof.cli import cli
from tests.vectors import load as load_vectors

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO / "examples" / "timers").glob("*.json"))
VECTOR_CASE = "event_timer_registered_in_callback_fires_same_advance"
LABELS = get_property("timers.differential").reachability


def run(*args: str):
    try:
        runner = CliRunner(mix_stderr=False)  # click < 8.2
    except TypeError:
        runner = CliRunner()
    return runner.invoke(cli, [str(a) for a in args], catch_exceptions=False)


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def assert_input_error(result, *fragments: str) -> str:
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("streamproof: error: ") and "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def vector_case(name: str = VECTOR_CASE) -> dict:
    case = next(c for c in load_vectors("flink_timer_traces.json")["cases"] if c["name"] == name)
    return {"format": "streamproof.scenario/1", **case}


def write(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------ replay

def test_examples_are_there_and_described():
    assert 4 <= len(EXAMPLES) <= 6
    for path in EXAMPLES:
        scenario = load_scenario_file(path)
        assert scenario.family == "timers" and scenario.name == path.stem and scenario.description


def test_replay_of_every_example_holds_and_matches_its_expected_trace():
    result = run("replay", *EXAMPLES)
    assert result.exit_code == 0, result.output
    assert result.stdout.count("verdict: held") == len(EXAMPLES)
    assert "FAILED" not in result.stdout
    for path in EXAMPLES:
        assert f"== {path} (timers: {path.stem}) ==" in result.stdout
        if load_scenario_file(path).expected is not None:
            assert replay(load_scenario_file(path)).matches_expected is True


def test_replay_text_shows_the_observed_trace_one_compact_event_per_line():
    path = REPO / "examples" / "timers" / "one-physical-timer.json"
    lines = run("replay", path).stdout.splitlines()
    events = [json.loads(line) for line in lines if line.startswith("  {")]
    assert events == replay(load_scenario_file(path)).observed
    assert {"event": "physical_cancel", "ts": 30} in events
    assert lines[-2:] == ["verdict: held", ""]


def test_replay_json_of_a_flink_vector_matches_flink(tmp_path):
    path = write(tmp_path / "vector.json", vector_case())
    result = run("replay", path, "--json")
    assert result.exit_code == 0, result.output
    [line] = json_lines(result.stdout)
    assert line["file"] == str(path) and line["family"] == "timers" and line["verdict"] == "held"
    assert line["matches_expected"] is True and line["compared_with"] == ["flink_observed"]
    assert [p["property"] for p in line["properties"]] == ["timers.differential"]
    assert [e for e in line["observed"] if e["event"] == "fire"]  # the implementation's own trace


def test_replay_of_a_tampered_vector_fails_on_the_comparison_alone(tmp_path):
    case = vector_case()
    fires = [e for e in case["flink_observed"] if e["event"] == "fire"]
    assert fires[0]["ts"] != fires[-1]["ts"]
    fires[0]["ts"], fires[-1]["ts"] = fires[-1]["ts"], fires[0]["ts"]
    path = write(tmp_path / "tampered.json", case)
    result = run("replay", path, "--json")
    assert result.exit_code == 1, result.output
    [line] = json_lines(result.stdout)
    assert line["verdict"] == "failed" and line["matches_expected"] is False
    assert all(p["verdict"] == "held" for p in line["properties"])  # implementation = model
    assert "flink_observed differs at event" in line["mismatch"]
    text = run("replay", path)
    assert text.exit_code == 1 and "verdict: FAILED (matches-expected: flink_observed differs" in text.stdout


def test_replay_stops_at_a_malformed_file_naming_step_and_field(tmp_path):
    doc = json.loads((REPO / "examples" / "timers" / "one-physical-timer.json").read_text())
    doc["steps"][3]["ts"] = "twenty"
    bad = write(tmp_path / "bad.json", doc)
    result = run("replay", EXAMPLES[0], bad, EXAMPLES[1])
    line = assert_input_error(result, str(bad), "step 3", "'ts'")
    assert "twenty" in line
    assert result.stdout.count("verdict: held") == 1  # the file before it was replayed and kept


@pytest.mark.parametrize("content, fragment", [
    (None, "file not found"),
    ('{"format": "streamproof.scenario/1", "family": "timers", "steps": [', "invalid JSON"),
])
def test_replay_of_a_missing_or_invalid_json_file_is_one_line(tmp_path, content, fragment):
    path = tmp_path / "scenario.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert_input_error(run("replay", path), str(path), fragment)


def test_replay_of_a_family_without_property_is_bad_input(tmp_path):
    from streamproof.properties import scenario as sc

    @sc.step
    class Tick(sc.Step):
        op = "tick"

    sc.register_family("unchecked", [Tick])
    try:
        path = write(tmp_path / "unchecked.json", {"family": "unchecked", "steps": [{"op": "tick"}]})
        assert_input_error(run("replay", path), "no property checks family 'unchecked' yet")
    finally:
        del sc.FAMILIES["unchecked"]


def test_replay_of_a_valve_vector_matches_flink(tmp_path):
    case = next(c for c in load_vectors("flink_valve_traces.json")["cases"])
    path = write(tmp_path / "valve.json", case)
    result = run("replay", path, "--json")
    assert result.exit_code == 0, result.output
    [line] = json_lines(result.stdout)
    assert line["family"] == "valve" and line["matches_expected"] is True


def test_replay_of_an_unknown_property_is_bad_input(tmp_path):
    doc = {**vector_case(), "property": "timers.nonesuch"}
    assert_input_error(run("replay", write(tmp_path / "p.json", doc)), "timers.nonesuch")


def test_python_m_streamproof_replay_json_lines():
    example = REPO / "examples" / "timers" / "callback-registers-due-timer.json"
    proc = subprocess.run([sys.executable, "-m", "streamproof", "replay", str(example), "--json"],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    [line] = json_lines(proc.stdout)
    assert line["verdict"] == "held" and line["name"] == "callback-registers-due-timer"
    fires = [(e["key"], e["ts"]) for e in line["observed"] if e["event"] == "fire"]
    assert fires[:3] == [("a", 10), ("a", 15), ("b", 20)]  # the due timer of the callback in the same advance
    assert line["matches_expected"] is True


# ------------------------------------------------------------------------------------- check

def test_check_prints_the_table_and_every_reachability_label(tmp_path, monkeypatch):
    unreachable = "a case no rule ever notes"
    prop = get_property("timers.differential")
    monkeypatch.setitem(registry._REGISTRY, prop.name,
                        dataclasses.replace(prop, reachability=(*prop.reachability, unreachable)))
    result = run("check", "timers.differential", "--examples", "30", "--out", tmp_path, "--reach")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["property", "family", "verdict", "examples", "steps", "seconds", "cases", "reached"]
    row = lines[1].split()
    assert row[:3] == ["timers.differential", "timers", "held"] and int(row[3]) >= 30 and int(row[4]) > 0
    assert "reachability of timers.differential:" in lines
    assert f"  {unreachable}" in "\n".join(lines)
    reached = 0
    for label in (*prop.reachability, unreachable):
        [line] = [ln for ln in lines if ln.strip().startswith(label)]
        count = int(line[len("  " + label):].split()[0])
        assert ("(never reached)" in line) == (count == 0)
        assert (f"never reached: timers.differential: {label}" in lines) == (count == 0)
        reached += count > 0
    assert row[6] == f"{reached}/{len(prop.reachability) + 1}" and reached >= len(LABELS) - 2
    assert lines[-1] == "1 of 1 properties held"


def test_check_summarises_reachability_without_reach(tmp_path):
    result = run("check", "timers.differential", "mailbox", "--examples", "10", "--out", tmp_path)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert not [ln for ln in lines if ln.startswith("reachability of")]
    assert len(lines) < 20, lines  # the table and its summary fit on a screen


def test_check_family_selection_is_exact(tmp_path, monkeypatch):
    """``job`` selects the job.* properties, not eos.* (which run job scenarios too)."""
    assert [p.name.split(".")[0] for p in registry.select(["job"])] == ["job"] * len(registry.select(["job"]))
    assert registry.select(["eos"]) and all(p.name.startswith("eos.") for p in registry.select(["eos"]))
    assert [p.name for p in registry.select(["valve_job"])] == ["valve.job-exactly-once"]


def test_check_json_lines_parse():
    result = run("check", "timers", "--examples", "20", "--json", "--seed", "3")
    assert result.exit_code == 0, result.output
    [line] = json_lines(result.stdout)
    assert line["property"] == "timers.differential" and line["family"] == "timers"
    assert line["verdict"] == "held" and line["examples"] >= 20 and line["seed"] == 3
    assert line["scenario"] is None and line["scenario_file"] is None and line["invariant"] is None
    assert list(line["reach"])[:len(LABELS)] == list(LABELS)  # declared labels first, 0 when unreached


@pytest.mark.parametrize("args, fragment", [
    (["check", "timers.nonesuch"], "unknown property 'timers.nonesuch'"),
    (["check", "--examples", "0"], "--examples"),
    (["check", "--examples", "many"], "--examples"),
    (["bugzoo", "no-such-bug"], "unknown bug variant 'no-such-bug'"),
    (["frobnicate"], "frobnicate"),
])
def test_bad_input_is_exit_2_with_one_line(args, fragment):
    assert_input_error(run(*args), fragment)


def test_check_under_a_bug_variant_writes_a_scenario_that_replays_only_under_the_bug(tmp_path):
    out = tmp_path / "failures"
    bug = get_variant("timer-list-not-set")
    with bug.patch():
        result = run("check", "timers.differential", "--examples", "300", "--out", out)
        assert result.exit_code == 1, result.output
        path = out / "timers.differential-0.json"
        assert path.is_file()
        assert "FAILED" in result.stdout and f"streamproof replay {path}" in result.stdout
        assert "warning" not in result.stdout  # the file reproduces the failure
        scenario = load_scenario_file(path)
        assert scenario.property == "timers.differential" and scenario.steps
        under_bug = run("replay", path)
        assert under_bug.exit_code == 1 and "verdict: FAILED (same-" in under_bug.stdout
    without_bug = run("replay", path, "--json")
    assert without_bug.exit_code == 0, without_bug.output
    assert json_lines(without_bug.stdout)[0]["verdict"] == "held"


# ------------------------------------------------------------------------------------ bugzoo

def test_bugzoo_catching_the_variant_exits_0():
    result = run("bugzoo", "key-context-set-after-poll", "--examples", "300")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["variant", "source", "caught"]
    row = lines[1].split()
    assert row[:3] == ["key-context-set-after-poll", "FLINK-26063", "yes"]
    assert lines[-1] == "1 of 1 bug variants caught"


def test_bugzoo_a_surviving_variant_exits_1():
    result = run("bugzoo", "restore-accepts-foreign-key-groups", "--examples", "1", "--json")
    assert result.exit_code == 1, result.output
    line, summary = json_lines(result.stdout)
    assert line["variant"] == "restore-accepts-foreign-key-groups" and line["caught"] is False
    assert line["scenario"] is None and line["found_seconds"] is None
    assert summary["summary"] and summary["caught"] == 0
    assert summary["families"][line["family"]]["caught"] == 0 and summary["families"][line["family"]]["variants"] == 1


def test_bugzoo_json_summary_gives_time_to_detect_per_family():
    result = run("bugzoo", "key-context-set-after-poll", "batch-sees-later-puts", "--json")
    assert result.exit_code == 0, result.output
    *rows, summary = json_lines(result.stdout)
    assert [r["caught"] for r in rows] == [True, True]
    for r in rows:  # the first failing example is found before shrinking ends
        assert 0 < r["found_seconds"] <= r["seconds"]
    families = summary["families"]
    assert set(families) == {r["family"] for r in rows}
    for r in rows:
        d = families[r["family"]]
        assert d["caught"] == d["variants"] == 1
        assert d["found_seconds"]["median"] == d["found_seconds"]["max"] == r["found_seconds"]
        assert d["examples"]["median"] == r["examples"]


# --------------------------------------------------------------------------- version, plugin

def test_version():
    result = run("--version")
    assert result.exit_code == 0 and result.stdout.strip() == f"streamproof {__version__}"


def test_pytest_plugin_marker_and_fixtures(tmp_path):
    (tmp_path / "test_user.py").write_text(
        "import pytest\n"
        "from streamproof.properties.scenario import load_scenario_file\n"
        f"EXAMPLE = {str(EXAMPLES[0])!r}\n"
        "def test_replay(streamproof_replay):\n"
        "    assert streamproof_replay(load_scenario_file(EXAMPLE)).holds\n"
        "@pytest.mark.streamproof(property='timers.differential')\n"
        "def test_check(streamproof_check):\n"
        "    exploration = streamproof_check(examples=5)\n"
        "    assert exploration.property == 'timers.differential' and exploration.holds\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "streamproof.pytest_plugin", "-p", "no:cacheprovider",
         "--strict-markers", "--rootdir", str(tmp_path), str(tmp_path / "test_user.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout


def test_examples_writes_the_shipped_files_and_never_overwrites(tmp_path):
    result = run("examples", tmp_path / "ex", "--json")
    assert result.exit_code == 0, result.output
    written = json.loads(result.stdout)
    assert "timers/interrupted-try-advance.json" in written["files"] and "jobs/real/long_rides.py" in written["files"]
    assert all((tmp_path / "ex" / name).is_file() for name in written["files"])
    again = run("examples", tmp_path / "ex")
    assert again.exit_code == 2 and "exists" in again.stderr

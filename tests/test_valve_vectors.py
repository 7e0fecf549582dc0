"""Apache Flink 2.3's own OperatorCoordinatorHolder (18 traces): reproduced by the ``flink-2.3``
implementation and by the model, checked by every valve property, replayed by the CLI; a
tampered trace is detected."""

import copy
import dataclasses
import json

import pytest
from click.testing import CliRunner

from streamproof.properties.scenario import scenario_from_dict
from streamproof.properties.valve.check import INVARIANTS, check_valve
from streamproof.properties.valve.runner import difference, normalize, run_impl, run_model, same_trace
from streamproof.cli import cli
from streamproof.replayer import replay
from tests.vectors import load

CASES = load("flink_valve_traces.json")["cases"]


def test_there_are_18_traces():
    assert len(CASES) == 18 and {c["family"] for c in CASES} == {"valve"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_implementation_and_model_reproduce_flink(case):
    steps = scenario_from_dict(case).steps
    for trace in (run_impl(steps, "flink-2.3"), run_model(steps, "flink-2.3")):
        assert same_trace(trace, case["flink_observed"]), difference(trace, case["flink_observed"])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_every_property_holds_under_flink_and_streamproof(case):
    scenario = scenario_from_dict(case)
    for protocol in ("flink-2.3", "streamproof"):
        for name in INVARIANTS:
            verdict = check_valve(dataclasses.replace(scenario, params={"protocol": protocol}), name)
            assert verdict.holds, (protocol, name, verdict.invariant, verdict.message)
    result = replay(scenario)
    assert result.holds and result.matches_expected is True and result.compared_with == ["flink_observed"]


def test_legacy_breaks_a_vector_as_flink_26029_says():
    case = next(c for c in CASES if c["name"] == "take_checkpoint_after_successful")
    verdict = check_valve(scenario_from_dict({**case, "params": {"protocol": "legacy"}}), "valve.consistent-checkpoints")
    assert not verdict.holds and verdict.invariant == "consistent-checkpoints"


def test_cli_replay_json_of_every_vector_matches_flink(tmp_path):
    paths = []
    for case in CASES:
        path = tmp_path / f"{case['name']}.json"
        path.write_text(json.dumps({"format": "streamproof.scenario/1", **case}), encoding="utf-8")
        paths.append(str(path))
    result = CliRunner().invoke(cli, ["replay", "--json", *paths], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == 18
    for line in lines:
        assert line["matches_expected"] is True and line["verdict"] == "held", line["file"]
        assert {p["property"] for p in line["properties"]} == set(INVARIANTS)


def _tamper(event: dict) -> dict:
    event = dict(event)
    if "value" in event:
        event["value"] = 99 if event["value"] != 99 else 98
    elif event["event"] == "result":
        event["state"] = "done" if event["state"] != "done" else "failed"
    elif "attempt" in event:
        event["attempt"] += 1
    elif "checkpoint" in event:
        event["checkpoint"] += 1
    return event


@pytest.mark.parametrize("case", [c for c in CASES if c["flink_observed"]], ids=lambda c: c["name"])
def test_a_tampered_trace_is_detected(case):
    observed = run_impl(scenario_from_dict(case).steps)
    for position in range(len(case["flink_observed"])):
        tampered = copy.deepcopy(case["flink_observed"])
        tampered[position] = _tamper(tampered[position])
        assert not same_trace(observed, tampered), (position, tampered[position])
    assert not same_trace(observed, case["flink_observed"][:-1])
    doc = dict(case, flink_observed=[_tamper(case["flink_observed"][0]), *case["flink_observed"][1:]])
    result = replay(scenario_from_dict(doc))
    assert result.matches_expected is False and not result.holds
    assert result.mismatch.startswith("flink_observed differs at event 0:")


def test_errors_are_compared_by_type_only():
    error = {"event": "error", "text": "IllegalStateException", "message": "x"}
    assert same_trace([error], [{"event": "error", "text": "NullPointerException", "message": "y"}])
    assert normalize([error]) == normalize([{"event": "error"}])
    assert not same_trace([error], [{"event": "result", "checkpoint": 1, "state": "completed"}])

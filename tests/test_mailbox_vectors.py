"""Apache Flink 2.3's own mailbox behaviour (12 traces of TaskMailboxImpl / MailboxExecutorImpl),
reproduced by the implementation and by the model; a tampered trace is detected."""

import copy

import pytest

from streamproof.properties.mailbox.check import check_mailbox
from streamproof.properties.mailbox.runner import difference, normalize, run_impl, run_model, same_trace
from streamproof.properties.scenario import scenario_from_dict
from streamproof.replayer import replay
from tests.vectors import load

CASES = load("flink_mailbox_traces.json")["cases"]


def test_there_are_12_traces():
    assert len(CASES) == 12
    assert {c["family"] for c in CASES} == {"mailbox"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_implementation_reproduces_flink(case):
    observed = run_impl(scenario_from_dict(case).steps)
    assert same_trace(observed, case["flink_observed"]), difference(observed, case["flink_observed"])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_model_reproduces_flink(case):
    predicted = run_model(scenario_from_dict(case).steps)
    assert same_trace(predicted, case["flink_observed"]), difference(predicted, case["flink_observed"])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_differential_check_and_replay_hold(case):
    scenario = scenario_from_dict(case)
    verdict = check_mailbox(scenario.steps)
    assert verdict.holds, verdict
    result = replay(scenario)
    assert result.holds and result.matches_expected is True, result.failure()
    assert result.compared_with == ["flink_observed"]


def test_refusals_carry_flinks_exception_name():
    case = next(c for c in CASES if c["name"] == "lifecycle_close")
    errors = [e for e in run_impl(scenario_from_dict(case).steps) if e["event"] == "error"]
    assert [e["text"] for e in errors] == ["MailboxClosedException"] * 2
    assert all("CLOSED" in e["message"] for e in errors)


def _tamper(event: dict) -> dict:
    event = dict(event)
    if event["event"] in ("took", "yielded"):
        event["mail"] = "someone else" if event["mail"] is not None else "A"
    elif event["event"] == "closed":
        event["dropped"] = list(reversed(event["dropped"])) + ["extra"]
    elif event["event"] == "batch":
        event["created"] = not event["created"]
    elif event["event"] == "size":
        event["value"] += 1
    elif event["event"] == "state":
        event["value"] = "OPEN"
    elif event["event"] == "error":
        event = {"event": "took", "mail": None}
    else:
        event["value"] = not event["value"]
    return event


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_a_tampered_trace_is_detected(case):
    scenario = scenario_from_dict(case)
    observed = run_impl(scenario.steps)
    for position in range(len(case["flink_observed"])):
        tampered = copy.deepcopy(case["flink_observed"])
        tampered[position] = _tamper(tampered[position])
        assert not same_trace(observed, tampered), (position, tampered[position])
    assert not same_trace(observed, case["flink_observed"][:-1])  # a missing event
    doc = dict(case, flink_observed=[_tamper(case["flink_observed"][0]), *case["flink_observed"][1:]])
    result = replay(scenario_from_dict(doc))
    assert result.matches_expected is False and not result.holds
    assert result.mismatch.startswith("flink_observed differs at event 0:")


def test_error_texts_are_not_compared_but_errors_are():
    error = {"event": "error", "text": "MailboxClosedException"}
    assert normalize([error]) == normalize([{"event": "error", "text": "IllegalStateException", "step": 3}])
    assert not same_trace([error], [{"event": "took", "mail": None}])

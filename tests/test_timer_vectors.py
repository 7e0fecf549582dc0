"""Apache Flink 2.3's own timer-service behaviour (25 traces), reproduced by the implementation
(ties compared as sets) and by the model (following Flink's choices, which it must allow)."""

import pytest

from streamproof.properties.scenario import scenario_from_dict
from streamproof.properties.timers.check import check_timers
from streamproof.properties.timers.runner import ModelTimersRun, normalize, run_impl, run_model, same_trace
from tests.vectors import load

CASES = load("flink_timer_traces.json")["cases"]


def test_there_are_25_traces():
    assert len(CASES) == 25


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_implementation_reproduces_flink(case):
    scenario = scenario_from_dict(case)
    observed = run_impl(scenario.steps)
    assert normalize(observed) == normalize(case["flink_observed"])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_model_reproduces_flink(case):
    scenario = scenario_from_dict(case)
    # exact equality: every tie choice Flink made is one the model allows
    assert run_model(scenario.steps, case["flink_observed"]) == case["flink_observed"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_differential_check_holds(case):
    verdict = check_timers(scenario_from_dict(case).steps)
    assert verdict.holds, verdict


def test_model_rejects_a_choice_flink_could_not_make():
    case = next(c for c in CASES if c["name"] == "set_and_fire_event_time")
    scenario = scenario_from_dict(case)
    wrong = [dict(e) for e in case["flink_observed"]]
    fires = [i for i, e in enumerate(wrong) if e["event"] == "fire"]
    wrong[fires[0]], wrong[fires[-1]] = wrong[fires[-1]], wrong[fires[0]]  # still a tie: allowed
    assert run_model(scenario.steps, wrong) == wrong
    run = ModelTimersRun()
    bogus = [{"event": "fire", "domain": "event", "key": "nobody", "namespace": "x", "ts": 10}]
    for step in scenario.steps:
        run.apply(step, bogus)
    assert run.deviations > 0  # a timer that is not due cannot be followed


def test_tie_normalisation_does_not_hide_real_differences():
    case = next(c for c in CASES if c["name"] == "key_groups_many_keys")
    tampered = [dict(e) for e in case["flink_observed"]]
    i = next(i for i, e in enumerate(tampered) if e["event"] == "fire")
    tampered[i]["ts"] += 1
    assert not same_trace(run_impl(scenario_from_dict(case).steps), tampered)


def test_tie_groups_are_multisets():
    fire = {"event": "fire", "domain": "event", "key": "a", "namespace": "n", "ts": 1, "current_key": "a", "watermark": 1}
    other = dict(fire, key="b", current_key="b")
    assert same_trace([fire, other], [other, fire])
    assert not same_trace([fire, fire], [fire])  # a duplicate firing is never hidden by a tie

"""The z3 model of the timer life cycle in a job (properties/job/z3_lifecycle.py): the correct model
is proved by k-induction; each known-bug variant is refuted with a short counterexample whose
``job`` scenario fails under the variant's bug-zoo patch and holds on the correct implementation;
and the correct model reaches the situations its theorem is about (else it would prove nothing
about them): committed event-time effects, FLIP-269's TRIGGER and CANCEL at end of input, deleted
timers, a failure restoring a checkpoint taken inside an interrupted firing, a restore at another
parallelism."""

from dataclasses import replace

import pytest
import z3

from streamproof.properties.job.z3_lifecycle import (
    CANCEL, EVENT, MIN, MODEL, PROC, REG, TRIGGER, VARIANTS, lifecycle_system, to_scenario,
)
from streamproof.properties.scenario import scenario_from_dict
from streamproof.properties.z3kit import reach
from streamproof.properties.z3models import check_model, counterexample_scenario, models, replay_counterexample

THEOREM = {"committed-at-most-once", "fires-at-most-once-in-the-committed-run", "committed-exactly-once-at-end",
           "never-for-cancel-or-deleted", "no-effect-behind-the-emitted-watermark"}


def test_the_correct_model_is_proved():
    assert models()["lifecycle"] is MODEL
    outcomes = check_model(MODEL)
    assert [o.verdict for o in outcomes] == ["proved"] * len(outcomes), [(o.invariant, o.verdict) for o in outcomes]
    assert THEOREM <= {o.invariant for o in outcomes}


@pytest.fixture(scope="module")
def refuted():
    """Each variant's counterexample (BMC on the invariant it refutes), computed once."""
    return {name: check_model(MODEL, name)[0] for name in MODEL.variants}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_each_variant_is_refuted_with_a_short_counterexample(refuted, variant):
    outcome = refuted[variant]
    assert outcome.verdict == "counterexample" and outcome.invariant == VARIANTS[variant].refutes
    assert outcome.trace[0][0] == "init"
    assert len(outcome.trace) - 1 <= 10, [a for a, _, _ in outcome.trace]


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_each_counterexample_round_trips(refuted, variant):
    scenario = counterexample_scenario(MODEL, variant, refuted[variant])
    parsed = scenario_from_dict(scenario)  # a valid job scenario
    assert parsed.family == "job" and parsed.property == scenario["property"]
    trip = replay_counterexample(MODEL, variant, scenario)
    assert trip.ok, (trip.reproduced_holds, trip.correct_holds, trip.detail, scenario)


def _registrations(trace) -> list[str]:
    init = trace[0][2]
    return [f"k{init[f'in_slot{j}']}" for j in range(init["n_in"])
            if init[f"in_kind{j}"] == REG and init[f"dom{init[f'in_slot{j}']}"] == EVENT]


def test_the_scenarios_come_from_the_traces(refuted):
    scenarios = {v: to_scenario(refuted[v].trace, v) for v in VARIANTS}
    for variant, scenario in scenarios.items():  # the trace's event-time registrations, in order
        assert [s["key"] for s in scenario["steps"] if s["op"] == "record"] == _registrations(refuted[variant].trace)
    # finishing while the continuation is pending: no fault; a chain of two windows interrupted
    # after each timer
    finish = scenarios["finish-drops-continuation"]
    assert {s["op"] for s in finish["steps"]} <= {"record", "watermark"}
    assert [op.get("function") for op in finish["params"]["graph"]["operators"]] == \
        [None, "mailing_window_sum", "mailing_window_sum", None]
    # a checkpoint completed inside the interrupted firing, then a failure inside it
    snapshot = scenarios["snapshot-before-fired-effects"]
    assert snapshot["params"]["operator"] == "timer_chain"
    assert [s for s in snapshot["steps"] if s["op"] not in ("record", "watermark")] == \
        [{"op": "fail_in_interrupted_firing", "nth": 1, "after_checkpoint": True}]
    # an interrupted advance: no fault, window_sum interrupted after every timer
    late = scenarios["watermark-past-interrupted-firing"]
    assert late["params"]["operator"] == "window_sum" and late["params"]["async_mail_rate"] == 1.0
    assert {s["op"] for s in late["steps"]} <= {"record", "watermark"}


# -- reachability of the correct model ------------------------------------------------------------
SLOTS = range(2)


def _actions(trace) -> list[str]:
    return [a for a, _, _ in trace[1:]]


def test_an_event_time_effect_is_committed_at_the_end():
    goal = lambda s: z3.And(s["done"], z3.Or([z3.And(s[f"dom{i}"] == EVENT, s[f"com{i}"] == 1) for i in SLOTS]))
    trace = reach(lifecycle_system(None, 2, 1), goal, 6)
    assert trace is not None
    assert {"fire", "final_checkpoint"} <= set(_actions(trace))


def test_trigger_is_committed_and_cancel_dropped_at_end_of_input():
    def goal(s):
        trigger = z3.Or([z3.And(s[f"dom{i}"] == PROC, s[f"act{i}"] == TRIGGER, s[f"com{i}"] == 1) for i in SLOTS])
        cancel = z3.Or([z3.And(s[f"dom{i}"] == PROC, s[f"act{i}"] == CANCEL, s[f"dropped{i}"], s[f"com{i}"] == 0)
                        for i in SLOTS])
        return z3.And(s["done"], trigger, cancel)
    trace = reach(lifecycle_system(None, 2, 1), goal, 8)
    assert trace is not None
    assert _actions(trace).count("flush") == 2


def test_a_deleted_timer_never_commits():
    goal = lambda s: z3.And(s["done"], z3.Or([z3.And(s[f"deleted{i}"], s[f"dom{i}"] == EVENT, s[f"com{i}"] == 0)
                                              for i in SLOTS]))
    trace = reach(lifecycle_system(None, 2, 1), goal, 6)
    assert trace is not None


def test_a_failure_restores_a_checkpoint_taken_inside_an_interrupted_firing():
    # after a restore (W = MIN again), timer i is fired and timer j, due whenever i was, pending:
    # the restored checkpoint was taken in the middle of an advance, i.e. inside an interrupted firing
    def goal(s):
        return z3.And(s["W0"] == MIN, s["sn"], z3.Or([z3.And(
            s[f"fired{i}"] == 1, s[f"pend{j}"], s[f"dom{j}"] == EVENT, s[f"ts{j}"] <= s[f"ts{i}"])
            for i in SLOTS for j in SLOTS if i != j]))
    trace = reach(lifecycle_system(None, 2, 1), goal, 8)
    assert trace is not None
    completed = [n for n, (a, _, _) in enumerate(trace) if a == "complete_checkpoint"]
    assert completed and trace[completed[0] - 1][2]["firing0"] == 2  # completed while interrupted
    assert _actions(trace)[-1] == "fail"


def test_a_restore_at_another_parallelism():
    system = lifecycle_system(None, 2, 2)
    started_at_one = replace(system, init=lambda s: z3.And(system.init(s), s["par"] == 1))
    # registered at parallelism 1, restored at 2 from a checkpoint, then fired by subtask 1
    goal = lambda s: z3.And(s["par"] == 2, z3.Or([z3.And(s[f"kg{i}"] == 1, s[f"sn_reg{i}"], s[f"sn_fired{i}"] == 0,
                                                         s[f"fired{i}"] == 1) for i in SLOTS]))
    trace = reach(started_at_one, goal, 6)
    assert trace is not None
    assert trace[0][2]["par"] == 1 and trace[-1][2]["par"] == 2
    assert any(a == "fire" and p["subtask"] == 1 for a, p, _ in trace[1:])

"""The z3 model of the operator-coordinator event valve (properties/valve/z3_valve.py): the streamproof
protocol is proved by k-induction (S = 2 and 3 subtasks); each variant (legacy FLINK-26029, Flink 2.3's
flaw (b), two valve bug-zoo variants) is refuted with a short counterexample whose scenario fails
under the variant's implementation and holds under streamproof; and a long trace of the correct
model, turned into a scenario, runs on the streamproof implementation with the same counts at every
step (what the coordinator sent, what each subtask applied, what is in flight and buffered)."""

import pytest
import z3

from streamproof.properties import registry
from streamproof.properties.scenario import scenario_from_dict
from streamproof.properties.valve.check import ValveCheck, unrealistic
from streamproof.properties.valve import z3_valve
from streamproof.properties.valve.z3_valve import MODEL, next_checkpoint_completes, to_scenario, valve_system
from streamproof.properties.z3models import check_model, counterexample_scenario, models, replay_counterexample

THEOREMS = {"consistent-checkpoints", "no-stall"}


def test_the_streamproof_protocol_is_proved_with_two_subtasks():
    assert models()["valve"] is MODEL
    outcomes = check_model(models()["valve"])
    assert [o.verdict for o in outcomes] == ["proved"] * len(outcomes), [(o.invariant, o.verdict) for o in outcomes]
    assert THEOREMS <= {o.invariant for o in outcomes} and not MODEL.bounded


def test_the_streamproof_protocol_is_proved_with_three_subtasks():
    outcomes = check_model(MODEL, size=3)
    assert [o.verdict for o in outcomes] == ["proved"] * len(outcomes), [(o.invariant, o.verdict) for o in outcomes]


@pytest.mark.parametrize("size", [2, 3])
def test_no_stall_means_the_next_checkpoint_completes(size):
    # from every state where the invariants hold, abort + RPCs acked + trigger + coordinator done
    # leaves the holder's future done, every subtask acknowledges, the checkpoint completes
    assert next_checkpoint_completes(size)


def test_without_no_stall_the_flink_23_drain_can_stall(monkeypatch):
    build = z3_valve.valve_system

    def without_no_stall(variant=None, size=2):
        system = build("flink-2.3", size)
        del system.invariants["no-stall"]
        return system

    monkeypatch.setattr(z3_valve, "valve_system", without_no_stall)
    assert not next_checkpoint_completes(2)


@pytest.fixture(scope="module")
def refuted():
    """Each variant's outcomes (the refuted invariant first), computed once."""
    return {name: check_model(MODEL, name) for name in MODEL.variants}


EXPECTED = {  # variant -> (refuted invariant, counterexample steps, property of its scenario, protocol)
    "legacy": ("consistent-checkpoints", 5, "valve.consistent-checkpoints", "legacy"),
    "flink-2.3": ("no-stall", 4, "valve.liveness", "flink-2.3"),
    "no-wait-for-event-acks": ("consistent-checkpoints", 5, "valve.consistent-checkpoints", "streamproof"),
    "gateways-closed-for-some-subtasks": ("consistent-checkpoints", 5, "valve.consistent-checkpoints", "streamproof"),
}


def test_every_variant_is_listed():
    assert set(MODEL.variants) == set(EXPECTED)
    assert MODEL.variants["legacy"].source == "FLINK-26029"
    assert MODEL.variants["legacy"].reproduced_by == "protocol:legacy"
    assert MODEL.variants["flink-2.3"].reproduced_by == "protocol:flink-2.3"


@pytest.mark.parametrize("variant", sorted(EXPECTED))
def test_each_variant_is_refuted_by_a_short_counterexample(refuted, variant):
    invariant, length, _, _ = EXPECTED[variant]
    outcome = refuted[variant][0]
    assert outcome.invariant == invariant == MODEL.variants[variant].refutes
    assert outcome.verdict == "counterexample" and outcome.trace[0][0] == "init"
    assert len(outcome.trace) - 1 <= length


@pytest.mark.parametrize("variant", sorted(EXPECTED))
def test_each_counterexample_replays_on_the_implementation(refuted, variant):
    _, _, prop, protocol = EXPECTED[variant]
    scenario = counterexample_scenario(MODEL, variant, refuted[variant][0])
    assert scenario["property"] == prop and scenario["params"] == {"protocol": protocol}
    assert scenario["steps"][0] == {"op": "new_holder", "parallelism": MODEL.size}
    loaded = scenario_from_dict(scenario)
    trip = replay_counterexample(MODEL, variant, scenario)
    assert trip.ok, (scenario["steps"], trip.detail)
    if variant in ("legacy", "flink-2.3"):  # a real JobManager can do it (the bug-zoo ones ack early)
        assert unrealistic(loaded) is None


def test_the_flink_23_counterexample_is_the_replaced_gateway_stall(refuted):
    scenario = counterexample_scenario(MODEL, "flink-2.3", refuted["flink-2.3"][0])
    ops = [s["op"] for s in scenario["steps"]]
    assert ops[-3:] == ["fail_subtask", "restart_subtask", "notify_aborted"] and "send" in ops
    trip = replay_counterexample(MODEL, "flink-2.3", scenario)
    assert "pending" in trip.detail  # the holder's future for the drain's checkpoint never completes


# ------------------------------------------------------------------ the model against the implementation


def run_actions(size: int, pending: list[bool], actions: list[tuple]) -> list:
    """The trace (as bmc decodes it) of the correct model taking ``actions`` [(name, params)]."""
    system = valve_system(None, size)
    solver = z3.Solver()
    states = [system.state(0)]
    solver.add(system.init(states[0]))
    solver.add(z3.And([states[0][f"pend{i}"] == p for i, p in enumerate(pending)]))
    for n, (name, params) in enumerate(actions):
        states.append(system.state(n + 1))
        relation = system.actions[name][1]
        solver.add(relation(states[n], states[n + 1], {k: z3.IntVal(v) for k, v in params.items()}))
    assert solver.check() == z3.sat, "the actions are not enabled in that order"
    model = solver.model()

    def values(state):
        return {k: (z3.is_true(model.eval(x, model_completion=True)) if z3.is_bool(x)
                    else model.eval(x, model_completion=True).as_long()) for k, x in state.items()}

    return [("init", {}, values(states[0]))] + [
        (name, params, values(states[n + 1])) for n, (name, params) in enumerate(actions)]


LONG_RUN = [
    ("send", {"i": 0}), ("send", {"i": 1}), ("trigger", {}), ("coordinator_done", {}), ("send", {"i": 1}),
    ("rpc_ack_all", {}), ("ack", {"i": 0}), ("send", {"i": 0}), ("ack", {"i": 1}), ("complete", {}),
    ("trigger", {}), ("rpc_fail_all", {}), ("send", {"i": 0}), ("trigger", {}), ("coordinator_done", {}),
    ("send", {"i": 1}), ("abort", {}), ("rpc_ack_all", {}), ("send", {"i": 1}), ("trigger", {}),
    ("coordinator_done", {}), ("send", {"i": 0}), ("failover", {"i": 1}), ("send", {"i": 1}), ("reset", {}),
    ("send", {"i": 0}), ("send", {"i": 1}),
]


def test_a_long_model_run_has_the_same_counts_on_the_streamproof_implementation():
    trace = run_actions(2, [True, False], LONG_RUN)
    run = ValveCheck(None, "streamproof")  # every invariant of every property, checked at each step
    done = 0
    for k in range(len(trace)):
        steps = to_scenario(trace[:k + 1], None)["steps"]
        for data in steps[done:]:
            run.apply(data["op"], {key: val for key, val in data.items() if key != "op"})
        done = len(steps)
        state, e = trace[k][2], run.epochs
        for i in range(2):
            assert len(e.coordinator[i]) == state[f"sent{i}"], (k, trace[k][0], i)
            assert len(e.applied[i]) == state[f"app{i}"], (k, trace[k][0], i)
            assert len(e.in_flight[i]) == state[f"fly{i}"], (k, trace[k][0], i)
        assert run.impl.buffered() == sum(state[f"buf{i}"] for i in range(2)), (k, trace[k][0])
    scenario = scenario_from_dict(to_scenario(trace, None))
    assert unrealistic(scenario) is None
    for name in ("valve.consistent-checkpoints", "valve.exactly-once", "valve.liveness", "valve.differential"):
        verdict = registry.get(name).check(scenario)
        assert verdict.holds, (name, verdict.message)

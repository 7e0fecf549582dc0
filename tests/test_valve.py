"""The valve: the three expected verdicts (legacy: FLINK-26029; flink-2.3: findings (a), (b) and
the broken all-or-none; streamproof: everything holds), the shrunk example files, the known
limitation FLINK-28639, and the implementation's pieces."""

import dataclasses
import time
from pathlib import Path

import pytest

from streamproof.impl.coordination import (
    PROTOCOLS, AcknowledgeCheckpointEvent, CompletableFuture, IllegalStateException, MainThreadExecutor,
    OperatorEventValve, RequestSplitEvent, SplitAssigningSourceCoordinator, ValveHarness, create_holder, wait_for_all,
)
from streamproof.model import valve as spec
from streamproof.properties import registry
from streamproof.properties.explore import explore
from streamproof.properties.registry import Property
from streamproof.properties.scenario import ScenarioError, load_scenario, load_scenario_file
from streamproof.properties.valve.check import (
    INVARIANTS, check_valve, minimize, one_step_shorter_fails, subtask_events_inconsistency, unrealistic,
)
from streamproof.properties.valve.machine import machine_for
from streamproof.replayer import replay

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO / "examples" / "valve").glob("*.json"))
LIMITATIONS = sorted((REPO / "examples" / "valve" / "known-limitations").glob("*.json"))

# protocol, property -> the invariant the checker must find broken, and the example file that is
# the shortest realistic scenario breaking it (found by the machine, minimized, checked 1-minimal)
VERDICTS = {
    ("legacy", "valve.consistent-checkpoints"): ("consistent-checkpoints", "legacy-flink-26029-inconsistent-checkpoint"),
    ("legacy", "valve.exactly-once"): (None, "legacy-flink-26029-duplicate"),
    ("flink-2.3", "valve.consistent-checkpoints"): ("gateways-all-or-none", "flink-2.3-partial-close-after-region-failover"),
    ("flink-2.3", "valve.exactly-once"): ("nothing-lost", "flink-2.3-event-lost-behind-stuck-gateway"),
    ("flink-2.3", "valve.liveness"): ("liveness", "flink-2.3-gateway-stuck-after-late-abort"),
}


def _explore(protocol: str, name: str, examples: int = 3000, shrink: bool = False):
    """Stops at the first failure (a few hundred examples; Hypothesis's choices, and so the count,
    depend on what ran before in the process)."""
    base = registry.get(name)
    prop = Property(name, "valve", base.summary, base.check, machine=lambda: machine_for(name, protocol))
    return explore(prop, examples, seed=0, shrink=shrink)


# ------------------------------------------------------------------------------ the verdicts


@pytest.mark.parametrize("protocol,name", sorted(VERDICTS), ids=lambda x: x)
def test_the_checker_finds_the_flaw_and_its_shortest_scenario(protocol, name):
    invariant, example = VERDICTS[(protocol, name)]
    found = _explore(protocol, name)
    assert not found.holds, f"{protocol} survived {name}"
    assert found.scenario.params == {"protocol": protocol} and unrealistic(found.scenario) is None
    if invariant is not None:
        assert found.invariant == invariant, found.message
    started = time.perf_counter()
    shortest = minimize(found.scenario, name, found.invariant)
    print(f"\n{protocol} {name}: {found.invariant} after {found.examples} examples ({found.seconds:.1f} s), "
          f"minimized from {len(found.scenario.steps)} to {len(shortest.steps)} steps in "
          f"{time.perf_counter() - started:.1f} s: {[s.to_json() for s in shortest.steps]}")
    # Which failure Hypothesis meets first, and so the minimum the greedy deletion reaches, depends
    # on the generation: the bound is "short enough to read"; minimality is under deleting a step.
    assert len(shortest.steps) <= min(12, len(found.scenario.steps))
    assert one_step_shorter_fails(shortest, name, found.invariant) is None
    reference = load_scenario_file(REPO / "examples" / "valve" / f"{example}.json")
    assert not check_valve(reference, name).holds


def test_legacy_duplicate_is_the_interleaving_of_the_jira():
    """Sent after the coordinator's checkpoint, applied before the subtask's barrier, recorded in
    the subtask's snapshot only; after recovery the coordinator sends it again."""
    s = load_scenario_file(REPO / "examples" / "valve" / "legacy-flink-26029-duplicate.json")
    assert [step.op for step in s.steps] == ["new_holder", "trigger", "complete", "send", "ack", "fail_subtask",
                                             "restart_subtask", "send"]
    verdict = check_valve(s, "valve.exactly-once")
    assert verdict.invariant == "applied-once" and "applied twice" in verdict.message


def test_flink_23_finding_b_replaced_gateway_blocks_the_next_checkpoint():
    s = load_scenario_file(REPO / "examples" / "valve" / "flink-2.3-replaced-gateway-blocks-next-checkpoint.json")
    assert s.steps[0].parallelism == 1  # a single subtask: no other gateway for (a) to skip
    verdict = check_valve(s, "valve.liveness")
    assert verdict.invariant == "liveness" and "holder's future for checkpoint 2 is pending" in verdict.message
    assert check_valve(s, "valve.exactly-once").holds  # the coordinator was told: nothing is lost


def test_flink_23_finding_a_leads_to_an_inconsistent_completed_checkpoint():
    s = load_scenario_file(REPO / "examples" / "valve" / "flink-2.3-inconsistent-checkpoint-after-late-abort.json")
    verdict = check_valve(s, "valve.consistent-checkpoints")
    assert verdict.invariant == "consistent-checkpoints" and "checkpoint 3, subtask 1" in verdict.message


def test_flink_23_throws_on_the_late_abort_and_fatally_on_partial_close():
    h = ValveHarness("flink-2.3", 2)
    h.trigger(1)
    h.fail_subtask(0)
    h.restart_subtask(0, -1)
    h.notify_aborted(1)
    h.complete(1)
    errors = [e for e in h.trace if e["event"] == "error"]
    assert [e.get("fatal", False) for e in errors] == [False, True]
    assert "unseen checkpoint" in errors[0]["message"] and "Some subtask gateway" in errors[1]["message"]
    assert h.holder.gateways_closed_for(1) == [False, True] and h.result_state(1) == "pending"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_is_realistic_minimal_and_fixed_by_streamproof(path):
    s = load_scenario_file(path)
    assert s.name == path.stem and s.description and s.property in INVARIANTS
    assert unrealistic(s) is None
    result = replay(s)
    [verdict] = result.verdicts
    assert not result.holds and not verdict.holds
    assert one_step_shorter_fails(s, s.property, verdict.invariant) is None
    for name in INVARIANTS:
        assert check_valve(dataclasses.replace(s, params={"protocol": "streamproof"}), name).holds, name


def test_examples_cover_both_findings_and_legacy():
    names = {p.stem for p in EXAMPLES}
    assert {example for _, example in VERDICTS.values()} <= names
    assert "flink-2.3-replaced-gateway-blocks-next-checkpoint" in names


# ------------------------------------------------------------------------ known limitation


@pytest.mark.parametrize("path", LIMITATIONS, ids=lambda p: p.stem)
def test_flink_28639_is_a_documented_limitation_of_every_protocol(path):
    s = load_scenario_file(path)
    assert "FLINK-28639" in s.description and unrealistic(s) is None
    assert replay(s).holds  # the properties cover the coordinator -> subtask direction only
    for protocol in PROTOCOLS:
        problem = subtask_events_inconsistency(s.steps, protocol)
        assert problem is not None and "records sending [7]" in problem


# ------------------------------------------------------------------------------ scenarios


def test_params_protocol_is_checked():
    doc = '{"family": "valve", "params": {"protocol": "%s"}, "steps": [{"op": "new_holder", "parallelism": 1}]}'
    assert check_valve(load_scenario(doc % "legacy"), "valve.differential").holds
    with pytest.raises(ScenarioError, match="protocol one of flink-2.3, legacy, streamproof"):
        check_valve(load_scenario(doc % "flink-1.0"), "valve.differential")


def test_unrealistic_scenarios_are_named():
    doc = ('{"family": "valve", "steps": [{"op": "new_holder", "parallelism": 1}, '
           '{"op": "trigger", "checkpoint": 2}, {"op": "ack", "subtask": 0, "checkpoint": 2}]}')
    assert "once the holder's future is done" in unrealistic(load_scenario(doc))


# ------------------------------------------------------------------------- implementation


def test_futures_and_wait_for_all():
    a, b = CompletableFuture(), CompletableFuture()
    both = wait_for_all([a, b])
    a.complete_exceptionally(RuntimeError("x"))
    assert not both.is_done()  # waits for every future, fails if any failed
    b.complete(1)
    assert both.state() == "failed" and wait_for_all([]).state() == "done"


def test_main_thread_is_fifo():
    executor, order = MainThreadExecutor(), []

    def outer():
        executor.execute(lambda: order.append("queued"))
        order.append("outer")

    executor.execute(outer)
    assert order == ["outer", "queued"]


def test_legacy_valve_refuses_overlapping_marks():
    valve = OperatorEventValve()
    valve.mark_for_checkpoint(1)
    with pytest.raises(IllegalStateException):
        valve.mark_for_checkpoint(2)
    with pytest.raises(ValueError, match="unknown valve protocol"):
        create_holder("nope", None, None, 1, MainThreadExecutor())


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_split_assigning_coordinator_reads_every_split_once_across_a_region_failover(protocol):
    """The example coordinator behind each holder: reader 0 requests splits around a checkpoint
    and a region failover; restored from the checkpoint, it reads every split exactly once."""
    executor = MainThreadExecutor()
    trace: list = []
    from streamproof.impl.coordination import ScriptedTasks
    tasks = ScriptedTasks(1, trace)
    coordinator = SplitAssigningSourceCoordinator(["s1", "s2", "s3", "s4"])
    holder = create_holder(protocol, coordinator, tasks, 1, executor)
    executor.execute(holder.lazy_initialize)
    reader_state: list = []          # the splits reader 0 holds (its checkpointed state)
    snapshots: dict = {}
    coordinator_checkpoints: dict = {}

    def received():
        out = [e["value"].split for e in trace if e["event"] == "deliver" and hasattr(e["value"], "split")]
        trace.clear()
        return out

    def request():
        executor.execute(lambda: holder.handle_event_from_operator(0, tasks.attempts[0], RequestSplitEvent()))
        reader_state.extend(received())

    def checkpoint(c):
        result = CompletableFuture()
        result._on_done(lambda v, e: holder.after_source_barrier_injection(c))
        holder.checkpoint_coordinator(c, result)
        coordinator_checkpoints[c] = result._value
        snapshots[c] = list(reader_state)      # the barrier reaches the reader now
        executor.execute(lambda: holder.handle_event_from_operator(0, tasks.attempts[0], AcknowledgeCheckpointEvent(c)))
        reader_state.extend(received())
        holder.notify_checkpoint_complete(c)

    request()
    checkpoint(1)
    request()                                  # s2 after checkpoint 1: lost by the failover
    tasks.fail(0)
    tasks.deploy_new_attempt(0)
    executor.execute(lambda: holder.subtask_reset(0, 1))
    reader_state[:] = snapshots[1]
    for _ in range(4):
        request()
    assert sorted(reader_state) == ["s1", "s2", "s3", "s4"]


def test_model_drain_plan_restarts_aborts_and_checkpoints():
    e = spec.Epochs(2)
    e.running[1] = False
    e.open_checkpoints.add(3)
    e.triggered.append(3)
    plan = spec.drain_plan(e, {3: (False, "pending")}, 4)
    ops = [(p["op"], p.get("subtask"), p.get("checkpoint")) for p in plan]
    assert ops[-2:] == [("trigger", None, 4), ("complete", None, 4)]
    assert ("restart_subtask", 1, -1) in ops and ("notify_aborted", None, 3) in ops
    assert ops.index(("restart_subtask", 1, -1)) < ops.index(("notify_aborted", None, 3))

"""Checks of a ``valve`` scenario, one per property (all read ``params.protocol``):

  * ``valve.differential``: implementation against model, step by step: the same observations
    (``same-observations``: the same events, in the same order per subtask; RPCs are FIFO per
    task, the interleaving across subtasks is not a promise) and the same holder state
    (``same-holder-state``: every holder future, the number of buffered events);
  * ``valve.consistent-checkpoints``: ``consistent-checkpoints`` and ``gateways-all-or-none``
    (model/valve.py) on the implementation;
  * ``valve.exactly-once``: ``delivered-to-target`` and ``applied-once`` at every step, then the
    drain phase, then ``nothing-lost``;
  * ``valve.liveness``: after the drain phase the last checkpoint completed, a probe event sent
    to each subtask afterwards arrived, and no event is left buffered or in flight.

The drain phase (model.valve.drain_plan) is computed from where the scenario stopped, so a
failing scenario replays from its file alone. FLINK-28639's ``subtask-events-consistent`` is not
a property (a known limitation, docs/valve.md); :func:`subtask_events_inconsistency` reports it.
"""

from __future__ import annotations

from typing import Iterable

from streamproof.model import valve as spec
from streamproof.properties import scenario as sc
from streamproof.properties.valve import steps as vs
from streamproof.properties.valve.runner import (
    DEFAULT_PROTOCOL, ImplValveRun, ModelValveRun, fields_of, protocol_of, same_up_to_interleaving,
)
from streamproof.properties.verdict import Verdict, Violation

INVARIANTS = {
    "valve.differential": ("same-observations", "same-holder-state"),
    "valve.consistent-checkpoints": ("consistent-checkpoints", "gateways-all-or-none"),
    "valve.exactly-once": ("delivered-to-target", "applied-once", "nothing-lost"),
    "valve.liveness": ("liveness",),
}
DRAINED = ("valve.exactly-once", "valve.liveness")


class ValveCheck:
    """The implementation (and, for the differential, the model) with the epochs of
    model/valve.py, step by step; ``apply`` raises :class:`Violation`."""

    def __init__(self, property_name: str | None, protocol: str = DEFAULT_PROTOCOL):
        """``property_name`` None checks the invariants of every property at once."""
        self.property = property_name
        self.protocol = protocol
        names = list(INVARIANTS) if property_name is None else [property_name]
        self.checked = {invariant for name in names for invariant in INVARIANTS[name]}
        self.impl = ImplValveRun(protocol)
        self.model = ModelValveRun(protocol) if "valve.differential" in names else None
        self.epochs: spec.Epochs | None = None
        self.trace: list[dict] = []
        self.steps = 0
        self.notes: list[str] = []
        self.max_checkpoint = 0

    # -- one step ------------------------------------------------------------------------------
    def apply(self, op: str, fields: dict) -> list[dict]:
        index = self.steps
        self.steps += 1
        observed = self.impl.apply(op, fields)
        self.trace.extend(observed)
        if op == "new_holder":
            self.epochs = spec.Epochs(fields["parallelism"])
        if "checkpoint" in fields:
            self.max_checkpoint = max(self.max_checkpoint, fields["checkpoint"])
        if self.model is not None:
            expected = self.model.apply(op, fields)
            self._compare(op, observed, expected, index)
        try:
            closed = self.impl.closed_for if "gateways-all-or-none" in self.checked else None
            self.notes += self.epochs.step(op, fields, observed, self.impl.result_of, closed, self.checked)
        except spec.Broken as b:
            raise Violation(b.invariant, f"{op}: {b.detail}", index) from None
        return observed

    def apply_step(self, step) -> list[dict]:
        return self.apply(*fields_of(step))

    def _compare(self, op: str, observed: list[dict], expected: list[dict], index: int) -> None:
        if not same_up_to_interleaving(observed, expected):
            raise Violation("same-observations", f"{op}: implementation {_show(observed)} but model {_show(expected)}",
                            index)
        if op == "new_holder":
            return
        for checkpoint in sorted(self.impl.harness.results):
            ours, theirs = self.impl.result_of(checkpoint), self.model.result_of(checkpoint)
            if ours != theirs:
                raise Violation("same-holder-state", f"{op}: the holder's future for checkpoint {checkpoint} is "
                                f"{ours} in the implementation, {theirs} in the model", index)
        if self.impl.buffered() != self.model.buffered():
            raise Violation("same-holder-state", f"{op}: {self.impl.buffered()} events buffered in the "
                            f"implementation, {self.model.buffered()} in the model", index)

    # -- the end -------------------------------------------------------------------------------
    def finish(self) -> None:
        """The drain phase and the end-of-run invariants (exactly-once, liveness)."""
        if (self.property is not None and self.property not in DRAINED) or self.epochs is None:
            return
        last = self.max_checkpoint + 1
        for data in spec.drain_plan(self.epochs, self.impl.coordinator_checkpoints(), last):
            self.apply(data["op"], {k: v for k, v in data.items() if k != "op"})
        done = self.impl.result_of(last) == "done"
        if done:
            for subtask in range(self.epochs.parallelism):
                self.apply("ack", {"subtask": subtask, "checkpoint": last})
            self.apply("notify_complete", {"checkpoint": last})
        for subtask in range(self.epochs.parallelism):
            self.apply("send", {"subtask": subtask, "event": spec.PROBE})
        if "nothing-lost" in self.checked:
            try:
                self.epochs.check_nothing_lost()
            except spec.Broken as b:
                raise Violation(b.invariant, f"after the drain phase: {b.detail}", self.steps - 1) from None
        if "liveness" in self.checked:
            problems = []
            if not done:
                problems.append(f"the holder's future for checkpoint {last} is {self.impl.result_of(last)}")
            elif last not in self.epochs.completed:
                problems.append(f"checkpoint {last} did not complete")
            stuck = [i for i in range(self.epochs.parallelism) if spec.PROBE not in self.epochs.applied[i]]
            if stuck:
                problems.append(f"the probe event sent last never reached subtasks {stuck}")
            if self.impl.buffered():
                problems.append(f"{self.impl.buffered()} events still buffered")
            if self.impl.unresolved():
                problems.append(f"{self.impl.unresolved()} sent events never completed (neither delivered nor failed)")
            if problems:
                raise Violation("liveness", "after the drain phase: " + "; ".join(problems), self.steps - 1)
            self.notes.append("drain checkpoint completed")


def _show(events: list[dict]) -> str:
    return str([{k: v for k, v in e.items() if k != "message"} for e in events])


def check_valve(scenario: sc.Scenario, property_name: str) -> Verdict:
    """Replays ``scenario`` (its ``params.protocol``); the verdict fails at the first broken
    invariant of ``property_name``."""
    run = ValveCheck(property_name, protocol_of(scenario))
    try:
        for step in scenario.steps:
            run.apply_step(step)
        run.finish()
    except Violation as v:
        return Verdict(property_name, False, run.trace, v.invariant, v.detail, v.step)
    return Verdict(property_name, True, run.trace)


def subtask_events_inconsistency(steps: Iterable, protocol: str = DEFAULT_PROTOCOL) -> str | None:
    """FLINK-28639: where a completed checkpoint disagrees on the subtask -> coordinator events
    (None when it never does). Not a property: a documented known limitation of every protocol."""
    run = ValveCheck("valve.consistent-checkpoints", protocol)
    for step in steps:
        run.apply_step(step)
    return run.epochs.subtask_events_consistent()


# -------------------------------------------------------------------- realism and minimizing


def unrealistic(scenario: sc.Scenario) -> str | None:
    """Why a real JobManager could not produce ``scenario`` (None when it could): the rules the
    state machine follows (properties/valve/machine.py): increasing checkpoint ids, one
    checkpoint at a time, acknowledgements only from running attempts once the holder's future
    is done, completion only once every attempt acknowledged, failover to the latest completed
    checkpoint, RPC modes changed only with nothing in flight, no acknowledgement from an attempt
    being failed over; and a coordinator that sends each subtask 0, 1, 2, ... (the same numbers
    again after a rollback), so that a value names one logical event."""
    run = ValveCheck("valve.consistent-checkpoints", protocol_of(scenario))
    run.checked = set()
    last, pending, acked = -1, None, set()
    for index, step in enumerate(scenario.steps):
        op, fields = fields_of(step)
        e = run.epochs
        why = None
        if op == "trigger":
            if e.abort_due:
                why = (f"the abort of checkpoint {min(e.abort_due)} (queued on the main thread at the "
                       "failover) reaches the holder first")
            elif fields["checkpoint"] <= last:
                why = "checkpoint ids must increase"
            elif pending is not None:
                why = f"checkpoint {pending} is still pending"
            last, pending, acked = fields["checkpoint"], fields["checkpoint"], set()
        elif op == "ack":
            i, c = fields["subtask"], fields["checkpoint"]
            if c != pending or run.impl.result_of(c) != "done":
                why = "tasks acknowledge only the pending checkpoint, once the holder's future is done"
            elif not e.running[i] or e.failing_over[i] or i in acked:
                why = "only a running attempt acknowledges, once"
            acked.add(i)
        elif op == "notify_complete":
            if fields["checkpoint"] not in e.completed:
                why = "only a completed checkpoint is notified complete"
            pending = None if fields["checkpoint"] == pending else pending
        elif op == "notify_aborted":
            pending = None if fields["checkpoint"] == pending else pending
        elif op in ("restart_subtask", "reset"):
            if fields["checkpoint"] != e.latest_completed():
                why = "failover restores the latest completed checkpoint"
            elif op == "reset" and any(e.running):
                why = "a global failover fails every attempt first"
            elif op == "restart_subtask" and e.running[fields["subtask"]]:
                why = "a region failover restarts a failed attempt"
            pending = None
        elif op == "rpc" and e.in_flight[fields["subtask"]]:
            why = "RPC modes change only with nothing in flight (RPCs are FIFO)"
        elif op == "complete" and fields["checkpoint"] not in e.triggered:
            why = "the coordinator completes only a triggered checkpoint"
        elif op == "send" and fields["event"] != len(e.coordinator[fields["subtask"]]):
            why = (f"the coordinator sends subtask {fields['subtask']} the events 0, 1, 2, ... (again after a "
                   f"rollback): next is {len(e.coordinator[fields['subtask']])}")
        if why is None and op != "new_holder":
            failing = [i for i in range(e.parallelism) if e.failing_over[i] and e.running[i]]
            if failing and op != "fail_subtask":
                why = f"the JobManager fails subtask {failing[0]} over at once"
        if why is not None:
            return f"step {index} ({op}): {why}"
        run.apply(op, fields)
    return None


def minimize(scenario: sc.Scenario, property_name: str, invariant: str) -> sc.Scenario:
    """Deletes steps (and lowers the parallelism) while ``property_name`` still fails with
    ``invariant`` and the scenario stays realistic; greedy, to a fixpoint."""
    import dataclasses

    def still_fails(candidate: sc.Scenario) -> bool:
        return fails_the_same(candidate, property_name, invariant)

    def candidates(current: sc.Scenario):
        steps = current.steps
        if steps[0].parallelism > 1:
            yield (vs.NewHolder(steps[0].parallelism - 1),) + steps[1:]
            for gone in range(steps[0].parallelism):  # drop a subtask, renumber the ones above
                kept = [s for s in steps[1:] if getattr(s, "subtask", None) != gone]
                yield (vs.NewHolder(steps[0].parallelism - 1),) + tuple(
                    dataclasses.replace(s, subtask=s.subtask - 1) if getattr(s, "subtask", -1) > gone else s
                    for s in kept)
        for c in sorted({getattr(s, "checkpoint", None) for s in steps} - {None, -1}):
            # drop checkpoint c; a failover that restored it restores no checkpoint instead
            yield tuple(dataclasses.replace(s, checkpoint=-1) if isinstance(s, (vs.RestartSubtask, vs.Reset)) else s
                        for s in steps if getattr(s, "checkpoint", None) != c
                        or isinstance(s, (vs.RestartSubtask, vs.Reset)))
        for size in (8, 4, 3, 2, 1):
            for start in range(len(steps) - size, 0, -1):
                yield steps[:start] + steps[start + size:]

    best, changed = scenario, True
    while changed:
        changed = False
        for steps in candidates(best):
            candidate = dataclasses.replace(best, steps=steps)
            if len(steps) > 1 and still_fails(candidate):
                best, changed = canonical(candidate), True
                break
    return best


def fails_the_same(candidate: sc.Scenario, property_name: str, invariant: str) -> bool:
    """``candidate`` (canonical) is valid, realistic, and fails ``property_name`` with ``invariant``."""
    try:
        candidate = canonical(sc.scenario_from_dict(candidate.to_dict()))
    except sc.ScenarioError:
        return False
    if unrealistic(candidate) is not None:
        return False
    verdict = check_valve(candidate, property_name)
    return not verdict.holds and verdict.invariant == invariant


def one_step_shorter_fails(scenario: sc.Scenario, property_name: str, invariant: str) -> int | None:
    """The index of a step whose removal still fails the same way (None: the scenario is minimal
    under single-step deletion)."""
    import dataclasses

    for index in range(1, len(scenario.steps)):
        steps = scenario.steps[:index] + scenario.steps[index + 1:]
        if fails_the_same(dataclasses.replace(scenario, steps=steps), property_name, invariant):
            return index
    return None


def canonical(scenario: sc.Scenario) -> sc.Scenario:
    """The same scenario with checkpoints numbered 1, 2, ... in order and every send carrying
    the coordinator's next number for its subtask (what a shorter run of the same coordinator
    sends)."""
    import dataclasses

    ids = sorted({s.checkpoint for s in scenario.steps if getattr(s, "checkpoint", -1) >= 0})
    rank = {c: n + 1 for n, c in enumerate(ids)}
    run = ValveCheck("valve.consistent-checkpoints", protocol_of(scenario))
    run.checked = set()
    steps = []
    for step in scenario.steps:
        if getattr(step, "checkpoint", -1) >= 0:
            step = dataclasses.replace(step, checkpoint=rank[step.checkpoint])
        if isinstance(step, vs.Send) and run.epochs is not None:
            step = vs.Send(step.subtask, len(run.epochs.coordinator[step.subtask]))
        steps.append(step)
        run.apply_step(step)
    return dataclasses.replace(scenario, steps=tuple(steps))

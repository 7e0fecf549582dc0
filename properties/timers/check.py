"""The differential check of the timer service: implementation against model, step by step.

After every step:
  * ``same-observations``: the model, following the implementation's choices among
    equal-timestamp timers, produces exactly the implementation's observations (fired timers
    with key context and watermark, physical timer calls, counts, rejections);
  * ``same-pending-timers``: every instance holds the same pending timers per service, domain
    and key group;
  * ``one-physical-timer-at-head``: each service has at most one physical timer and, while it has
    processing-time timers, exactly one, due no later than its head;
  * ``unwatched-clock-fires-the-same``: the implementation with nothing watching its clock (the
    clock then fires a due head's physical timer inline, without registering it) makes the same
    observations, physical timer calls aside.
"""

from __future__ import annotations

from typing import Iterable

from streamproof.impl.state.key_groups import assign_to_key_group
from streamproof.impl.timers.internal_timer_service import MAX_WATERMARK
from streamproof.model import timers as spec
from streamproof.properties.timers.runner import DEFAULT_BUDGET, ImplTimersRun, ModelTimersRun, _model_key
from streamproof.properties.verdict import Verdict, Violation


class DifferentialTimers:
    """Implementation and model side by side; ``apply`` raises :class:`Violation`."""

    def __init__(self, budget: int = DEFAULT_BUDGET):
        self.impl = ImplTimersRun(budget)
        self.unwatched = ImplTimersRun(budget, watch_physical=False)
        self.model = ModelTimersRun(budget)
        self.trace: list[dict] = []
        self.steps = 0

    @property
    def ended(self) -> bool:
        return self.impl.ended or self.model.ended or self.unwatched.ended

    def apply(self, step, check_invariants: bool = True) -> list[dict]:
        """Runs ``step`` on both sides and compares; ``check_invariants=False`` leaves the state
        invariants to the caller (the state machine checks them as Hypothesis invariants)."""
        index = self.steps
        self.steps += 1
        observed = self.impl.apply(step, index)
        expected = self.model.apply(step, observed, index)
        self.trace.extend(observed)
        if _without_text(observed) != _without_text(expected):
            raise Violation("same-observations", f"{step.op}: implementation {observed} but model {expected}", index)
        unwatched = self.unwatched.apply(step, index)
        if _without_text(unwatched) != _without_text(_unphysical(observed)):
            raise Violation("unwatched-clock-fires-the-same",
                            f"{step.op}: unwatched {unwatched} but watched {_unphysical(observed)}", index)
        if check_invariants and not self.ended:
            self.check_invariants(index)
        return observed

    def check_invariants(self, index: int | None = None) -> None:
        for number, (inst, model_inst) in enumerate(zip(self.impl.instances, self.model.model.instances)):
            impl_view = _impl_pending(inst)
            model_view = _model_pending(model_inst)
            if impl_view != model_view:
                diff = sorted(set(impl_view.items()) ^ set(model_view.items()), key=repr)[:4]
                raise Violation("same-pending-timers", f"instance {number} differs at {diff}", index)
            problem = _physical_problem(inst)
            if problem:
                raise Violation("one-physical-timer-at-head", f"instance {number}: {problem}", index)
            if not spec.at_most_one_physical_timer_at_head(model_inst):
                raise Violation("one-physical-timer-at-head", f"model instance {number} breaks it", index)


def _unphysical(events: list[dict]) -> list[dict]:
    return [e for e in events if e["event"] not in ("physical_register", "physical_cancel")]


def _without_text(events: list[dict]) -> list[dict]:
    return [{k: v for k, v in e.items() if k != "message"} for e in events]


def _impl_pending(inst) -> dict:
    view: dict = {}
    for name, service in inst.manager.services.items():
        for domain, queue in (("event", service.event_time_timers_queue),
                              ("processing", service.processing_time_timers_queue)):
            for timer in queue:
                kg = assign_to_key_group(timer.key, inst.max_parallelism)
                view.setdefault((name, domain, kg), set()).add((timer.timestamp, _model_key(timer.key), timer.namespace))
    return {k: frozenset(v) for k, v in view.items()}


def _model_pending(inst) -> dict:
    view: dict = {}
    for svc in inst.services.values():
        for domain, timers in (("event", svc.event), ("processing", svc.processing)):
            for t in timers:
                kg = spec.key_group(t[1], inst.max_parallelism)
                view.setdefault((svc.name, domain, kg), set()).add(t)
    return {k: frozenset(v) for k, v in view.items()}


def _physical_problem(inst) -> str | None:
    scheduled = 0
    for name, service in inst.manager.services.items():
        physical = service.next_timer
        if physical is not None and physical.pending:
            scheduled += 1
        head = service.processing_time_timers_queue.peek()
        if head is None:
            continue
        if physical is None or not physical.pending:
            if head.timestamp == MAX_WATERMARK:
                continue  # Flink quirk: a head at Long.MAX_VALUE registered into an empty queue gets none
            return f"service {name!r} has processing-time timers but no physical timer"
        if physical.timestamp > head.timestamp:
            return f"service {name!r}: physical timer {physical.timestamp} is after its head {head.timestamp}"
    if inst.clock.num_pending_timers() != scheduled:
        return f"{inst.clock.num_pending_timers()} physical timers pending for {scheduled} scheduled"
    return None


def check_timers(steps: Iterable, property_name: str = "timers.differential",
                 budget: int = DEFAULT_BUDGET) -> Verdict:
    """Replays ``steps``; the verdict fails at the first broken invariant."""
    run = DifferentialTimers(budget)
    try:
        for step in steps:
            if run.ended:
                break
            run.apply(step)
    except Violation as v:
        return Verdict(property_name, False, run.trace, v.invariant, v.detail, v.step)
    return Verdict(property_name, True, run.trace)

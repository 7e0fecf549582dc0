"""The ``termination`` scenario family (FLIP-269): a bounded job whose keyed operator registers
processing-time timers with termination actions, ending with or without drain.

Each ``timer`` step is a record of a source: the operator (:class:`TerminationTimers`) registers a
processing-time timer at ``pts`` for ``key`` with ``action`` (absent: CANCEL) and an event-time
timer at ``pts`` (fired by MAX_WATERMARK at end of input, interruptibly), and emits ``("r", key,
pts)`` (every registration is in the output, so a check can tell which attempt registered a
timer). When the processing-time
timer fires its callback emits ``("p", key, ts, action, processing time read)``, registers one
more timer ``then`` later with the same action (negative: one earlier timer; positive: a chain
that goes on until the job ends or the flush's horizon stops it) and deletes the key's timer
``deletes`` later. ``fail``, ``fail_in_interrupted_firing`` and ``rescale`` are the job family's
faults. ``params`` (see :data:`DEFAULT_PARAMS`): the job's settings, ``drain``, the operator's
``override``, whether event-time callbacks yield to the mailbox, and the checkpoints' timer
snapshot format (1: without termination actions, as written by a runtime that predates them).

An ``override`` step (not a record) changes the operator's FLIP-269 override while the job runs,
in every attempt of every subtask: without ``at`` the operator sets it in ``open()`` (after its
restore), with ``at`` when its processing time reaches ``at`` (an operator-level processing-time
timer; if the job ends before, the override stays unset). The override applies to every pending
timer, the ones registered or restored before it included. At end of input (with drain) the
operator emits ``("pending", override, timers, history)`` before the flush: the override in
effect, the timers it has pending (its keyed state mirrors them: ``(key, pts, action, then,
deletes)``), and ``(action, pending timers when set, restored)`` per override it set.
"""

from __future__ import annotations

from typing import Any, ClassVar

from streamproof.impl.operators.keyed_process_operator import KeyedProcessFunction, MapStateDescriptor, StreamRecord
from streamproof.impl.timers.termination import TimerTerminationAction
from streamproof.properties.job.steps import DEFAULT_PARAMS as JOB_PARAMS
from streamproof.properties.job.steps import SOURCE, Fail, FailInInterruptedFiring, Rescale, check_job_settings, faults_of
from streamproof.properties.scenario import (
    KEY, EnumKind, IntKind, Scenario, Step, TOP, arg, register_family, step, step_error,
)

ACTIONS = ("CANCEL", "TRIGGER", "WAIT")
DEFAULT_PARAMS: dict[str, Any] = {
    **{k: v for k, v in JOB_PARAMS.items() if k != "operator"},
    "override": None,   # the operator's FLIP-269 override: null or an action name
    "yielding": True,   # event-time callbacks yield to the mailbox (interrupted firings at end of input)
    "snapshot_format": 2,  # 1: checkpoints written without termination actions (restored as CANCEL)
}
TIMESTAMP = IntKind(0, 10**12)


@step
class ProcessingTimer(Step):
    """A record of source ``source``: the operator registers a processing-time timer at ``pts``
    for ``key`` with ``action``; its callback registers one ``then`` later and deletes the one
    ``deletes`` later."""

    op: ClassVar[str] = "timer"
    source: int = arg(SOURCE)
    key: Any = arg(KEY)
    pts: int = arg(TIMESTAMP)
    action: str | None = arg(EnumKind(ACTIONS), optional=True)
    then: int | None = arg(IntKind(-10**9, 10**9), optional=True)
    deletes: int | None = arg(IntKind(1, 10**9), optional=True)


@step
class Override(Step):
    """The operator sets its FLIP-269 override to ``action`` at processing time ``at`` (absent: in
    ``open()``, after the restore), in every attempt; every pending timer gets it."""

    op: ClassVar[str] = "override"
    action: str = arg(EnumKind(ACTIONS))
    at: int | None = arg(TIMESTAMP, optional=True)


def termination_params(scenario: Scenario) -> dict:
    params = {**DEFAULT_PARAMS, **scenario.params}
    unknown = set(scenario.params) - set(DEFAULT_PARAMS)
    if unknown:
        raise TOP.expected("params", f"only {', '.join(DEFAULT_PARAMS)}", sorted(unknown)[0], "semantic")
    check_job_settings(params, ("interruptible_timers", "unaligned", "drain", "yielding"))
    if params["snapshot_format"] not in (1, 2) or isinstance(params["snapshot_format"], bool):
        raise TOP.expected("params", "snapshot_format: 1 or 2", params["snapshot_format"], "semantic")
    if params["override"] is not None and params["override"] not in ACTIONS:
        raise TOP.expected("params", "override: null or one of " + ", ".join(ACTIONS), params["override"], "semantic")
    return params


def validate_termination(scenario: Scenario) -> None:
    params = termination_params(scenario)
    seen: dict = {}
    for i, s in enumerate(scenario.steps):
        if isinstance(s, ProcessingTimer):
            if s.source >= params["sources"]:
                raise step_error(i, s, "source", f"a source below params.sources ({params['sources']})", s.source)
            if (s.key, s.pts) in seen:
                raise step_error(i, s, "pts", f"a timer not registered before (step {seen[(s.key, s.pts)]} has "
                                 f"key {s.key!r} and pts {s.pts})", s.pts)
            seen[(s.key, s.pts)] = i
            if s.then is not None and (s.then == 0 or s.pts + s.then < 0):
                raise step_error(i, s, "then", "non-zero, and pts + then >= 0", s.then)
        elif isinstance(s, Rescale) and s.parallelism > params["max_parallelism"]:
            raise step_error(i, s, "parallelism", f"at most max_parallelism ({params['max_parallelism']})", s.parallelism)


def action_of(name: str | None) -> TimerTerminationAction:
    return TimerTerminationAction[name or "CANCEL"]


def overrides_of(scenario: Scenario) -> tuple:
    """The ``override`` steps as ``(action, at)`` in scenario order."""
    return tuple((s.action, s.at) for s in scenario.steps if isinstance(s, Override))


def sources_of(scenario: Scenario) -> list[list]:
    """Each timer step as a record ``(pts, action, then, deletes)`` at event time ``pts``."""
    sources: list[list] = [[] for _ in range(termination_params(scenario)["sources"])]
    for s in scenario.steps:
        if isinstance(s, ProcessingTimer):
            sources[s.source].append(StreamRecord(s.key, (s.pts, s.action or "CANCEL", s.then, s.deletes), s.pts))
    return sources


class TerminationTimers(KeyedProcessFunction):
    """The operator of ``termination`` scenarios (see the module docstring)."""

    interruptible_timers = True

    def __init__(self, override: str | None = None, yielding: bool = True, overrides: tuple = ()):
        self.timer_termination_action = None if override is None else action_of(override)
        self.yielding = yielding
        self.overrides = overrides
        self.override = override  # the override in effect (what this operator set last)
        self.history: list = []  # (action, timers pending when set, restored) per override set

    def open(self, ctx) -> None:
        self.plans = ctx.get_map_state(MapStateDescriptor("plans"))  # pts -> (action, then, deletes)
        self.executor = ctx.get_mailbox_executor()
        self.backend = self.plans._backend  # the keyed state of every key: the mirror of the timers
        self.operator = _operator_of(ctx)
        self.restored = bool(self._pending())
        for action, at in self.overrides:
            if at is None:
                self._set_override(action)
            else:
                ctx.get_processing_time_service().register_timer(
                    at, lambda _, action=action: self._set_override(action))

    def _set_override(self, action: str) -> None:
        self.history.append((action, len(self._pending()), self.restored))
        self.override = action
        self.operator.set_timer_termination_action(action_of(action))

    def _pending(self) -> list:
        """``(key, pts, action, then, deletes)`` of every timer the keyed state says is pending."""
        return sorted(((key, pts, *plan) for tables in self.backend._tables.values()
                       for key, plans in tables.get("plans", {}).items() for pts, plan in plans.items()), key=repr)

    def end_input(self, out) -> None:
        out.collect(("pending", self.override, tuple(self._pending()), tuple(self.history)))

    def process_element(self, value, ctx, out) -> None:
        pts, action, then, deletes = value
        self.plans.put(pts, (action, then, deletes))
        ctx.timer_service().register_processing_time_timer(pts, action_of(action))
        out.collect(("r", ctx.get_current_key(), pts))
        ctx.timer_service().register_event_time_timer(ctx.timestamp())

    def on_timer(self, timestamp, ctx, out) -> None:
        key, timers = ctx.get_current_key(), ctx.timer_service()
        if ctx.time_domain == "event":
            if self.yielding:
                self.executor.try_yield()
            out.collect(("e", key, timestamp))
            return
        now = timers.current_processing_time()
        action, then, deletes = self.plans.get(timestamp, ("CANCEL", None, None))
        self.plans.remove(timestamp)
        out.collect(("p", key, timestamp, action, now))
        if then:
            child = timestamp + then
            self.plans.put(child, (action, then if then > 0 else None, None))
            timers.register_processing_time_timer(child, action_of(action))
            out.collect(("r", key, child))
        if deletes:
            timers.delete_processing_time_timer(timestamp + deletes)
            self.plans.remove(timestamp + deletes)

    def finish(self, out) -> None:
        # The end-of-input flush has fired or dropped every timer (CANCEL ones silently): the
        # mirror forgets them, so a final checkpoint's keyed state agrees with its timers.
        for tables in self.backend._tables.values():
            tables.get("plans", {}).clear()
        out.collect(("finish",))


def _operator_of(runtime_context):
    """The operator running this function: FLIP-269's override is the operator's (Flink's
    ``setTimerTerminationAction`` of the operator), and the simulated runtime context has no public
    path to it; the operator-level processing-time service's override getter closes over it."""
    getter = runtime_context.get_processing_time_service().override
    for cell in getattr(getter, "__closure__", None) or ():
        if hasattr(cell.cell_contents, "set_timer_termination_action"):
            return cell.cell_contents
    raise RuntimeError("TerminationTimers: cannot reach the operator to set its termination override")


TERMINATION_STEPS = [ProcessingTimer, Override, Fail, FailInInterruptedFiring, Rescale]
register_family("termination", TERMINATION_STEPS, validate_termination)

__all__ = ["ACTIONS", "DEFAULT_PARAMS", "Override", "ProcessingTimer", "overrides_of", "TerminationTimers", "action_of", "faults_of",
           "sources_of", "termination_params"]

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
"""

from __future__ import annotations

from typing import Any, ClassVar

from streamproof.impl.operators import KeyedProcessFunction, MapStateDescriptor, StreamRecord
from streamproof.impl.termination import TimerTerminationAction
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

    def __init__(self, override: str | None = None, yielding: bool = True):
        self.timer_termination_action = None if override is None else action_of(override)
        self.yielding = yielding

    def open(self, ctx) -> None:
        self.plans = ctx.get_map_state(MapStateDescriptor("plans"))  # pts -> (action, then, deletes)
        self.executor = ctx.get_mailbox_executor()

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

    def finish(self, out) -> None:
        out.collect(("finish",))


TERMINATION_STEPS = [ProcessingTimer, Fail, FailInInterruptedFiring, Rescale]
register_family("termination", TERMINATION_STEPS, validate_termination)

__all__ = ["ACTIONS", "DEFAULT_PARAMS", "ProcessingTimer", "TerminationTimers", "action_of", "faults_of",
           "sources_of", "termination_params"]

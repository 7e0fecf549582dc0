"""Runs a ``timers`` scenario against the implementation and against the model.

Both runners turn each step into observations in the format of
``shared/vectors/flink_timer_traces.json`` (``instance``, ``physical_register``,
``physical_cancel``, ``fire``, ``try_advance_watermark``, ``count``, ``error``), so a run can be
compared with Flink's own. A rejected step (a key outside the local key groups, a restore with
another max parallelism) yields an ``error`` observation and the run goes on; a firing budget
overrun yields an ``error`` with ``"fatal": true`` and ends the run.

The model does not choose among equal-timestamp timers: it is handed a *reference* trace (the
implementation's, or Flink's) and follows the reference's choice wherever that choice is allowed.
"""

from __future__ import annotations

from typing import Any, Iterable

from streamproof.impl.state.key_groups import Int32, KeyGroupRange
from streamproof.impl.timers.heap_priority_queue_set import KeyGroupOutOfRangeError
from streamproof.impl.timers.internal_time_service_manager import InternalTimeServiceManager
from streamproof.impl.timers.internal_timer_service import KeyContext, TimerFiringBudgetExceeded
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService
from streamproof.model import timers as spec
from streamproof.properties.tracecompare import TraceComparison, run_trace

DEFAULT_SERVICE = spec.DEFAULT_SERVICE
DEFAULT_BUDGET = 10_000


class RunEnded(Exception):
    """Raised by ``apply`` after a fatal step; the run cannot go on."""


def encode_key(key: Any) -> Any:
    """A key as it appears in observations and scenario JSON."""
    return {"int32": key.value} if isinstance(key, Int32) else key


def _model_key(key: Any) -> Any:
    return ("int32", key.value) if isinstance(key, Int32) else key


def _encode_model_key(key: Any) -> Any:
    return {"int32": key[1]} if isinstance(key, tuple) else key


class _Recorder:
    """Collects the observations of the current step."""

    def __init__(self) -> None:
        self.events: list[dict] = []

    def emit(self, event: dict) -> None:
        self.events.append(event)

    def take(self) -> list[dict]:
        events, self.events = self.events, []
        return events


# -- implementation ------------------------------------------------------------------------
class _Instance:
    def __init__(self, max_parallelism: int, key_group_range: tuple[int, int], budget: int, emit,
                 watch_physical: bool = True):
        self.max_parallelism = max_parallelism
        self.key_context = KeyContext(max_parallelism)
        self.clock = ManualProcessingTimeService(budget=budget)
        if watch_physical:  # unwatched, the clock may fire a due head's physical timer inline
            self.clock.on_register.append(lambda ts: emit({"event": "physical_register", "ts": ts}))
            self.clock.on_cancel.append(lambda ts: emit({"event": "physical_cancel", "ts": ts}))
        self.manager = InternalTimeServiceManager(
            self.key_context, KeyGroupRange(*key_group_range), self.clock, firing_budget=budget
        )


class _Target:
    """The triggerable of one named service: records the firing, then runs the reactions."""

    def __init__(self, run: "ImplTimersRun", instance: _Instance, name: str):
        self.run, self.instance, self.name = run, instance, name

    def _fired(self, domain: str, timer) -> None:
        service = self.instance.manager.services[self.name]
        key = encode_key(timer.key)
        event = {"event": "fire", "domain": domain, "key": key, "namespace": timer.namespace, "ts": timer.timestamp,
                 "current_key": encode_key(self.instance.key_context.get_current_key()),
                 "watermark": service.current_watermark}
        if self.name != DEFAULT_SERVICE:
            event["service"] = self.name
        self.run.recorder.emit(event)
        self.run.fired_in_call += 1
        for step in self.run.reactions.get((self.name, domain, timer.key, timer.namespace, timer.timestamp), ()):
            self.run.register_or_delete(step)

    def on_event_time(self, timer) -> None:
        self._fired("event", timer)

    def on_processing_time(self, timer) -> None:
        self._fired("processing", timer)


class ImplTimersRun:
    """Drives ``streamproof.impl.timers.internal_timer_service`` through the steps of a timers scenario.

    ``watch_physical=False`` records no physical timer calls: nothing then watches the clock, so
    it takes its fast path (``ManualProcessingTimeService.fire_inline``), which every other
    observation must not tell apart.
    """

    def __init__(self, budget: int = DEFAULT_BUDGET, watch_physical: bool = True):
        self.budget = budget
        self.watch_physical = watch_physical
        self.recorder = _Recorder()
        self.instances: list[_Instance] = []
        self.current: _Instance | None = None
        self.snapshots: dict[str, tuple[int, list[str], dict]] = {}
        self.reactions: dict[tuple, list] = {}
        self.fired_in_call = 0
        self.ended = False

    def service(self, name: str | None):
        inst = self.current
        name = name or DEFAULT_SERVICE
        return inst.manager.get_internal_timer_service(name, _Target(self, inst, name)) \
            if name not in inst.manager.services else inst.manager.services[name]

    def register_or_delete(self, step) -> None:
        service = self.service(step.service)
        domain = "event_time" if step.domain == "event" else "processing_time"
        getattr(service, f"{step.op}_{domain}_timer")(step.namespace, step.ts)

    def _start(self, inst: _Instance, names: Iterable[str]) -> None:
        self.instances.append(inst)
        self.current = inst
        for name in dict.fromkeys([DEFAULT_SERVICE, *names]):
            self.service(name)
        self.recorder.emit({"event": "instance", "index": len(self.instances) - 1})

    def apply(self, step, index: int | None = None) -> list[dict]:
        """Runs one step; returns its observations."""
        if self.ended:
            raise RunEnded("the run ended at a fatal error")
        try:
            self._apply(step)
        except KeyGroupOutOfRangeError as e:
            self.recorder.emit({"event": "error", "step": index, "message": str(e)})
        except ValueError as e:
            self.recorder.emit({"event": "error", "step": index, "message": str(e)})
        except TimerFiringBudgetExceeded as e:
            self.ended = True
            self.recorder.emit({"event": "error", "step": index, "message": str(e), "fatal": True})
        return self.recorder.take()

    def _apply(self, step) -> None:
        op = step.op
        if op == "new_instance":
            self._start(_Instance(step.max_parallelism, step.key_group_range, self.budget, self.recorder.emit,
                                  self.watch_physical), [])
        elif op == "restore":
            max_parallelism, names, state = self.snapshots[step.id]
            if max_parallelism != step.max_parallelism:
                raise ValueError(f"snapshot {step.id!r} was taken with max_parallelism {max_parallelism}, "
                                 f"not {step.max_parallelism}")
            inst = _Instance(step.max_parallelism, step.key_group_range, self.budget, self.recorder.emit,
                             self.watch_physical)
            inst.manager.restore_state(state)
            self._start(inst, names)
        elif op == "use_instance":
            if step.index >= len(self.instances):  # the restore that would have made it was rejected
                raise ValueError(f"no instance {step.index}: only {len(self.instances)} were created")
            self.current = self.instances[step.index]
        elif op == "set_key":
            self.current.key_context.set_current_key(step.key)
        elif op in ("register", "delete"):
            self.register_or_delete(step)
        elif op == "advance_watermark":
            self.current.manager.advance_watermark(step.to)
        elif op == "try_advance_watermark":
            self.fired_in_call = 0
            completed = self.current.manager.try_advance_watermark(
                step.to, lambda: self.fired_in_call >= step.interrupt_after)
            watermark = self.current.manager.services[DEFAULT_SERVICE].current_watermark
            self.recorder.emit({"event": "try_advance_watermark", "to": step.to, "completed": completed,
                                "watermark": watermark})
        elif op == "advance_processing_time":
            self.current.clock.advance_to(step.to)
        elif op == "on_fire":
            where = (step.service or DEFAULT_SERVICE, step.domain, step.key, step.namespace, step.ts)
            self.reactions.setdefault(where, []).extend(step.then)
        elif op == "snapshot":
            manager = self.current.manager
            self.snapshots[step.id] = (self.current.max_parallelism, list(manager.services), manager.snapshot_state())
        elif op == "count":
            manager = self.current.manager
            self.recorder.emit({"event": "count", "event_timers": manager.num_event_time_timers(),
                                "processing_timers": manager.num_processing_time_timers(),
                                "physical_timers": self.current.clock.num_pending_timers()})
        else:
            raise ValueError(f"unknown timers op {op!r}")


# -- model -----------------------------------------------------------------------------------
class ModelTimersRun:
    """Drives ``streamproof.model.timers`` through the steps, following a reference trace's tie choices."""

    def __init__(self, budget: int = DEFAULT_BUDGET):
        self.recorder = _Recorder()
        self.reference: list[dict] = []
        self.model = spec.TimerModel(self._choose, self.recorder.emit, budget, _encode_model_key)
        self.ended = False
        self.deviations = 0

    def _choose(self, service: str, domain: str, candidates: list) -> tuple:
        position = len(self.recorder.events)
        if position < len(self.reference):
            ref = self.reference[position]
            if ref.get("event") == "fire" and ref.get("domain") == domain:
                wanted = (ref["ts"], _model_key(_decode_key(ref["key"])), ref["namespace"])
                if wanted in candidates:
                    return wanted
        self.deviations += 1
        return candidates[0]

    def apply(self, step, reference: list[dict] | None = None, index: int | None = None) -> list[dict]:
        if self.ended:
            raise RunEnded("the run ended at a fatal error")
        self.reference = reference or []
        try:
            self._apply(step)
        except spec.Rejected as e:
            self.recorder.emit({"event": "error", "step": index, "message": str(e)})
        except spec.BudgetExceeded as e:
            self.ended = True
            self.recorder.emit({"event": "error", "step": index, "message": str(e), "fatal": True})
        return self.recorder.take()

    def _apply(self, step) -> None:
        m, op = self.model, step.op
        if op == "new_instance":
            m.new_instance(step.max_parallelism, step.key_group_range)
        elif op == "restore":
            m.restore(step.id, step.max_parallelism, step.key_group_range)
        elif op == "use_instance":
            m.use_instance(step.index)
        elif op == "set_key":
            m.set_key(_model_key(step.key))
        elif op in ("register", "delete"):
            getattr(m, op)(step.service, step.domain, step.namespace, step.ts)
        elif op == "advance_watermark":
            m.advance_watermark(step.to)
        elif op == "try_advance_watermark":
            completed = m.try_advance_watermark(step.to, lambda: m.fired_in_call >= step.interrupt_after)
            self.recorder.emit({"event": "try_advance_watermark", "to": step.to, "completed": completed,
                                "watermark": m.current.services[DEFAULT_SERVICE].watermark})
        elif op == "advance_processing_time":
            m.advance_processing_time(step.to)
        elif op == "on_fire":
            then = [spec.reaction(s.op, s.service, s.domain, s.namespace, s.ts) for s in step.then]
            spec.add_reaction(m, step.service, step.domain, _model_key(step.key), step.namespace, step.ts, then)
        elif op == "snapshot":
            m.snapshot(step.id)
        elif op == "count":
            m.count()
        else:
            raise ValueError(f"unknown timers op {op!r}")


def _decode_key(value: Any) -> Any:
    return Int32(value["int32"]) if isinstance(value, dict) else value


# -- whole scenarios -------------------------------------------------------------------------
def _tie(event: dict):
    """Timers firing at the same timestamp in the same domain and service are a tie: Flink
    promises no order among them, so they compare as a multiset."""
    return (event.get("service"), event["domain"], event["ts"]) if event.get("event") == "fire" else None


# Errors compare by type and fatality only; the step index never counts.
COMPARISON = TraceComparison(ignore=frozenset({"step"}), error_key=lambda e: (bool(e.get("fatal")),), tie_key=_tie)
normalize, same_trace, difference = COMPARISON.normalize, COMPARISON.same, COMPARISON.difference


def run_impl(steps: Iterable, budget: int = DEFAULT_BUDGET) -> list[dict]:
    run = ImplTimersRun(budget)
    return run_trace(run.apply, steps, ended=lambda: run.ended)


def run_model(steps: Iterable, reference: list[dict] | None = None, budget: int = DEFAULT_BUDGET) -> list[dict]:
    """The model's trace; ties follow ``reference`` (a whole trace) where the model allows it."""
    run, reference, seen = ModelTimersRun(budget), reference or [], [0]

    def apply(step, index: int) -> list[dict]:
        events = run.apply(step, reference[seen[0]:], index)
        seen[0] += len(events)
        return events

    return run_trace(apply, steps, ended=lambda: run.ended)

"""The operator API users certify: ``KeyedProcessFunction`` with keyed state and timers, and the
``KeyedProcessOperator`` that runs it (Flink's ``KeyedProcessOperator``).

Keyed state lives in a :class:`KeyedStateBackend`, partitioned by key group like the timers, so a
checkpoint is per key group and a restore can take any key-group range (rescaling).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterable

from streamproof.impl.keygroups import KeyGroupRange, assign_to_key_group
from streamproof.impl.operator_timers import OperatorProcessingTimeService
from streamproof.impl.snapshots import restore_from_snapshots, start_snapshot
from streamproof.impl.timers import (
    InternalTimeServiceManager, InternalTimer, InternalTimerService, KeyContext, MAX_WATERMARK,
)

VOID_NAMESPACE = ""  # Flink's VoidNamespace: user timers have no namespace
USER_TIMERS = "user-timers"


@dataclass(frozen=True)
class StreamRecord:
    """A record on the wire: its key (already extracted), value and event timestamp."""

    key: Hashable
    value: Any
    timestamp: int


# -- keyed state -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ValueStateDescriptor:
    name: str
    default: Any = None


@dataclass(frozen=True)
class ListStateDescriptor:
    name: str


@dataclass(frozen=True)
class MapStateDescriptor:
    name: str


class KeyedStateBackend:
    """Keyed state per key group: ``{key_group: {state name: {key: value}}}``."""

    def __init__(self, key_context: KeyContext, key_group_range: KeyGroupRange):
        self.key_context = key_context
        self.key_group_range = key_group_range
        self._tables: dict[int, dict[str, dict]] = {kg: {} for kg in key_group_range}

    def _table(self, name: str) -> dict:
        kg = self.key_context.current_key_group_index
        if kg not in self._tables:
            raise ValueError(f"key {self.key_context.current_key!r} (key group {kg}) is not in {self.key_group_range}")
        return self._tables[kg].setdefault(name, {})

    def get(self, name: str, default: Any = None) -> Any:
        return self._table(name).get(self.key_context.current_key, default)

    def put(self, name: str, value: Any) -> None:
        self._table(name)[self.key_context.current_key] = value

    def clear(self, name: str) -> None:
        self._table(name).pop(self.key_context.current_key, None)

    def snapshot(self) -> dict[int, dict[str, dict]]:
        """A deep, point-in-time copy of every local key group (taken synchronously)."""
        return {kg: copy.deepcopy(tables) for kg, tables in self._tables.items() if any(tables.values())}

    def restore(self, snapshot: dict[int, dict[str, dict]]) -> None:
        """Takes the snapshot's key groups that are in the local range."""
        for kg, tables in snapshot.items():
            if self.key_group_range.contains(kg):
                self._tables[kg] = copy.deepcopy(tables)

    def keys(self, name: str) -> list:
        return [k for tables in self._tables.values() for k in tables.get(name, {})]


class ValueState:
    def __init__(self, backend: KeyedStateBackend, descriptor: ValueStateDescriptor):
        self._backend, self._name, self._default = backend, descriptor.name, descriptor.default

    def value(self) -> Any:
        return self._backend.get(self._name, self._default)

    def update(self, value: Any) -> None:
        self._backend.put(self._name, value)

    def clear(self) -> None:
        self._backend.clear(self._name)


class ListState:
    def __init__(self, backend: KeyedStateBackend, descriptor: ListStateDescriptor):
        self._backend, self._name = backend, descriptor.name

    def get(self) -> list:
        return list(self._backend.get(self._name, []))

    def add(self, value: Any) -> None:
        self._backend.put(self._name, self.get() + [value])

    def update(self, values: Iterable) -> None:
        self._backend.put(self._name, list(values))

    def clear(self) -> None:
        self._backend.clear(self._name)


class MapState:
    def __init__(self, backend: KeyedStateBackend, descriptor: MapStateDescriptor):
        self._backend, self._name = backend, descriptor.name

    def _map(self) -> dict:
        return dict(self._backend.get(self._name, {}))

    def get(self, key: Any, default: Any = None) -> Any:
        return self._map().get(key, default)

    def put(self, key: Any, value: Any) -> None:
        updated = self._map()
        updated[key] = value
        self._backend.put(self._name, updated)

    def contains(self, key: Any) -> bool:
        return key in self._map()

    def remove(self, key: Any) -> None:
        updated = self._map()
        updated.pop(key, None)
        self._backend.put(self._name, updated)

    def items(self) -> list:
        return sorted(self._map().items(), key=repr)

    def keys(self) -> list:
        return [k for k, _ in self.items()]

    def is_empty(self) -> bool:
        return not self._map()

    def clear(self) -> None:
        self._backend.clear(self._name)


# -- the user-facing API -------------------------------------------------------------------------
class Collector:
    """Where a function emits its output."""

    def __init__(self, emit: Callable[[Any, int | None], None]):
        self._emit = emit
        self.timestamp: int | None = None

    def collect(self, value: Any) -> None:
        self._emit(value, self.timestamp)


class TimerService:
    """``ctx.timer_service()``: timers of the current key, without namespace."""

    def __init__(self, service: InternalTimerService):
        self._service = service

    def current_watermark(self) -> int:
        return self._service.current_watermark

    def current_processing_time(self) -> int:
        return self._service.current_processing_time()

    def register_event_time_timer(self, time: int) -> None:
        self._service.register_event_time_timer(VOID_NAMESPACE, time)

    def register_processing_time_timer(self, time: int, action=None) -> None:
        """``action``: the timer's :class:`streamproof.impl.termination.TimerTerminationAction` at end of
        input (FLIP-269; None: CANCEL)."""
        self._service.register_processing_time_timer(VOID_NAMESPACE, time, action)

    def delete_event_time_timer(self, time: int) -> None:
        self._service.delete_event_time_timer(VOID_NAMESPACE, time)

    def delete_processing_time_timer(self, time: int) -> None:
        self._service.delete_processing_time_timer(VOID_NAMESPACE, time)


class Context:
    """The context of ``process_element`` and ``on_timer``."""

    def __init__(self, operator: "KeyedProcessOperator"):
        self._operator = operator
        self._timestamp: int | None = None
        self.time_domain: str | None = None  # "event" or "processing" inside on_timer

    def timestamp(self) -> int | None:
        return self._timestamp

    def timer_service(self) -> TimerService:
        return self._operator.user_timer_service

    def get_current_key(self) -> Any:
        return self._operator.key_context.current_key


class RuntimeContext:
    """What ``open`` receives: access to keyed state."""

    def __init__(self, backend: KeyedStateBackend, subtask_index: int, parallelism: int):
        self._backend = backend
        self.subtask_index, self.parallelism = subtask_index, parallelism
        self.mailbox_executor = None  # the operator's MailboxExecutor, set by the task
        self.processing_time_service = None  # the operator's OperatorProcessingTimeService

    def get_processing_time_service(self):
        """Operator-level processing-time timers: ``register_timer(ts, callback, action=None)``."""
        return self.processing_time_service

    def get_mailbox_executor(self):
        """The operator's mailbox executor (to ``yield_``/``try_yield`` inside a callback)."""
        return self.mailbox_executor

    def get_state(self, descriptor: ValueStateDescriptor) -> ValueState:
        return ValueState(self._backend, descriptor)

    def get_list_state(self, descriptor: ListStateDescriptor) -> ListState:
        return ListState(self._backend, descriptor)

    def get_map_state(self, descriptor: MapStateDescriptor) -> MapState:
        return MapState(self._backend, descriptor)


class KeyedProcessFunction:
    """Subclass and override ``process_element`` (and ``on_timer``). ``open``/``finish``/``close``
    are the life cycle; ``finish`` may still emit (end of input), ``close`` may not."""

    #: set True to let the runtime split timer firing at a watermark (FLIP-443)
    interruptible_timers = False
    #: FLIP-269 per-operator override of every processing-time timer's termination action
    #: (an :class:`streamproof.impl.termination.TimerTerminationAction`; None: each timer's own action)
    timer_termination_action = None

    def open(self, ctx: RuntimeContext) -> None:
        pass

    def process_element(self, value: Any, ctx: Context, out: Collector) -> None:
        raise NotImplementedError

    def on_timer(self, timestamp: int, ctx: Context, out: Collector) -> None:
        pass

    def end_input(self, out: Collector) -> None:
        """The input ended (with drain; Flink's ``BoundedOneInput.endInput``): after every
        event-time timer fired, before the processing-time timers are flushed and ``finish``."""

    def finish(self, out: Collector) -> None:
        pass

    def close(self) -> None:
        pass


# -- the operator ---------------------------------------------------------------------------
@dataclass
class OperatorSnapshot:
    """Keyed state (per key group) and the timer snapshot file of one operator subtask."""

    keyed_state: dict
    timers: bytes  # a copy-on-write timer snapshot, written in impl/snapshot_format's format


class KeyedProcessOperator:
    """Runs a :class:`KeyedProcessFunction` with keyed state and a timer service (Triggerable)."""

    def __init__(self, function: KeyedProcessFunction, max_parallelism: int, key_group_range: KeyGroupRange,
                 processing_time_service, emit: Callable[[Any, int | None], None],
                 subtask_index: int = 0, parallelism: int = 1, firing_budget: int = 1_000_000):
        self.function = function
        self.key_context = KeyContext(max_parallelism)
        self.key_group_range = key_group_range
        self.state_backend = KeyedStateBackend(self.key_context, key_group_range)
        self.time_service_manager = InternalTimeServiceManager(
            self.key_context, key_group_range, processing_time_service, firing_budget=firing_budget)
        self.output = Collector(emit)
        self.context = Context(self)
        self.processing_time_service = OperatorProcessingTimeService(
            processing_time_service, lambda: self.time_service_manager.termination_action_override)
        self.runtime_context = RuntimeContext(self.state_backend, subtask_index, parallelism)
        self.runtime_context.processing_time_service = self.processing_time_service
        self.user_timer_service: TimerService | None = None
        self.finished = self.closed = False
        self.timers_fired = 0
        if getattr(function, "timer_termination_action", None) is not None:
            self.set_timer_termination_action(function.timer_termination_action)

    def set_timer_termination_action(self, action) -> None:
        """FLIP-269 per-operator override of every processing-time timer's termination action
        (None removes it); it wins over the actions given at registration."""
        self.time_service_manager.set_timer_termination_action(action)

    def use_interruptible_timers(self) -> bool:
        return bool(getattr(self.function, "interruptible_timers", False))

    # -- life cycle -------------------------------------------------------------------------
    def initialize_state(self, snapshots: list[OperatorSnapshot]) -> None:
        """Restores from the snapshots of every previous subtask whose key groups overlap ours
        (any previous parallelism); before ``open()``, as the timer restore requires."""
        for snapshot in snapshots:
            self.state_backend.restore(snapshot.keyed_state)
        if snapshots:
            restore_from_snapshots(self.time_service_manager, [s.timers for s in snapshots])

    def open(self) -> None:
        service = self.time_service_manager.get_internal_timer_service(USER_TIMERS, self)
        self.user_timer_service = TimerService(service)
        self.function.open(self.runtime_context)

    def end_input(self) -> None:
        self.output.timestamp = None
        self.context.time_domain = None
        self.function.end_input(self.output)

    def finish(self) -> None:
        self.output.timestamp = None
        self.context.time_domain = None
        self.function.finish(self.output)
        self.finished = True

    def close(self) -> None:
        self.function.close()
        self.closed = True

    # -- input ------------------------------------------------------------------------------
    def process_element(self, record: StreamRecord) -> None:
        if self.finished:
            raise RuntimeError("record after finish()")
        self.key_context.set_current_key(record.key)
        self.context._timestamp = self.output.timestamp = record.timestamp
        self.context.time_domain = None
        self.function.process_element(record.value, self.context, self.output)

    # -- Triggerable ------------------------------------------------------------------------
    def on_event_time(self, timer: InternalTimer) -> None:
        self._on_timer(timer, "event")

    def on_processing_time(self, timer: InternalTimer) -> None:
        self._on_timer(timer, "processing")

    def _on_timer(self, timer: InternalTimer, domain: str) -> None:
        self.timers_fired += 1
        self.context._timestamp = self.output.timestamp = timer.timestamp
        self.context.time_domain = domain
        self.function.on_timer(timer.timestamp, self.context, self.output)

    # -- checkpoints ------------------------------------------------------------------------
    def snapshot_state(self, format_version: int = 2) -> OperatorSnapshot:
        """The synchronous part starts a copy-on-write timer snapshot (O(1) in the number of
        timers, FLINK-9182); its asynchronous part is run to completion here, since nothing can
        change the timers before the simulated task's next step. Format 1 writes no termination
        actions (restored as CANCEL)."""
        timer_snapshot = start_snapshot(self.time_service_manager, format_version)
        keyed_state = self.state_backend.snapshot()
        return OperatorSnapshot(keyed_state, timer_snapshot.finish())

    def pending_timers(self) -> int:
        return self.time_service_manager.num_event_time_timers() + self.time_service_manager.num_processing_time_timers()


def key_group_of(key: Hashable, max_parallelism: int) -> int:
    return assign_to_key_group(key, max_parallelism)


__all__ = [
    "StreamRecord", "KeyedProcessFunction", "KeyedProcessOperator", "Context", "RuntimeContext", "Collector",
    "TimerService", "ValueState", "ListState", "MapState", "ValueStateDescriptor", "ListStateDescriptor",
    "MapStateDescriptor", "KeyedStateBackend", "OperatorSnapshot", "MAX_WATERMARK",
]

"""The operator API users certify: ``KeyedProcessFunction`` with keyed state and timers, and the
``KeyedProcessOperator`` that runs it (Flink's ``KeyedProcessOperator``).

Keyed state lives in a :class:`KeyedStateBackend`, partitioned by key group like the timers, so a
checkpoint is per key group and a restore can take any key-group range (rescaling).
"""

from __future__ import annotations

import re
import signal
import time
from dataclasses import dataclass
from typing import Any, Callable, Hashable

from streamproof.impl.operators.user_clock import user_clock_for
from streamproof.impl.operators.user_code import (
    _PER, CallbackLimitExceeded, UserCodeError, _CallbackAbort, _on_alarm, _Watchdog,
)
from streamproof.impl.state.key_context import KeyContext
from streamproof.impl.state.key_groups import CompositeKey, KeyGroupRange, assign_to_key_group
from streamproof.impl.state.keyed_state_backend import (
    AggregatingState, AggregatingStateDescriptor, KeyedStateBackend, ListState, ListStateDescriptor, MapState,
    MapStateDescriptor, ReducingState, ReducingStateDescriptor, ValueState, ValueStateDescriptor,
)
from streamproof.impl.timers.internal_time_service_manager import (
    InternalTimeServiceManager,
)
from streamproof.impl.timers.internal_timer_service import InternalTimer, InternalTimerService
from streamproof.impl.timers.operator_timers import OperatorProcessingTimeService
from streamproof.impl.timers.deferred_snapshot import DeferredTimerFile, snapshot_deferred
from streamproof.impl.timers.snapshots import restore_from_snapshots

VOID_NAMESPACE = ""  # Flink's VoidNamespace: user timers have no namespace
USER_TIMERS = "user-timers"
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")  # in a default repr: differs between runs


@dataclass(frozen=True)
class StreamRecord:
    """A record on the wire: its key (already extracted), value and event timestamp."""

    key: Hashable
    value: Any
    timestamp: int


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

    def __init__(self, service: InternalTimerService, on_register: Callable[[], None] | None = None):
        self._service = service
        self._on_register = on_register  # the operator's per-callback timer count

    def current_watermark(self) -> int:
        return self._service.current_watermark

    def current_processing_time(self) -> int:
        return self._service.current_processing_time()

    def register_event_time_timer(self, time: int) -> None:
        if self._on_register is not None:
            self._on_register()
        self._service.register_event_time_timer(VOID_NAMESPACE, time)

    def register_processing_time_timer(self, time: int, action=None) -> None:
        """``action``: the timer's :class:`streamproof.impl.timers.termination.TimerTerminationAction` at end of
        input (FLIP-269; None: CANCEL)."""
        if self._on_register is not None:
            self._on_register()
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
        key = self._operator.key_context.current_key
        return key.value if isinstance(key, CompositeKey) else key  # the user's own key

    def output(self, tag: str, value: Any) -> None:
        """A side output (Flink's ``ctx.output(OutputTag, value)``): ``tag`` names it; it goes to
        the operator's :meth:`KeyedProcessOperator.emit_side` with the current timestamp."""
        self._operator.emit_side(tag, value, self._timestamp)


class RuntimeContext:
    """What ``open`` receives: access to keyed state, and where the function runs."""

    def __init__(self, backend: KeyedStateBackend, subtask_index: int, parallelism: int,
                 max_parallelism: int = 128, task_name: str = "", attempt_number: int = 0):
        self._backend = backend
        self.subtask_index, self.parallelism = subtask_index, parallelism
        self.max_parallelism, self.task_name, self.attempt_number = max_parallelism, task_name, attempt_number
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

    def get_reducing_state(self, descriptor: ReducingStateDescriptor) -> ReducingState:
        return ReducingState(self._backend, descriptor)

    def get_aggregating_state(self, descriptor: AggregatingStateDescriptor) -> AggregatingState:
        return AggregatingState(self._backend, descriptor)

    def get_index_of_this_subtask(self) -> int:
        return self.subtask_index

    def get_number_of_parallel_subtasks(self) -> int:
        return self.parallelism

    def get_max_number_of_parallel_subtasks(self) -> int:
        return self.max_parallelism

    def get_task_name(self) -> str:
        return self.task_name

    def get_attempt_number(self) -> int:
        return self.attempt_number


class KeyedProcessFunction:
    """Subclass and override ``process_element`` (and ``on_timer``). ``open``/``finish``/``close``
    are the life cycle; ``finish`` may still emit (end of input), ``close`` may not."""

    #: set True to let the runtime split timer firing at a watermark (FLIP-443)
    interruptible_timers = False
    #: FLIP-269 per-operator override of every processing-time timer's termination action
    #: (an :class:`streamproof.impl.timers.termination.TimerTerminationAction`; None: each timer's own action)
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
class OperatorSnapshot:
    """Keyed state (per key group) and the timer snapshot file of one operator subtask
    (``timers``: bytes in impl/timers/snapshot_format's format, written when first read when the
    snapshot was given as a :class:`~streamproof.impl.timers.deferred_snapshot.DeferredTimerFile`)."""

    __slots__ = ("keyed_state", "_timers")

    def __init__(self, keyed_state: dict, timers: bytes | DeferredTimerFile) -> None:
        self.keyed_state = keyed_state
        self._timers = timers

    @property
    def timers(self) -> bytes:
        if isinstance(self._timers, DeferredTimerFile):
            self._timers = self._timers.read()
        return self._timers

    @timers.setter
    def timers(self, value: bytes | DeferredTimerFile) -> None:  # a field, as in the dataclass it was
        self._timers = value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OperatorSnapshot):
            return NotImplemented
        return (self.keyed_state, self.timers) == (other.keyed_state, other.timers)

    __hash__ = None  # mutable, as the dataclass it was

    def __repr__(self) -> str:
        return f"OperatorSnapshot(keyed_state={self.keyed_state!r}, timers={self.timers!r})"

    def __reduce__(self):  # copies and pickles hold the bytes
        return OperatorSnapshot, (self.keyed_state, self.timers)


class KeyedProcessOperator:
    """Runs a :class:`KeyedProcessFunction` with keyed state and a timer service (Triggerable).

    User code is guarded per callback (``open``, ``process_element``, ``on_timer``,
    ``end_input``, ``finish``, ``close``): more than ``max_outputs_per_callback`` outputs (side
    outputs included), more than ``max_timers_per_callback`` timer registrations, or more than
    ``max_seconds_per_callback`` seconds raise :class:`CallbackLimitExceeded`; ``sys.exit`` in
    user code raises :class:`UserCodeError`; None disables a limit. The time limit interrupts even
    a loop that never calls back into the runtime when the operator runs in the main thread and no
    one else uses SIGALRM; otherwise it is checked at each output and timer registration. Other
    exceptions pass unchanged, with a note naming the callback.

    Side outputs (``ctx.output(tag, value)``) go to ``emit_side(tag, value, timestamp)`` when
    given, else they are kept in :attr:`side_outputs` as ``(tag, value, timestamp)``."""

    def __init__(self, function: KeyedProcessFunction, max_parallelism: int, key_group_range: KeyGroupRange,
                 processing_time_service, emit: Callable[[Any, int | None], None],
                 subtask_index: int = 0, parallelism: int = 1, firing_budget: int = 1_000_000, *,
                 emit_side: Callable[[str, Any, int | None], None] | None = None,
                 max_outputs_per_callback: int | None = 10_000, max_timers_per_callback: int | None = 10_000,
                 max_seconds_per_callback: float | None = None,
                 task_name: str | None = None, attempt_number: int | None = None):
        self.function = function
        self.function_name = getattr(function, "user_class_name", None) or type(function).__name__
        self.key_context = KeyContext(max_parallelism)
        self.key_group_range = key_group_range
        self.state_backend = KeyedStateBackend(self.key_context, key_group_range)
        self.time_service_manager = InternalTimeServiceManager(
            self.key_context, key_group_range, processing_time_service, firing_budget=firing_budget)
        self._emit = emit
        self._emit_side = emit_side
        self.side_outputs: list[tuple[str, Any, int | None]] = []
        self.max_outputs_per_callback = max_outputs_per_callback if max_outputs_per_callback is not None else float("inf")
        self.max_timers_per_callback = max_timers_per_callback if max_timers_per_callback is not None else float("inf")
        self.max_seconds_per_callback = max_seconds_per_callback
        self._callback: str | None = None  # the user callback running now
        self._started = 0.0
        self._outputs = self._timers = 0
        self.output = Collector(self._emit_counted)
        self.context = Context(self)
        self.processing_time_service = OperatorProcessingTimeService(
            processing_time_service, lambda: self.time_service_manager.termination_action_override)
        # The task that owns ``emit`` (a bound method of it) names the task and attempt by default.
        owner = getattr(emit, "__self__", None)
        if task_name is None:
            task_name = getattr(owner, "name", None) if isinstance(getattr(owner, "name", None), str) else None
        if attempt_number is None:
            attempt_number = getattr(owner, "attempt", 0) if isinstance(getattr(owner, "attempt", 0), int) else 0
        self.runtime_context = RuntimeContext(self.state_backend, subtask_index, parallelism, max_parallelism,
                                              task_name or f"KeyedProcess({self.function_name})", attempt_number)
        self.runtime_context.processing_time_service = self.processing_time_service
        self.user_timer_service: TimerService | None = None
        self.finished = self.closed = False
        self.timers_fired = 0
        if getattr(function, "timer_termination_action", None) is not None:
            self.set_timer_termination_action(function.timer_termination_action)
        # time.sleep/time.time/datetime.now in the user's module: the processing time (impl/operators/user_clock.py)
        self._callback_argument = None  # the running callback's first argument (its random values' seed)
        self._user_clock = user_clock_for(function, self._processing_time_ms, self._callback_seed)

    def _callback_seed(self) -> str:
        """The running callback's seed of random values: kind, key, timestamp, record or timer."""
        return _ADDRESS.sub("", f"{self._callback}|{self.key_context.current_key!r}|{self.context._timestamp!r}|"
                                f"{self.context.time_domain}|{self._callback_argument!r}")

    def _processing_time_ms(self) -> int:
        service = self.user_timer_service
        return (service.current_processing_time() if service is not None
                else self.processing_time_service.current_processing_time())

    def set_timer_termination_action(self, action) -> None:
        """FLIP-269 per-operator override of every processing-time timer's termination action
        (None removes it); it wins over the actions given at registration."""
        self.time_service_manager.set_timer_termination_action(action)

    def use_interruptible_timers(self) -> bool:
        return bool(getattr(self.function, "interruptible_timers", False))

    # -- guarding user code -----------------------------------------------------------------
    def _limit_error(self, what: str, limit) -> CallbackLimitExceeded:
        callback = self._callback or "callback"
        return CallbackLimitExceeded(f"{self.function_name}.{callback} {what} {limit} "
                                     f"for one {_PER.get(callback, 'call')}")

    def _emit_counted(self, value: Any, timestamp: int | None) -> None:
        self._outputs += 1
        if self._outputs > self.max_outputs_per_callback:
            raise self._limit_error("emitted more than", f"{self.max_outputs_per_callback} outputs")
        if not self._outputs & 255:
            self._check_time()
        self._emit(value, timestamp)

    def emit_side(self, tag: str, value: Any, timestamp: int | None) -> None:
        """A side output of the running callback (counted with the outputs)."""
        self._outputs += 1
        if self._outputs > self.max_outputs_per_callback:
            raise self._limit_error("emitted more than", f"{self.max_outputs_per_callback} outputs")
        if self._emit_side is not None:
            self._emit_side(tag, value, timestamp)
        else:
            self.side_outputs.append((tag, value, timestamp))

    def _count_timer(self) -> None:
        self._timers += 1
        if self._timers > self.max_timers_per_callback and self._callback is not None:
            raise self._limit_error("registered more than", f"{self.max_timers_per_callback} timers")
        if not self._timers & 255:
            self._check_time()

    def _check_time(self) -> None:
        """The time limit where the alarm cannot run (another thread, someone else's alarm)."""
        limit = self.max_seconds_per_callback
        if limit is not None and self._callback is not None and time.perf_counter() - self._started > limit \
                and not _Watchdog.wait_before_stopping(self, time.perf_counter()):
            raise self._limit_error("ran longer than", f"{limit:g} s")

    def _guarded(self, callback: str, method, *args):
        """Runs one user callback under the limits."""
        if self._callback is not None or _Watchdog.current is not None:
            return self._guarded_nested(callback, method, args)
        now = time.perf_counter()
        self._callback, self._started, self._outputs, self._timers = callback, now, 0, 0
        _Watchdog.current = self
        limit = self.max_seconds_per_callback
        if limit is not None and (now + limit < _Watchdog.fire_at or now > _Watchdog.fire_at + 0.5
                                  or signal.getsignal(_Watchdog.signum) is not _on_alarm):
            _Watchdog.arm(limit, now)  # not armed, lost, or armed too late for this callback
        clock = self._user_clock
        if clock is not None:
            self._callback_argument = args[0] if args else None
            clock.enter()
        try:
            return method(*args)
        except SystemExit as exit_:
            raise self._exit_error(exit_) from None
        except UserCodeError:
            raise
        except Exception as error:
            self._note(error)
            raise
        except _CallbackAbort:
            raise self._limit_error("ran longer than", f"{self.max_seconds_per_callback:g} s") from None
        finally:
            if clock is not None:
                clock.exit()
            self._callback = _Watchdog.current = None

    def _guarded_nested(self, callback: str, method, args):
        """A callback inside another one (a mailbox yield, another operator): restores the outer
        callback's limits afterwards."""
        outer = (self._callback, self._started, self._outputs, self._timers, _Watchdog.current)
        now = time.perf_counter()
        self._callback, self._started, self._outputs, self._timers = callback, now, 0, 0
        _Watchdog.current = self
        limit = self.max_seconds_per_callback
        if limit is not None and (now + limit < _Watchdog.fire_at or now > _Watchdog.fire_at + 0.5
                                  or signal.getsignal(_Watchdog.signum) is not _on_alarm):
            _Watchdog.arm(limit, now)
        clock = self._user_clock
        argument = self._callback_argument
        if clock is not None:
            self._callback_argument = args[0] if args else None
            clock.enter()
        try:
            return method(*args)
        except SystemExit as exit_:
            raise self._exit_error(exit_) from None
        except UserCodeError:
            raise
        except Exception as error:
            self._note(error)
            raise
        except _CallbackAbort:
            raise self._limit_error("ran longer than", f"{self.max_seconds_per_callback:g} s") from None
        finally:
            if clock is not None:
                clock.exit()
            self._callback_argument = argument
            self._callback, self._started, self._outputs, self._timers, _Watchdog.current = outer

    def _exit_error(self, exit_: SystemExit) -> UserCodeError:
        code = "" if exit_.code is None else repr(exit_.code)
        return UserCodeError(f"{self.function_name}.{self._callback} called sys.exit({code})")

    def _note(self, error: BaseException) -> None:
        note = f"in {self.function_name}.{self._callback}"
        if note not in getattr(error, "__notes__", ()):
            error.add_note(note)

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
        self.user_timer_service = TimerService(service, self._count_timer)
        self._guarded("open", self.function.open, self.runtime_context)

    def end_input(self) -> None:
        self.output.timestamp = None
        self.context.time_domain = None
        self._guarded("end_input", self.function.end_input, self.output)

    def finish(self) -> None:
        self.output.timestamp = None
        self.context.time_domain = None
        self._guarded("finish", self.function.finish, self.output)
        self.finished = True

    def close(self) -> None:
        self._guarded("close", self.function.close)
        self.closed = True

    # -- input ------------------------------------------------------------------------------
    def process_element(self, record: StreamRecord) -> None:
        if self.finished:
            raise RuntimeError("record after finish()")
        self.key_context.set_current_key(record.key)
        self.context._timestamp = self.output.timestamp = record.timestamp
        self.context.time_domain = None
        self._guarded("process_element", self.function.process_element, record.value, self.context, self.output)

    def process_broadcast_element(self, record: StreamRecord) -> None:
        """A broadcast-side record of a keyed broadcast-state operator: the function's
        ``process_element`` gets it (it tells the inputs apart) without a key being set (the key
        context stays the last one set, as Flink's ``CoBroadcastWithKeyedOperator.processElement2``)."""
        if self.finished:
            raise RuntimeError("record after finish()")
        self.context._timestamp = self.output.timestamp = record.timestamp
        self.context.time_domain = None
        self._guarded("process_broadcast_element", self.function.process_element, record.value, self.context,
                      self.output)

    # -- Triggerable ------------------------------------------------------------------------
    def on_event_time(self, timer: InternalTimer) -> None:
        self._on_timer(timer, "event")

    def on_processing_time(self, timer: InternalTimer) -> None:
        self._on_timer(timer, "processing")

    def _on_timer(self, timer: InternalTimer, domain: str) -> None:
        self.timers_fired += 1
        self.context._timestamp = self.output.timestamp = timer.timestamp
        self.context.time_domain = domain
        self._guarded("on_timer", self.function.on_timer, timer.timestamp, self.context, self.output)

    # -- checkpoints ------------------------------------------------------------------------
    def snapshot_state(self, format_version: int = 2) -> OperatorSnapshot:
        """The timers' snapshot file (FLINK-9182's format) with a point-in-time copy of the keyed
        state. Nothing can change the timers between the synchronous and the asynchronous part
        here (the simulated task takes both in one mailbox step), so no copy-on-write routing:
        the timers are copied now and their file written when first read (``snapshot_deferred``:
        the file ``snapshot_at_once`` writes now). Format 1 writes no termination actions
        (restored as CANCEL)."""
        timers = snapshot_deferred(self.time_service_manager, format_version)
        return OperatorSnapshot(self.state_backend.snapshot(), timers)

    def pending_timers(self) -> int:
        return self.time_service_manager.num_event_time_timers() + self.time_service_manager.num_processing_time_timers()


def key_group_of(key: Hashable, max_parallelism: int) -> int:
    return assign_to_key_group(key, max_parallelism)

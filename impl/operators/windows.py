"""Event-time windows on the keyed runtime: Flink's window assigners, triggers and ``WindowOperator``,
and the FLIP-331 end-of-stream global window. Its operator attributes are in
:mod:`~streamproof.impl.operators.operator_attributes`; ``coGroup`` and the sorted fast path in
:mod:`~streamproof.impl.operators.end_of_stream`.

:class:`WindowOperator` is a :class:`~streamproof.impl.operators.keyed_process_operator.KeyedProcessFunction`, so it runs
in :class:`~streamproof.impl.operators.keyed_process_operator.KeyedProcessOperator` and in jobs like any keyed function.
Allowed lateness is 0; processing-time and merging (session) windows are not modelled.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Callable

from streamproof.impl.operators.keyed_process_operator import KeyedProcessFunction
from streamproof.impl.operators.operator_attributes import OperatorAttributes, OperatorAttributesBuilder
from streamproof.impl.state.keyed_state_backend import MapStateDescriptor
from streamproof.impl.timers.processing_time_service import MAX_WATERMARK, MIN_WATERMARK


# -- windows -----------------------------------------------------------------------------------
@dataclass(frozen=True, order=True)
class TimeWindow:
    """The half-open interval ``[start, end)``."""

    start: int
    end: int

    def max_timestamp(self) -> int:
        return self.end - 1

    @staticmethod
    def get_window_start_with_offset(timestamp: int, offset: int, window_size: int) -> int:
        """Flink's ``TimeWindow.getWindowStartWithOffset``: the start of the window of
        ``window_size`` (aligned to ``offset``) holding ``timestamp``, negative timestamps
        included. (Java's ``%`` truncates; Python's floors, which is what Java's negative branch
        computes.)"""
        return timestamp - (timestamp - offset) % window_size


@dataclass(frozen=True)
class GlobalWindow:
    """The one window of :class:`GlobalWindows`; it ends at the end of time."""

    def max_timestamp(self) -> int:
        return MAX_WATERMARK


GLOBAL_WINDOW = GlobalWindow()


# -- triggers ----------------------------------------------------------------------------------
class TriggerResult(enum.Enum):
    """What a trigger tells the operator: (fire, purge)."""

    CONTINUE = (False, False)
    FIRE = (True, False)
    PURGE = (False, True)
    FIRE_AND_PURGE = (True, True)

    @property
    def is_fire(self) -> bool:
        return self.value[0]

    @property
    def is_purge(self) -> bool:
        return self.value[1]


class TriggerContext:
    """What a trigger may do: event-time timers of the current key, and read the watermark."""

    __slots__ = ("timer_service",)

    def __init__(self, timer_service=None):
        self.timer_service = timer_service

    def get_current_watermark(self) -> int:
        return self.timer_service.current_watermark()

    def register_event_time_timer(self, time: int) -> None:
        self.timer_service.register_event_time_timer(time)

    def delete_event_time_timer(self, time: int) -> None:
        self.timer_service.delete_event_time_timer(time)


class Trigger:
    """Decides when a window fires (Flink's ``Trigger``); the default continues on everything."""

    def on_element(self, element: Any, timestamp: int, window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def clear(self, window, ctx: TriggerContext) -> None:
        pass


class EventTimeTrigger(Trigger):
    """Fires a window once the watermark passes its ``max_timestamp`` (a timer there)."""

    def on_element(self, element, timestamp, window, ctx):
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE  # already past: fire at once (unreachable with lateness 0)
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def clear(self, window, ctx):
        ctx.delete_event_time_timer(window.max_timestamp())


class EndOfStreamTrigger(Trigger):
    """FLIP-331: fires once, when the watermark reaches MAX_WATERMARK (the end of input)."""

    def on_element(self, element, timestamp, window, ctx):
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE


class NeverTrigger(Trigger):
    """The default trigger of ``GlobalWindows.create()``: never fires."""


# -- assigners ---------------------------------------------------------------------------------
def _check_timestamp(timestamp) -> int:
    if timestamp is None or timestamp <= MIN_WATERMARK:
        raise ValueError(f"record has no timestamp ({timestamp!r}): event-time windows need timestamps")
    return timestamp


class WindowAssigner:
    """Assigns an element to zero or more windows (Flink's ``WindowAssigner``)."""

    def assign_windows(self, element: Any, timestamp: int) -> list:
        raise NotImplementedError

    def get_default_trigger(self) -> Trigger:
        raise NotImplementedError

    def is_event_time(self) -> bool:
        return True


class TumblingEventTimeWindows(WindowAssigner):
    """Windows ``[start, start + size)`` aligned to ``offset``."""

    def __init__(self, size: int, offset: int = 0):
        if abs(offset) >= size:
            raise ValueError("TumblingEventTimeWindows parameters must satisfy abs(offset) < size")
        self.size, self.offset = size, offset

    @classmethod
    def of(cls, size: int, offset: int = 0) -> "TumblingEventTimeWindows":
        return cls(size, offset)

    def assign_windows(self, element, timestamp):
        start = TimeWindow.get_window_start_with_offset(_check_timestamp(timestamp), self.offset, self.size)
        # the last window is cut at the end of time (max_timestamp MAX_WATERMARK): Java's start +
        # size would overflow to a negative end (docs/decisions.md)
        return [TimeWindow(start, min(start + self.size, MAX_WATERMARK + 1))]

    def get_default_trigger(self):
        return EventTimeTrigger()


class SlidingEventTimeWindows(WindowAssigner):
    """Windows of ``size`` starting every ``slide`` (aligned to ``offset``): ``ceil(size / slide)``
    windows per element at most, the latest first (Flink's order)."""

    def __init__(self, size: int, slide: int, offset: int = 0):
        if abs(offset) >= slide or size <= 0:
            raise ValueError("SlidingEventTimeWindows parameters must satisfy abs(offset) < slide and size > 0")
        self.size, self.slide, self.offset = size, slide, offset

    @classmethod
    def of(cls, size: int, slide: int, offset: int = 0) -> "SlidingEventTimeWindows":
        return cls(size, slide, offset)

    def assign_windows(self, element, timestamp):
        timestamp = _check_timestamp(timestamp)
        start = TimeWindow.get_window_start_with_offset(timestamp, self.offset, self.slide)
        windows = []
        while start > timestamp - self.size:
            windows.append(TimeWindow(start, start + self.size))
            start -= self.slide
        return windows

    def get_default_trigger(self):
        return EventTimeTrigger()


class GlobalWindows(WindowAssigner):
    """Every element in the one :class:`GlobalWindow`; the trigger decides whether it ever fires."""

    def __init__(self, default_trigger: Trigger):
        self.default_trigger = default_trigger

    @classmethod
    def create(cls) -> "GlobalWindows":
        """Never fires unless given another trigger (Flink's ``NeverTrigger``)."""
        return cls(NeverTrigger())

    @classmethod
    def create_with_end_of_stream_trigger(cls) -> "GlobalWindows":
        """FLIP-331: fires once, at the end of input (watermark MAX_WATERMARK)."""
        return cls(EndOfStreamTrigger())

    def assign_windows(self, element, timestamp):
        return [GLOBAL_WINDOW]

    def get_default_trigger(self):
        return self.default_trigger

    def is_event_time(self) -> bool:
        return False  # as Flink: no lateness and no cleanup timer for the global window


# -- window functions --------------------------------------------------------------------------
class AggregateFunction:
    """Flink's ``AggregateFunction``: an accumulator per window."""

    def create_accumulator(self) -> Any:
        raise NotImplementedError

    def add(self, value: Any, accumulator: Any) -> Any:
        raise NotImplementedError

    def get_result(self, accumulator: Any) -> Any:
        raise NotImplementedError

    def merge(self, a: Any, b: Any) -> Any:
        raise NotImplementedError


class SumAggregate(AggregateFunction):
    """The sum of the values (``number`` extracts the summand; default: the value itself)."""

    def __init__(self, number: Callable[[Any], Any] | None = None):
        self.number = number

    def create_accumulator(self):
        return 0

    def add(self, value, accumulator):
        return accumulator + (value if self.number is None else self.number(value))

    def get_result(self, accumulator):
        return accumulator

    def merge(self, a, b):
        return a + b


class ProcessWindowFunction:
    """Flink's ``ProcessWindowFunction``: sees all of a window's elements when it fires."""

    def process(self, key: Any, window, elements: list, out) -> None:
        raise NotImplementedError


KINDS = ("aggregate", "reduce", "process")


# -- the window operator -----------------------------------------------------------------------
# A window's contents of None are no contents, as in Flink (WindowOperator skips a window whose
# state reads null) and PyFlink (its reducing and aggregating states read None as empty): a None
# accumulator is created again by the next element, and a window whose reduced value or
# aggregate result is None is not emitted.
_ABSENT = None


class _WindowCollector:
    """Prefixes each value a process window function emits with the key (and window end)."""

    __slots__ = ("out", "prefix")

    def __init__(self, out, prefix: tuple):
        self.out, self.prefix = out, prefix

    def collect(self, value: Any) -> None:
        self.out.collect(self.prefix + (value,))


def window_output_prefix(key: Any, window) -> tuple:
    """``(key, window max_timestamp)`` for a time window, ``(key,)`` for the global window."""
    return (key,) if isinstance(window, GlobalWindow) else (key, window.max_timestamp())


class WindowOperator(KeyedProcessFunction):
    """Flink's ``WindowOperator`` as a keyed function. ``kind`` says what ``function`` is:

    - ``"aggregate"``: an :class:`AggregateFunction`; emits ``get_result`` of the accumulator;
    - ``"reduce"``: a callable ``(a, b) -> c`` (or an object with ``reduce``); emits the reduction;
    - ``"process"``: a :class:`ProcessWindowFunction`; each value it collects is emitted.

    A window's contents live in keyed map state (window -> accumulator, value or element list);
    the trigger's event-time timers carry no namespace, so a timer fires the current key's windows
    whose ``max_timestamp`` is its time. Outputs: ``(key, window.max_timestamp(), result)`` for a
    time window, ``(key, result)`` for the global window. Elements whose windows are all past the
    watermark are dropped and counted in :attr:`num_late_records_dropped` (allowed lateness 0).
    A window's state is cleared when its timer at ``max_timestamp`` fired (for the global window
    too, unlike Flink, which keeps it: nothing can arrive after the end of input anyway)."""

    interruptible_timers = True

    def __init__(self, assigner: WindowAssigner, function: Any, kind: str = "aggregate",
                 trigger: Trigger | None = None):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        self.assigner, self.function, self.kind = assigner, function, kind
        self.trigger = assigner.get_default_trigger() if trigger is None else trigger
        self.num_late_records_dropped = 0
        self._trigger_context = TriggerContext()
        if kind == "reduce":
            self._reduce = function.reduce if hasattr(function, "reduce") else function

    def get_operator_attributes(self) -> OperatorAttributes:
        """Both attributes True exactly for global windows with the end-of-stream trigger."""
        end_of_stream = isinstance(self.assigner, GlobalWindows) and isinstance(self.trigger, EndOfStreamTrigger)
        return (OperatorAttributesBuilder().set_output_only_after_end_of_stream(end_of_stream)
                .set_internal_sorter_supported(end_of_stream).build())

    def open(self, ctx) -> None:
        self.contents = ctx.get_map_state(MapStateDescriptor("window-contents"))

    def _add(self, window, value) -> None:
        current = self.contents.get(window, _ABSENT)
        if self.kind == "aggregate":
            accumulator = self.function.create_accumulator() if current is _ABSENT else current
            self.contents.put(window, self.function.add(value, accumulator))
        elif self.kind == "reduce":
            self.contents.put(window, value if current is _ABSENT else self._reduce(current, value))
        elif current is _ABSENT:
            self.contents.put(window, [value])
        else:
            current.append(value)  # in place, as a heap backend; snapshots deep-copy

    def process_element(self, value, ctx, out) -> None:
        timestamp = ctx.timestamp()
        trigger_ctx = self._trigger_context
        trigger_ctx.timer_service = ctx.timer_service()
        event_time = self.assigner.is_event_time()
        watermark = trigger_ctx.get_current_watermark()
        skipped = True
        for window in self.assigner.assign_windows(value, timestamp):
            if event_time and window.max_timestamp() <= watermark:
                continue  # the window is late: drop the element from it
            skipped = False
            self._add(window, value)
            result = self.trigger.on_element(value, timestamp, window, trigger_ctx)
            if result.is_fire:
                self._emit(ctx.get_current_key(), window, out)
            if result.is_purge:
                self._clear_contents(window)
        if skipped and event_time and timestamp <= watermark:
            self.num_late_records_dropped += 1

    def on_timer(self, timestamp, ctx, out) -> None:
        trigger_ctx = self._trigger_context
        trigger_ctx.timer_service = ctx.timer_service()
        key = ctx.get_current_key()
        for window in [w for w in self.contents.keys() if w.max_timestamp() == timestamp]:
            if self.trigger.on_event_time(timestamp, window, trigger_ctx).is_fire:
                self._emit(key, window, out)
            self._clear_contents(window)  # max_timestamp is the cleanup time too (allowed lateness 0)
            self.trigger.clear(window, trigger_ctx)

    def _clear_contents(self, window) -> None:
        """Drops the window's contents; the key's map entry goes with its last window."""
        self.contents.remove(window)
        if self.contents.is_empty():
            self.contents.clear()

    def _emit(self, key, window, out) -> None:
        contents = self.contents.get(window, _ABSENT)
        if contents is _ABSENT:
            return
        prefix = window_output_prefix(key, window)
        if self.kind == "process":
            self.function.process(key, window, list(contents), _WindowCollector(out, prefix))
        elif self.kind == "aggregate":
            result = self.function.get_result(contents)
            if result is not None:
                out.collect(prefix + (result,))
        else:
            out.collect(prefix + (contents,))


__all__ = [
    "TimeWindow", "GlobalWindow", "GLOBAL_WINDOW", "TriggerResult", "TriggerContext", "Trigger",
    "EventTimeTrigger", "EndOfStreamTrigger", "NeverTrigger", "WindowAssigner", "TumblingEventTimeWindows",
    "SlidingEventTimeWindows", "GlobalWindows", "AggregateFunction", "SumAggregate", "ProcessWindowFunction",
    "WindowOperator", "window_output_prefix", "KINDS",
]

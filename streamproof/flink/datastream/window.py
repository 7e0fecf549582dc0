"""``pyflink.datastream.window`` (PyFlink 2.3): windows, window assigners and triggers.

The classes behave as PyFlink's; each assigner also has ``spec()``, the
:attr:`streamproof.flink.pipeline.WindowSpec.assigner` tuple a captured job records (processing-time
assigners raise :class:`~streamproof.flink.pipeline.CaptureError`: not modelled). The keyed operator
that runs them is :func:`streamproof.flink.window_operator.window_operator`. Sizes are a ``Time``,
a ``Duration`` or an int of milliseconds.

Size: all of PyFlink's ``pyflink.datastream.window``: a captured job importing it gets this module.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from enum import Enum
from typing import Any, Collection, Generic, Iterable, TypeVar

from streamproof.flink.common.time import Duration, Time
from streamproof.flink.common.typeinfo import Types
from streamproof.flink.datastream._base import ReduceFunction
from streamproof.flink.datastream.state import ReducingStateDescriptor, ValueStateDescriptor
from streamproof.flink.pipeline import CaptureError

__all__ = [
    "Window", "TimeWindow", "CountWindow", "GlobalWindow", "WindowAssigner", "MergingWindowAssigner",
    "TumblingProcessingTimeWindows", "TumblingEventTimeWindows", "SlidingProcessingTimeWindows",
    "SlidingEventTimeWindows", "ProcessingTimeSessionWindows", "EventTimeSessionWindows",
    "DynamicProcessingTimeSessionWindows", "DynamicEventTimeSessionWindows", "GlobalWindows",
    "CountTumblingWindowAssigner", "CountSlidingWindowAssigner", "TriggerResult", "Trigger", "EventTimeTrigger",
    "ProcessingTimeTrigger", "ContinuousEventTimeTrigger", "ContinuousProcessingTimeTrigger", "NeverTrigger",
    "PurgingTrigger", "CountTrigger", "SessionWindowTimeGapExtractor", "Time", "Duration",
]

T, W, W2 = TypeVar("T"), TypeVar("W"), TypeVar("W2")
MAX_LONG_VALUE = 0x7FFFFFFFFFFFFFFF
MIN_LONG_VALUE = -MAX_LONG_VALUE - 1
_NO_TIMESTAMP = ("Record has Java Long.MIN_VALUE timestamp (= no timestamp marker). Is the time characteristic "
                 "set to 'ProcessingTime', or did you forget to call "
                 "'data_stream.assign_timestamps_and_watermarks(...)'?")


def _millis(size: Any) -> int:
    """A ``Time``/``Duration`` (``to_milliseconds()``) or an int of milliseconds."""
    if isinstance(size, int) and not isinstance(size, bool):
        return size
    if hasattr(size, "to_milliseconds"):
        return size.to_milliseconds()
    raise TypeError(f"a window size must be a Time, a Duration or an int of milliseconds, got {size!r}")


def _event_timestamp(timestamp) -> int:
    if timestamp is None or timestamp <= MIN_LONG_VALUE:
        raise ValueError(_NO_TIMESTAMP)
    return timestamp


def _long_to_int_with_bit_mixing(x: int) -> int:
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
    x = (x ^ (x >> 27)) * 0x94d049bb133111eb
    return x ^ (x >> 31)


def _mod_inverse(x: int) -> int:
    inverse = x * x * x
    inverse *= 2 - x * inverse
    inverse *= 2 - x * inverse
    inverse *= 2 - x * inverse
    return inverse


# -- windows -----------------------------------------------------------------------------------
class Window(ABC):
    """A finite bucket of elements with a maximum timestamp."""

    @abstractmethod
    def max_timestamp(self) -> int:
        pass


class TimeWindow(Window):
    """The interval ``[start, end)``. Hash, equality and order as PyFlink's (so a set of windows
    iterates in PyFlink's order, which decides the state merge order of session windows)."""

    def __init__(self, start: int, end: int):
        self.start = start
        self.end = end

    def max_timestamp(self) -> int:
        return self.end - 1

    def intersects(self, other: "TimeWindow") -> bool:
        return self.start <= other.end and self.end >= other.start

    def cover(self, other: "TimeWindow") -> "TimeWindow":
        return TimeWindow(min(self.start, other.start), max(self.end, other.end))

    @staticmethod
    def get_window_start_with_offset(timestamp: int, offset: int, window_size: int) -> int:
        return timestamp - (timestamp - offset + window_size) % window_size

    @staticmethod
    def merge_windows(windows: Iterable["TimeWindow"], callback: "MergingWindowAssigner.MergeCallback") -> None:
        """Calls ``callback.merge(windows, cover)`` for every group of overlapping windows."""
        merged, current, current_set = [], None, set()
        for candidate in sorted(windows):
            if current is None:
                current = candidate
                current_set.add(candidate)
            elif current.intersects(candidate):
                current = current.cover(candidate)
                current_set.add(candidate)
            else:
                merged.append((current, current_set))
                current, current_set = candidate, {candidate}
        if current is not None:
            merged.append((current, current_set))
        for merge_key, merge_set in merged:
            if len(merge_set) > 1:
                callback.merge(merge_set, merge_key)

    def __hash__(self):
        return self.start + _mod_inverse((self.end << 1) + 1)

    def __eq__(self, other):
        return self.__class__ == other.__class__ and self.end == other.end and self.start == other.start

    def __lt__(self, other: "TimeWindow"):
        if not isinstance(other, TimeWindow):
            raise TypeError(f"Does not support comparison with non-TimeWindow {other}")
        return self.start == other.start and self.end < other.end or self.start < other.start

    def __le__(self, other: "TimeWindow"):
        return self.__eq__(other) or self.__lt__(other)

    def __repr__(self):
        return f"TimeWindow(start={self.start}, end={self.end})"


class CountWindow(Window):
    """The window of a count window assigner, numbered by ``id``."""

    def __init__(self, id: int):
        self.id = id

    def max_timestamp(self) -> int:
        return MAX_LONG_VALUE

    def __hash__(self):
        return _long_to_int_with_bit_mixing(self.id)

    def __eq__(self, other):
        return self.__class__ == other.__class__ and self.id == other.id

    def __lt__(self, other: "CountWindow"):
        return self.id < other.id

    def __repr__(self):
        return f"CountWindow(id={self.id})"


class GlobalWindow(Window):
    """The one window of :class:`GlobalWindows`."""

    @staticmethod
    def get() -> "GlobalWindow":
        return GlobalWindow()

    def max_timestamp(self) -> int:
        return MAX_LONG_VALUE

    def __eq__(self, other):
        return self.__class__ == other.__class__

    def __hash__(self):
        return 0

    def __lt__(self, other):
        return False

    def __repr__(self):
        return "GlobalWindow"


# -- triggers ----------------------------------------------------------------------------------
class TriggerResult(Enum):
    """What a trigger tells the operator: ``(fire, purge)``."""

    CONTINUE = (False, False)
    FIRE_AND_PURGE = (True, True)
    FIRE = (True, False)
    PURGE = (False, True)

    def is_fire(self) -> bool:
        return self.value[0]

    def is_purge(self) -> bool:
        return self.value[1]


class Trigger(ABC, Generic[T, W]):
    """Decides when a pane (the elements of one key and window) is evaluated. Triggers keep no
    state of their own: ``ctx.get_partitioned_state`` gives state scoped to the key and window."""

    class TriggerContext(ABC):
        @abstractmethod
        def get_current_processing_time(self) -> int:
            pass

        @abstractmethod
        def get_metric_group(self):
            pass

        @abstractmethod
        def get_current_watermark(self) -> int:
            pass

        @abstractmethod
        def register_processing_time_timer(self, time: int) -> None:
            pass

        @abstractmethod
        def register_event_time_timer(self, time: int) -> None:
            pass

        @abstractmethod
        def delete_processing_time_timer(self, time: int) -> None:
            pass

        @abstractmethod
        def delete_event_time_timer(self, time: int) -> None:
            pass

        @abstractmethod
        def get_partitioned_state(self, state_descriptor):
            pass

    class OnMergeContext(TriggerContext):
        @abstractmethod
        def merge_partitioned_state(self, state_descriptor) -> None:
            pass

    @abstractmethod
    def on_element(self, element, timestamp: int, window, ctx: "Trigger.TriggerContext") -> TriggerResult:
        pass

    @abstractmethod
    def on_processing_time(self, time: int, window, ctx: "Trigger.TriggerContext") -> TriggerResult:
        pass

    @abstractmethod
    def on_event_time(self, time: int, window, ctx: "Trigger.TriggerContext") -> TriggerResult:
        pass

    def can_merge(self) -> bool:
        return False

    @abstractmethod
    def on_merge(self, window, ctx: "Trigger.OnMergeContext") -> None:
        pass

    @abstractmethod
    def clear(self, window, ctx: "Trigger.TriggerContext") -> None:
        pass


class EventTimeTrigger(Trigger):
    """Fires once the watermark passes the window's end (at once for a late-but-allowed element)."""

    def on_element(self, element, timestamp, window, ctx):
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_processing_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window, ctx):
        if window.max_timestamp() > ctx.get_current_watermark():
            ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window, ctx):
        ctx.delete_event_time_timer(window.max_timestamp())

    @staticmethod
    def create() -> "EventTimeTrigger":
        return EventTimeTrigger()


class Min(ReduceFunction):
    def reduce(self, value1, value2):
        return min(value1, value2)


class ContinuousEventTimeTrigger(Trigger):
    """Fires every ``interval`` of event time, and at the window's end."""

    def __init__(self, interval: int):
        self.interval = interval
        self.state_desc = ReducingStateDescriptor("fire-time", Min(), Types.LONG())

    @staticmethod
    def of(interval) -> "ContinuousEventTimeTrigger":
        return ContinuousEventTimeTrigger(_millis(interval))

    def on_element(self, element, timestamp, window, ctx):
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        fire_timestamp = ctx.get_partitioned_state(self.state_desc)
        if fire_timestamp.get() is None:
            self.register_next_fire_timestamp(timestamp - (timestamp % self.interval), window, ctx, fire_timestamp)
        return TriggerResult.CONTINUE

    def on_processing_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        if time == window.max_timestamp():
            return TriggerResult.FIRE
        fire_timestamp_state = ctx.get_partitioned_state(self.state_desc)
        fire_timestamp = fire_timestamp_state.get()
        if fire_timestamp is not None and fire_timestamp == time:
            fire_timestamp_state.clear()
            self.register_next_fire_timestamp(time, window, ctx, fire_timestamp_state)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window, ctx):
        ctx.merge_partitioned_state(self.state_desc)
        next_fire_timestamp = ctx.get_partitioned_state(self.state_desc).get()
        if next_fire_timestamp is not None:
            ctx.register_event_time_timer(next_fire_timestamp)

    def clear(self, window, ctx):
        fire_timestamp = ctx.get_partitioned_state(self.state_desc)
        timestamp = fire_timestamp.get()
        if timestamp is not None:
            ctx.delete_event_time_timer(timestamp)
            fire_timestamp.clear()

    def register_next_fire_timestamp(self, time, window, ctx, fire_timestamp_state):
        next_fire_timestamp = min(time + self.interval, window.max_timestamp())
        fire_timestamp_state.add(next_fire_timestamp)
        ctx.register_event_time_timer(next_fire_timestamp)


class ProcessingTimeTrigger(Trigger):
    """Fires when the processing time passes the window's end (refused by the operator:
    processing-time triggers are not modelled)."""

    def on_element(self, element, timestamp, window, ctx):
        ctx.register_processing_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_processing_time(self, time, window, ctx):
        return TriggerResult.FIRE

    def on_event_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window, ctx):
        if window.max_timestamp() > ctx.get_current_processing_time():
            ctx.register_processing_time_timer(window.max_timestamp())

    def clear(self, window, ctx):
        ctx.delete_processing_time_timer(window.max_timestamp())

    @staticmethod
    def create() -> "ProcessingTimeTrigger":
        return ProcessingTimeTrigger()


class ContinuousProcessingTimeTrigger(Trigger):
    """Fires every ``interval`` of processing time. Constructible as PyFlink's; refused when the
    window operator is built (processing-time triggers are not modelled), so it never runs."""

    def __init__(self, interval: int):
        self.interval = interval

    @staticmethod
    def of(interval) -> "ContinuousProcessingTimeTrigger":
        return ContinuousProcessingTimeTrigger(_millis(interval))

    def on_element(self, element, timestamp, window, ctx):
        raise NotImplementedError("processing-time triggers are not modelled")

    on_processing_time = on_event_time = clear = on_element


class PurgingTrigger(Trigger):
    """Turns the nested trigger's FIRE into FIRE_AND_PURGE."""

    def __init__(self, nested_trigger: Trigger):
        self.nested_trigger = nested_trigger

    @staticmethod
    def of(nested_trigger: Trigger) -> "PurgingTrigger":
        return PurgingTrigger(nested_trigger)

    @staticmethod
    def _purging(result: TriggerResult) -> TriggerResult:
        return TriggerResult.FIRE_AND_PURGE if result.is_fire() is True else result

    def on_element(self, element, timestamp, window, ctx):
        return self._purging(self.nested_trigger.on_element(element, timestamp, window, ctx))

    def on_event_time(self, time, window, ctx):
        return self._purging(self.nested_trigger.on_event_time(time, window, ctx))

    def on_processing_time(self, time, window, ctx):
        return self._purging(self.nested_trigger.on_processing_time(time, window, ctx))

    def clear(self, window, ctx):
        self.nested_trigger.clear(window, ctx)

    def can_merge(self) -> bool:
        return self.nested_trigger.can_merge()

    def on_merge(self, window, ctx):
        self.nested_trigger.on_merge(window, ctx)


def _add(a, b):
    return a + b


class CountTrigger(Trigger):
    """Fires when the pane holds ``window_size`` elements (counted since the last fire)."""

    def __init__(self, window_size: int):
        self._window_size = window_size
        self._count_state_descriptor = ReducingStateDescriptor("count", _add, Types.LONG())

    @staticmethod
    def of(window_size: int) -> "CountTrigger":
        return CountTrigger(window_size)

    def on_element(self, element, timestamp, window, ctx):
        count_state = ctx.get_partitioned_state(self._count_state_descriptor)
        count_state.add(1)
        if count_state.get() >= self._window_size:
            count_state.clear()
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_processing_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window, ctx):
        ctx.merge_partitioned_state(self._count_state_descriptor)

    def clear(self, window, ctx):
        ctx.get_partitioned_state(self._count_state_descriptor).clear()


class NeverTrigger(Trigger):
    """Never fires: the default trigger of :class:`GlobalWindows`."""

    def on_element(self, element, timestamp, window, ctx):
        return TriggerResult.CONTINUE

    def on_processing_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def on_merge(self, window, ctx):
        pass

    def clear(self, window, ctx):
        pass


# -- assigners ---------------------------------------------------------------------------------
class WindowAssigner(ABC, Generic[T, W]):
    """Assigns an element to zero or more windows. ``spec()``: the captured job's assigner tuple."""

    class WindowAssignerContext(ABC):
        @abstractmethod
        def get_current_processing_time(self) -> int:
            pass

        @abstractmethod
        def get_runtime_context(self):
            pass

    @abstractmethod
    def assign_windows(self, element, timestamp: int, context: "WindowAssigner.WindowAssignerContext") -> Collection:
        pass

    @abstractmethod
    def get_default_trigger(self, env=None) -> Trigger:
        pass

    def get_window_serializer(self):
        return None

    @abstractmethod
    def is_event_time(self) -> bool:
        pass

    def spec(self) -> tuple:
        raise CaptureError(f"{type(self).__name__}: this window assigner is not modelled by streamproof")


class MergingWindowAssigner(WindowAssigner[T, W]):
    """An assigner whose windows can merge (sessions)."""

    class MergeCallback(ABC, Generic[W2]):
        @abstractmethod
        def merge(self, to_be_merged: Iterable, merge_result) -> None:
            pass

    @abstractmethod
    def merge_windows(self, windows: Iterable, callback: "MergingWindowAssigner.MergeCallback") -> None:
        pass


class _ProcessingTime:
    """Processing-time assigners: refused when captured."""

    def spec(self) -> tuple:
        raise CaptureError(f"{type(self).__name__}: processing-time windows are not modelled by streamproof")

    def is_event_time(self) -> bool:
        return False

    def get_default_trigger(self, env=None) -> Trigger:
        return ProcessingTimeTrigger()


class SessionWindowTimeGapExtractor(ABC):
    """Extracts the session gap (ms) of an element for dynamic session windows."""

    @abstractmethod
    def extract(self, element: Any) -> int:
        pass


class TumblingEventTimeWindows(WindowAssigner):
    """Windows ``[start, start + size)`` aligned to ``offset``."""

    def __init__(self, size: int, offset: int = 0):
        if abs(offset) >= size:
            raise ValueError("TumblingEventTimeWindows parameters must satisfy abs(offset) < size")
        self._size, self._offset = size, offset

    @staticmethod
    def of(size, offset=None) -> "TumblingEventTimeWindows":
        return TumblingEventTimeWindows(_millis(size), 0 if offset is None else _millis(offset))

    def assign_windows(self, element, timestamp, context=None):
        start = TimeWindow.get_window_start_with_offset(_event_timestamp(timestamp), self._offset, self._size)
        return [TimeWindow(start, start + self._size)]

    def get_default_trigger(self, env=None):
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True

    def spec(self) -> tuple:
        return ("tumbling", self._size, self._offset)

    def __repr__(self):
        return f"TumblingEventTimeWindows({self._size}, {self._offset})"


class SlidingEventTimeWindows(WindowAssigner):
    """Windows of ``size`` every ``slide`` (aligned to ``offset``), the latest first."""

    def __init__(self, size: int, slide: int, offset: int = 0):
        if abs(offset) >= slide or size <= 0:
            raise ValueError("SlidingEventTimeWindows parameters must satisfy abs(offset) < slide and size > 0")
        self._size, self._slide, self._offset = size, slide, offset
        self._pane_size = math.gcd(size, slide)

    @staticmethod
    def of(size, slide, offset=None) -> "SlidingEventTimeWindows":
        return SlidingEventTimeWindows(_millis(size), _millis(slide), 0 if offset is None else _millis(offset))

    def assign_windows(self, element, timestamp, context=None):
        timestamp = _event_timestamp(timestamp)
        last_start = TimeWindow.get_window_start_with_offset(timestamp, self._offset, self._slide)
        starts = range(last_start, timestamp - self._size, -self._slide)
        return [TimeWindow(start, start + self._size) for start in starts]

    def get_default_trigger(self, env=None):
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True

    def spec(self) -> tuple:
        return ("sliding", self._size, self._slide, self._offset)

    def __repr__(self):
        return f"SlidingEventTimeWindows({self._size}, {self._slide}, {self._offset})"


class EventTimeSessionWindows(MergingWindowAssigner):
    """Sessions: ``[timestamp, timestamp + gap)`` per element, overlapping ones merged."""

    def __init__(self, session_gap: int):
        if session_gap <= 0:
            raise ValueError("EventTimeSessionWindows parameters must satisfy 0 < size")
        self._session_gap = session_gap

    @staticmethod
    def with_gap(size) -> "EventTimeSessionWindows":
        return EventTimeSessionWindows(_millis(size))

    @staticmethod
    def with_dynamic_gap(extractor: SessionWindowTimeGapExtractor) -> "DynamicEventTimeSessionWindows":
        return DynamicEventTimeSessionWindows(extractor)

    def merge_windows(self, windows, callback):
        TimeWindow.merge_windows(windows, callback)

    def assign_windows(self, element, timestamp, context=None):
        timestamp = _event_timestamp(timestamp)
        return [TimeWindow(timestamp, timestamp + self._session_gap)]

    def get_default_trigger(self, env=None):
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True

    def spec(self) -> tuple:
        return ("session", self._session_gap)

    def __repr__(self):
        return f"EventTimeSessionWindows({self._session_gap})"


def _extract_gap(extractor, element) -> int:
    gap = extractor.extract(element) if hasattr(extractor, "extract") else extractor(element)
    if gap <= 0:
        raise ValueError("Dynamic session time gap must satisfy 0 < gap")
    return gap


class DynamicEventTimeSessionWindows(MergingWindowAssigner):
    """Sessions whose gap the extractor gives per element (a ``SessionWindowTimeGapExtractor`` or a
    callable)."""

    def __init__(self, session_window_time_gap_extractor):
        self._session_gap = 0
        self._session_window_time_gap_extractor = session_window_time_gap_extractor

    @staticmethod
    def with_dynamic_gap(extractor) -> "DynamicEventTimeSessionWindows":
        return DynamicEventTimeSessionWindows(extractor)

    def merge_windows(self, windows, callback):
        TimeWindow.merge_windows(windows, callback)

    def assign_windows(self, element, timestamp, context=None):
        timestamp = _event_timestamp(timestamp)
        gap = _extract_gap(self._session_window_time_gap_extractor, element)
        return [TimeWindow(timestamp, timestamp + gap)]

    def get_default_trigger(self, env=None):
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True

    def spec(self) -> tuple:
        return ("dynamic_session", self._session_window_time_gap_extractor)

    def __repr__(self):
        return f"DynamicEventTimeSessionWindows({self._session_gap})"


class GlobalWindows(WindowAssigner):
    """Every element in the one :class:`GlobalWindow`; it never fires without another trigger."""

    @staticmethod
    def create() -> "GlobalWindows":
        return GlobalWindows()

    def assign_windows(self, element, timestamp, context=None):
        return [GlobalWindow.get()]

    def get_default_trigger(self, env=None):
        return NeverTrigger()

    def is_event_time(self) -> bool:
        return False

    def spec(self) -> tuple:
        return ("global",)

    def __repr__(self):
        return "GlobalWindows()"


class _CountAssigner(WindowAssigner):
    def _next_count(self, context) -> int:
        count_state = context.get_runtime_context().get_state(self._count_descriptor)
        count = count_state.value() or 0
        count_state.update(count + 1)
        return count

    def get_default_trigger(self, env=None):
        return CountTrigger(self._window_size)

    def is_event_time(self) -> bool:
        return False


class CountTumblingWindowAssigner(_CountAssigner):
    """``KeyedStream.count_window(size)``: the n-th element of a key goes to ``CountWindow(n // size)``,
    which fires (``CountTrigger(size)``) when full."""

    def __init__(self, window_size: int):
        self._window_size = window_size
        self._count_descriptor = ValueStateDescriptor("tumble-count-assigner", Types.LONG())

    @staticmethod
    def of(window_size: int) -> "CountTumblingWindowAssigner":
        return CountTumblingWindowAssigner(window_size)

    def assign_windows(self, element, timestamp, context):
        return [CountWindow(self._next_count(context) // self._window_size)]

    def spec(self) -> tuple:
        return ("count", self._window_size, None)

    def __repr__(self):
        return f"CountTumblingWindowAssigner({self._window_size})"


class CountSlidingWindowAssigner(_CountAssigner):
    """``KeyedStream.count_window(size, slide)``: window ``k`` holds the key's elements number
    ``k * slide`` to ``k * slide + size - 1`` and fires (``CountTrigger(size)``) when full."""

    def __init__(self, window_size: int, window_slide: int):
        self._window_size, self._window_slide = window_size, window_slide
        self._count_descriptor = ValueStateDescriptor("slide-count-assigner", Types.LONG())

    @staticmethod
    def of(window_size: int, window_slide: int) -> "CountSlidingWindowAssigner":
        return CountSlidingWindowAssigner(window_size, window_slide)

    def assign_windows(self, element, timestamp, context):
        current = self._next_count(context)
        last_id = current // self._window_slide
        last_start = last_id * self._window_slide
        last_end = last_start + self._window_size - 1
        windows = []
        while last_id >= 0 and last_start <= current <= last_end:
            windows.append(CountWindow(last_id))
            last_id -= 1
            last_start -= self._window_slide
            last_end -= self._window_slide
        return windows

    def spec(self) -> tuple:
        return ("count", self._window_size, self._window_slide)

    def __repr__(self):
        return f"CountSlidingWindowAssigner({self._window_size}, {self._window_slide})"


class TumblingProcessingTimeWindows(_ProcessingTime, WindowAssigner):
    """Processing-time tumbling windows (refused when captured)."""

    def __init__(self, size: int, offset: int = 0):
        if abs(offset) >= size:
            raise ValueError("TumblingProcessingTimeWindows parameters must satisfy abs(offset) < size")
        self._size, self._offset = size, offset

    @staticmethod
    def of(size, offset=None) -> "TumblingProcessingTimeWindows":
        return TumblingProcessingTimeWindows(_millis(size), 0 if offset is None else _millis(offset))

    def assign_windows(self, element, timestamp, context):
        now = context.get_current_processing_time()
        start = TimeWindow.get_window_start_with_offset(now, self._offset, self._size)
        return [TimeWindow(start, start + self._size)]


class SlidingProcessingTimeWindows(_ProcessingTime, WindowAssigner):
    """Processing-time sliding windows (refused when captured)."""

    def __init__(self, size: int, slide: int, offset: int = 0):
        if abs(offset) >= slide or size <= 0:
            raise ValueError("SlidingProcessingTimeWindows parameters must satisfy abs(offset) < slide and size > 0")
        self._size, self._slide, self._offset = size, slide, offset

    @staticmethod
    def of(size, slide, offset=None) -> "SlidingProcessingTimeWindows":
        return SlidingProcessingTimeWindows(_millis(size), _millis(slide), 0 if offset is None else _millis(offset))

    def assign_windows(self, element, timestamp, context):
        now = context.get_current_processing_time()
        last_start = TimeWindow.get_window_start_with_offset(now, self._offset, self._slide)
        return [TimeWindow(start, start + self._size) for start in range(last_start, now - self._size, -self._slide)]


class ProcessingTimeSessionWindows(_ProcessingTime, MergingWindowAssigner):
    """Processing-time sessions (refused when captured)."""

    def __init__(self, session_gap: int):
        if session_gap <= 0:
            raise ValueError("ProcessingTimeSessionWindows parameters must satisfy 0 < size")
        self._session_gap = session_gap

    @staticmethod
    def with_gap(size) -> "ProcessingTimeSessionWindows":
        return ProcessingTimeSessionWindows(_millis(size))

    @staticmethod
    def with_dynamic_gap(extractor) -> "DynamicProcessingTimeSessionWindows":
        return DynamicProcessingTimeSessionWindows(extractor)

    def merge_windows(self, windows, callback):
        TimeWindow.merge_windows(windows, callback)

    def assign_windows(self, element, timestamp, context):
        now = context.get_current_processing_time()
        return [TimeWindow(now, now + self._session_gap)]


class DynamicProcessingTimeSessionWindows(_ProcessingTime, MergingWindowAssigner):
    """Processing-time sessions with a gap per element (refused when captured)."""

    def __init__(self, session_window_time_gap_extractor):
        self._session_gap = 0
        self._session_window_time_gap_extractor = session_window_time_gap_extractor

    @staticmethod
    def with_dynamic_gap(extractor) -> "DynamicProcessingTimeSessionWindows":
        return DynamicProcessingTimeSessionWindows(extractor)

    def merge_windows(self, windows, callback):
        TimeWindow.merge_windows(windows, callback)

    def assign_windows(self, element, timestamp, context):
        now = context.get_current_processing_time()
        return [TimeWindow(now, now + _extract_gap(self._session_window_time_gap_extractor, element))]


def assigner_from_spec(assigner: tuple) -> WindowAssigner:
    """The assigner of a :attr:`~streamproof.flink.pipeline.WindowSpec.assigner` tuple."""
    kind, *args = assigner
    if kind == "tumbling":
        return TumblingEventTimeWindows(*args)
    if kind == "sliding":
        return SlidingEventTimeWindows(*args)
    if kind == "session":
        return EventTimeSessionWindows(*args)
    if kind == "dynamic_session":
        return DynamicEventTimeSessionWindows(*args)
    if kind == "global":
        return GlobalWindows()
    if kind == "count":
        size, slide = args[0], (args[1] if len(args) > 1 else None)
        return CountTumblingWindowAssigner(size) if not slide else CountSlidingWindowAssigner(size, slide)
    raise CaptureError(f"window assigner {assigner!r} is not modelled by streamproof")

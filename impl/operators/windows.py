"""Event-time windows on the keyed runtime: Flink's window assigners, triggers and ``WindowOperator``,
the FLIP-331 end-of-stream global window with its operator attributes, ``coGroup`` as a union of
two tagged streams, and the sorted fast path (FLIP-331's internal sorter) for end-of-stream windows.

:class:`WindowOperator` is a :class:`~streamproof.impl.operators.keyed_process_operator.KeyedProcessFunction`, so it runs
in :class:`~streamproof.impl.operators.keyed_process_operator.KeyedProcessOperator` and in jobs like any keyed function.
Allowed lateness is 0; processing-time and merging (session) windows are not modelled.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from typing import Any, Callable, Iterable

from streamproof.impl.operators.keyed_process_operator import KeyedProcessFunction
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


# -- operator attributes (FLIP-331) ------------------------------------------------------------
@dataclass(frozen=True)
class OperatorAttributes:
    """What the runtime may use to optimise a job (Flink's ``OperatorAttributes``)."""

    output_only_after_end_of_stream: bool = False
    internal_sorter_supported: bool = False


class OperatorAttributesBuilder:
    """Builds :class:`OperatorAttributes`; unset attributes are False."""

    def __init__(self):
        self._output_only_after_end_of_stream = False
        self._internal_sorter_supported = False

    def set_output_only_after_end_of_stream(self, value: bool) -> "OperatorAttributesBuilder":
        self._output_only_after_end_of_stream = bool(value)
        return self

    def set_internal_sorter_supported(self, value: bool) -> "OperatorAttributesBuilder":
        self._internal_sorter_supported = bool(value)
        return self

    def build(self) -> OperatorAttributes:
        return OperatorAttributes(self._output_only_after_end_of_stream, self._internal_sorter_supported)


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


# -- co-group (a union of two tagged streams into one window operator) -------------------------
LEFT, RIGHT = "L", "R"


def tag_left(key: Any, value: Any) -> list:
    """A stateless flat-map function: the left input's record tagged for :class:`CoGroupWindowFunction`."""
    return [(key, (LEFT, value))]


def tag_right(key: Any, value: Any) -> list:
    """A stateless flat-map function: the right input's record tagged for :class:`CoGroupWindowFunction`."""
    return [(key, (RIGHT, value))]


def split_tagged(elements: Iterable) -> tuple[list, list]:
    """The tagged elements' left and right values, each side in arrival order."""
    lefts, rights = [], []
    for tag, value in elements:
        (lefts if tag == LEFT else rights).append(value)
    return lefts, rights


class CoGroupWindowFunction(ProcessWindowFunction):
    """Flink's ``CoGroupWindowFunction``: splits a window's tagged elements into the two sides and
    calls ``co_group_fn(key, lefts, rights, out)``."""

    def __init__(self, co_group_fn: Callable[[Any, list, list, Any], None]):
        self.co_group_fn = co_group_fn

    def process(self, key, window, elements, out) -> None:
        lefts, rights = split_tagged(elements)
        self.co_group_fn(key, lefts, rights, out)


# -- the sorted fast path (FLIP-331's internal sorter) -----------------------------------------
def sort_key(record) -> tuple:
    """Records ``(key, value, timestamp)`` sort by ``(type name, key)``: str and int keys mix."""
    key = record[0]
    return (type(key).__name__, key)


_key_of = itemgetter(0)


def sort_by_key(records: Iterable) -> list:
    """The records stably sorted by :func:`sort_key` (each key's records stay in arrival order).
    One key type (the common case) sorts on the key alone; mixed types sort per type name."""
    records = records if isinstance(records, list) else list(records)
    types = set(map(type, map(_key_of, records)))
    if len(types) <= 1:
        return sorted(records, key=_key_of)
    by_type: dict[str, list] = {}
    for record in records:
        by_type.setdefault(type(record[0]).__name__, []).append(record)
    return [record for name in sorted(by_type) for record in sorted(by_type[name], key=_key_of)]


class _ListCollector:
    __slots__ = ("results", "key")

    def __init__(self, results: list):
        self.results, self.key = results, None

    def collect(self, value: Any) -> None:
        self.results.append((self.key, value))


def sorted_window_aggregate(records: Iterable, aggregate: AggregateFunction) -> list:
    """``(key, result)`` per key: what :class:`WindowOperator` emits for ``aggregate`` over global
    windows with the end-of-stream trigger, from one pass over the records sorted by key (stable:
    each key's records in arrival order); no window assignment, trigger or timer."""
    results = []
    create, add, get_result = aggregate.create_accumulator, aggregate.add, aggregate.get_result
    for key, group in groupby(sort_by_key(records), key=_key_of):
        accumulator = create()
        for _, value, _ in group:
            accumulator = add(value, accumulator)
        results.append((key, get_result(accumulator)))
    return results


def _groups(records: Iterable):
    """``(sort key, key, values)`` per key of the records sorted by key, values in arrival order."""
    for key, group in groupby(sort_by_key(records), key=_key_of):
        yield (type(key).__name__, key), key, [record[1] for record in group]


def sorted_co_group(lefts: Iterable, rights: Iterable, co_group_fn: Callable) -> list:
    """What the window operator emits for ``co_group`` over global windows with the end-of-stream
    trigger: each input sorted by key on its own (no tagging), then one merge pass calling
    ``co_group_fn(key, lefts, rights, out)`` per key present on either side; outputs ``(key, value)``."""
    results: list = []
    out = _ListCollector(results)
    left_groups, right_groups = _groups(lefts), _groups(rights)
    left, right = next(left_groups, None), next(right_groups, None)
    while left is not None or right is not None:
        if right is None or (left is not None and left[0] < right[0]):
            out.key = left[1]
            co_group_fn(left[1], left[2], [], out)
            left = next(left_groups, None)
        elif left is None or right[0] < left[0]:
            out.key = right[1]
            co_group_fn(right[1], [], right[2], out)
            right = next(right_groups, None)
        else:
            out.key = left[1]
            co_group_fn(left[1], left[2], right[2], out)
            left, right = next(left_groups, None), next(right_groups, None)
    return results


__all__ = [
    "TimeWindow", "GlobalWindow", "GLOBAL_WINDOW", "TriggerResult", "TriggerContext", "Trigger",
    "EventTimeTrigger", "EndOfStreamTrigger", "NeverTrigger", "WindowAssigner", "TumblingEventTimeWindows",
    "SlidingEventTimeWindows", "GlobalWindows", "AggregateFunction", "SumAggregate", "ProcessWindowFunction",
    "OperatorAttributes", "OperatorAttributesBuilder", "WindowOperator", "window_output_prefix",
    "tag_left", "tag_right", "split_tagged", "CoGroupWindowFunction", "sort_key", "sort_by_key",
    "sorted_window_aggregate", "sorted_co_group", "KINDS", "LEFT", "RIGHT",
]

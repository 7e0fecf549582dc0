"""streamproof.flink.window_operator: PyFlink's window API (streamproof.flink.datastream.window and
the window functions) run by the keyed window operator through KeyedProcessOperator: tumbling,
sliding, session (merging) and dynamic-gap windows, count windows, allowed lateness and the late
side output, reduce/aggregate with and without a window function, triggers (built-in and user),
snapshot/restore in the middle, refusals."""

from __future__ import annotations

import pytest

from streamproof.flink.common.time import Time
from streamproof.flink.datastream.functions import (
    AggregateFunction, ProcessWindowFunction, ReduceFunction, WindowFunction,
)
from streamproof.flink.datastream.output_tag import OutputTag
from streamproof.flink.datastream.state import ValueStateDescriptor
from streamproof.flink.common.typeinfo import Types
from streamproof.flink.datastream.window import (
    ContinuousEventTimeTrigger, CountSlidingWindowAssigner, CountTrigger, CountTumblingWindowAssigner,
    DynamicEventTimeSessionWindows, EventTimeSessionWindows, GlobalWindow, GlobalWindows, ProcessingTimeSessionWindows,
    ProcessingTimeTrigger, PurgingTrigger, SessionWindowTimeGapExtractor, SlidingEventTimeWindows,
    SlidingProcessingTimeWindows, TimeWindow, Trigger, TriggerResult, TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from streamproof.flink.pipeline import CaptureError, WindowSpec
from streamproof.flink.window_operator import window_operator
from streamproof.impl.state.key_groups import KeyGroupRange
from streamproof.impl.operators.keyed_process_operator import KeyedProcessOperator, StreamRecord
from streamproof.impl.timers.internal_timer_service import MAX_WATERMARK
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService

MP = 128


class Harness:
    """A KeyedProcessOperator running ``window_operator(spec)``; ``out``: (value, timestamp)."""

    def __init__(self, spec: WindowSpec, snapshots=None):
        self.spec, self.out = spec, []
        self.op = KeyedProcessOperator(window_operator(spec), MP, KeyGroupRange(0, MP - 1),
                                       ManualProcessingTimeService(start=0),
                                       emit=lambda value, ts: self.out.append((value, ts)))
        if snapshots:
            self.op.initialize_state(snapshots)
        self.op.open()

    def element(self, key, value, ts) -> "Harness":
        self.op.process_element(StreamRecord(key, value, ts))
        return self

    def elements(self, records) -> "Harness":
        for key, value, ts in records:
            self.element(key, value, ts)
        return self

    def watermark(self, w: int) -> "Harness":
        self.op.time_service_manager.advance_watermark(w)
        return self

    def take(self) -> list:
        out, self.out = self.out, []
        return out


class CountWindowProcessFunction(ProcessWindowFunction):
    """PyFlink's documentation example: (key, start, end, number of elements)."""

    def process(self, key, context, elements):
        return [(key, context.window().start, context.window().end, len([e for e in elements]))]


class Sum(ReduceFunction):
    def reduce(self, value1, value2):
        return value1 + value2


class Average(AggregateFunction):
    def create_accumulator(self):
        return 0, 0

    def add(self, value, accumulator):
        return accumulator[0] + value, accumulator[1] + 1

    def get_result(self, accumulator):
        return accumulator[0] / accumulator[1]

    def merge(self, a, b):
        return a[0] + b[0], a[1] + b[1]


class Sorted(ProcessWindowFunction):
    def process(self, key, context, elements):
        window = context.window()
        yield key, (window.start, window.end) if isinstance(window, TimeWindow) else window, sorted(elements)


def spec(assigner, kind="process", function=None, **kw) -> WindowSpec:
    return WindowSpec(assigner=assigner.spec() if not isinstance(assigner, tuple) else assigner,
                      function_kind=kind, function=function if function is not None else Sorted(), **kw)


# -- assigners ---------------------------------------------------------------------------------
def test_pyflink_example_tumbling_count():
    data = [("hi", 1), ("hi", 2), ("hi", 3), ("hi", 4), ("hi", 5), ("hi", 8), ("hi", 9), ("hi", 15)]
    h = Harness(spec(TumblingEventTimeWindows.of(Time.milliseconds(5)), function=CountWindowProcessFunction()))
    h.elements((v[0], v, v[1]) for v in data)
    assert h.take() == []
    h.watermark(MAX_WATERMARK)
    assert h.take() == [(("hi", 0, 5, 4), 4), (("hi", 5, 10, 3), 9), (("hi", 15, 20, 1), 19)]


def test_tumbling_fires_when_the_watermark_passes_the_end():
    h = Harness(spec(TumblingEventTimeWindows.of(10), "reduce", Sum()))
    h.elements([("a", 1, 1), ("b", 10, 2), ("a", 2, 9), ("a", 100, 10)])
    h.watermark(8)
    assert h.take() == []
    h.watermark(9)
    assert sorted(h.take()) == [(3, 9), (10, 9)]
    h.watermark(MAX_WATERMARK)
    assert h.take() == [(100, 19)]


def test_sliding_element_in_several_windows():
    h = Harness(spec(SlidingEventTimeWindows.of(Time.milliseconds(10), Time.milliseconds(5)), "reduce",
                     lambda a, b: a + b))
    h.elements([("k", 1, 1), ("k", 7, 7), ("k", 12, 12)])
    h.watermark(MAX_WATERMARK)
    assert h.take() == [(1, 4), (8, 9), (19, 14), (12, 19)]


def test_session_windows_merge():
    h = Harness(spec(EventTimeSessionWindows.with_gap(Time.milliseconds(5)), function=CountWindowProcessFunction()))
    h.elements([("k", "a", 1), ("k", "b", 3), ("k", "c", 10)])
    h.watermark(MAX_WATERMARK)
    assert h.take() == [(("k", 1, 8, 2), 7), (("k", 10, 15, 1), 14)]


def test_a_bridging_element_merges_two_sessions():
    h = Harness(spec(EventTimeSessionWindows.with_gap(5)))
    h.elements([("k", 1, 1), ("k", 10, 10)])
    h.element("k", 6, 6)  # [6, 11) touches [1, 6) and overlaps [10, 15)
    h.watermark(MAX_WATERMARK)
    assert h.take() == [(("k", (1, 15), [1, 6, 10]), 14)]


@pytest.mark.parametrize("kind,function,expected", [("reduce", Sum(), 17), ("aggregate", Average(), 17 / 3)])
def test_session_merge_of_incremental_state(kind, function, expected):
    h = Harness(spec(EventTimeSessionWindows.with_gap(5), kind, function))
    h.elements([("k", 1, 1), ("k", 10, 10), ("k", 6, 6)])
    h.watermark(MAX_WATERMARK)
    assert h.take() == [(expected, 14)]


def test_session_timers_of_merged_windows_are_deleted():
    h = Harness(spec(EventTimeSessionWindows.with_gap(5), function=CountWindowProcessFunction()))
    h.elements([("k", "a", 1), ("k", "b", 4)])
    h.watermark(6)  # the first session's old end (5) must not fire
    assert h.take() == []
    h.watermark(8)
    assert h.take() == [(("k", 1, 9, 2), 8)]
    assert h.op.pending_timers() == 0


def test_dynamic_gap_sessions():
    class Gap(SessionWindowTimeGapExtractor):
        def extract(self, element):
            return element[1]

    h = Harness(spec(EventTimeSessionWindows.with_dynamic_gap(Gap()), function=CountWindowProcessFunction()))
    h.elements([("k", ("a", 2), 1), ("k", ("b", 10), 4), ("k", ("c", 1), 2)])
    h.watermark(MAX_WATERMARK)
    assert h.take() == [(("k", 1, 3, 2), 2), (("k", 4, 14, 1), 13)]
    assert DynamicEventTimeSessionWindows.with_dynamic_gap(Gap()).spec()[0] == "dynamic_session"


def test_global_windows_never_fire_without_a_trigger():
    h = Harness(spec(GlobalWindows.create()))
    h.elements([("k", i, i) for i in range(5)])
    h.watermark(MAX_WATERMARK)
    assert h.take() == []


def test_global_windows_with_purging_count_trigger():
    h = Harness(spec(GlobalWindows.create(), trigger=PurgingTrigger.of(CountTrigger.of(2))))
    h.elements([("k", i, i) for i in range(5)])
    h.watermark(MAX_WATERMARK)
    assert [v for v, _ in h.take()] == [("k", GlobalWindow(), [0, 1]), ("k", GlobalWindow(), [2, 3])]


# -- count windows (PyFlink's count assigners) --------------------------------------------------
def test_tumbling_count_window():
    assert CountTumblingWindowAssigner.of(3).spec() == ("count", 3, None)
    h = Harness(spec(("count", 3, None), "reduce", Sum()))
    h.elements([("a", i, 100 + i) for i in range(1, 8)] + [("b", 10, 0)])
    h.watermark(MAX_WATERMARK)
    # fired by the element completing the window: its timestamp; 7 and b's 10 never fire
    assert h.take() == [(6, 103), (15, 106)]


def test_sliding_count_window():
    assert CountSlidingWindowAssigner.of(4, 2).spec() == ("count", 4, 2)
    h = Harness(spec(("count", 4, 2)))
    h.elements([("a", i, i) for i in range(1, 8)])
    assert [v[2] for v, _ in h.take()] == [[1, 2, 3, 4], [3, 4, 5, 6]]
    h = Harness(spec(("count", 3, 1)))
    h.elements([("a", i, i) for i in range(1, 6)])
    assert [v[2] for v, _ in h.take()] == [[1, 2, 3], [2, 3, 4], [3, 4, 5]]


# -- lateness ------------------------------------------------------------------------------------
def test_allowed_lateness_refires_and_late_side_output():
    late = OutputTag("late")
    h = Harness(spec(TumblingEventTimeWindows.of(10), allowed_lateness=5, late_tag=late))
    h.element("k", "a", 3).watermark(9)
    assert h.take() == [(("k", (0, 10), ["a"]), 9)]
    h.element("k", "b", 5)  # late but allowed: fires at once, with what the window holds
    assert h.take() == [(("k", (0, 10), ["a", "b"]), 5)]
    h.watermark(14)  # cleanup: no output
    assert h.take() == []
    h.element("k", "c", 6)
    assert h.take() == []
    assert h.op.side_outputs == [("late", "c", 6)]


def test_late_elements_dropped_without_a_tag():
    h = Harness(spec(TumblingEventTimeWindows.of(10)))
    h.watermark(20).element("k", "x", 5).element("k", "y", 25)
    h.watermark(MAX_WATERMARK)
    assert h.take() == [(("k", (20, 30), ["y"]), 29)]
    assert h.op.function.num_late_records_dropped == 1
    assert h.op.side_outputs == []


def test_two_windows_of_a_key_at_one_timer_time():
    # [0, 10) is cleaned at 9 + 5 = 14, when [5, 15) fires
    h = Harness(spec(SlidingEventTimeWindows.of(10, 5), allowed_lateness=5))
    h.element("k", 7, 7).watermark(9)
    assert h.take() == [(("k", (0, 10), [7]), 9)]
    h.element("k", 8, 8)
    assert h.take() == [(("k", (0, 10), [7, 8]), 8)]
    h.watermark(14)
    assert h.take() == [(("k", (5, 15), [7, 8]), 14)]
    h.element("k", 9, 9)  # [0, 10) is gone; [5, 15) is late but allowed
    assert h.take() == [(("k", (5, 15), [7, 8, 9]), 9)]


class AtHundred(Trigger):
    """Fires every window at event time 100 (one timer time for many windows)."""

    def on_element(self, element, timestamp, window, ctx):
        ctx.register_event_time_timer(100)
        return TriggerResult.CONTINUE

    def on_processing_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        return TriggerResult.FIRE if time == 100 else TriggerResult.CONTINUE

    def on_merge(self, window, ctx):
        pass

    def clear(self, window, ctx):
        ctx.delete_event_time_timer(100)


def test_a_user_timer_time_shared_by_windows_fires_them_all():
    h = Harness(spec(SlidingEventTimeWindows.of(10, 5), trigger=AtHundred(), allowed_lateness=1000))
    h.element("k", 7, 7)
    h.watermark(99)
    assert h.take() == []
    h.watermark(100)
    assert sorted(v for v, _ in h.take()) == [("k", (0, 10), [7]), ("k", (5, 15), [7])]


# -- functions -----------------------------------------------------------------------------------
def test_reduce_and_aggregate_emit_the_value_itself():
    for kind, function, expected in [("reduce", Sum(), 6), ("aggregate", Average(), 2.0)]:
        h = Harness(spec(TumblingEventTimeWindows.of(10), kind, function))
        h.elements([("k", 1, 1), ("k", 2, 2), ("k", 3, 3)]).watermark(MAX_WATERMARK)
        assert h.take() == [(expected, 9)]


def test_reduce_and_aggregate_with_a_window_function():
    class Describe(ProcessWindowFunction):
        def process(self, key, context, elements):
            yield key, context.window().start, list(elements)

    class Apply(WindowFunction):
        def apply(self, key, window, inputs):
            return [(key, window.end, list(inputs))]

    h = Harness(spec(TumblingEventTimeWindows.of(10), "reduce", Sum(), window_function=Describe()))
    h.elements([("k", 1, 1), ("k", 2, 2)]).watermark(MAX_WATERMARK)
    assert h.take() == [(("k", 0, [3]), 9)]
    h = Harness(spec(TumblingEventTimeWindows.of(10), "aggregate", Average(), window_function=Apply()))
    h.elements([("k", 1, 1), ("k", 2, 2)]).watermark(MAX_WATERMARK)
    assert h.take() == [(("k", 10, [1.5]), 9)]


def test_apply_window_function():
    class Apply(WindowFunction):
        def apply(self, key, window, inputs):
            yield key, window.start, sum(inputs)

    h = Harness(spec(TumblingEventTimeWindows.of(10), "apply", Apply()))
    h.elements([("k", 1, 1), ("k", 2, 2), ("j", 5, 15)]).watermark(MAX_WATERMARK)
    assert h.take() == [(("k", 0, 3), 9), (("j", 10, 5), 19)]


def test_process_function_open_close_and_state():
    class Stateful(ProcessWindowFunction):
        def open(self, runtime_context):
            self.opened = runtime_context.get_index_of_this_subtask()

        def process(self, key, context, elements):
            total = context.global_state().get_state(ValueStateDescriptor("total", Types.LONG()))
            total.update((total.value() or 0) + len(elements))
            fires = context.window_state().get_state(ValueStateDescriptor("fires", Types.LONG()))
            fires.update((fires.value() or 0) + 1)
            yield key, context.window().start, fires.value(), total.value(), context.current_watermark()

        def clear(self, context):
            context.window_state().get_state(ValueStateDescriptor("fires", Types.LONG())).clear()

    function = Stateful()
    h = Harness(spec(TumblingEventTimeWindows.of(10), function=function, allowed_lateness=10))
    assert function.opened == 0
    h.elements([("k", 1, 1), ("k", 2, 12)]).watermark(9)
    h.element("k", 3, 3)  # re-fires [0, 10): window state counts its fires
    h.watermark(MAX_WATERMARK)
    assert [v for v, _ in h.take()] == [("k", 0, 1, 1, 9), ("k", 0, 2, 3, 9), ("k", 10, 1, 4, MAX_WATERMARK)]
    assert h.op.state_backend.keys("window-scoped-state") == []  # cleared by clear(context)


def test_window_state_is_refused_for_session_windows():
    class UsesWindowState(ProcessWindowFunction):
        def process(self, key, context, elements):
            context.window_state().get_state(ValueStateDescriptor("x", Types.LONG()))
            return []

    h = Harness(spec(EventTimeSessionWindows.with_gap(5), function=UsesWindowState()))
    h.element("k", 1, 1)
    with pytest.raises(Exception, match="Per-window state is not allowed when using merging windows"):
        h.watermark(MAX_WATERMARK)


def test_user_function_errors_propagate():
    def boom(a, b):
        raise ZeroDivisionError("boom")

    h = Harness(spec(TumblingEventTimeWindows.of(10), "reduce", boom))
    h.element("k", 1, 1)
    with pytest.raises(ZeroDivisionError):
        h.element("k", 2, 2)

    class ReturnsNone(ProcessWindowFunction):
        def process(self, key, context, elements):
            pass

    h = Harness(spec(TumblingEventTimeWindows.of(10), function=ReturnsNone()))
    h.element("k", 1, 1)
    with pytest.raises(TypeError, match="ReturnsNone.process returned None"):
        h.watermark(MAX_WATERMARK)


def test_state_is_not_aliased_with_the_records():
    class Append(ReduceFunction):
        def reduce(self, a, b):
            a.append(b[0])
            return a

    h = Harness(spec(SlidingEventTimeWindows.of(10, 5), "reduce", Append()))
    h.elements([("k", [1], 7), ("k", [2], 8)]).watermark(MAX_WATERMARK)
    assert [v for v, _ in h.take()] == [[1, 2], [1, 2]]


# -- triggers --------------------------------------------------------------------------------------
class EveryTwo(Trigger):
    """A user trigger: fires every second element (count in partitioned state) and purges at the end."""

    count = ValueStateDescriptor("count", Types.LONG())

    def on_element(self, element, timestamp, window, ctx):
        ctx.register_event_time_timer(window.max_timestamp())
        state = ctx.get_partitioned_state(self.count)
        state.update((state.value() or 0) + 1)
        return TriggerResult.FIRE if state.value() % 2 == 0 else TriggerResult.CONTINUE

    def on_processing_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        return TriggerResult.FIRE_AND_PURGE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def on_merge(self, window, ctx):
        pass

    def clear(self, window, ctx):
        ctx.get_partitioned_state(self.count).clear()
        ctx.delete_event_time_timer(window.max_timestamp())


def test_user_trigger():
    h = Harness(spec(TumblingEventTimeWindows.of(100), trigger=EveryTwo()))
    h.elements([("k", i, i) for i in range(5)])
    assert [v[2] for v, _ in h.take()] == [[0, 1], [0, 1, 2, 3]]
    h.watermark(99)
    assert h.take() == [(("k", (0, 100), [0, 1, 2, 3, 4]), 99)]
    assert h.op.state_backend.keys("window-contents") == []
    assert h.op.state_backend.keys("window-scoped-state") == []
    assert h.op.pending_timers() == 0


def test_continuous_event_time_trigger():
    h = Harness(spec(TumblingEventTimeWindows.of(10), trigger=ContinuousEventTimeTrigger.of(Time.milliseconds(3))))
    h.element("k", "a", 1)
    h.watermark(3)
    assert h.take() == [(("k", (0, 10), ["a"]), 3)]
    h.element("k", "b", 4)
    h.watermark(MAX_WATERMARK)
    assert h.take() == [(("k", (0, 10), ["a", "b"]), 6), (("k", (0, 10), ["a", "b"]), 9)]
    assert h.op.pending_timers() == 0


def test_purge_clears_contents():
    class FirePurgeOnThird(EveryTwo):
        def on_element(self, element, timestamp, window, ctx):
            result = super().on_element(element, timestamp, window, ctx)
            return TriggerResult.PURGE if element == 2 else result

    h = Harness(spec(TumblingEventTimeWindows.of(100), trigger=FirePurgeOnThird()))
    h.elements([("k", i, i) for i in range(5)]).watermark(MAX_WATERMARK)
    assert [v[2] for v, _ in h.take()] == [[0, 1], [3], [3, 4]]


# -- checkpoints ---------------------------------------------------------------------------------
@pytest.mark.parametrize("assigner", [TumblingEventTimeWindows.of(10), SlidingEventTimeWindows.of(10, 5),
                                      EventTimeSessionWindows.with_gap(5)])
def test_snapshot_restore_keeps_pending_windows(assigner):
    records = [("k", 1, 1), ("j", 2, 3), ("k", 3, 12), ("k", 4, 6), ("j", 5, 30)]
    reference = Harness(spec(assigner)).elements(records)
    reference.watermark(9)
    reference.elements([("k", 6, 16), ("j", 7, 33)]).watermark(MAX_WATERMARK)

    h = Harness(spec(assigner)).elements(records[:3])
    snapshot = h.op.snapshot_state()
    h.elements(records[3:]).watermark(9)  # the restored copy must not see this
    restored = Harness(spec(assigner), snapshots=[snapshot]).elements(records[3:])
    restored.watermark(9)
    restored.elements([("k", 6, 16), ("j", 7, 33)]).watermark(MAX_WATERMARK)
    assert restored.out == reference.out
    assert restored.op.pending_timers() == 0


# -- the API and refusals ------------------------------------------------------------------------
def test_assigner_specs():
    assert TumblingEventTimeWindows.of(Time.seconds(5)).spec() == ("tumbling", 5000, 0)
    assert TumblingEventTimeWindows.of(Time.hours(1), Time.minutes(15)).spec() == ("tumbling", 3_600_000, 900_000)
    assert SlidingEventTimeWindows.of(Time.seconds(10), Time.seconds(5)).spec() == ("sliding", 10_000, 5_000, 0)
    assert EventTimeSessionWindows.with_gap(Time.minutes(1)).spec() == ("session", 60_000)
    assert GlobalWindows.create().spec() == ("global",)
    with pytest.raises(ValueError):
        TumblingEventTimeWindows.of(5, 5)


@pytest.mark.parametrize("assigner,name", [
    (TumblingProcessingTimeWindows.of(Time.seconds(1)), "TumblingProcessingTimeWindows"),
    (SlidingProcessingTimeWindows.of(Time.seconds(2), Time.seconds(1)), "SlidingProcessingTimeWindows"),
    (ProcessingTimeSessionWindows.with_gap(Time.seconds(1)), "ProcessingTimeSessionWindows"),
    (ProcessingTimeSessionWindows.with_dynamic_gap(lambda e: 1), "DynamicProcessingTimeSessionWindows"),
])
def test_processing_time_assigners_are_refused(assigner, name):
    with pytest.raises(CaptureError) as error:
        assigner.spec()
    assert str(error.value) == f"{name}: processing-time windows are not modelled by streamproof"


def test_refused_when_built():
    with pytest.raises(CaptureError, match="ProcessingTimeTrigger: processing-time triggers are not modelled"):
        window_operator(spec(TumblingEventTimeWindows.of(10),
                             trigger=PurgingTrigger.of(ProcessingTimeTrigger.create())))
    with pytest.raises(CaptureError, match="evictors are not modelled"):
        window_operator(spec(GlobalWindows.create(), evictor=object()))
    with pytest.raises(CaptureError, match="not one of"):
        window_operator(spec(GlobalWindows.create(), "fold"))


def test_fresh_instance_per_call():
    window_spec = spec(TumblingEventTimeWindows.of(10))
    assert window_operator(window_spec) is not window_operator(window_spec)
    assert window_operator(window_spec).interruptible_timers is True


def test_time_window_as_pyflink():
    assert TimeWindow(0, 5).max_timestamp() == 4
    assert TimeWindow(0, 5).intersects(TimeWindow(5, 10))
    assert TimeWindow(0, 5).cover(TimeWindow(3, 10)) == TimeWindow(0, 10)
    assert sorted([TimeWindow(5, 10), TimeWindow(0, 10), TimeWindow(0, 5)]) == [
        TimeWindow(0, 5), TimeWindow(0, 10), TimeWindow(5, 10)]
    assert len({TimeWindow(0, 5), TimeWindow(0, 5)}) == 1
    assert TimeWindow.get_window_start_with_offset(-3, 0, 5) == -5


def test_all_window_functions_of_a_non_keyed_window():
    from streamproof.flink.datastream.functions import AllWindowFunction, ProcessAllWindowFunction

    class CountAll(ProcessAllWindowFunction):
        def process(self, context, elements):
            yield context.window().start, len(elements)

    class SumAll(AllWindowFunction):
        def apply(self, window, inputs):
            return [(window.end, sum(inputs))]

    h = Harness(spec(TumblingEventTimeWindows.of(10), function=CountAll()))
    h.elements([(0, 1, 1), (0, 2, 2)]).watermark(MAX_WATERMARK)
    assert h.take() == [((0, 2), 9)]
    h = Harness(spec(TumblingEventTimeWindows.of(10), "apply", SumAll()))
    h.elements([(0, 1, 1), (0, 2, 2)]).watermark(MAX_WATERMARK)
    assert h.take() == [((10, 3), 9)]


def test_the_operator_deep_copies():
    import copy

    window_spec = spec(EventTimeSessionWindows.with_gap(5), "reduce", lambda a, b: a + b)
    clone = copy.deepcopy(window_operator(window_spec))
    out = []
    op = KeyedProcessOperator(clone, MP, KeyGroupRange(0, MP - 1), ManualProcessingTimeService(start=0),
                              emit=lambda value, ts: out.append((value, ts)))
    op.open()
    op.process_element(StreamRecord("k", 1, 1))
    op.time_service_manager.advance_watermark(MAX_WATERMARK)
    assert out == [(1, 5)]


def test_errors_name_the_user_function():
    def boom(a, b):
        raise ValueError("boom")

    h = Harness(spec(TumblingEventTimeWindows.of(10), "reduce", boom))
    h.element("k", 1, 1)
    with pytest.raises(ValueError) as error:
        h.element("k", 2, 2)
    assert "in boom.process_element" in error.value.__notes__


def test_user_trigger_with_processing_time_timers():
    class AtProcessingTime50(AtHundred):
        def on_element(self, element, timestamp, window, ctx):
            ctx.register_processing_time_timer(50)
            return TriggerResult.CONTINUE

        def on_processing_time(self, time, window, ctx):
            return TriggerResult.FIRE_AND_PURGE

    clock = ManualProcessingTimeService(start=0)
    out = []
    op = KeyedProcessOperator(window_operator(spec(GlobalWindows.create(), trigger=AtProcessingTime50())), MP,
                              KeyGroupRange(0, MP - 1), clock, emit=lambda value, ts: out.append((value, ts)))
    op.open()
    op.process_element(StreamRecord("k", 1, 1))
    op.process_element(StreamRecord("j", 2, 2))
    clock.advance_to(49)
    assert out == []
    clock.advance_to(50)
    assert sorted(out) == [(("j", GlobalWindow(), [2]), 50), (("k", GlobalWindow(), [1]), 50)]

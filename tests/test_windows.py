"""impl.windows: assigners (Flink's window-start arithmetic), event-time and end-of-stream windows
driven through KeyedProcessOperator, late elements, FLIP-331 operator attributes, co-group by
tagged union, and the sorted fast path against the streaming window operator."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

from streamproof.impl.state.key_groups import KeyGroupRange
from streamproof.impl.operators.keyed_process_operator import KeyedProcessOperator, StreamRecord
from streamproof.impl.timers.internal_timer_service import MAX_WATERMARK
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService
from streamproof.impl.operators.end_of_stream import (
    CoGroupWindowFunction, sorted_co_group, sorted_window_aggregate, tag_left, tag_right,
)
from streamproof.impl.operators.operator_attributes import OperatorAttributes, OperatorAttributesBuilder
from streamproof.impl.operators.windows import (
    GLOBAL_WINDOW, EndOfStreamTrigger, EventTimeTrigger, GlobalWindows, NeverTrigger, SlidingEventTimeWindows,
    SumAggregate, TimeWindow, TumblingEventTimeWindows, WindowOperator,
)

MP = 128


def harness(window_operator: WindowOperator):
    """A KeyedProcessOperator running ``window_operator``, opened; outputs as (value, timestamp)."""
    outputs = []
    op = KeyedProcessOperator(window_operator, MP, KeyGroupRange(0, MP - 1), ManualProcessingTimeService(),
                              lambda value, ts: outputs.append((value, ts)))
    op.open()
    return op, outputs


def feed(op, records):
    for key, value, ts in records:
        op.process_element(StreamRecord(key, value, ts))


def java_window_start(timestamp: int, offset: int, size: int) -> int:
    """Flink's TimeWindow.getWindowStartWithOffset with Java's truncating remainder."""
    remainder = abs(timestamp - offset) % size * (1 if timestamp - offset >= 0 else -1)
    return timestamp - (remainder + size) if remainder < 0 else timestamp - remainder


def sum_reducer(a, b):
    return a + b


# -- assigners ---------------------------------------------------------------------------------
# Flink's TimeWindowTest#testGetWindowStartWithOffset: (timestamp, offset, size) -> start
FLINK_WINDOW_STARTS = [
    (-8, 0, 7, -14), (-7, 0, 7, -7), (-6, 0, 7, -7), (-1, 0, 7, -7), (1, 0, 7, 0), (6, 0, 7, 0), (7, 0, 7, 7),
    (8, 0, 7, 7),
    (-10, 3, 7, -11), (-9, 3, 7, -11), (-3, 3, 7, -4), (-2, 3, 7, -4), (-1, 3, 7, -4), (1, 3, 7, -4),
    (2, 3, 7, -4), (3, 3, 7, 3), (9, 3, 7, 3), (10, 3, 7, 10),
    (-12, -2, 7, -16), (-7, -2, 7, -9), (-4, -2, 7, -9), (-3, -2, 7, -9), (2, -2, 7, -2), (-1, -2, 7, -2),
    (1, -2, 7, -2), (-2, -2, 7, -2), (3, -2, 7, -2), (4, -2, 7, -2), (7, -2, 7, 5), (12, -2, 7, 12),
    (1470902048450, -8 * 3_600_000, 86_400_000, 1470844800000),  # GMT+08:00 days
]


@pytest.mark.parametrize("timestamp,offset,size,start", FLINK_WINDOW_STARTS)
def test_window_start_with_offset_as_flink(timestamp, offset, size, start):
    assert TimeWindow.get_window_start_with_offset(timestamp, offset, size) == start
    assert java_window_start(timestamp, offset, size) == start  # the reference itself is right


def test_window_start_equals_javas_arithmetic_everywhere():
    for size in (1, 3, 7, 10):
        for offset in range(-size + 1, size):
            for ts in range(-40, 41):
                assert TimeWindow.get_window_start_with_offset(ts, offset, size) == java_window_start(ts, offset, size)


def test_tumbling_windows():
    assigner = TumblingEventTimeWindows.of(5000)
    assert assigner.assign_windows("x", 0) == [TimeWindow(0, 5000)]
    assert assigner.assign_windows("x", 4999) == [TimeWindow(0, 5000)]
    assert assigner.assign_windows("x", 5000) == [TimeWindow(5000, 10000)]
    assert assigner.assign_windows("x", -1) == [TimeWindow(-5000, 0)]
    assert assigner.assign_windows("x", -5000) == [TimeWindow(-5000, 0)]
    assert assigner.assign_windows("x", -5001) == [TimeWindow(-10000, -5000)]
    with_offset = TumblingEventTimeWindows.of(5000, 100)
    assert with_offset.assign_windows("x", 100) == [TimeWindow(100, 5100)]
    assert with_offset.assign_windows("x", 5099) == [TimeWindow(100, 5100)]
    assert with_offset.assign_windows("x", 99) == [TimeWindow(-4900, 100)]
    assert with_offset.assign_windows("x", -4901) == [TimeWindow(-9900, -4900)]
    negative = TumblingEventTimeWindows.of(10, -3)
    assert negative.assign_windows("x", 0) == [TimeWindow(-3, 7)]
    assert negative.assign_windows("x", -4) == [TimeWindow(-13, -3)]
    assert TimeWindow(0, 5000).max_timestamp() == 4999
    assert isinstance(assigner.get_default_trigger(), EventTimeTrigger)
    for bad in ((10, 10), (10, -10), (0, 0)):
        with pytest.raises(ValueError):
            TumblingEventTimeWindows.of(*bad)
    with pytest.raises(ValueError):
        assigner.assign_windows("x", None)


def test_sliding_windows():
    assigner = SlidingEventTimeWindows.of(5000, 1000)
    assert assigner.assign_windows("x", 0) == [TimeWindow(s, s + 5000) for s in (0, -1000, -2000, -3000, -4000)]
    assert assigner.assign_windows("x", 4999) == [TimeWindow(s, s + 5000) for s in (4000, 3000, 2000, 1000, 0)]
    assert assigner.assign_windows("x", 5000) == [TimeWindow(s, s + 5000) for s in (5000, 4000, 3000, 2000, 1000)]
    with_offset = SlidingEventTimeWindows.of(5000, 1000, 100)
    assert with_offset.assign_windows("x", 100) == [TimeWindow(s, s + 5000) for s in (100, -900, -1900, -2900, -3900)]
    assert with_offset.assign_windows("x", 99) == [TimeWindow(s, s + 5000) for s in (-900, -1900, -2900, -3900, -4900)]
    small = SlidingEventTimeWindows.of(10, 5)
    assert small.assign_windows("x", -1) == [TimeWindow(-5, 5), TimeWindow(-10, 0)]
    assert small.assign_windows("x", -5) == [TimeWindow(-5, 5), TimeWindow(-10, 0)]
    assert small.assign_windows("x", -6) == [TimeWindow(-10, 0), TimeWindow(-15, -5)]
    uneven = SlidingEventTimeWindows.of(7, 3, -1)  # starts at ... -4, -1, 2, 5 ...
    assert uneven.assign_windows("x", 3) == [TimeWindow(2, 9), TimeWindow(-1, 6)]
    assert uneven.assign_windows("x", -4) == [TimeWindow(-4, 3), TimeWindow(-7, 0), TimeWindow(-10, -3)]
    for bad in ((10, 5, 5), (10, 5, -5), (0, 5, 0)):
        with pytest.raises(ValueError):
            SlidingEventTimeWindows.of(*bad)


def test_global_windows_and_their_triggers():
    assert GLOBAL_WINDOW.max_timestamp() == MAX_WATERMARK
    assert GlobalWindows.create().assign_windows("x", -7) == [GLOBAL_WINDOW]
    assert isinstance(GlobalWindows.create().get_default_trigger(), NeverTrigger)
    assert isinstance(GlobalWindows.create_with_end_of_stream_trigger().get_default_trigger(), EndOfStreamTrigger)


# -- the window operator -----------------------------------------------------------------------
def test_end_of_stream_trigger():
    """Flink's WindowOperatorTest#testEndOfStreamTrigger: a sum over GlobalWindows with the
    end-of-stream trigger, elements out of order; nothing before MAX_WATERMARK, then one sum per key."""
    op, outputs = harness(WindowOperator(GlobalWindows.create_with_end_of_stream_trigger(), sum_reducer, "reduce"))
    feed(op, [("key2", 1, 3000), ("key2", 1, 3999), ("key1", 1, 20), ("key1", 1, 0), ("key1", 1, 999),
              ("key2", 1, 1998), ("key2", 1, 1999), ("key2", 1, 1000)])
    assert outputs == []
    op.time_service_manager.advance_watermark(10_000)  # a high watermark short of the end: still nothing
    assert outputs == []
    op.time_service_manager.advance_watermark(MAX_WATERMARK)
    assert sorted(outputs) == [(("key1", 3), MAX_WATERMARK), (("key2", 5), MAX_WATERMARK)]
    assert op.pending_timers() == 0 and op.state_backend.keys("window-contents") == []


def test_global_window_with_default_trigger_never_fires():
    op, outputs = harness(WindowOperator(GlobalWindows.create(), SumAggregate(), "aggregate"))
    feed(op, [("a", 1, 0), ("b", 2, 5)])
    op.time_service_manager.advance_watermark(MAX_WATERMARK)
    assert outputs == [] and op.pending_timers() == 0


def test_tumbling_event_time_windows_fire_at_their_end():
    op, outputs = harness(WindowOperator(TumblingEventTimeWindows.of(10), SumAggregate(), "aggregate"))
    feed(op, [("a", 1, 0), ("a", 2, 9), ("b", 5, 3), ("a", 4, 10)])
    op.time_service_manager.advance_watermark(8)
    assert outputs == []
    op.time_service_manager.advance_watermark(9)
    assert sorted(outputs) == [(("a", 9, 3), 9), (("b", 9, 5), 9)]
    op.time_service_manager.advance_watermark(18)
    assert len(outputs) == 2
    op.time_service_manager.advance_watermark(19)
    assert outputs[2:] == [(("a", 19, 4), 19)]
    assert op.pending_timers() == 0 and op.state_backend.keys("window-contents") == []


def test_windows_fire_in_time_order_and_a_negative_window_too():
    op, outputs = harness(WindowOperator(TumblingEventTimeWindows.of(10), SumAggregate(), "aggregate"))
    feed(op, [("a", 8, -1), ("a", 1, 0)])
    op.time_service_manager.advance_watermark(100)
    assert outputs == [(("a", -1, 8), -1), (("a", 9, 1), 9)]


def test_sliding_windows_fire_each_window():
    op, outputs = harness(WindowOperator(SlidingEventTimeWindows.of(10, 5), SumAggregate(), "aggregate"))
    feed(op, [("a", 1, 0), ("a", 2, 7), ("a", 4, 12)])
    op.time_service_manager.advance_watermark(100)
    assert [v for v, _ in outputs] == [("a", 4, 1), ("a", 9, 3), ("a", 14, 6), ("a", 19, 4)]


def test_late_elements_are_dropped_and_counted():
    window_op = WindowOperator(TumblingEventTimeWindows.of(10), SumAggregate(), "aggregate")
    op, outputs = harness(window_op)
    feed(op, [("a", 1, 5)])
    op.time_service_manager.advance_watermark(9)
    assert [v for v, _ in outputs] == [("a", 9, 1)]
    feed(op, [("a", 100, 9), ("a", 100, 0), ("b", 100, -3)])  # [0, 10) and earlier are late
    feed(op, [("a", 7, 10)])  # the window [10, 20) is not
    assert window_op.num_late_records_dropped == 3
    op.time_service_manager.advance_watermark(MAX_WATERMARK)
    assert [v for v, _ in outputs] == [("a", 9, 1), ("a", 19, 7)]


def test_sliding_element_dropped_only_when_all_its_windows_are_late():
    window_op = WindowOperator(SlidingEventTimeWindows.of(10, 5), SumAggregate(), "aggregate")
    op, outputs = harness(window_op)
    op.time_service_manager.advance_watermark(9)
    feed(op, [("a", 1, 6)])  # windows [5, 15) (alive) and [0, 10) (late)
    feed(op, [("a", 100, 4)])  # windows [0, 10) and [-5, 5): both late
    assert window_op.num_late_records_dropped == 1
    op.time_service_manager.advance_watermark(MAX_WATERMARK)
    assert [v for v, _ in outputs] == [("a", 14, 1)]


def test_process_window_function_and_reduce():
    class Collect:
        def process(self, key, window, elements, out):
            out.collect(tuple(elements))
            out.collect(len(elements))

    op, outputs = harness(WindowOperator(TumblingEventTimeWindows.of(10), Collect(), "process"))
    feed(op, [("k", "x", 1), ("k", "y", 2)])
    op.time_service_manager.advance_watermark(9)
    assert [v for v, _ in outputs] == [("k", 9, ("x", "y")), ("k", 9, 2)]
    op, outputs = harness(WindowOperator(TumblingEventTimeWindows.of(10), max, "reduce"))
    feed(op, [("k", 3, 1), ("k", 9, 2), ("k", 4, 3)])
    op.time_service_manager.advance_watermark(9)
    assert [v for v, _ in outputs] == [("k", 9, 9)]
    with pytest.raises(ValueError):
        WindowOperator(GlobalWindows.create(), max, "fold")


def test_window_state_survives_a_snapshot_and_restore():
    window_op = WindowOperator(TumblingEventTimeWindows.of(10), SumAggregate(), "aggregate")
    op, _ = harness(window_op)
    feed(op, [("a", 1, 0), ("b", 2, 3)])
    snapshot = op.snapshot_state()
    outputs = []
    restored = KeyedProcessOperator(WindowOperator(TumblingEventTimeWindows.of(10), SumAggregate(), "aggregate"),
                                    MP, KeyGroupRange(0, MP - 1), ManualProcessingTimeService(),
                                    lambda value, ts: outputs.append(value))
    restored.initialize_state([snapshot])
    restored.open()
    feed(restored, [("a", 4, 5)])
    restored.time_service_manager.advance_watermark(9)
    assert sorted(outputs) == [("a", 9, 5), ("b", 9, 2)]


# -- FLIP-331 operator attributes --------------------------------------------------------------
def test_operator_attributes():
    assert OperatorAttributes() == OperatorAttributes(False, False)
    assert OperatorAttributesBuilder().build() == OperatorAttributes(False, False)
    only_eos = OperatorAttributesBuilder().set_output_only_after_end_of_stream(True).build()
    assert only_eos == OperatorAttributes(True, False)
    assert OperatorAttributesBuilder().set_internal_sorter_supported(True).build() == OperatorAttributes(False, True)
    with pytest.raises(AttributeError):
        OperatorAttributes().internal_sorter_supported = True  # frozen
    eos = WindowOperator(GlobalWindows.create_with_end_of_stream_trigger(), SumAggregate())
    assert eos.get_operator_attributes() == OperatorAttributes(True, True)
    for other in (WindowOperator(GlobalWindows.create(), SumAggregate()),
                  WindowOperator(TumblingEventTimeWindows.of(10), SumAggregate()),
                  WindowOperator(SlidingEventTimeWindows.of(10, 5), SumAggregate()),
                  WindowOperator(TumblingEventTimeWindows.of(10), SumAggregate(), trigger=EndOfStreamTrigger()),
                  WindowOperator(GlobalWindows.create_with_end_of_stream_trigger(), SumAggregate(),
                                 trigger=EventTimeTrigger())):
        assert other.get_operator_attributes() == OperatorAttributes(False, False)


# -- co-group ----------------------------------------------------------------------------------
def pair_counts(key, lefts, rights, out):
    out.collect((len(lefts), len(rights), tuple(lefts), tuple(rights)))


def streaming_co_group(lefts, rights, co_group_fn, interleave=True):
    """Both inputs tagged, unioned (alternating) into one end-of-stream window operator."""
    op, outputs = harness(WindowOperator(GlobalWindows.create_with_end_of_stream_trigger(),
                                         CoGroupWindowFunction(co_group_fn), "process"))
    tagged = [[(k2, v2, ts) for k, v, ts in side for k2, v2 in tag(k, v)]
              for side, tag in ((lefts, tag_left), (rights, tag_right))]
    union = [r for pair in zip(*tagged) for r in pair] + tagged[0][len(tagged[1]):] + tagged[1][len(tagged[0]):]
    feed(op, union if interleave else tagged[0] + tagged[1])
    assert outputs == []
    op.time_service_manager.advance_watermark(MAX_WATERMARK)
    return [value for value, _ in outputs]


def test_co_group_through_the_tagging_functions():
    assert tag_left("k", 1) == [("k", ("L", 1))] and tag_right(3, "v") == [(3, ("R", "v"))]
    lefts = [("a", 1, 0), ("b", 2, 5), ("a", 3, 1)]
    rights = [("a", 10, 2), ("c", 30, 3)]
    expected = [("a", (2, 1, (1, 3), (10,))), ("b", (1, 0, (2,), ())), ("c", (0, 1, (), (30,)))]
    assert sorted(streaming_co_group(lefts, rights, pair_counts)) == expected
    assert sorted(streaming_co_group(lefts, rights, pair_counts, interleave=False)) == expected
    assert sorted_co_group(lefts, rights, pair_counts) == expected


def test_sorted_paths_sort_mixed_keys_by_type_name():
    records = [(2, 1, 0), ("b", 1, 0), (1, 5, 0), ("a", 1, 0), (2, 3, 0)]
    assert sorted_window_aggregate(records, SumAggregate()) == [(1, 5), (2, 4), ("a", 1), ("b", 1)]
    assert sorted_co_group([(1, "x", 0)], [("1", "y", 0)], pair_counts) == [
        (1, (1, 0, ("x",), ())), ("1", (0, 1, (), ("y",)))]


# -- the sorted fast path equals the streaming path --------------------------------------------
keys = st.one_of(st.integers(-5, 5), st.sampled_from(["a", "b", "c", "dd"]))
records = st.lists(st.tuples(keys, st.integers(-100, 100), st.integers(-10**6, 10**6)), max_size=30)


def streaming_aggregate(records, aggregate):
    op, outputs = harness(WindowOperator(GlobalWindows.create_with_end_of_stream_trigger(), aggregate, "aggregate"))
    feed(op, records)
    assert outputs == []
    op.time_service_manager.advance_watermark(MAX_WATERMARK)
    assert all(ts == MAX_WATERMARK for _, ts in outputs)
    return [value for value, _ in outputs]


@settings(max_examples=60, deadline=None)
@given(records)
def test_sorted_aggregate_equals_streaming(records):
    sorted_output = sorted_window_aggregate(records, SumAggregate())
    assert Counter(sorted_output) == Counter(streaming_aggregate(records, SumAggregate()))


@settings(max_examples=60, deadline=None)
@given(records, records, st.booleans())
def test_sorted_co_group_equals_streaming(lefts, rights, interleave):
    assert Counter(sorted_co_group(lefts, rights, pair_counts)) == Counter(
        streaming_co_group(lefts, rights, pair_counts, interleave))


# -- in the job runtime ------------------------------------------------------------------------
def test_end_of_stream_window_in_a_job_with_a_failover():
    """WindowOperator as a job's keyed function: with and without a failure, the committed output
    is the sorted path's (one sum per key, emitted at the end of input)."""
    from streamproof.impl.graph.job import JobSpec
    from streamproof.impl.graph.sim import Fault, simulate
    sources = [[StreamRecord(f"k{i % 5}", i, i) for i in range(s, 60, 2)] for s in (0, 1)]
    spec = JobSpec(sources, lambda: WindowOperator(GlobalWindows.create_with_end_of_stream_trigger(), SumAggregate()),
                   parallelism=2, checkpoint_interval=5)
    expected = Counter(sorted_window_aggregate([(r.key, r.value, r.timestamp) for src in sources for r in src],
                                               SumAggregate()))
    for faults in ((), (Fault("fail", at=30),)):
        result = simulate(spec, seed=3, faults=faults)
        assert Counter(result.committed) == expected and result.failovers == len(faults)


def test_none_window_contents_are_no_contents_as_in_flink():
    """Flink's WindowOperator skips a window whose state reads null, and PyFlink's reducing and
    aggregating states read None as empty: a None accumulator is created again by the next
    element, and a window whose reduced value or aggregate result is None emits nothing."""
    class ResettingSum:  # 0 resets the accumulator to None; a sum of 13 has no result
        def create_accumulator(self):
            return 0

        def add(self, value, accumulator):
            return None if value == 0 else accumulator + value

        def get_result(self, accumulator):
            return None if accumulator == 13 else accumulator

    op, outputs = harness(WindowOperator(TumblingEventTimeWindows.of(10), ResettingSum(), "aggregate"))
    feed(op, [("a", 0, 1), ("b", 5, 1), ("b", 0, 2), ("b", 2, 3), ("c", 13, 1)])
    op.time_service_manager.advance_watermark(9)
    # a: accumulator None, no window; b: None after its 0, so 2 starts afresh; c: result None
    assert [v for v, _ in outputs] == [("b", 9, 2)]
    op, outputs = harness(WindowOperator(TumblingEventTimeWindows.of(10), lambda a, b: None, "reduce"))
    feed(op, [("k", 1, 1), ("k", 2, 2), ("k", 3, 3), ("j", 1, 1), ("j", 2, 2)])
    op.time_service_manager.advance_watermark(9)
    # k reduced to None, then 3 starts afresh; j ends reduced to None: no window
    assert [v for v, _ in outputs] == [("k", 9, 3)]

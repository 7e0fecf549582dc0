"""streamproof.testing: the example-based operator harness (docs/testing.md)."""

from __future__ import annotations

import pytest

from streamproof import testing
from streamproof.flink.common import Row, Time, Types
from streamproof.flink.datastream import KeyedProcessFunction, OutputTag
from streamproof.flink.datastream.functions import ProcessFunction, ProcessWindowFunction
from streamproof.flink.datastream.state import ValueStateDescriptor
from streamproof.flink.datastream.window import EventTimeSessionWindows, TumblingEventTimeWindows
from streamproof.impl import operators as impl
from streamproof.testing import HarnessError, Record, Timer, Watermark

LATE = OutputTag("late", Types.PICKLED_BYTE_ARRAY())


class CountUntilTimer(KeyedProcessFunction):
    """Counts a key's records; an event-time timer 10 ms after the first emits (key, count), clears."""

    def open(self, ctx):
        self.count = ctx.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        if ctx.timestamp() <= ctx.timer_service().current_watermark():
            yield LATE, value
            return
        if self.count.value() is None:
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 10)
        self.count.update((self.count.value() or 0) + 1)

    def on_timer(self, timestamp, ctx):
        yield ctx.get_current_key(), self.count.value()
        self.count.clear()


class ProcessingTimeEcho(KeyedProcessFunction):
    def process_element(self, value, ctx):
        ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 5)

    def on_timer(self, timestamp, ctx):
        yield ctx.get_current_key(), timestamp


def harness(**options):
    return testing.for_keyed_process_function(CountUntilTimer, key_selector=lambda r: r[0],
                                              timestamp=lambda r: r[1], **options)


def test_records_timers_watermarks_and_side_outputs():
    h = harness()
    h.process_elements([("a", 1), ("b", 2), ("a", 3)])
    assert h.pending_timers() == [Timer(11, "a", "event"), Timer(12, "b", "event")]
    assert h.state("a") == {"count": 2} and h.num_keyed_state_entries() == 2
    h.process_watermark(11)
    assert h.get_output() == [Record(("a", 2), 11), Watermark(11)]
    h.process_element(("a", 5))  # behind the watermark: late
    assert h.side_output(LATE) == [("a", 5)] and h.side_output("late") == [("a", 5)]
    h.end_input()
    assert h.get_output()[-2:] == [Record(("b", 1), 12), Watermark(impl.MAX_WATERMARK)]
    assert h.num_event_time_timers() == 0
    with pytest.raises(HarnessError, match="input has ended"):
        h.process_element(("a", 20))


def test_processing_time_timers_fire_when_the_clock_moves():
    h = testing.for_keyed_process_function(ProcessingTimeEcho(), key=lambda r: r, processing_time=100)
    h.process_element("x")
    assert h.pending_timers() == [Timer(105, "x", "processing")]
    h.set_processing_time(104)
    assert h.output() == []
    h.set_processing_time(105)
    assert h.output() == [("x", 105)] and h.num_processing_time_timers() == 0
    with pytest.raises(HarnessError, match="cannot go back"):
        h.set_processing_time(1)


def test_snapshot_restore_gives_the_uninterrupted_output():
    straight = harness()
    straight.process_elements([("a", 1), ("b", 2), ("a", 3), ("b", 15)])
    straight.process_watermark(30)

    first = harness()
    first.process_elements([("a", 1), ("b", 2)])
    snapshot = first.snapshot()
    first.process_element(("a", 3))  # after the snapshot: lost with the failure, replayed below
    restored = harness().restore(snapshot)
    assert restored.output() == [] and restored.pending_timers() == [Timer(11, "a", "event"), Timer(12, "b", "event")]
    restored.process_elements([("a", 3), ("b", 15)])
    restored.process_watermark(30)
    restored.assert_output(straight.output())


def test_rescale_two_subtasks_into_one_and_one_into_two():
    keys = ["a", "b", "c", "d", "e", "f"]
    owners = {k: testing.subtask_for_key(k, 2) for k in keys}
    assert set(owners.values()) == {0, 1}
    subtasks = [harness(parallelism=2, subtask=i) for i in range(2)]
    for t, k in enumerate(keys):
        subtasks[owners[k]].process_element((k, t))
    with pytest.raises(HarnessError, match="which subtask"):
        subtasks[1 - owners["a"]].process_element(("a", 1))
    snapshots = [s.snapshot() for s in subtasks]
    merged = harness().restore(snapshots, parallelism=1)
    assert sorted(t.key for t in merged.pending_timers()) == keys
    before_firing = merged.snapshot()
    merged.process_watermark(100)
    merged.assert_output([(k, 1) for k in keys])  # timers at 10..15: in that order
    split = [harness(parallelism=2, subtask=i).restore(before_firing, parallelism=2, subtask=i) for i in range(2)]
    assert sorted(t.key for s in split for t in s.pending_timers()) == keys
    assert all(owners[t.key] == i for i, s in enumerate(split) for t in s.pending_timers())


def test_an_interrupted_firing_can_be_stepped_and_checkpointed():
    h = harness(interruptible_timers=True)
    h.process_elements([("a", 0), ("b", 0), ("c", 0), ("d", 0)])  # four timers at 10
    h.process_watermark(10, stop_after=1)
    assert h.firing_interrupted and len(h.output()) == 1 and len(h.pending_timers()) == 3
    assert h.get_output()[-1] != Watermark(10)  # the watermark waits for the rest of the firing
    with pytest.raises(HarnessError, match="between the first and second parts"):
        h.process_element(("a", 11))  # Flink's mailbox runs the continuation before input
    h.continue_firing(stop_after=1)  # the second part, in the continuation mail
    assert h.firing_interrupted and len(h.pending_timers()) == 2
    due = h.pending_timers()[0].key
    not_fired = {t.key for t in h.pending_timers()}
    snapshot = h.snapshot()  # a checkpoint between the parts
    h.process_element((due, 11))  # a record of a key whose timer is due, before it fires
    h.continue_firing()
    assert not h.firing_interrupted and h.get_output()[-1] == Watermark(10)
    assert (due, 2) in h.output()  # the record was counted into the firing
    restored = harness(interruptible_timers=True).restore(snapshot)
    assert {t.key for t in restored.pending_timers()} == not_fired  # the due timers not fired yet
    assert restored.output() == []  # restored due event-time timers wait for the next watermark
    restored.process_watermark(10)
    assert sorted(restored.output()) == sorted((k, 1) for k in not_fired)


def test_stop_after_needs_interruptible_timers_and_continue_needs_an_interruption():
    h = harness()
    h.process_element(("a", 0))
    with pytest.raises(HarnessError, match="interruptible_timers=True"):
        h.process_watermark(10, stop_after=1)
    with pytest.raises(HarnessError, match="no timer firing is interrupted"):
        h.continue_firing()


def test_end_input_completes_an_interrupted_firing_first():
    h = harness(interruptible_timers=True)
    h.process_elements([("a", 0), ("b", 0)])
    h.process_watermark(10, stop_after=1)
    h.end_input()
    assert sorted(h.output()) == [("a", 1), ("b", 1)] and h.get_output()[-1] == Watermark(impl.MAX_WATERMARK)


def test_bad_input_is_one_line():
    with pytest.raises(HarnessError, match="int is not a KeyedProcessFunction"):
        testing.for_keyed_process_function(42, key_selector=len)
    with pytest.raises(HarnessError, match="needs key="):
        testing.for_keyed_process_function(CountUntilTimer)
    broken = testing.for_keyed_process_function(CountUntilTimer, key_selector=lambda r: r["missing"])
    with pytest.raises(HarnessError, match="the key selector raised TypeError") as error:
        broken.process_element(("a", 1), 1)
    assert "\n" not in str(error.value)
    with pytest.raises(HarnessError, match="cannot restore operator"):
        testing.for_keyed_process_function(ProcessingTimeEcho, key=len).restore(harness().snapshot())
    with pytest.raises(HarnessError, match="max parallelism"):
        harness(max_parallelism=256).restore(harness().snapshot())
    with pytest.raises(HarnessError, match="takes what snapshot"):
        harness().restore({"state": 1})
    with pytest.raises(HarnessError, match="timestamp is an int"):
        harness().process_element(("a", "late"))
    with pytest.raises(HarnessError, match="the timestamp assigner raised IndexError"):
        testing.for_keyed_process_function(CountUntilTimer, key=lambda r: r[0], timestamp=lambda r: r[5]).process_element(("a",))
    with pytest.raises(HarnessError, match="is a ProcessFunction"):
        testing.for_keyed_process_function(Doubler, key=len)
    with pytest.raises(HarnessError, match="not a ProcessFunction .a KeyedProcessFunction"):
        testing.for_process_function(CountUntilTimer)


def test_user_errors_pass_unchanged_with_the_callback_named():
    class Fails(KeyedProcessFunction):
        def process_element(self, value, ctx):
            raise ZeroDivisionError("boom")

    h = testing.for_keyed_process_function(Fails(), key=lambda r: r)
    with pytest.raises(ZeroDivisionError) as error:
        h.process_element("x")
    assert any("process_element" in note for note in error.value.__notes__)


def test_a_class_needing_arguments_asks_for_an_instance():
    class Needs(KeyedProcessFunction):
        def __init__(self, size):
            self.size = size

        def process_element(self, value, ctx):
            yield value

    with pytest.raises(HarnessError, match="give an instance"):
        testing.for_keyed_process_function(Needs, key=str)
    assert testing.for_keyed_process_function(Needs(3), key=str).process_element(1).output() == [1]


def test_each_restore_gets_a_fresh_copy_of_the_instance():
    """Attributes set outside Flink state are not restored (PyFlink deserializes a new copy)."""

    class Remembers(KeyedProcessFunction):
        seen = 0

        def process_element(self, value, ctx):
            self.seen += 1
            yield self.seen

    h = testing.for_keyed_process_function(Remembers(), key=str)
    h.process_elements([1, 2])
    h.restore(h.snapshot())
    h.process_element(3)
    assert h.output() == [1]  # a fresh instance counts from zero again


def test_a_timestamp_assigner_object_gives_the_event_time():
    from streamproof.flink.common.watermark_strategy import TimestampAssigner

    class Second(TimestampAssigner):
        def extract_timestamp(self, value, record_timestamp):
            return value[1]

    h = testing.for_keyed_process_function(CountUntilTimer, key=lambda r: r[0], timestamp=Second())
    h.process_element(("a", 4))
    assert h.pending_timers() == [Timer(14, "a", "event")]


def test_impl_style_functions_run_too():
    class Echo(impl.KeyedProcessFunction):
        def process_element(self, value, ctx, out):
            out.collect(value * 2)

    assert testing.for_keyed_process_function(Echo, key=str).process_element(2, 7).get_output() == [Record(4, 7)]


class Doubler(ProcessFunction):
    def process_element(self, value, ctx):
        if value < 0:
            yield LATE, value
        else:
            yield value * 2


def test_a_non_keyed_process_function():
    h = testing.for_process_function(Doubler())
    h.process_element(1, 5).process_element(-1).process_watermark(7)
    assert h.get_output() == [Record(2, 5), Watermark(7)] and h.side_output(LATE) == [-1]
    assert h.restore(h.snapshot()).output() == []
    assert testing.harness(Doubler).process_element(3).output() == [6]


class SessionSize(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield key, context.window().start, context.window().end, len(list(elements))


def test_a_session_window():
    h = testing.for_window(EventTimeSessionWindows.with_gap(Time.milliseconds(10)), SessionSize(),
                           key_selector=lambda r: r[0], timestamp=lambda r: r[1])
    h.process_elements([("a", 1), ("a", 5), ("b", 3), ("a", 30)])
    h.process_watermark(20)
    assert h.get_output() == [Record(("b", 3, 13, 1), 12), Record(("a", 1, 15, 2), 14), Watermark(20)]
    h.end_input()
    assert h.output()[-1] == ("a", 30, 40, 1)


def test_a_late_window_firing_carries_the_late_elements_timestamp():
    """PyFlink runs windows in its own Python WindowOperator: the results of a firing caused by an
    element (here a late one within the allowed lateness) are emitted with that element's
    timestamp (RunnerInputHandler), those of a timer with the timer's; Java's WindowOperator would
    stamp window.maxTimestamp()."""
    h = testing.for_window(TumblingEventTimeWindows.of(Time.milliseconds(10)), lambda a, b: (a[0], a[1] + b[1]),
                           key=lambda r: r[0], allowed_lateness=5, late_tag=LATE)
    h.process_element(("a", 1), 1).process_element(("a", 2), 2).process_watermark(10)
    h.process_element(("a", 3), 3)  # late, within the lateness: fires the window again
    h.process_watermark(20)
    h.process_element(("a", 4), 4)  # past the lateness: to the late side output
    assert h.get_output() == [Record(("a", 3), 9), Watermark(10), Record(("a", 6), 3), Watermark(20)]
    assert h.side_output(LATE) == [("a", 4)]


def test_assert_output_orders_what_flink_orders():
    h = harness()
    h.process_elements([("b", 0), ("a", 0), ("c", 5)])
    h.process_watermark(20)
    h.assert_output([("a", 1), ("b", 1), ("c", 1)])  # a and b fire at one timestamp: any order
    with pytest.raises(AssertionError, match="another order"):
        h.assert_output([("c", 1), ("a", 1), ("b", 1)])  # c fires later
    h.assert_output([("c", 1), ("a", 1), ("b", 1)], ordered=False)
    with pytest.raises(AssertionError, match="missing 1: \\('d', 1\\); unexpected 1: \\('c', 1\\)"):
        h.assert_output([("a", 1), ("b", 1), ("d", 1)])
    h.assert_output([Record(("a", 1), 10), Record(("b", 1), 10), Record(("c", 1), 15), Watermark(20)])
    strictly = list(h.output())
    h.assert_output(strictly, ordered=True)


def test_a_whole_job(tmp_path):
    job = tmp_path / "doubling_job.py"
    job.write_text(
        "from pyflink.datastream import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "env.from_collection([1, 2, 3]).map(lambda x: x * 2).print()\n"
        "env.execute('doubling')\n")
    h = testing.for_job(str(job))
    result = h.run()
    assert h.sinks == result.sinks and len(result.sinks) == 1
    result.assert_output([2, 4, 6])
    with pytest.raises(AssertionError):
        result.assert_output([2, 4])
    with pytest.raises(HarnessError, match="no sink named"):
        result.output("nope")
    with pytest.raises(HarnessError, match="watermarks="):
        h.run(watermarks="sometimes")


def test_genuine_pyflink_functions_and_assigners():
    pyflink = pytest.importorskip("pyflink.datastream", reason="apache-flink's Python API is not installed")
    from pyflink.common import Time as FlinkTime
    from pyflink.common import Types as FlinkTypes
    from pyflink.datastream.functions import ProcessWindowFunction as FlinkProcessWindowFunction
    from pyflink.datastream.state import ValueStateDescriptor as FlinkValueStateDescriptor
    from pyflink.datastream.window import SlidingEventTimeWindows

    tag = pyflink.OutputTag("odd", FlinkTypes.STRING())

    class Counts(pyflink.KeyedProcessFunction):
        def open(self, ctx):
            self.seen = ctx.get_state(FlinkValueStateDescriptor("seen", FlinkTypes.LONG()))

        def process_element(self, value, ctx):
            self.seen.update((self.seen.value() or 0) + 1)
            if value == "odd":
                yield tag, value
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 1)

        def on_timer(self, timestamp, ctx):
            yield ctx.get_current_key(), self.seen.value()

    h = testing.for_keyed_process_function(Counts, key_selector=lambda v: v)
    h.process_element("even", 1).process_element("odd", 1).process_element("even", 2).process_watermark(5)
    assert h.get_output() == [Record(("even", 2), 2), Record(("odd", 1), 2), Record(("even", 2), 3), Watermark(5)]
    assert h.side_output(tag) == ["odd"] and h.state("even") == {"seen": 2}

    class Size(FlinkProcessWindowFunction):
        def process(self, key, context, elements):
            yield key, context.window().start, len(list(elements))

    w = testing.for_window(SlidingEventTimeWindows.of(FlinkTime.milliseconds(10), FlinkTime.milliseconds(5)), Size(),
                           key_selector=lambda r: r[0], timestamp=lambda r: r[1])
    w.process_elements([("a", 1), ("a", 2), ("a", 12)]).end_input()
    assert w.output() == [("a", -5, 2), ("a", 0, 2), ("a", 5, 1), ("a", 10, 1)]


class ChainedProcessingTimers(KeyedProcessFunction):
    """Each processing-time timer registers the next one 10 ms later, three in all."""

    def process_element(self, value, ctx):
        ctx.timer_service().register_processing_time_timer(value)

    def on_timer(self, timestamp, ctx):
        yield ctx.get_current_key(), timestamp
        if timestamp < 30:
            ctx.timer_service().register_processing_time_timer(timestamp + 10)


def test_every_processing_time_timer_due_fires_in_one_clock_step():
    """Timers due by the new time fire in one set_processing_time, also those registered or made
    the head by a timer that fired (Flink's TestProcessingTimeService loops until none is due)."""
    h = testing.for_keyed_process_function(ChainedProcessingTimers, key=lambda v: "k")
    h.process_element(10)
    h.set_processing_time(25)
    assert h.output() == [("k", 10), ("k", 20)] and h.pending_timers() == [Timer(30, "k", "processing")]
    two = testing.for_keyed_process_function(ProcessingTimeEcho, key=lambda v: v)
    two.process_element("a")
    two.set_processing_time(2)
    two.process_element("b")  # timers at 5 and 7: two physical timers, one after the other
    two.set_processing_time(10)
    assert two.output() == [("a", 5), ("b", 7)]


def test_a_restored_processing_time_timer_already_due_fires_at_once():
    h = testing.for_keyed_process_function(ProcessingTimeEcho, key=lambda v: v)
    h.process_element("a")  # a timer at 5
    snapshot = h.snapshot()
    h.set_processing_time(100)
    assert h.output() == [("a", 5)]
    h.restore(snapshot)  # the clock goes on at 100: the restored timer is due
    assert h.output() == [("a", 5)] and h.pending_timers() == []


def test_the_flink_trainings_rides_and_fares_unit_test():
    """flink-training's RidesAndFaresUnitTest (KeyedTwoInputStreamOperatorTestHarness around
    CoStreamFlatMap(EnrichmentFunction)), in Python: state is created by the first of a ride and
    its fare and cleared by the second, which emits the pair."""
    pytest.importorskip("pyflink.datastream", reason="the corpus job imports apache-flink's Python API")
    from examples.jobs.real.rides_and_fares import EnrichmentFunction, RideAndFare, TaxiFare, TaxiRide

    ride, fare = TaxiRide(1, True, 1000, 7), TaxiFare(1, 1000, 10.0)
    for first, second in (("ride", "fare"), ("fare", "ride")):
        h = testing.for_keyed_co_process_function(EnrichmentFunction, lambda r: r.rideId, lambda f: f.rideId)
        feed = {"ride": lambda: h.process_element1(ride, ride.eventTime),
                "fare": lambda: h.process_element2(fare, fare.startTime)}
        feed[first]()
        assert h.num_keyed_state_entries() > 0
        feed[second]()
        assert h.num_keyed_state_entries() == 0
        assert h.extract_output_stream_records() == [Record(RideAndFare(ride, fare), 1000)]



def test_a_keyed_co_process_function_has_one_timer_service_and_a_watermark_per_input():
    from streamproof.flink.datastream.functions import KeyedCoProcessFunction

    class Timeout(KeyedCoProcessFunction):
        def open(self, ctx):
            self.seen = ctx.get_state(ValueStateDescriptor("seen", Types.LONG()))

        def process_element1(self, value, ctx):
            self.seen.update((self.seen.value() or 0) + 1)
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 5)

        def process_element2(self, value, ctx):
            self.seen.update((self.seen.value() or 0) + 10)

        def on_timer(self, timestamp, ctx):
            yield ctx.get_current_key(), self.seen.value()

    h = testing.for_keyed_co_process_function(Timeout, lambda v: v[0], lambda v: v[0], timestamp=lambda v: v[1])
    h.process_element1(("a", 1)).process_element2(("a", 2))
    h.process_watermark1(10)
    assert h.output() == [] and h.current_watermark() < 6  # the second input holds the watermark back
    h.process_watermark2(7)
    assert h.get_output() == [Record(("a", 11), 6), Watermark(7)]
    with pytest.raises(HarnessError, match="process_element1"):
        h.process_element(("a", 3))
    restored = testing.for_keyed_co_process_function(Timeout, lambda v: v[0], lambda v: v[0]).restore(h.snapshot())
    assert restored.state("a") == {"seen": 11}

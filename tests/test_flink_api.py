"""streamproof.flink: PyFlink operators, written as in Flink's docs with only the import changed,
run on streamproof's KeyedProcessOperator through ``adapt``; PyFlink's state, Row and Time
semantics; what is refused; the per-callback limits of user code."""

from __future__ import annotations

import subprocess
import select
import sys
import time

import pytest

from streamproof.flink import CallbackLimitExceeded, UnsupportedFeature, UserCodeError, adapt, adapt_class, refusal_reason
from streamproof.flink.common import Row, Time, Types
from streamproof.flink.common.time import Duration
from streamproof.flink.datastream import KeyedProcessFunction, OutputTag, ProcessFunction, RuntimeContext, TimeDomain
from streamproof.flink.datastream.functions import AggregateFunction, KeyedCoProcessFunction, MapFunction, ReduceFunction
from streamproof.flink.datastream.state import (
    AggregatingStateDescriptor, ListStateDescriptor, MapStateDescriptor, ReducingStateDescriptor, StateTtlConfig,
    ValueStateDescriptor,
)
from streamproof.impl import operators as impl
from streamproof.impl.state.key_groups import KeyGroupRange
from streamproof.impl.operators.keyed_process_operator import KeyedProcessOperator, StreamRecord
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService


def make(function, **limits):
    out = []
    clock = ManualProcessingTimeService(start=0)
    op = KeyedProcessOperator(adapt(function), max_parallelism=128, key_group_range=KeyGroupRange(0, 127),
                              processing_time_service=clock, emit=lambda v, ts: out.append((v, ts)), **limits)
    op.open()
    return op, out, clock


def feed(op, key, value, ts):
    op.process_element(StreamRecord(key, value, ts))


# -- Flink's "Process Function" example (Python), imports changed ------------------------------
class CountWithTimeoutFunction(KeyedProcessFunction):
    """Flink docs, "The KeyedProcessFunction" example: emits (key, count) for keys that saw no
    update for one minute of event time."""

    def __init__(self):
        self.state = None

    def open(self, runtime_context: RuntimeContext):
        self.state = runtime_context.get_state(ValueStateDescriptor(
            "my_state", Types.ROW([Types.STRING(), Types.LONG(), Types.LONG()])))

    def process_element(self, value, ctx: 'KeyedProcessFunction.Context'):
        current = self.state.value()
        if current is None:
            current = Row(value.f1, 0, 0)
        current[1] += 1
        current[2] = ctx.timestamp()
        self.state.update(current)
        ctx.timer_service().register_event_time_timer(current[2] + 60000)

    def on_timer(self, timestamp: int, ctx: 'KeyedProcessFunction.OnTimerContext'):
        result = self.state.value()
        if timestamp == result[2] + 60000:
            yield result[0], result[1]


def test_count_with_timeout_from_the_flink_docs():
    op, out, _ = make(CountWithTimeoutFunction())
    value = Row(f0=1, f1="a")  # sorted named fields, as PyFlink
    feed(op, "a", value, 1000)
    feed(op, "a", value, 2000)
    feed(op, "b", Row(f0=1, f1="b"), 3000)
    op.time_service_manager.advance_watermark(61_000)  # a's first timer: stale, nothing
    assert out == []
    op.time_service_manager.advance_watermark(70_000)
    assert out == [(("a", 2), 62_000), (("b", 1), 63_000)]


class FraudDetector(KeyedProcessFunction):
    """The fraud-detection walkthrough, Python: a small transaction then a large one within a
    minute (processing time) is an alert; alerts also go to a side output."""

    SMALL, LARGE, ONE_MINUTE = 1.00, 500.00, 60 * 1000
    ALERTS = OutputTag("alerts", Types.STRING())

    def open(self, runtime_context: RuntimeContext):
        self.flag_state = runtime_context.get_state(ValueStateDescriptor("flag", Types.BOOLEAN()))
        self.timer_state = runtime_context.get_state(ValueStateDescriptor("timer-state", Types.LONG()))

    def process_element(self, value, ctx):
        last_was_small = self.flag_state.value()
        if last_was_small is not None:
            if value > self.LARGE:
                yield ctx.get_current_key()
                yield self.ALERTS, f"alert {ctx.get_current_key()}"
            self.clean_up(ctx)
        if value < self.SMALL:
            self.flag_state.update(True)
            timer = ctx.timer_service().current_processing_time() + self.ONE_MINUTE
            ctx.timer_service().register_processing_time_timer(timer)
            self.timer_state.update(timer)

    def on_timer(self, timestamp, ctx):
        assert ctx.time_domain() == TimeDomain.PROCESSING_TIME
        self.timer_state.clear()
        self.flag_state.clear()

    def clean_up(self, ctx):
        timer = self.timer_state.value()
        ctx.timer_service().delete_processing_time_timer(timer)
        self.timer_state.clear()
        self.flag_state.clear()


def test_fraud_detector_with_boolean_value_state_timers_and_a_side_output():
    op, out, clock = make(FraudDetector())
    function = op.function.function
    feed(op, "acct-1", 0.5, 0)
    assert function.flag_state.value() is True
    feed(op, "acct-1", 600.0, 1)  # small then large: alert
    feed(op, "acct-2", 0.5, 2)
    clock.advance_to(60_001)  # acct-2's flag expires
    feed(op, "acct-2", 600.0, 3)  # no alert any more
    assert out == [("acct-1", 1)]
    assert op.side_outputs == [("alerts", "alert acct-1", 1)]
    op.key_context.set_current_key("acct-2")
    assert function.flag_state.value() is None and function.timer_state.value() is None


def test_time_domain_of_event_time_timers_and_the_contexts():
    seen = []

    class Domains(KeyedProcessFunction):
        def process_element(self, value, ctx):
            assert not hasattr(ctx, "time_domain")
            ctx.timer_service().register_event_time_timer(10)
            ctx.timer_service().register_processing_time_timer(5)

        def on_timer(self, timestamp, ctx):
            seen.append((timestamp, ctx.time_domain(), ctx.get_current_key(), ctx.timestamp()))
            return [timestamp]  # a returned iterable is output, as PyFlink iterates it

    op, out, clock = make(Domains())
    feed(op, "k", 1, 0)
    clock.advance_to(5)
    op.time_service_manager.advance_watermark(10)
    assert seen == [(5, TimeDomain.PROCESSING_TIME, "k", 5), (10, TimeDomain.EVENT_TIME, "k", 10)]
    assert out == [(5, 5), (10, 10)]


def test_returning_a_non_iterable_is_a_one_line_type_error():
    class ReturnsInt(KeyedProcessFunction):
        def process_element(self, value, ctx):
            return 5

    op, _, _ = make(ReturnsInt())
    with pytest.raises(TypeError, match="ReturnsInt.process_element returned 5"):
        feed(op, "k", 1, 0)


# -- state semantics --------------------------------------------------------------------------
class Sum(ReduceFunction):
    def reduce(self, a, b):
        return a + b


class Average(AggregateFunction):
    def create_accumulator(self):
        return [0, 0]

    def add(self, value, accumulator):
        accumulator[0] += value
        accumulator[1] += 1
        return accumulator

    def get_result(self, accumulator):
        return accumulator[0] / accumulator[1]

    def merge(self, a, b):
        return [a[0] + b[0], a[1] + b[1]]


class AllStates(KeyedProcessFunction):
    def open(self, rc):
        self.value = rc.get_state(ValueStateDescriptor("v", Types.PICKLED_BYTE_ARRAY()))
        self.list = rc.get_list_state(ListStateDescriptor("l", Types.INT()))
        self.map = rc.get_map_state(MapStateDescriptor("m", Types.STRING(), Types.LIST(Types.INT())))
        self.reducing = rc.get_reducing_state(ReducingStateDescriptor("r", Sum(), Types.LONG()))
        self.reducing_fn = rc.get_reducing_state(ReducingStateDescriptor("rf", lambda a, b: max(a, b), Types.LONG()))
        self.agg = rc.get_aggregating_state(AggregatingStateDescriptor("a", Average(), Types.PICKLED_BYTE_ARRAY()))
        self.rc = rc

    def process_element(self, value, ctx):
        return None


def state_op():
    op, out, _ = make(AllStates())
    op.key_context.set_current_key("k")
    return op, op.function.function


def test_value_state_is_none_when_unset_and_copied_on_write_and_read():
    _, f = state_op()
    assert f.value.value() is None  # a Types.X() is never a default
    stored = {"xs": [1]}
    f.value.update(stored)
    stored["xs"].append(2)  # mutating what was written does not change state
    read = f.value.value()
    assert read == {"xs": [1]}
    read["xs"].append(3)  # nor mutating what was read
    assert f.value.value() == {"xs": [1]}
    f.value.update(None)
    assert f.value.value() is None


def test_list_state():
    _, f = state_op()
    assert list(f.list.get()) == [] and list(f.list) == []
    f.list.add(1)
    f.list.add_all([2, 3])
    assert list(f.list) == [1, 2, 3]
    f.list.update([7])
    assert list(f.list.get()) == [7]
    with pytest.raises(TypeError, match="not a int"):
        f.list.add("x")  # Flink's IntSerializer would reject it
    f.list.clear()
    assert list(f.list.get()) == []


def test_map_state():
    _, f = state_op()
    assert f.map.is_empty() and f.map.get("nope") is None
    f.map.put("a", [1])
    f.map.put_all({"b": [2], "c": [3]})
    f.map["d"] = [4]
    assert f.map.contains("a") and "b" in f.map and f.map["c"] == [3]
    assert sorted(f.map.keys()) == ["a", "b", "c", "d"] and sorted(f.map) == ["a", "b", "c", "d"]
    assert sorted(f.map.values()) == [[1], [2], [3], [4]]
    assert sorted(f.map.items()) == [("a", [1]), ("b", [2]), ("c", [3]), ("d", [4])]
    f.map.get("a").append(99)
    assert f.map.get("a") == [1]
    f.map.remove("a")
    del f.map["b"]
    f.map.remove("never-there")
    assert sorted(f.map.keys()) == ["c", "d"] and not f.map.is_empty()
    f.map.clear()
    assert f.map.is_empty()


def test_reducing_and_aggregating_state():
    _, f = state_op()
    assert f.reducing.get() is None and f.agg.get() is None
    for v in (1, 2, 3):
        f.reducing.add(v)
        f.reducing_fn.add(v)
        f.agg.add(v)
    assert f.reducing.get() == 6 and f.reducing_fn.get() == 3 and f.agg.get() == 2.0
    f.agg.add(None)  # PyFlink: adding None clears aggregating state
    assert f.agg.get() is None
    f.reducing.clear()
    assert f.reducing.get() is None


def test_state_is_per_key_and_checkpointed():
    op, f = state_op()
    f.value.update(Row(name="x", n=1))
    op.key_context.set_current_key("other")
    assert f.value.value() is None
    snapshot = op.snapshot_state()
    restored, _, _ = make(AllStates())
    restored.state_backend.restore(snapshot.keyed_state)
    restored.key_context.set_current_key("k")
    assert restored.function.function.value.value() == Row(name="x", n=1)


def test_float_state_is_single_precision_once_checkpointed_and_types_are_checked():
    """PyFlink's state cache hands back the double written to FLOAT state; its checkpoint (the
    backend's snapshot) holds Java's float (docs/decisions.md, "Types.FLOAT() state")."""
    class F(KeyedProcessFunction):
        def open(self, rc):
            self.f = rc.get_state(ValueStateDescriptor("f", Types.FLOAT()))
            self.i = rc.get_state(ValueStateDescriptor("i", Types.INT()))

        def process_element(self, value, ctx):
            pass

    op, _, _ = make(F())
    op.key_context.set_current_key("k")
    f = op.function.function
    f.f.update(0.1)
    assert f.f.value() == 0.1 and type(f.f.value()) is float
    [checkpointed] = [tables["f"]["k"] for tables in op.state_backend.snapshot().values() if "f" in tables]
    assert type(checkpointed) is float and checkpointed != 0.1 and abs(checkpointed - 0.1) < 1e-7
    with pytest.raises(TypeError, match="F state 'i'.*32-bit int"):
        f.i.update(2 ** 40)


def test_runtime_context_answers_what_pyflink_answers():
    op, f = state_op()
    rc = f.rc
    assert rc.get_index_of_this_subtask() == 0 and rc.get_number_of_parallel_subtasks() == 1
    assert rc.get_max_number_of_parallel_subtasks() == 128 and rc.get_attempt_number() == 0
    assert "AllStates" in rc.get_task_name() and rc.get_task_name_with_subtasks().endswith("(1/1)")
    assert rc.get_job_parameter("x", "dflt") == "dflt"
    rc.get_metrics_group().add_group("g").counter("c").inc()
    with pytest.raises(ValueError, match="already in use"):
        rc.get_list_state(ListStateDescriptor("v", Types.INT()))


# -- Row, Time, Types ---------------------------------------------------------------------------
def test_row_behaves_as_pyflinks():
    row = Row(name="Alice", age=11)
    assert repr(row) == "Row(age=11, name='Alice')" and row.name == "Alice" and row["age"] == 11 and row[0] == 11
    assert row.as_dict() == {"name": "Alice", "age": 11} and row == Row(age=11, name="Alice")
    assert Row(1, 2) != Row(a=1, b=2) and Row(1, 2) == Row(1, 2) and hash(Row(1, 2)) == hash((1, 2))
    Person = Row("name", "age")
    assert Person("Bob", 3).name == "Bob" and 11 in row
    with pytest.raises(AttributeError):
        row.missing


def test_time_and_duration():
    assert Time.milliseconds(5).to_milliseconds() == 5
    assert Time.seconds(2).to_milliseconds() == 2000 and Time.minutes(1).to_milliseconds() == 60_000
    assert Time.hours(1).to_milliseconds() == 3_600_000 and Time.days(1).to_milliseconds() == 86_400_000
    assert Time.seconds(1) == Time.milliseconds(1000) and str(Time.seconds(1)) == "1000 ms"
    assert Duration.of_seconds(1) == Duration.of_millis(1000)


def test_types_describe_types_and_are_not_values():
    assert Types.INT() == Types.INT() and Types.INT() != Types.LONG()
    named = Types.ROW_NAMED(["a", "b"], [Types.STRING(), Types.INT()])
    assert named.get_field_names() == ["a", "b"] and named.get_field_index("b") == 1
    assert Types.TUPLE([Types.INT()]) == Types.TUPLE([Types.INT()])
    for t in (Types.MAP(Types.STRING(), Types.LONG()), Types.LIST(Types.INT()), Types.BASIC_ARRAY(Types.INT()),
              Types.SQL_TIMESTAMP(), Types.PICKLED_BYTE_ARRAY(), Types.BOOLEAN(), Types.DOUBLE()):
        assert not isinstance(t, (int, float, str, bool, list, dict))


# -- refusals -------------------------------------------------------------------------------------
class WithTtl(KeyedProcessFunction):
    def open(self, rc):
        descriptor = ValueStateDescriptor("x", Types.LONG())
        descriptor.enable_time_to_live(StateTtlConfig.new_builder(Time.seconds(1))
                                       .set_update_type(StateTtlConfig.UpdateType.OnCreateAndWrite).build())
        self.x = rc.get_state(descriptor)

    def process_element(self, value, ctx):
        pass


TTL_DESCRIPTOR = ValueStateDescriptor("hidden", Types.LONG())
TTL_DESCRIPTOR.enable_time_to_live(StateTtlConfig.new_builder(Time.days(1)).build())


class HiddenTtl(KeyedProcessFunction):
    def open(self, rc):
        self.x = rc.get_state(TTL_DESCRIPTOR)  # enabled outside the class: found when used

    def process_element(self, value, ctx):
        pass


def test_state_ttl_is_supported_statically_and_where_used():
    """Issue 29: TTL is run (tests/test_state_ttl.py has the semantics), no longer refused."""
    config = StateTtlConfig.new_builder(Time.seconds(1)).set_update_type(
        StateTtlConfig.UpdateType.OnReadAndWrite).build()
    assert config.get_ttl() == Time.seconds(1) and config.is_enabled()
    assert refusal_reason(WithTtl) is None and refusal_reason(HiddenTtl) is None
    for function in (WithTtl(), HiddenTtl()):
        op, _, _ = make(function)
        assert type(op.function.function.x).__name__ == "TtlValueState"


class Mapper(MapFunction):
    def map(self, value):
        return value


class Plain(ProcessFunction):
    def process_element(self, value, ctx):
        yield value


class TwoInputs(KeyedCoProcessFunction):
    def process_element1(self, value, ctx):
        pass

    def process_element2(self, value, ctx):
        pass


@pytest.mark.parametrize("cls, words", [
    (Mapper, "only keyed process functions"), (Plain, "non-keyed DataStream"), (TwoInputs, "two-input"),
    (int, "is not a KeyedProcessFunction"),
])
def test_other_functions_are_refused_in_one_line(cls, words):
    reason = refusal_reason(cls)
    assert words in reason and "\n" not in reason
    with pytest.raises(UnsupportedFeature):
        adapt_class(cls)


def test_impl_style_functions_pass_unchanged():
    from tests.certify_operators import GoodSum
    good = GoodSum()
    assert adapt(good) is good and adapt_class(GoodSum) is GoodSum and refusal_reason(GoodSum) is None
    adapted = adapt_class(CountWithTimeoutFunction)
    assert issubclass(adapted, impl.KeyedProcessFunction) and adapted.__name__ == "CountWithTimeoutFunction"
    assert isinstance(adapted().function, CountWithTimeoutFunction)


def test_impl_style_state_api_gained_pyflinks_operations():
    class ImplStyle(impl.KeyedProcessFunction):
        def open(self, ctx):
            self.l = ctx.get_list_state(impl.ListStateDescriptor("l"))
            self.m = ctx.get_map_state(impl.MapStateDescriptor("m"))
            self.r = ctx.get_reducing_state(impl.ReducingStateDescriptor("r", lambda a, b: a + b))
            self.a = ctx.get_aggregating_state(impl.AggregatingStateDescriptor("a", Average()))

        def process_element(self, value, ctx, out):
            self.l.add_all([value, value])
            self.m.put_all({value: 1})
            self.r.add(value)
            self.a.add(value)
            out.collect((list(self.l), list(self.m), self.m.values(), self.r.get(), self.a.get()))
            ctx.output("side", value)

    op, out, _ = make(ImplStyle())
    feed(op, "k", 2, 0)
    feed(op, "k", 4, 1)
    assert out[-1] == (([2, 2, 4, 4], [2, 4], [1, 1], 6, 3.0), 1)
    assert op.side_outputs == [("side", 2, 0), ("side", 4, 1)]


# -- limits of user code --------------------------------------------------------------------------
class Flood(KeyedProcessFunction):
    def process_element(self, value, ctx):
        while True:
            yield value


class TimerFlood(KeyedProcessFunction):
    def process_element(self, value, ctx):
        t = 0
        while True:
            t += 1
            ctx.timer_service().register_event_time_timer(t)


class Spin(KeyedProcessFunction):
    def process_element(self, value, ctx):
        while True:
            pass


class SwallowingSpin(KeyedProcessFunction):
    def process_element(self, value, ctx):
        while True:
            try:
                while True:
                    pass
            except Exception:
                pass


class Exits(KeyedProcessFunction):
    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(1)

    def on_timer(self, timestamp, ctx):
        sys.exit(3)


def one_line(error):
    assert "\n" not in str(error)
    return str(error)


def test_a_flooding_operator_is_stopped():
    op, out, _ = make(Flood(), max_outputs_per_callback=1000)
    with pytest.raises(CallbackLimitExceeded) as info:
        feed(op, "k", 1, 0)
    assert one_line(info.value) == "Flood.process_element emitted more than 1000 outputs for one element"
    assert len(out) == 1000


def test_a_timer_flooding_operator_is_stopped():
    op, _, _ = make(TimerFlood())
    with pytest.raises(CallbackLimitExceeded) as info:
        feed(op, "k", 1, 0)
    assert one_line(info.value) == "TimerFlood.process_element registered more than 10000 timers for one element"


@pytest.mark.parametrize("cls", [Spin, SwallowingSpin])
def test_an_infinite_loop_is_interrupted(cls):
    op, _, _ = make(cls(), max_seconds_per_callback=0.5)
    started = time.monotonic()
    with pytest.raises(CallbackLimitExceeded) as info:
        feed(op, "k", 1, 0)
    assert one_line(info.value) == f"{cls.__name__}.process_element ran longer than 0.5 s for one element"
    assert time.monotonic() - started < 5


class Paused(KeyedProcessFunction):
    """A callback the machine pauses: past its time limit in wall-clock time, with no CPU used
    (a busy machine, a garbage collection); select is not the job's clock, so it really waits."""

    def process_element(self, value, ctx):
        select.select([], [], [], 0.6)
        yield value


class Blocked(KeyedProcessFunction):
    def process_element(self, value, ctx):
        select.select([], [], [], 60)


def test_a_paused_callback_is_not_stopped():
    """Three times its limit in wall-clock time, but no CPU time: a loaded machine pausing a callback
    must not turn a verdict into CallbackLimitExceeded (seen: a 5 s limit fired during a collection
    while the suite and a seed matrix shared the two cores)."""
    op, out, _ = make(Paused(), max_seconds_per_callback=0.2)
    feed(op, "k", 1, 0)
    assert out == [(1, 0)]


def test_a_blocked_callback_is_stopped_after_blocked_factor_times_its_limit():
    from streamproof.impl.operators.user_code import BLOCKED_FACTOR

    op, _, _ = make(Blocked(), max_seconds_per_callback=0.1)
    started = time.monotonic()
    with pytest.raises(CallbackLimitExceeded) as info:
        feed(op, "k", 1, 0)
    assert one_line(info.value) == "Blocked.process_element ran longer than 0.1 s for one element"
    assert time.monotonic() - started >= BLOCKED_FACTOR * 0.1 * 0.9


def test_sys_exit_is_a_user_code_error():
    op, _, _ = make(Exits())
    feed(op, "k", 1, 0)
    with pytest.raises(UserCodeError) as info:
        op.time_service_manager.advance_watermark(1)
    assert one_line(info.value) == "Exits.on_timer called sys.exit(3)"


def test_other_exceptions_keep_their_type_with_a_note():
    class Boom(KeyedProcessFunction):
        def process_element(self, value, ctx):
            raise KeyError("boom")

    op, _, _ = make(Boom())
    with pytest.raises(KeyError) as info:
        feed(op, "k", 1, 0)
    assert info.value.__notes__ == ["in Boom.process_element"]


def test_the_alarm_is_given_back_and_others_alarms_are_not_clobbered():
    import signal
    from streamproof.spark_harness.seedrun import Deadline

    op, _, _ = make(Spin(), max_seconds_per_callback=0.3)
    with pytest.raises(CallbackLimitExceeded):
        feed(op, "k", 1, 0)
    time.sleep(0.6)  # idle: the watchdog gives SIGALRM back
    assert signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None)
    op, _, _ = make(Spin(), max_seconds_per_callback=0.3)
    with pytest.raises(CallbackLimitExceeded):
        with Deadline(60.0):  # someone else's alarm: left alone, the limit takes a CPU-time timer
            handler = signal.getsignal(signal.SIGALRM)
            try:
                feed(op, "k", 1, 0)
            finally:
                assert signal.getsignal(signal.SIGALRM) is handler and signal.getitimer(signal.ITIMER_REAL)[0] > 30
    from streamproof.impl.operators.user_code import release_callback_watchdog
    release_callback_watchdog()
    assert signal.getsignal(signal.SIGPROF) in (signal.SIG_DFL, None) and signal.getitimer(signal.ITIMER_PROF)[0] == 0


def test_an_alarm_left_armed_does_not_break_a_callback_without_a_limit():
    """CI regression: an alarm armed by a limited callback went off inside a later callback of an
    operator without a limit (another test, same worker) and raised TypeError (float + None)."""
    import signal

    from streamproof.impl.operators.keyed_process_operator import _Watchdog
    from streamproof.impl.operators.user_code import release_callback_watchdog

    class Busy(KeyedProcessFunction):
        def process_element(self, value, ctx):
            for _ in range(5_000_000):  # busy (a CPU-time alarm goes off too); time.* is the job's clock here
                pass
            yield value

    _Watchdog.arm(0.05, time.perf_counter())  # armed, as a limited callback leaves it
    unlimited, _, _ = make(Busy())
    feed(unlimited, "k", 1, 0)  # the alarm goes off inside this callback: released, nothing raised
    assert signal.getitimer(_Watchdog.which)[0] == 0
    release_callback_watchdog()


def test_streamproof_flink_imports_nothing_heavy():
    code = ("import sys, streamproof.flink, streamproof.flink.datastream, streamproof.flink.common; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('hypothesis', 'z3', 'click', 'pyflink')))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"


def test_state_values_are_copied_as_a_round_trip_would_unshared_and_equal():
    """``runtime_context._copy`` (what state and outputs get: a serialize/deserialize round trip) copies
    atoms, containers, rows and plain objects directly, anything with pickling hooks by deepcopy."""
    import datetime

    from streamproof.flink.runtime_context import _copy
    from streamproof.flink.common import Row

    class Plain:
        def __init__(self):
            self.heap = [(1, Row(id="a", ts=1))]

    class Hooked:
        def __init__(self):
            self.items = [1]

        def __deepcopy__(self, memo):
            copied = Hooked()
            copied.items = ["deep"]
            return copied

    value = {"rows": [Row(id="a", values=[1, 2])], "t": (1, [2]), "s": {3}, "p": Plain(), "h": Hooked(),
             "d": datetime.datetime(2024, 1, 1)}
    copied = _copy(value)
    assert copied["rows"] == value["rows"] and copied["rows"][0] is not value["rows"][0]
    assert copied["rows"][0].values is not value["rows"][0].values and copied["rows"][0].as_dict() == {
        "id": "a", "values": [1, 2]}
    assert copied["t"] == (1, [2]) and copied["t"][1] is not value["t"][1] and copied["s"] == {3}
    assert type(copied["p"]) is Plain and copied["p"].heap == value["p"].heap and copied["p"].heap is not value["p"].heap
    assert copied["h"].items == ["deep"] and copied["d"] == value["d"]
    cycle: list = []
    cycle.append(cycle)
    assert type(_copy(cycle)) is list  # deeper than the direct copy goes: deepcopy, no recursion error


def test_an_armed_watchdog_does_not_kill_a_slow_exit(tmp_path):
    """The callback watchdog's interval timer is given back at exit: a process that used it (a
    pytest worker exploring certify properties directly) and then takes longer to shut down than
    the rest of the limit was killed by SIGALRM once Python reset its handlers (exit 142)."""
    script = tmp_path / "slow_exit.py"
    script.write_text(
        "import select, time\n"
        "from streamproof.impl.operators.user_code import _Watchdog\n"
        "class SlowToDie:\n"
        "    def __del__(self):\n"
        "        select.select([], [], [], 1.0)\n"
        "keep = SlowToDie()\n"
        "_Watchdog.arm(0.3, time.perf_counter())\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (done.returncode, done.stderr)

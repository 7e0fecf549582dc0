"""Operators for tests/test_user_clock.py: real operators that sleep and read the wall clock in
their callbacks (a throttle, a clock check), PyFlink-style and impl-style."""

import datetime
import sys
import time
import uuid
from datetime import datetime as DateTime
from random import random
from time import sleep, time as now

from hypothesis import strategies as st

from streamproof.flink.common import Row, Types
from streamproof.flink.datastream import KeyedProcessFunction, TimeDomain
from streamproof.flink.datastream.state import MapStateDescriptor, ValueStateDescriptor
from streamproof.impl import operators as impl
def _check_clock(ctx, where):
    """The wall-clock calls read the operator's processing time (else the operator fails)."""
    pt = ctx.timer_service().current_processing_time()
    seen = (time.time_ns() // 1_000_000, round(now() * 1000), round(time.monotonic() * 1000),
            round(DateTime.now(datetime.timezone.utc).timestamp() * 1000))
    if seen != (pt,) * 4:
        raise AssertionError(f"{where}: the clock read {seen}, the processing time is {pt}")


SLEEPS = [0]  # the sleeps ThrottledCounter and SleepyImpl asked for


class ThrottledCounter(KeyedProcessFunction):
    """Sleeps a second per record (a rate limit) and per timer; at the end of a record's second of
    event time emits it (one output per record, so late records and split firings cannot change the
    output multiset); a processing-time timer a second after each record checks the clock too."""

    def open(self, runtime_context):
        self.pending = runtime_context.get_map_state(MapStateDescriptor("pending", Types.LONG(), Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value, ctx):
        SLEEPS[0] += 1
        time.sleep(1)  # throttle
        _check_clock(ctx, "process_element")
        ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 1000)
        end = ctx.timestamp() // 1000 * 1000 + 999
        self.pending.put(end, [*(self.pending.get(end) or []), value[1]])
        ctx.timer_service().register_event_time_timer(end)

    def on_timer(self, timestamp, ctx):
        SLEEPS[0] += 1
        sleep(1)
        _check_clock(ctx, "on_timer")
        if ctx.time_domain() == TimeDomain.EVENT_TIME:
            for ts in self.pending.get(timestamp) or []:
                yield Row(key=ctx.get_current_key(), ts=ts, end=timestamp)
            self.pending.remove(timestamp)


class SleepyImpl(impl.KeyedProcessFunction):
    """The same in the streamproof.impl.operators.keyed_process_operator style."""

    def open(self, ctx):
        self.pending = ctx.get_map_state(impl.MapStateDescriptor("pending"))

    def process_element(self, value, ctx, out):
        SLEEPS[0] += 1
        time.sleep(1)
        _check_clock(ctx, "process_element")
        end = ctx.timestamp() // 1000 * 1000 + 999
        self.pending.put(end, [*self.pending.get(end, []), value[1]])
        ctx.timer_service().register_event_time_timer(end)

    def on_timer(self, timestamp, ctx, out):
        SLEEPS[0] += 1
        sleep(1)
        _check_clock(ctx, "on_timer")
        for ts in self.pending.get(timestamp, []):
            out.collect((ctx.get_current_key(), ts, timestamp))
        self.pending.remove(timestamp)


def records():
    return st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 5_000))


def key(record):
    return record[0]


def timestamp(record):
    return record[1]


class StampedWindowSum(KeyedProcessFunction):
    """Per key, sums the records of each second of event time and emits the sum with the wall-clock
    time it was computed at (``datetime.now()``): safe with interruptible timers (a record run
    inside a split firing of W belongs to a later second), but a split firing ends later in
    processing time, so the stamp differs (a finding, not a refusal)."""

    def open(self, runtime_context):
        self.sums = runtime_context.get_map_state(MapStateDescriptor("sums", Types.LONG(), Types.LONG()))

    def process_element(self, value, ctx):
        end = value[1] // 1000 * 1000 + 999
        if end > ctx.timer_service().current_watermark():
            self.sums.put(end, (self.sums.get(end) or 0) + 1)
            ctx.timer_service().register_event_time_timer(end)

    def on_timer(self, timestamp, ctx):
        yield ctx.get_current_key(), timestamp, self.sums.get(timestamp), DateTime.now().isoformat()
        self.sums.remove(timestamp)


class StampedCountNow(KeyedProcessFunction):
    """Counts its key's records and, a second after each, emits the count as it is when the timer
    fires, stamped with ``datetime.now()``: unsafe with interruptible timers (a record run inside a
    split firing before its key's due timer changes the count), whatever the stamp."""

    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        ctx.timer_service().register_event_time_timer(value[1] + 1000)

    def on_timer(self, timestamp, ctx):
        yield ctx.get_current_key(), timestamp, self.count.value(), DateTime.now().isoformat()


class IdentifiedWindowCount(StampedWindowSum):
    """StampedWindowSum's counts, each emitted with a fresh ``uuid4()`` id and a ``random()`` sample
    weight instead of the stamp (ids for downstream deduplication). Safe: the ids differ between
    Flink runs, but the output of a failed attempt is never committed. Certify pins each callback's
    draws to the callback (kind, key, timestamp, record), so runs compare; before, it refused
    same-output and interruptible-timers on the ids alone."""

    def on_timer(self, timestamp, ctx):
        yield str(uuid.uuid4()), ctx.get_current_key(), timestamp, self.sums.get(timestamp), round(random(), 6)
        self.sums.remove(timestamp)



class PrintingWindowSum(KeyedProcessFunction):
    """StampedWindowSum's sums without the stamp, printing what it sees (a debugging print left in,
    as in many public examples): safe, certified, its prints kept out of certify's report (one to
    stderr is printed as asked)."""

    def open(self, runtime_context):
        self.sums = runtime_context.get_map_state(MapStateDescriptor("sums", Types.LONG(), Types.LONG()))

    def process_element(self, value, ctx):
        print("got", value, "at", ctx.timestamp())
        end = value[1] // 1000 * 1000 + 999
        if end > ctx.timer_service().current_watermark():
            self.sums.put(end, (self.sums.get(end) or 0) + 1)
            ctx.timer_service().register_event_time_timer(end)

    def on_timer(self, timestamp, ctx):
        print(f"window {timestamp} of {ctx.get_current_key()}")
        print("to stderr", file=sys.stderr)
        yield ctx.get_current_key(), timestamp, self.sums.get(timestamp)
        self.sums.remove(timestamp)


class PrintingCountNow(StampedCountNow):
    """StampedCountNow printing the count its timer emits: refused (unsafe with interruptible
    timers); a replay of its counterexample shows what it printed."""

    def on_timer(self, timestamp, ctx):
        print("count now", self.count.value())
        yield from super().on_timer(timestamp, ctx)

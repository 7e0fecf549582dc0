"""PyFlink-style operators that misbehave, for tests/test_certify_input.py."""

import sys

from hypothesis import strategies as st

from streamproof.flink.common import Types
from streamproof.flink.datastream import KeyedProcessFunction
from streamproof.flink.datastream.state import ValueStateDescriptor


def records():
    return st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 100))


def key(record):
    return record[0]


def timestamp(record):
    return record[1]


class Counting(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("n", Types.LONG()))

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 10)

    def on_timer(self, timestamp, ctx):
        yield ctx.get_current_key(), self.count.value()


class WrongSignature(Counting):
    def process_element(self, value):  # PyFlink passes (value, ctx)
        yield value


class NanAndLists(Counting):
    def on_timer(self, timestamp, ctx):
        yield [ctx.get_current_key(), float("nan"), {"n": self.count.value()}]  # unhashable, NaN


class Loops(Counting):
    def process_element(self, value, ctx):
        while True:
            pass


class Floods(Counting):
    def process_element(self, value, ctx):
        while True:
            yield value


class Exits(Counting):
    def on_timer(self, timestamp, ctx):
        sys.exit(3)
        yield


class EndlessChain(Counting):
    """Each timer registers the next window's (a gap-filling chain, as an outside candle aggregator
    does): at end of input MAX_WATERMARK makes every next one due, for ever."""

    def on_timer(self, timestamp, ctx):
        ctx.timer_service().register_event_time_timer(timestamp + 60)
        yield ctx.get_current_key(), timestamp, self.count.value()


class SideOutputFromAnAttribute(Counting):
    """Main output in keyed state, but its side output counts in a Python attribute (not
    checkpointed): after a failover the side output differs."""

    def open(self, runtime_context):
        super().open(runtime_context)
        self.seen = 0

    def process_element(self, value, ctx):
        from streamproof.flink.datastream import OutputTag

        self.seen += 1
        yield OutputTag("seen", Types.LONG()), self.seen
        yield from super().process_element(value, ctx) or ()

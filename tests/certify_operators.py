"""Operators for tests/test_certify.py: a correct one and classic mistakes."""

from streamproof.impl.operators.keyed_process_operator import KeyedProcessFunction, MapStateDescriptor, ValueStateDescriptor


class GoodSum(KeyedProcessFunction):
    """Per key, the sum of values in 10-wide event-time windows, in keyed state."""
    interruptible_timers = True

    def open(self, ctx):
        self.sums = ctx.get_map_state(MapStateDescriptor("sums"))

    def process_element(self, value, ctx, out):
        end = (ctx.timestamp() // 10 + 1) * 10 - 1
        self.sums.put(end, self.sums.get(end, 0) + value)
        ctx.timer_service().register_event_time_timer(end)

    def on_timer(self, timestamp, ctx, out):
        out.collect((ctx.get_current_key(), timestamp, self.sums.get(timestamp, 0)))
        self.sums.remove(timestamp)


class InstanceCounter(GoodSum):
    """Bug: counts records in a Python attribute (not checkpointed): a failover replays records
    into a counter that kept the lost attempt's counts... or resets it."""

    def open(self, ctx):
        super().open(ctx)
        self.seen = 0

    def on_timer(self, timestamp, ctx, out):
        self.seen += 1
        out.collect((ctx.get_current_key(), timestamp, self.sums.get(timestamp, 0), self.seen))
        self.sums.remove(timestamp)


class Raises(GoodSum):
    """Bug: fails on its second window of a key."""

    def on_timer(self, timestamp, ctx, out):
        if timestamp >= 19:
            raise RuntimeError("boom in on_timer")
        super().on_timer(timestamp, ctx, out)


class NeedsArguments(GoodSum):
    def __init__(self, size):
        self.size = size


class NotAnOperator:
    pass


class CountAtFiring(KeyedProcessFunction):
    """Emits, when each record's timer fires, how many records of its key arrived so far: correct
    with timers fired in one go at a watermark, wrong once interruptible timers let later records
    in between the timers of one watermark (an alert that reads "the state now")."""

    def open(self, ctx):
        self.count = ctx.get_state(ValueStateDescriptor("count", 0))

    def process_element(self, value, ctx, out):
        self.count.update(self.count.value() + 1)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 5)

    def on_timer(self, timestamp, ctx, out):
        out.collect((ctx.get_current_key(), timestamp, self.count.value()))


RAN: list = []  # main() appends here: certify must never call it


def main():
    """A job's entry point, as a PyFlink job file has one: certify must refuse it without running it."""
    RAN.append("main")
    from streamproof.flink.datastream import StreamExecutionEnvironment  # noqa: F401 - never reached
    env = StreamExecutionEnvironment.get_execution_environment()
    env.execute("job")

"""Example operators the job scenarios run (by name, ``params.operator``)."""

from __future__ import annotations

from streamproof.impl.operators import KeyedProcessFunction, MapStateDescriptor


class WindowSum(KeyedProcessFunction):
    """Tumbling event-time windows: the sum of each key's values per window, emitted by the
    window's timer as ``(key, window end, sum)``. Per key, outputs come in window order."""

    interruptible_timers = True

    def __init__(self, size: int = 10):
        self.size = size

    def open(self, ctx) -> None:
        self.sums = ctx.get_map_state(MapStateDescriptor("sums"))

    def process_element(self, value, ctx, out) -> None:
        end = (ctx.timestamp() // self.size + 1) * self.size - 1
        self.sums.put(end, self.sums.get(end, 0) + value)
        ctx.timer_service().register_event_time_timer(end)

    def on_timer(self, timestamp, ctx, out) -> None:
        out.collect((ctx.get_current_key(), timestamp, self.sums.get(timestamp, 0)))
        self.sums.remove(timestamp)


class TimerChain(KeyedProcessFunction):
    """Each record arms a timer ``delay`` later; each firing emits ``(key, ts, hops left)`` and
    arms one more until ``hops`` firings happened: timers registered inside callbacks. (The
    output must not depend on arrival order across sources, or no reference could exist.)"""

    interruptible_timers = True

    def __init__(self, delay: int = 3, hops: int = 2):
        self.delay, self.hops = delay, hops

    def open(self, ctx) -> None:
        self.left = ctx.get_map_state(MapStateDescriptor("hops-left"))

    def process_element(self, value, ctx, out) -> None:
        ts = ctx.timestamp() + self.delay
        self.left.put(ts, max(self.left.get(ts, 0), self.hops))
        ctx.timer_service().register_event_time_timer(ts)

    def on_timer(self, timestamp, ctx, out) -> None:
        left = self.left.get(timestamp, 1) - 1
        out.collect((ctx.get_current_key(), timestamp, left))
        self.left.remove(timestamp)
        if left > 0:
            nxt = timestamp + self.delay
            self.left.put(nxt, max(self.left.get(nxt, 0), left))
            ctx.timer_service().register_event_time_timer(nxt)


class YieldingWindowSum(WindowSum):
    """WindowSum whose timer callback yields to the mailbox between announcing a window and
    emitting its sum, as operators waiting on asynchronous work do."""

    def open(self, ctx) -> None:
        super().open(ctx)
        self.executor = ctx.get_mailbox_executor()

    def on_timer(self, timestamp, ctx, out) -> None:
        key = ctx.get_current_key()
        total = self.sums.get(timestamp, 0)
        self.sums.remove(timestamp)
        self.executor.try_yield()
        out.collect((key, timestamp, total))


FUNCTIONS = {"window_sum": WindowSum, "timer_chain": TimerChain, "yielding_window_sum": YieldingWindowSum}

"""Example operators the job scenarios run (by name, ``params.operator``)."""

from __future__ import annotations

from streamproof.impl.tasks.stream_elements import SecondInput
from streamproof.impl.operators.keyed_process_operator import KeyedProcessFunction, ListStateDescriptor, MapStateDescriptor
from streamproof.impl.timers.termination import TimerTerminationAction
from streamproof.model.job import MAX_TIME, saturated, window_end


def number(value) -> int:
    """The number a record carries: the value itself, or the last field of a tuple (an upstream
    window's ``(key, end, sum)``), so that operators compose into any job graph."""
    while isinstance(value, (tuple, list)):
        value = value[-1] if value else 0
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class WindowSum(KeyedProcessFunction):
    """Tumbling event-time windows: the sum of each key's values per window, emitted by the
    window's timer as ``(key, window end, sum)``. Per key, outputs come in window order."""

    interruptible_timers = True

    def __init__(self, size: int = 10):
        self.size = size

    def open(self, ctx) -> None:
        self.sums = ctx.get_map_state(MapStateDescriptor("sums"))

    def process_element(self, value, ctx, out) -> None:
        end = window_end(ctx.timestamp(), self.size)
        self.sums.put(end, self.sums.get(end, 0) + number(value))
        ctx.timer_service().register_event_time_timer(end)

    def on_timer(self, timestamp, ctx, out) -> None:
        out.collect((ctx.get_current_key(), timestamp, self.sums.get(timestamp, 0)))
        self.sums.remove(timestamp)


class SideWindowSum(WindowSum):
    """A window sum whose odd sums go to the side output ``odd`` (``ctx.output``), even ones to
    the main output: side outputs travel with the main output to the sink and must be committed
    exactly once too (issue 31: side outputs inside the exactly-once sink's transaction)."""

    def on_timer(self, timestamp, ctx, out) -> None:
        result = (ctx.get_current_key(), timestamp, self.sums.get(timestamp, 0))
        if result[2] % 2:
            ctx.output("odd", result)
        else:
            out.collect(result)
        self.sums.remove(timestamp)


class CoWindowSum(WindowSum):
    """Two inputs (``connect``) into one keyed window sum: a second-input record's value counts a
    hundredfold, so a record delivered on the wrong input, or a window fired before the second
    input's watermark reached it, changes the output."""

    def process_element(self, value, ctx, out) -> None:
        if type(value) is SecondInput:
            value = 100 * number(value.value)
        super().process_element(value, ctx, out)


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
        if ts > MAX_TIME:
            return  # past the end of time: it would never fire (and is no Java long)
        self.left.put(ts, max(self.left.get(ts, 0), self.hops))
        ctx.timer_service().register_event_time_timer(ts)

    def on_timer(self, timestamp, ctx, out) -> None:
        left = self.left.get(timestamp, 1) - 1
        out.collect((ctx.get_current_key(), timestamp, left))
        self.left.remove(timestamp)
        if left > 0 and timestamp + self.delay <= MAX_TIME:
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


class MailingWindowSum(WindowSum):
    """WindowSum whose timer callback hands work to the mailbox (as an operator with an async
    client does): every firing puts a mail, so an interruptible firing stops after each timer."""

    def open(self, ctx) -> None:
        super().open(ctx)
        self.executor = ctx.get_mailbox_executor()

    def on_timer(self, timestamp, ctx, out) -> None:
        super().on_timer(timestamp, ctx, out)
        self.executor.execute(lambda: None, "async work")


class AsyncWindowSum(WindowSum):
    """WindowSum whose timer callback hands the window's sum to asynchronous work and waits for the
    result in the mailbox, as an async operator does (Flink's ``AsyncWaitOperator`` yields while its
    queue is full): it puts the "completion" as mail of its own executor's priority, then yields
    until that mail ran, then emits. So every firing runs mail inside its callback, and whatever
    else that yield may take (mail of priority at least the operator's) runs between the timer's
    firing and its output."""

    def open(self, ctx) -> None:
        super().open(ctx)
        self.executor = ctx.get_mailbox_executor()

    def on_timer(self, timestamp, ctx, out) -> None:
        key = ctx.get_current_key()
        total = self.sums.get(timestamp, 0)
        self.sums.remove(timestamp)
        done: list = []
        self.executor.execute(lambda: done.append(total), f"async result {timestamp}")
        while not done:
            if not self.executor.try_yield():
                raise RuntimeError(f"the async result of timer {timestamp} never came (its mail was lost)")
        out.collect((key, timestamp, done[0]))


class ProcessingTimeBuffer(KeyedProcessFunction):
    """Buffers each key's records and emits them, one output per record ``(key, ts, value)``, from
    a processing-time timer ``delay`` later (TRIGGER at end of input, FLIP-269). The output
    multiset is the input's whatever the schedule; when it leaves depends on processing time."""

    interruptible_timers = True

    def __init__(self, delay: int = 5):
        self.delay = delay

    def open(self, ctx) -> None:
        self.buffer = ctx.get_list_state(ListStateDescriptor("buffer"))

    def process_element(self, value, ctx, out) -> None:
        self.buffer.add((ctx.timestamp(), number(value)))
        now = ctx.timer_service().current_processing_time()
        ctx.timer_service().register_processing_time_timer(saturated(now + self.delay), TimerTerminationAction.TRIGGER)

    def on_timer(self, timestamp, ctx, out) -> None:
        for ts, value in self.buffer.get() or []:
            out.collect((ctx.get_current_key(), ts, value))
        self.buffer.clear()


class KeyedIdentity(KeyedProcessFunction):
    """Emits each record as it comes (a keyed operator with no timers, as FLIP-331's Process2)."""

    def process_element(self, value, ctx, out) -> None:
        out.collect(value)


def eos_window_sum():
    """Flink's ``GlobalWindows.create_with_end_of_stream_trigger()`` window summing each key's
    values: one ``(key, sum)`` per key at the end of input (FLIP-331 output-only-at-end)."""
    from streamproof.impl.operators.windows import GlobalWindows, SumAggregate, WindowOperator
    return WindowOperator(GlobalWindows.create_with_end_of_stream_trigger(), SumAggregate(number))


def count_and_sum(key, lefts, rights, out) -> None:
    """The co-group of one key: (left count, left sum, right count, right sum)."""
    out.collect((len(lefts), sum(number(v) for v in lefts), len(rights), sum(number(v) for v in rights)))


def eos_co_group():
    """FLIP-331's co_group workload: two inputs tagged by ``tag_left`` / ``tag_right``, grouped per
    key in a global window with the end-of-stream trigger: one ``(key, count_and_sum)`` per key."""
    from streamproof.impl.operators.end_of_stream import CoGroupWindowFunction
    from streamproof.impl.operators.windows import GlobalWindows, WindowOperator
    return WindowOperator(GlobalWindows.create_with_end_of_stream_trigger(), CoGroupWindowFunction(count_and_sum),
                          kind="process")


def tumbling_window_sum():
    """``TumblingEventTimeWindows.of(10)`` summing values: ``(key, window end, sum)``, as WindowSum."""
    from streamproof.impl.operators.windows import SumAggregate, TumblingEventTimeWindows, WindowOperator
    return WindowOperator(TumblingEventTimeWindows.of(10), SumAggregate(number))


FUNCTIONS = {"window_sum": WindowSum, "side_window_sum": SideWindowSum, "co_window_sum": CoWindowSum, "timer_chain": TimerChain, "yielding_window_sum": YieldingWindowSum,
             "mailing_window_sum": MailingWindowSum, "async_window_sum": AsyncWindowSum, "processing_buffer": ProcessingTimeBuffer,
             "keyed_identity": KeyedIdentity, "eos_window_sum": eos_window_sum, "tumbling_window_sum": tumbling_window_sum,
             "eos_co_group": eos_co_group}
KEYED_FUNCTIONS = FUNCTIONS

# Stateless functions of job graphs: (key, value) -> the (key, value) pairs to emit.
STATELESS_FUNCTIONS = {
    "identity": lambda key, value: [(key, value)],
    "last": lambda key, value: [(key, number(value))],
    "double": lambda key, value: [(key, 2 * number(value))],
    "even": lambda key, value: [(key, value)] if number(value) % 2 == 0 else [],
    "twice": lambda key, value: [(key, value), (key, value)],
    "rekey": lambda key, value: [(f"{key}{number(value) % 3}", number(value))],
    "tag_left": lambda key, value: [(key, ("L", value))],   # a co_group's two inputs (windows.tag_left)
    "tag_right": lambda key, value: [(key, ("R", value))],
}

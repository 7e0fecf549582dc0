"""Operators and inputs for tests/test_certify_input.py: records of the user's own shape."""

from hypothesis import strategies as st

from streamproof.flink.common import Types
from streamproof.flink.datastream import KeyedProcessFunction as PyFlinkKeyedProcessFunction
from streamproof.flink.datastream.state import ValueStateDescriptor as PyFlinkValueStateDescriptor
from streamproof.impl.operators.keyed_process_operator import KeyedProcessFunction, ValueStateDescriptor

HOUR = 3_600_000


class AmountPerWindow(KeyedProcessFunction):
    """Sums the float amounts of ``(user, amount, ts)`` records per 1-second window of event time."""

    def open(self, ctx):
        self.totals = ctx.get_map_state(__import__("streamproof.impl.operators.keyed_process_operator", fromlist=["x"]).MapStateDescriptor("t"))

    def process_element(self, value, ctx, out):
        end = ctx.timestamp() // 1000 * 1000 + 999
        if end <= ctx.timer_service().current_watermark():
            return  # its window has fired: late data is dropped (as Flink's window operator does)
        self.totals.put(end, self.totals.get(end, 0.0) + value[1])
        ctx.timer_service().register_event_time_timer(end)

    def on_timer(self, timestamp, ctx, out):
        out.collect({"user": ctx.get_current_key(), "window": timestamp, "total": [self.totals.get(timestamp)]})
        self.totals.remove(timestamp)


def transactions():
    return st.tuples(st.sampled_from(["ann", "bob", "cy"]), st.sampled_from([0.5, 1.25, 2.0]),
                     st.integers(0, 5_000))


class HourlyReminder(KeyedProcessFunction):
    """A timer an hour after each record: with records a few seconds apart it never fires before
    end of input."""

    def open(self, ctx):
        self.seen = ctx.get_state(ValueStateDescriptor("seen", 0))

    def process_element(self, value, ctx, out):
        self.seen.update(self.seen.value() + 1)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + HOUR)

    def on_timer(self, timestamp, ctx, out):
        out.collect((ctx.get_current_key(), self.seen.value()))


def list_keys(record):
    return [record[0]]  # unhashable: no key


def composite_keys(record):
    return (record[0], record[1] > 1)  # key_by(lambda r: (r.user, r.amount > 1))


NOT_A_STRATEGY = 42


class ProcessingTimeoutCount(KeyedProcessFunction):
    """Counts a key's records and reports the count one second of processing time after the
    first one (a processing-time timer)."""

    def open(self, ctx):
        self.count = ctx.get_state(ValueStateDescriptor("count", 0))

    def process_element(self, value, ctx, out):
        if self.count.value() == 0:
            ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 1000)
        self.count.update(self.count.value() + 1)

    def on_timer(self, timestamp, ctx, out):
        out.collect((ctx.get_current_key(), self.count.value()))
        self.count.clear()



class StuckOrderAlert(PyFlinkKeyedProcessFunction):
    """A PyFlink-style stuck-order alert (written for the split search's test): an order created
    pending gets an event-time timer 30 minutes later; a later update that is not pending deletes
    it; the timer alerts for an order still saved. Unsafe with interruptible timers: an on-time
    update run inside a split firing before its order's due timer deletes it (the alert is lost).
    Its timers are sparse (about one record in seven creates an order): a burst of three due
    orders is rare in one input of 12-30 records."""

    def open(self, runtime_context):
        self.order = runtime_context.get_state(PyFlinkValueStateDescriptor("order", Types.STRING()))
        self.timer = runtime_context.get_state(PyFlinkValueStateDescriptor("timer", Types.LONG()))

    def process_element(self, value, ctx):
        if value["op"] == "create" and value["status"] == "pending":
            due = ctx.timestamp() + 30 * 60 * 1000
            ctx.timer_service().register_event_time_timer(due)
            self.order.update(str(value["order"]))
            self.timer.update(due)
        elif value["op"] == "update" and value["status"] != "pending":
            if self.timer.value():
                ctx.timer_service().delete_event_time_timer(self.timer.value())
            self.order.clear()
            self.timer.clear()

    def on_timer(self, timestamp, ctx):
        if self.order.value():
            yield "stuck", self.order.value(), timestamp
            self.order.clear()


def order_events():
    """Orders 1-4, created or updated, over 90 minutes of event time."""
    return st.fixed_dictionaries({
        "order": st.integers(1, 4), "op": st.sampled_from(["create", "update", "update"]),
        "status": st.sampled_from(["pending", "pending", "paid", "shipped", "cancelled"]),
        "ts": st.integers(0, 3 * 30 * 60 * 1000)})


class SessionEnd(PyFlinkKeyedProcessFunction):
    """A user's session ends 30 minutes after their last click (written for the split search's
    gaps): each click deletes the session's timer and registers a new one; the timer reports the
    session's clicks. Unsafe with interruptible timers: a click of a user whose session end is due
    but not yet fired, run inside a split firing, deletes that timer and extends the session (its
    end is lost). Its split needs three users idle for 30 minutes at once while a fourth user's
    click raises the watermark (a bounded-out-of-orderness watermark follows the clicks), then a
    click of the third."""

    def open(self, runtime_context):
        self.timer = runtime_context.get_state(PyFlinkValueStateDescriptor("timer", Types.LONG()))
        self.clicks = runtime_context.get_state(PyFlinkValueStateDescriptor("clicks", Types.INT()))

    def process_element(self, value, ctx):
        if self.timer.value() is not None:
            ctx.timer_service().delete_event_time_timer(self.timer.value())
        due = ctx.timestamp() + 30 * 60 * 1000
        ctx.timer_service().register_event_time_timer(due)
        self.timer.update(due)
        self.clicks.update((self.clicks.value() or 0) + 1)

    def on_timer(self, timestamp, ctx):
        yield ctx.get_current_key(), self.clicks.value(), timestamp
        self.clicks.clear()
        self.timer.clear()


def clicks(users=("ann", "bob", "cy", "dee")):
    """Clicks of four users over three hours of event time."""
    return st.fixed_dictionaries({"user": st.sampled_from(list(users)), "ts": st.integers(0, 3 * 60 * 60 * 1000)})


def clicks_of_three():
    """Clicks of three users: the watermark that makes three sessions end at once is raised by a
    click of one of them, which moves its own session's end; no split firing can differ."""
    return clicks(("ann", "bob", "cy"))

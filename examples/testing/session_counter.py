"""A user's session counter: clicks per user and session, a session ending after ``GAP`` ms of
event time without a click (docs/testing.md, "Examples and certification").

It has a functional bug that certification cannot see: when a session ends, its click count is
not reset, so every later session of the user also counts the clicks of the sessions before it
(the sessions are merged in the counts). Everything it keeps is Flink state, its timers are deleted
and registered consistently, and a session closes the same way whether its timer fires first or a
later click arrives first, so it is deterministic, exactly-once under failures and indifferent to
interrupted timer firings: ``streamproof certify`` certifies it. Only an example says what it should
compute (``tests/test_testing_docs.py``).
"""

from streamproof.flink.common import Types
from streamproof.flink.datastream import KeyedProcessFunction, RuntimeContext
from streamproof.flink.datastream.state import ValueStateDescriptor

GAP = 10


class SessionCounter(KeyedProcessFunction):
    """Emits ``(user, clicks)`` when a user's session ends."""

    def open(self, ctx: RuntimeContext):
        self.clicks = ctx.get_state(ValueStateDescriptor("clicks", Types.LONG()))
        self.session_end = ctx.get_state(ValueStateDescriptor("session_end", Types.LONG()))

    def process_element(self, click, ctx: KeyedProcessFunction.Context):
        end = self.session_end.value()
        if end is not None and ctx.timestamp() > end:
            # the session ended before this click (its timer is due but has not fired yet)
            ctx.timer_service().delete_event_time_timer(end)
            yield from self.close_session(ctx)
            end = None
        if end is not None:
            ctx.timer_service().delete_event_time_timer(end)
        new_end = ctx.timestamp() + GAP if end is None else max(end, ctx.timestamp() + GAP)
        self.session_end.update(new_end)
        self.clicks.update((self.clicks.value() or 0) + 1)
        ctx.timer_service().register_event_time_timer(new_end)

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext):
        yield from self.close_session(ctx)

    def close_session(self, ctx):
        yield ctx.get_current_key(), self.clicks.value()
        self.session_end.clear()  # BUG: self.clicks.clear() is missing


def records():
    """One click: (user, event time)."""
    from hypothesis import strategies as st

    return st.tuples(st.sampled_from(["ann", "bob", "cyd", "dee"]), st.integers(0, 100))


def key(click) -> str:
    return click[0]


def timestamp(click) -> int:
    return click[1]

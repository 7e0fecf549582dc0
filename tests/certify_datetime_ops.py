"""An operator for tests/test_values_types.py whose records carry PyFlink's date and time types:
``Row(user, when: datetime (aware, microseconds), day: date, amount: Decimal, payload: bytes)``."""

import datetime
from decimal import Decimal

from hypothesis import strategies as st

from streamproof.flink.common import Row, Types
from streamproof.flink.datastream import KeyedProcessFunction
from streamproof.flink.datastream.state import MapStateDescriptor

EPOCH = datetime.datetime(2024, 5, 1, tzinfo=datetime.timezone.utc)


class DecimalTotalsPerSecond(KeyedProcessFunction):
    """Per record: its Decimal amount doubled at once, and at the end of its second of event time
    the record's day, payload, time and amount with that second's end as a datetime. One output per
    record at the timer (not a sum), so the output multiset is the same however records meet the
    timers (late ones, split firings, failover)."""

    def open(self, runtime_context):
        self.pending = runtime_context.get_map_state(MapStateDescriptor("pending", Types.LONG(), Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value, ctx):
        yield value.user, value.when, value.amount * 2
        end = ctx.timestamp() // 1000 * 1000 + 999
        self.pending.put(end, [*(self.pending.get(end) or []), (value.day, value.payload, value.at, value.amount)])
        ctx.timer_service().register_event_time_timer(end)

    def on_timer(self, timestamp, ctx):
        end = EPOCH + datetime.timedelta(milliseconds=timestamp - EPOCH_MS)
        for day, payload, at, amount in self.pending.get(timestamp) or []:
            yield Row(user=ctx.get_current_key(), end=end, day=day, payload=payload, at=at,
                      total=amount + Decimal("0.00"))
        self.pending.remove(timestamp)


EPOCH_MS = int(EPOCH.timestamp() * 1000)


def records():
    def build(user, ms, cents, payload, tz, at):
        when = (EPOCH + datetime.timedelta(microseconds=ms * 1000 + 123)).astimezone(tz)
        return Row(user=user, when=when, day=when.date(), amount=Decimal(cents) / 100, payload=payload, at=at)

    return st.builds(build, st.sampled_from(["ann", "bob"]), st.integers(0, 5_000), st.integers(-500, 500),
                     st.binary(max_size=3),
                     st.sampled_from([datetime.timezone.utc, datetime.timezone(datetime.timedelta(hours=5, minutes=30))]),
                     st.times())


def key(record):
    return record.user


def timestamp(record):
    return int((record.when - EPOCH) / datetime.timedelta(milliseconds=1)) + EPOCH_MS

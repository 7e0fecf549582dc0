"""UsageAlertingProcessFunctionJob.UsageAlertingFunction -- warn once when a mobile account used 90 % of its monthly quota.

Source: https://github.com/alpinegizmo/flink-mobile-data-usage (David Anderson's Flink Forward 2021
example), file
``src/main/java/com/ververica/flink/example/datausage/UsageAlertingProcessFunctionJob.java`` at
commit 29dc3eb1bfa3015796a2ae1efd63706653f8a66d (last changed in dea29c04), with
``records/EnrichedUsageRecord.java``, ``sources/UsageRecordGenerator.java`` and
``sources/AccountUpdateGenerator.java``.
Original language: Java.  License: Apache-2.0 (ASF header; the repository's LICENSE).
Time domain: none (no timers).

Pipeline: a Kafka table ``usage(account, bytesUsed, ts)`` (``WATERMARK FOR ts AS ts``) temporally
joined with the account updates (``quota``) and turned into a ``DataStream<EnrichedUsageRecord>``
(``account, bytesUsed, quota, ts, billingYear, billingMonth``; the year and month are
``EXTRACT(YEAR/MONTH from usage.ts)``) -> ``keyBy(e -> e.keyByAccountYearMonthQuota())`` (the string
``account/year/month/quota``) -> ``process(new UsageAlertingFunction())``: a ``ReducingState``
sums the bytes used, and the first record that takes the sum above 90 % of the quota emits a
warning; a ``ValueState<Boolean>`` remembers that it did.

Changed in translation: imports, PyFlink's method names and generators (``yield`` for
``out.collect``), ``ReducingStateDescriptor<>("rolling-sum", new Sum(), Types.LONG())`` with
``Types.LONG()`` and ``Sum`` as a PyFlink ``ReduceFunction``, ``ValueStateDescriptor<Boolean>(
"alerted", Types.BOOLEAN())`` with ``Types.BOOLEAN()`` (the original uses Flink's Scala ``Types``,
the same types), ``EnrichedUsageRecord`` as a ``Row`` with the same fields, ``ts`` (a
``java.time.Instant``) as epoch milliseconds, printed as ``Instant.toString()`` prints it
(``2021-10-01T00:00:00Z``, milliseconds only when not zero), ``String.format`` as ``%``.  The TODO
is kept.
"""

import datetime

from streamproof.flink.common import Row, Types
from streamproof.flink.datastream import KeyedProcessFunction, RuntimeContext
from streamproof.flink.datastream.functions import ReduceFunction
from streamproof.flink.datastream.state import ReducingStateDescriptor, ValueStateDescriptor

# UsageRecordGenerator
NUMBER_OF_ACCOUNTS_PER_INSTANCE = 10000
EVENTS_PER_DAY_PER_ACCOUNT = 4
MILLISECONDS_PER_DAY = 86_400_000
BEGINNING = 1633046400000  # Instant.parse("2021-10-01T00:00:00.00Z")
QUOTA = 10_000_000_000  # AccountUpdateGenerator: Row.of(account, 10_000_000_000L, ...)


def _instant_to_string(epoch_milli: int) -> str:
    """``java.time.Instant.toString()`` (ISO-8601, UTC, fraction only when not zero)."""
    seconds, millis = divmod(epoch_milli, 1000)
    text = datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return text + ("Z" if millis == 0 else ".%03dZ" % millis)


class Sum(ReduceFunction):

    def reduce(self, value1, value2):
        return value1 + value2


class UsageAlertingFunction(KeyedProcessFunction):

    def __init__(self):
        self.rolling_usage = None
        self.alerted = None

    def open(self, parameters: RuntimeContext):

        # Setting up a rolling and a value state

        rolling_usage_state_desc = ReducingStateDescriptor("rolling-sum", Sum(), Types.LONG())
        self.rolling_usage = parameters.get_reducing_state(rolling_usage_state_desc)

        alerted_state_descriptor = ValueStateDescriptor("alerted", Types.BOOLEAN())
        self.alerted = parameters.get_state(alerted_state_descriptor)

        # TODO: arrange for state to be cleared after each month

    def process_element(self, record, ctx: 'KeyedProcessFunction.Context'):

        # Summing up the usage

        self.rolling_usage.add(record.bytesUsed)
        total = self.rolling_usage.get()

        # Alerting the user in case of getting close to exceeded quota

        if self.alerted.value() is None and total > (0.9 * record.quota):
            yield ("WARNING: as of %s account %s has used %d out of %d bytes"
                   % (_instant_to_string(record.ts), record.account, total, record.quota))

            self.alerted.update(True)


def records():
    """One ``EnrichedUsageRecord``: ``UsageRecordGenerator``'s ``bytesUsed = 18 *
    random.nextInt(10_000_000)`` and timestamps ``DELTA_T`` apart from 2021-10-01, enriched with the
    account's quota.  Three accounts instead of 10 000 per source; the quota is
    ``AccountUpdateGenerator``'s 10 GB or, so that a few records cross 90 % of it, 50 MB; the
    timestamps run over the end of October so that both billing months occur."""
    from hypothesis import strategies as st

    end_of_october = BEGINNING + 31 * MILLISECONDS_PER_DAY

    def enriched(account, n, units, quota):
        ts = end_of_october - MILLISECONDS_PER_DAY + n * 60_000
        when = datetime.datetime.fromtimestamp(ts / 1000, tz=datetime.timezone.utc)
        return Row(ts=ts, account="%06d" % account,  # UsageRecord.accountForSubtaskAndIndex
                   bytesUsed=18 * units, quota=quota,
                   billingYear=when.year, billingMonth=when.month)

    return st.builds(
        enriched,
        st.integers(0, 2),
        st.integers(0, 2 * 24 * 60),
        st.integers(0, 10_000_000 - 1),
        st.sampled_from([QUOTA, 50_000_000]),
    )


def key(record) -> str:
    # EnrichedUsageRecord.keyByAccountYearMonthQuota()
    return "%s/%d/%d/%d" % (record.account, record.billingYear, record.billingMonth, record.quota)


def timestamp(record) -> int:
    return record.ts

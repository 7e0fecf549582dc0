"""FraudDetector -- final application of Flink's "Fraud Detection with the DataStream API".

Source: https://github.com/apache/flink, file ``docs/content/docs/try-flink/datastream.md``
(section "Final Application", Java tab; read at commit 282572e53fc0db37c831a9486742e1b5a51663e0),
published as https://nightlies.apache.org/flink/flink-docs-stable/docs/try-flink/datastream/ .
The walkthrough's Maven archetype is ``flink-walkthroughs/flink-walkthrough-datastream-java`` in
apache/flink; its input is ``TransactionSource``/``TransactionIterator`` of
``flink-walkthroughs/flink-walkthrough-common`` (accounts 1-5, one transaction every six minutes
from 2019-01-01 00:00:00).
Original language: Java (a Scala tab has the same logic).  License: Apache-2.0.
Time domain: PROCESSING TIME (a one-minute processing-time timer).

Pipeline: ``addSource(new TransactionSource())`` -> ``keyBy(Transaction::getAccountId)`` ->
``process(new FraudDetector())`` -> ``AlertSink``: an alert when a transaction under $1.00 is
followed, within one minute of processing time, by one over $500.00.

Changed in translation: imports, PyFlink's method names and generators, ``Types.BOOLEAN``/
``Types.LONG`` as ``Types.BOOLEAN()``/``Types.LONG()``, ``Transaction`` as a ``Row`` with the same
fields and ``Alert`` as a small class with ``set_id`` (the walkthrough's entity).  Logic and
constants unchanged.  ``records()`` counts timestamps from 2019-01-01 00:00:00 instead of the epoch.
"""

from streamproof.flink.common import Row, Types
from streamproof.flink.datastream import KeyedProcessFunction, RuntimeContext
from streamproof.flink.datastream.state import ValueStateDescriptor

SMALL_AMOUNT = 1.00
LARGE_AMOUNT = 500.00
ONE_MINUTE = 60 * 1000
SIX_MINUTES = 6 * 60 * 1000  # TransactionIterator


class Alert:
    """``org.apache.flink.walkthrough.common.entity.Alert``."""

    def __init__(self):
        self.id = 0

    def get_id(self):
        return self.id

    def set_id(self, id_):
        self.id = id_

    def __eq__(self, other):
        return isinstance(other, Alert) and self.id == other.id

    def __hash__(self):
        return hash(self.id)

    def __repr__(self):
        return "Alert{id=%s}" % self.id


class FraudDetector(KeyedProcessFunction):

    def __init__(self):
        self.flag_state = None
        self.timer_state = None

    def open(self, runtime_context: RuntimeContext):
        flag_descriptor = ValueStateDescriptor(
                "flag",
                Types.BOOLEAN())
        self.flag_state = runtime_context.get_state(flag_descriptor)

        timer_descriptor = ValueStateDescriptor(
                "timer-state",
                Types.LONG())
        self.timer_state = runtime_context.get_state(timer_descriptor)

    def process_element(self, transaction, context: 'KeyedProcessFunction.Context'):

        # Get the current state for the current key
        last_transaction_was_small = self.flag_state.value()

        # Check if the flag is set
        if last_transaction_was_small is not None:
            if transaction.amount > LARGE_AMOUNT:
                # Output an alert downstream
                alert = Alert()
                alert.set_id(transaction.accountId)

                yield alert
            # Clean up our state
            self._clean_up(context)

        if transaction.amount < SMALL_AMOUNT:
            # set the flag to true
            self.flag_state.update(True)

            timer = context.timer_service().current_processing_time() + ONE_MINUTE
            context.timer_service().register_processing_time_timer(timer)

            self.timer_state.update(timer)

    def on_timer(self, timestamp: int, ctx: 'KeyedProcessFunction.OnTimerContext'):
        # remove flag after 1 minute
        self.timer_state.clear()
        self.flag_state.clear()
        return
        yield  # a generator, like every PyFlink on_timer

    def _clean_up(self, ctx):
        # delete timer
        timer = self.timer_state.value()
        ctx.timer_service().delete_processing_time_timer(timer)

        # clean up all state
        self.timer_state.clear()
        self.flag_state.clear()


def records():
    """One ``Transaction(accountId, timestamp, amount)`` like ``TransactionIterator``'s."""
    from hypothesis import strategies as st

    amounts = [188.23, 374.79, 112.15, 478.75, 208.85, 379.64, 351.44, 320.75, 259.42, 273.44,
               267.25, 397.15, 0.219, 231.94, 384.73, 419.62, 412.91, 0.77, 22.10, 377.54,
               375.44, 230.18, 0.80, 350.89, 127.55, 483.91, 228.22, 871.15, 64.19, 79.43,
               56.12, 256.48, 148.16, 199.95, 252.37, 274.73, 473.54, 119.92, 323.59, 353.16,
               211.90, 280.93, 347.89, 459.86, 82.31, 373.26, 479.83, 454.25, 83.64, 292.44]
    return st.builds(
        lambda account_id, n, amount: Row(accountId=account_id, timestamp=n * SIX_MINUTES,
                                          amount=amount),
        st.integers(1, 2),  # TransactionIterator has 5 accounts; 2 make consecutive transactions of one account likely
        st.integers(0, 49),
        # TransactionIterator's amounts, and (so that the detector has something to detect) the
        # small-then-large pattern it looks for: amounts below SMALL_AMOUNT and above LARGE_AMOUNT
        st.one_of(st.sampled_from(amounts), st.sampled_from([0.5, 0.99, 501.0, 871.15])),
    )


def key(transaction) -> int:
    return transaction.accountId  # keyBy(Transaction::getAccountId)


def timestamp(transaction) -> int:
    return transaction.timestamp  # Transaction.getTimestamp()

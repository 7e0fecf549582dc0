"""LatestTransactionFunction -- the latest transaction per customer (Confluent's Apache Flink cookbook, formerly Immerok's).

Source: https://github.com/confluentinc/flink-cookbook, file
``latest-transaction/src/main/java/io/confluent/developer/cookbook/flink/functions/LatestTransactionFunction.java``
at commit 341408825ba05a6ccb550edb8c025f306154bb2d (last changed in a86c72f5), with
``records/Transaction.java`` and ``workflows/DataStreamWorkflow.java`` of the same recipe.
Original language: Java.  License: Apache-2.0 (the repository's LICENSE).
Time domain: none (no timers).

Pipeline (``DataStreamWorkflow``): a source of JSON ``Transaction(t_time, t_id, t_customer_id,
t_amount)`` with ``WatermarkStrategy.noWatermarks()`` -> ``keyBy(t -> t.t_customer_id)`` ->
``process(new LatestTransactionFunction())``: a transaction is forwarded (and remembered) when it is
the customer's first or is later than the one remembered; older ones are dropped.

Changed in translation: imports, PyFlink's method names and generators (``yield`` for
``out.collect``), ``ValueStateDescriptor<>("latest transaction", Transaction.class)`` with
``Types.PICKLED_BYTE_ARRAY()``, the ``Transaction`` POJO as a ``Row`` with the same fields,
``t_time`` (a ``java.time.Instant``) as epoch milliseconds so that ``isAfter`` is ``>``,
``t_amount`` (a ``BigDecimal``) as a ``decimal.Decimal``.  ``records()`` takes the event time
(``timestamp(record)``) from ``t_time``; the function never reads it from the context.
"""

import decimal

from streamproof.flink.common import Row, Types
from streamproof.flink.datastream import KeyedProcessFunction, RuntimeContext
from streamproof.flink.datastream.state import ValueStateDescriptor

# transactions.json of the recipe's tests starts at 2022-07-19T11:46:20.000Z
BEGINNING = 1658231180000
ONE_DAY_MS = 24 * 60 * 60 * 1000


class LatestTransactionFunction(KeyedProcessFunction):

    def __init__(self):
        self.latest_state = None

    def open(self, config: RuntimeContext):
        state_descriptor = ValueStateDescriptor("latest transaction", Types.PICKLED_BYTE_ARRAY())
        self.latest_state = config.get_state(state_descriptor)

    def process_element(self, incoming, context: 'KeyedProcessFunction.Context'):

        latest_transaction = self.latest_state.value()

        if latest_transaction is None or (incoming.t_time > latest_transaction.t_time):
            self.latest_state.update(incoming)
            yield incoming


def records():
    """One ``Transaction`` like ``TransactionSupplier``'s (``TOTAL_CUSTOMERS = 2``, ids counting
    up, ``new BigDecimal(1000.0 * random.nextFloat())``) and ``transactions.json``'s (times a few
    hours or days apart, some out of order); amounts in cents here."""
    from hypothesis import strategies as st

    return st.builds(
        lambda t_time, t_id, customer, cents: Row(
            t_time=BEGINNING + t_time, t_id=t_id, t_customer_id=customer,
            t_amount=decimal.Decimal(cents).scaleb(-2)),
        st.integers(0, 6 * ONE_DAY_MS).map(lambda ms: ms - ms % 3_600_000),  # whole hours: equal times happen
        st.integers(0, 1000),
        st.integers(0, 1),
        st.integers(0, 100_000),
    )


def key(transaction) -> int:
    return transaction.t_customer_id  # keyBy(t -> t.t_customer_id)


def timestamp(transaction) -> int:
    return transaction.t_time

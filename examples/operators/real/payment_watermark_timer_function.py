"""MyProcessFunction of PyFlink's end-to-end "test data stream timer" job.

Source: https://github.com/apache/flink, file
``flink-end-to-end-tests/flink-python-test/python/datastream/data_stream_job.py`` (read at commit
160caf705bc449bf8bb5ff6c8c87b0eecf9c758c; an older stored version of the same file feeds it from
Kafka with ``WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5))``).  The key
selector ``MyKeySelector`` comes from ``functions.py`` of the same folder, whose versions I saw
return ``value[1]`` (the orderId, ``key_type=Types.LONG()``); the newest stored ``functions.py``
I read no longer contains it, so the key selector is the one unverified piece.
Original language: Python (PyFlink).  License: Apache-2.0.

Pipeline: JSON ``payment_msg`` lines -> ``Row(createTime, orderId, payAmount, payPlatform,
provinceId)`` -> timestamps ``int(value[0])`` (``PaymentTimestampAssigner``) ->
``key_by(MyKeySelector())`` -> ``process(MyProcessFunction())``: every element is echoed and
registers an event-time timer at *the current watermark* + 1500 ms; every timer emits its time.

Changed in translation: only the imports (``streamproof.flink`` for ``pyflink``).
"""

from streamproof.flink.common import Row
from streamproof.flink.datastream import KeyedProcessFunction

TIMER_OFFSET_MS = 1500
OUT_OF_ORDERNESS_MS = 5000  # for_bounded_out_of_orderness(Duration.of_seconds(5)) (Kafka version)


class MyProcessFunction(KeyedProcessFunction):

    def process_element(self, value, ctx: 'KeyedProcessFunction.Context'):
        result = "Current key: {}, orderId: {}, payAmount: {}, timestamp: {}".format(
            str(ctx.get_current_key()), str(value[1]), str(value[2]), str(ctx.timestamp()))
        yield result
        current_watermark = ctx.timer_service().current_watermark()
        ctx.timer_service().register_event_time_timer(current_watermark + 1500)

    def on_timer(self, timestamp, ctx: 'KeyedProcessFunction.OnTimerContext'):
        yield "On timer timestamp: " + str(timestamp)


def records():
    """One ``payment_msg`` row (createTime, orderId, payAmount, payPlatform, provinceId)."""
    from hypothesis import strategies as st

    return st.builds(
        lambda t, order_id, amount, platform, province: Row(
            createTime=t, orderId=order_id, payAmount=amount, payPlatform=platform,
            provinceId=province),
        st.integers(0, 6 * TIMER_OFFSET_MS),
        st.integers(1, 10),
        st.floats(0.0, 100000.0, allow_nan=False),
        st.integers(0, 1),
        st.integers(1, 6),
    )


def key(value) -> int:
    return value[1]  # MyKeySelector.get_key


def timestamp(value) -> int:
    return int(value[0])  # PaymentTimestampAssigner.extract_timestamp

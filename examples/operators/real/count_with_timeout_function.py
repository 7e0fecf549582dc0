"""CountWithTimeoutFunction -- the KeyedProcessFunction example of Flink's "Process Function" page.

Source: https://github.com/apache/flink, file
``docs/content/docs/dev/datastream/operators/process_function.md`` (section "Example", tab
"Python"; read at commit 0bd63f2a431debaecece26d9c5931879c0e645ab), published as
https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/datastream/operators/process_function/ .
The Java tab of the same page has the same logic (``CountWithTimestamp`` POJO, 60000 ms).
Original language: Python (PyFlink).  License: Apache-2.0.

"maintains counts per key, and emits a key/count pair whenever a minute passes (in event time)
without an update for that key".  Pipeline of the page: a ``datagen`` table
``(a TIMESTAMP(3), b VARCHAR, c VARCHAR)`` -> ``to_append_stream`` as
``Types.ROW([SQL_TIMESTAMP, STRING, STRING])`` (fields ``f0, f1, f2``) ->
``WatermarkStrategy.for_monotonous_timestamps()`` with ``MyTimestampAssigner`` (milliseconds of
``value[0]`` since the epoch) -> ``key_by(lambda value: value[1])`` ->
``process(CountWithTimeoutFunction())``.

Changed in translation: only the imports (``streamproof.flink`` for ``pyflink``).  ``records()``
draws keys from a small alphabet (datagen's random 100-character strings would never repeat) and
carries ``f0`` (a ``TIMESTAMP(3)``, a ``datetime`` in PyFlink) as its milliseconds since the epoch,
i.e. already converted by ``MyTimestampAssigner``, because scenario records must be JSON-like; the
operator never reads ``f0``.
"""

from streamproof.flink.common import Row, Types
from streamproof.flink.datastream import KeyedProcessFunction, RuntimeContext
from streamproof.flink.datastream.state import ValueStateDescriptor

TIMEOUT_MS = 60000


class CountWithTimeoutFunction(KeyedProcessFunction):

    def __init__(self):
        self.state = None

    def open(self, runtime_context: RuntimeContext):
        self.state = runtime_context.get_state(ValueStateDescriptor(
            "my_state", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value, ctx: 'KeyedProcessFunction.Context'):
        # retrieve the current count
        current = self.state.value()
        if current is None:
            current = Row(value.f1, 0, 0)

        # update the state's count
        current[1] += 1

        # set the state's timestamp to the record's assigned event time timestamp
        current[2] = ctx.timestamp()

        # write the state back
        self.state.update(current)

        # schedule the next timer 60 seconds from the current event time
        ctx.timer_service().register_event_time_timer(current[2] + 60000)

    def on_timer(self, timestamp: int, ctx: 'KeyedProcessFunction.OnTimerContext'):
        # get the state for the key that scheduled the timer
        result = self.state.value()

        # check if this is an outdated timer or the latest timer
        if timestamp == result[2] + 60000:
            # emit the state on timeout
            yield result[0], result[1]


def records():
    """One row ``(f0 TIMESTAMP(3), f1 VARCHAR, f2 VARCHAR)`` of the page's datagen source."""
    from hypothesis import strategies as st

    return st.builds(
        lambda millis, b, c: Row(f0=millis, f1=b, f2=c),
        st.integers(0, 3 * TIMEOUT_MS),
        st.sampled_from(["a", "b", "c", "d"]),
        st.text(alphabet="0123456789abcdef", min_size=8, max_size=8),
    )


def key(value) -> str:
    return value[1]  # key_by(lambda value: value[1])


def timestamp(value) -> int:
    # MyTimestampAssigner.extract_timestamp: int((value[0] - epoch).total_seconds() * 1000)
    return int(value[0])

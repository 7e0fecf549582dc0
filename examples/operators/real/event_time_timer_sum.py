"""Sum -- PyFlink's ``event_time_timer.py`` example.

Source: https://github.com/apache/flink, file
``flink-python/pyflink/examples/datastream/event_time_timer.py`` (read at commit
4da16334d670002ddb59dd373a9812f1445732d1).
Original language: Python (PyFlink).  License: Apache-2.0.

Pipeline of the example: ``from_collection([(1000, 'Alice', 110.1), (4000, 'Bob', 30.2), ...])``
-> ``WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(2))`` with
``MyTimestampAssigner`` (``int(value[0])``) -> ``key_by(lambda value: value[1])`` ->
``process(Sum())``.  Each element adds ``value[2]`` to the key's sum and registers an event-time
timer 2 seconds after its timestamp; every timer emits ``(key, current sum)``.

Changed in translation: only the imports (``streamproof.flink`` for ``pyflink``).
"""

from streamproof.flink.common import Types
from streamproof.flink.datastream import KeyedProcessFunction, RuntimeContext
from streamproof.flink.datastream.state import ValueStateDescriptor

TIMER_DELAY_MS = 2000


class Sum(KeyedProcessFunction):

    def __init__(self):
        self.state = None

    def open(self, runtime_context: RuntimeContext):
        state_descriptor = ValueStateDescriptor("state", Types.PICKLED_BYTE_ARRAY())
        self.state = runtime_context.get_state(state_descriptor)

    def process_element(self, value, ctx: 'KeyedProcessFunction.Context'):
        # retrieve the current count
        current = self.state.value()
        if current is None:
            current = 0

        # update the state's count
        current += value[2]
        self.state.update(current)

        # register an event time timer 2 seconds later
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 2000)

    def on_timer(self, timestamp: int, ctx: 'KeyedProcessFunction.OnTimerContext'):
        yield ctx.get_current_key(), self.state.value()


def records():
    """One ``(timestamp, name, amount)`` tuple like the example's collection."""
    from hypothesis import strategies as st

    return st.tuples(
        st.integers(0, 6 * TIMER_DELAY_MS),
        st.sampled_from(["Alice", "Bob"]),
        st.sampled_from([110.1, 30.2, 20.0, 53.1, 13.1, 3.1, 16.1, 20.1]),
    )


def key(value) -> str:
    return value[1]  # key_by(lambda value: value[1])


def timestamp(value) -> int:
    return int(value[0])  # MyTimestampAssigner.extract_timestamp

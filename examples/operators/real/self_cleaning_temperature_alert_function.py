"""SelfCleaningTemperatureAlertFunction -- "Stream Processing with Apache Flink", chapter 7.

Source: https://github.com/streaming-with-flink/examples-scala, file
``src/main/scala/io/github/streamingwithflink/chapter7/StatefulProcessFunction.scala``
(snapshot HEAD c188681d8dc2f1ca4945e9bf234a92011c2e292b).
Original language: Scala.  License: Apache-2.0 (the repository's LICENSE).

"emits an alert if the temperature measurement of a sensor changed by more than a configured
threshold compared to the last reading.  The function removes the state of a sensor if it did not
receive an update within 1 hour."  Pipeline: ``addSource(new SensorSource)`` ->
``assignTimestampsAndWatermarks(new SensorTimeAssigner)`` (``BoundedOutOfOrdernessTimestampExtractor``
of 5 seconds on ``r.timestamp``) -> ``keyBy(_.id)`` ->
``process(new SelfCleaningTemperatureAlertFunction(1.5))``.

Changed in translation: imports, PyFlink's method names and generators, ``SensorReading`` as a
``Row``, ``.abs`` as ``abs()``, the Scala tuple output as a Python tuple.  Scala unboxes an empty
``ValueState[Double]``/``ValueState[Long]`` to ``0.0``/``0``; the translation reads ``None`` as
``0.0``/``0`` to keep that behaviour (so the first reading of a sensor is compared with 0.0, as in
the original).
"""

from streamproof.flink.common import Row, Types
from streamproof.flink.datastream import KeyedProcessFunction, RuntimeContext
from streamproof.flink.datastream.state import ValueStateDescriptor

ONE_HOUR_MS = 3600 * 1000
READING_INTERVAL_MS = 100  # SensorSource: Thread.sleep(100)

ARGS = [1.5]


class SelfCleaningTemperatureAlertFunction(KeyedProcessFunction):
    """:param threshold: The threshold to raise an alert."""

    def __init__(self, threshold: float):
        self.threshold = threshold
        # the state handle object
        self.last_temp_state = None
        self.last_timer_state = None

    def open(self, runtime_context: RuntimeContext):
        # register state for last temperature
        last_temp_descriptor = ValueStateDescriptor("lastTemp", Types.DOUBLE())
        self.last_temp_state = runtime_context.get_state(last_temp_descriptor)
        # register state for last timer
        timestamp_descriptor = ValueStateDescriptor("timestampState", Types.LONG())
        self.last_timer_state = runtime_context.get_state(timestamp_descriptor)

    def process_element(self, reading, ctx: 'KeyedProcessFunction.Context'):

        # compute timestamp of new clean up timer as record timestamp + one hour
        new_timer = ctx.timestamp() + (3600 * 1000)
        # get timestamp of current timer
        cur_timer = self.last_timer_state.value()
        if cur_timer is None:
            cur_timer = 0  # Scala unboxes null to 0L
        # delete previous timer and register new timer
        ctx.timer_service().delete_event_time_timer(cur_timer)
        ctx.timer_service().register_event_time_timer(new_timer)
        # update timer timestamp state
        self.last_timer_state.update(new_timer)

        # fetch the last temperature from state
        last_temp = self.last_temp_state.value()
        if last_temp is None:
            last_temp = 0.0  # Scala unboxes null to 0.0
        # check if we need to emit an alert
        temp_diff = abs(reading.temperature - last_temp)
        if temp_diff > self.threshold:
            # temperature increased by more than the thresholdTimer
            yield reading.id, reading.temperature, temp_diff

        # update lastTemp state
        self.last_temp_state.update(reading.temperature)

    def on_timer(self, timestamp: int, ctx: 'KeyedProcessFunction.OnTimerContext'):

        # clear all state for the key
        self.last_temp_state.clear()
        self.last_timer_state.clear()
        return
        yield  # a generator, like every PyFlink on_timer


def records():
    """One ``SensorReading(id, timestamp, temperature)`` as ``SensorSource`` emits them."""
    from hypothesis import strategies as st

    return st.builds(
        lambda i, t, temperature: Row(id="sensor_" + str(i), timestamp=t,
                                      temperature=temperature),
        st.integers(1, 10),
        st.integers(0, 3 * ONE_HOUR_MS),
        st.floats(25.0, 105.0, allow_nan=False),
    )


def key(reading) -> str:
    return reading.id  # keyBy(_.id)


def timestamp(reading) -> int:
    return reading.timestamp  # SensorTimeAssigner.extractTimestamp

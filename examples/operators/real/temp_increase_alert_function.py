"""TempIncreaseAlertFunction -- "Stream Processing with Apache Flink" (Hueske & Kalavri), chapter 6.

Source: https://github.com/streaming-with-flink/examples-scala, file
``src/main/scala/io/github/streamingwithflink/chapter6/ProcessFunctionTimers.scala``
(snapshot HEAD c188681d8dc2f1ca4945e9bf234a92011c2e292b).
Original language: Scala.  License: Apache-2.0 (the repository's LICENSE).
Time domain: PROCESSING TIME (``setStreamTimeCharacteristic(ProcessingTime)``, a timer one second
of processing time ahead).

"Emits a warning if the temperature of a sensor monotonically increases for 1 second (in
processing time)."  Pipeline: ``addSource(new SensorSource)`` (each parallel instance simulates
10 sensors ``sensor_<taskIdx*10+i>`` and emits a reading every 100 ms, temperatures starting at
65 + N(0,1)*20 and drifting by N(0,1)*0.5) -> ``keyBy(_.id)`` ->
``process(new TempIncreaseAlertFunction)``.

Changed in translation: imports, PyFlink's method names and generators, Scala's ``lazy val``
state handles created in ``open``, ``SensorReading`` case class as a ``Row`` with the same fields.
Scala unboxes an empty ``ValueState[Double]``/``ValueState[Long]`` to ``0.0``/``0``; the
translation reads ``None`` as ``0.0``/``0`` to keep that behaviour (the ``prevTemp == 0.0`` and
``curTimerTimestamp == 0`` checks rely on it).
"""

from streamproof.flink.common import Row, Types
from streamproof.flink.datastream import KeyedProcessFunction, RuntimeContext
from streamproof.flink.datastream.state import ValueStateDescriptor

ONE_SECOND_MS = 1000
READING_INTERVAL_MS = 100  # SensorSource: Thread.sleep(100)


class TempIncreaseAlertFunction(KeyedProcessFunction):

    def __init__(self):
        # hold temperature of last sensor reading
        self.last_temp = None
        # hold timestamp of currently active timer
        self.current_timer = None

    def open(self, runtime_context: RuntimeContext):
        self.last_temp = runtime_context.get_state(
            ValueStateDescriptor("lastTemp", Types.DOUBLE()))
        self.current_timer = runtime_context.get_state(
            ValueStateDescriptor("timer", Types.LONG()))

    def process_element(self, r, ctx: 'KeyedProcessFunction.Context'):

        # get previous temperature
        prev_temp = self.last_temp.value()
        if prev_temp is None:
            prev_temp = 0.0  # Scala unboxes null to 0.0
        # update last temperature
        self.last_temp.update(r.temperature)

        cur_timer_timestamp = self.current_timer.value()
        if cur_timer_timestamp is None:
            cur_timer_timestamp = 0  # Scala unboxes null to 0L
        if prev_temp == 0.0:
            # first sensor reading for this key.
            # we cannot compare it with a previous value.
            pass
        elif r.temperature < prev_temp:
            # temperature decreased. Delete current timer.
            ctx.timer_service().delete_processing_time_timer(cur_timer_timestamp)
            self.current_timer.clear()
        elif r.temperature > prev_temp and cur_timer_timestamp == 0:
            # temperature increased and we have not set a timer yet.
            # set timer for now + 1 second
            timer_ts = ctx.timer_service().current_processing_time() + 1000
            ctx.timer_service().register_processing_time_timer(timer_ts)
            # remember current timer
            self.current_timer.update(timer_ts)
        return
        yield  # a generator, like every PyFlink process_element

    def on_timer(self, ts: int, ctx: 'KeyedProcessFunction.OnTimerContext'):

        yield ("Temperature of sensor '" + ctx.get_current_key() +
               "' monotonically increased for 1 second.")
        # reset current timer
        self.current_timer.clear()


def records():
    """One ``SensorReading(id, timestamp, temperature)`` as ``SensorSource`` emits them."""
    from hypothesis import strategies as st

    return st.builds(
        lambda i, n, temperature: Row(id="sensor_" + str(i), timestamp=n * READING_INTERVAL_MS,
                                      temperature=temperature),
        st.integers(1, 10),
        st.integers(0, 30 * ONE_SECOND_MS // READING_INTERVAL_MS),
        st.floats(25.0, 105.0, allow_nan=False),
    )


def key(r) -> str:
    return r.id  # keyBy(_.id)


def timestamp(r) -> int:
    return r.timestamp  # SensorReading.timestamp (the job itself runs in processing time)

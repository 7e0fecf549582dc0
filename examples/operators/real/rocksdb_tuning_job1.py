"""RocksDBTuningJob1.MyProcessFunction1 -- a decaying aggregate over each sensor's last N timestamps (Ververica's Flink training).

Source: https://github.com/ververica/flink-training, file
``troubleshooting/rocksdb/src/provided/java/com/ververica/flink/training/provided/RocksDBTuningJob1.java``
at commit b29c04fe6daab13d5bd370d7ca6616f5ebb71034 (last changed in 893a16b8), with
``RocksDBTuningMeasurementSource`` (same directory) and ``Measurement``
(``troubleshooting/common/...``).
Original language: Java.  License: Apache-2.0 (ASF header; the repository's LICENSE).

"This job calculates the aggregated value with a decaying factor of 0.5 for events in the last N
timestamps."  Pipeline: ``RocksDBTuningMeasurementSource`` (``Tuple2<Measurement, Long>``, ``f1`` =
``System.currentTimeMillis()``) -> ``assignTimestampsAndWatermarks(forBoundedOutOfOrderness(10 s),
element.f1)`` -> ``keyBy(x -> x.f0.getSensorId())`` -> ``process(new MyProcessFunction1(
lastNTimestamps))`` with ``--lastNTimestamps`` 5 by default.  Each event is kept in a ``MapState``
under its timestamp; a timer at the event's timestamp emits the event with its value replaced by the
decayed aggregate of the entries at the N milliseconds before it, and a timer N ms later removes the
entry.

Changed in translation: imports, PyFlink's method names and generators (``yield`` for
``out.collect``), ``MapStateDescriptor<>("eventsBuffer", Long.class, Measurement.class)`` with
``Types.LONG(), Types.PICKLED_BYTE_ARRAY()``, ``Tuple2<Measurement, Long>`` as a Python tuple with the
``Measurement`` POJO as a ``Row``, ``new Measurement(...)`` as a new ``Row``.  ``super.onTimer(...)``
is kept (it does nothing, in Flink as in PyFlink).  ``ARGS`` is the job's default
``lastNTimestamps`` (5).
"""

from streamproof.flink.common import Row, Types
from streamproof.flink.datastream import KeyedProcessFunction, RuntimeContext
from streamproof.flink.datastream.state import MapStateDescriptor

LAST_N_TIMESTAMPS = 5  # parameters.getInt("lastNTimestamps", 5)

ARGS = [LAST_N_TIMESTAMPS]


class MyProcessFunction1(KeyedProcessFunction):

    def __init__(self, last_n_timestamps: int):
        self.last_n_timestamps = last_n_timestamps
        self.events_buffer = None

    def open(self, parameters: RuntimeContext):
        events_buffer_descriptor = MapStateDescriptor(
            "eventsBuffer", Types.LONG(), Types.PICKLED_BYTE_ARRAY())  # Long.class, Measurement.class

        self.events_buffer = parameters.get_map_state(events_buffer_descriptor)

    def process_element(self, value, ctx: 'KeyedProcessFunction.Context'):
        timer_service = ctx.timer_service()
        current_timestamp = ctx.timestamp()

        if current_timestamp > timer_service.current_watermark():
            self.events_buffer.put(current_timestamp, value[0])

            timer_service.register_event_time_timer(current_timestamp)  # timer to process
            timer_service.register_event_time_timer(
                current_timestamp + self.last_n_timestamps)  # timer to cleanup
        # ignore late events
        return
        yield  # a generator, like every PyFlink process_element

    def on_timer(self, timestamp: int, ctx: 'KeyedProcessFunction.OnTimerContext'):
        super().on_timer(timestamp, ctx)
        measurement_from_timer = self.events_buffer.get(timestamp)
        if measurement_from_timer is None:
            # timer only for cleanup
            self.events_buffer.remove(timestamp - self.last_n_timestamps)
            return

        # cleanup or processing timer?
        agg_value = 0.0  # double aggValue = 0
        decaying_factor = 0.5
        cleanup_oldest = True
        for i in range(self.last_n_timestamps, 0, -1):
            measurement = self.events_buffer.get(timestamp - i)
            if i == self.last_n_timestamps:
                cleanup_oldest = measurement is not None
            agg_value = (agg_value * decaying_factor
                         + (measurement.value if measurement is not None else 0))
        agg_value = agg_value * decaying_factor + measurement_from_timer.value
        yield (
            Row(sensorId=measurement_from_timer.sensorId,
                value=agg_value,
                location=measurement_from_timer.location,
                measurementInformation=measurement_from_timer.measurementInformation),
            timestamp)

        # this timer may be used both for processing and cleanup
        if cleanup_oldest:
            self.events_buffer.remove(timestamp - self.last_n_timestamps)


def records():
    """One ``Tuple2<Measurement, Long>`` as ``RocksDBTuningMeasurementSource.randomEvent`` makes it
    (``sensorId`` ``rnd.nextInt(maxSensorId)``, ``value`` ``rnd.nextDouble() * 100``, a city, a piece
    of lorem-ipsum payload; ``f1`` the wall clock in ms).  Three sensors instead of 100 000, and
    timestamps a few milliseconds apart, so that each sensor has events within its last-5-ms
    window."""
    from hypothesis import strategies as st

    return st.builds(
        lambda sensor_id, value, location, info, ts: (
            Row(sensorId=sensor_id, value=value, location=location, measurementInformation=info), ts),
        st.integers(0, 2),
        st.floats(0.0, 100.0, allow_nan=False, exclude_max=True),
        st.sampled_from(["les Escaldes", "Andorra la Vella", "Umm al Qaywayn"]),
        st.sampled_from(["", "lorem ipsum dolor"]),
        st.integers(0, 3 * LAST_N_TIMESTAMPS),
    )


def key(value) -> int:
    return value[0].sensorId  # keyBy(x -> x.f0.getSensorId())


def timestamp(value) -> int:
    return value[1]  # withTimestampAssigner((element, timestamp) -> element.f1)

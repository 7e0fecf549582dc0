"""SensorAggregationProcessing -- per-sensor counts reported once a minute (Ververica's Flink training).

Source: https://github.com/ververica/flink-training, file
``troubleshooting/state-migration/exercise/src/main/java/com/ververica/flink/training/exercises/custom/SensorAggregationProcessing.java``
at commit b29c04fe6daab13d5bd370d7ca6616f5ebb71034 (unchanged since 598e37f3, "[ververica] add
troubleshooting training exercises"; the same file is in apache/flink-training's pull request #20 at
514a2aff), with ``AggregatedSensorStatistics`` (same directory), ``MeasurementAggregationReport`` and
``StateMigrationJobBase`` (``troubleshooting/state-migration/common/...``) and ``Measurement``
(``troubleshooting/common/...``).
Original language: Java.  License: Apache-2.0 (ASF header; the repository's LICENSE).

Pipeline (``StateMigrationJobBase.createAndExecuteJob``): ``FakeKafkaSource`` ->
``assignTimestampsAndWatermarks(forBoundedOutOfOrderness(250 ms), element.getTimestamp())`` on the
``FakeKafkaRecord`` -> ``map(MeasurementDeserializer)`` -> ``keyBy(Measurement::getSensorId)`` ->
``process(new SensorAggregationProcessing())``; late measurements go to the side output
``late-data``.  The function counts each sensor's measurements and registers an event-time timer at
the start of the measurement's minute; every timer reports the sensor's count so far.

Changed in translation: imports, PyFlink's method names and generators (``yield`` for
``out.collect``, ``yield LATE_DATA_TAG, measurement`` for ``ctx.output``), the state POJO
``AggregatedSensorStatistics`` as a small Python class with the same getters and setters (its custom
``AggregatedSensorStatisticsSerializerV1`` as ``Types.PICKLED_BYTE_ARRAY()``), the report POJO
``MeasurementAggregationReport`` as a ``Row`` with its four fields (``average`` is never set in this
version, so it keeps Java's default 0.0), ``Measurement`` as a ``Row``.  Java's integer division
``ctx.timestamp() / REPORTING_INTERVAL`` is ``//`` (timestamps are not negative).  Kept as is:
``onTimer`` calls ``setLastUpdate`` on the object read from state without ``update()`` (only the
report reads it), and the count is never reset.  ``getStateSerializerName`` is kept.

The record's event time is the ``FakeKafkaRecord``'s timestamp, which the deserialized
``Measurement`` does not carry: ``records()`` adds it as the field ``timestamp``.
"""

from streamproof.flink.common import Row, Types
from streamproof.flink.datastream import KeyedProcessFunction, OutputTag, RuntimeContext
from streamproof.flink.datastream.state import ValueStateDescriptor

REPORTING_INTERVAL = 60_000

# StateMigrationJobBase.LATE_DATA_TAG
LATE_DATA_TAG = OutputTag("late-data", Types.PICKLED_BYTE_ARRAY())


class AggregatedSensorStatistics:
    """Sensor statistics state POJO."""

    def __init__(self):
        self.sensorId = 0
        self.count = 0
        self.lastUpdate = 0

    def getSensorId(self):
        return self.sensorId

    def setSensorId(self, sensorId):
        self.sensorId = sensorId

    def getCount(self):
        return self.count

    def setCount(self, count):
        self.count = count

    def getLastUpdate(self):
        return self.lastUpdate

    def setLastUpdate(self, lastUpdate):
        self.lastUpdate = lastUpdate


class SensorAggregationProcessing(KeyedProcessFunction):
    """Process function to report aggregated sensor statistics using a custom serializer for its state."""

    def __init__(self):
        self.aggregation_state = None

    def process_element(self, measurement, ctx: 'KeyedProcessFunction.Context'):
        if ctx.timestamp() > ctx.timer_service().current_watermark():
            current_stats = self.aggregation_state.value()
            if current_stats is None:
                current_stats = AggregatedSensorStatistics()
                current_stats.setSensorId(measurement.sensorId)
            current_stats.setCount(current_stats.getCount() + 1)

            # emit once per minute
            reporting_time = (ctx.timestamp() // REPORTING_INTERVAL) * REPORTING_INTERVAL
            if reporting_time > ctx.timer_service().current_watermark():
                ctx.timer_service().register_event_time_timer(reporting_time)

            self.aggregation_state.update(current_stats)
        else:
            yield LATE_DATA_TAG, measurement

    def on_timer(self, timestamp: int, ctx: 'KeyedProcessFunction.OnTimerContext'):
        current_stats = self.aggregation_state.value()
        current_stats.setLastUpdate(ctx.timestamp())

        # MeasurementAggregationReport: setSensorId, setCount, setLatestUpdate (average stays 0.0)
        report = Row(sensorId=current_stats.getSensorId(),
                     count=current_stats.getCount(),
                     average=0.0,
                     latestUpdate=current_stats.getLastUpdate())

        yield report

    def open(self, runtime_context: RuntimeContext):
        aggregation_state_desc = ValueStateDescriptor(
            "aggregationStats", Types.PICKLED_BYTE_ARRAY())  # new AggregatedSensorStatisticsSerializerV1()
        self.aggregation_state = runtime_context.get_state(aggregation_state_desc)

    def get_state_serializer_name(self) -> str:
        return "custom v1"


def records():
    """One ``Measurement`` as ``SourceUtils.createSerializedMeasurements`` makes them
    (``sensorId`` ``rand.nextInt(100)``, ``value`` ``rand.nextDouble() * 100``, a city, 30 random
    letters), with its ``FakeKafkaRecord`` timestamp.  Three sensors instead of 100, so that a
    sensor's records meet its timers."""
    from hypothesis import strategies as st

    return st.builds(
        lambda sensor_id, value, location, info, ts: Row(
            sensorId=sensor_id, value=value, location=location, measurementInformation=info,
            timestamp=ts),
        st.integers(0, 2),
        st.floats(0.0, 100.0, allow_nan=False, exclude_max=True),
        st.sampled_from(["les Escaldes", "Andorra la Vella", "Umm al Qaywayn", "Ras al-Khaimah"]),
        st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=30, max_size=30),
        st.integers(0, 3 * REPORTING_INTERVAL),
    )


def key(measurement) -> int:
    return measurement.sensorId  # keyBy(Measurement::getSensorId)


def timestamp(measurement) -> int:
    return measurement.timestamp  # FakeKafkaRecord.getTimestamp()

# Translated line for line to PyFlink from "Stream Processing with Apache Flink" (Hueske, Kalavri),
# streaming-with-flink/examples-scala
# src/main/scala/io/github/streamingwithflink/chapter6/LateDataHandling.scala
# @ c188681d8dc2f1ca4945e9bf234a92011c2e292b
# (https://github.com/streaming-with-flink/examples-scala/blob/c188681d8dc2f1ca4945e9bf234a92011c2e292b/src/main/scala/io/github/streamingwithflink/chapter6/LateDataHandling.scala)
# with SensorReading and SensorTimeAssigner from util/ of the same repository.
#
# Constants and structure kept (checkpoint interval 10 s, watermark interval 500 ms, 5 s
# out-of-orderness, 10 s windows, 5 s allowed lateness; the two unused strategies are kept,
# commented-out calls and all). Deviations, forced by PyFlink or by the corpus rule "the input is
# in the file":
#  - SensorSource (an infinite, random Scala SourceFunction; PyFlink has no Python SourceFunction)
#    and TimestampShuffler (java.util.Random offsets of up to 7 s) are replaced by
#    env.from_collection of fixed readings shaped as SensorSource emits them (one reading per sensor
#    every 100 ms) whose timestamps already carry fixed offsets in [0, 7000) ms, as the shuffler
#    would add. TimestampShuffler is kept below for reference, not applied.
#  - SensorTimeAssigner (BoundedOutOfOrdernessTimestampExtractor(Time.seconds(5)), watermark
#    max - 5000) becomes WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5))
#    (watermark max - 5000 - 1).
#  - env.setStreamTimeCharacteristic(TimeCharacteristic.EventTime) has no PyFlink 2.x call (event
#    time is the default); kept as a comment.
#  - .timeWindow(Time.seconds(10)) becomes .window(TumblingEventTimeWindows.of(Time.seconds(10)))
#    (what timeWindow meant under event time); allowedLateness(Time.seconds(5)) becomes
#    allowed_lateness(5 * 1000) (PyFlink takes milliseconds).
import random
from typing import Iterable, NamedTuple

from pyflink.common import Duration, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import OutputTag, StreamExecutionEnvironment
from pyflink.datastream.functions import MapFunction, ProcessFunction, ProcessWindowFunction
from pyflink.datastream.state import ValueStateDescriptor
from pyflink.datastream.window import TumblingEventTimeWindows


# util/SensorReading.scala
class SensorReading(NamedTuple):
    id: str
    timestamp: int
    temperature: float


# util/SensorTimeAssigner.scala
class SensorTimeAssigner(TimestampAssigner):

    def extract_timestamp(self, r, record_timestamp: int) -> int:
        return r.timestamp


# what SensorSource emits (3 sensors, a reading each per 100 ms), with TimestampShuffler's offsets
READINGS = [
    SensorReading("sensor_1", 1000 + 6500, 65.3),
    SensorReading("sensor_2", 1000 + 200, 48.1),
    SensorReading("sensor_3", 1000 + 3100, 79.6),
    SensorReading("sensor_1", 1100 + 50, 65.7),
    SensorReading("sensor_2", 1100 + 6900, 47.9),
    SensorReading("sensor_3", 1100 + 1200, 79.1),
    SensorReading("sensor_1", 1200 + 4400, 66.0),
    SensorReading("sensor_2", 1200 + 30, 48.4),
    SensorReading("sensor_3", 1200 + 6000, 78.8),
    SensorReading("sensor_1", 1300 + 800, 65.9),
    SensorReading("sensor_2", 1300 + 5200, 48.0),
    SensorReading("sensor_3", 1300 + 90, 79.2),
    SensorReading("sensor_1", 1400 + 6600, 66.4),
    SensorReading("sensor_2", 1400 + 1500, 47.6),
    SensorReading("sensor_3", 1400 + 10, 79.0),
    SensorReading("sensor_1", 1500 + 300, 66.1),
    SensorReading("sensor_2", 1500 + 2700, 47.2),
    SensorReading("sensor_3", 1500 + 6800, 79.5),
]


class LateDataHandling(object):

    # define a side output tag
    late_readings_output = OutputTag("late-readings", Types.PICKLED_BYTE_ARRAY())

    @staticmethod
    def main(args):

        # set up the streaming execution environment
        env = StreamExecutionEnvironment.get_execution_environment()

        # checkpoint every 10 seconds
        env.get_checkpoint_config().set_checkpoint_interval(10 * 1000)

        # use event time for the application
        # env.setStreamTimeCharacteristic(TimeCharacteristic.EventTime)
        # configure watermark interval
        env.get_config().set_auto_watermark_interval(500)

        # ingest sensor stream and shuffle timestamps to produce out-of-order records
        out_of_order_readings = env \
            .from_collection(READINGS) \
            .assign_timestamps_and_watermarks(
                WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5))
                .with_timestamp_assigner(SensorTimeAssigner()))

        # Different strategies to handle late records.
        # Select and uncomment on of the lines below to demonstrate a strategy.

        # 1. Filter out late readings (to a side output) using a ProcessFunction
        LateDataHandling.filter_late_readings(out_of_order_readings)
        # 2. Redirect late readings to a side output in a window operator
        # LateDataHandling.side_output_late_events_window(out_of_order_readings)
        # 3. Update results when late readings are received in a window operator
        # LateDataHandling.update_for_late_events_window(out_of_order_readings)

        env.execute()

    @staticmethod
    def filter_late_readings(readings):
        """Filter late readings to a side output and print the on-time and late streams."""
        # re-direct late readings to the side output
        filtered_readings = readings \
            .process(LateReadingsFilter())

        # retrieve late readings
        late_readings = filtered_readings \
            .get_side_output(LateDataHandling.late_readings_output)

        # print the filtered stream
        filtered_readings.print()

        # print messages for late readings
        late_readings \
            .map(lambda r: "*** late reading *** " + r.id) \
            .print()

    @staticmethod
    def side_output_late_events_window(readings):
        """Count reading per tumbling window and emit late readings to a side output.
        Print results and late events."""

        class CountFunction(ProcessWindowFunction):

            def process(self, id, ctx, elements: Iterable[SensorReading]):
                cnt = sum(1 for _ in elements)
                yield id, ctx.window().end, cnt

        count_per_10_secs = readings \
            .key_by(lambda r: r.id) \
            .window(TumblingEventTimeWindows.of(Time.seconds(10))) \
            .side_output_late_data(LateDataHandling.late_readings_output) \
            .process(CountFunction())

        # retrieve and print messages for late readings
        count_per_10_secs \
            .get_side_output(LateDataHandling.late_readings_output) \
            .map(lambda r: "*** late reading *** " + r.id) \
            .print()

        # print results
        count_per_10_secs.print()

    @staticmethod
    def update_for_late_events_window(readings):
        """Count reading per tumbling window and update results if late readings are received.
        Print results."""

        count_per_10_secs = readings \
            .key_by(lambda r: r.id) \
            .window(TumblingEventTimeWindows.of(Time.seconds(10))) \
            .allowed_lateness(5 * 1000) \
            .process(UpdatingWindowCountFunction())

        # print results
        count_per_10_secs \
            .print()


class LateReadingsFilter(ProcessFunction):
    """A ProcessFunction that filters out late sensor readings and re-directs them to a side
    output"""

    def process_element(self, r, ctx: 'ProcessFunction.Context'):

        # compare record timestamp with current watermark
        if r.timestamp < ctx.timer_service().current_watermark():
            # this is a late reading => redirect it to the side output
            yield LateDataHandling.late_readings_output, r
        else:
            yield r


class UpdatingWindowCountFunction(ProcessWindowFunction):
    """A counting WindowProcessFunction that distinguishes between first results and updates."""

    def process(self, id, ctx: 'ProcessWindowFunction.Context', elements: Iterable[SensorReading]):

        # count the number of readings
        cnt = sum(1 for _ in elements)

        # state to check if this is the first evaluation of the window or not.
        is_update = ctx.window_state().get_state(
            ValueStateDescriptor("isUpdate", Types.BOOLEAN()))

        if not is_update.value():
            # first evaluation, emit first result
            yield id, ctx.window().end, cnt, "first"
            is_update.update(True)
        else:
            # not the first evaluation, emit an update
            yield id, ctx.window().end, cnt, "update"


class TimestampShuffler(MapFunction):
    """A MapFunction to shuffle (up to a max offset) the timestamps of SensorReadings to produce
    out-of-order events. (Kept for reference; its offsets are baked into READINGS above.)"""

    def __init__(self, max_random_offset: int):
        self.max_random_offset = max_random_offset
        self.rand = random.Random()

    def map(self, r):
        shuffle_ts = r.timestamp + self.rand.randrange(self.max_random_offset)
        return SensorReading(r.id, shuffle_ts, r.temperature)


if __name__ == '__main__':
    import sys
    LateDataHandling.main(sys.argv[1:])

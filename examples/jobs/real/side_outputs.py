# Translated line for line to PyFlink from "Stream Processing with Apache Flink" (Hueske, Kalavri),
# streaming-with-flink/examples-scala
# src/main/scala/io/github/streamingwithflink/chapter6/SideOutputs.scala
# @ c188681d8dc2f1ca4945e9bf234a92011c2e292b
# (https://github.com/streaming-with-flink/examples-scala/blob/c188681d8dc2f1ca4945e9bf234a92011c2e292b/src/main/scala/io/github/streamingwithflink/chapter6/SideOutputs.scala)
# with SensorReading and SensorTimeAssigner from util/ of the same repository.
#
# Constants and structure kept (checkpoint interval 10 s, watermark interval 1 s, 5 s
# out-of-orderness, alarm below 32.0 F; the job prints `readings`, not the monitored stream's main
# output, as the book does). Deviations, forced by PyFlink or by the corpus rule "the input is in
# the file":
#  - SensorSource (an infinite, random Scala SourceFunction; PyFlink has no Python SourceFunction)
#    is replaced by env.from_collection of fixed readings shaped as SensorSource emits them (one
#    reading per sensor every 100 ms; start temperatures 65 + gaussian * 20, so some are below 32).
#  - SensorTimeAssigner (BoundedOutOfOrdernessTimestampExtractor(Time.seconds(5)), watermark
#    max - 5000) becomes WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5))
#    (watermark max - 5000 - 1).
#  - env.setStreamTimeCharacteristic(TimeCharacteristic.EventTime) has no PyFlink 2.x call (event
#    time is the default); kept as a comment.
#  - `lazy val freezingAlarmOutput` becomes an attribute set in __init__.
from typing import NamedTuple

from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import OutputTag, StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessFunction


# util/SensorReading.scala
class SensorReading(NamedTuple):
    id: str
    timestamp: int
    temperature: float


# util/SensorTimeAssigner.scala
class SensorTimeAssigner(TimestampAssigner):

    def extract_timestamp(self, r, record_timestamp: int) -> int:
        return r.timestamp


# what SensorSource emits: 3 sensors, a reading each per 100 ms
READINGS = [
    SensorReading("sensor_1", 1000, 31.4),
    SensorReading("sensor_2", 1000, 71.9),
    SensorReading("sensor_3", 1000, 88.2),
    SensorReading("sensor_1", 1100, 31.9),
    SensorReading("sensor_2", 1100, 72.3),
    SensorReading("sensor_3", 1100, 87.7),
    SensorReading("sensor_1", 1200, 32.2),
    SensorReading("sensor_2", 1200, 72.0),
    SensorReading("sensor_3", 1200, 88.1),
    SensorReading("sensor_1", 1300, 31.6),
    SensorReading("sensor_2", 1300, 71.5),
    SensorReading("sensor_3", 1300, 88.6),
]


def main(args):

    # set up the streaming execution environment
    env = StreamExecutionEnvironment.get_execution_environment()

    # checkpoint every 10 seconds
    env.get_checkpoint_config().set_checkpoint_interval(10 * 1000)

    # use event time for the application
    # env.setStreamTimeCharacteristic(TimeCharacteristic.EventTime)
    # configure watermark interval
    env.get_config().set_auto_watermark_interval(1000)

    # ingest sensor stream
    readings = env \
        .from_collection(READINGS) \
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5))
            .with_timestamp_assigner(SensorTimeAssigner()))

    monitored_readings = readings \
        .process(FreezingMonitor())

    # retrieve and print the freezing alarms
    monitored_readings \
        .get_side_output(OutputTag("freezing-alarms", Types.STRING())) \
        .print()

    # print the main output
    readings.print()

    env.execute()


class FreezingMonitor(ProcessFunction):
    """Emits freezing alarms to a side output for readings with a temperature below 32F."""

    def __init__(self):
        # define a side output tag
        self.freezing_alarm_output = OutputTag("freezing-alarms", Types.STRING())

    def process_element(self, r, ctx: 'ProcessFunction.Context'):
        # emit freezing alarm if temperature is below 32F.
        if r.temperature < 32.0:
            yield self.freezing_alarm_output, f"Freezing Alarm for {r.id}"
        # forward all readings to the regular output
        yield r


if __name__ == '__main__':
    import sys
    main(sys.argv[1:])

# Translated line for line to PyFlink from fancyChuan/bigdata-hub
#   flink/src/main/java/cn/fancychuan/process/JavaProcessFunctionTest.java  (testTempDown, with
#   before()/after(): the job) and
#   flink/src/main/java/cn/fancychuan/process/TempDownKeyedProcesssFunc.java (the function)
# @ 581f418b4abe242481865d1a44551145011f396f
# (https://github.com/fancyChuan/bigdata-hub/blob/581f418b4abe242481865d1a44551145011f396f/flink/src/main/java/cn/fancychuan/process/JavaProcessFunctionTest.java,
#  https://github.com/fancyChuan/bigdata-hub/blob/581f418b4abe242481865d1a44551145011f396f/flink/src/main/java/cn/fancychuan/process/TempDownKeyedProcesssFunc.java)
# with SensorReading from flink/src/main/java/cn/fancychuan/SensorReading.java.
#
# Kept: parallelism 1, key by id, the function's two plain fields (lastTemp, alarmTime: kept in
# the function object, not in Flink state; the author's comment says it is wrong for more than one
# sensor and points to TempDownStateKeyedProcesssFunc for the state version), timestamps
# = seconds * 1000, the 5 s timer, the alarm text, print("tempdown"). Deviations:
#  - socketTextStream("hadoop101", 7777) is replaced by env.from_collection of the 12 lines the
#    test's own javadoc gives as its input (comments dropped); the map that parses them is kept.
#  - the AssignerWithPunctuatedWatermarks (watermark = max timestamp after every record) has no
#    PyFlink equivalent (no Python watermark generator); WatermarkStrategy.for_monotonous_timestamps
#    with the same timestamp (periodic, watermark = max - 1) is used. So a timer at t fires after a
#    record with timestamp > t, not >= t (the javadoc's alarm at 205 does not happen here).
#  - env.setStreamTimeCharacteristic(TimeCharacteristic.EventTime) has no PyFlink 2.x call (event
#    time is the default); kept as a comment. JUnit @Before/@Test/@After become one main().
#  - Java's `Double lastTemp = 0.0` / `Long alarmTime = 0L` become Python attributes set in
#    __init__ (the same per-instance, non-checkpointed fields).
from typing import NamedTuple

from pyflink.common import WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, MapFunction


# cn/fancychuan/SensorReading.java
class SensorReading(NamedTuple):
    id: str
    timestamp: int
    temperature: float


# the input the javadoc of testTempDown gives (typed into the socket in the original)
LINES = [
    "sensor_1,1547719200,15.8",
    "sensor_1,1547719203,16.8",
    "sensor_1,1547719204,17.8",
    "sensor_1,1547719205,18.8",
    "sensor_1,1547719206,10.8",
    "sensor_1,1547719207,9.8",
    "sensor_1,1547719208,12.8",
    "sensor_1,1547719211,17.8",
    "sensor_1,1547719212,20.8",
    "sensor_1,1547719213,22.8",
    "sensor_3,1547719214,12.8",
    "sensor_1,1547719219,22.8",
]


class TempDownKeyedProcesssFunc(KeyedProcessFunction):
    """需求：传感器温度在5s之内(event time)连续上升，则报警。"""

    def __init__(self):
        # 这里的案例是处于演示的作用，在输入的时候只出入了一个sensor_id的数据，一旦出现多个sensor_id的时候，这个程序是有问题的
        # 因为processElement是流的所有数据都会访问到，不管是不是同一个sensor_id
        # 换句话说，不是“分组隔离的”
        # 隔离的版本，查看 TempDownStateKeyedProcesssFunc
        # 保留上一个流的温度
        self.lastTemp = 0.0
        # 定时器触发的时间
        self.alarmTime = 0

    def process_element(self, value, ctx: 'KeyedProcessFunction.Context'):
        # 判断是上升还是下降
        # 如果下降，则新注册一个定时器（之前的定时器删除）；如果上升，则继续监测下一条流
        # 下降的情况，或者第一条数据来的时候
        if value.temperature < self.lastTemp or self.alarmTime == 0:
            if self.alarmTime > 0:
                #
                ctx.timer_service().delete_event_time_timer(self.alarmTime)
            self.alarmTime = value.timestamp * 1000 + 5000
            ctx.timer_service().register_event_time_timer(self.alarmTime)
        self.lastTemp = value.temperature

    def on_timer(self, timestamp: int, ctx: 'KeyedProcessFunction.OnTimerContext'):
        # 此处的ctx.getCurrentKey()行为是：注册的时候，
        yield ctx.get_current_key() + "在" + str(ctx.timestamp()) + "监测到水位连续5s上升"


class ParseSensorReading(MapFunction):

    def map(self, s):
        items = s.split(",")
        return SensorReading(items[0], int(items[1]), float(items[2]))


class SensorTimestampAssigner(TimestampAssigner):

    def extract_timestamp(self, element, record_timestamp: int) -> int:
        return element.timestamp * 1000


def main():
    # before()
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    # 设置时间语义
    # env.setStreamTimeCharacteristic(TimeCharacteristic.EventTime)

    # getDataStream()
    input_stream = env.from_collection(LINES)
    data_stream = input_stream.map(ParseSensorReading())

    # testTempDown()
    # 使用AssignerWithPunctuatedWatermarks避免使用AscendingTimestampExtractor时"时间戳+1"的影响
    data_stream = data_stream.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps()
        .with_timestamp_assigner(SensorTimestampAssigner()))

    process_stream = data_stream.key_by(lambda r: r.id) \
        .process(TempDownKeyedProcesssFunc())
    process_stream.print("tempdown")

    # after()
    env.execute()


if __name__ == '__main__':
    main()

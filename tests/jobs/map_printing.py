"""window_sum.py's sums, then a map that prints each one as it passes (a debugging print, common in
public examples). Flink writes a task's stdout to the TaskManager's .out file; certify keeps what
it prints in OUT/user-output.txt instead of flooding its own report with thousands of lines."""
from pyflink.common import Duration, Time, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.window import TumblingEventTimeWindows


class First(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[0]


def show(v):
    print("window sum", v)
    return v


if __name__ == '__main__':
    env = StreamExecutionEnvironment.get_execution_environment()
    records = [(t, 'k%d' % (t % 3), t % 5) for t in range(0, 40, 2)]
    env.from_collection(records) \
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(3)).with_timestamp_assigner(First())) \
        .key_by(lambda v: v[1]) \
        .window(TumblingEventTimeWindows.of(Time.milliseconds(10))) \
        .reduce(lambda a, b: (max(a[0], b[0]), a[1], a[2] + b[2])) \
        .map(show) \
        .print()
    env.execute("printed sums")

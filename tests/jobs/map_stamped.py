"""window_sum.py's sums, then a map that stamps each with the wall-clock time it was enriched at
(``datetime.now()``) and a fresh ``uuid4()`` id: a restore replays records at other times, and Flink
draws other ids on a replay, but no failed attempt's output is committed. Certified (with the
wall-clock finding); before, the map read the real clock and random ids, and both comparisons
refused it."""
import uuid
from datetime import datetime

from pyflink.common import Duration, Time, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.window import TumblingEventTimeWindows


class First(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[0]


if __name__ == '__main__':
    env = StreamExecutionEnvironment.get_execution_environment()
    records = [(t, 'k%d' % (t % 3), t % 5) for t in range(0, 40, 2)]
    env.from_collection(records) \
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(3)).with_timestamp_assigner(First())) \
        .key_by(lambda v: v[1]) \
        .window(TumblingEventTimeWindows.of(Time.milliseconds(10))) \
        .reduce(lambda a, b: (max(a[0], b[0]), a[1], a[2] + b[2])) \
        .map(lambda v: (v[1], v[2], datetime.now().isoformat(), str(uuid.uuid4()))) \
        .print()
    env.execute("stamped sums")

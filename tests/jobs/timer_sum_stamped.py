"""timer_sum_unsafe.py with each result stamped with the wall-clock time it was emitted at: the
stamp alone is a finding, but the sum "now" still changes with a split. Refused."""
from datetime import datetime

from pyflink.common import Duration, WatermarkStrategy
from pyflink.common.typeinfo import Types
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import KeyedProcessFunction, RuntimeContext, StreamExecutionEnvironment
from pyflink.datastream.state import ValueStateDescriptor


class SumNow(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.sum = runtime_context.get_state(ValueStateDescriptor("sum", Types.LONG()))

    def process_element(self, value, ctx):
        self.sum.update((self.sum.value() or 0) + value[2])
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 10)

    def on_timer(self, timestamp, ctx):
        yield ctx.get_current_key(), timestamp, self.sum.value(), datetime.now().isoformat()


class First(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[0]


if __name__ == '__main__':
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    ds = env.from_collection([(0, 'a', 1), (1, 'b', 1), (2, 'c', 1), (30, 'x', 1), (31, 'c', 100)])
    ds.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0)).with_timestamp_assigner(First())) \
        .key_by(lambda v: v[1]) \
        .process(SumNow()) \
        .print()
    env.execute("timer sum")

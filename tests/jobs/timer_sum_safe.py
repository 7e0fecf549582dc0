"""A job whose timer emits the sum its key had when the timer was registered: three timers due at one watermark and a record of
the third key right after it, on time (FLIP-443 splits can change the output). Certified."""
from pyflink.common import Duration, WatermarkStrategy
from pyflink.common.typeinfo import Types
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import KeyedProcessFunction, RuntimeContext, StreamExecutionEnvironment
from pyflink.datastream.state import MapStateDescriptor, ValueStateDescriptor


class SumAtRegistration(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.sum = runtime_context.get_state(ValueStateDescriptor("sum", Types.LONG()))
        self.at = runtime_context.get_map_state(MapStateDescriptor("at", Types.LONG(), Types.LONG()))

    def process_element(self, value, ctx):
        self.sum.update((self.sum.value() or 0) + value[2])
        self.at.put(ctx.timestamp() + 10, self.sum.value())
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 10)

    def on_timer(self, timestamp, ctx):
        yield ctx.get_current_key(), timestamp, self.at.get(timestamp)
        self.at.remove(timestamp)


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
        .process(SumAtRegistration()) \
        .print()
    env.execute("timer sum")

# The Python tab of the "Example" section of apache/flink
# docs/content/docs/dev/datastream/operators/process_function.md
# @ 0bd63f2a431debaecece26d9c5931879c0e645ab
# (https://github.com/apache/flink/blob/0bd63f2a431debaecece26d9c5931879c0e645ab/docs/content/docs/dev/datastream/operators/process_function.md)
# (the same Python code is on the page in ververica/flink-poc @ 11e3823a, a fork of apache/flink).
#
# CountWithTimeoutFunction, MyTimestampAssigner, the watermark strategy, key_by, print and
# env.execute() are as published. Deviations, forced by the corpus rule "the input is in the file,
# no Table API":
#  - the source (a 'datagen' table, 10 random rows per second, read with StreamTableEnvironment
#    .to_append_stream as Types.ROW([SQL_TIMESTAMP, STRING, STRING])) is replaced by
#    env.from_collection of rows of the same type. The rows are WRITTEN FOR THIS CORPUS (the docs
#    have no input): three keys start, one record 65 s later moves the watermark past the three
#    60 s timeouts at once, then two of those keys get a record right after that watermark, on time.
#  - `from pyflink.table import StreamTableEnvironment` and the t_env lines are removed (nothing
#    else uses them).
import datetime

from pyflink.common import Row, WatermarkStrategy
from pyflink.common.typeinfo import Types
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor


class CountWithTimeoutFunction(KeyedProcessFunction):

    def __init__(self):
        self.state = None

    def open(self, runtime_context: RuntimeContext):
        self.state = runtime_context.get_state(ValueStateDescriptor(
            "my_state", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value, ctx: 'KeyedProcessFunction.Context'):
        # retrieve the current count
        current = self.state.value()
        if current is None:
            current = Row(value.f1, 0, 0)

        # update the state's count
        current[1] += 1

        # set the state's timestamp to the record's assigned event time timestamp
        current[2] = ctx.timestamp()

        # write the state back
        self.state.update(current)

        # schedule the next timer 60 seconds from the current event time
        ctx.timer_service().register_event_time_timer(current[2] + 60000)

    def on_timer(self, timestamp: int, ctx: 'KeyedProcessFunction.OnTimerContext'):
        # get the state for the key that scheduled the timer
        result = self.state.value()

        # check if this is an outdated timer or the latest timer
        if timestamp == result[2] + 60000:
            # emit the state on timeout
            yield result[0], result[1]


class MyTimestampAssigner(TimestampAssigner):

    def __init__(self):
        self.epoch = datetime.datetime.utcfromtimestamp(0)

    def extract_timestamp(self, value, record_timestamp) -> int:
        return int((value[0] - self.epoch).total_seconds() * 1000)


# written for this corpus (the docs read a datagen table): (a, b, c) as in my_source
T0 = datetime.datetime(2021, 1, 1, 0, 0, 0)
ROWS = [
    Row(T0 + datetime.timedelta(seconds=0), 'a', 'a0'),   # a: timer at +60 s
    Row(T0 + datetime.timedelta(seconds=1), 'b', 'b0'),   # b: timer at +61 s
    Row(T0 + datetime.timedelta(seconds=2), 'c', 'c0'),   # c: timer at +62 s
    Row(T0 + datetime.timedelta(seconds=65), 'd', 'd0'),  # watermark +64.999 s: a, b, c due
    Row(T0 + datetime.timedelta(seconds=65), 'a', 'a1'),  # on time, after that watermark
    Row(T0 + datetime.timedelta(seconds=65), 'c', 'c1'),  # on time, after that watermark
]


if __name__ == '__main__':
    env = StreamExecutionEnvironment.get_execution_environment()

    stream = env.from_collection(
        ROWS,
        type_info=Types.ROW([Types.SQL_TIMESTAMP(), Types.STRING(), Types.STRING()]))
    watermarked_stream = stream.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps()
                         .with_timestamp_assigner(MyTimestampAssigner()))

    # apply the process function onto a keyed stream
    result = watermarked_stream.key_by(lambda value: value[1]) \
                               .process(CountWithTimeoutFunction()) \
                               .print()
    env.execute()

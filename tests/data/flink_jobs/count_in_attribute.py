"""A keyed running count kept in a Python attribute instead of keyed state: Flink restores the
timers and state of a checkpoint, never a function's attributes, so after a failure the count
starts again from zero and the committed output differs from every failure-free run. Written for
tests/test_on_flink.py: certify refuses it (job.same-output) and Apache Flink shows the same."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction


class CountInAttribute(KeyedProcessFunction):

    def __init__(self):
        self.seen = 0  # per subtask, not per key, and not checkpointed

    def process_element(self, value, ctx):
        self.seen += 1
        yield value[0], self.seen


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    ds = env.from_collection([("a", 1), ("b", 2), ("a", 3), ("c", 4), ("b", 5), ("a", 6)],
                             type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
    ds.key_by(lambda v: v[0]).process(CountInAttribute()).print()
    env.execute("count in attribute")


if __name__ == "__main__":
    main()

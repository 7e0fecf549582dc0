"""Found by a stress test: records rebalanced over two map subtasks, then concatenated in arrival
order. Certified: a restore deals the records as the failure-free run does."""
from pyflink.common import Types
from pyflink.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from pyflink.datastream.state import ValueStateDescriptor


class Concat(KeyedProcessFunction):
    """The running concatenation in ValueState (PyFlink's own reduce loses its state on a restore:
    its state name is new in every attempt, docs/conformance.md)."""

    def open(self, runtime_context):
        self.acc = runtime_context.get_state(ValueStateDescriptor("acc", Types.STRING()))

    def process_element(self, value, ctx):
        acc = value if self.acc.value() is None else self.acc.value() + value
        self.acc.update(acc)
        yield acc


if __name__ == '__main__':
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.from_collection(["k1", "k2", "k3", "k4"], type_info=Types.STRING()) \
        .map(lambda x: x, output_type=Types.STRING()) \
        .key_by(lambda x: "k") \
        .process(Concat()) \
        .print()
    env.execute()

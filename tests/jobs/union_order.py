"""Found by a stress test: a keyed concatenation of the records of two unioned collections (its
result depends on their interleaving, which Flink leaves open). Certified, with the finding."""
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
    a = env.from_collection(["a1", "a2"], type_info=Types.STRING())
    b = env.from_collection(["b1", "b2"], type_info=Types.STRING())
    a.union(b).key_by(lambda x: "k").process(Concat()).print()
    env.execute()

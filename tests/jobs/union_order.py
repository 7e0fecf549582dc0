"""Found by a stress test: a reduce concatenating the records of two unioned collections (its
result depends on their interleaving, which Flink leaves open). Certified, with the finding."""
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

if __name__ == '__main__':
    env = StreamExecutionEnvironment.get_execution_environment()
    a = env.from_collection(["a1", "a2"], type_info=Types.STRING())
    b = env.from_collection(["b1", "b2"], type_info=Types.STRING())
    a.union(b).key_by(lambda x: "k").reduce(lambda x, y: x + y).print()
    env.execute()

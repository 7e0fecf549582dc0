"""Found by a stress test: records rebalanced over two map subtasks, then reduced in arrival
order. Certified: a restore deals the records as the failure-free run does."""
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

if __name__ == '__main__':
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.from_collection(["k1", "k2", "k3", "k4"], type_info=Types.STRING()) \
        .map(lambda x: x, output_type=Types.STRING()) \
        .key_by(lambda x: "k") \
        .reduce(lambda a, b: a + b) \
        .print()
    env.execute()

"""A keyed map counting in a Python attribute instead of keyed state: a restore brings the
checkpointed offsets back but not the count, so replayed records are counted from where the
attribute happened to be. Refused."""
from pyflink.datastream import MapFunction, StreamExecutionEnvironment


class Count(MapFunction):
    def __init__(self):
        self.count = {}

    def map(self, value):
        self.count[value] = self.count.get(value, 0) + 1
        return value, self.count[value]


if __name__ == '__main__':
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection(['a', 'b', 'a', 'a', 'b', 'c', 'a', 'b', 'a', 'c']) \
        .key_by(lambda w: w) \
        .map(Count()) \
        .print()
    env.execute()

"""``pyflink.datastream`` for keyed operators: change ``pyflink`` to ``streamproof.flink`` in an
operator's imports and streamproof runs it (docs/flink-api.md)."""

from streamproof.flink.datastream.functions import (
    AggregateFunction, BroadcastProcessFunction, CoFlatMapFunction, CoMapFunction, CoProcessFunction,
    FilterFunction, FlatMapFunction, KeyedBroadcastProcessFunction, KeyedCoProcessFunction, KeyedProcessFunction,
    KeySelector, MapFunction, Partitioner, ProcessFunction, ReduceFunction, RuntimeContext,
)
from streamproof.flink.datastream.output_tag import OutputTag
from streamproof.flink.datastream.time_domain import TimeDomain
from streamproof.flink.datastream.timerservice import TimerService

__all__ = [
    "MapFunction", "CoMapFunction", "FlatMapFunction", "CoFlatMapFunction", "ReduceFunction", "FilterFunction",
    "ProcessFunction", "KeyedProcessFunction", "CoProcessFunction", "KeyedCoProcessFunction", "AggregateFunction",
    "BroadcastProcessFunction", "KeyedBroadcastProcessFunction", "RuntimeContext", "TimerService", "TimeDomain",
    "KeySelector", "Partitioner", "OutputTag",
]

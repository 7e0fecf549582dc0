"""``pyflink.datastream``: the operator API (change ``pyflink`` to ``streamproof.flink`` in an
operator's imports and streamproof runs it) and the job API a captured job uses
(:class:`StreamExecutionEnvironment`, :class:`DataStream`...; :mod:`streamproof.flink.capture`).
Every name PyFlink 2.3 exports here is importable: names streamproof does not model are opaque
classes (state backends, checkpoint storages, ``SourceFunction``/``SinkFunction``...) or refuse
their use by name (``ConnectedStreams``, ``AsyncDataStream``...); docs/flink-api.md."""

from streamproof.flink.capture import opaque_class as _opaque_class
from streamproof.flink.datastream.checkpointing_mode import CheckpointingMode
from streamproof.flink.datastream.data_stream import (
    AllWindowedStream, AsyncDataStream, BroadcastConnectedStream, BroadcastStream, ConnectedStreams, DataStream,
    DataStreamSink, KeyedStream, WindowedStream,
)
from streamproof.flink.datastream.execution_mode import RuntimeExecutionMode
from streamproof.flink.datastream.functions import (
    AggregateFunction, AllWindowFunction, BroadcastProcessFunction, CoFlatMapFunction, CoMapFunction,
    CoProcessFunction, FilterFunction, FlatMapFunction, KeyedBroadcastProcessFunction, KeyedCoProcessFunction,
    KeyedProcessFunction, KeySelector, MapFunction, Partitioner, ProcessAllWindowFunction, ProcessFunction,
    ProcessWindowFunction, ReduceFunction, RuntimeContext, WindowFunction,
)
from streamproof.flink.datastream.output_tag import OutputTag
from streamproof.flink.datastream.stream_execution_environment import CheckpointConfig, StreamExecutionEnvironment
from streamproof.flink.datastream.time_characteristic import TimeCharacteristic
from streamproof.flink.datastream.time_domain import TimeDomain
from streamproof.flink.datastream.timerservice import TimerService
from streamproof.flink.datastream.window import (
    CountTrigger, CountWindow, EventTimeSessionWindows, EventTimeTrigger, GlobalWindow, GlobalWindows,
    MergingWindowAssigner, PurgingTrigger, SlidingEventTimeWindows, TimeWindow, Trigger, TriggerResult,
    TumblingEventTimeWindows, Window, WindowAssigner,
)

_OPAQUE = {name: _opaque_class(name, __name__) for name in (
    "SourceFunction", "SinkFunction", "AsyncFunction", "ExternalizedCheckpointRetention", "StateBackend",
    "HashMapStateBackend", "EmbeddedRocksDBStateBackend", "CustomStateBackend", "PredefinedOptions",
    "CheckpointStorage", "JobManagerCheckpointStorage", "FileSystemCheckpointStorage", "CustomCheckpointStorage",
    "SlotSharingGroup", "MemorySize", "AsyncRetryPredicate", "AsyncRetryStrategy",
)}
globals().update(_OPAQUE)

__all__ = [
    "StreamExecutionEnvironment", "DataStream", "KeyedStream", "WindowedStream", "ConnectedStreams", "BroadcastStream",
    "BroadcastConnectedStream", "AsyncDataStream", "AllWindowedStream", "DataStreamSink",
    "MapFunction", "CoMapFunction", "FlatMapFunction", "CoFlatMapFunction", "ReduceFunction", "FilterFunction",
    "ProcessFunction", "KeyedProcessFunction", "CoProcessFunction", "KeyedCoProcessFunction", "AggregateFunction",
    "WindowFunction", "ProcessWindowFunction", "AllWindowFunction", "ProcessAllWindowFunction",
    "BroadcastProcessFunction", "KeyedBroadcastProcessFunction", "RuntimeContext", "TimerService", "TimeDomain",
    "KeySelector", "Partitioner", "OutputTag", "CheckpointingMode", "CheckpointConfig", "RuntimeExecutionMode",
    "TimeCharacteristic", "Window", "TimeWindow", "CountWindow", "GlobalWindow", "WindowAssigner",
    "MergingWindowAssigner", "TriggerResult", "Trigger", "CountTrigger", "EventTimeTrigger", "PurgingTrigger",
    "TumblingEventTimeWindows", "SlidingEventTimeWindows", "EventTimeSessionWindows", "GlobalWindows", *_OPAQUE,
]

"""``pyflink.datastream.data_stream`` for capture: :class:`DataStream`, :class:`KeyedStream`,
:class:`WindowedStream`, :class:`DataStreamSink`. Every transformation appends a
:class:`~streamproof.flink.pipeline.Node` to its environment's pipeline and returns the stream of
that node; no user function is ever called. Operator settings (``name``, ``uid``,
``set_parallelism``...) apply to the node of the stream they are called on. What streamproof does
not model is refused by name (a one-line ``CaptureError`` naming the job's line).

Size: all of PyFlink's ``pyflink.datastream.data_stream``: a captured job importing it gets this module.
"""

from __future__ import annotations

import streamproof.flink.pipeline as P
from streamproof.flink.capture import describe, is_opaque, job_line, refuse, with_line
from streamproof.flink.datastream.functions import (
    BroadcastProcessFunction, CoProcessFunction, KeyedBroadcastProcessFunction, KeyedCoProcessFunction,
    KeyedProcessFunction, ProcessFunction,
)
from streamproof.flink.pipeline import CaptureError, WindowSpec

__all__ = ["DataStream", "KeyedStream", "WindowedStream", "AllWindowedStream", "ConnectedStreams",
           "BroadcastStream", "BroadcastConnectedStream", "DataStreamSink", "BuiltinAggregation", "AsyncDataStream"]

_PARTITIONING = "explicit partitioning is not modelled"
_BROADCAST = ("broadcast partitioning without broadcast state is not modelled (broadcast(MapStateDescriptor, ...) "
              "with a BroadcastProcessFunction or KeyedBroadcastProcessFunction is)")
_ALL_WINDOWS = "non-keyed (all) windows are not modelled"


def _parallelism(value, what: str) -> int | None:
    if value == -1:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise CaptureError(f"{job_line()}: {what}({value!r}): the parallelism must be a positive int")
    return value


def _check(func, method: str, what: str) -> None:
    """PyFlink's check: a ``XFunction`` (duck-typed: has ``method``) or a callable."""
    if not callable(func) and not hasattr(func, method):
        raise TypeError(f"The input must be a {what} or a callable function")


class BuiltinAggregation:
    """The ``function`` of a REDUCE node written ``sum``/``min``/``max``/``min_by``/``max_by``:
    ``aggregation == ("sum", position)`` (``position`` a field index or name)."""

    def __init__(self, kind: str, position):
        self.aggregation = (kind, position)

    def __eq__(self, other):
        return isinstance(other, BuiltinAggregation) and self.aggregation == other.aggregation

    def __hash__(self):
        return hash(self.aggregation)

    def __repr__(self):
        return f"{self.aggregation[0]}({self.aggregation[1]!r})"


class _Refusing:
    """An unknown public attribute is refused by name (``DataStream.iterate``)."""

    _sp_api = "DataStream"

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        refuse(f"{self._sp_api}.{name}")


class _NodeSettings(_Refusing):
    """``name``/``uid``/``set_parallelism``... on the node ``self._node_id``."""

    def __init__(self, env, node_id: int):
        self._env = env
        self._node_id = node_id

    def _node(self) -> P.Node:
        return self._env._sp_node(self._node_id)

    def name(self, name: str):
        self._node().name = name
        return self

    def uid(self, uid: str):
        self._node().uid = uid
        return self

    def set_uid_hash(self, uid_hash: str):
        return self

    def set_parallelism(self, parallelism: int):
        self._node().parallelism = _parallelism(parallelism, f"{self._sp_api}.set_parallelism")
        return self

    def set_description(self, description: str):
        return self

    def disable_chaining(self):
        self._node().chaining = "disabled"
        return self

    def slot_sharing_group(self, slot_sharing_group):
        group = slot_sharing_group
        self._node().slot_sharing_group = group if isinstance(group, str) else describe(group)
        return self


class DataStream(_NodeSettings):
    """The output of one node of the pipeline."""

    _sp_api = "DataStream"

    def _reads(self) -> dict:
        return {"inputs": [self._node_id]}

    def _then(self, kind: str, **fields) -> "DataStream":
        node = self._env._sp_add(kind, **self._reads(), **fields)
        return DataStream(self._env, node.id)

    # -- settings of this stream's node -------------------------------------------------------
    def get_name(self) -> str:
        return self._node().label

    def set_max_parallelism(self, max_parallelism: int) -> "DataStream":
        self._node().max_parallelism = _parallelism(max_parallelism, f"{self._sp_api}.set_max_parallelism")
        return self

    def get_type(self):
        return self._node().output_type

    def get_execution_environment(self):
        return self._env

    def get_execution_config(self):
        return self._env.get_config()

    def force_non_parallel(self) -> "DataStream":
        node = self._node()
        node.parallelism = node.max_parallelism = 1
        return self

    def set_buffer_timeout(self, timeout_millis: int) -> "DataStream":
        return self

    def start_new_chain(self) -> "DataStream":
        self._node().chaining = "new_chain"
        return self

    # -- transformations ----------------------------------------------------------------------
    def map(self, func, output_type=None) -> "DataStream":
        _check(func, "map", "MapFunction")
        return self._then(P.MAP, function=func, output_type=output_type)

    def flat_map(self, func, output_type=None) -> "DataStream":
        _check(func, "flat_map", "FlatMapFunction")
        return self._then(P.FLAT_MAP, function=func, output_type=output_type)

    def filter(self, func) -> "DataStream":
        _check(func, "filter", "FilterFunction")
        return self._then(P.FILTER, function=func, output_type=self.get_type())

    def process(self, func, output_type=None) -> "DataStream":
        _check(func, "process_element", "ProcessFunction")
        return self._then(P.PROCESS, function=func, output_type=output_type)

    def key_by(self, key_selector, key_type=None) -> "KeyedStream":
        _check(key_selector, "get_key", "KeySelector")
        return KeyedStream(self._env, self._node_id, key_selector, key_type)

    def assign_timestamps_and_watermarks(self, watermark_strategy) -> "DataStream":
        if is_opaque(watermark_strategy) or not hasattr(type(watermark_strategy), "to_spec"):
            refuse(f"{self._sp_api}.assign_timestamps_and_watermarks({describe(watermark_strategy)})",
                   "only WatermarkStrategy.for_monotonous_timestamps/for_bounded_out_of_orderness/no_watermarks "
                   "are modelled")
        return self._then(P.TIMESTAMPS, watermarks=watermark_strategy.to_spec(), output_type=self.get_type())

    def union(self, *streams: "DataStream") -> "DataStream":
        inputs = [self._node_id]
        for stream in streams:
            if not isinstance(stream, DataStream) or stream._env is not self._env:
                raise TypeError(f"union: expected a DataStream of the same environment, got {describe(stream)}")
            inputs.append(stream._node_id)
        node = self._env._sp_add(P.UNION, inputs=inputs, output_type=self.get_type())
        return DataStream(self._env, node.id)

    def get_side_output(self, output_tag) -> "DataStream":
        node = self._env._sp_add(P.SIDE_OUTPUT, inputs=[self._node_id], tag=output_tag,
                                 output_type=getattr(output_tag, "type_info", None))
        return DataStream(self._env, node.id)

    def print(self, sink_identifier: str = None) -> "DataStreamSink":
        return self._sink("print")

    def add_sink(self, sink_func) -> "DataStreamSink":
        return self._sink(f"add_sink({describe(sink_func)})")

    def sink_to(self, sink) -> "DataStreamSink":
        return self._sink(f"sink_to({describe(sink)})")

    def _sink(self, description: str) -> "DataStreamSink":
        node = self._env._sp_add(P.SINK, **self._reads(), sink=description)
        return DataStreamSink(self._env, node.id)

    def connect(self, ds):
        """A two-input operator's inputs: this stream first, ``ds`` second; with a
        :class:`BroadcastStream`, a :class:`BroadcastConnectedStream` (``ds`` the broadcast side)."""
        if isinstance(ds, BroadcastStream):
            if ds.input_stream._env is not self._env:
                raise TypeError(f"connect: expected a BroadcastStream of the same environment, got {describe(ds)}")
            return BroadcastConnectedStream(self, ds, ds.broadcast_state_descriptors)
        if not isinstance(ds, DataStream) or ds._env is not self._env:
            raise TypeError(f"connect: expected a DataStream of the same environment, got {describe(ds)}")
        return ConnectedStreams(self, ds)

    # -- refused by name ----------------------------------------------------------------------

    def window_all(self, window_assigner):
        refuse(f"{self._sp_api}.window_all", _ALL_WINDOWS)

    def count_window_all(self, size, slide=0):
        refuse(f"{self._sp_api}.count_window_all", _ALL_WINDOWS)

    def shuffle(self):
        refuse(f"{self._sp_api}.shuffle", _PARTITIONING)

    def rescale(self):
        refuse(f"{self._sp_api}.rescale", _PARTITIONING)

    def rebalance(self):
        refuse(f"{self._sp_api}.rebalance", _PARTITIONING)

    def forward(self):
        refuse(f"{self._sp_api}.forward", _PARTITIONING)

    def broadcast(self, broadcast_state_descriptor=None, *other_broadcast_state_descriptors):
        """With ``MapStateDescriptor``s: a :class:`BroadcastStream` (its records reach every subtask of
        the operator it is connected to, which keeps them in broadcast state); without: refused."""
        if broadcast_state_descriptor is None:
            refuse(f"{self._sp_api}.broadcast()", _BROADCAST)
        descriptors = [broadcast_state_descriptor, *other_broadcast_state_descriptors]
        for descriptor in descriptors:
            if not any(c.__name__ == "MapStateDescriptor" for c in type(descriptor).__mro__):
                raise TypeError("broadcast_state_descriptor must be MapStateDescriptor")
        return BroadcastStream(self, descriptors)

    def global_(self):
        refuse(f"{self._sp_api}.global", _PARTITIONING)

    def partition_custom(self, partitioner, key_selector):
        refuse(f"{self._sp_api}.partition_custom", _PARTITIONING)

    def project(self, *field_indexes):
        refuse(f"{self._sp_api}.project")

    def cache(self):
        refuse(f"{self._sp_api}.cache", "cached streams are batch-only and not modelled")

    def iterate(self, *args, **kwargs):
        refuse(f"{self._sp_api}.iterate", "iterations are not modelled")

    def execute_and_collect(self, job_execution_name: str = None, limit: int = None):
        refuse(f"{self._sp_api}.execute_and_collect", "it runs the job and the job's code reads its results")


setattr(DataStream, "global", DataStream.global_)


class KeyedStream(DataStream):
    """A stream partitioned by ``key_selector``: no node of its own; the node reading it gets
    ``key_selector``/``key_type`` (keyed state allowed)."""

    _sp_api = "KeyedStream"

    def __init__(self, env, origin_id: int, key_selector, key_type=None):
        super().__init__(env, origin_id)
        self._key_selector = key_selector
        self._key_type = key_type

    def _reads(self) -> dict:
        return {"inputs": [self._node_id], "key_selector": self._key_selector, "key_type": self._key_type}

    def _not_on_keyed(self, what: str, pyflink_says: str):
        refuse(f"KeyedStream.{what}", f"PyFlink raises: {pyflink_says}")

    # PyFlink raises for every operator setting of a KeyedStream
    def name(self, name):
        self._not_on_keyed("name", "Set name for KeyedStream is not supported.")

    def get_name(self):
        self._not_on_keyed("get_name", "Get name of KeyedStream is not supported.")

    def uid(self, uid):
        self._not_on_keyed("uid", "Set uid for KeyedStream is not supported.")

    def set_uid_hash(self, uid_hash):
        self._not_on_keyed("set_uid_hash", "Set uid hash for KeyedStream is not supported.")

    def set_parallelism(self, parallelism):
        self._not_on_keyed("set_parallelism", "Set parallelism for KeyedStream is not supported.")

    def set_max_parallelism(self, max_parallelism):
        self._not_on_keyed("set_max_parallelism", "Set max parallelism for KeyedStream is not supported.")

    def force_non_parallel(self):
        self._not_on_keyed("force_non_parallel", "Set force non-parallel for KeyedStream is not supported.")

    def set_buffer_timeout(self, timeout_millis):
        self._not_on_keyed("set_buffer_timeout", "Set buffer timeout for KeyedStream is not supported.")

    def start_new_chain(self):
        self._not_on_keyed("start_new_chain", "Start new chain for KeyedStream is not supported.")

    def disable_chaining(self):
        self._not_on_keyed("disable_chaining", "Disable chaining for KeyedStream is not supported.")

    def slot_sharing_group(self, slot_sharing_group):
        self._not_on_keyed("slot_sharing_group", "Setting slot sharing group for KeyedStream is not supported.")

    def set_description(self, description):
        self._not_on_keyed("set_description", "KeyedStream has no operator of its own to describe.")

    def shuffle(self):
        self._not_on_keyed("shuffle", "Cannot override partitioning for KeyedStream.")

    def rescale(self):
        self._not_on_keyed("rescale", "Cannot override partitioning for KeyedStream.")

    def rebalance(self):
        self._not_on_keyed("rebalance", "Cannot override partitioning for KeyedStream.")

    def forward(self):
        self._not_on_keyed("forward", "Cannot override partitioning for KeyedStream.")

    def broadcast(self, *args, **kwargs):
        self._not_on_keyed("broadcast", "Cannot override partitioning for KeyedStream.")

    def partition_custom(self, partitioner, key_selector):
        self._not_on_keyed("partition_custom", "Cannot override partitioning for KeyedStream.")

    def get_side_output(self, output_tag):
        refuse("KeyedStream.get_side_output", "read the side output of the operator that emits it")

    # -- keyed transformations ----------------------------------------------------------------
    def key_by(self, key_selector, key_type=None) -> "KeyedStream":
        _check(key_selector, "get_key", "KeySelector")
        return KeyedStream(self._env, self._node_id, key_selector, key_type)

    def process(self, func, output_type=None) -> DataStream:
        if isinstance(func, ProcessFunction) and not isinstance(func, KeyedProcessFunction):
            raise TypeError("KeyedProcessFunction is required for KeyedStream.")
        _check(func, "process_element", "KeyedProcessFunction")
        return self._then(P.PROCESS, function=func, output_type=output_type)

    def union(self, *streams) -> DataStream:
        return DataStream(self._env, self._node_id).union(*streams)

    def reduce(self, func) -> DataStream:
        _check(func, "reduce", "ReduceFunction")
        return self._then(P.REDUCE, function=func, output_type=self.get_type())

    def _aggregation(self, kind: str, position) -> DataStream:
        return self._then(P.REDUCE, function=BuiltinAggregation(kind, position), output_type=self.get_type())

    def sum(self, position_to_sum=0) -> DataStream:
        return self._aggregation("sum", position_to_sum)

    def min(self, position_to_min=0) -> DataStream:
        return self._aggregation("min", position_to_min)

    def max(self, position_to_max=0) -> DataStream:
        return self._aggregation("max", position_to_max)

    def min_by(self, position_to_min_by=0) -> DataStream:
        return self._aggregation("min_by", position_to_min_by)

    def max_by(self, position_to_max_by=0) -> DataStream:
        return self._aggregation("max_by", position_to_max_by)

    def window(self, window_assigner) -> "WindowedStream":
        name = describe(window_assigner)
        if is_opaque(window_assigner) or not callable(getattr(type(window_assigner), "spec", None)):
            refuse(f"KeyedStream.window({name})", "only the window assigners of streamproof.flink.datastream.window "
                                                  "are modelled")
        try:
            assigner = window_assigner.spec()
        except CaptureError as exc:
            raise with_line(exc) from None
        if not isinstance(assigner, tuple):
            refuse(f"KeyedStream.window({name})", "its spec() is not a window spec")
        return WindowedStream(self, assigner)

    def count_window(self, size: int, slide: int = 0) -> "WindowedStream":
        return WindowedStream(self, ("count", size, slide or None))


class WindowedStream(_Refusing):
    """``key_by(...).window(...)``: its terminal call (``reduce``/``aggregate``/``process``/
    ``apply``) makes one WINDOW node with a :class:`~streamproof.flink.pipeline.WindowSpec`."""

    _sp_api = "WindowedStream"

    def __init__(self, keyed_stream: KeyedStream, assigner: tuple):
        self._keyed_stream = keyed_stream
        self._assigner = assigner
        self._trigger = None
        self._evictor = None
        self._allowed_lateness = 0
        self._late_tag = None

    def get_execution_environment(self):
        return self._keyed_stream._env

    def get_input_type(self):
        return self._keyed_stream.get_type()

    def trigger(self, trigger) -> "WindowedStream":
        self._trigger = trigger
        return self

    def evictor(self, evictor) -> "WindowedStream":
        self._evictor = evictor
        return self

    def allowed_lateness(self, time_ms) -> "WindowedStream":
        millis = time_ms.to_milliseconds() if hasattr(time_ms, "to_milliseconds") else time_ms
        if not isinstance(millis, int) or isinstance(millis, bool) or millis < 0:
            raise CaptureError(f"{job_line()}: WindowedStream.allowed_lateness({time_ms!r}): "
                               f"expected milliseconds (a non-negative int) or a Time/Duration")
        self._allowed_lateness = millis
        return self

    def side_output_late_data(self, output_tag) -> "WindowedStream":
        self._late_tag = output_tag
        return self

    def _window(self, function_kind: str, function, window_function=None, output_type=None) -> DataStream:
        spec = WindowSpec(self._assigner, function_kind, function, window_function, self._trigger, self._evictor,
                          self._allowed_lateness, self._late_tag)
        return self._keyed_stream._then(P.WINDOW, window=spec, output_type=output_type)

    def reduce(self, reduce_function, window_function=None, output_type=None) -> DataStream:
        _check(reduce_function, "reduce", "ReduceFunction")
        if window_function is None and output_type is None:
            output_type = self.get_input_type()
        return self._window("reduce", reduce_function, window_function, output_type)

    def aggregate(self, aggregate_function, window_function=None, accumulator_type=None,
                  output_type=None) -> DataStream:
        return self._window("aggregate", aggregate_function, window_function, output_type)

    def apply(self, window_function, output_type=None) -> DataStream:
        return self._window("apply", window_function, None, output_type)

    def process(self, process_window_function, output_type=None) -> DataStream:
        return self._window("process", process_window_function, None, output_type)


class DataStreamSink(_NodeSettings):
    """What ``print``/``add_sink``/``sink_to`` return: the sink node's settings."""

    _sp_api = "DataStreamSink"


class _RefusedType:
    """A PyFlink stream type streamproof never builds: constructing it is refused by name."""

    _reason = ""

    def __init__(self, *args, **kwargs):
        refuse(type(self).__name__, self._reason)


class AllWindowedStream(_RefusedType):
    _reason = _ALL_WINDOWS


class ConnectedStreams(_Refusing):
    """``stream1.connect(stream2)``: the two inputs of one operator (``map``/``flat_map`` with a
    ``CoMapFunction``/``CoFlatMapFunction``, ``process`` with a ``CoProcessFunction``, or on keyed
    connected streams a ``KeyedCoProcessFunction``; keyed when both inputs are keyed)."""

    _sp_api = "ConnectedStreams"

    def __init__(self, stream1: DataStream, stream2: DataStream):
        self.stream1, self.stream2 = stream1, stream2
        self._env = stream1._env

    def _is_keyed_stream(self) -> bool:
        return isinstance(self.stream1, KeyedStream) and isinstance(self.stream2, KeyedStream)

    def key_by(self, key_selector1, key_selector2, key_type=None) -> "ConnectedStreams":
        """Keys both inputs (a key selector each; records of the same key meet in one subtask)."""
        _check(key_selector1, "get_key", "KeySelector")
        _check(key_selector2, "get_key", "KeySelector")
        return ConnectedStreams(self.stream1.key_by(key_selector1, key_type), self.stream2.key_by(key_selector2, key_type))

    def _then(self, kind: str, function, output_type) -> DataStream:
        keyed = self._is_keyed_stream()
        node = self._env._sp_add(kind, inputs=[self.stream1._node_id, self.stream2._node_id], function=function,
                                 output_type=output_type, two_inputs=True,
                                 key_selector=self.stream1._key_selector if keyed else None,
                                 key_selector2=self.stream2._key_selector if keyed else None,
                                 key_type=self.stream1._key_type if keyed else None)
        return DataStream(self._env, node.id)

    def map(self, func, output_type=None) -> DataStream:
        _check(func, "map1", "CoMapFunction")
        _check(func, "map2", "CoMapFunction")
        return self._then(P.MAP, func, output_type)

    def flat_map(self, func, output_type=None) -> DataStream:
        _check(func, "flat_map1", "CoFlatMapFunction")
        _check(func, "flat_map2", "CoFlatMapFunction")
        return self._then(P.FLAT_MAP, func, output_type)

    def process(self, func, output_type=None) -> DataStream:
        if self._is_keyed_stream():
            if isinstance(func, CoProcessFunction):
                raise TypeError("KeyedCoProcessFunction is required for keyed ConnectedStreams")
        elif isinstance(func, KeyedCoProcessFunction):
            raise TypeError("CoProcessFunction is required for non-keyed ConnectedStreams")
        _check(func, "process_element1", "CoProcessFunction")
        _check(func, "process_element2", "CoProcessFunction")
        return self._then(P.PROCESS, func, output_type)


class BroadcastStream:
    """``stream.broadcast(descriptor, ...)``: no operation but ``connect`` reads it (as PyFlink's,
    a plain object: any other attribute is an AttributeError)."""

    def __init__(self, input_stream: DataStream, broadcast_state_descriptors: list):
        self.input_stream = input_stream
        self.broadcast_state_descriptors = broadcast_state_descriptors


class BroadcastConnectedStream:
    """``stream.connect(broadcast_stream)``: ``process`` with a :class:`BroadcastProcessFunction`
    (non-keyed stream) or :class:`KeyedBroadcastProcessFunction` (keyed stream) makes one
    two-input node whose second input is the broadcast side (``Node.broadcast``: the descriptors)."""

    def __init__(self, non_broadcast_stream: DataStream, broadcast_stream: BroadcastStream,
                 broadcast_state_descriptors: list):
        self.non_broadcast_stream = non_broadcast_stream
        self.broadcast_stream = broadcast_stream
        self.broadcast_state_descriptors = broadcast_state_descriptors

    def _is_keyed_stream(self) -> bool:
        return isinstance(self.non_broadcast_stream, KeyedStream)

    def process(self, func, output_type=None) -> DataStream:
        if _is_kind(func, BroadcastProcessFunction) and self._is_keyed_stream():
            raise TypeError("BroadcastProcessFunction should be applied to non-keyed DataStream")
        if _is_kind(func, KeyedBroadcastProcessFunction) and not self._is_keyed_stream():
            raise TypeError("KeyedBroadcastProcessFunction should be applied to keyed DataStream")
        stream, env = self.non_broadcast_stream, self.non_broadcast_stream._env
        keyed = self._is_keyed_stream()
        node = env._sp_add(P.PROCESS, inputs=[stream._node_id, self.broadcast_stream.input_stream._node_id],
                           function=func, output_type=output_type, two_inputs=True,
                           key_selector=stream._key_selector if keyed else None,
                           key_type=stream._key_type if keyed else None,
                           broadcast=list(self.broadcast_state_descriptors))
        return DataStream(env, node.id)


def _is_kind(func, cls: type) -> bool:
    """``isinstance(func, cls)`` for ours or apache-flink's class of that name."""
    return isinstance(func, cls) or any(c.__name__ == cls.__name__ and c.__module__.startswith("pyflink.")
                                        for c in type(func).__mro__)


class AsyncDataStream:
    """PyFlink's async I/O: refused by name (``AsyncDataStream.unordered_wait``)."""

    @staticmethod
    def _refuse(what: str):
        refuse(f"AsyncDataStream.{what}", "async I/O is not modelled")

    @staticmethod
    def unordered_wait(*args, **kwargs):
        AsyncDataStream._refuse("unordered_wait")

    @staticmethod
    def ordered_wait(*args, **kwargs):
        AsyncDataStream._refuse("ordered_wait")

    @staticmethod
    def unordered_wait_with_retry(*args, **kwargs):
        AsyncDataStream._refuse("unordered_wait_with_retry")

    @staticmethod
    def ordered_wait_with_retry(*args, **kwargs):
        AsyncDataStream._refuse("ordered_wait_with_retry")

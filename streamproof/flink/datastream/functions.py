"""``pyflink.datastream.functions`` for keyed operators: :class:`KeyedProcessFunction` (with
its ``Context`` and ``OnTimerContext``), :class:`RuntimeContext`, the state-function bases, and
the other function classes PyFlink defines, which streamproof refuses with a reason (it certifies
keyed process functions)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Generic, TypeVar

from streamproof.flink.datastream._base import (
    AggregateFunction, Function, FunctionWrapper, ReduceFunction, ReduceFunctionWrapper,
)
from streamproof.flink.datastream.state import (
    AggregatingState, AggregatingStateDescriptor, ListState, ListStateDescriptor, MapState, MapStateDescriptor,
    ReducingState, ReducingStateDescriptor, ValueState, ValueStateDescriptor,
)
from streamproof.flink.datastream.time_domain import TimeDomain
from streamproof.flink.datastream.timerservice import TimerService

__all__ = [
    "RuntimeContext", "MapFunction", "CoMapFunction", "FlatMapFunction", "CoFlatMapFunction", "ReduceFunction",
    "AggregateFunction", "KeySelector", "FilterFunction", "Partitioner", "ProcessFunction",
    "KeyedProcessFunction", "CoProcessFunction", "KeyedCoProcessFunction", "TimerService", "TimeDomain",
    "Function", "KeyedStateStore", "FunctionWrapper", "ReduceFunctionWrapper", "BroadcastProcessFunction", "BaseBroadcastProcessFunction",
    "KeyedBroadcastProcessFunction", "WindowFunction", "AllWindowFunction", "ProcessWindowFunction",
    "ProcessAllWindowFunction",
]


class KeyedStateStore(ABC):
    @abstractmethod
    def get_state(self, state_descriptor: ValueStateDescriptor) -> ValueState:
        pass

    @abstractmethod
    def get_list_state(self, state_descriptor: ListStateDescriptor) -> ListState:
        pass

    @abstractmethod
    def get_map_state(self, state_descriptor: MapStateDescriptor) -> MapState:
        pass

    @abstractmethod
    def get_reducing_state(self, state_descriptor: ReducingStateDescriptor) -> ReducingState:
        pass

    @abstractmethod
    def get_aggregating_state(self, state_descriptor: AggregatingStateDescriptor) -> AggregatingState:
        pass


class RuntimeContext(KeyedStateStore):
    """What ``open(runtime_context)`` receives: keyed state and where the function runs."""

    @abstractmethod
    def get_task_name(self) -> str:
        pass

    @abstractmethod
    def get_number_of_parallel_subtasks(self) -> int:
        pass

    @abstractmethod
    def get_max_number_of_parallel_subtasks(self) -> int:
        pass

    @abstractmethod
    def get_index_of_this_subtask(self) -> int:
        pass

    @abstractmethod
    def get_attempt_number(self) -> int:
        pass

    @abstractmethod
    def get_task_name_with_subtasks(self) -> str:
        pass

    @abstractmethod
    def get_job_parameter(self, key: str, default_value: str):
        pass

    @abstractmethod
    def get_metrics_group(self):
        pass


class MapFunction(Function):
    @abstractmethod
    def map(self, value):
        pass


class CoMapFunction(Function):
    @abstractmethod
    def map1(self, value):
        pass

    @abstractmethod
    def map2(self, value):
        pass


class FlatMapFunction(Function):
    @abstractmethod
    def flat_map(self, value):
        pass


class CoFlatMapFunction(Function):
    @abstractmethod
    def flat_map1(self, value):
        pass

    @abstractmethod
    def flat_map2(self, value):
        pass


class KeySelector(Function):
    @abstractmethod
    def get_key(self, value):
        pass


class FilterFunction(Function):
    @abstractmethod
    def filter(self, value):
        pass


class Partitioner(Function):
    @abstractmethod
    def partition(self, key: Any, num_partitions: int) -> int:
        pass


class ProcessFunction(Function):
    """A (non-keyed) process function. PyFlink runs it on a ``DataStream`` only (``KeyedStream.process``
    requires a :class:`KeyedProcessFunction`), so streamproof refuses it."""

    class Context(ABC):
        @abstractmethod
        def timer_service(self) -> TimerService:
            pass

        @abstractmethod
        def timestamp(self) -> int:
            pass

    @abstractmethod
    def process_element(self, value, ctx: "ProcessFunction.Context"):
        pass


class KeyedProcessFunction(Function):
    """A keyed function: ``process_element(value, ctx)`` for every element and
    ``on_timer(timestamp, ctx)`` for every timer, each yielding its outputs (``yield value``, or
    ``yield output_tag, value`` for a side output) or returning None."""

    class Context(ABC):
        @abstractmethod
        def get_current_key(self):
            pass

        @abstractmethod
        def timer_service(self) -> TimerService:
            pass

        @abstractmethod
        def timestamp(self) -> int:
            pass

    class OnTimerContext(Context):
        @abstractmethod
        def time_domain(self) -> TimeDomain:
            pass

    @abstractmethod
    def process_element(self, value, ctx: "KeyedProcessFunction.Context"):
        pass

    def on_timer(self, timestamp: int, ctx: "KeyedProcessFunction.OnTimerContext"):
        pass


class CoProcessFunction(Function):
    """Two inputs: refused by streamproof (one keyed input only)."""

    @abstractmethod
    def process_element1(self, value, ctx):
        pass

    @abstractmethod
    def process_element2(self, value, ctx):
        pass


class KeyedCoProcessFunction(Function):
    """Two keyed inputs: refused by streamproof (one keyed input only)."""

    @abstractmethod
    def process_element1(self, value, ctx):
        pass

    @abstractmethod
    def process_element2(self, value, ctx):
        pass

    def on_timer(self, timestamp: int, ctx):
        pass


class BaseBroadcastProcessFunction(Function):
    """The base of :class:`BroadcastProcessFunction` and :class:`KeyedBroadcastProcessFunction`
    (run in jobs: ``stream.connect(other.broadcast(descriptor)).process(function)``)."""

    class BaseContext(ABC):
        @abstractmethod
        def timestamp(self) -> int:
            pass

        @abstractmethod
        def current_processing_time(self) -> int:
            pass

        @abstractmethod
        def current_watermark(self) -> int:
            pass

    class Context(BaseContext):
        """``process_broadcast_element``'s context: read-write broadcast state."""

        @abstractmethod
        def get_broadcast_state(self, state_descriptor: MapStateDescriptor):
            pass

    class ReadOnlyContext(BaseContext):
        """``process_element``'s context: read-only broadcast state."""

        @abstractmethod
        def get_broadcast_state(self, state_descriptor: MapStateDescriptor):
            pass


class BroadcastProcessFunction(BaseBroadcastProcessFunction):
    """A non-keyed stream connected with a broadcast stream: ``process_element(value, ctx)`` (read-only
    broadcast state) and ``process_broadcast_element(value, ctx)`` (read-write)."""

    class Context(BaseBroadcastProcessFunction.Context, ABC):
        pass

    class ReadOnlyContext(BaseBroadcastProcessFunction.ReadOnlyContext, ABC):
        pass

    @abstractmethod
    def process_element(self, value, ctx: "BroadcastProcessFunction.ReadOnlyContext"):
        pass

    @abstractmethod
    def process_broadcast_element(self, value, ctx: "BroadcastProcessFunction.Context"):
        pass


class KeyedBroadcastProcessFunction(BaseBroadcastProcessFunction):
    """A keyed stream connected with a broadcast stream: ``process_element(value, ctx)`` with keyed
    state, timers and read-only broadcast state, ``process_broadcast_element(value, ctx)`` with
    read-write broadcast state, ``on_timer(timestamp, ctx)``. (PyFlink has no ``apply_to_keyed_state``.)"""

    class Context(BaseBroadcastProcessFunction.Context, ABC):
        pass

    class ReadOnlyContext(BaseBroadcastProcessFunction.ReadOnlyContext, ABC):
        @abstractmethod
        def timer_service(self) -> TimerService:
            pass

        @abstractmethod
        def get_current_key(self):
            pass

    class OnTimerContext(ReadOnlyContext, ABC):
        @abstractmethod
        def time_domain(self) -> TimeDomain:
            pass

        @abstractmethod
        def get_current_key(self):
            pass

    @abstractmethod
    def process_element(self, value, ctx: "KeyedBroadcastProcessFunction.ReadOnlyContext"):
        pass

    @abstractmethod
    def process_broadcast_element(self, value, ctx: "KeyedBroadcastProcessFunction.Context"):
        pass

    def on_timer(self, timestamp: int, ctx: "KeyedBroadcastProcessFunction.OnTimerContext"):
        pass


# -- window functions (run by streamproof.flink.window_operator) ----------------------------------
IN, OUT, KEY, W, W2 = TypeVar("IN"), TypeVar("OUT"), TypeVar("KEY"), TypeVar("W"), TypeVar("W2")


class WindowFunction(Function, Generic[IN, OUT, KEY, W]):
    """Evaluated per key and window: ``apply(key, window, inputs)`` returns (or yields) the outputs."""

    @abstractmethod
    def apply(self, key, window, inputs):
        pass


class AllWindowFunction(Function, Generic[IN, OUT, W]):
    """Evaluated per window of a non-keyed stream: ``apply(window, inputs)``."""

    @abstractmethod
    def apply(self, window, inputs):
        pass


class ProcessWindowFunction(Function, Generic[IN, OUT, KEY, W]):
    """Evaluated per key and window with a context: ``process(key, context, elements)`` returns (or
    yields) the outputs; ``clear(context)`` when the window expires."""

    class Context(ABC, Generic[W2]):
        """The window being evaluated, the time, and per-window / per-key state."""

        @abstractmethod
        def window(self):
            pass

        @abstractmethod
        def current_processing_time(self) -> int:
            pass

        @abstractmethod
        def current_watermark(self) -> int:
            pass

        @abstractmethod
        def window_state(self) -> KeyedStateStore:
            pass

        @abstractmethod
        def global_state(self) -> KeyedStateStore:
            pass

    @abstractmethod
    def process(self, key, context: "ProcessWindowFunction.Context", elements):
        pass

    def clear(self, context: "ProcessWindowFunction.Context") -> None:
        pass


class ProcessAllWindowFunction(Function, Generic[IN, OUT, W]):
    """Evaluated per window of a non-keyed stream with a context: ``process(context, elements)``."""

    class Context(ABC, Generic[W2]):
        @abstractmethod
        def window(self):
            pass

        @abstractmethod
        def window_state(self) -> KeyedStateStore:
            pass

        @abstractmethod
        def global_state(self) -> KeyedStateStore:
            pass

    @abstractmethod
    def process(self, context: "ProcessAllWindowFunction.Context", elements):
        pass

    def clear(self, context: "ProcessAllWindowFunction.Context") -> None:
        pass

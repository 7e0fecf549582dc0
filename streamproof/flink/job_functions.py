"""The user functions of a captured PyFlink job as runtime functions, each subtask with its own
copy of the function object (PyFlink pickles the function to every subtask).

- keyed (``key_by`` before it): ``map``/``flat_map``/``filter``/``reduce``/rolling aggregations and
  ``process`` with a ``KeyedProcessFunction`` run as keyed process functions (keyed state, timers);
- non-keyed: ``map``/``flat_map``/``filter`` and ``process`` with a ``ProcessFunction`` run as
  :class:`streamproof.impl.tasks.chained_operators.ProcessOperator` functions (no keyed state: PyFlink raises);
- source-chained stateless functions: ``value -> list of values``.

Broadcast-state functions are in :mod:`streamproof.flink.broadcast_functions`.
"""

from __future__ import annotations

import copy
import itertools
import re
import struct
from typing import Any, Callable

import streamproof.flink.adapter as adapter
from streamproof.flink.datastream import functions as fn
from streamproof.flink.errors import UnsupportedFeature
from streamproof.impl.operators.user_clock import user_clock_for
from streamproof.impl.tasks.stream_elements import SecondInput
from streamproof.impl.timers.internal_timer_service import MIN_WATERMARK

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")  # in a default repr: differs between runs

KEYED_KINDS = ("map", "flat_map", "filter", "reduce", "process")


def _method(function: Any, name: str) -> Callable:
    """PyFlink accepts a function object (``MapFunction.map``) or a plain callable."""
    method = getattr(function, name, None)
    if method is not None and not isinstance(function, type) and not _is_plain_callable(function):
        return method
    if callable(function):
        return function
    raise TypeError(f"{function!r} has no {name}() and is not callable")


def _is_plain_callable(function: Any) -> bool:
    return callable(function) and not isinstance(function, fn.Function) and not hasattr(function, "open")


def _results(result: Any) -> list:
    """As PyFlink's ``_emit_results``: a falsy result emits nothing, anything else is iterated."""
    return list(result) if result else []


def values_of(kind: str, function: Any) -> Callable[[Any], list]:
    """``value -> list of values`` for a stateless map/flat_map/filter."""
    if kind == "map":
        call = _method(function, "map")
        return lambda value: [call(value)]
    if kind == "flat_map":
        call = _method(function, "flat_map")
        return lambda value: _results(call(value))
    if kind == "filter":
        call = _method(function, "filter")
        return lambda value: [value] if call(value) else []
    raise ValueError(f"not a stateless function kind: {kind}")


# -- values as their declared type ---------------------------------------------------------------------
def typed(type_info: Any) -> Callable[[Any], Any] | None:
    """What PyFlink's coder of ``type_info`` makes of a Python value: a ``Types.ROW``/``ROW_NAMED``
    makes a tuple or list a ``Row`` (with its field names), a ``Types.TUPLE`` a list a tuple, a
    ``Types.FLOAT`` a float of single precision; None when the type changes nothing (pickled,
    other basic types)."""
    from streamproof.flink.common.typeinfo import BasicType, BasicTypeInfo, RowTypeInfo, TupleTypeInfo
    from streamproof.flink.common.types import Row

    if isinstance(type_info, BasicTypeInfo) and type_info._basic_type is BasicType.FLOAT:
        # Java's float: PyFlink's FloatCoder keeps single precision (110.1 -> 110.0999984741211)
        return lambda value: struct.unpack("f", struct.pack("f", value))[0] \
            if isinstance(value, (int, float)) and not isinstance(value, bool) else value

    if isinstance(type_info, RowTypeInfo):
        names = type_info.get_field_names()
        inner = [typed(t) for t in type_info.get_field_types()]

        def to_row(value: Any) -> Any:
            """As PyFlink's RowCoder decodes it: a Row with the type's field names and row kind."""
            if not isinstance(value, (tuple, list, Row)):
                return value
            fields = [f(v) if f else v for f, v in zip(inner, value)]
            row = Row(*fields)
            row.set_field_names(names)
            if isinstance(value, Row):
                row.set_row_kind(value.get_row_kind())
            return row
        return to_row
    if isinstance(type_info, TupleTypeInfo):
        inner = [typed(t) for t in type_info.get_field_types()]
        if not any(inner):
            return lambda value: tuple(value) if isinstance(value, list) else value
        return lambda value: tuple(f(v) if f else v for f, v in zip(inner, value)) \
            if isinstance(value, (tuple, list)) else value
    return None


# -- non-keyed ------------------------------------------------------------------------------------
class _NoTimers(fn.TimerService):
    def __init__(self, owner: "NonKeyed"):
        self._owner = owner

    def current_processing_time(self) -> int:
        return self._owner.now

    def current_watermark(self) -> int:
        return self._owner.watermark

    def _refuse(self, *args) -> None:
        raise RuntimeError("Setting timers is only supported on a keyed streams.")

    register_processing_time_timer = register_event_time_timer = _refuse
    delete_processing_time_timer = delete_event_time_timer = _refuse


class _ProcessContext(fn.ProcessFunction.Context):
    def __init__(self, owner: "NonKeyed"):
        self._owner = owner
        self._timers = _NoTimers(owner)

    def timer_service(self):
        return self._timers

    def timestamp(self):
        return None if self._owner.ts == MIN_WATERMARK else self._owner.ts


class _NonKeyedRuntimeContext(fn.RuntimeContext):
    """``open(runtime_context)`` of a function on a non-keyed stream: where it runs; keyed state
    raises, as PyFlink's."""

    def __init__(self, name: str, subtask: int, parallelism: int):
        self._name, self._subtask, self._parallelism = name, subtask, parallelism

    def get_index_of_this_subtask(self) -> int:
        return self._subtask

    def get_number_of_parallel_subtasks(self) -> int:
        return self._parallelism

    def get_max_number_of_parallel_subtasks(self) -> int:
        return 128

    def get_task_name_with_subtasks(self) -> str:
        return f"{self._name} ({self._subtask + 1}/{self._parallelism})"

    def get_job_parameter(self, key: str, default_value: str):
        return default_value

    def get_task_name(self) -> str:
        return self._name

    def get_attempt_number(self) -> int:
        return 0

    def _keyed(self, *args):
        raise RuntimeError("Keyed state can only be used on a 'keyed stream', i.e., after a 'keyBy()' operation.")

    get_state = get_list_state = get_map_state = get_reducing_state = get_aggregating_state = _keyed

    def get_metrics_group(self):
        from streamproof.flink.metrics import MetricGroup
        return MetricGroup()


class NonKeyed:
    """A map/flat_map/filter or ``ProcessFunction`` on a non-keyed stream, as a
    :class:`~streamproof.impl.tasks.chained_operators.ProcessOperator` function."""

    side_outputs = True  # False: no get_side_output reads this operator, so PyFlink emits (tag, value) as a value

    def __init__(self, kind: str, function: Any, name: str):
        self.kind, self.function, self.name = kind, copy.deepcopy(function), name
        self.now, self.watermark, self.ts = 0, MIN_WATERMARK, MIN_WATERMARK
        self._ctx = _ProcessContext(self)
        self._values = values_of(kind, self.function) if kind != "process" else None
        # time.time()/datetime.now() read the processing time and random draws are pinned to the
        # record, as in keyed callbacks (impl/operators/user_clock.py)
        self._argument = None
        self._clock = user_clock_for(self.function, lambda: self.now, self._seed)

    def _seed(self) -> str:
        return _ADDRESS.sub("", f"{self.kind}|{self.name}|{self.ts!r}|{self._argument!r}")

    def open(self, subtask: int, parallelism: int) -> None:
        if hasattr(self.function, "open") and not _is_plain_callable(self.function):
            self.function.open(_NonKeyedRuntimeContext(self.name, subtask, parallelism))

    def close(self) -> None:
        if hasattr(self.function, "close") and not _is_plain_callable(self.function):
            self.function.close()

    def process(self, value: Any, timestamp: int, watermark: int, now: int) -> list:
        self.ts, self.watermark, self.now = timestamp, watermark, now
        clock = self._clock
        if clock is None:
            return self._process(value)
        self._argument = value
        clock.enter()
        try:
            return self._process(value)
        finally:
            clock.exit()

    def _process(self, value: Any) -> list:
        if self._values is not None:
            return [(None, v) for v in self._values(value)]
        out = []
        for result in _results(self.function.process_element(value, self._ctx)):
            if self.side_outputs and isinstance(result, tuple) and result and adapter._is_output_tag(result[0]):
                out.append((result[0].tag_id, result[1]))
            else:
                out.append((None, result))
        return out


class NonKeyedCo(NonKeyed):
    """A ``CoMapFunction``/``CoFlatMapFunction`` or ``CoProcessFunction`` on non-keyed connected
    streams: a record of the second input (a :class:`~streamproof.impl.tasks.stream_elements.SecondInput`) goes to
    ``map2``/``flat_map2``/``process_element2``, any other to the first input's method."""

    def __init__(self, kind: str, function: Any, name: str):
        super().__init__("process", function, name)
        self.co_kind = kind

    def _process(self, value: Any) -> list:
        second = type(value) is SecondInput
        if second:
            value = value.value
        if self.co_kind != "process":
            return [(None, v) for v in co_values_of(self.co_kind, self.function, 2 if second else 1)(value)]
        method = self.function.process_element2 if second else self.function.process_element1
        out = []
        for result in _results(method(value, self._ctx)):
            if self.side_outputs and isinstance(result, tuple) and result and adapter._is_output_tag(result[0]):
                out.append((result[0].tag_id, result[1]))
            else:
                out.append((None, result))
        return out


def co_values_of(kind: str, function: Any, which: int) -> Callable[[Any], list]:
    """``value -> outputs`` of a ``CoMapFunction`` (``map1``/``map2``) or ``CoFlatMapFunction``."""
    method = getattr(function, f"{kind}{which}", None)
    if method is None:
        raise UnsupportedFeature(f"{type(function).__name__} has no {kind}{which}(): connected streams need a "
                                 f"Co{'Map' if kind == 'map' else 'FlatMap'}Function")
    if kind == "map":
        return lambda value: [method(value)]
    return lambda value: _results(method(value))


# -- keyed ------------------------------------------------------------------------------------------
_REDUCE_STATE_NAMES = itertools.count()

class KeyedFunction(fn.KeyedProcessFunction):
    """A map/flat_map/filter/reduce (or rolling aggregation) on a keyed stream as PyFlink runs it:
    a keyed operator whose rich function may use keyed state; ``reduce`` keeps the running value in
    keyed state and emits it for every element (Flink's ``StreamGroupedReduceOperator``)."""

    def __init__(self, kind: str, function: Any):
        self.kind, self.function = kind, function
        self._state = None

    def open(self, runtime_context) -> None:
        if self.kind == "reduce":
            from streamproof.flink.common.typeinfo import Types
            from streamproof.flink.datastream.state import ValueStateDescriptor
            # as PyFlink 2.3's KeyedStream.reduce (sum/min/max...): its state is named "_reduce_state" + uuid4() in
            # open(), a new name on every start, so a restored attempt finds none and the rolling value starts
            # again (found by running the corpus on Flink, docs/conformance.md); a counter, not a uuid: reproducible
            name = f"_reduce_state#{next(_REDUCE_STATE_NAMES)}"
            self._state = runtime_context.get_state(ValueStateDescriptor(name, Types.PICKLED_BYTE_ARRAY()))
        if hasattr(self.function, "open") and not _is_plain_callable(self.function):
            self.function.open(runtime_context)

    def close(self) -> None:
        if hasattr(self.function, "close") and not _is_plain_callable(self.function):
            self.function.close()

    def process_element(self, value, ctx):
        if self.kind == "reduce":
            current = self._state.value()
            current = value if current is None else reduce_with(self.function, current, value)
            self._state.update(current)
            return [current]
        return values_of(self.kind, self.function)(value)


class KeyedCoFunction(fn.KeyedProcessFunction):
    """A function of keyed connected streams (``KeyedCoProcessFunction``, or a ``CoMapFunction`` /
    ``CoFlatMapFunction`` whose rich function may use keyed state) as one keyed function: one
    timer service and one keyed state for both inputs, as Flink's ``KeyedCoProcessOperator``; a
    second-input record (:class:`~streamproof.impl.tasks.stream_elements.SecondInput`) goes to the second method."""

    def __init__(self, kind: str, function: Any):
        self.kind, self.function = kind, function

    def open(self, runtime_context) -> None:
        if hasattr(self.function, "open"):
            self.function.open(runtime_context)

    def close(self) -> None:
        if hasattr(self.function, "close"):
            self.function.close()

    def process_element(self, value, ctx):
        second = type(value) is SecondInput
        if second:
            value = value.value
        if self.kind == "process":
            method = self.function.process_element2 if second else self.function.process_element1
            return method(value, ctx)
        return co_values_of(self.kind, self.function, 2 if second else 1)(value)

    def on_timer(self, timestamp, ctx):
        on_timer = getattr(self.function, "on_timer", None)
        return on_timer(timestamp, ctx) if on_timer is not None else None


def keyed_co_factory(kind: str, function: Any) -> Callable[[], Any]:
    """A factory of fresh impl keyed functions for a keyed two-input node."""
    reason = adapter.refused_calls(type(function))
    if reason:
        raise UnsupportedFeature(reason)
    if kind == "process" and not adapter.is_keyed_co_process_function(type(function)):
        raise UnsupportedFeature(f"keyed connected streams' process needs a KeyedCoProcessFunction, got "
                                 f"{type(function).__name__}")

    def build() -> Any:
        built = adapter.PyFlinkFunctionAdapter(KeyedCoFunction(kind, copy.deepcopy(function)))
        built.user_class_name = type(function).__name__
        built.interruptible_timers = True
        return built
    return build


def reduce_with(function: Any, a: Any, b: Any) -> Any:
    """``ReduceFunction.reduce``, a callable, or a rolling aggregation ``("sum"|"min"|"max"|
    "min_by"|"max_by", position)`` (other fields from the first record, as Flink's aggregators)."""
    aggregation = getattr(function, "aggregation", None)
    if aggregation is None:
        return _method(function, "reduce")(a, b)
    how, position = aggregation
    if how in ("min_by", "max_by"):
        better = _field(b, position) < _field(a, position) if how == "min_by" else _field(b, position) > _field(a, position)
        return b if better else a
    x, y = _field(a, position), _field(b, position)
    new = x + y if how == "sum" else min(x, y) if how == "min" else max(x, y)
    return _with_field(a, position, new)


def _field(value: Any, position: Any) -> Any:
    if isinstance(value, (int, float)) and position in (0, None):
        return value
    return value[position]


def _with_field(value: Any, position: Any, new: Any) -> Any:
    if isinstance(value, (int, float)) and position in (0, None):
        return new
    if isinstance(value, tuple):
        items = list(value)
        items[position] = new
        return tuple(items)
    value = copy.copy(value)
    value[position] = new
    return value


def keyed_factory(kind: str, function: Any) -> Callable[[], Any]:
    """A factory of fresh impl keyed functions for a keyed node (each subtask its own copy)."""
    if kind == "process":
        if not adapter.is_pyflink_style(type(function)):
            raise UnsupportedFeature(f"KeyedStream.process needs a KeyedProcessFunction, got {type(function).__name__}")
        reason = adapter.refusal_reason(type(function))
        if reason:
            raise UnsupportedFeature(reason)

        def build() -> Any:
            built = adapter.adapt(copy.deepcopy(function))
            built.interruptible_timers = True
            return built
        return build

    def build_keyed() -> Any:
        built = adapter.PyFlinkFunctionAdapter(KeyedFunction(kind, copy.deepcopy(function)))
        built.interruptible_timers = True
        return built
    return build_keyed

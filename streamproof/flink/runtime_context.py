"""The runtime context a PyFlink-style function's ``open()`` gets on streamproof's runtime
(:class:`_RuntimeContext`), its keyed state handles with PyFlink's serialized semantics (reads and
writes are copies, :func:`_copy`, a serialization round trip), and state TTL on them."""

from __future__ import annotations

import copy
import functools
from typing import Any

from streamproof.flink.common.typeinfo import WrittenFloat, check_value
from streamproof.flink.common.types import Row
from streamproof.flink.datastream import functions as fn
from streamproof.flink.datastream import state as st
from streamproof.flink.errors import UnsupportedFeature
from streamproof.flink.metrics import MetricGroup
from streamproof.flink.state_ttl import TtlConfig, ttl_state
from streamproof.impl import operators as impl

_ATOMS = (int, float, str, bool, bytes, type(None))


def _copy(value: Any, depth: int = 0) -> Any:
    """What a serialize/deserialize round trip gives: an equal, unshared object. Atoms, tuples,
    lists, dicts, sets and rows are copied directly (``copy.deepcopy`` was most of the time of an
    operator keeping a list of rows in state); anything else, or nesting deeper than 32 levels (a
    cycle), by ``copy.deepcopy``."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is WrittenFloat:  # PyFlink's state cache: the double as written (checkpoints round it)
        return float(value)
    if depth > 32:
        return copy.deepcopy(value)
    depth += 1
    if kind is list:
        return [_copy(v, depth) for v in value]
    if kind is tuple:
        return tuple(_copy(v, depth) for v in value)
    if kind is dict:
        return {_copy(k, depth): _copy(v, depth) for k, v in value.items()}
    if kind is set or kind is frozenset:
        return kind(_copy(v, depth) for v in value)
    if kind is Row and type(getattr(value, "_values", None)) is list:
        row = object.__new__(Row)
        row.__dict__.update(value.__dict__)
        row._values = [_copy(v, depth) for v in value._values]
        if "_fields" in row.__dict__ and type(row._fields) is list:
            row._fields = list(row._fields)
        return row
    if _plain_class(kind) and type(getattr(value, "__dict__", None)) is dict:
        instance = object.__new__(kind)  # what pickle does for an instance without hooks
        instance.__dict__.update(_copy(value.__dict__, depth))
        return instance
    return copy.deepcopy(value)


@functools.lru_cache(maxsize=1024)
def _plain_class(kind: type) -> bool:
    """A class whose instances pickle and deep-copy as their ``__dict__`` alone (no hooks, no
    slots, no metaclass, ``object.__new__``)."""
    hooks = ("__reduce_ex__", "__reduce__", "__getstate__", "__setstate__", "__deepcopy__", "__copy__",
             "__getnewargs__", "__getnewargs_ex__")
    return type(kind) is type and kind.__new__ is object.__new__ and \
        all(getattr(kind, hook, None) is getattr(object, hook, None) for hook in hooks) and \
        not any("__slots__" in vars(base) for base in kind.__mro__)


def _mro_names(cls: type) -> list[tuple[str, str]]:
    return [(c.__module__, c.__name__) for c in getattr(cls, "__mro__", ())]


def _descriptor_kind(descriptor: Any) -> str:
    for kind in ("ValueStateDescriptor", "ListStateDescriptor", "MapStateDescriptor",
                 "ReducingStateDescriptor", "AggregatingStateDescriptor"):
        if any(n == kind for _, n in _mro_names(type(descriptor))):
            return kind
    raise TypeError(f"{descriptor!r} is not a state descriptor of streamproof.flink.datastream.state")


class _RuntimeContext(fn.RuntimeContext):
    """``open(runtime_context)``: keyed state on the operator's backend, and where it runs
    (``adapter``: the :class:`~streamproof.flink.adapter.PyFlinkFunctionAdapter` running the function)."""

    def __init__(self, adapter: Any, impl_ctx: impl.RuntimeContext):
        self._adapter, self._impl = adapter, impl_ctx
        self._states: dict[str, tuple[str, Any]] = {}
        self._metrics = MetricGroup()

    def _state(self, descriptor: Any, expected: str, make):
        kind = _descriptor_kind(descriptor)
        name = descriptor.name
        if kind != expected:
            raise TypeError(f"get_{expected[:-len('StateDescriptor')].lower()}_state needs a {expected}, "
                            f"got a {kind} ('{name}')")
        known = self._states.get(name)
        if known is not None:
            if known[0] != kind:
                raise ValueError(f"The state name '{name}' is already in use and not a {kind[:-len('Descriptor')]}.")
            return known[1]
        where = f"{self._adapter.user_class_name} state '{name}'"
        ttl = getattr(descriptor, "_ttl_config", None)
        if ttl is not None:  # state TTL (streamproof/flink/state_ttl.py)
            config = TtlConfig.of(ttl, where)
            if config is not None:
                handle = ttl_state(self._impl._backend, descriptor, kind, where, config, self._ttl_clock(where),
                                   _copy)
                self._states[name] = (kind, handle)
                return handle
        handle = make(self._impl._backend, descriptor, where)
        self._states[name] = (kind, handle)
        return handle

    def _ttl_clock(self, where: str):
        """State TTL's clock: the operator's processing time (the clock itself: a TRIGGER flush's
        ``current_processing_time()`` reading MAX is the timer service's, not the clock's)."""
        service = getattr(self._impl, "processing_time_service", None)
        clock = getattr(service, "processing_time_service", service)
        if clock is None:
            raise UnsupportedFeature(f"{where}: state TTL needs the operator's processing time, which this "
                                     "context does not have")
        if hasattr(clock, "get_current_processing_time"):
            return clock.get_current_processing_time
        return clock.current_processing_time

    def get_state(self, state_descriptor):
        return self._state(state_descriptor, "ValueStateDescriptor", _ValueState)

    def get_list_state(self, state_descriptor):
        return self._state(state_descriptor, "ListStateDescriptor", _ListState)

    def get_map_state(self, state_descriptor):
        return self._state(state_descriptor, "MapStateDescriptor", _MapState)

    def get_reducing_state(self, state_descriptor):
        return self._state(state_descriptor, "ReducingStateDescriptor", _ReducingState)

    def get_aggregating_state(self, state_descriptor):
        return self._state(state_descriptor, "AggregatingStateDescriptor", _AggregatingState)

    def get_task_name(self) -> str:
        return self._impl.task_name

    def get_number_of_parallel_subtasks(self) -> int:
        return self._impl.parallelism

    def get_max_number_of_parallel_subtasks(self) -> int:
        return self._impl.max_parallelism

    def get_index_of_this_subtask(self) -> int:
        return self._impl.subtask_index

    def get_attempt_number(self) -> int:
        return self._impl.attempt_number

    def get_task_name_with_subtasks(self) -> str:
        return f"{self.get_task_name()} ({self.get_index_of_this_subtask() + 1}/{self.get_number_of_parallel_subtasks()})"

    def get_job_parameter(self, key: str, default_value: str):
        return self._adapter.job_parameters.get(key, default_value)

    def get_metrics_group(self) -> MetricGroup:
        return self._metrics

    def get_broadcast_state(self, state_descriptor):
        raise UnsupportedFeature(f"broadcast state is not supported (descriptor '{state_descriptor.name}')")


# -- keyed state with PyFlink's (serialized) semantics ------------------------------------------
class _Handle:
    def __init__(self, backend: impl.KeyedStateBackend, descriptor: Any, where: str):
        self._backend, self._name, self._where = backend, descriptor.name, where
        self._type_info = getattr(descriptor, "type_info", None)

    def clear(self) -> None:
        self._backend.clear(self._name)


class _ValueState(_Handle, st.ValueState):
    def value(self):
        return _copy(self._backend.get(self._name))

    def update(self, value) -> None:
        if value is None:
            self._backend.clear(self._name)  # Flink: updating with null removes the value
        else:
            self._backend.put(self._name, check_value(self._type_info, _copy(value), self._where))


class _ListState(_Handle, st.ListState):
    def __init__(self, backend, descriptor, where):
        super().__init__(backend, descriptor, where)
        self._type_info = getattr(descriptor, "elem_type_info", None)

    def _stored(self) -> list:
        return self._backend.get(self._name) or []

    def get(self):
        return [_copy(v) for v in self._stored()]

    def add(self, value) -> None:
        self.add_all([value])

    def add_all(self, values) -> None:
        new = [check_value(self._type_info, _copy(v), self._where) for v in values]
        self._backend.put(self._name, self._stored() + new)

    def update(self, values) -> None:
        self.clear()
        self.add_all(values)


class _MapState(_Handle, st.MapState):
    def __init__(self, backend, descriptor, where):
        super().__init__(backend, descriptor, where)
        self._key_type = getattr(descriptor, "key_type_info", None)
        self._value_type = getattr(descriptor, "value_type_info", None)

    def _stored(self) -> dict:
        return self._backend.get(self._name) or {}

    def get(self, key):
        return _copy(self._stored().get(key))

    def put(self, key, value) -> None:
        self.put_all([(key, value)])

    def put_all(self, dict_value) -> None:
        pairs = dict_value.items() if hasattr(dict_value, "items") else dict_value
        updated = dict(self._stored())
        for key, value in pairs:
            key = check_value(self._key_type, _copy(key), self._where)
            updated[key] = check_value(self._value_type, _copy(value), self._where)
        self._backend.put(self._name, updated)

    def remove(self, key) -> None:
        stored = self._stored()
        if key in stored:
            updated = dict(stored)
            del updated[key]
            if updated:
                self._backend.put(self._name, updated)
            else:
                self._backend.clear(self._name)

    def contains(self, key) -> bool:
        return key in self._stored()

    def items(self):
        return [(_copy(k), _copy(v)) for k, v in self._stored().items()]

    def keys(self):
        return [_copy(k) for k in self._stored()]

    def values(self):
        return [_copy(v) for v in self._stored().values()]

    def is_empty(self) -> bool:
        return not self._stored()


class _ReducingState(_Handle, st.ReducingState):
    def __init__(self, backend, descriptor, where):
        super().__init__(backend, descriptor, where)
        function = descriptor.get_reduce_function()
        self._reduce = function.reduce if hasattr(function, "reduce") else function

    def get(self):
        return _copy(self._backend.get(self._name))

    def add(self, value) -> None:
        current = self._backend.get(self._name)
        result = value if current is None else self._reduce(_copy(current), value)
        self._backend.put(self._name, check_value(self._type_info, _copy(result), self._where))


class _AggregatingState(_Handle, st.AggregatingState):
    def __init__(self, backend, descriptor, where):
        super().__init__(backend, descriptor, where)
        self._function = descriptor.get_agg_function()

    def get(self):
        accumulator = self._backend.get(self._name)
        return None if accumulator is None else self._function.get_result(_copy(accumulator))

    def add(self, value) -> None:
        if value is None:  # PyFlink: adding None clears the state
            self.clear()
            return
        accumulator = self._backend.get(self._name)
        accumulator = self._function.create_accumulator() if accumulator is None else _copy(accumulator)
        accumulator = self._function.add(value, accumulator)
        self._backend.put(self._name, check_value(self._type_info, _copy(accumulator), self._where))

"""The broadcast-state functions of a captured PyFlink job (``connect(stream.broadcast(descriptors))
.process(...)``) as runtime functions: a ``BroadcastProcessFunction`` on a non-keyed stream and a
``KeyedBroadcastProcessFunction`` as one keyed function, with broadcast state read-write in
``process_broadcast_element`` and read-only elsewhere, as PyFlink gives it."""

from __future__ import annotations

import copy
from typing import Any, Callable

import streamproof.flink.adapter as adapter
from streamproof.flink.datastream import functions as fn
from streamproof.flink.datastream import state as st
from streamproof.flink.errors import UnsupportedFeature
from streamproof.flink.job_functions import NonKeyed, _results
from streamproof.flink.runtime_context import _copy
from streamproof.impl.tasks.stream_elements import SecondInput
from streamproof.impl.timers.internal_timer_service import MIN_WATERMARK

_MISSING_STATE = ("The requested state does not exist. Check for typos in your state descriptor, or specify the state "
                  "descriptor in the datastream.broadcast(...) call if you forgot to register it.")


class _ReadOnlyBroadcastState(st.ReadOnlyBroadcastState):
    """A read-only view of one subtask's broadcast state: reads are copies (a serialization round
    trip, as keyed state's); no ``put``/``put_all``/``remove``/``clear`` (PyFlink's read-only view
    has no writers: ``process_element`` writing would change only its own subtask's copy)."""

    _writable = False

    def __init__(self, store: dict, descriptor: Any, where: str):
        self._map, self._name, self._where = store, descriptor.name, where
        self._key_type = getattr(descriptor, "key_type_info", None)
        self._value_type = getattr(descriptor, "value_type_info", None)

    def get(self, key):
        return _copy(self._map.get(key))

    def contains(self, key) -> bool:
        return key in self._map

    def items(self):
        return [(_copy(k), _copy(v)) for k, v in self._map.items()]

    def keys(self):
        return [_copy(k) for k in self._map]

    def values(self):
        return [_copy(v) for v in self._map.values()]

    def is_empty(self) -> bool:
        return not self._map

    def _read_only(self, what: str):
        raise AttributeError(f"'ReadOnlyBroadcastState' object has no attribute '{what}': {self._where} is "
                             f"read-only outside process_broadcast_element (a write in process_element or on_timer "
                             f"would change one subtask's copy only; Flink gives no writer there)")

    def put(self, key, value) -> None:
        self._read_only("put")

    def put_all(self, dict_value) -> None:
        self._read_only("put_all")

    def remove(self, key) -> None:
        self._read_only("remove")

    def clear(self) -> None:
        self._read_only("clear")

    def __setitem__(self, key, value) -> None:
        self._read_only("__setitem__")

    def __delitem__(self, key) -> None:
        self._read_only("__delitem__")


class _BroadcastState(_ReadOnlyBroadcastState, st.BroadcastState):
    """The read-write broadcast state of ``process_broadcast_element``: what is stored is a copy."""

    def put(self, key, value) -> None:
        self.put_all([(key, value)])

    def put_all(self, dict_value) -> None:
        from streamproof.flink.common.typeinfo import check_value
        pairs = dict_value.items() if hasattr(dict_value, "items") else dict_value
        for key, value in pairs:
            key = check_value(self._key_type, _copy(key), self._where)
            self._map[key] = check_value(self._value_type, _copy(value), self._where)

    def remove(self, key) -> None:
        self._map.pop(key, None)

    def clear(self) -> None:
        self._map.clear()

    def __setitem__(self, key, value) -> None:
        self.put(key, value)

    def __delitem__(self, key) -> None:
        self.remove(key)


class _BroadcastStates:
    """The broadcast states a function declared (``broadcast(descriptor, ...)``) on the subtask's
    store (:class:`streamproof.impl.tasks.chained_operators.BroadcastStateStore`, operator state of the runtime)."""

    def __init__(self, function_name: str, descriptors: list):
        self.function_name = function_name
        self.names = {d.name for d in descriptors}
        self.store = None

    def get(self, descriptor: Any, writable: bool):
        if self.store is None:
            raise UnsupportedFeature(f"{self.function_name}: broadcast state outside a broadcast-state operator")
        if not any(c.__name__ == "MapStateDescriptor" for c in type(descriptor).__mro__):
            raise TypeError(f"get_broadcast_state needs a MapStateDescriptor, got {type(descriptor).__name__}")
        if descriptor.name not in self.names:
            raise ValueError(_MISSING_STATE)
        where = f"{self.function_name} broadcast state '{descriptor.name}'"
        store = self.store.states.setdefault(descriptor.name, {})
        return (_BroadcastState if writable else _ReadOnlyBroadcastState)(store, descriptor, where)


class _BroadcastTimers(fn.TimerService):
    """The timer service of ``process_broadcast_element``: time only (no key to register under)."""

    def __init__(self, processing_time: Callable[[], int], watermark: Callable[[], int]):
        self._processing_time, self._watermark = processing_time, watermark

    def current_processing_time(self) -> int:
        return self._processing_time()

    def current_watermark(self) -> int:
        return self._watermark()

    def _refuse(self, *args) -> None:
        raise RuntimeError("Setting timers is only supported for the keyed input (process_element, on_timer) of a "
                           "KeyedBroadcastProcessFunction: process_broadcast_element has no current key")

    register_processing_time_timer = register_event_time_timer = _refuse
    delete_processing_time_timer = delete_event_time_timer = _refuse


class _BroadcastContext(fn.KeyedBroadcastProcessFunction.Context, fn.BroadcastProcessFunction.Context,
                        fn.KeyedBroadcastProcessFunction.OnTimerContext):
    """Every context of a broadcast function: ``writable`` (process_broadcast_element) or not; a
    keyed one reads key, timers and time domain from the adapter's context ``inner``."""

    def __init__(self, states: _BroadcastStates, writable: bool, timestamp, processing_time, watermark,
                 timers=None, inner=None):
        self._states, self._writable = states, writable
        self._timestamp, self._processing_time, self._watermark = timestamp, processing_time, watermark
        self._timers = timers or _BroadcastTimers(processing_time, watermark)
        self._inner = inner

    def timestamp(self):
        return self._timestamp()

    def current_processing_time(self) -> int:
        return self._processing_time()

    def current_watermark(self) -> int:
        return self._watermark()

    def timer_service(self):
        return self._timers

    def get_broadcast_state(self, state_descriptor):
        return self._states.get(state_descriptor, self._writable)

    def get_current_key(self):
        if self._inner is None or self._writable:
            raise AttributeError("'Context' object has no attribute 'get_current_key' (process_broadcast_element has "
                                 "no current key)")
        return self._inner.get_current_key()

    def time_domain(self):
        return self._inner.time_domain()

    def __getattr__(self, name: str):
        if name == "apply_to_keyed_state":  # Java's applyToKeyedState: PyFlink's context does not have it
            raise AttributeError("'Context' object has no attribute 'apply_to_keyed_state': PyFlink has no "
                                 "applyToKeyedState (KeyedBroadcastProcessFunction.Context lacks it)")
        raise AttributeError(f"'Context' object has no attribute '{name}'")


class NonKeyedBroadcast(NonKeyed):
    """A ``BroadcastProcessFunction`` on a non-keyed stream connected with a broadcast stream, as a
    :class:`streamproof.impl.tasks.chained_operators.BroadcastProcessOperator` function: a broadcast-side record (a
    :class:`~streamproof.impl.tasks.stream_elements.SecondInput`) goes to ``process_broadcast_element`` with
    read-write broadcast state, any other to ``process_element`` with a read-only view."""

    def __init__(self, function: Any, name: str, descriptors: list):
        super().__init__("process", function, name)
        self.states = _BroadcastStates(type(function).__name__, descriptors)
        args = (lambda: None if self.ts == MIN_WATERMARK else self.ts, lambda: self.now, lambda: self.watermark)
        self._read_only = _BroadcastContext(self.states, False, *args)
        self._read_write = _BroadcastContext(self.states, True, *args)

    def bind_broadcast_state(self, store) -> None:
        self.states.store = store

    def process(self, value: Any, timestamp: int, watermark: int, now: int) -> list:
        self.ts, self.watermark, self.now = timestamp, watermark, now
        if type(value) is SecondInput:
            results = self.function.process_broadcast_element(value.value, self._read_write)
        else:
            results = self.function.process_element(value, self._read_only)
        out = []
        for result in _results(results):
            if self.side_outputs and isinstance(result, tuple) and result and adapter._is_output_tag(result[0]):
                out.append((result[0].tag_id, result[1]))
            else:
                out.append((None, result))
        return out


class KeyedBroadcastFunction(fn.KeyedProcessFunction):
    """A ``KeyedBroadcastProcessFunction`` as one keyed function (run by
    :class:`streamproof.impl.tasks.chained_operators.KeyedBroadcastOperator`): the keyed input's records go to
    ``process_element`` (keyed state, timers, read-only broadcast state), broadcast-side ones (a
    :class:`~streamproof.impl.tasks.stream_elements.SecondInput`, no key set) to ``process_broadcast_element``
    (read-write broadcast state), timers to ``on_timer`` (read-only broadcast state)."""

    def __init__(self, function: Any, descriptors: list):
        self.function = function
        self.states = _BroadcastStates(type(function).__name__, descriptors)

    def open(self, runtime_context) -> None:
        self.states.store = getattr(getattr(runtime_context, "_impl", None), "broadcast_state", None)
        if hasattr(self.function, "open"):
            self.function.open(runtime_context)

    def close(self) -> None:
        if hasattr(self.function, "close"):
            self.function.close()

    def _context(self, ctx, writable: bool) -> _BroadcastContext:
        timers = ctx.timer_service()
        return _BroadcastContext(self.states, writable, ctx.timestamp, timers.current_processing_time,
                                 timers.current_watermark, None if writable else timers, ctx)

    def process_element(self, value, ctx):
        if type(value) is SecondInput:
            return self.function.process_broadcast_element(value.value, self._context(ctx, True))
        return self.function.process_element(value, self._context(ctx, False))

    def on_timer(self, timestamp, ctx):
        on_timer = getattr(self.function, "on_timer", None)
        return on_timer(timestamp, self._context(ctx, False)) if on_timer is not None else None


def _check_broadcast_function(function: Any, keyed: bool) -> None:
    if not adapter.is_broadcast_process_function(type(function), keyed):
        wanted = "KeyedBroadcastProcessFunction" if keyed else "BroadcastProcessFunction"
        raise UnsupportedFeature(f"BroadcastConnectedStream.process on a {'keyed' if keyed else 'non-keyed'} stream "
                                 f"needs a {wanted}, got {type(function).__name__}")
    reason = adapter.refused_calls(type(function), broadcast=True)
    if reason:
        raise UnsupportedFeature(reason)


def broadcast_factory(function: Any, name: str, descriptors: list) -> Callable[[], Any]:
    """A factory of :class:`NonKeyedBroadcast` functions (each subtask its own copy)."""
    _check_broadcast_function(function, keyed=False)
    return lambda: NonKeyedBroadcast(function, name, descriptors)


def keyed_broadcast_factory(function: Any, descriptors: list) -> Callable[[], Any]:
    """A factory of fresh impl keyed functions for a keyed broadcast-state node."""
    _check_broadcast_function(function, keyed=True)

    def build() -> Any:
        built = adapter.PyFlinkFunctionAdapter(KeyedBroadcastFunction(copy.deepcopy(function), descriptors))
        built.user_class_name = type(function).__name__
        built.interruptible_timers = True
        return built
    return build

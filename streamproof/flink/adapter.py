"""Runs PyFlink-style operators on streamproof's runtime.

:func:`adapt` turns an operator instance into an :class:`streamproof.impl.operators.keyed_process_operator.KeyedProcessFunction`:
an impl-style function is returned unchanged; a PyFlink-style ``KeyedProcessFunction`` (a subclass
of :class:`streamproof.flink.datastream.KeyedProcessFunction`, or of a genuine
``pyflink.datastream.KeyedProcessFunction`` when apache-flink is installed) is wrapped in a
:class:`PyFlinkFunctionAdapter`. :func:`refusal_reason` says, in one line, why an operator class
cannot be run faithfully (None: it can, as far as can be seen without running it); what cannot be
seen statically raises :class:`streamproof.flink.errors.UnsupportedFeature` where it is used.
"""

from __future__ import annotations

import ast
import copy
import functools
import inspect
import sys
import textwrap
from typing import Any

from streamproof.flink.common.typeinfo import WrittenFloat, check_value
from streamproof.flink.common.types import Row
from streamproof.flink.datastream import functions as fn
from streamproof.flink.datastream import state as st
from streamproof.flink.datastream.output_tag import OutputTag
from streamproof.flink.datastream.time_domain import TimeDomain
from streamproof.flink.errors import UnsupportedFeature
from streamproof.flink.metrics import MetricGroup
from streamproof.flink.state_ttl import TtlConfig, ttl_state
from streamproof.impl.operators import keyed_process_operator as impl
__all__ = ["PyFlinkFunctionAdapter", "adapt", "adapt_class", "refusal_reason", "is_pyflink_style"]

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


@functools.lru_cache(maxsize=4096)  # asked for every emitted value (is it an OutputTag?)
def _genuine_pyflink(cls: type, name: str) -> bool:
    return any(m.startswith("pyflink.") and n == name for m, n in _mro_names(cls))


def _is(cls: type, ours: type) -> bool:
    """``cls`` derives from our PyFlink class ``ours``, or from PyFlink's own class of that name."""
    return issubclass(cls, ours) or _genuine_pyflink(cls, ours.__name__)


def is_pyflink_style(cls: type) -> bool:
    """A PyFlink-style keyed process function class (ours or apache-flink's)."""
    return isinstance(cls, type) and _is(cls, fn.KeyedProcessFunction)


_OTHER_KINDS = [
    (fn.ProcessFunction, "is a ProcessFunction: PyFlink runs it on a non-keyed DataStream only "
                         "(KeyedStream.process needs a KeyedProcessFunction); streamproof certifies keyed operators"),
    (fn.KeyedCoProcessFunction, "is a KeyedCoProcessFunction: two-input operators are not supported as a single "
                                "operator (one input); certify the job that connects its inputs"),
    (fn.CoProcessFunction, "is a CoProcessFunction: two-input operators are not supported as a single operator "
                           "(one input); certify the job that connects its inputs"),
    (fn.KeyedBroadcastProcessFunction, "is a KeyedBroadcastProcessFunction: broadcast state is not supported as a "
                                       "single operator (one input); certify the job that connects the broadcast stream"),
    (fn.BroadcastProcessFunction, "is a BroadcastProcessFunction: broadcast state is not supported as a single "
                                  "operator (one input); certify the job that connects the broadcast stream"),
]

# calls that cannot be run faithfully, found in the operator's source (comments do not count)
_REFUSED_CALLS = {
    "get_broadcast_state": "broadcast state is not supported",
}
# in a broadcast function (run in a job, connect(broadcast_stream)): broadcast state is; PyFlink 2.3 has no
# applyToKeyedState (its KeyedBroadcastProcessFunction.Context says so): the job would fail on Flink
_BROADCAST_REFUSED_CALLS = {
    "apply_to_keyed_state": "PyFlink has no applyToKeyedState (KeyedBroadcastProcessFunction.Context lacks it: the "
                            "job fails on Flink with an AttributeError)",
}


@functools.lru_cache(maxsize=1024)  # parsing the source is most of building an operator otherwise
def _refused_calls(cls: type, broadcast: bool = False) -> str | None:
    refused = _BROADCAST_REFUSED_CALLS if broadcast else _REFUSED_CALLS
    for klass in cls.__mro__:
        if klass.__module__.startswith(("streamproof.", "pyflink.", "builtins", "abc")):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in refused:
                return f"{refused[node.func.attr]} ({klass.__name__} calls {node.func.attr})"
    return None


def refused_calls(cls: type, broadcast: bool = False) -> str | None:
    """One line naming a call in ``cls``'s source streamproof cannot run faithfully, or None
    (``broadcast``: ``cls`` is a broadcast function run in a job, where ``get_broadcast_state`` runs)."""
    return _refused_calls(cls, broadcast)


def is_broadcast_process_function(cls: type, keyed: bool) -> bool:
    """A PyFlink-style ``KeyedBroadcastProcessFunction`` (``keyed``) or ``BroadcastProcessFunction``."""
    return isinstance(cls, type) and _is(cls, fn.KeyedBroadcastProcessFunction if keyed else fn.BroadcastProcessFunction)


def is_keyed_co_process_function(cls: type) -> bool:
    """A PyFlink-style ``KeyedCoProcessFunction`` class (ours or apache-flink's)."""
    return isinstance(cls, type) and _is(cls, fn.KeyedCoProcessFunction)


def refusal_reason(cls: type) -> str | None:
    """One line saying why streamproof cannot run ``cls`` faithfully, or None."""
    if not isinstance(cls, type):
        return f"{cls!r} is not a class"
    if issubclass(cls, impl.KeyedProcessFunction):
        return None
    name = cls.__name__
    if any(n == "JavaFunctionWrapper" for _, n in _mro_names(cls)):
        return f"{name} is a Java function: Java UDFs are not supported"
    if not is_pyflink_style(cls):
        for kind, why in _OTHER_KINDS:
            if _is(cls, kind):
                return f"{name} {why}"
        if _is(cls, fn.Function):
            return f"{name} is not a KeyedProcessFunction: only keyed process functions are supported"
        return f"{name} is not a KeyedProcessFunction (neither streamproof.flink's nor streamproof.impl's)"
    return _refused_calls(cls)


# -- the PyFlink-facing runtime objects ------------------------------------------------------------
class _TimerService(fn.TimerService):
    def __init__(self, adapter: "PyFlinkFunctionAdapter"):
        self._adapter = adapter

    def _service(self) -> impl.TimerService:
        return self._adapter._impl_ctx.timer_service()

    def current_processing_time(self) -> int:
        return self._service().current_processing_time()

    def current_watermark(self) -> int:
        return self._service().current_watermark()

    def register_processing_time_timer(self, timestamp: int):
        self._service().register_processing_time_timer(timestamp)

    def register_event_time_timer(self, timestamp: int):
        self._service().register_event_time_timer(timestamp)

    def delete_processing_time_timer(self, timestamp: int):
        self._service().delete_processing_time_timer(timestamp)

    def delete_event_time_timer(self, timestamp: int):
        self._service().delete_event_time_timer(timestamp)


class _Context(fn.KeyedProcessFunction.Context):
    """``ctx`` of ``process_element`` (valid during the call only, as in PyFlink)."""

    def __init__(self, adapter: "PyFlinkFunctionAdapter"):
        self._adapter = adapter
        self._timer_service = _TimerService(adapter)

    def get_current_key(self):
        return self._adapter._impl_ctx.get_current_key()

    def timer_service(self) -> fn.TimerService:
        return self._timer_service

    def timestamp(self) -> int:
        return self._adapter._impl_ctx.timestamp()


class _OnTimerContext(_Context, fn.KeyedProcessFunction.OnTimerContext):
    """``ctx`` of ``on_timer``: also ``time_domain()``."""

    def time_domain(self):
        domain = self._adapter._impl_ctx.time_domain
        time_domain = self._adapter._time_domain
        return time_domain.EVENT_TIME if domain == "event" else time_domain.PROCESSING_TIME


def _descriptor_kind(descriptor: Any) -> str:
    for kind in ("ValueStateDescriptor", "ListStateDescriptor", "MapStateDescriptor",
                 "ReducingStateDescriptor", "AggregatingStateDescriptor"):
        if any(n == kind for _, n in _mro_names(type(descriptor))):
            return kind
    raise TypeError(f"{descriptor!r} is not a state descriptor of streamproof.flink.datastream.state")


class _RuntimeContext(fn.RuntimeContext):
    """``open(runtime_context)``: keyed state on the operator's backend, and where it runs."""

    def __init__(self, adapter: "PyFlinkFunctionAdapter", impl_ctx: impl.RuntimeContext):
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


# -- the adapter ---------------------------------------------------------------------------------
class PyFlinkFunctionAdapter(impl.KeyedProcessFunction):
    """An impl-style :class:`streamproof.impl.operators.keyed_process_operator.KeyedProcessFunction` running a PyFlink-style
    one: ``open(runtime_context)``, ``process_element(value, ctx)`` and ``on_timer(timestamp, ctx)``
    whose yielded values are the output and ``(OutputTag, value)`` pairs the side outputs (as
    PyFlink's ``has_side_output``: only when some ``get_side_output`` reads the operator; else
    ``side_outputs`` is False and such a pair is an output value like any other)."""

    side_outputs = True

    def __init__(self, function: Any, job_parameters: dict | None = None):
        self.function = function
        self.user_class_name = type(function).__name__
        self.job_parameters = dict(job_parameters or {})
        self.interruptible_timers = bool(getattr(function, "interruptible_timers", False))
        self.timer_termination_action = getattr(function, "timer_termination_action", None)
        genuine = not isinstance(function, fn.KeyedProcessFunction)
        pyflink_domain = sys.modules.get("pyflink.datastream.time_domain") if genuine else None
        self._time_domain = getattr(pyflink_domain, "TimeDomain", TimeDomain)
        self._impl_ctx: impl.Context | None = None
        self._ctx = _Context(self)
        self._timer_ctx = _OnTimerContext(self)
        self.runtime_context: _RuntimeContext | None = None

    def open(self, ctx: impl.RuntimeContext) -> None:
        self.runtime_context = _RuntimeContext(self, ctx)
        if hasattr(self.function, "open"):
            self.function.open(self.runtime_context)

    def process_element(self, value: Any, ctx: impl.Context, out: impl.Collector) -> None:
        self._impl_ctx = ctx
        self._emit(self.function.process_element(value, self._ctx), ctx, out, "process_element")

    def on_timer(self, timestamp: int, ctx: impl.Context, out: impl.Collector) -> None:
        self._impl_ctx = ctx
        self._emit(self.function.on_timer(timestamp, self._timer_ctx), ctx, out, "on_timer")

    def close(self) -> None:
        if hasattr(self.function, "close"):
            self.function.close()

    def _emit(self, results: Any, ctx: impl.Context, out: impl.Collector, callback: str) -> None:
        """As PyFlink's ``_emit_results``: a falsy result emits nothing, anything else is iterated;
        a tuple whose first element is an OutputTag is a side output of its second element."""
        if not results:
            return
        try:
            iterator = iter(results)
        except TypeError:
            raise TypeError(f"{self.user_class_name}.{callback} returned {results!r}: PyFlink iterates a "
                            f"callback's result (yield the outputs, return an iterable or None)") from None
        for result in iterator:
            if self.side_outputs and isinstance(result, tuple) and result and _is_output_tag(result[0]):
                ctx.output(result[0].tag_id, result[1])
            else:
                out.collect(result)

    def __repr__(self) -> str:
        return f"PyFlinkFunctionAdapter({self.function!r})"


def _is_output_tag(obj: Any) -> bool:
    return isinstance(obj, OutputTag) or _genuine_pyflink(type(obj), "OutputTag")


def adapt(obj: Any, job_parameters: dict | None = None) -> impl.KeyedProcessFunction:
    """An impl-style function for ``obj``: itself if it already is one, else ``obj`` wrapped in a
    :class:`PyFlinkFunctionAdapter`; :class:`UnsupportedFeature` (one line) if it cannot be run."""
    if isinstance(obj, type):
        raise TypeError(f"adapt() takes an operator instance, not the class {obj.__name__} (see adapt_class)")
    if isinstance(obj, impl.KeyedProcessFunction):
        return obj
    reason = refusal_reason(type(obj))
    if reason is not None:
        raise UnsupportedFeature(reason)
    return PyFlinkFunctionAdapter(obj, job_parameters)


def adapt_class(cls: type) -> type:
    """An impl-style :class:`~streamproof.impl.operators.keyed_process_operator.KeyedProcessFunction` subclass whose
    instances (built without arguments) run a new ``cls()``; an impl-style class is returned as is."""
    if isinstance(cls, type) and issubclass(cls, impl.KeyedProcessFunction):
        return cls
    reason = refusal_reason(cls)
    if reason is not None:
        raise UnsupportedFeature(reason)

    def __init__(self) -> None:
        PyFlinkFunctionAdapter.__init__(self, cls())

    return type(cls.__name__, (PyFlinkFunctionAdapter,),
                {"__init__": __init__, "__module__": cls.__module__, "__qualname__": cls.__qualname__,
                 "__doc__": cls.__doc__, "user_class": cls})

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
import functools
import inspect
import sys
import textwrap
from typing import Any

from streamproof.flink.datastream import functions as fn
from streamproof.flink.datastream.output_tag import OutputTag
from streamproof.flink.datastream.time_domain import TimeDomain
from streamproof.flink.errors import UnsupportedFeature
from streamproof.flink.runtime_context import _mro_names, _RuntimeContext
from streamproof.impl import operators as impl
__all__ = ["PyFlinkFunctionAdapter", "adapt", "adapt_class", "refusal_reason", "is_pyflink_style"]


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

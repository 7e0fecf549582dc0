"""A captured PyFlink window (:class:`~streamproof.flink.pipeline.WindowSpec`) as a keyed function:
Flink's ``WindowOperator`` as PyFlink 2.3 runs it (``pyflink.fn_execution.datastream.window``).

:func:`window_operator` builds a fresh :class:`WindowOperator`, an
:class:`streamproof.impl.operators.keyed_process_operator.KeyedProcessFunction`. Everything lives in keyed state (so
checkpoints, restores and rescaling carry it), per key:

- ``window-contents``: ``{state window: contents}`` (an element list for process/apply, the
  reduced value, or the accumulator);
- ``window-timers``: ``{(domain, time): [windows]}``: the impl timer service has no namespace, so
  a timer at ``time`` fires every window registered for it (Flink: one timer per key, window, time);
- ``merging-window-set``: ``{window: state window}`` of session windows (Flink's MergingWindowSet);
- ``window-scoped-state``: ``{(state name, window): value}``, the triggers' partitioned state and
  ``ProcessWindowFunction.Context.window_state()``.

Outputs carry the timestamp of what fired the window (the element, or the timer: for
``EventTimeTrigger`` the window's ``max_timestamp()``), as PyFlink's runner does.

Size: one class with its contexts, PyFlink 2.3's ``WindowOperator``, kept whole to read beside PyFlink's source.
"""

from __future__ import annotations

from types import FunctionType, SimpleNamespace
from typing import Any

from streamproof.flink.adapter import _is_output_tag
from streamproof.flink.datastream.functions import KeyedStateStore, ProcessWindowFunction
from streamproof.flink.datastream.window import (
    MAX_LONG_VALUE, MergingWindowAssigner, Trigger, WindowAssigner, assigner_from_spec,
)
from streamproof.flink.errors import UnsupportedFeature
from streamproof.flink.pipeline import CaptureError, WindowSpec
from streamproof.flink.runtime_context import _copy, _descriptor_kind, _RuntimeContext
from streamproof.impl import operators as impl
__all__ = ["window_operator", "WindowOperator"]

CONTENTS, TIMERS, MERGING, SCOPED = "window-contents", "window-timers", "merging-window-set", "window-scoped-state"
EVENT, PROCESSING = "event", "processing"
KINDS = ("reduce", "aggregate", "process", "apply")
_REFUSED_TRIGGERS = ("ProcessingTimeTrigger", "ContinuousProcessingTimeTrigger")


def window_operator(spec: WindowSpec, job_parameters: dict | None = None) -> "WindowOperator":
    """A fresh keyed window operator for ``spec``; :class:`CaptureError` (one line) when it uses
    what streamproof does not model."""
    return WindowOperator(spec, job_parameters)


def _class_names(obj: Any) -> set[str]:
    return {c.__name__ for c in type(obj).__mro__}


def _check_trigger(trigger: Any) -> None:
    while trigger is not None:
        refused = _class_names(trigger) & set(_REFUSED_TRIGGERS)
        if refused:
            raise CaptureError(f"{refused.pop()}: processing-time triggers are not modelled by streamproof")
        trigger = getattr(trigger, "nested_trigger", None)


def _style(function: Any) -> str:
    """How a window function is called: ``pass_through`` (none: the reduced/aggregated value),
    ``process`` (ProcessWindowFunction), ``apply`` (WindowFunction), ``process_all``/``apply_all``
    (ProcessAllWindowFunction/AllWindowFunction of a non-keyed window, keyed by the runtime)."""
    if function is None:
        return "pass_through"
    names = _class_names(function)
    if "ProcessAllWindowFunction" in names:
        return "process_all"
    if "AllWindowFunction" in names:
        return "apply_all"
    if hasattr(function, "process"):
        return "process"
    if hasattr(function, "apply"):
        return "apply"
    raise CaptureError(f"{type(function).__name__}: window_function should be a WindowFunction or "
                       f"ProcessWindowFunction")


def _result(result: Any, trigger: Any, method: str):
    if not (hasattr(result, "is_fire") and hasattr(result, "is_purge")):
        raise TypeError(f"{type(trigger).__name__}.{method} returned {result!r}, not a TriggerResult")
    return result


# -- state scoped to a window ------------------------------------------------------------------
class _ScopedBackend:
    """The keyed state backend seen through one window (``window``): state ``name`` is the entry
    ``(name, window)`` of the key's ``window-scoped-state`` map."""

    def __init__(self, backend: impl.KeyedStateBackend):
        self._backend = backend
        self.window = None

    def _table(self, create: bool = False) -> dict | None:
        table = self._backend.get(SCOPED)
        if table is None and create:
            table = {}
            self._backend.put(SCOPED, table)
        return table

    def get(self, name: str, default: Any = None, window: Any = None) -> Any:
        table = self._table()
        return default if not table else table.get((name, self.window if window is None else window), default)

    def put(self, name: str, value: Any) -> None:
        self._table(create=True)[(name, self.window)] = value

    def clear(self, name: str, window: Any = None) -> None:
        table = self._table()
        if table:
            table.pop((name, self.window if window is None else window), None)
            if not table:
                self._backend.clear(SCOPED)


class _WindowStateStore(KeyedStateStore):
    """``context.window_state()``: keyed state of the evaluated window."""

    def __init__(self, operator: "WindowOperator"):
        self._operator = operator
        self.window = None

    def _scoped(self):
        self._operator._scoped_backend.window = self.window
        return self._operator._scoped_ctx

    def get_state(self, state_descriptor):
        return self._scoped().get_state(state_descriptor)

    def get_list_state(self, state_descriptor):
        return self._scoped().get_list_state(state_descriptor)

    def get_map_state(self, state_descriptor):
        return self._scoped().get_map_state(state_descriptor)

    def get_reducing_state(self, state_descriptor):
        return self._scoped().get_reducing_state(state_descriptor)

    def get_aggregating_state(self, state_descriptor):
        return self._scoped().get_aggregating_state(state_descriptor)


class _MergingWindowStateStore(KeyedStateStore):
    """``context.window_state()`` of merging (session) windows: refused, as PyFlink."""

    def _refuse(self, state_descriptor):
        raise Exception("Per-window state is not allowed when using merging windows.")

    get_state = get_list_state = get_map_state = get_reducing_state = get_aggregating_state = _refuse


# -- contexts ------------------------------------------------------------------------------------
class _TriggerContext(Trigger.OnMergeContext):
    """What a trigger sees: timers and partitioned state of ``window`` (of the current key)."""

    def __init__(self, operator: "WindowOperator"):
        self._operator = operator
        self.window = None
        self.merged_windows = None

    def get_current_processing_time(self) -> int:
        return self._operator._timer_service.current_processing_time()

    def get_metric_group(self):
        return self._operator._global_ctx.get_metrics_group()

    def get_current_watermark(self) -> int:
        return self._operator._timer_service.current_watermark()

    def register_processing_time_timer(self, time: int) -> None:
        self._operator._register_timer(PROCESSING, self.window, time)

    def register_event_time_timer(self, time: int) -> None:
        self._operator._register_timer(EVENT, self.window, time)

    def delete_processing_time_timer(self, time: int) -> None:
        self._operator._delete_timer(PROCESSING, self.window, time)

    def delete_event_time_timer(self, time: int) -> None:
        self._operator._delete_timer(EVENT, self.window, time)

    def get_partitioned_state(self, state_descriptor):
        operator = self._operator
        operator._scoped_backend.window = self.window
        kind = _descriptor_kind(state_descriptor)
        getter = {"ValueStateDescriptor": "get_state", "ListStateDescriptor": "get_list_state",
                  "MapStateDescriptor": "get_map_state", "ReducingStateDescriptor": "get_reducing_state",
                  "AggregatingStateDescriptor": "get_aggregating_state"}[kind]
        return getattr(operator._scoped_ctx, getter)(state_descriptor)

    def merge_partitioned_state(self, state_descriptor) -> None:
        """Merges the state of the merged windows into the window's (Flink's mergeNamespaces)."""
        if not self.merged_windows:
            return
        kind = _descriptor_kind(state_descriptor)
        if kind == "ReducingStateDescriptor":
            function = state_descriptor.get_reduce_function()
            merge = function.reduce if hasattr(function, "reduce") else function
        elif kind == "AggregatingStateDescriptor":
            merge = state_descriptor.get_agg_function().merge
        elif kind == "ListStateDescriptor":
            def merge(a, b):
                return list(a) + list(b)
        else:
            raise Exception("The given state descriptor does not refer to a mergeable state (MergingState)")
        ttl = getattr(state_descriptor, "_ttl_config", None)
        if ttl is not None and ttl.is_enabled():
            raise UnsupportedFeature(f"state TTL on merged window state is not modelled "
                                     f"(descriptor '{state_descriptor.name}')")
        self.get_partitioned_state(state_descriptor)  # checks the descriptor (kind) as a state access
        backend, name = self._operator._scoped_backend, state_descriptor.name
        merged = None
        for source in self.merged_windows:
            value = backend.get(name, window=source)
            backend.clear(name, window=source)
            if value is not None:
                merged = value if merged is None else merge(_copy(merged), _copy(value))
        if merged is not None:
            backend.window = self.window
            target = backend.get(name)
            backend.put(name, _copy(merged if target is None else merge(_copy(target), _copy(merged))))


class _ProcessContext(ProcessWindowFunction.Context):
    """``ProcessWindowFunction.Context`` of the evaluated ``window``."""

    def __init__(self, operator: "WindowOperator", merging: bool):
        self._operator = operator
        self._window = None
        self._window_state = _MergingWindowStateStore() if merging else _WindowStateStore(operator)

    def window(self):
        return self._window

    def current_processing_time(self) -> int:
        return self._operator._timer_service.current_processing_time()

    def current_watermark(self) -> int:
        return self._operator._timer_service.current_watermark()

    def window_state(self) -> KeyedStateStore:
        if isinstance(self._window_state, _WindowStateStore):
            self._window_state.window = self._window
        return self._window_state

    def global_state(self) -> KeyedStateStore:
        return self._operator._global_ctx


class _AssignerContext(WindowAssigner.WindowAssignerContext):
    def __init__(self, operator: "WindowOperator"):
        self._operator = operator

    def get_current_processing_time(self) -> int:
        return self._operator._timer_service.current_processing_time()

    def get_runtime_context(self):
        return self._operator._global_ctx


# -- merging windows ---------------------------------------------------------------------------
class _MergeResults(MergingWindowAssigner.MergeCallback):
    def __init__(self, results: dict):
        self._results = results

    def merge(self, to_be_merged, merge_result) -> None:
        self._results[merge_result] = to_be_merged


class _MergingWindowSet:
    """Flink's (PyFlink's) ``MergingWindowSet``: the key's in-flight windows and the state window
    holding each one's contents (kept when windows merge, so no contents move)."""

    def __init__(self, assigner: MergingWindowAssigner, state: impl.ValueState):
        self._assigner, self._state = assigner, state
        self._mapping = dict(state.value() or {})
        self._initial = dict(self._mapping)

    def persist(self) -> None:
        if self._mapping != self._initial:
            if self._mapping:
                self._state.update(dict(self._mapping))
            else:
                self._state.clear()
            self._initial = dict(self._mapping)

    def get_state_window(self, window):
        return self._mapping.get(window)

    def retire_window(self, window) -> None:
        if window not in self._mapping:
            raise Exception(f"Window {window} is not in in-flight window set.")
        del self._mapping[window]

    def add_window(self, new_window, merge_function):
        windows = list(self._mapping.keys()) + [new_window]
        merge_results: dict = {}
        self._assigner.merge_windows(windows, _MergeResults(merge_results))
        result_window, merged_new_window = new_window, False
        for merge_result, merged_windows in merge_results.items():
            if new_window in merged_windows:
                merged_new_window = True
                merged_windows.remove(new_window)
                result_window = merge_result
            merged_state_window = self._mapping[next(iter(merged_windows))]
            merged_state_windows = [self._mapping.pop(w) for w in merged_windows if w in self._mapping]
            self._mapping[merge_result] = merged_state_window
            merged_state_windows.remove(merged_state_window)
            if merge_result not in merged_windows or len(merged_windows) != 1:
                merge_function(merge_result, merged_windows, self._mapping[merge_result], merged_state_windows)
        if not merge_results or (result_window == new_window and not merged_new_window):
            self._mapping[result_window] = result_window
        return result_window


# -- the operator ------------------------------------------------------------------------------
class WindowOperator(impl.KeyedProcessFunction):
    """Flink's ``WindowOperator`` for one :class:`WindowSpec` (see the module docstring)."""

    interruptible_timers = True

    def __init__(self, spec: WindowSpec, job_parameters: dict | None = None):
        if spec.function_kind not in KINDS:
            raise CaptureError(f"window function kind {spec.function_kind!r} is not one of {', '.join(KINDS)}")
        if spec.evictor is not None:
            raise CaptureError(f"{type(spec.evictor).__name__}: window evictors are not modelled by streamproof")
        if spec.allowed_lateness is None or spec.allowed_lateness < 0:
            raise CaptureError(f"allowed lateness must be >= 0 ms, got {spec.allowed_lateness!r}")
        self.spec = spec
        self.assigner = assigner_from_spec(spec.assigner)
        self.trigger = spec.trigger if spec.trigger is not None else self.assigner.get_default_trigger(None)
        _check_trigger(self.trigger)
        self.kind = spec.function_kind
        self.function = spec.function
        # the function PyFlink opens, closes and calls per firing (reduce/aggregate: the window
        # function, else a pass-through of the single value)
        self.window_function = spec.function if self.kind in ("process", "apply") else spec.window_function
        self._style = _style(self.window_function)
        if self.kind == "reduce":
            self._reduce = self.function.reduce if hasattr(self.function, "reduce") else self.function
        user = self.window_function or self.function
        # what error messages name (KeyedProcessOperator): the user's class, or a plain function's name
        self.user_class_name = user.__name__ if isinstance(user, FunctionType) else type(user).__name__
        self.job_parameters = dict(job_parameters or {})
        self.allowed_lateness = spec.allowed_lateness
        self.late_tag = spec.late_tag
        self.event_time = self.assigner.is_event_time()
        self.merging = isinstance(self.assigner, MergingWindowAssigner)
        self.num_late_records_dropped = 0

    # -- life cycle -----------------------------------------------------------------------------
    def open(self, ctx: impl.RuntimeContext) -> None:
        backend = ctx._backend
        self._contents = impl.ValueState(backend, impl.ValueStateDescriptor(CONTENTS))
        self._timers = impl.ValueState(backend, impl.ValueStateDescriptor(TIMERS))
        self._merging_state = impl.ValueState(backend, impl.ValueStateDescriptor(MERGING))
        self._global_ctx = _RuntimeContext(self, ctx)
        self._scoped_backend = _ScopedBackend(backend)
        # window-scoped state (window_state(), triggers' partitioned state) may enable TTL, as in
        # PyFlink: its clock is the operator's processing time (streamproof/flink/state_ttl.py)
        self._scoped_ctx = _RuntimeContext(self, SimpleNamespace(
            _backend=self._scoped_backend, processing_time_service=getattr(ctx, "processing_time_service", None)))
        self._trigger_ctx = _TriggerContext(self)
        self._process_ctx = _ProcessContext(self, self.merging)
        self._assigner_ctx = _AssignerContext(self)
        self._impl_ctx = self._out = self._timer_service = None
        if self.window_function is not None and hasattr(self.window_function, "open"):
            self.window_function.open(self._global_ctx)

    def close(self) -> None:
        if self.window_function is not None and hasattr(self.window_function, "close"):
            self.window_function.close()

    def _enter(self, ctx: impl.Context, out: impl.Collector) -> None:
        self._impl_ctx, self._out, self._timer_service = ctx, out, ctx.timer_service()

    # -- elements -------------------------------------------------------------------------------
    def process_element(self, value, ctx, out) -> None:
        self._enter(ctx, out)
        timestamp = ctx.timestamp()
        windows = self.assigner.assign_windows(value, timestamp, self._assigner_ctx)
        skipped = True
        merging_windows = _MergingWindowSet(self.assigner, self._merging_state) if self.merging else None
        for window in windows:
            state_window = window
            if merging_windows is not None:
                window = merging_windows.add_window(window, self._merge)
                if self._is_window_late(window):
                    merging_windows.retire_window(window)
                    continue
                state_window = merging_windows.get_state_window(window)
                if state_window is None:
                    raise Exception(f"Window {window} is not in in-flight window set.")
            elif self._is_window_late(window):
                continue
            skipped = False
            self._add(state_window, value)
            self._trigger_ctx.window = window
            result = _result(self.trigger.on_element(value, timestamp, window, self._trigger_ctx),
                             self.trigger, "on_element")
            if result.is_fire():
                contents = self._get(state_window)
                if contents is None:
                    continue
                self._emit(window, contents)
            if result.is_purge():
                self._clear_contents(state_window)
            self._register_cleanup_timer(window)
        if merging_windows is not None:
            merging_windows.persist()
        if skipped and self._is_element_late(timestamp):
            if self.late_tag is not None:
                ctx.output(getattr(self.late_tag, "tag_id", self.late_tag), value)
            else:
                self.num_late_records_dropped += 1

    # -- timers ---------------------------------------------------------------------------------
    def on_timer(self, timestamp, ctx, out) -> None:
        self._enter(ctx, out)
        domain = PROCESSING if ctx.time_domain == "processing" else EVENT
        timers = self._timers.value() or {}
        windows = timers.pop((domain, timestamp), [])
        self._store_timers(timers)
        for window in windows:
            self._on_window_timer(domain, timestamp, window)

    def _on_window_timer(self, domain: str, timestamp: int, window) -> None:
        self._trigger_ctx.window = window
        merging_windows = None
        state_window = window
        if self.merging:
            merging_windows = _MergingWindowSet(self.assigner, self._merging_state)
            state_window = merging_windows.get_state_window(window)
            if state_window is None:
                return  # a trigger left a timer of a window already gone (as Flink: nothing to do)
        if domain == EVENT:
            result = _result(self.trigger.on_event_time(timestamp, window, self._trigger_ctx),
                             self.trigger, "on_event_time")
        else:
            result = _result(self.trigger.on_processing_time(timestamp, window, self._trigger_ctx),
                             self.trigger, "on_processing_time")
        if result.is_fire():
            contents = self._get(state_window)
            if contents is not None:
                self._emit(window, contents)
        if result.is_purge():
            self._clear_contents(state_window)
        if self.event_time == (domain == EVENT) and timestamp == self._cleanup_time(window):
            self._clear_all_state(window, state_window, merging_windows)
        if merging_windows is not None:
            merging_windows.persist()

    def _register_timer(self, domain: str, window, time: int) -> None:
        timers = self._timers.value()
        if timers is None:
            timers = {}
            self._timers.update(timers)
        registered = timers.setdefault((domain, time), [])
        if window not in registered:
            registered.append(window)  # in place: heap state (snapshots deep-copy)
        service = self._timer_service
        if domain == EVENT:
            service.register_event_time_timer(time)
        else:
            service.register_processing_time_timer(time)

    def _delete_timer(self, domain: str, window, time: int) -> None:
        timers = self._timers.value()
        registered = timers.get((domain, time)) if timers else None
        if not registered or window not in registered:
            return
        registered.remove(window)
        if registered:
            return
        del timers[(domain, time)]
        self._store_timers(timers)
        if domain == EVENT:
            self._timer_service.delete_event_time_timer(time)
        else:
            self._timer_service.delete_processing_time_timer(time)

    def _store_timers(self, timers: dict) -> None:
        if timers:
            self._timers.update(timers)
        else:
            self._timers.clear()

    # -- lateness and cleanup -------------------------------------------------------------------
    def _cleanup_time(self, window) -> int:
        if not self.event_time:
            return window.max_timestamp()
        time = window.max_timestamp() + self.allowed_lateness
        return time if time <= MAX_LONG_VALUE else MAX_LONG_VALUE

    def _register_cleanup_timer(self, window) -> None:
        time = self._cleanup_time(window)
        if time != MAX_LONG_VALUE:
            self._trigger_ctx.window = window
            self._register_timer(EVENT if self.event_time else PROCESSING, window, time)

    def _delete_cleanup_timer(self, window) -> None:
        time = self._cleanup_time(window)
        if time != MAX_LONG_VALUE:
            self._delete_timer(EVENT if self.event_time else PROCESSING, window, time)

    def _is_window_late(self, window) -> bool:
        return self.event_time and self._cleanup_time(window) <= self._timer_service.current_watermark()

    def _is_element_late(self, timestamp) -> bool:
        return self.event_time and timestamp + self.allowed_lateness <= self._timer_service.current_watermark()

    def _clear_all_state(self, window, state_window, merging_windows) -> None:
        self._clear_contents(state_window)
        self._trigger_ctx.window = window
        self.trigger.clear(window, self._trigger_ctx)
        if self._style in ("process", "process_all") and hasattr(self.window_function, "clear"):
            self._process_ctx._window = window
            self.window_function.clear(self._process_ctx)
        if merging_windows is not None:
            merging_windows.retire_window(window)
            merging_windows.persist()

    def _merge(self, merge_result, merged_windows, state_window_result, merged_state_windows) -> None:
        """PyFlink's ``WindowMergeFunction.merge``: the trigger merges, the merged windows' trigger
        state and cleanup timers go, their contents merge into the result's state window."""
        watermark = self._timer_service.current_watermark()
        if self.event_time and merge_result.max_timestamp() + self.allowed_lateness <= watermark:
            raise Exception(f"The end timestamp of an event-time window cannot become earlier than the current "
                            f"watermark by merging. Current watermark: {watermark} window: {merge_result}")
        ctx = self._trigger_ctx
        ctx.window, ctx.merged_windows = merge_result, merged_windows
        try:
            self.trigger.on_merge(merge_result, ctx)
        finally:
            ctx.merged_windows = None
        for window in merged_windows:
            ctx.window = window
            self.trigger.clear(window, ctx)
            self._delete_cleanup_timer(window)
        merged = None
        for source in merged_state_windows:
            value = self._pop_contents(source)
            if value is not None:
                merged = value if merged is None else self._merge_contents(merged, value)
        if merged is not None:
            target = self._get_raw(state_window_result)
            self._put(state_window_result, merged if target is None else self._merge_contents(target, merged))

    # -- window contents ------------------------------------------------------------------------
    def _get_raw(self, window):
        contents = self._contents.value()
        return None if contents is None else contents.get(window)

    def _put(self, window, value) -> None:
        contents = self._contents.value()
        if contents is None:
            contents = {}
            self._contents.update(contents)
        contents[window] = value  # in place: heap state (snapshots deep-copy)

    def _pop_contents(self, window):
        contents = self._contents.value()
        if not contents or window not in contents:
            return None
        value = contents.pop(window)
        if not contents:
            self._contents.clear()
        return value

    def _clear_contents(self, window) -> None:
        self._pop_contents(window)

    def _add(self, window, value) -> None:
        """Adds an element as the window state does (stored values are copies, as serialized)."""
        current = self._get_raw(window)
        if self.kind == "reduce":
            self._put(window, _copy(value if current is None else self._reduce(_copy(current), value)))
        elif self.kind == "aggregate":
            if value is None:  # PyFlink's AggregatingState: adding None clears it
                self._clear_contents(window)
                return
            accumulator = self.function.create_accumulator() if current is None else _copy(current)
            self._put(window, _copy(self.function.add(value, accumulator)))
        elif current is None:
            self._put(window, [_copy(value)])
        else:
            current.append(_copy(value))

    def _merge_contents(self, a, b):
        if self.kind == "reduce":
            return _copy(self._reduce(_copy(a), _copy(b)))
        if self.kind == "aggregate":
            return _copy(self.function.merge(_copy(a), _copy(b)))
        return a + b

    def _get(self, window):
        """What the window function gets (None: nothing to fire): a fresh copy of the contents,
        the aggregate's result, or None for an empty element list."""
        current = self._get_raw(window)
        if current is None:
            return None
        if self.kind == "aggregate":
            return self.function.get_result(_copy(current))
        if self.kind == "reduce":
            return _copy(current)
        return [_copy(v) for v in current] or None

    # -- firing ---------------------------------------------------------------------------------
    def _emit(self, window, contents) -> None:
        key = self._impl_ctx.get_current_key()
        function = self.window_function
        inputs = contents if self.kind in ("process", "apply") else [contents]
        style = self._style
        self._process_ctx._window = window
        if style == "pass_through":
            results, name = inputs, self.kind
        elif style == "process":
            results, name = function.process(key, self._process_ctx, inputs), "process"
        elif style == "apply":
            results, name = function.apply(key, window, inputs), "apply"
        elif style == "process_all":
            results, name = function.process(self._process_ctx, inputs), "process"
        else:
            results, name = function.apply(window, inputs), "apply"
        if results is None:
            raise TypeError(f"{type(function).__name__}.{name} returned None: PyFlink iterates a window "
                            f"function's result (yield the outputs or return an iterable)")
        try:
            iterator = iter(results)
        except TypeError:
            raise TypeError(f"{type(function).__name__}.{name} returned {results!r}: PyFlink iterates a window "
                            f"function's result (yield the outputs or return an iterable)") from None
        ctx, out = self._impl_ctx, self._out
        for result in iterator:
            if isinstance(result, tuple) and result and _is_output_tag(result[0]):
                ctx.output(result[0].tag_id, result[1])
            else:
                out.collect(result)

    def __repr__(self) -> str:
        return f"WindowOperator({self.assigner!r}, {type(self.trigger).__name__}, {self.kind})"

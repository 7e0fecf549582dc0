"""Example-based tests of PyFlink operators: Flink's operator test harnesses, in Python.

As Flink's ``ProcessFunctionTestHarnesses`` and ``KeyedOneInputStreamOperatorTestHarness``, with
the same names in snake_case (docs/testing.md has the table)::

    from streamproof import testing

    harness = testing.for_keyed_process_function(MyFunction(), key_selector=lambda r: r[0])
    harness.process_element(("a", 1), timestamp=10)
    harness.process_watermark(20)
    assert harness.extract_output_values() == [("a", 1)]
    snapshot = harness.snapshot()
    harness.restore(snapshot)                          # a new instance, state and timers restored
    harness.process_watermark(30, stop_after=1)        # FLIP-443: stop a firing after one timer ...
    harness.process_element(("a", 2), timestamp=31)    # ... run a record between its parts ...
    harness.continue_firing()                          # ... and let it finish

The operator runs on the runtime streamproof certifies (keyed state, key groups, timer service,
mailbox, copy-on-write snapshots), so what a test shows here is what certification reasons about.
"""

from __future__ import annotations

import copy
from types import FunctionType
from typing import Any

from streamproof.testing.harness import (
    HarnessSnapshot, KeyedCoOperatorHarness, KeyedOperatorHarness, ProcessFunctionHarness,
)
from streamproof.testing.job import JobHarness, JobResult
from streamproof.testing.output import HarnessError, Record, Timer, Watermark, assert_output

__all__ = [
    "for_keyed_process_function", "for_keyed_co_process_function", "for_process_function", "for_window", "for_job",
    "harness", "subtask_for_key", "KeyedOperatorHarness", "KeyedCoOperatorHarness", "ProcessFunctionHarness",
    "JobHarness", "JobResult", "HarnessSnapshot", "HarnessError", "Record", "Watermark", "Timer", "assert_output",
]


def _uid(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _builder(function: Any, make, what: str):
    """(a function building a fresh runtime function per deployment, the user class): a class is
    instantiated without arguments, an instance copied (Flink deserializes a fresh copy of the
    function for every deployment, so attributes set before ``open`` travel, later ones do not)."""
    if isinstance(function, type):
        cls = function

        def build():
            try:
                instance = cls()
            except Exception as e:  # noqa: BLE001
                raise HarnessError(f"cannot build {cls.__name__}(): {type(e).__name__}: {e}; give an instance") from None
            return make(instance)
    else:
        cls = type(function)
        try:
            pristine = copy.deepcopy(function)
        except Exception as e:  # noqa: BLE001
            raise HarnessError(f"{cls.__name__} cannot be copied ({type(e).__name__}: {e}); PyFlink pickles every "
                               "function it runs") from None

        def build():
            return make(copy.deepcopy(pristine))
    build()  # bad input fails now, with one line
    return build, cls


def _keyed(instance: Any, what: str = "for_keyed_process_function"):
    from streamproof.flink import adapter
    from streamproof.flink.errors import UnsupportedFeature
    from streamproof.impl.operators.keyed_process_operator import KeyedProcessFunction

    if isinstance(instance, KeyedProcessFunction):
        return instance
    reason = adapter.refusal_reason(type(instance))
    if reason is not None:
        raise HarnessError(f"{what}: {reason}")
    try:
        return adapter.adapt(instance)
    except UnsupportedFeature as e:
        raise HarnessError(f"{what}: {e}") from None


def for_keyed_process_function(function: Any, key_selector: Any = None, *, key: Any = None, timestamp: Any = None,
                               uid: str | None = None, max_parallelism: int = 128, parallelism: int = 1,
                               subtask: int = 0, interruptible_timers: bool | None = None,
                               processing_time: int = 0, callback_seconds: float | None = None
                               ) -> KeyedOperatorHarness:
    """A harness for a ``KeyedProcessFunction`` (PyFlink's, ``streamproof.flink``'s or
    ``streamproof.impl.operators.keyed_process_operator``'; a class or an instance) keyed by ``key_selector`` (a function
    of the record or a ``KeySelector``; ``key=`` is the same). ``timestamp``: the records' event
    time when ``process_element`` gets none (a function of the record or a ``TimestampAssigner``).
    ``parallelism``/``subtask``: which subtask this is (its key groups); ``interruptible_timers``:
    let timer firings be split (FLIP-443; None: the function's own ``interruptible_timers``);
    ``processing_time``: the clock's start; ``callback_seconds``: a time limit per callback."""
    build, cls = _builder(function, _keyed, "for_keyed_process_function")
    return KeyedOperatorHarness(build, key_selector if key_selector is not None else key, uid or _uid(cls),
                                timestamp=timestamp, max_parallelism=max_parallelism, parallelism=parallelism,
                                subtask=subtask, interruptible_timers=interruptible_timers,
                                processing_time=processing_time, callback_seconds=callback_seconds)


def for_keyed_co_process_function(function: Any, key_selector1: Any, key_selector2: Any, *, timestamp: Any = None,
                                  uid: str | None = None, max_parallelism: int = 128, parallelism: int = 1,
                                  subtask: int = 0, interruptible_timers: bool | None = None,
                                  processing_time: int = 0, callback_seconds: float | None = None
                                  ) -> KeyedCoOperatorHarness:
    """A harness for a function of keyed connected streams: a ``KeyedCoProcessFunction``, or a
    ``CoMapFunction``/``CoFlatMapFunction`` (with keyed state), each input keyed by its own
    selector (Flink's ``ProcessFunctionTestHarnesses.forKeyedCoProcessFunction`` and
    ``KeyedTwoInputStreamOperatorTestHarness``)."""
    from streamproof.flink import adapter
    from streamproof.flink import job_functions as jf

    cls = function if isinstance(function, type) else type(function)
    names = {c.__name__ for c in cls.__mro__}
    kind = "process" if "KeyedCoProcessFunction" in names else "map" if "CoMapFunction" in names \
        else "flat_map" if "CoFlatMapFunction" in names else None
    if kind is None:
        raise HarnessError(f"for_keyed_co_process_function: {cls.__name__} is not a KeyedCoProcessFunction, "
                           "CoMapFunction or CoFlatMapFunction")
    reason = adapter.refused_calls(cls)
    if reason:
        raise HarnessError(f"for_keyed_co_process_function: {reason}")

    def make(instance):
        built = adapter.PyFlinkFunctionAdapter(jf.KeyedCoFunction(kind, instance))
        built.user_class_name = cls.__name__
        return built

    build, cls = _builder(function, make, "for_keyed_co_process_function")
    return KeyedCoOperatorHarness(build, key_selector1, key_selector2, uid or _uid(cls), timestamp=timestamp,
                                  max_parallelism=max_parallelism, parallelism=parallelism, subtask=subtask,
                                  interruptible_timers=interruptible_timers, processing_time=processing_time,
                                  callback_seconds=callback_seconds)


def for_process_function(function: Any, *, timestamp: Any = None, uid: str | None = None, parallelism: int = 1,
                         subtask: int = 0, processing_time: int = 0) -> ProcessFunctionHarness:
    """A harness for a non-keyed ``ProcessFunction`` (a class or an instance)."""
    from streamproof.flink.adapter import _is
    from streamproof.flink.datastream import functions as fn

    cls = function if isinstance(function, type) else type(function)
    if not _is(cls, fn.ProcessFunction):
        raise HarnessError(f"for_process_function: {cls.__name__} is not a ProcessFunction"
                           + (" (a KeyedProcessFunction: use for_keyed_process_function)"
                              if _is(cls, fn.KeyedProcessFunction) else ""))
    build, cls = _builder(function, lambda instance: instance, "for_process_function")
    return ProcessFunctionHarness(build, uid or _uid(cls), timestamp=timestamp, parallelism=parallelism,
                                  subtask=subtask, processing_time=processing_time)


def _window_kind(function: Any) -> str:
    names = {c.__name__ for c in type(function).__mro__}
    for name, kind in (("ProcessWindowFunction", "process"), ("WindowFunction", "apply"),
                       ("AggregateFunction", "aggregate"), ("ReduceFunction", "reduce")):
        if name in names:
            return kind
    if callable(function):
        return "reduce"
    raise HarnessError(f"for_window: {type(function).__name__} is not a window function (ReduceFunction, "
                       "AggregateFunction, ProcessWindowFunction or WindowFunction)")


def for_window(assigner: Any, function: Any, key_selector: Any = None, *, key: Any = None,
               window_function: Any = None, trigger: Any = None, allowed_lateness: int = 0, late_tag: Any = None,
               timestamp: Any = None, uid: str | None = None, max_parallelism: int = 128, parallelism: int = 1,
               subtask: int = 0, interruptible_timers: bool | None = None,
               processing_time: int = 0) -> KeyedOperatorHarness:
    """A harness for ``key_by(key_selector).window(assigner)`` with ``function`` (a
    ``ReduceFunction`` or callable, an ``AggregateFunction``, a ``ProcessWindowFunction`` or a
    ``WindowFunction``; ``window_function`` the one given with a reduce or aggregate), its
    ``trigger``, ``allowed_lateness`` (ms) and ``late_tag`` (``side_output_late_data``). Window
    assigners and triggers are ``streamproof.flink.datastream.window``'s."""
    from streamproof.flink.pipeline import CaptureError, WindowSpec
    from streamproof.flink.window_operator import window_operator

    from streamproof.flink.datastream import window as windows

    spec_of = getattr(type(assigner), "spec", None)
    if not callable(spec_of) and type(assigner).__module__.startswith("pyflink."):
        # a genuine PyFlink assigner: streamproof's class of that name reads the same attributes
        spec_of = getattr(getattr(windows, type(assigner).__name__, None), "spec", None)
    if not callable(spec_of):
        raise HarnessError(f"for_window: {type(assigner).__name__} is not a window assigner of "
                           "pyflink.datastream.window or streamproof.flink.datastream.window")
    try:
        spec = WindowSpec(spec_of(assigner), _window_kind(function), function, window_function, trigger, None,
                          allowed_lateness.to_milliseconds() if hasattr(allowed_lateness, "to_milliseconds")
                          else allowed_lateness, late_tag)
        window_operator(copy.deepcopy(spec))
    except CaptureError as e:
        raise HarnessError(f"for_window: {e}") from None

    def build():
        return window_operator(copy.deepcopy(spec))

    user = window_function or function
    ident = f"{user.__module__}.{user.__qualname__}" if isinstance(user, FunctionType) else \
        _uid(user if isinstance(user, type) else type(user))
    return KeyedOperatorHarness(build, key_selector if key_selector is not None else key,
                                uid or f"window({ident})", timestamp=timestamp,
                                max_parallelism=max_parallelism, parallelism=parallelism, subtask=subtask,
                                interruptible_timers=interruptible_timers, processing_time=processing_time)


def for_job(target: Any, records: dict | None = None) -> JobHarness:
    """A harness for a whole job as written: a job file (``path/job.py``), a job module, or a
    module-level function building the job; ``records``: source name -> the records of a
    connector source (a collection source reads its own)."""
    return JobHarness(target, records)


def harness(operator: Any, key_selector: Any = None, **options: Any):
    """The harness ``operator`` calls for: a job (a path or module name, or a function building a
    job) -> :func:`for_job`; a ``ProcessFunction`` -> :func:`for_process_function`; anything
    else -> :func:`for_keyed_process_function`."""
    from streamproof.flink.adapter import _is
    from streamproof.flink.datastream import functions as fn

    cls = operator if isinstance(operator, type) else type(operator)
    if isinstance(operator, str) or (callable(operator) and not isinstance(operator, type)
                                     and not hasattr(operator, "process_element")):
        if key_selector is not None or options.keys() - {"records"}:
            raise HarnessError(f"a job brings its own key selectors and input; got {sorted(options) or ['key_selector']}")
        return for_job(operator, options.get("records"))
    if _is(cls, fn.ProcessFunction):
        return for_process_function(operator, **options)
    return for_keyed_process_function(operator, key_selector, **options)


def subtask_for_key(key: Any, parallelism: int, max_parallelism: int = 128) -> int:
    """Which subtask of ``parallelism`` a keyed stream sends ``key`` to (Flink's key groups)."""
    from streamproof.impl.state.key_groups import CompositeKey, assign_to_key_group, compute_operator_index_for_key_group

    wrapped = key if isinstance(key, (str, int)) and not isinstance(key, bool) else CompositeKey.of(key)
    return compute_operator_index_for_key_group(max_parallelism, parallelism, assign_to_key_group(wrapped, max_parallelism))

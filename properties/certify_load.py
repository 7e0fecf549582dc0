"""Loading the operator a certification certifies (``streamproof certify module:Class``, or the object
itself): imported, checked, adapted when PyFlink-style, registered as operator ``user:SPEC``, with
its input (:mod:`streamproof.properties.certify_records`), as a :class:`Subject`."""

from __future__ import annotations

import copy
import importlib
import inspect
import itertools
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable

from streamproof.impl.operators.keyed_process_operator import KeyedProcessFunction
from streamproof.properties import certify_input as inputs
from streamproof.properties import certify_records
from streamproof.properties.job.functions import FUNCTIONS


class CertifyError(ValueError):
    """The operator or its input cannot be used (one line; exit 2)."""

    streamproof_one_line = True  # the pytest plugin reports it as one line, without a traceback


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


# -- the operator --------------------------------------------------------------------------
def _adapter():
    try:
        from streamproof.flink import adapter
    except ImportError:  # streamproof.flink not available: impl.operators style only
        return None
    return adapter


def _is_operator_class(obj: Any) -> bool:
    if not isinstance(obj, type):
        return False
    if issubclass(obj, KeyedProcessFunction):
        return True
    adapter = _adapter()
    return adapter is not None and adapter.is_pyflink_style(obj)


@dataclass
class Subject:
    """What is certified: the operator, how to build it, and its input."""

    spec: str
    name: str                                 # params.operator of its scenarios: user:SPEC
    target: Any                               # the class or factory function
    build: Callable[[], Any]                  # a fresh, runnable (adapted) instance
    records: certify_records.RecordSpec | None
    span: int
    args: Any
    source_file: str | None
    # why ``streamproof certify`` cannot load it (an object defined inside a function, a lambda):
    # its replay command says so instead; None when ``spec`` is what the command line takes
    not_replayable: str | None = None

    def scenarios(self):
        if self.records is not None:
            return inputs.user_scenarios(self.name, self.records, self.span)
        return inputs.builtin_scenarios(self.name, self.span)

    def planned_scenarios(self, search: str):
        """The burst scenarios of a planned search (``"split"``, ``"restore"``) of the user's
        records, or of the built-in input's as records (:func:`certify_input.builtin_records`)."""
        records = self.records if self.records is not None else inputs.builtin_records(self.span)
        return inputs.user_scenarios(self.name, records, self.span, planned=search)


def _split(spec: str) -> tuple[str, str]:
    module_name, sep, name = spec.partition(":")
    if not sep:
        module_name, _, name = spec.rpartition(".")
    if not module_name or not name:
        raise CertifyError(f"{spec!r}: expected module:Class")
    return module_name, name


def _import(spec: str, module_name: str):
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # the user's modules, as `python -m` finds them
    try:
        try:
            return importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            from streamproof.flink.capture import bind_missing_pyflink
            if not (e.name or "").split(".")[0] == "pyflink" or not bind_missing_pyflink():
                raise
            return importlib.import_module(module_name)  # written for PyFlink: imported bound to streamproof
    except Exception as e:  # noqa: BLE001 - any import failure is bad input
        raise CertifyError(f"{spec!r}: cannot import {module_name}: {type(e).__name__}: {e}") from None
    except SystemExit as e:
        raise CertifyError(f"{spec!r}: importing {module_name} called sys.exit({e.code})") from None


def load(spec: Any, args: Any = None, records: Any = None, key: Any = None,
         timestamp: Any = None, span: int | None = None, stream: Any = None,
         layout: str | None = None, late: bool | None = None, replay_only: bool = False) -> Subject:
    """The operator ``spec`` and its input. ``spec``: ``"module:Class"`` (a class, or a function
    returning an instance, as the CLI names it), or the object itself: an operator class (a
    PyFlink-style ``KeyedProcessFunction`` or the ``impl.operators`` style), an instance (copied
    afresh for every run, as PyFlink pickles the function to every subtask) or a zero-argument
    function returning one. A class or function is built with ``args`` (a JSON list or object;
    default: its module's ``ARGS``, else none). ``records``/``stream``: ``"module:name"`` or a
    Hypothesis strategy (or a function returning one); ``key``/``timestamp``: ``"module:function"``,
    a field index or name, or a function of a record (:func:`certify_records.record_spec`)."""
    not_replayable = None
    instance = False
    if isinstance(spec, str):
        module_name, name = _split(spec)
        module = _import(spec, module_name)
        target = getattr(module, name, None)
        label = spec
        if target is None:
            raise CertifyError(f"{spec!r}: {name} is not a KeyedProcessFunction subclass in {module_name}")
    else:
        label, module, target, name, not_replayable, instance = _from_object(spec)
        module_name = getattr(module, "__name__", label.partition(":")[0])
    if isinstance(target, type) and not _is_operator_class(target):
        raise CertifyError(f"{label!r}: {name} is not a KeyedProcessFunction subclass in {module_name}")
    if not isinstance(target, type) and not callable(target) and not instance:
        raise CertifyError(f"{label!r}: {name} is neither an operator class nor a function returning one")
    if not isinstance(target, type) and not instance:
        job = _runs_a_job(target)
        if job:  # never called: it would run the job for real
            raise CertifyError(f"{label!r}: {name} builds and runs a job ({job}); certify never runs it: certify the "
                               f"job's module or file (streamproof certify {module_name}), or give the operator "
                               "class (module:Class) and its input")
    owner = type(target) if instance else target  # the operator's class (or its factory function)
    adapter = _adapter()
    if adapter is not None and isinstance(owner, type):
        reason = adapter.refusal_reason(owner)
        if reason:
            raise CertifyError(f"{label!r}: not supported: {reason}")
    if instance and args is not None:
        raise CertifyError(f"{label!r}: args= builds a class; this operator is an instance, already built")
    if args is None and not instance:
        args = getattr(module, "ARGS", None)
    build = _builder(label, name, target, args, adapter, instance)
    built = build()  # fails here, with one line, if it cannot be built
    if isinstance(owner, type):
        cls = owner
    else:  # a function: the class of what it built (the user's, not the adapter around a PyFlink one)
        wrapped = adapter is not None and isinstance(built, adapter.PyFlinkFunctionAdapter)
        cls = type(built.function if wrapped else built)
    try:
        record_spec = certify_records.record_spec(module, records, key, timestamp, stream, layout, late)
    except certify_records.InputError as e:
        raise CertifyError(f"{label!r}: {e}") from None
    # the built-in records are impl style only; a replay reads its records from the scenario file
    if record_spec is None and not issubclass(cls, KeyedProcessFunction) and not replay_only:
        raise CertifyError(f"{label!r}: give its input: --records (a Hypothesis strategy of records), --key and "
                           "--timestamp, or define records(), key(record) and timestamp(record) in its module")
    try:
        source = inspect.getsourcefile(cls)
    except TypeError:
        source = None
    # an object that is not the module-level one its name says, or an instance (its arguments are
    # its own): a name of its own, so that the functions and probes registered by name never mix it
    # up with another operator of the same name
    unique = not isinstance(spec, str) and (instance or not_replayable is not None)
    subject = Subject(label, f"user:{label}" + (f"#{next(_OBJECTS)}" if unique else ""), target, build, record_spec,
                      span if span is not None else inputs.time_span(cls), args, source, not_replayable)
    FUNCTIONS[subject.name] = build
    return subject


_OBJECTS = itertools.count(1)


def _from_object(obj: Any) -> tuple[str, Any, Any, str, str | None, bool]:
    """An operator given as an object: (its name ``module:QualName``, its module, the target, its
    short name, why the command line cannot load it (None: it can), whether it is an instance)."""
    adapter = _adapter()
    if isinstance(obj, type):
        owner, instance = obj, False
    elif isinstance(obj, KeyedProcessFunction) or (adapter is not None and adapter.is_pyflink_style(type(obj))):
        owner, instance = type(obj), True
    elif callable(obj):
        owner, instance = obj, False
    else:
        raise CertifyError(f"{_one_line(repr(obj), 80)}: not an operator: give a KeyedProcessFunction class or "
                           "instance, a function returning one, or 'module:Class'")
    module_name = getattr(owner, "__module__", None) or "?"
    qualname = getattr(owner, "__qualname__", None) or getattr(owner, "__name__", None) or type(owner).__name__
    module = sys.modules.get(module_name)
    label = f"{module_name}:{qualname}"
    found = module
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if "<locals>" in qualname:
        why = "defined inside a function"
    elif "<lambda>" in qualname:
        why = "a lambda"
    elif module_name == "__main__":
        why = "defined in __main__"
    elif found is not owner:
        why = f"{label} does not name it"
    else:
        why = None
    return label, module, obj, qualname.rpartition(".")[2], why, instance


_JOB_CALLS = ("execute", "execute_async", "get_execution_environment", "create_local_environment",
              "create_remote_environment")


def _runs_a_job(function: Any) -> str | None:
    """Where ``function``'s own code starts or runs a Flink job (``env.execute()``,
    ``StreamExecutionEnvironment.get_execution_environment()``), read from its source without
    calling it; None when it does not, or its source cannot be read."""
    import ast
    import textwrap

    try:
        lines, first = inspect.getsourcelines(function)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _JOB_CALLS:
            return f"it calls {node.func.attr}() at line {first + node.lineno - 1}"
    return None


def _builder(spec: str, name: str, target: Any, args: Any, adapter, instance: bool = False) -> Callable[[], Any]:
    """A fresh runnable instance per call: ``target`` built with ``args``, or, when ``instance``,
    a copy of the instance ``target`` (never the pristine instance itself: each run, each
    subtask, gets its own, as PyFlink pickles the function to every subtask)."""
    def build() -> Any:
        try:
            if instance:
                built = copy.deepcopy(target)
            elif isinstance(args, dict):
                built = target(**args)
            elif args is not None:
                built = target(*args)
            else:
                built = target()
        except SystemExit as e:
            raise CertifyError(f"{spec!r}: building {name} called sys.exit({e.code})") from None
        except Exception as e:  # noqa: BLE001
            if instance:
                raise CertifyError(f"{spec!r}: the instance cannot be copied for each run (copy.deepcopy: "
                                   f"{type(e).__name__}: {e}); give its class or a function returning a new "
                                   "instance") from None
            hint = "" if args is not None else " (give --args, or ARGS in its module)"
            raise CertifyError(f"{spec!r}: {name}() cannot be built{' without arguments' if args is None else ''}: "
                               f"{type(e).__name__}: {e}{hint}") from None
        if adapter is not None:
            built = adapter.adapt(built)
        if not isinstance(built, KeyedProcessFunction):
            raise CertifyError(f"{spec!r}: {name} built {type(built).__name__}, not a KeyedProcessFunction")
        built.interruptible_timers = True  # the question certification answers (FLIP-443)
        return built
    return build

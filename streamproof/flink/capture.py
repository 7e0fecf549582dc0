"""Capture a real PyFlink DataStream job: :func:`capture` runs the job's file with every
``pyflink`` / ``pyflink.*`` import bound to :mod:`streamproof.flink`; the job's
``StreamExecutionEnvironment`` records the pipeline and ``env.execute()`` returns without running
anything. No user function is ever called: capture only records objects.

Imports resolve as follows while a capture runs: ``pyflink.X.Y`` is a proxy of
``streamproof.flink.X.Y`` when that module exists (its names, then the names of its nearest
``streamproof.flink.X`` ancestor, then an opaque class for a CamelCase name); any other
``pyflink.*`` module (connectors, formats, ``pyflink.table``...) is a stub whose every attribute
is an *opaque* connector object: calling it or any of its attributes returns another opaque object
remembering a short description (``KafkaSource.builder().set_topics(...).build()``), usable as a
source or a sink. CamelCase attributes are classes, so ``class MySink(SinkFunction)`` works.
Genuine ``pyflink*`` entries of ``sys.modules`` are set aside during the run and restored after.

This module imports only :mod:`streamproof.flink.pipeline` at import time (the API modules import
it: :func:`job_line`, :func:`refuse`, :func:`opaque_class`).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import re
import runpy
import sys
import types
from typing import NoReturn

from streamproof.flink.pipeline import CaptureError, Pipeline

__all__ = ["capture", "CaptureError", "job_line", "refuse", "with_line", "opaque_class", "OpaqueObject", "describe",
           "is_opaque"]

SUPPORTED_DOC = "docs/flink-api.md"
_FLINK_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_LINE_PREFIX = re.compile(r"^[^\s:]+:\d+: ")
_PARTS_MAX = 160


class _State:
    """The capture under way (one at a time): the job's file, its environment, what ``execute``
    submitted first."""

    def __init__(self):
        self.active = False
        self.file: str | None = None        # realpath of the job's file
        self.display = ""                   # its basename
        self.env = None                     # the capture's StreamExecutionEnvironment
        self.pipeline: Pipeline | None = None


STATE = _State()
_real_paths: dict[str, str] = {}


def _real(filename: str) -> str:
    path = _real_paths.get(filename)
    if path is None:
        path = _real_paths[filename] = os.path.realpath(filename) if not filename.startswith("<") else filename
    return path


def _frame_line(frames) -> str:
    """``basename:lineno`` of the innermost frame of the job's file among ``frames`` (innermost
    first), else of the innermost frame outside ``streamproof/flink``."""
    fallback = None
    for filename, lineno in frames:
        if STATE.file is not None and _real(filename) == STATE.file:
            return f"{os.path.basename(filename)}:{lineno}"
        if fallback is None and not filename.startswith("<") and not _real(filename).startswith(_FLINK_DIR) \
                and not filename.endswith(("runpy.py",)):
            fallback = f"{os.path.basename(filename)}:{lineno}"
    return fallback or f"{STATE.display or '?'}:0"


def job_line() -> str:
    """Where the job is now: ``job.py:42`` (the innermost frame of the captured file)."""
    frame, frames = sys._getframe(1), []
    while frame is not None:
        frames.append((frame.f_code.co_filename, frame.f_lineno))
        frame = frame.f_back
    return _frame_line(frames)


def _traceback_line(tb) -> str:
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
        tb = tb.tb_next
    return _frame_line(reversed(frames))


def refuse(api: str, reason: str = "") -> NoReturn:
    """Raise the one-line refusal of ``api`` (``DataStream.connect``) at the job's current line."""
    why = f"{reason}; " if reason else ""
    raise CaptureError(f"{job_line()}: {api} is not supported by streamproof ({why}supported: {SUPPORTED_DOC})")


def with_line(error) -> CaptureError:
    """``error`` (a message or an exception) as a one-line CaptureError starting with the job's
    line (kept when it already names one)."""
    message = _one_line(error)
    return CaptureError(message if _LINE_PREFIX.match(message) else f"{job_line()}: {message}")


# -- opaque connector objects -----------------------------------------------------------------
def _call_text(args, kwargs) -> str:
    return "(...)" if args or kwargs else "()"


def describe(obj) -> str:
    """The short description of an opaque object (its class name for any other object)."""
    text = getattr(obj, "_sp_description", None) if is_opaque(obj) else None
    text = text or type(obj).__name__
    return text if len(text) <= _PARTS_MAX else text[:_PARTS_MAX - 3] + "..."


# DataStream's own transformations: called on an opaque object, the job builds its pipeline on a
# stream streamproof does not model (``t_env.to_data_stream(table).map(...)``), which would
# otherwise vanish silently. ``print`` is not among them (``t_env.execute_sql(...).print()``).
_STREAM_METHODS = frozenset({"key_by", "map", "flat_map", "filter", "process", "union", "connect",
                             "assign_timestamps_and_watermarks", "add_sink", "sink_to", "window_all"})
_NOT_A_STREAM = ("a stream streamproof does not model, such as the Table API's or SQL's: only DataStream "
                 "pipelines of a StreamExecutionEnvironment's sources are certified")


class _OpaqueMeta(type):
    """Class-level attributes of an opaque class are opaque too (``FileSink.for_row_format``)."""

    def __getattr__(cls, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return _opaque(f"{cls.__name__}.{name}")


class OpaqueObject(metaclass=_OpaqueMeta):
    """Something streamproof does not model (a connector, a schema, a state backend...): every
    attribute and every call returns another opaque object remembering how it was built."""

    def __init__(self, *args, **kwargs):
        self._sp_description = f"{type(self).__name__}{_call_text(args, kwargs)}"

    def __class_getitem__(cls, item):   # ``AsyncFunction[IN, OUT]`` (PyFlink's generic bases)
        return cls

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if name in _STREAM_METHODS:  # used as a stream: one the job reads from the Table API, SQL...
            refuse(f"{describe(self)}.{name}", _NOT_A_STREAM)
        return _opaque(f"{describe(self)}.{name}")

    def __call__(self, *args, **kwargs):
        return _opaque(f"{describe(self)}{_call_text(args, kwargs)}")

    def __repr__(self):
        return f"<opaque {describe(self)}>"


def _opaque(description: str) -> OpaqueObject:
    obj = OpaqueObject.__new__(OpaqueObject)
    obj._sp_description = description
    return obj


def is_opaque(obj) -> bool:
    return isinstance(obj, OpaqueObject)


def opaque_class(name: str, module: str = "streamproof.flink", doc: str = "") -> type:
    """A class named ``name`` whose instances are opaque (subclassable by the job)."""
    return _OpaqueMeta(name, (OpaqueObject,), {"__module__": module, "__doc__": doc or
                                                f"``{name}``: not modelled by streamproof (opaque)."})


# -- the pyflink -> streamproof.flink import hook ---------------------------------------------
def _is_camel(name: str) -> bool:
    return name[:1].isupper() and not name.isupper()


def _streamproof_name(pyflink_name: str) -> str:
    return "streamproof.flink" + pyflink_name[len("pyflink"):]


def _module_or_none(name: str):
    try:
        spec = importlib.util.find_spec(name)
    except (ModuleNotFoundError, ValueError):
        return None
    return importlib.import_module(name) if spec is not None else None


_opaque_classes: dict[tuple[str, str], object] = {}


def _resolve(pyflink_name: str, name: str, real, stub: bool):
    key = (pyflink_name, name)
    if key in _opaque_classes:
        return _opaque_classes[key]
    if real is not None and hasattr(real, name):
        value = getattr(real, name)
        if isinstance(value, types.ModuleType):   # a submodule: its proxy
            return importlib.import_module(f"{pyflink_name}.{name}")
        return value
    parts = _streamproof_name(pyflink_name).split(".")
    for end in range(len(parts) - 1, 2, -1):      # nearest modelled ancestor below streamproof.flink
        ancestor = sys.modules.get(".".join(parts[:end])) or _module_or_none(".".join(parts[:end]))
        value = getattr(ancestor, name, None) if ancestor is not None else None
        if value is not None and not isinstance(value, types.ModuleType):
            return value
    if _is_camel(name):
        value = opaque_class(name, pyflink_name)
    elif stub:
        value = _opaque(name)
    else:
        raise AttributeError(f"module {pyflink_name!r} has no attribute {name!r}")
    _opaque_classes[key] = value
    return value


class _ProxyModule(types.ModuleType):
    """``pyflink.X``: the names of ``streamproof.flink.X`` (same objects), opaque classes else."""

    def __init__(self, name, real):
        super().__init__(name, getattr(real, "__doc__", None))
        self._sp_real = real
        if hasattr(real, "__all__"):
            self.__all__ = list(real.__all__)

    def __getattr__(self, name):
        if name.startswith("__") or name.startswith("_sp_"):
            raise AttributeError(name)
        return _resolve(self.__name__, name, self._sp_real, stub=False)


class _StubModule(types.ModuleType):
    """A ``pyflink.*`` module streamproof does not model: every attribute is opaque."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _resolve(self.__name__, name, None, stub=True)


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        real = _module_or_none(_streamproof_name(spec.name))
        return _ProxyModule(spec.name, real) if real is not None else _StubModule(spec.name)

    def exec_module(self, module):
        pass


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname != "pyflink" and not fullname.startswith("pyflink."):
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(), is_package=True)


def _is_pyflink(name: str) -> bool:
    return name == "pyflink" or name.startswith("pyflink.")


def bind_missing_pyflink() -> bool:
    """Without apache-flink installed, makes every later ``pyflink*`` import a streamproof module
    (for the rest of the process; a module written for PyFlink then imports as written). False
    when a genuine ``pyflink`` is importable (it is used as it is)."""
    if any(isinstance(f, _Finder) for f in sys.meta_path):
        return True
    blocked = [name for name, module in sys.modules.items() if _is_pyflink(name) and module is None]
    if blocked:  # ``sys.modules["pyflink"] = None``: genuine PyFlink blocked, streamproof's stands in
        for name in blocked:
            del sys.modules[name]
        sys.meta_path.insert(0, _Finder())
        return True
    if importlib.util.find_spec("pyflink") is not None:
        return False
    sys.meta_path.append(_Finder())  # after the real finders: a genuine pyflink installed later wins
    return True


# -- capture ----------------------------------------------------------------------------------
def _one_line(text: str) -> str:
    return " ".join(str(text).split()) or "(no message)"


def _error(exc: BaseException) -> CaptureError:
    """The one-line CaptureError for whatever the job raised."""
    line = _traceback_line(exc.__traceback__)
    if isinstance(exc, CaptureError):
        message = _one_line(exc)
        return exc if _LINE_PREFIX.match(message) and message == str(exc) else \
            CaptureError(message if _LINE_PREFIX.match(message) else f"{line}: {message}")
    if isinstance(exc, SyntaxError) and exc.filename and _real(exc.filename) == STATE.file:
        return CaptureError(f"{os.path.basename(exc.filename)}:{exc.lineno}: the job does not compile: "
                            f"{type(exc).__name__}: {_one_line(exc.msg)}")
    if type(exc).__name__ == "UnsupportedFeature":
        return CaptureError(f"{line}: {_one_line(exc)}")
    when = "after env.execute()" if STATE.pipeline is not None else "while it was built"
    return CaptureError(f"{line}: the job failed {when}: {type(exc).__name__}: {_one_line(exc)}")


def capture_callable(function) -> Pipeline:
    """The pipeline ``function`` (a module-level function of the job's module, called without
    arguments) builds: its module is run afresh with PyFlink bound to streamproof (not as
    ``__main__``), then its fresh ``function`` is called. The function as given is never called."""
    module = getattr(function, "__module__", None)
    qualname = getattr(function, "__qualname__", "")
    if not module or "<locals>" in qualname:
        raise CaptureError(f"{function!r}: give a module-level function of the job's module")
    source = getattr(sys.modules.get(module), "__file__", None)
    target = source if module == "__main__" and source else module
    return capture(target, call=qualname)


def capture(target: str, call: str | None = None) -> Pipeline:
    """Run the job ``target`` (a ``.py`` file, or a dotted module name run from the current
    directory) with PyFlink bound to streamproof and return the pipeline its first
    ``env.execute()`` / ``execute_async()`` submitted. Code after ``execute()`` still runs (a
    second ``execute()`` is accepted and ignored). Every problem is a one-line
    :class:`CaptureError` naming the job's line: a missing file or module, a syntax error, an
    exception while the job is built, an API streamproof refuses by name, ``sys.exit`` with a
    non-zero status (or any status before ``execute()``), no ``execute()``."""
    if STATE.active:
        raise CaptureError(f"{target}: a capture is already under way (captures do not nest)")
    is_file = target.endswith(".py") or os.sep in target or os.path.exists(target)
    saved_pyflink = {k: v for k, v in sys.modules.items() if _is_pyflink(k)}
    saved_argv, saved_path, saved_keys = sys.argv, list(sys.path), set(sys.modules)
    finder = _Finder()
    root = os.path.dirname(os.path.abspath(target)) if is_file else os.getcwd()
    for key in saved_pyflink:
        del sys.modules[key]
    sys.meta_path.insert(0, finder)
    sys.path.insert(0, root)
    STATE.__init__()
    STATE.active = True
    try:
        if is_file:
            path = os.path.abspath(target)
            if not os.path.isfile(path):
                raise CaptureError(f"{target}:0: no such job file")
        else:
            try:
                spec = importlib.util.find_spec(target)
            except (ImportError, ValueError) as exc:
                raise CaptureError(f"{target}:0: the job's module cannot be found: {_one_line(exc)}") from None
            if spec is None or not spec.origin or not os.path.isfile(spec.origin):
                raise CaptureError(f"{target}:0: no such job module")
            path = spec.origin
        STATE.file, STATE.display = _real(path), os.path.basename(path)
        sys.argv = [path]
        try:
            run_name = "__main__" if call is None else "__streamproof_job__"
            if is_file:
                namespace = runpy.run_path(path, run_name=run_name)
            else:
                namespace = runpy.run_module(target, run_name=run_name, alter_sys=call is None)
            if call is not None:
                function = namespace
                for part in call.split("."):
                    function = function[part] if isinstance(function, dict) else getattr(function, part)
                function()
        except SystemExit as exc:
            if STATE.pipeline is None or exc.code not in (None, 0):
                line = _traceback_line(exc.__traceback__)
                when = "after" if STATE.pipeline is not None else "before"
                raise CaptureError(f"{line}: the job exited (SystemExit: {exc.code!r}) {when} env.execute()") from None
        except CaptureError as exc:
            error = _error(exc)
            if error is exc:
                raise
            raise error from exc
        except Exception as exc:
            raise _error(exc) from exc
        if STATE.pipeline is None:
            env = STATE.env
            if env is None:
                raise CaptureError(f"{STATE.display}:1: the job never created a StreamExecutionEnvironment "
                                   f"(StreamExecutionEnvironment.get_execution_environment())")
            raise CaptureError(f"{env._sp_line}: the job created its StreamExecutionEnvironment here but "
                               f"never called env.execute() or env.execute_async()")
        return STATE.pipeline
    finally:
        STATE.__init__()
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
        sys.argv = saved_argv
        sys.path[:] = saved_path
        for key in [k for k in sys.modules if _is_pyflink(k)]:
            del sys.modules[key]
        sys.modules.update(saved_pyflink)
        _forget_job_modules(saved_keys, root)
        _opaque_classes.clear()


def _forget_job_modules(saved_keys: set, root: str) -> None:
    """Forget the job's own modules imported during the run (files under ``root``, not
    streamproof's), so a second capture imports them afresh."""
    prefix = os.path.realpath(root) + os.sep
    installed = tuple(os.path.realpath(p) + os.sep for p in {sys.prefix, sys.base_prefix, sys.exec_prefix})
    for key in [k for k in sys.modules if k not in saved_keys and not k.startswith("streamproof")]:
        filename = getattr(sys.modules[key], "__file__", None)
        if filename and _real(filename).startswith(prefix) and not _real(filename).startswith(installed):
            del sys.modules[key]

"""The user's input to a certification: its records, key selector and timestamp assigner.

A :class:`RecordSpec` names a Hypothesis strategy of ONE input record (any JSON-like shape), the
key selector and the timestamp assigner (each a ``module:function``, a field index or a field
name), as the user's pipeline does with ``key_by`` and a ``TimestampAssigner``. A module that
defines ``records()``, ``key(record)`` and ``timestamp(record)`` next to its operator needs no
options (:func:`record_spec`)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from streamproof.properties.job.values import UnencodableValue, encode


LAYOUTS = ("spread", "by-key", "one")  # how records are laid out over parallel sources (RecordSpec.layout)


class InputError(ValueError):
    """The records, key selector or timestamp assigner cannot be used (one line)."""


@dataclass
class RecordSpec:
    """The user's input: ``strategy()`` draws one record, or, when ``whole`` is set, a whole
    input (a list of records, in order: for data with structure across records, e.g. one START
    and one END per ride); ``key``/``timestamp`` read a record."""

    strategy: Callable[[], Any]
    key: Callable[[Any], Any]
    timestamp: Callable[[Any], int]
    names: dict  # how each part was given, for the certificate and the replay command
    whole: bool = False
    # how records are laid out over parallel source subtasks: "spread" (each record to one at
    # random: a key's records may come from several, their order across them is Flink's to
    # choose), "by-key" (each key's records from one source, in their order: a key-partitioned
    # source), "one" (a single source, the whole input in its order). None: "by-key" for a whole
    # input (--stream), "spread" for records
    layout: str | None = None
    # False: the input is never behind its source's watermark (e.g. the results of a window
    # operator upstream, emitted before its watermark): late records are left out of scenarios
    late: bool = True

    @property
    def source_layout(self) -> str:
        return self.layout or ("by-key" if self.whole else "spread")


def resolve(ref: str, what: str) -> Any:
    module_name, sep, name = ref.partition(":")
    if not sep or not module_name or not name:
        raise InputError(f"{what} {ref!r}: expected module:name")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # noqa: BLE001 - any import failure is bad input
        raise InputError(f"{what} {ref!r}: cannot import {module_name}: {type(e).__name__}: {e}") from None
    if not hasattr(module, name):
        raise InputError(f"{what} {ref!r}: {module_name} has no {name}")
    return getattr(module, name)


def selector(ref: str | int | Callable, what: str) -> Callable[[Any], Any]:
    """A ``module:function``, a field index (``0``) or a field name (``user_id``)."""
    if callable(ref):
        return ref
    if isinstance(ref, int) or (isinstance(ref, str) and ref.lstrip("-").isdigit()):
        index = int(ref)
        return lambda record: record[index]
    if isinstance(ref, str) and ":" in ref:
        function = resolve(ref, what)
        if not callable(function):
            raise InputError(f"{what} {ref!r} is not a function")
        return function
    name = str(ref)

    def field(record: Any) -> Any:
        if isinstance(record, dict):
            return record[name]
        try:
            return record[name]  # a named Row
        except (TypeError, KeyError, IndexError, ValueError):
            return getattr(record, name)
    return field


def record_spec(module: Any, records: Any, key: Any, timestamp: Any, stream: Any = None,
                layout: str | None = None, late: bool | None = None) -> RecordSpec | None:
    """The user's input from the options, else from the operator's module (``stream`` or
    ``records``, ``key``, ``timestamp``), else None (the built-in integer records). Each option is
    a ``module:name`` string (as the command line gives it) or the object itself: ``records`` or
    ``stream`` a Hypothesis strategy or a function returning one, ``key`` and ``timestamp`` a
    function of a record (or a field index or name). ``module`` may be None (no conventions)."""
    given = {"stream": stream, "records": records, "key": key, "timestamp": timestamp}
    given = {n: (None if v is None or (isinstance(v, str) and not v) else v) for n, v in given.items()}
    if given["records"] is not None and given["stream"] is not None:
        raise InputError("give --records (one record) or --stream (a whole input), not both")
    objects = {n: v for n, v in given.items() if v is not None and not isinstance(v, str)}
    from_module = {} if module is None else \
        {n: f"{module.__name__}:{n}" for n in given if callable(getattr(module, n, None))}
    if given["records"] is not None or given["stream"] is not None:  # an option wins over the module's convention
        from_module.pop("stream" if given["records"] is not None else "records", None)
    names = {n: (describe(given[n]) if n in objects else given[n]) or from_module.get(n) for n in given}
    if layout not in (None, *LAYOUTS):
        raise InputError(f"--layout {layout!r}: one of {', '.join(LAYOUTS)}")
    source_name = names["stream"] or names["records"]
    if source_name is None:
        if given["key"] is not None or given["timestamp"] is not None:
            raise InputError("--key and --timestamp need --records (a Hypothesis strategy of input records)")
        return None
    option = "--stream" if names["stream"] else "--records"
    missing = [n for n in ("key", "timestamp") if names[n] is None]
    if missing:
        raise InputError(f"records given without --{missing[0]} (the {missing[0]} of a record: module:function, "
                         "a field index or a field name)")
    which = "stream" if names["stream"] else "records"
    source = objects[which] if which in objects else resolve(source_name, option)
    if not callable(source) and not _is_strategy(source):
        raise InputError(f"{option} {source_name!r} is neither a strategy nor a function returning one")
    if names["stream"]:
        names.pop("records")
    else:
        names.pop("stream")
    if layout:
        names["layout"] = layout
    if late is None:
        late = getattr(module, "LATE", True) is not False
    if not late:
        names["late"] = "never (--no-late)"
    return RecordSpec(lambda: source if _is_strategy(source) else _strategy_from(source, source_name, option),
                      selector(objects.get("key", names["key"]), "--key"),
                      selector(objects.get("timestamp", names["timestamp"]), "--timestamp"), names,
                      whole=bool(given["stream"] is not None or "stream" in names), layout=layout, late=late)


def describe(value: Any) -> str:
    """How an input given as an object is named in the certificate and in messages."""
    if isinstance(value, (int, str)):
        return str(value)
    if _is_strategy(value):
        return f"strategy {_short(value)}"
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    module = getattr(value, "__module__", None)
    if name and module:
        return f"{module}:{name}"
    return _short(value)


def _is_strategy(value: Any) -> bool:
    from hypothesis.strategies import SearchStrategy

    return isinstance(value, SearchStrategy)


def _strategy_from(function: Callable, name: str, option: str = "--records"):
    try:
        value = function()
    except Exception as e:  # noqa: BLE001
        raise InputError(f"{option} {name!r} raised {type(e).__name__}: {e}") from None
    if not _is_strategy(value):
        raise InputError(f"{option} {name!r} returned {type(value).__name__}, not a Hypothesis strategy")
    return value


def _key_and_time(spec: RecordSpec, record: Any) -> tuple[Any, int]:
    try:
        key = spec.key(record)
    except Exception as e:  # noqa: BLE001
        raise InputError(f"the key selector {spec.names['key']!r} failed on {record!r}: {type(e).__name__}: {e}") from None
    try:
        ts = spec.timestamp(record)
    except Exception as e:  # noqa: BLE001
        raise InputError(f"the timestamp assigner {spec.names['timestamp']!r} failed on {record!r}: "
                         f"{type(e).__name__}: {e}") from None
    if not _valid_key(key):
        raise InputError(f"the key selector {spec.names['key']!r} gave {key!r} ({type(key).__name__}): keys are "
                         "strings, integers, floats, booleans or tuples (Rows) of them")
    if isinstance(ts, bool) or not isinstance(ts, int):
        raise InputError(f"the timestamp assigner {spec.names['timestamp']!r} gave {ts!r}: timestamps are integers "
                         "(milliseconds)")
    return key, ts


def _short(value: Any) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= 60 else text[:57] + "..."


def _valid_key(key: Any) -> bool:
    if isinstance(key, (str, int, float, bool)):
        return True
    return isinstance(key, tuple) and all(_valid_key(k) for k in key)


def _encoded(record: Any) -> Any:
    try:
        return encode(record)
    except UnencodableValue as e:
        raise InputError(f"record {record!r}: {e}") from None

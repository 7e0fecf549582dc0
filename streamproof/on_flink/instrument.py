"""What runs inside Flink's Python workers during a run on Apache Flink: user functions counted
(and one of them failed once), and sink values encoded.

Every user function the job passes to ``map``/``flat_map``/``filter``/``process``/``reduce``/a
window gets an id (the order the job passes them, the same in every run of the same file). Each
call is counted per kind, over all the function's subtasks and attempts, in a file of the run's
count folder (``fcntl`` lock: exact across Python worker processes). A run with a fault raises
:class:`InjectedFailure` at the ``n``-th call of one kind of one function, once: the first call to
get there claims a marker file, so the restarted job (Flink's restart strategy, from its last
completed checkpoint) runs on without failing again.

Kinds: ``element`` (``map``, ``flat_map``, ``filter``, ``process_element``, ``reduce``,
aggregate ``add``), ``timer`` (``on_timer``; a window function's ``process``/``apply``, called
when a window fires).
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass

ELEMENT_METHODS = ("map", "flat_map", "filter", "process_element", "reduce", "add")
TIMER_METHODS = ("on_timer",)
WINDOW_METHODS = ("process", "apply")  # on a window function: a firing


class InjectedFailure(RuntimeError):
    """The failure streamproof injected (raised once, on the first attempt)."""


@dataclass(frozen=True)
class Counting:
    """Where calls are counted, and the fault of this run (or none)."""

    folder: str
    fault: tuple | None = None  # (function id, kind, n)

    def count(self, function_id: int, kind: str) -> None:
        path = os.path.join(self.folder, f"{function_id}.{kind}")
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            n = os.fstat(fd).st_size + 1
            os.write(fd, b".")
        finally:
            os.close(fd)
        if self.fault is not None and tuple(self.fault[:2]) == (function_id, kind) and n == self.fault[2]:
            try:
                os.close(os.open(os.path.join(self.folder, "injected"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                return
            raise InjectedFailure(f"streamproof: injected failure at call {n} ({kind}) of function {function_id}")


def calls(folder: str) -> dict:
    """``{(function id, kind): calls}`` counted in ``folder``."""
    out = {}
    for name in os.listdir(folder):
        fid, _, kind = name.partition(".")
        if fid.isdigit():
            out[(int(fid), kind)] = os.path.getsize(os.path.join(folder, name))
    return out


def injected(folder: str) -> bool:
    return os.path.exists(os.path.join(folder, "injected"))


class CountedCall:
    """A plain callable passed as a function (``map(lambda v: ...)``), counted."""

    def __init__(self, function, function_id: int, kind: str, counting: Counting):
        self.function, self.function_id, self.kind, self.counting = function, function_id, kind, counting

    def __call__(self, *args, **kwargs):
        self.counting.count(self.function_id, self.kind)
        return self.function(*args, **kwargs)


class CountedMethod:
    """A method of the user's function object, replaced on the instance (PyFlink looks methods
    up on the instance); it calls the class's own method, so nothing else changes."""

    def __init__(self, owner, name: str, function_id: int, kind: str, counting: Counting):
        self.owner, self.name, self.function_id, self.kind, self.counting = owner, name, function_id, kind, counting

    def __call__(self, *args, **kwargs):
        self.counting.count(self.function_id, self.kind)
        return getattr(type(self.owner), self.name)(self.owner, *args, **kwargs)


def instrument(function, function_id: int, counting: Counting, window: bool = False):
    """``function`` counted under ``function_id``: a callable wrapped, an object's methods
    replaced on the instance (its class, and so PyFlink's type checks, unchanged); None when it is
    not the job's own (PyFlink's adapters for ``key_by`` and timestamps, a function counted already)."""
    if getattr(function, "_streamproof_counted", False) or isinstance(function, (CountedCall, type)):
        return None
    if any((getattr(obj, "__module__", "") or "").startswith("pyflink") for obj in (function, type(function))):
        return None
    if callable(function) and not any(hasattr(type(function), m) for m in ELEMENT_METHODS + TIMER_METHODS +
                                      WINDOW_METHODS):
        return CountedCall(function, function_id, "timer" if window else "element", counting)
    methods = [(m, "element") for m in ELEMENT_METHODS] + [(m, "timer") for m in TIMER_METHODS]
    if window:
        methods += [(m, "timer") for m in WINDOW_METHODS]
    for name, kind in methods:
        if callable(getattr(type(function), name, None)):
            setattr(function, name, CountedMethod(function, name, function_id, kind, counting))
    function._streamproof_counted = True
    return function


class EncodeForSink:
    """A sink's value as one line: the canonical form streamproof compares outputs by."""

    def __call__(self, value) -> str:
        from streamproof.properties.job.values import canonical

        return canonical(value)

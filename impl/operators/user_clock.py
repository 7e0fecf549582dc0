"""The clock user code sees: the operator's processing time, never the wall clock.

While a user callback runs (:class:`streamproof.impl.operators.keyed_process_operator.KeyedProcessOperator` guards each),
the names of the ``time`` and ``datetime`` modules in the user's module(s) are the simulated ones:

- ``time.sleep(s)`` returns at once (it never sleeps; the simulated clock does not move: a callback
  takes no time);
- ``time.time()``, ``time.monotonic()``, ``time.perf_counter()`` (and their ``_ns`` forms) are the
  operator's current processing time (``ctx.timer_service().current_processing_time()``) / 1000;
- ``time.localtime()``, ``time.gmtime()``, ``time.ctime()``, ``time.asctime()``,
  ``time.strftime(fmt)`` without a time argument read that time;
- ``datetime.datetime.now(tz)``, ``utcnow()``, ``today()`` and ``datetime.date.today()`` read it too
  (naive ones in the local time zone, as ``datetime.fromtimestamp(time.time())``).

Random values are replayed as Flink's exactly-once promise allows: ``random.random()``,
``randint``, ``choice``... (the ``random`` module's functions) and ``uuid.uuid4()`` / ``uuid1()``
draw from a generator seeded by the callback itself (its kind, key, timestamp and record), so the
same callback draws the same values in every run: after a restore, split or not. In Flink a replay
draws other values, but the output of the failed attempt is never committed: a committed output
with fresh ids is the output of a failure-free run that drew them. Comparing outputs needs the
draws pinned; an operator seeding its own ``random.Random(seed)`` is unaffected (an unseeded one,
made in ``__init__``, is pickled with the function: every run starts from the same state).

``print()`` (to stdout) writes to :func:`printed` instead of the console: Flink sends a task's
stdout to the TaskManager's ``.out`` file, not to the client; certify runs each callback many
times, and its own lines must stay readable. ``print(..., file=f)`` to anything but stdout is
printed as asked.

Only the globals of the modules that define the user's class (and its bases, outside streamproof
and pyflink) are substituted, for the duration of the callback, then restored: streamproof,
Hypothesis and everyone else keep the real clock. A module attribute ``time`` (``import time``,
``import time as t``), a name imported from it (``from time import sleep``, ``from time import time
as now``), ``import datetime`` and ``from datetime import datetime, date`` are all seen. Not seen: a
function-local ``import time``, the clock read inside another module the operator calls, and code
run outside callbacks (``__init__``). ``isinstance(x, datetime)`` keeps working: the substituted
classes build and recognise real ``datetime`` objects.
"""

from __future__ import annotations

import datetime as _datetime
import random as _random
import sys
import time as _time
import types
import uuid as _uuid
from contextlib import contextmanager
from typing import Any, Callable, Iterator

__all__ = ["UserClock", "user_clock_for", "simulated_now_ms", "wall_clock_frozen", "wall_clock_is_frozen", "printed",
           "forget_printed"]

_active: list[Callable[[], int]] = []  # the processing-time readers of the running callbacks (innermost last)


_frozen: list[int] = []  # non-empty: the wall-clock reads of callbacks give this instant (ms)


@contextmanager
def wall_clock_frozen(at_ms: int = 0) -> Iterator[None]:
    """While open, ``time.time()``, ``datetime.now()``... in callbacks read ``at_ms`` instead of the
    operator's processing time (which timers still follow): certify's rerun that tells an output
    that stamps the clock from one that differs otherwise."""
    _frozen.append(at_ms)
    try:
        yield
    finally:
        _frozen.pop()


def wall_clock_is_frozen() -> bool:
    return bool(_frozen)


def _frozen_now() -> int:
    return _frozen[-1]


def simulated_now_ms() -> int | None:
    """The running callback's processing time in ms, or None outside callbacks."""
    return _active[-1]() if _active else None


# -- the simulated time functions ---------------------------------------------------------------
def _seconds(real: Callable[[], float]) -> Callable[[], float]:
    def clock() -> float:
        return _active[-1]() / 1000 if _active else real()
    clock.__name__ = clock.__qualname__ = real.__name__
    return clock


def _nanoseconds(real: Callable[[], int]) -> Callable[[], int]:
    def clock() -> int:
        return _active[-1]() * 1_000_000 if _active else real()
    clock.__name__ = clock.__qualname__ = real.__name__
    return clock


_skipped_sleeps = [0]  # sleeps a callback asked for and did not get (all since the module loaded)


def sleep(secs: float) -> None:
    """Returns at once in a callback (never sleeps for real); ValueError for a negative time as ``time.sleep``."""
    if not _active:
        return _time.sleep(secs)
    if secs < 0:
        raise ValueError("sleep length must be non-negative")
    _skipped_sleeps[0] += 1
    return None


def skipped_sleeps() -> int:
    """How many ``sleep`` calls of user callbacks returned at once, since the module loaded."""
    return _skipped_sleeps[0]


def _at_now(real: Callable) -> Callable:
    """``real(secs=None)`` with a missing time meaning the simulated now."""
    def call(secs=None):
        if secs is None and _active:
            secs = _active[-1]() / 1000
        return real() if secs is None else real(secs)
    call.__name__ = call.__qualname__ = real.__name__
    return call


def _asctime(t=None):
    if t is None and _active:
        t = _time.localtime(_active[-1]() / 1000)
    return _time.asctime() if t is None else _time.asctime(t)


def _strftime(format, t=None):  # noqa: A002 - time.strftime's own parameter name
    if t is None and _active:
        t = _time.localtime(_active[-1]() / 1000)
    return _time.strftime(format) if t is None else _time.strftime(format, t)


_TIME_FAKES: dict[str, Any] = {
    "sleep": sleep,
    "time": _seconds(_time.time), "monotonic": _seconds(_time.monotonic), "perf_counter": _seconds(_time.perf_counter),
    "time_ns": _nanoseconds(_time.time_ns), "monotonic_ns": _nanoseconds(_time.monotonic_ns),
    "perf_counter_ns": _nanoseconds(_time.perf_counter_ns),
    "localtime": _at_now(_time.localtime), "gmtime": _at_now(_time.gmtime), "ctime": _at_now(_time.ctime),
    "asctime": _asctime, "strftime": _strftime,
}
_asctime.__name__ = "asctime"
_strftime.__name__ = "strftime"


# -- the simulated datetime classes -------------------------------------------------------------
_real_datetime, _real_date = _datetime.datetime, _datetime.date


class _RealClassMeta(type):
    """The substituted classes build real objects and recognise real ones (``isinstance``)."""

    _real: type

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, cls._real)

    def __subclasscheck__(cls, sub) -> bool:
        return issubclass(sub, cls._real)

    def __call__(cls, *args, **kwargs):
        return cls._real(*args, **kwargs)


_EPOCH = _real_datetime(1970, 1, 1, tzinfo=_datetime.timezone.utc)


def _instant() -> _real_datetime:
    """The running callback's processing time as an aware UTC datetime (exact to the millisecond)."""
    return _EPOCH + _datetime.timedelta(milliseconds=_active[-1]())


class _SimDatetime(_real_datetime, metaclass=_RealClassMeta):
    _real = _real_datetime

    @classmethod
    def now(cls, tz=None):
        if not _active:
            return _real_datetime.now(tz)
        if tz is not None and not isinstance(tz, _datetime.tzinfo):
            raise TypeError(f"tzinfo argument must be None or of a tzinfo subclass, not type '{type(tz).__name__}'")
        return _instant().astimezone(tz) if tz is not None else _instant().astimezone().replace(tzinfo=None)

    @classmethod
    def utcnow(cls):
        if not _active:
            return _real_datetime.now(_datetime.timezone.utc).replace(tzinfo=None)
        return _instant().replace(tzinfo=None)

    @classmethod
    def today(cls):
        return cls.now()


class _SimDate(_real_date, metaclass=_RealClassMeta):
    _real = _real_date

    @classmethod
    def today(cls):
        if not _active:
            return _real_date.today()
        return _instant().astimezone().date()


for _cls, _real in ((_SimDatetime, _real_datetime), (_SimDate, _real_date)):
    _cls.__name__, _cls.__qualname__, _cls.__module__ = _real.__name__, _real.__qualname__, "datetime"


def _proxy(real: types.ModuleType, fakes: dict[str, Any]) -> types.ModuleType:
    module = types.ModuleType(real.__name__, real.__doc__)
    module.__dict__.update({k: v for k, v in vars(real).items() if k not in ("__name__", "__doc__")})
    module.__dict__.update(fakes)
    return module


_TIME_MODULE = _proxy(_time, _TIME_FAKES)
_DATETIME_MODULE = _proxy(_datetime, {"datetime": _SimDatetime, "date": _SimDate})


# -- random values drawn per callback -----------------------------------------------------------
_seeds: list = []  # per running callback (innermost last): [seed function, its generator or None]


def _generator() -> _random.Random | None:
    """The running callback's generator (made on its first draw), or None outside callbacks."""
    if not _seeds or _seeds[-1][0] is None:
        return None
    entry = _seeds[-1]
    if entry[1] is None:
        entry[1] = _random.Random(entry[0]())  # a str seed: the same values in every process
    return entry[1]


def _drawn(name: str) -> Callable:
    real = getattr(_random, name)

    def draw(*args, **kwargs):
        generator = _generator()
        return real(*args, **kwargs) if generator is None else getattr(generator, name)(*args, **kwargs)
    draw.__name__ = draw.__qualname__ = name
    return draw


_RANDOM_FAKES: dict[str, Any] = {name: _drawn(name) for name in (
    "random", "uniform", "triangular", "randint", "randrange", "choice", "choices", "shuffle", "sample",
    "getrandbits", "randbytes", "gauss", "normalvariate", "lognormvariate", "expovariate", "vonmisesvariate",
    "gammavariate", "betavariate", "paretovariate", "weibullvariate") if hasattr(_random, name)}


def _uuid_drawn(real: Callable, version: int) -> Callable:
    def draw(*args, **kwargs):
        generator = _generator()
        return real(*args, **kwargs) if generator is None else _uuid.UUID(int=generator.getrandbits(128), version=version)
    draw.__name__ = draw.__qualname__ = real.__name__
    return draw


_UUID_FAKES: dict[str, Any] = {"uuid4": _uuid_drawn(_uuid.uuid4, 4), "uuid1": _uuid_drawn(_uuid.uuid1, 1)}
_RANDOM_MODULE = _proxy(_random, _RANDOM_FAKES)
_UUID_MODULE = _proxy(_uuid, _UUID_FAKES)

# what user globals may hold (by identity) -> what they hold while a callback runs
_SUBSTITUTES: dict[int, tuple[Any, Any]] = {id(_time): (_time, _TIME_MODULE), id(_datetime): (_datetime, _DATETIME_MODULE),
                                            id(_real_datetime): (_real_datetime, _SimDatetime),
                                            id(_real_date): (_real_date, _SimDate)}
_SUBSTITUTES[id(_random)] = (_random, _RANDOM_MODULE)
_SUBSTITUTES[id(_uuid)] = (_uuid, _UUID_MODULE)
for _module, _fakes in ((_time, _TIME_FAKES), (_random, _RANDOM_FAKES), (_uuid, _UUID_FAKES)):
    for _name, _fake in _fakes.items():
        _SUBSTITUTES[id(getattr(_module, _name))] = (getattr(_module, _name), _fake)

# -- print() in callbacks: kept, not shown (a TaskManager's .out file) --------------------------------
KEEP_PRINTED = 1000  # lines kept of what callbacks printed (all are counted)
_printed: list[str] = []
_printed_count = [0]
_ABSENT = object()  # a name the user's module does not bind (print comes from builtins)


def _print(*values, sep=" ", end="\n", file=None, flush=False):
    if not _active or (file is not None and file is not sys.stdout):
        return print(*values, sep=sep, end=end, file=file, flush=flush)
    text = (" " if sep is None else sep).join(map(str, values)) + ("\n" if end is None else end)
    lines = text.splitlines() or [""]
    _printed_count[0] += len(lines)
    _printed.extend(lines[:max(0, KEEP_PRINTED - len(_printed))])
    return None


_print.__name__ = _print.__qualname__ = "print"


def printed() -> tuple[int, list[str]]:
    """(how many lines user callbacks printed, the first ``KEEP_PRINTED`` of them)."""
    return _printed_count[0], list(_printed)


def forget_printed() -> None:
    _printed.clear()
    _printed_count[0] = 0


def _calls_print(namespace: dict) -> bool:
    """Does code defined in this module (its functions and classes' methods) name ``print``?"""
    module = namespace.get("__name__")
    todo = []
    for value in namespace.values():
        if getattr(value, "__module__", None) != module:
            continue
        members = vars(value).values() if isinstance(value, type) else (value,)
        for member in members:
            code = getattr(getattr(member, "__func__", member), "__code__", None)
            if isinstance(code, types.CodeType):
                todo.append(code)
    while todo:
        code = todo.pop()
        if "print" in code.co_names:
            return True
        todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return False


_OURS = ("streamproof", "pyflink", "builtins", "abc", "typing", "hypothesis")


def _user_globals(obj: Any) -> list[dict]:
    """The globals of the modules defining ``obj``'s class and its bases (outside streamproof,
    pyflink and the standard library's ``object``), found through their functions; of a plain
    function, its own module's."""
    found: dict[int, dict] = {}
    g = getattr(obj, "__globals__", None)  # a plain function or lambda (map(lambda v: ...))
    if isinstance(g, dict) and str(g.get("__name__", "")).split(".")[0] not in _OURS:
        found[id(g)] = g
    for cls in type(obj).__mro__:
        modname = getattr(cls, "__module__", "") or ""
        if modname.split(".")[0] in _OURS:
            continue
        module = sys.modules.get(modname)
        if module is not None and isinstance(getattr(module, "__dict__", None), dict):
            found.setdefault(id(module.__dict__), module.__dict__)
        for attr in vars(cls).values():
            func = getattr(attr, "__func__", attr)  # classmethod, staticmethod
            g = getattr(func, "__globals__", None)
            if isinstance(g, dict) and str(g.get("__name__", "")).split(".")[0] not in _OURS:
                found.setdefault(id(g), g)
    return list(found.values())


class UserClock:
    """The substitutions for one user function; :meth:`enter` before its callback, :meth:`exit` after
    (nested callbacks of operators sharing a module restore it when the outermost one ends)."""

    __slots__ = ("now_ms", "patches", "seed_of")

    def __init__(self, patches: list[tuple[dict, str, Any, Any]], now_ms: Callable[[], int],
                 seed_of: Callable[[], str] | None = None):
        self.patches = patches  # (globals, name, real, fake)
        self.now_ms = now_ms
        self.seed_of = seed_of  # the running callback's seed for random values (None: real ones)

    def enter(self) -> None:
        _active.append(_frozen_now if _frozen else self.now_ms)
        _seeds.append([self.seed_of, None])
        done = [p for p in self.patches if p[0].get(p[1], _ABSENT) is p[2]]  # not those an outer callback did
        for namespace, name, _, fake in done:
            namespace[name] = fake
        _undo.append(done)

    def exit(self) -> None:
        for namespace, name, real, fake in _undo.pop():
            if namespace.get(name) is fake:  # not if the user's code rebound the name meanwhile
                if real is _ABSENT:
                    del namespace[name]
                else:
                    namespace[name] = real
        _active.pop()
        _seeds.pop()

    def __enter__(self) -> "UserClock":
        self.enter()
        return self

    def __exit__(self, *exc) -> None:
        self.exit()


_undo: list[list] = []  # per running callback (innermost last): the substitutions it made


def user_clock_for(function: Any, now_ms: Callable[[], int], seed_of: Callable[[], str] | None = None) -> UserClock | None:
    """The clock substitutions for a runtime function (a PyFlink-style one: the operator it wraps),
    or None when its modules never name ``time``, ``datetime``, ``random`` or ``uuid`` nor call
    ``print`` (nothing to do per callback). ``seed_of``: the running callback's seed for random values."""
    user = function.function if getattr(function, "user_class_name", None) and hasattr(function, "function") else function
    patches = []
    for namespace in _user_globals(user):
        for name, value in list(namespace.items()):
            hit = _SUBSTITUTES.get(id(value))
            if hit is not None and hit[0] is value:
                patches.append((namespace, name, value, hit[1]))
        bound = namespace.get("print", _ABSENT)
        if bound in (_ABSENT, print) and _calls_print(namespace):
            patches.append((namespace, "print", bound, _print))
    return UserClock(patches, now_ms, seed_of) if patches else None

"""What every seed's run shares, random or exhaustive: the per-seed deadline, the bug-zoo
variant applied around a run, and the result row it starts from (``spec.COLUMNS``).

Nothing here imports pyspark; both :mod:`~streamproof.spark_harness.executor` and
:mod:`~streamproof.spark_harness.exhaustive` build on it (so neither imports the other).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
from typing import Any

from streamproof.spark_harness import spec


class SeedTimeout(BaseException):
    """Raised by the per-seed alarm. A BaseException, so that Hypothesis does not take it for a
    failure of the test and shrink it: it unwinds straight out of ``explore``."""


class Deadline:
    """The per-seed time limit: a SIGALRM interval timer that raises :class:`SeedTimeout` in the
    main thread once the limit has passed, and again every ``repeat`` seconds until the block
    ends (Python swallows an exception raised inside a gc callback, a weakref callback or a
    ``__del__``, and Hypothesis may turn one raised while drawing data into a flakiness error;
    while armed, ``sys.unraisablehook`` drops a swallowed SeedTimeout instead of printing it).
    ``expired`` tells the caller which happened."""

    def __init__(self, seconds: float | None, repeat: float = 0.25):
        self.seconds = seconds
        self.repeat = repeat
        self.expired = False
        self.armed = False
        self._previous = None
        self._previous_unraisablehook = None

    def _fire(self, signum, frame):
        if not self.armed:
            return
        self.expired = True
        if frame is not None and frame.f_code.co_name == "gc_callback":
            return  # Python would only print it ("Exception ignored"); the next tick raises
        raise SeedTimeout()

    def __enter__(self) -> Deadline:
        if self.seconds and self.seconds > 0 and threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGALRM, self._fire)
            self._previous_unraisablehook, sys.unraisablehook = sys.unraisablehook, self._unraisable
            self.armed = True
            signal.setitimer(signal.ITIMER_REAL, self.seconds, self.repeat)
        return self

    def _unraisable(self, unraisable) -> None:
        # a SeedTimeout raised where Python swallows it (a weakref callback, a __del__): the
        # interval timer raises it again; nothing to print
        if unraisable.exc_type is None or not issubclass(unraisable.exc_type, SeedTimeout):
            self._previous_unraisablehook(unraisable)

    def disarm(self) -> None:
        if self.armed:
            self.armed = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._previous or signal.SIG_DFL)
            if sys.unraisablehook == self._unraisable:
                sys.unraisablehook = self._previous_unraisablehook

    def __exit__(self, *exc) -> None:
        self.disarm()


def deadline(seconds: float | None) -> Deadline:
    """Raises :class:`SeedTimeout` in the block after ``seconds`` (SIGALRM; only in the main
    thread, which is where PySpark's Python worker runs the function: elsewhere no limit)."""
    return Deadline(seconds)


@contextlib.contextmanager
def injected(variant: str | None):
    if variant is None:
        yield
        return
    from streamproof.properties.bugzoo import get_variant

    with get_variant(variant).patch():
        yield


def one_line(text: str, limit: int = 500) -> str:
    return " ".join(str(text).split())[:limit]


def _hypothesis_version() -> str:
    try:
        import hypothesis
        return hypothesis.__version__
    except Exception:  # noqa: BLE001
        return ""


EXECUTOR = f"{socket.gethostname()}:{os.getpid()}"


def _caught_by(variant: str | None) -> str | None:
    if variant is None:
        return None
    try:
        from streamproof.properties.bugzoo import get_variant
        return get_variant(variant).caught_by
    except Exception:  # noqa: BLE001
        return None


def base_row(config: dict, seed: int) -> dict[str, Any]:
    prop = config["property"]
    return {
        "campaign": config["campaign"], "property": prop,
        "chunk": (seed - config["seed_start"]) // config["chunk_seeds"], "seed": seed,
        "verdict": "error", "examples": 0, "steps": 0, "duration": 0.0, "invariant": None,
        "message": None, "signature": None, "signature_text": None, "scenario": None,
        "reproduce": spec.reproduce_command(prop, seed, config["examples"], config["step_count"],
                                            config.get("inject"), _caught_by(config.get("inject"))),
        "reproduce_blob": None, "inject": config.get("inject"),
        "budget_examples": config["examples"], "step_count": config["step_count"],
        "version": config.get("version", ""), "hypothesis": _hypothesis_version(),
        "executor": EXECUTOR, "finished": None, "states": None,
    }

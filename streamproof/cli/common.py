"""What the ``streamproof`` sub-commands share: exit codes, the one-line bad-input error, the
common options, the active profile's budget, replay's and explain's ``--inject`` and their refusal
of certify counterexamples, progress (the status line), Ctrl-C (exit 130), atomic writes, tables
and JSON lines.

The command modules (the modules of :mod:`streamproof.cli`, one per sub-command, which its
``__init__`` registers) import from here, never from each other, so the command line has no
import cycle.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, NoReturn, Sequence

import click
from streamproof.properties.files import write_atomically  # noqa: F401  (re-exported)
from streamproof.properties.progress_display import (  # noqa: F401  (isatty, plural: re-exported)
    Display, duration, isatty, plural, stderr_console)

EXIT_HELD, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), as shells report it: not "a property failed"
# click >= 8.2 raises this (a UsageError that prints the help) for a bare ``streamproof``: left alone.
NO_ARGS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())


class InputError(click.ClickException):
    """Bad input: exit 2 with one line on stderr."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: Any) -> None:
        super().__init__(one_line(str(message)))

    def show(self, file: Any = None) -> None:
        click.echo(f"streamproof: error: {self.format_message()}", file=file or sys.stderr)


def deliver_ctrl_c_reliably() -> None:
    """Ctrl-C raises KeyboardInterrupt even when it lands where Python only prints an exception
    ("Exception ignored"): a gc callback (Hypothesis installs one), a weakref callback or a
    ``__del__`` run by the garbage collector. The interrupt was lost there and the run went on to
    its end (exit 0 or 1, not 130). It is sent again 50 ms later: before it is raised when the
    handler sees a gc callback on the stack, and from ``sys.unraisablehook`` when Python swallowed
    it anywhere else."""
    _SETTLED[0] = False  # a new command: its Ctrl-C counts
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)
        if sys.unraisablehook is not _on_unraisable:
            _PREVIOUS_UNRAISABLEHOOK[0] = sys.unraisablehook
            sys.unraisablehook = _on_unraisable


_RESENDS: list[threading.Timer] = []  # Ctrl-C sent again later (it landed where Python swallows it)
_SETTLED = [False]  # the run reported its interruption: it exits 130, whatever Ctrl-C comes next
_PREVIOUS_UNRAISABLEHOOK = [sys.__unraisablehook__]


def _resend_ctrl_c() -> None:
    resend = threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT))
    resend.daemon = True
    _RESENDS.append(resend)
    resend.start()


def _on_unraisable(unraisable) -> None:
    """A KeyboardInterrupt Python swallowed (a weakref callback, a ``__del__``): sent again."""
    if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
        if not _SETTLED[0]:
            _resend_ctrl_c()
        return
    _PREVIOUS_UNRAISABLEHOOK[0](unraisable)


def _on_sigint(signum, frame) -> None:
    if _SETTLED[0]:
        return
    if _lands_badly(frame):
        _resend_ctrl_c()
        return
    for resend in _RESENDS:  # this one is delivered: one Ctrl-C, one KeyboardInterrupt
        resend.cancel()
    explore = sys.modules.get("streamproof.properties.explore")  # loaded where something explores
    if explore is not None:
        explore.note_interrupt()  # an exploration it lands in is interrupted, whatever Hypothesis makes of it
    raise KeyboardInterrupt


def _lands_badly(frame) -> bool:
    """Would a KeyboardInterrupt raised at ``frame`` be lost? In a gc callback Python only prints it."""
    inner = frame
    while inner is not None:
        if inner.f_code.co_name == "gc_callback":
            return True
        inner = inner.f_back
    return False


def one_line(text: str) -> str:
    return " ".join(text.split()) or "unknown error"


def input_error(e: BaseException) -> InputError:
    if isinstance(e, click.UsageError):
        return InputError(e.format_message())
    if isinstance(e, KeyError) and e.args:  # UnknownProperty, unknown bug variant
        return InputError(e.args[0])
    return InputError(e)


def examples_option(f):
    return click.option(
        "--examples", type=click.IntRange(min=1), default=None, metavar="N",
        help="Hypothesis examples per property [default: the profile's, $HYPOTHESIS_PROFILE "
             "(dev, ci, campaign; ci when unset)]")(f)


def seed_option(f):
    return click.option("--seed", type=int, default=0, show_default=True, metavar="S",
                        help="Hypothesis seed (runs are deterministic per seed)")(f)


def json_option(f):
    return click.option("--json", "as_json", is_flag=True,
                        help="JSON Lines on stdout instead of text")(f)


def profile_defaults() -> tuple[int, int]:
    """(examples, step count) of the active Hypothesis profile; the global profile is left as
    it was, so running the CLI inside a test session changes nothing there."""
    import os

    from hypothesis import settings
    from hypothesis.errors import InvalidArgument

    from streamproof.properties import profiles

    current = getattr(settings, "get_current_profile_name", None)
    previous = current() if current else getattr(settings, "_current_profile", "default")
    try:
        profiles.load_default()
    except InvalidArgument:
        name = os.environ.get("HYPOTHESIS_PROFILE")
        raise InputError(f"unknown Hypothesis profile {name!r} in HYPOTHESIS_PROFILE; "
                         f"known: {', '.join(profiles.PROFILES)}") from None
    try:
        return profiles.current_examples(), profiles.current_step_count()
    finally:
        settings.load_profile(previous)


def injected_patch(inject: str | None):
    """The patch of the bug-zoo variant ``--inject`` names (no-op without one); an unknown name
    is bad input."""
    from contextlib import nullcontext

    if inject is None:
        return nullcontext
    from streamproof.properties.bugzoo import get_variant
    try:
        return get_variant(inject).patch
    except KeyError as e:
        raise input_error(e) from None


def refuse_certify_counterexample(file: str) -> None:
    """A counterexample of ``streamproof certify`` runs the user's operator, which only
    ``certify --replay`` loads: bad input here, with the command that replays it."""
    try:
        doc = json.loads(Path(file).read_bytes().decode("utf-8-sig"))
    except (OSError, ValueError):
        return  # load_scenario_file says what is wrong
    if not isinstance(doc, dict):
        return
    params = doc.get("params") if isinstance(doc.get("params"), dict) else {}
    operator, prop = params.get("operator"), doc.get("property")
    if isinstance(operator, str) and operator.startswith("user:") or isinstance(prop, str) and prop.startswith("certify."):
        spec = operator[len("user:"):] if isinstance(operator, str) and operator.startswith("user:") else "MODULE:CLASS"
        raise InputError(f"{file}: a counterexample of 'streamproof certify' (it runs your operator); replay it with: "
                         f"streamproof certify {shlex.quote(spec)} --replay {shlex.quote(file)}")


def interrupted(what: str, finished: str) -> NoReturn:
    """Ctrl-C: one line on stderr saying what was interrupted and what finished, exit 130 (what
    was printed or written before stays)."""
    click.echo(f"streamproof: interrupted: {one_line(what)}; {one_line(finished)}", err=True)
    settle_interrupt()
    click.get_current_context().exit(EXIT_INTERRUPTED)


def settle_interrupt() -> None:
    """Once the run reports its interruption, the exit code is 130: a Ctrl-C still on its way (one
    sent again after landing in a gc callback, or a second press) must not kill the process while
    it exits (Python reports an interrupt during shutdown by dying of SIGINT, exit -2)."""
    for resend in _RESENDS:
        resend.cancel()
    _SETTLED[0] = True
    # A KeyboardInterrupt that left code run by exec/eval of a string (Hypothesis builds functions
    # so) is marked unhandled by CPython even once caught, and ``python -m`` then kills itself with
    # SIGINT at exit (exit -2 after the 130 line). Each exec of a string starts by clearing that
    # mark: this one, caught and reported, is handled.
    exec("")


class Status:
    """Progress of a long command on stderr (:class:`~streamproof.properties.progress_display.Display`),
    so stdout (and ``--json``) stays clean.

    On a terminal, a live status (bar, item, examples done or what shrinks, elapsed) erased before any
    other line and at the end; elsewhere plain lines only: ``item`` lines (a property or variant
    finished), the ``summary`` line, and the status line as a heartbeat after ``heartbeat`` seconds
    without a line. Use as a context manager: the live status is erased on the way out, Ctrl-C
    included. ``detail``, when set, replaces what the examples say (e.g. writing a counterexample).
    """

    def __init__(self, command: str, total: int, stream: Any = None, *, console: Any = None,
                 clock: Callable[[], float] = time.monotonic, heartbeat: float | None = None) -> None:
        self.command, self.total, self.clock = command, total, clock
        self.started = self.item_started = clock()
        self.index, self.name, self.detail = 0, "", ""
        self.finished = 0  # items finished (the bar)
        self._examples: tuple[int, int] | None = None  # (done, asked) of the item's exploration
        self._shrinking: tuple[int, float] | None = None  # (examples when found, since)
        self.display = Display(self.lines, self.fraction, heartbeat=heartbeat, clock=clock,
                               console=console if console is not None else stderr_console(stream))
        self.tty = self.display.tty

    def __enter__(self) -> "Status":
        self.display.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.display.__exit__(*exc)

    def begin(self, index: int, name: str) -> None:
        """Item ``index`` (0-based) of ``total`` starts."""
        self.index, self.name, self.detail = index, name, ""
        self._examples = self._shrinking = None
        self.item_started = self.clock()

    def examples(self, done: int, asked: int, shrinking: bool = False) -> None:
        """An exploration's progress (the :func:`explore` callback)."""
        self._examples = (done, asked)
        if shrinking and self._shrinking is None:
            self._shrinking = (done, self.clock())

    def fraction(self) -> float:
        done, asked = self._examples or (0, 1)
        current = self.index + (1.0 if self._shrinking else min(1.0, done / max(1, asked)))
        return max(self.finished, current) / max(1, self.total)

    def line(self) -> str:
        now = self.clock()
        parts = [f"{self.command} [{min(self.index + 1, self.total)}/{self.total}]"]
        if self.name:
            parts.append(f"{self.name}:")
        detail = self.detail
        if not detail and self._shrinking is not None:
            found, since = self._shrinking
            detail = f"failure found after {plural(found, 'example')}, shrinking it ({duration(now - since)})"
        elif not detail and self._examples is not None:
            detail = f"{self._examples[0]}/{self._examples[1]} examples"
        if detail:
            parts.append(f"{detail},")
        parts.append(f"{duration(now - self.item_started)} (total {duration(now - self.started)})")
        return " ".join(parts)

    def lines(self) -> list[str]:
        return [self.line()]

    def item(self, text: str) -> None:
        """A finished item's line (kept above the live status on a terminal)."""
        self.name = self.detail = ""
        self._examples = self._shrinking = None
        self.finished = self.index + 1
        self.say(f"[{min(self.index + 1, self.total)}/{self.total}] {text}")

    def summary(self, text: str) -> None:
        self.say(f"{self.command}: {text} in {duration(self.clock() - self.started)}")

    def say(self, text: str) -> None:
        self.display.say(text)

    def paused(self):
        """Prints other lines (stdout's too: the same terminal) with the live status erased."""
        return self.display.paused()


def table(header: Sequence[str], rows: list[Sequence[Any]], right: set[int] = frozenset()) -> list[str]:
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]

    def line(row: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(row, widths))).rstrip()

    return [line(row) for row in cells]


def emit_json(obj: dict) -> None:
    click.echo(json.dumps(obj, ensure_ascii=False))

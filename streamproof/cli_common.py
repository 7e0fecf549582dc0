"""What the ``streamproof`` sub-commands share: exit codes, the one-line bad-input error, the
common options, the active profile's budget, progress (the status line), Ctrl-C (exit 130),
atomic writes, tables and JSON lines.

The command modules (:mod:`~streamproof.cli` and the ``*_cli`` modules it registers) import from
here, never from each other, so the command line has no import cycle.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, NoReturn, Sequence

import click
from streamproof.properties.files import write_atomically  # noqa: F401  (re-exported)

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
    """Ctrl-C raises KeyboardInterrupt even when it lands in a gc callback: Hypothesis installs one,
    and Python only prints an exception raised there ("Exception ignored"), so the interrupt was
    lost and the run went on to its end (exit 0 or 1, not 130). There it is sent again 50 ms later."""
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)


def _on_sigint(signum, frame) -> None:
    inner = frame
    while inner is not None:
        if inner.f_code.co_name == "gc_callback":
            threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT)).start()
            return
        inner = inner.f_back
    raise KeyboardInterrupt


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


def isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def interrupted(what: str, finished: str) -> NoReturn:
    """Ctrl-C: one line on stderr saying what was interrupted and what finished, exit 130 (what
    was printed or written before stays)."""
    click.echo(f"streamproof: interrupted: {one_line(what)}; {one_line(finished)}", err=True)
    click.get_current_context().exit(EXIT_INTERRUPTED)


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def duration(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f} s"
    seconds = int(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}" if seconds >= 60 else f"{seconds} s"


class Status:
    """Progress of a long command on stderr, so stdout (and ``--json``) stays clean.

    On a terminal, one status line (what runs, examples done, elapsed) redrawn as work advances
    and at least every second, erased before any other line; elsewhere nothing of it. ``item``
    lines (a property or variant finished) and the ``summary`` line are printed in both cases.
    Use as a context manager: the status line is erased on the way out, Ctrl-C included.
    """

    TICK = 1.0

    def __init__(self, command: str, total: int, stream: Any = None) -> None:
        self.command, self.total = command, total
        self.stream = stream if stream is not None else sys.stderr
        self.tty = isatty(self.stream)
        self.started = time.monotonic()
        self.index = 0
        self.name = ""
        self.item_started = self.started
        self.detail = ""
        self._drawn = False
        self._last = 0.0  # when the status line was last drawn
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def __enter__(self) -> "Status":
        if self.tty:
            self._ticker = threading.Thread(target=self._tick, name="streamproof-status", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=2 * self.TICK)
        with self._lock:
            self._erase()

    def _tick(self) -> None:
        while not self._stop.wait(self.TICK):
            self.draw()

    def begin(self, index: int, name: str) -> None:
        """Item ``index`` (0-based) of ``total`` starts."""
        self.index, self.name, self.detail = index, name, ""
        self.item_started = time.monotonic()
        self.draw()

    def examples(self, done: int, asked: int, shrinking: bool = False) -> None:
        """An exploration's progress (the :func:`explore` callback)."""
        self.detail = (f"failure found after {plural(done, 'example')}, shrinking it" if shrinking
                       else f"{done}/{asked} examples")
        self.draw(throttle=True)

    def line(self) -> str:
        now = time.monotonic()
        parts = [f"{self.command} [{min(self.index + 1, self.total)}/{self.total}]"]
        if self.name:
            parts.append(f"{self.name}:")
        if self.detail:
            parts.append(f"{self.detail},")
        parts.append(f"{duration(now - self.item_started)} (total {duration(now - self.started)})")
        return " ".join(parts)

    def draw(self, throttle: bool = False) -> None:
        if not self.tty:
            return
        now = time.monotonic()
        if throttle and now - self._last < 0.2:
            return
        self._last = now
        text = self.line()
        width = _terminal_width()
        if len(text) >= width:
            text = text[:width - 4] + "..."
        with self._lock:
            self.stream.write("\r\x1b[K" + text)
            self.stream.flush()
            self._drawn = True

    def _erase(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._drawn = False

    def item(self, text: str) -> None:
        """A finished item's line (kept above the status line on a terminal)."""
        self.name = self.detail = ""
        self.say(f"[{min(self.index + 1, self.total)}/{self.total}] {text}")

    def summary(self, text: str) -> None:
        self.say(f"{self.command}: {text} in {duration(time.monotonic() - self.started)}")

    def say(self, text: str) -> None:
        with self.paused():
            click.echo(text, file=self.stream)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Prints other lines (stdout's too: the same terminal) with the status line erased."""
        with self._lock:
            self._erase()
            yield
        self.draw()


def _terminal_width() -> int:
    import shutil

    return shutil.get_terminal_size((100, 24)).columns


def table(header: Sequence[str], rows: list[Sequence[Any]], right: set[int] = frozenset()) -> list[str]:
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]

    def line(row: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(row, widths))).rstrip()

    return [line(row) for row in cells]


def emit_json(obj: dict) -> None:
    click.echo(json.dumps(obj, ensure_ascii=False))

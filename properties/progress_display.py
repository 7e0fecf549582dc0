"""The one progress display of every long command (check, certify, bugzoo, replay, campaign), on
stderr with rich, so stdout and ``--json`` stay clean.

On a terminal: a live status (a bar and a line, more lines when needed) redrawn a few times a second
by :class:`rich.live.Live`, which erases whole lines (a shorter line leaves nothing of a longer one),
keeps other lines above it and is erased when the command ends, Ctrl-C included. Elsewhere (a pipe, a
log, CI): plain lines only, no escape codes, no carriage returns: the lines the command says, and a
heartbeat (the status as one line) when nothing was printed for ``heartbeat`` seconds.

The owner (:class:`streamproof.cli.common.Status`, the campaign's display) supplies the status as
plain text lines and the bar's fraction; both are asked for when drawn, so the clock moves by itself.
"""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

HEARTBEAT = 10.0  # seconds without a line before a non-terminal display prints its status


def isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def duration(seconds: float) -> str:
    if seconds < 10:
        return f"{max(0.0, seconds):.1f} s"
    seconds = int(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}" if seconds >= 60 else f"{seconds} s"


def stderr_console(stream: Any = None):
    """A rich console on ``stream`` (default: whatever ``sys.stderr`` is when it writes), a terminal
    exactly when the stream is one (FORCE_COLOR and the like do not turn a log into a terminal)."""
    from rich.console import Console

    if stream is None:
        return Console(stderr=True, force_terminal=isatty(sys.stderr), highlight=False)
    return Console(file=stream, force_terminal=isatty(stream), highlight=False)


class Display:
    """A live status on a terminal, plain lines elsewhere (see the module). ``status()`` gives the
    status lines, ``fraction()`` the bar's fill (None: no bar), ``poll()`` (optional) runs about
    every ``tick`` seconds beside the display (the campaign reads its executors' reports there).
    A context manager; ``say`` prints a line in both modes, ``paused`` lets other output (stdout:
    the same terminal) through with the live status erased."""

    def __init__(self, status: Callable[[], list[str]], fraction: Callable[[], float | None] = lambda: None, *,
                 console: Any = None, heartbeat: float | None = None, clock: Callable[[], float] = time.monotonic,
                 poll: Callable[[], None] | None = None, tick: float = 1.0) -> None:
        self.console = console if console is not None else stderr_console()
        self.tty = self.console.is_terminal and not self.console.is_dumb_terminal
        self.status, self.fraction, self.poll = status, fraction, poll
        self.heartbeat = HEARTBEAT if heartbeat is None else heartbeat
        self.clock, self.interval = clock, tick
        self.live = None
        self.last_line = clock()  # when a line was last printed (the heartbeat's reference)
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def __enter__(self) -> "Display":
        if self.tty and self.live is None:
            from rich.live import Live

            self.live = Live(self, console=self.console, transient=True, refresh_per_second=4,
                             redirect_stdout=False, redirect_stderr=False)
            self.live.start(refresh=True)
        if self._ticker is None and (self.poll is not None or not self.tty):
            self._ticker = threading.Thread(target=self._run, name="streamproof-progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._ticker is not None and self._ticker is not threading.current_thread():
            self._ticker.join(timeout=5)
        with self._lock:
            if self.live is not None:
                self.live.stop()
                self.live = None

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.tick()
            except Exception:  # noqa: BLE001 - a display problem must not stop the command
                pass

    def tick(self) -> None:
        """What the ticker does every ``tick`` seconds: ``poll``, then on a non-terminal the
        heartbeat when nothing was printed for ``heartbeat`` seconds."""
        if self.poll is not None:
            self.poll()
        with self._lock:
            if not self.tty and self.clock() - self.last_line >= self.heartbeat:
                lines = self.status()
                if lines:
                    self.say("; ".join(lines))

    def say(self, text: str) -> None:
        """A line of its own: above the live status on a terminal, a plain line elsewhere."""
        from rich.text import Text

        with self._lock:
            self.console.print(Text(text), soft_wrap=True, highlight=False)
            self.last_line = self.clock()

    def refresh(self) -> None:
        with self._lock:
            if self.live is not None:
                self.live.refresh()

    @contextmanager
    def paused(self) -> Iterator[None]:
        with self._lock:
            live = self.live
            if live is not None:
                live.stop()
            try:
                yield
            finally:
                if live is not None and not self._stop.is_set():
                    live.start(refresh=True)

    def __rich__(self):
        """What the live display draws: the status lines (cut at the terminal's width), the first
        after the bar."""
        from rich.console import Group
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        lines = [Text(line, no_wrap=True, overflow="ellipsis") for line in self.status()] or [Text("")]
        fraction = self.fraction()
        if fraction is None:
            return Group(*lines)
        row = Table.grid(padding=(0, 1))
        row.add_column(width=20)
        row.add_column(no_wrap=True, overflow="ellipsis")
        row.add_row(ProgressBar(total=1.0, completed=min(1.0, max(0.0, fraction)), width=20), lines[0])
        return Group(row, *lines[1:])

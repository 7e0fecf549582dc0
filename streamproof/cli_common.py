"""What the ``streamproof`` sub-commands share: exit codes, the one-line bad-input error, the
common options, the active profile's budget, progress bars, tables and JSON lines.

The command modules (:mod:`~streamproof.cli` and the ``*_cli`` modules it registers) import from
here, never from each other, so the command line has no import cycle.
"""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Sequence

import click

EXIT_HELD, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
# click >= 8.2 raises this (a UsageError that prints the help) for a bare ``streamproof``: left alone.
NO_ARGS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())


class InputError(click.ClickException):
    """Bad input: exit 2 with one line on stderr."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: Any) -> None:
        super().__init__(one_line(str(message)))

    def show(self, file: Any = None) -> None:
        click.echo(f"streamproof: error: {self.format_message()}", file=file or sys.stderr)


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


@contextmanager
def progress(items: list, label: str, streaming: bool = False,
              name=lambda item: getattr(item, "name", str(item))) -> Iterator[Iterable]:
    """A progress bar on stderr when stderr is a terminal; the plain items otherwise. With
    ``streaming`` (lines printed while the bar runs) only when stdout goes elsewhere."""
    if not isatty(sys.stderr) or (streaming and isatty(sys.stdout)):
        yield items
        return
    with click.progressbar(items, label=label, file=sys.stderr,
                           item_show_func=lambda item: name(item) if item is not None else None) as bar:
        yield bar


def table(header: Sequence[str], rows: list[Sequence[Any]], right: set[int] = frozenset()) -> list[str]:
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]

    def line(row: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(row, widths))).rstrip()

    return [line(row) for row in cells]


def emit_json(obj: dict) -> None:
    click.echo(json.dumps(obj, ensure_ascii=False))

"""What a harness's operator emitted, and comparing it with what a test expects.

:class:`Record` and :class:`Watermark` are the elements of :meth:`get_output` (Flink's
``StreamRecord`` and ``Watermark`` in ``getOutput()``). :func:`assert_output` compares by value,
in order where Flink orders the output of one subtask and as a multiset where it does not: the
outputs of timers that fire at the same timestamp (the order of equal-timestamp timers of
different keys is the timer heap's, which Flink does not promise), or, with ``ordered=False``,
everything between two watermarks (Flink's ``TestHarnessUtil.assertOutputEqualsSorted``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable

__all__ = ["Record", "Watermark", "Timer", "HarnessError", "assert_output"]


class HarnessError(ValueError):
    """A harness cannot do what it was asked (bad input, a snapshot of another operator, a key of
    another subtask): one line; the streamproof pytest plugin reports it without a traceback."""

    streamproof_one_line = True


@dataclass(frozen=True)
class Record:
    """One output record: its value and timestamp (None: the record had none)."""

    value: Any
    timestamp: int | None = None


@dataclass(frozen=True)
class Watermark:
    """A watermark the operator forwarded."""

    timestamp: int


@dataclass(frozen=True)
class Timer:
    """A pending timer: when it fires, for which key, in which time domain (``"event"`` or
    ``"processing"``)."""

    timestamp: int
    key: Any
    domain: str


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _multiset_difference(expected: list, actual: list) -> tuple[list, list]:
    """(missing, unexpected) by value, without hashing (values may be unhashable)."""
    unexpected = list(actual)
    missing = []
    for value in expected:
        for i, candidate in enumerate(unexpected):
            if candidate == value:
                del unexpected[i]
                break
        else:
            missing.append(value)
    return missing, unexpected


def _same_multiset(expected: list, actual: list) -> bool:
    if len(expected) != len(actual):
        return False
    try:
        return Counter(map(_hashable, expected)) == Counter(map(_hashable, actual))
    except TypeError:
        missing, unexpected = _multiset_difference(expected, actual)
        return not missing and not unexpected


def _hashable(value: Any) -> Any:
    hash(value)
    return value


def _blocks(actual: list, groups: list, ordered: bool | None) -> list[list[int]]:
    """Positions of ``actual`` cut into blocks compared as multisets: ``groups[i]`` names the
    block an element may share (records of timers firing at one timestamp), None for none."""
    blocks: list[list[int]] = []
    previous = object()
    for i, element in enumerate(actual):
        if ordered is False:
            same = not isinstance(element, Watermark) and blocks and not isinstance(actual[blocks[-1][0]], Watermark)
        else:
            same = groups[i] is not None and groups[i] == previous and bool(blocks)
        if same:
            blocks[-1].append(i)
        else:
            blocks.append([i])
        previous = groups[i] if ordered is not False else None
    return blocks


def assert_output(expected: Iterable, actual: list, groups: list | None = None, *,
                  ordered: bool | None = None, what: str = "output") -> None:
    """Fails with one paragraph unless ``actual`` matches ``expected``.

    ``expected``: values, or :class:`Record`/:class:`Watermark` elements (then ``actual`` is
    compared element by element with timestamps and watermarks; else only values). ``ordered``:
    None (default) in order except records of timers that fired at one timestamp, True strictly in
    order, False as a multiset between watermarks."""
    expected = list(expected)
    groups = groups if groups is not None else [None] * len(actual)
    if ordered is True:
        groups = [None] * len(actual)
    if len(expected) == len(actual):
        position = 0
        for block in _blocks(actual, groups, ordered):
            got = [actual[i] for i in block]
            want = expected[position:position + len(block)]
            if not (got == want if len(block) == 1 else _same_multiset(want, got)):
                break
            position += len(block)
        else:
            return
    missing, unexpected = _multiset_difference(expected, actual)
    if not missing and not unexpected:
        first = next(i for i, (a, b) in enumerate(zip(expected, actual)) if a != b)
        detail = (f"the same elements in another order: at position {first} expected {_short(expected[first])}, "
                  f"got {_short(actual[first])}")
    else:
        parts = []
        if missing:
            parts.append(f"missing {len(missing)}: {', '.join(_short(v) for v in missing[:5])}"
                         + (" ..." if len(missing) > 5 else ""))
        if unexpected:
            parts.append(f"unexpected {len(unexpected)}: {', '.join(_short(v) for v in unexpected[:5])}"
                         + (" ..." if len(unexpected) > 5 else ""))
        detail = "; ".join(parts)
    raise AssertionError(f"{what} differs from what was expected ({len(expected)} expected, {len(actual)} emitted): "
                         f"{detail}. Emitted: {_short(actual, 600)}")

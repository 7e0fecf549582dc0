"""Reachability counters: how often a property met its interesting cases.

``note(label)`` records a Hypothesis ``event()`` (shown by ``pytest --hypothesis-show-statistics``)
and counts it here, so the CLI, campaigns and tests can report and assert the numbers.
"""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from typing import Iterator

import hypothesis

_counts: Counter = Counter()


def note(label: str) -> None:
    _counts[label] += 1
    try:
        hypothesis.event(label)
    except hypothesis.errors.InvalidArgument:
        pass  # outside a Hypothesis test (a replay): counted here only


@contextmanager
def counting() -> Iterator[Counter]:
    """Counts the notes made inside the block (nested blocks see their own notes only)."""
    global _counts
    outer, _counts = _counts, Counter()
    try:
        yield _counts
    finally:
        inner = _counts
        _counts = outer
        _counts.update(inner)

"""The cyclic garbage collector's pace during an exploration (issue 30).

A simulated job is a web of reference cycles (tasks, their mailboxes and operators, the closures
that wire them), so every example leaves a few thousand objects that only the cyclic collector
frees. At CPython's default thresholds (700, 10, 10) an exploration of 300 ``job.exactly-once``
examples ran about 1,300 young and 11 full collections; a full collection scans everything alive
(Hypothesis' data, the cached runs) and they cost about 0.7 s of 6 s. Collecting the young
generation every 50,000 net allocations instead lets a finished example's garbage die young:
46 young and one full collection, about half the collector's time (docs/decisions.md). What is
collected does not change, only when: no output depends on it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 50_000  # net allocations of container objects between young collections


@contextmanager
def paced_collections(young: int = YOUNG_THRESHOLD) -> Iterator[None]:
    """Within the block the young generation is collected every ``young`` allocations (never
    more often than the caller had it); the thresholds are restored on the way out."""
    before = gc.get_threshold()
    gc.set_threshold(max(young, before[0]), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)

"""A known bug the ``counter`` family's property must catch."""

from __future__ import annotations

from contextlib import contextmanager

from streamproof import bug_variant

from counter_family.counter import CheckpointedCounter


@bug_variant("counter-restore-keeps-replayed-adds", source="counter_family", caught_by="counter.matches-spec",
             description="restore() does not roll the value back: the adds the source replays after a "
                         "failure are counted twice.")
@contextmanager
def restore_keeps_adds():
    original = CheckpointedCounter.restore
    CheckpointedCounter.restore = lambda self: None
    try:
        yield
    finally:
        CheckpointedCounter.restore = original

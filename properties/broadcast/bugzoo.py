"""Known-bug variants of broadcast state restore (impl/tasks/operator_chain.py ``broadcast_copy_for``)."""

from __future__ import annotations

from contextlib import contextmanager

from streamproof.impl.tasks import operator_chain as chain
from streamproof.properties.bugzoo import variant

PROPERTY = "broadcast.restore"


@contextmanager
def _rule(rule):
    original = chain.broadcast_copy_for
    chain.broadcast_copy_for = rule
    try:
        yield
    finally:
        chain.broadcast_copy_for = original


@variant("broadcast-state-empty-beyond-old-parallelism", "streamproof", PROPERTY,
         "A restore at a higher parallelism gives the new subtasks (index >= the old parallelism) an empty "
         "broadcast state instead of an old copy (round robin): after a rescale up they miss every rule.")
@contextmanager
def empty_beyond_old_parallelism():
    def rule(copies, subtask):
        if copies and subtask >= len(copies):
            return {}  # BUG
        return sorted(copies, key=lambda c: c[0])[subtask][1] if copies else None
    with _rule(rule):
        yield


@variant("broadcast-state-restored-from-one-subtask", "streamproof", PROPERTY,
         "Every new subtask restores old subtask 0's copy of the broadcast state (Flink: subtask i reads old "
         "subtask i % old parallelism): invisible while every copy is equal, wrong once copies diverged.")
@contextmanager
def restored_from_one_subtask():
    def rule(copies, subtask):
        return sorted(copies, key=lambda c: c[0])[0][1] if copies else None  # BUG
    with _rule(rule):
        yield

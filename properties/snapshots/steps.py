"""The ``snapshots`` scenario family: a keyed job's timers under copy-on-write snapshots.

A job is ``parallelism`` subtasks splitting the key groups of ``max_parallelism`` (Flink's
operator ranges). ``register`` / ``delete`` go to the subtask owning the current key (the keyed
exchange), advances go to every subtask. Snapshots are checkpoints: ``start_snapshot`` runs the
synchronous part on every subtask, ``snapshot_step`` advances each asynchronous part by key
groups, ``finish_snapshot`` completes them (one file per subtask). ``restore`` replaces the job by
``parallelism`` new subtasks restored from a finished snapshot's files (rescaling N -> M) and
abandons the snapshots still running; ``corrupt`` flips bits of one file first, anywhere;
``corrupt_section`` flips bits of one key group's section payload and recomputes the file CRC of
the end record, so only that section's own CRC32 can catch it.

Steps: ``new_job{max_parallelism, parallelism}``, ``set_key{key}``,
``register{domain, namespace, ts, action?, service?}``, ``delete{domain, namespace, ts, service?}``,
``advance_watermark{to}``, ``advance_processing_time{to}``, ``start_snapshot{id, format?}``,
``snapshot_step{id, steps?}``, ``finish_snapshot{id}``, ``cancel_snapshot{id}``,
``corrupt{id, subtask, offset, xor}``, ``corrupt_section{id, subtask, key_group, offset, xor}``,
``restore{id, parallelism}``, ``count``.
"""

from __future__ import annotations

from typing import ClassVar

from streamproof.impl.state.key_groups import compute_key_group_range_for_operator_index
from streamproof.properties.scenario import (
    INT32_MAX, INT64_MAX, STR, IntKind, Loc, Scenario, ScenarioError, Step, UPPER_BOUND_MAX_PARALLELISM, arg, register_family, step, step_error,
)
from streamproof.properties.timers.steps import (
    MAX_PARALLELISM, AdvanceProcessingTime, AdvanceWatermark, Count, Delete, Register, SetKey,
)

PARALLELISM = IntKind(1, UPPER_BOUND_MAX_PARALLELISM)


@step
class NewJob(Step):
    """A job of ``parallelism`` subtasks over the key groups of ``max_parallelism``."""

    op: ClassVar[str] = "new_job"
    max_parallelism: int = arg(MAX_PARALLELISM)
    parallelism: int = arg(PARALLELISM)

    def check(self, loc: Loc) -> None:
        if self.parallelism > self.max_parallelism:
            what = f"a parallelism <= max_parallelism ({self.max_parallelism})"
            raise loc.expected("parallelism", what, self.parallelism, "semantic")


@step
class StartSnapshot(Step):
    """The synchronous part of a snapshot on every subtask (format 2 unless 1 is asked for)."""

    op: ClassVar[str] = "start_snapshot"
    id: str = arg(STR)
    format: int | None = arg(IntKind(1, 2), optional=True)


@step
class SnapshotStep(Step):
    """Each subtask's asynchronous part writes its next ``steps`` key groups (default 1)."""

    op: ClassVar[str] = "snapshot_step"
    id: str = arg(STR)
    steps: int | None = arg(IntKind(1, INT32_MAX), optional=True)


@step
class FinishSnapshot(Step):
    """Each subtask's asynchronous part writes what is left and releases its version."""

    op: ClassVar[str] = "finish_snapshot"
    id: str = arg(STR)


@step
class CancelSnapshot(Step):
    op: ClassVar[str] = "cancel_snapshot"
    id: str = arg(STR)


@step
class Corrupt(Step):
    """XORs byte ``offset`` (modulo the file's length) of subtask ``subtask``'s file with ``xor``."""

    op: ClassVar[str] = "corrupt"
    id: str = arg(STR)
    subtask: int = arg(IntKind(0, UPPER_BOUND_MAX_PARALLELISM - 1))
    offset: int = arg(IntKind(0, INT64_MAX))
    xor: int = arg(IntKind(1, 255))


@step
class CorruptSection(Step):
    """XORs byte ``offset`` (modulo the payload's length) of the payload of key group
    ``key_group``'s section in subtask ``subtask``'s file with ``xor``, then recomputes the file
    CRC of the end record: only the section's own CRC32 can catch it. A file with no section for
    the key group (it held no timer of it) is left as it is, and the snapshot stays valid."""

    op: ClassVar[str] = "corrupt_section"
    id: str = arg(STR)
    subtask: int = arg(IntKind(0, UPPER_BOUND_MAX_PARALLELISM - 1))
    key_group: int = arg(IntKind(0, UPPER_BOUND_MAX_PARALLELISM - 1))
    offset: int = arg(IntKind(0, INT64_MAX))
    xor: int = arg(IntKind(1, 255))


@step
class RestoreJob(Step):
    """A new job of ``parallelism`` subtasks restored from snapshot ``id`` (every file)."""

    op: ClassVar[str] = "restore"
    id: str = arg(STR)
    parallelism: int = arg(PARALLELISM)


def validate_snapshots(scenario: Scenario) -> None:
    """``new_job`` first; a key before register/delete; snapshot ids used in their life cycle."""
    if not scenario.steps:
        raise ScenarioError("field 'steps': expected a first step new_job, got []", None, "steps", "semantic")
    max_parallelism = current = 0
    taken = {}  # snapshot id -> (max parallelism, parallelism) of the job that took it
    running: set[str] = set()
    finished: set[str] = set()
    have_key = False
    for i, s in enumerate(scenario.steps):
        if i == 0 and not isinstance(s, NewJob):
            raise step_error(0, s, "op", "new_job as the first step", s.op)
        if isinstance(s, NewJob):
            max_parallelism, current = s.max_parallelism, s.parallelism
            running.clear()
        elif isinstance(s, SetKey):
            have_key = True
        elif isinstance(s, (Register, Delete)) and not have_key:
            raise step_error(i, s, "op", "set_key before the first register or delete", s.op)
        elif isinstance(s, StartSnapshot):
            if s.id in taken:
                raise step_error(i, s, "id", "a new snapshot id", s.id)
            taken[s.id] = (max_parallelism, current)
            running.add(s.id)
        elif isinstance(s, (SnapshotStep, FinishSnapshot, CancelSnapshot)):
            if s.id not in running:
                raise step_error(i, s, "id", f"a running snapshot ({', '.join(sorted(running))})", s.id)
            if isinstance(s, FinishSnapshot):
                finished.add(s.id)
            if not isinstance(s, SnapshotStep):
                running.discard(s.id)
        elif isinstance(s, (Corrupt, CorruptSection, RestoreJob)):
            if s.id not in finished:
                raise step_error(i, s, "id", f"a finished snapshot ({', '.join(sorted(finished))})", s.id)
            if isinstance(s, (Corrupt, CorruptSection)) and s.subtask >= taken[s.id][1]:
                raise step_error(i, s, "subtask", f"a subtask below {taken[s.id][1]}", s.subtask)
            if isinstance(s, CorruptSection):
                owned = compute_key_group_range_for_operator_index(*taken[s.id], s.subtask)
                if not owned.contains(s.key_group):
                    raise step_error(i, s, "key_group", f"a key group of subtask {s.subtask}'s range "
                                                        f"[{owned.start_key_group}, {owned.end_key_group}]",
                                     s.key_group)
            if isinstance(s, RestoreJob):
                max_parallelism = taken[s.id][0]
                if s.parallelism > max_parallelism:
                    raise step_error(i, s, "parallelism", f"at most the max parallelism {max_parallelism}",
                                     s.parallelism)
                current = s.parallelism
                running.clear()  # a restore abandons the snapshots still running


SNAPSHOT_STEPS = [
    NewJob, SetKey, Register, Delete, AdvanceWatermark, AdvanceProcessingTime, StartSnapshot, SnapshotStep,
    FinishSnapshot, CancelSnapshot, Corrupt, CorruptSection, RestoreJob, Count,
]
register_family("snapshots", SNAPSHOT_STEPS, validate_snapshots)

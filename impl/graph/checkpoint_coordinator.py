"""The checkpoint coordinator (Flink's ``CheckpointCoordinator`` in ``org.apache.flink.runtime.checkpoint``):
triggers checkpoints at an interval, collects every task's acknowledgement, completes a checkpoint
when all tasks have acknowledged it, and keeps the completed ones as ``CompletedCheckpointStore``
does (the latest retained_checkpoints); a failover aborts the pending one."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from streamproof.impl.tasks.stream_elements import (
    CheckpointBarrier,
)
from streamproof.impl.tasks.stream_task import OperatorTask
from streamproof.impl.tasks.task_state import TaskSnapshot


@dataclass
class CompletedCheckpoint:
    checkpoint_id: int
    source_offsets: list[int]
    task_snapshots: list[TaskSnapshot]
    parallelism: int | tuple  # the job's layout: its parallelism (a graph: every chain's)
    sources_ended: list[bool] | None = None  # per source: it had sent EndOfData when the checkpoint was triggered


class CheckpointCoordinator:
    """Triggers checkpoints (one at a time), collects acknowledgements, completes and notifies."""

    def __init__(self, job, interval: int, next_id: int = 1):
        self.job, self.interval = job, interval
        self.next_id = next_id
        self.next_trigger = interval
        self.pending: dict[int, dict] = {}
        # the retained completed checkpoints, oldest first (Flink's CompletedCheckpointStore): a
        # restore reads the latest; older ones are subsumed beyond ``retained_checkpoints``
        self.completed: list[CompletedCheckpoint] = []
        self.completed_count = 0  # every checkpoint that completed, subsumed ones included
        self.channel_state_records = 0  # in-flight records every completed checkpoint carried
        self.aborted = 0
        self.stop_savepoint: int | None = None  # no-drain: the savepoint that stops the job

    def latest(self) -> CompletedCheckpoint | None:
        return self.completed[-1] if self.completed else None

    def maybe_trigger(self, now: int) -> bool:
        if self.stop_savepoint is not None:
            return False
        if not self.job.spec.config.drain and all(s.exhausted for s in self.job.sources):
            if self.pending:
                return False
            self.stop_savepoint = self.trigger(now, savepoint=True)  # stop-with-savepoint --no-drain
            return True
        if self.pending or (now < self.next_trigger and not all(t.input_ended for t in self.job.tasks)):
            return False
        if all(t.state == t.TERMINATED for t in self.job.tasks):
            return False
        self.trigger(now)
        return True

    def trigger(self, now: int, savepoint: bool = False) -> int:
        checkpoint_id = self.next_id
        self.next_id += 1
        self.next_trigger = now + self.interval
        self.pending[checkpoint_id] = {
            "offsets": [s.offset for s in self.job.sources],
            "ended": [s.ended for s in self.job.sources],
            "acks": {},
            "expected": {t.subtask_index for t in self.job.tasks if t.state != t.TERMINATED},
        }
        for source in self.job.sources:
            if not source.ended:
                self.job.broadcast(source.index, CheckpointBarrier(checkpoint_id, savepoint))
        for task in self.job.tasks:
            if task.input_ended and task.state != task.TERMINATED:
                task.trigger_checkpoint_after_input_ended(checkpoint_id)
        self.job.events.append(("trigger", checkpoint_id, now))
        return checkpoint_id

    def acknowledge(self, attempt: int, checkpoint_id: int, snapshot: TaskSnapshot) -> None:
        pending = self.pending.get(checkpoint_id)
        if pending is None or attempt != self.job.attempt:
            return  # a late acknowledgement of an aborted checkpoint or an old attempt
        pending["acks"][snapshot.subtask_index] = snapshot
        if set(pending["acks"]) >= pending["expected"]:
            del self.pending[checkpoint_id]
            done = CompletedCheckpoint(checkpoint_id, pending["offsets"],
                                       [pending["acks"][i] for i in sorted(pending["acks"])], self.job.layout(),
                                       pending["ended"])
            if self.latest() is not None:
                done = self._carry_terminated(done)
            self._store(done)
            self.job.events.append(("complete", checkpoint_id))
            for task in self.job.tasks:
                if task.state not in (task.TERMINATED, task.FAILED):
                    task.notify_checkpoint_complete(checkpoint_id, terminate=checkpoint_id == self.stop_savepoint)

    def _store(self, done: CompletedCheckpoint) -> None:
        """Adds ``done`` and subsumes the checkpoints beyond the retained number (issue 30: keeping
        every one made memory grow with the square of the input)."""
        self.completed.append(done)
        self.completed_count += 1
        self.channel_state_records += sum(len(s.channel_state) for s in done.task_snapshots)
        retained = self.job.spec.retained_checkpoints
        if retained is not None and len(self.completed) > retained:
            del self.completed[:-retained]

    def _carry_terminated(self, done: CompletedCheckpoint) -> CompletedCheckpoint:
        """A terminated task of this attempt acknowledges nothing more: its last snapshot stays
        valid. (Only this attempt's terminated tasks: a snapshot of another parallelism's
        subtask carried along would restore its key groups twice.)"""
        have = {s.subtask_index for s in done.task_snapshots}
        terminated = {t.subtask_index for t in self.job.tasks if t.state == t.TERMINATED}
        latest = self.latest()
        if latest.parallelism != done.parallelism:
            return done
        carried = [s for s in latest.task_snapshots if s.subtask_index not in have and s.subtask_index in terminated]
        snapshots = sorted(done.task_snapshots + carried, key=lambda s: s.subtask_index)
        return dataclasses.replace(done, task_snapshots=snapshots)

    def task_finished(self, task: OperatorTask) -> None:
        """FLIP-147: a task whose input ended acknowledges the checkpoints still pending."""
        for checkpoint_id, pending in self.pending.items():
            if task.subtask_index not in pending["acks"]:
                task.trigger_checkpoint_after_input_ended(checkpoint_id)

    def abort_pending(self) -> None:
        self.aborted += len(self.pending)
        bookkeeping = getattr(self.job, "bookkeeping", None)
        if bookkeeping is not None and any(p["acks"] for p in self.pending.values()):
            bookkeeping.counts["checkpoint aborted after a task's snapshot"] += 1
        self.pending.clear()


class SavepointFailedError(RuntimeError):
    """A savepoint Flink would decline (CheckpointFailureReason)."""


class GraphCheckpointCoordinator(CheckpointCoordinator):
    """FLIP-331: no checkpoint while a blocking-output chain runs or its result is still being
    read (Flink declines with BLOCKING_OUTPUT_EXIST); every trigger is logged with that state."""

    def maybe_trigger(self, now: int) -> bool:
        if self.job.blocking_phase() and not self.job.spec.config.drain and self.stop_savepoint is None \
                and all(s.exhausted or not s.deployed for s in self.job.sources):
            raise SavepointFailedError("stop-with-savepoint failed: BLOCKING_OUTPUT_EXIST (a blocking-output "
                                       "vertex has not finished)")
        if self.job.blocking_phase():
            if not self.pending and now >= self.next_trigger:
                self.job.declined.append(now)
                self.next_trigger = now + self.interval
            return False
        return super().maybe_trigger(now)

    def trigger(self, now: int, savepoint: bool = False) -> int:
        self.job.trigger_log.append((self.job.attempt, self.next_id, now, self.job.blocking_phase()))
        return super().trigger(now, savepoint)

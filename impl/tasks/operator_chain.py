"""A task running an operator chain (Flink's ``OperatorChain`` of ``StreamOperatorWrapper``s).

The task's mailbox, input channels, watermark valve and barrier handling are those of
:class:`~streamproof.impl.tasks.stream_task.OperatorTask`; what differs is what an input element reaches:
the chain's head, whose output calls the next operator directly (Flink's ``ChainingOutput``) or
goes to other tasks (a network output). Each chained operator has its own mailbox executor of
priority = its index in the chain, its own timer services and its own watermark processor.
Barriers are forwarded downstream after the snapshot; an unaligned barrier is processed as mail
(as Flink's ``CheckpointedInputGate`` processes priority events), overtaking the input. End of input runs head to tail, as
``StreamOperatorWrapper.finish``: end input, flush processing-time timers (FLIP-269), finish,
drain the operator's mail; then EndOfData leaves on every network output.
"""

from __future__ import annotations

from typing import Any, Callable

from streamproof.impl.operators.keyed_process_operator import (
    StreamRecord,
)
from streamproof.impl.tasks.chained_operators import ChainedOperator, KeyedOperator
from streamproof.impl.tasks.stream_elements import CheckpointBarrier, EndOfData
from streamproof.impl.tasks.stream_task import OperatorTask, pending_timers
from streamproof.impl.tasks.task_state import TaskConfig, TaskSnapshot, consumed


class ChainTask(OperatorTask):
    """One subtask of a chain: its operators in chain order, fed by the head."""

    def __init__(self, name: str, task_id: int, vertex_subtask: int, attempt: int, key_group_range,
                 channels: list, processing_time_service, config: TaskConfig,
                 acknowledge: Callable[[int, TaskSnapshot], None]):
        self._init_task(name, task_id, attempt, key_group_range, len(channels), processing_time_service,
                        config, acknowledge)
        self.vertex_subtask = vertex_subtask
        self.vertex_parallelism = 1  # set by the job
        self.channel_ids = list(channels)  # (upstream operator, upstream subtask) per input channel
        self.operators: list[ChainedOperator] = []
        self.network_outputs: list[Callable[[Any], None]] = []
        self.output_blocked: Callable[[], bool] = lambda: False  # set by the job (back-pressure)
        self.steps = 0
        self.stranded = 0  # metric: elements that reached this task after its EndOfData
        self.deployed = True  # FLIP-331: a task behind a blocking edge waits for its producer
        self.started_at: int | None = None
        # a blocking-output chain ends without waiting for a final checkpoint (none runs while it
        # runs; its result is the blocking partition), unless an operator has uncommitted output
        # or a checkpoint waits for it (set by the job)
        self.terminate_on_finish = False
        self.keeps_history = False  # set by the job: record per key group what the keyed head consumed
        # FLIP-147 (StreamTask.finalCheckpointMinId): the first checkpoint snapshotted after the
        # input ended; a finished task ends only once one at least as new completes (an earlier
        # one, e.g. unaligned and snapshotted at its first barrier, lacks what was read after it)
        self.final_checkpoint: int | None = None

    @property
    def history_max_parallelism(self) -> int | None:
        head = self.operators[0] if self.operators else None
        if not self.keeps_history or not isinstance(head, KeyedOperator):
            return None
        return head.operator.key_context.max_parallelism

    @property
    def keyed(self) -> list["KeyedOperator"]:
        return [op for op in self.operators if isinstance(op, KeyedOperator)]

    @property
    def head(self) -> ChainedOperator:
        return self.operators[0]

    def record_lineage(self) -> list[int] | None:
        """The channels of the records this task's state and output consumed, in order (None after
        a rescale merged tasks)."""
        return None if self.inherited_records is None else self.inherited_records + self.record_picks

    def _next_channel(self) -> int | None:
        """Replaying a record lineage: barriers at a channel's head first, then the channel the
        lineage names next (its watermarks and other events before the record come with it), once
        it has data; past the lineage, round robin."""
        if self.forced_records is None:
            return super()._next_channel()
        for i, queue in enumerate(self.inputs):
            if queue and isinstance(queue[0], CheckpointBarrier) and i not in self.blocked:
                return i
        while self.forced_records:
            want = self.forced_records[0]
            if self.inputs[want]:
                return want if want not in self.blocked else None
            if not self.channels_ended[want]:
                return None  # wait for the record the lineage names next
            self.forced_records.popleft()
        self.forced_records = None
        return super()._next_channel()

    @property
    def output_log(self) -> list:  # the tail's output (what the one-stage task called its output)
        return self.operators[-1].log

    # -- running -----------------------------------------------------------------------------
    def is_runnable(self) -> bool:
        # a running task's OperatorTask.is_runnable and _input_available inlined: the scheduler
        # asks every task at every step (issue 30); the same answer
        if not self.deployed:
            return False
        state = self.state
        if state == self.RUNNING:
            mailbox = self.mailbox
            if mailbox._batch or mailbox._queue:  # mailbox.has_mail()
                return True
            inputs, blocked = self.inputs, self.blocked
            available = any(inputs) if not blocked else any(q and i not in blocked for i, q in enumerate(inputs))
            return available and not self.output_blocked()
        if state in (self.TERMINATED, self.FAILED):
            return False
        return self.mailbox.has_mail() or self._input_available()

    def run_step(self) -> bool:
        if self.started_at is None:  # metric: when it first ran (the processing-time clock is the step)
            self.started_at = self.processing_time_service.get_current_processing_time()
        ran = super().run_step()
        self.steps += 1
        for op in self.operators:
            op.after_step()
        return ran

    def receive(self, channel: int, element: Any) -> None:
        if self.channels_ended[channel] and self.state in (self.FINISHED, self.TERMINATED):
            self.stranded += 1  # after EndOfData: nothing will ever read it
        super().receive(channel, element)

    def _input_available(self) -> bool:
        # input first: back-pressure (a scan of the channels written to) only matters when there is some
        return super()._input_available() and not (self.state == self.RUNNING and self.output_blocked())

    def firing_interrupted(self) -> bool:
        for op in self.operators:
            if op.interrupted:
                return True
        return False

    def _process_record(self, record: StreamRecord) -> None:
        self.head.process_element(record)

    def _process_watermark(self, timestamp: int) -> None:
        self.head.process_watermark(timestamp)

    def _note_end_of_time(self, watermark: int) -> None:
        pass

    def timers_fired_before_end_of_input(self) -> int:
        return sum(op.operator.timers_fired if op.timers_before_end is None else op.timers_before_end
                   for op in self.keyed)

    # -- life cycle ------------------------------------------------------------------------------
    def restore_operators(self, snapshots: list[TaskSnapshot]) -> None:
        """Each operator from its own state in the chain's old snapshots: keyed state from those
        whose key groups overlap this task's, other state from old subtask modulo the parallelism."""
        for op in self.operators:
            if isinstance(op, KeyedOperator):
                op.operator.initialize_state([
                    snap.sink[op.name] for snap in snapshots if op.name in snap.sink
                    and snap.key_group_range.get_intersection(self.key_group_range).get_number_of_key_groups()])
            else:
                op.restore([snap.sink[op.name] for snap in snapshots if snap.sink.get(op.name) is not None
                            and snap.vertex_subtask % self.vertex_parallelism == self.vertex_subtask])
            store = getattr(op, "broadcast_state", None)
            if store is not None:  # operator state in BROADCAST mode (broadcast_copy_for)
                chosen = broadcast_copy_for([(snap.vertex_subtask, snap.broadcast_state[op.name]) for snap in snapshots
                                             if op.name in snap.broadcast_state], self.vertex_subtask)
                if chosen is not None:
                    store.restore(chosen)
        self._restore_history(snapshots)
        self.restored_timers = -1  # counted once open() brought the timer services back

    def open(self) -> None:
        for op in reversed(self.operators):  # tail first, as Flink opens a chain
            op.open()
        keyed = self.keyed
        self._resume_at_restored_watermark([(op.watermark_processor, op.operator) for op in keyed])
        if self.restored_timers:
            self.restored_timers = sum(pending_timers(op.operator) for op in keyed)

    def _end_input(self) -> None:
        """Head to tail: each operator ends its input and finishes (its output reaching the next
        one), then EndOfData leaves on every network output and the task waits for its final
        checkpoint (FLIP-147)."""
        for op in self.operators:
            if self.config.drain:
                op.end_input_and_finish()
            elif isinstance(op, KeyedOperator):
                op.operator.finish()
            op.emit_end()
        for output in self.network_outputs:
            output(EndOfData())
        self.state = self.FINISHED
        if self.on_finished is not None:
            self.on_finished(self)

    def terminate(self) -> None:
        """Ends the task without a final checkpoint (a finished blocking-output chain)."""
        for op in reversed(self.operators):
            op.close()
        self.state = self.TERMINATED

    # -- checkpoints -------------------------------------------------------------------------
    def _snapshot(self, checkpoint_id: int) -> TaskSnapshot:
        if self.state in (self.FINISHED, self.TERMINATED) and self.final_checkpoint is None:
            self.final_checkpoint = checkpoint_id
        if self.state not in (self.FINISHED, self.TERMINATED):
            for op in self.operators:  # a finished operator is not asked again (FLIP-147)
                op.prepare_snapshot_pre_barrier(checkpoint_id)
        if any(pending_timers(op.operator) for op in self.keyed):
            self.snapshots_with_timers += 1
        states = {op.name: op.snapshot_state(checkpoint_id) for op in self.operators}
        return TaskSnapshot(self.subtask_index, self.key_group_range, None, states,
                            processing_time=self.processing_time_service.get_current_processing_time(),
                            lineage=consumed(self.inherited_records, self.record_picks), vertex=self.name, vertex_subtask=self.vertex_subtask,
                            channels=self.channel_ids, watermark=self.valve.last_output,
                            history={kg: (entries, len(entries)) for kg, entries in self.history.items()},
                            element_lineage=consumed(self.inherited, self.picks),
                            broadcast_state={op.name: op.broadcast_state.snapshot() for op in self.operators
                                             if getattr(op, "broadcast_state", None) is not None})

    def _forward_barrier(self, checkpoint_id: int, unaligned: bool) -> None:
        for output in self.network_outputs:
            output(CheckpointBarrier(checkpoint_id))

    def notify_checkpoint_complete(self, checkpoint_id: int, terminate: bool = False) -> None:
        def notify() -> None:
            for op in self.operators:
                op.notify_checkpoint_complete(checkpoint_id)
            final = self.final_checkpoint is not None and checkpoint_id >= self.final_checkpoint
            if terminate or (self.state == self.FINISHED and final and not any(op.pending() for op in self.operators)):
                for op in reversed(self.operators):  # tail to head, as Flink closes a chain
                    op.close()
                self.state = self.TERMINATED
        self.executor.execute(notify, f"notifyCheckpointComplete {checkpoint_id}")

    def fail(self) -> None:
        self.state = self.FAILED
        for op in self.operators:
            op.abort()
        self.mailbox.quiesce()
        self.mailbox.close()


def broadcast_copy_for(copies: list[tuple[int, dict]], subtask: int) -> dict | None:
    """The copy of broadcast state new ``subtask`` restores from ``copies`` ((old subtask, its copy)
    of every old subtask): Flink's ``RoundRobinOperatorStateRepartitioner`` in BROADCAST mode gives new
    subtask i old subtask ``i % old parallelism``'s copy (its own at the same or a lower
    parallelism, round robin beyond the old parallelism); None without copies."""
    if not copies:
        return None
    ordered = sorted(copies, key=lambda c: c[0])
    return ordered[subtask % len(ordered)][1]

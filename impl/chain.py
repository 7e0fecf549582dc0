"""A task running an operator chain (Flink's ``OperatorChain`` of ``StreamOperatorWrapper``s).

The task's mailbox, input channels, watermark valve and barrier handling are those of
:class:`~streamproof.impl.task.OperatorTask`; what differs is what an input element reaches:
the chain's head, whose output calls the next operator directly (Flink's ``ChainingOutput``) or
goes to other tasks (a network output). Each chained operator has its own mailbox executor of
priority = its index in the chain, its own timer services and its own watermark processor.
Barriers are forwarded downstream after the snapshot; an unaligned barrier is processed as mail
(as Flink's ``CheckpointedInputGate`` processes priority events), overtaking the input. End of input runs head to tail, as
``StreamOperatorWrapper.finish``: end input, flush processing-time timers (FLIP-269), finish,
drain the operator's mail; then EndOfData leaves on every network output.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable

from streamproof.impl.graph import SecondInput
from streamproof.impl.operators import KeyedProcessOperator, StreamRecord
from streamproof.impl.sink import ExternalSystem, TwoPhaseCommitSink
from streamproof.impl.task import (
    CheckpointBarrier, EndOfData, FlushRecord, MailboxWatermarkProcessor, OperatorTask, TaskConfig, TaskSnapshot,
    consumed, pending_timers, flush_processing_time_timers,
)
from streamproof.impl.timers import MAX_WATERMARK, MIN_WATERMARK

WATERMARK_MODES = ("corrected", "flink-2.3")
LAG_STEPS = 3  # job.watermark-liveness: mailbox steps an output watermark may trail what timers reached


class KeylessRecordError(RuntimeError):
    """A record without key reached a keyed operator or a keyed edge."""


@dataclass(frozen=True)
class Committable:
    """What a sink writer hands its committer: records to commit under one id (idempotent)."""

    committable_id: tuple
    records: tuple


class ChainedOperator:
    """One operator of a chain: its outputs, its output log, and its part of the life cycle."""

    kind = "operator"
    interrupted = False  # an interrupted timer firing waits for its continuation

    def __init__(self, name: str, chain_index: int, task: "ChainTask"):
        self.name, self.chain_index, self.task = name, chain_index, task
        self.outputs: list[Callable[[Any], None]] = []  # each takes a StreamRecord, a watermark (int) or EndOfData
        self.log: list[tuple] = []  # ("record", value, ts, origin), ("watermark", ts), ("end_of_data",)
        self.last_watermark = MIN_WATERMARK

    # -- output --------------------------------------------------------------------------------
    def emit(self, key: Any, value: Any, timestamp: int, origin: str = "element") -> None:
        self.log.append(("record", value, timestamp, origin))
        record = StreamRecord(key, value, timestamp)
        for output in self.outputs:
            output(record)

    def emit_watermark(self, timestamp: int) -> None:
        self.log.append(("watermark", timestamp))
        self.last_watermark = max(self.last_watermark, timestamp)
        for output in self.outputs:
            output(timestamp)

    def emit_end(self) -> None:
        if self.outputs:
            self.log.append(("end_of_data",))

    # -- input and life cycle (stateless pass-through by default) ------------------------------
    def open(self) -> None:
        pass

    def process_element(self, record: StreamRecord) -> None:
        self.emit(record.key, record.value, record.timestamp)

    def process_watermark(self, timestamp: int) -> None:
        self.emit_watermark(timestamp)

    def end_input_and_finish(self) -> None:
        """``StreamOperatorWrapper.finish`` of this operator (drain): end input, finish."""

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        pass

    def snapshot_state(self, checkpoint_id: int) -> Any:
        return None

    def restore(self, states: list) -> None:
        pass

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        pass

    def pending(self) -> bool:
        """Whether a checkpoint must still complete for this operator's output to be committed."""
        return False

    def abort(self) -> None:
        pass

    def close(self) -> None:
        pass

    def after_step(self) -> None:
        pass


class StatelessOperator(ChainedOperator):
    """map / filter / flat_map: ``function(key, value)`` returns the ``(key, value)`` pairs to emit."""

    kind = "stateless"

    def __init__(self, name: str, chain_index: int, task: "ChainTask", function: Callable):
        super().__init__(name, chain_index, task)
        self.function = function

    def process_element(self, record: StreamRecord) -> None:
        for key, value in self.function(record.key, record.value):
            self.emit(key, value, record.timestamp)


class ProcessOperator(ChainedOperator):
    """A non-keyed process function (Flink's ``ProcessOperator``): ``function.process(value,
    timestamp, watermark, processing_time)`` returns ``(tag, value)`` pairs to emit (tag None:
    main output), ``function.open(subtask, parallelism)`` and ``function.close()`` if it has
    them. It knows the current watermark (the last one it received), not checkpointed: it starts
    at ``Long.MIN_VALUE`` in every attempt, as Flink's. No keyed state, no timers."""

    kind = "process"

    def __init__(self, name: str, chain_index: int, task: "ChainTask", function: Any):
        super().__init__(name, chain_index, task)
        self.function = function
        self.current_watermark = MIN_WATERMARK

    def open(self) -> None:
        if hasattr(self.function, "open"):
            self.function.open(self.task.vertex_subtask, self.task.vertex_parallelism)

    def process_element(self, record: StreamRecord) -> None:
        now = self.task.processing_time_service.get_current_processing_time()
        for tag, value in self.function.process(record.value, record.timestamp, self.current_watermark, now):
            if tag is not None:
                self.task.side_outputs += 1
                value = ("side-output", tag, value)
            self.emit(record.key, value, record.timestamp)

    def process_watermark(self, timestamp: int) -> None:
        self.current_watermark = max(self.current_watermark, timestamp)
        self.emit_watermark(timestamp)

    def close(self) -> None:
        if hasattr(self.function, "close"):
            self.function.close()


class BroadcastStateStore:
    """The broadcast state of one subtask of a broadcast-state operator: per descriptor name a map.
    Operator state, not keyed state: each subtask keeps, snapshots and restores its own copy
    (Flink's ``HeapBroadcastState`` in the ``DefaultOperatorStateBackend``, mode BROADCAST)."""

    def __init__(self) -> None:
        self.states: dict[str, dict] = {}

    def snapshot(self) -> dict:
        return copy.deepcopy(self.states)

    def restore(self, states: dict) -> None:
        self.states.clear()
        self.states.update(copy.deepcopy(states))


def broadcast_copy_for(copies: list[tuple[int, dict]], subtask: int) -> dict | None:
    """The copy of broadcast state new ``subtask`` restores from ``copies`` ((old subtask, its copy)
    of every old subtask): Flink's ``RoundRobinOperatorStateRepartitioner`` in BROADCAST mode gives new
    subtask i old subtask ``i % old parallelism``'s copy (its own at the same or a lower
    parallelism, round robin beyond the old parallelism); None without copies."""
    if not copies:
        return None
    ordered = sorted(copies, key=lambda c: c[0])
    return ordered[subtask % len(ordered)][1]


class BroadcastProcessOperator(ProcessOperator):
    """A non-keyed broadcast-state operator (Flink's ``CoBroadcastWithNonKeyedOperator``): a
    :class:`ProcessOperator` whose function gets the subtask's :class:`BroadcastStateStore`
    (``function.bind_broadcast_state(store)``) and tells the inputs apart (a broadcast-side record
    is a :class:`~streamproof.impl.graph.SecondInput`); the store is snapshotted and restored."""

    def __init__(self, name: str, chain_index: int, task: "ChainTask", function: Any):
        super().__init__(name, chain_index, task, function)
        self.broadcast_state = BroadcastStateStore()
        if hasattr(function, "bind_broadcast_state"):
            function.bind_broadcast_state(self.broadcast_state)


class KeyedOperator(ChainedOperator):
    """A keyed process function with its own timer services and watermark processor."""

    kind = "keyed"

    def __init__(self, name: str, chain_index: int, task: "ChainTask", function, max_parallelism: int,
                 parallelism: int, watermark_mode: str):
        super().__init__(name, chain_index, task)
        config = task.config
        self.operator = KeyedProcessOperator(
            function, max_parallelism, task.key_group_range, task.processing_time_service, self._emit_value,
            task.vertex_subtask, parallelism, config.firing_budget, emit_side=self._emit_side,
            max_seconds_per_callback=config.callback_seconds, task_name=f"{name}", attempt_number=task.attempt)
        self.executor = task.processor.get_mailbox_executor(chain_index)
        self.operator.runtime_context.mailbox_executor = self.executor
        corrected = watermark_mode == "corrected"
        self.watermark_processor = MailboxWatermarkProcessor(self.operator, self.executor, self.emit_watermark,
                                                             intermediate=corrected, only_increasing=corrected)
        self.interruptible = config.interruptible_timers and self.operator.use_interruptible_timers()
        self.lag = self.max_lag = 0  # mailbox steps the output watermark stood still behind the reached one
        self.emitted_before = MIN_WATERMARK
        self.input_ended_at: int | None = None  # position in the log when MAX_WATERMARK arrived
        self.dropped_after_horizon = 0
        self.flush: FlushRecord | None = None
        # FLIP-443 coverage: records processed between two parts of this operator's split firing,
        # and those of a key whose event-time timer was due and not fired yet
        self.split_records = self.split_due_key_records = self.split_timer_changes = 0
        self.timers_before_end: int | None = None  # metric: timers fired when MAX_WATERMARK arrived
        self.late_at: list[int] = []  # positions in the log where a record behind the watermark came in

    @property
    def interrupted(self) -> bool:
        return self.watermark_processor.progress_watermark_scheduled

    def _emit_value(self, value: Any, timestamp: int | None) -> None:
        domain = self.operator.context.time_domain
        origin = {"event": "timer", "processing": "processing-timer"}.get(domain, "element")
        self.emit(self.operator.key_context.current_key, value, MIN_WATERMARK if timestamp is None else timestamp,
                  origin)

    def _emit_side(self, tag: str, value: Any, timestamp: int | None) -> None:
        self.task.side_outputs += 1
        self._emit_value(("side-output", tag, value), timestamp)

    def open(self) -> None:
        self.operator.open()

    def process_element(self, record: StreamRecord) -> None:
        if record.key is None:
            raise KeylessRecordError(f"operator {self.name} got a record without key (emitted outside any keyed context, e.g. "
                           f"in end_input() or finish() of an upstream keyed operator): {record.value!r}")
        if record.timestamp <= self.watermark_processor.max_input_watermark:
            self.late_at.append(len(self.log))  # what it registers may be behind the watermark already
        if not self.interrupted:
            self.operator.process_element(record)
            return
        before = self._event_timers_of(record.key)
        self.split_records += 1
        if any(timer[0] <= self.watermark_processor.max_input_watermark for timer in before):
            self.split_due_key_records += 1  # a record of a key whose timer is due but not fired yet
        self.operator.process_element(record)
        if self._event_timers_of(record.key) != before:
            self.split_timer_changes += 1  # it registered or deleted an event-time timer

    def _event_timers_of(self, key: Any) -> set:
        """The event-time timers pending for ``key`` (every timer service of the operator)."""
        from streamproof.impl.keygroups import assign_to_key_group

        operator = self.operator
        key_group = assign_to_key_group(key, operator.key_context.max_parallelism)
        if not operator.key_group_range.contains(key_group):
            return set()
        return {timer for service in operator.time_service_manager.services.values()
                for timer in service.event_time_timers_queue.get_subset_for_key_group(key_group) if timer[1] == key}

    def process_watermark(self, timestamp: int) -> None:
        if timestamp == MAX_WATERMARK and self.input_ended_at is None:
            self.input_ended_at = len(self.log)  # every input ended (drain): what it emits from here is at the end
        if timestamp >= MAX_WATERMARK and self.timers_before_end is None:
            self.timers_before_end = self.operator.timers_fired
        if self.interruptible:
            self.watermark_processor.emit_watermark_inside_mailbox(timestamp)
        else:  # AbstractStreamOperator.processWatermark: advance, then emit (Flink does not dedupe)
            self.watermark_processor.max_input_watermark = max(self.watermark_processor.max_input_watermark, timestamp)
            fired_before = self.operator.timers_fired
            self.operator.time_service_manager.advance_watermark(timestamp)
            self.watermark_processor.count_fired(fired_before, timestamp)
            self.watermark_processor.last_emitted = max(self.watermark_processor.last_emitted, timestamp)
            self.emit_watermark(timestamp)

    def end_input_and_finish(self) -> None:
        task = self.task
        if self.timers_before_end is None:
            self.timers_before_end = self.operator.timers_fired
        if task.config.drain:
            self.operator.end_input()
            self.flush, dropped = flush_processing_time_timers(self.operator, self.log, task.config.firing_budget,
                                                               f"{self.name}[{task.vertex_subtask}]")
            self.dropped_after_horizon += dropped
        self.operator.finish()
        while self.executor.try_yield():  # the operator's own mail runs before EndOfData
            pass

    def snapshot_state(self, checkpoint_id: int):
        return self.operator.snapshot_state(self.task.config.snapshot_format)

    def close(self) -> None:
        self.operator.close()

    def after_step(self) -> None:
        """Liveness metric: for how many mailbox steps in a row the output watermark stood still
        behind the watermark the timers had reached."""
        if not self.interruptible:
            return
        emitted = self.watermark_processor.last_emitted
        stuck = self.watermark_processor.reached_watermark() > emitted and emitted == self.emitted_before
        self.emitted_before = emitted
        self.lag = self.lag + 1 if stuck else 0
        self.max_lag = max(self.max_lag, self.lag)


class KeyedBroadcastOperator(KeyedOperator):
    """A keyed broadcast-state operator (Flink's ``CoBroadcastWithKeyedOperator``): keyed state and
    timers for the keyed input; a broadcast-side record (a :class:`~streamproof.impl.graph.SecondInput`,
    without key) reaches the function without setting a key (the key context stays the last one
    set, as in Flink). The subtask's :class:`BroadcastStateStore` is ``runtime_context.broadcast_state``
    of the function's ``open``; it is snapshotted and restored with the task."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.broadcast_state = BroadcastStateStore()
        self.operator.runtime_context.broadcast_state = self.broadcast_state
        self._broadcast_side = False

    def process_element(self, record: StreamRecord) -> None:
        if type(record.value) is not SecondInput:
            super().process_element(record)
            return
        self._broadcast_side = True
        try:
            self.operator.process_broadcast_element(record)
        finally:
            self._broadcast_side = False

    def _emit_value(self, value: Any, timestamp: int | None) -> None:
        if not self._broadcast_side:
            super()._emit_value(value, timestamp)
            return
        self.emit(None, value, MIN_WATERMARK if timestamp is None else timestamp)  # no key: the broadcast side


class SinkOperator(ChainedOperator):
    """The two-phase-commit sink (transactions pre-committed by checkpoints, committed on completion)."""

    kind = "sink"

    def __init__(self, name: str, chain_index: int, task: "ChainTask", external: ExternalSystem):
        super().__init__(name, chain_index, task)
        self.sink = TwoPhaseCommitSink(name, task.vertex_subtask, external)

    def process_element(self, record: StreamRecord) -> None:
        self.sink.invoke(record.value)

    def process_watermark(self, timestamp: int) -> None:
        self.last_watermark = max(self.last_watermark, timestamp)

    def snapshot_state(self, checkpoint_id: int):
        return self.sink.snapshot_state(checkpoint_id)

    def restore(self, states: list) -> None:
        self.sink.initialize_state(states)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.sink.notify_checkpoint_complete(checkpoint_id)

    def pending(self) -> bool:
        return bool(self.sink.pending or self.sink.current)

    def abort(self) -> None:
        self.sink.abort()


class SinkWriter(ChainedOperator):
    """Flink's ``SinkWriterOperator``: records are buffered; before each barrier
    (``prepareSnapshotPreBarrier``) and at end of input the buffer leaves as one committable."""

    kind = "writer"

    def __init__(self, name: str, chain_index: int, task: "ChainTask"):
        super().__init__(name, chain_index, task)
        self.buffer: list = []
        self.sequence = 0

    def process_element(self, record: StreamRecord) -> None:
        self.buffer.append(record.value)

    def process_watermark(self, timestamp: int) -> None:
        self.emit_watermark(timestamp)

    def emit_committables(self) -> None:
        if self.buffer:
            self.sequence += 1
            committable_id = (self.name, self.task.vertex_subtask, self.task.attempt, self.sequence)
            self.emit(None, Committable(committable_id, tuple(self.buffer)), MIN_WATERMARK)
            self.buffer = []

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        self.emit_committables()

    def end_input_and_finish(self) -> None:
        self.emit_committables()  # the final committables travel before EndOfData

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        pass  # its committables left before the checkpoint's barrier; the committer commits them


class SinkCommitter(ChainedOperator):
    """Flink's ``CommitterOperator``: keeps committables in its state; commits those a completed
    checkpoint holds (idempotently by id, so a restore may commit them again)."""

    kind = "committer"

    def __init__(self, name: str, chain_index: int, task: "ChainTask", external: ExternalSystem):
        super().__init__(name, chain_index, task)
        self.external = external
        self.received: dict[tuple, tuple] = {}
        self.in_checkpoint: dict[int, list[tuple]] = {}

    def process_element(self, record: StreamRecord) -> None:
        committable = record.value
        if not isinstance(committable, Committable):
            raise TypeError(f"committer {self.name} got {committable!r}, not a committable")
        self.received[committable.committable_id] = committable.records

    def process_watermark(self, timestamp: int) -> None:
        self.last_watermark = max(self.last_watermark, timestamp)

    def snapshot_state(self, checkpoint_id: int):
        self.in_checkpoint[checkpoint_id] = list(self.received)
        return {"committables": dict(self.received)}

    def restore(self, states: list) -> None:
        for state in states:  # they belong to a completed checkpoint: commit them (again)
            for committable_id, records in sorted(state["committables"].items()):
                self.external.commit(committable_id, records)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        for c in sorted(c for c in self.in_checkpoint if c <= checkpoint_id):
            for committable_id in self.in_checkpoint.pop(c):
                if committable_id in self.received:
                    self.external.commit(committable_id, self.received.pop(committable_id))

    def pending(self) -> bool:
        return bool(self.received)

    def abort(self) -> None:
        self.received.clear()
        self.in_checkpoint.clear()


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
            if self.mailbox.has_mail():
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

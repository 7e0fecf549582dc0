"""The operators a chain wraps (Flink's ``StreamOperatorWrapper`` around each operator of an
``OperatorChain``): stateless and process operators, broadcast state, the keyed operator with its
mailbox watermark processor, and the sink operators (writer, committer, exactly-once sink)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable

from streamproof.impl.operators.keyed_process_operator import KeyedProcessOperator, StreamRecord
from streamproof.impl.operators.two_phase_commit_sink import ExternalSystem, TwoPhaseCommitSink
from streamproof.impl.tasks.stream_elements import FlushRecord, SecondInput
from streamproof.impl.tasks.stream_task import OperatorTask, flush_processing_time_timers
from streamproof.impl.tasks.watermarks import MailboxWatermarkProcessor
from streamproof.impl.timers.processing_time_service import MAX_WATERMARK, MIN_WATERMARK

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

    def __init__(self, name: str, chain_index: int, task: "OperatorTask"):
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

    def __init__(self, name: str, chain_index: int, task: "OperatorTask", function: Callable):
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

    def __init__(self, name: str, chain_index: int, task: "OperatorTask", function: Any):
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


class BroadcastProcessOperator(ProcessOperator):
    """A non-keyed broadcast-state operator (Flink's ``CoBroadcastWithNonKeyedOperator``): a
    :class:`ProcessOperator` whose function gets the subtask's :class:`BroadcastStateStore`
    (``function.bind_broadcast_state(store)``) and tells the inputs apart (a broadcast-side record
    is a :class:`~streamproof.impl.tasks.stream_elements.SecondInput`); the store is snapshotted and restored."""

    def __init__(self, name: str, chain_index: int, task: "OperatorTask", function: Any):
        super().__init__(name, chain_index, task, function)
        self.broadcast_state = BroadcastStateStore()
        if hasattr(function, "bind_broadcast_state"):
            function.bind_broadcast_state(self.broadcast_state)


class KeyedOperator(ChainedOperator):
    """A keyed process function with its own timer services and watermark processor."""

    kind = "keyed"

    def __init__(self, name: str, chain_index: int, task: "OperatorTask", function, max_parallelism: int,
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
        from streamproof.impl.state.key_groups import assign_to_key_group

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
    timers for the keyed input; a broadcast-side record (a :class:`~streamproof.impl.tasks.stream_elements.SecondInput`,
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

    def __init__(self, name: str, chain_index: int, task: "OperatorTask", external: ExternalSystem):
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

    def __init__(self, name: str, chain_index: int, task: "OperatorTask"):
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

    def __init__(self, name: str, chain_index: int, task: "OperatorTask", external: ExternalSystem):
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

"""A stream task: one keyed operator with a chained two-phase-commit sink, driven by a mailbox.

As in Flink's ``StreamTask``: input processing is the mailbox's default action; mail (timers,
checkpoint notifications, watermark continuations) runs between input elements. Watermarks go
through a :class:`StatusWatermarkValve` (minimum over input channels) and a
:class:`MailboxWatermarkProcessor` (FLIP-443: an interruptible advance continues in a deferrable
mail). Barriers are aligned or unaligned. End of input with drain fires every event-time timer
(``MAX_WATERMARK``), lets a pending continuation finish before EndOfData and ``finish()``
(FLINK-39481), then waits for a final checkpoint to commit (FLIP-147).

Size: one class, Flink's ``StreamTask`` (:class:`OperatorTask`), kept whole so it reads beside Flink's source.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable

from streamproof.impl.operators.keyed_process_operator import (
    KeyedProcessFunction, KeyedProcessOperator, StreamRecord,
)
from streamproof.impl.operators.two_phase_commit_sink import ExternalSystem, TwoPhaseCommitSink
from streamproof.impl.state.key_groups import KeyGroupRange, assign_to_key_group
from streamproof.impl.tasks.mailbox import MailboxProcessor, MailOptions, TaskMailbox
from streamproof.impl.tasks.stream_elements import (
    CheckpointBarrier, EndOfData, FlushRecord, ProcessingTimeAdvance, Watermark,
)
from streamproof.impl.tasks.task_state import TaskConfig, TaskSnapshot, consumed
from streamproof.impl.tasks.watermarks import MailboxWatermarkProcessor, StatusWatermarkValve
from streamproof.impl.timers.processing_time_service import (
    MAX_WATERMARK, MIN_WATERMARK, TimerFiringBudgetExceeded,
)


def flush_processing_time_timers(operator: KeyedProcessOperator, log: list, budget: int,
                                 name: str) -> tuple[FlushRecord, int]:
    """FLIP-269 at end of input: every processing-time timer of ``operator`` handled by its
    termination action; returns where the flush sits in ``log`` and the timers dropped after the
    horizon."""
    manager = operator.time_service_manager
    start, clock = len(log), manager.processing_time_service.get_current_processing_time()
    try:
        results = manager.flush_processing_time_timers(budget)
        results.append(("operator", operator.processing_time_service.flush(budget)))
    except TimerFiringBudgetExceeded as error:
        raise TimerFiringBudgetExceeded(f"operator {name}: end-of-input flush of processing-time timers exceeded "
                                        f"its budget: {error}") from error
    flush = FlushRecord(start, len(log), clock, {service: r.horizon for service, r in results})
    return flush, sum(result.dropped_after_horizon for _, result in results)


class OperatorTask:
    """One parallel subtask of the keyed operator (and its chained sink)."""

    barrier_mail_options = MailOptions.DEFAULT  # how an unaligned barrier's mail is put

    RUNNING, ENDING, FINISHED, TERMINATED, FAILED = "RUNNING", "ENDING", "FINISHED", "TERMINATED", "FAILED"

    def __init__(self, name: str, subtask_index: int, parallelism: int, attempt: int, max_parallelism: int,
                 key_group_range: KeyGroupRange, function: KeyedProcessFunction, channels: int,
                 processing_time_service, external: ExternalSystem, config: TaskConfig,
                 acknowledge: Callable[[int, "TaskSnapshot"], None]):
        self._init_task(name, subtask_index, attempt, key_group_range, channels, processing_time_service,
                        config, acknowledge)
        # The operator's own executor (priority 0, as the head of the chain in Flink): it never
        # sees deferrable mail, so an operator yielding inside a callback cannot run the
        # watermark continuation nested (FLINK-35528).
        self.operator_executor = self.processor.get_mailbox_executor(0)
        self.output_log: list[tuple] = []  # what left the operator: records, watermarks, EndOfData
        self.operator = KeyedProcessOperator(function, max_parallelism, key_group_range, processing_time_service,
                                             self._emit, subtask_index, parallelism, config.firing_budget,
                                             max_seconds_per_callback=config.callback_seconds,
                                             task_name=name, attempt_number=attempt, emit_side=self._emit_side)
        self.sink = TwoPhaseCommitSink(name, subtask_index, external)
        self.operator.runtime_context.mailbox_executor = self.operator_executor
        self.watermark_processor = MailboxWatermarkProcessor(self.operator, self.operator_executor, self._emit_watermark)
        self.interruptible = config.interruptible_timers and self.operator.use_interruptible_timers()

    def _init_task(self, name: str, subtask_index: int, attempt: int, key_group_range: KeyGroupRange | None,
                   channels: int, processing_time_service, config: TaskConfig,
                   acknowledge: Callable[[int, "TaskSnapshot"], None]) -> None:
        """The task's side of things whatever it runs: mailbox, input channels, valve, barriers."""
        self.name, self.subtask_index, self.attempt = name, subtask_index, attempt
        self.config = config
        self.acknowledge = acknowledge
        self.key_group_range = key_group_range
        self.mailbox = TaskMailbox()
        self.processor = MailboxProcessor(self._process_input, self.mailbox)
        self.executor = self.processor.get_main_mailbox_executor()
        self.inputs: list[deque] = [deque() for _ in range(channels)]
        self.queued_records = [0] * channels  # records (not other elements) waiting per channel
        self.blocked: set[int] = set()
        self.valve = StatusWatermarkValve(channels)
        self.channels_ended = [False] * channels
        self.processing_time_service = processing_time_service
        self.state = self.RUNNING
        self.pending_checkpoint: int | None = None
        self.barriers_seen: set[int] = set()
        self.recording: dict[int, list] = {}  # unaligned: channel -> in-flight elements captured
        self.recording_channels: set[int] = set()  # channels whose barrier has not arrived yet
        self.pending_snapshot: TaskSnapshot | None = None
        self.dequeued = [0] * channels  # elements taken from each channel so far
        self.barrier_positions: dict[int, int] = {}  # unaligned: where the pending barrier sat in a channel
        self.next_channel = 0
        self.aligning = True
        self.on_finished: Callable[["OperatorTask"], None] | None = None
        # a job with input-driven processing time sets this: the task's clock moves to the element's time
        self.advance_processing_time: Callable[[int], None] | None = None
        self.timers_before_end: int | None = None  # metric: timers fired when MAX_WATERMARK arrived
        # the lineage: the channels this task (and the attempts its state came from) consumed input
        # from, in order; ``forced``: a lineage to follow instead of round robin (reference runs)
        self.inherited: list[int] | None = []  # None: unknown (restored after a rescale)
        self.picks: list[int] = []
        # FLIP-147 (StreamTask.finalCheckpointMinId): the first checkpoint snapshotted after the
        # input ended; a finished task ends only once one at least as new completes
        self.final_checkpoint: int | None = None
        self.forced: deque | None = None
        # a chain task's lineage of records only (job graphs): the channels its records came from, in
        # order, after those of the snapshot it restored; ``forced_records`` replays one
        self.record_picks: list[int] = []
        self.inherited_records: list[int] | None = []
        self.forced_records: deque | None = None
        self.source_done: Callable[[int], bool] = lambda channel: False  # set by the job
        self.side_outputs = 0  # metric: side outputs emitted
        self.late_records = 0  # metric: records at or below the operator's current watermark
        # metrics of split firings (FLIP-443): records processed between two parts of a firing,
        # those of a key with a due timer not fired yet, those that registered or deleted a timer
        self.split_records = self.split_due_key_records = self.split_timer_changes = 0
        self.restored_timers = 0  # metric: timers this attempt restored from a checkpoint
        self.snapshots_with_timers = 0  # metric: snapshots taken while timers were pending
        self.restored_watermark = MIN_WATERMARK  # set only by the counterfactual JobSpec.restore_watermarks
        # per key group of this task, what it consumed in order (inherited from the snapshot that
        # owned the key group): ("r", key, value, ts) records, ("w", ts) watermarks it processed,
        # ("p", ts) processing-time advances; the failure-free run each key group's committed
        # output came from (certification's reference after a rescale)
        self.history: dict[int, list] = {}
        self.dropped_after_horizon = 0  # metric: timers registered during the end-of-input flush after its horizon
        self.flush: FlushRecord | None = None  # where the end-of-input flush sits in the output log

    @property
    def history_max_parallelism(self) -> int | None:
        """The max parallelism key groups of the history are counted with (None: no history)."""
        return self.operator.key_context.max_parallelism

    # -- life cycle -------------------------------------------------------------------------
    def restore(self, snapshots: list[TaskSnapshot], sink_states: list[dict]) -> None:
        """Initializes state from the snapshots of the previous attempts (any parallelism)."""
        self.operator.initialize_state([snap.operator for snap in snapshots])
        self.sink.initialize_state(sink_states)
        self._restore_history(snapshots)
        self.restored_timers = -1  # counted once open() brought the timer services back

    def _restore_history(self, snapshots: list[TaskSnapshot]) -> None:
        kgr = self.key_group_range
        for snap in snapshots:
            for key_group, (entries, length) in snap.history.items():
                if kgr.contains(key_group) and snap.key_group_range.contains(key_group):
                    self.history[key_group] = entries[:length]

    def open(self) -> None:
        self.operator.open()
        self._resume_at_restored_watermark([(self.watermark_processor, self.operator)])
        if self.restored_timers:
            self.restored_timers = pending_timers(self.operator)

    def _resume_at_restored_watermark(self, keyed: list) -> None:
        """The counterfactual JobSpec.restore_watermarks: resume at the watermark (nothing fires
        now: due timers fire with the next one, as the timers of an interrupted firing do after a
        restore). ``keyed``: (watermark processor, KeyedProcessOperator) of each keyed operator."""
        watermark = self.restored_watermark
        if watermark <= MIN_WATERMARK:
            return
        self.valve.watermarks = [watermark] * len(self.valve.watermarks)
        self.valve.last_output = watermark
        for processor, operator in keyed:
            processor.max_input_watermark = watermark
            for service in operator.time_service_manager.services.values():
                service.current_watermark = max(service.current_watermark, watermark)

    def receive(self, channel: int, element: Any) -> None:
        if isinstance(element, CheckpointBarrier) and self.config.unaligned_checkpoints and not element.savepoint:
            # Unaligned: the barrier overtakes the channel's in-flight data and reaches the task as
            # a priority event, processed as mail (so it also interrupts a timer firing, FLIP-443).
            position = self.dequeued[channel] + len(self.inputs[channel])
            self.executor.execute(lambda: self._on_unaligned_barrier(channel, element.checkpoint_id, position),
                                  f"unaligned barrier {element.checkpoint_id}", self.barrier_mail_options)
            return
        self.inputs[channel].append(element)
        if isinstance(element, StreamRecord):
            self.queued_records[channel] += 1

    def is_runnable(self) -> bool:
        if self.state in (self.TERMINATED, self.FAILED):
            return False
        return self.mailbox.has_mail() or self._input_available()

    def run_step(self) -> bool:
        """One mailbox step: the batch of mail, then one default action."""
        return self.processor.run_mailbox_step()

    # -- input ------------------------------------------------------------------------------
    def _input_available(self) -> bool:
        if self.state == self.ENDING:
            return not self.firing_interrupted()
        if self.state != self.RUNNING:
            return False
        if not self.blocked:
            return any(self.inputs)
        return any(q and i not in self.blocked for i, q in enumerate(self.inputs))

    def firing_interrupted(self) -> bool:
        """Whether an interrupted timer firing waits for its continuation mail."""
        return self.watermark_processor.progress_watermark_scheduled

    def _process_input(self, controller) -> None:
        """The default action: process one input element (or finish the input)."""
        if self.state == self.ENDING:
            if not self.firing_interrupted():
                self._end_input()
            return
        if self.state != self.RUNNING:
            return
        channel = self._next_channel()
        if channel is None:
            return
        element = self.inputs[channel].popleft()
        if isinstance(element, StreamRecord):
            self.queued_records[channel] -= 1
        index = self.dequeued[channel]
        self.dequeued[channel] += 1
        if not isinstance(element, CheckpointBarrier):
            self.picks.append(channel)  # the order this task consumed its input (the lineage)
            if self.forced is not None and self.forced:
                self.forced.popleft()
        if isinstance(element, StreamRecord):
            self.record_picks.append(channel)
            if self.forced_records:
                self.forced_records.popleft()
        if channel in self.recording_channels and index < self.barrier_positions.get(channel, index + 1):
            self.recording[channel].append(element)  # in flight before this channel's barrier
        if isinstance(element, StreamRecord):
            if element.timestamp <= self.valve.last_output:
                self.late_records += 1  # at or below the watermark already processed: late (metric)
            self._remember(("r", element.key, element.value, element.timestamp), element.key)
            self._process_record(element)
        elif isinstance(element, Watermark):
            combined = self.valve.input_watermark(channel, element.timestamp)
            if combined is not None:
                self._note_end_of_time(combined)
                self._remember(("w", combined))
                self._process_watermark(combined)
        elif isinstance(element, ProcessingTimeAdvance):
            if self.advance_processing_time is not None:
                self._remember(("p", element.timestamp))
                self.advance_processing_time(element.timestamp)
        elif isinstance(element, CheckpointBarrier):
            self._on_barrier(channel, element.checkpoint_id, element.savepoint)
        elif isinstance(element, EndOfData):
            self.channels_ended[channel] = True
            combined = self.valve.channel_finished(channel)
            if combined is not None:
                self._note_end_of_time(combined)
                self._remember(("w", combined))
                self._process_watermark(combined)
            self._maybe_complete_alignment()
            if all(self.channels_ended):
                self.state = self.ENDING
        else:
            raise TypeError(f"unknown input element {element!r}")

    def _remember(self, entry: tuple, key: Any = None) -> None:
        """Appends to the history of the record's key group, or of every key group (watermarks,
        processing time)."""
        kgr, max_parallelism = self.key_group_range, self.history_max_parallelism
        if kgr is None or max_parallelism is None:  # no history kept (chain tasks unless asked)
            return
        if key is not None:
            self.history.setdefault(assign_to_key_group(key, max_parallelism), []).append(entry)
            return
        for key_group in range(kgr.start_key_group, kgr.end_key_group + 1):
            self.history.setdefault(key_group, []).append(entry)

    def _process_record(self, record: StreamRecord) -> None:
        if not self.firing_interrupted():
            self.operator.process_element(record)
            return
        # between two parts of a split firing (FLIP-443): what can make its output differ
        watermark = self.watermark_processor.max_input_watermark
        before = self._event_timers_of(record.key)
        self.split_records += 1
        if any(timer[0] <= watermark for timer in before):
            self.split_due_key_records += 1  # a record of a key whose timer is due but not fired yet
        self.operator.process_element(record)
        if self._event_timers_of(record.key) != before:
            self.split_timer_changes += 1  # it registered or deleted an event-time timer

    def _event_timers_of(self, key: Any) -> set:
        """The event-time timers pending for ``key`` (every timer service of the operator)."""
        manager = self.operator.time_service_manager
        key_group = assign_to_key_group(key, self.operator.key_context.max_parallelism)
        if not self.operator.key_group_range.contains(key_group):
            return set()
        return {timer for service in manager.services.values()
                for timer in service.event_time_timers_queue.get_subset_for_key_group(key_group) if timer[1] == key}

    def _next_channel(self) -> int | None:
        if self.forced is not None:
            return self._forced_channel()
        n = len(self.inputs)
        for k in range(n):
            i = (self.next_channel + k) % n
            if self.inputs[i] and i not in self.blocked:
                self.next_channel = (i + 1) % n
                return i
        return None

    def _forced_channel(self) -> int | None:
        """Replaying a lineage: barriers at a channel's head go first (they are not picks), then
        the channel the lineage names next, once it has data; past the lineage, round robin."""
        for i, queue in enumerate(self.inputs):
            if queue and isinstance(queue[0], CheckpointBarrier) and i not in self.blocked:
                return i
        while self.forced:
            want = self.forced[0]
            if self.inputs[want]:
                return want if want not in self.blocked else None
            if not self.source_done(want):
                return None  # wait for the data the lineage names next
            self.forced.popleft()  # nothing more will come on this channel (e.g. a second EndOfData)
        self.forced = None
        return self._next_channel()

    def _note_end_of_time(self, watermark: int) -> None:
        if watermark >= MAX_WATERMARK and self.timers_before_end is None:
            self.timers_before_end = self.operator.timers_fired

    def lineage(self) -> list[int] | None:
        """The channels of every input element consumed to build this task's state and output, in
        order (None after a rescale: several old tasks' inputs merged)."""
        return None if self.inherited is None else self.inherited + self.picks

    def timers_fired_before_end_of_input(self) -> int:
        """Timers this task fired before MAX_WATERMARK (metric: did timers fire mid-stream?)."""
        return self.operator.timers_fired if self.timers_before_end is None else self.timers_before_end

    def _process_watermark(self, timestamp: int) -> None:
        if self.interruptible:
            self.watermark_processor.emit_watermark_inside_mailbox(timestamp)
        else:
            fired_before = self.operator.timers_fired
            self.operator.time_service_manager.advance_watermark(timestamp)
            self.watermark_processor.count_fired(fired_before, timestamp)
            self._emit_watermark(timestamp)

    def _emit(self, value: Any, timestamp: int | None) -> None:
        if self.state == self.FINISHED:
            raise RuntimeError(f"{self.name}[{self.subtask_index}] emitted {value!r} after finish()")
        domain = self.operator.context.time_domain  # "event" / "processing" inside on_timer
        origin = {"event": "timer", "processing": "processing-timer"}.get(domain, "element")
        self.output_log.append(("record", value, timestamp, origin))
        self.sink.invoke(value)

    def _emit_side(self, tag: str, value: Any, timestamp: int | None) -> None:
        """A side output (``yield tag, value``): its own stream, here written through the same
        exactly-once sink tagged ``("side-output", tag, value)``, so it is committed (and compared)
        exactly once like the main output."""
        if self.state == self.FINISHED:
            raise RuntimeError(f"{self.name}[{self.subtask_index}] emitted a side output after finish()")
        self.side_outputs += 1
        self.output_log.append(("side", value, timestamp, tag))
        self.sink.invoke(("side-output", tag, value))

    def _emit_watermark(self, timestamp: int) -> None:
        # The downstream valve forwards only increasing watermarks; a repeated one is dropped here.
        if not any(e[0] == "watermark" for e in self.output_log) or timestamp > self._last_output_watermark():
            self.output_log.append(("watermark", timestamp))

    def _last_output_watermark(self) -> int:
        return max((e[1] for e in self.output_log if e[0] == "watermark"), default=MIN_WATERMARK)

    # -- end of input ----------------------------------------------------------------------
    def _end_input(self) -> None:
        """All channels ended (with drain: MAX_WATERMARK fired the event-time timers and the
        continuation completed). As Flink's ``StreamOperatorWrapper.finish``: ``end_input()``,
        then the processing-time timers are flushed by their termination actions (FLIP-269;
        timers already due fire first, as the mail they are), then ``finish()``, then the
        operator's mail is drained; then EndOfData, and the task waits for its final checkpoint."""
        if self.timers_before_end is None:
            self.timers_before_end = self.operator.timers_fired
        if self.config.drain:
            self.operator.end_input()
            self._flush_processing_time_timers()
        self.operator.finish()
        self._drain_operator_mail()
        self.output_log.append(("end_of_data",))
        self.state = self.FINISHED
        if self.on_finished is not None:
            self.on_finished(self)

    def _flush_processing_time_timers(self) -> None:
        self.flush, dropped = flush_processing_time_timers(self.operator, self.output_log, self.config.firing_budget,
                                                           f"{self.name}[{self.subtask_index}]")
        self.dropped_after_horizon += dropped

    def _drain_operator_mail(self) -> None:
        """Mail the operator put in its mailbox (``finish()`` included) runs before EndOfData."""
        while self.operator_executor.try_yield():
            pass

    # -- checkpoints ------------------------------------------------------------------------
    def _on_barrier(self, channel: int, checkpoint_id: int, savepoint: bool = False) -> None:
        """Aligned barrier (and every savepoint): hold the channel until every barrier arrived."""
        if self.pending_checkpoint is None:
            self.pending_checkpoint = checkpoint_id
            self.barriers_seen = set()
            self.aligning = True
        self.barriers_seen.add(channel)
        self.blocked.add(channel)
        self._maybe_complete_alignment()

    def _on_unaligned_barrier(self, channel: int, checkpoint_id: int, position: int) -> None:
        """Unaligned barrier: snapshot at the first one; each channel's data in flight before its
        barrier (still queued, or processed since the snapshot) becomes channel state."""
        if self.state in (self.FAILED, self.TERMINATED):
            return
        if self.pending_checkpoint is None:
            self.pending_checkpoint = checkpoint_id
            self.barriers_seen = set()
            self.aligning = False
            self.pending_snapshot = self._snapshot(checkpoint_id)
            self._forward_barrier(checkpoint_id, unaligned=True)
            self.recording = {i: [] for i in range(len(self.inputs)) if not self.channels_ended[i]}
            self.recording_channels = set(self.recording)
        self.barrier_positions[channel] = position
        queued_ahead = list(self.inputs[channel])[:max(0, position - self.dequeued[channel])]
        self.recording.setdefault(channel, []).extend(queued_ahead)
        self.recording_channels.discard(channel)  # this channel's in-flight data is complete
        self.barriers_seen.add(channel)
        self._maybe_complete_alignment()

    def _maybe_complete_alignment(self) -> None:
        if self.pending_checkpoint is None:
            return
        waiting = [i for i in range(len(self.inputs)) if i not in self.barriers_seen and not self.channels_ended[i]]
        if waiting:
            return
        checkpoint_id, self.pending_checkpoint = self.pending_checkpoint, None
        if not self.aligning:
            snapshot = self.pending_snapshot
            snapshot.channel_state = [(i, e) for i, elements in sorted(self.recording.items()) for e in elements
                                      if not isinstance(e, CheckpointBarrier)]
            self.recording, self.recording_channels, self.pending_snapshot = {}, set(), None
            self.barrier_positions.clear()
        else:
            snapshot = self._snapshot(checkpoint_id)
            self._forward_barrier(checkpoint_id, unaligned=False)
        self.blocked.clear()
        self.acknowledge(checkpoint_id, snapshot)

    def _forward_barrier(self, checkpoint_id: int, unaligned: bool) -> None:
        """After the snapshot: the barrier goes on to the task's network outputs (none here: the
        sink is chained)."""

    def _snapshot(self, checkpoint_id: int) -> TaskSnapshot:
        if self.state in (self.FINISHED, self.TERMINATED) and self.final_checkpoint is None:
            self.final_checkpoint = checkpoint_id
        if pending_timers(self.operator):
            self.snapshots_with_timers += 1
        return TaskSnapshot(self.subtask_index, self.key_group_range,
                            self.operator.snapshot_state(self.config.snapshot_format),
                            self.sink.snapshot_state(checkpoint_id),
                            processing_time=self.processing_time_service.get_current_processing_time(),
                            lineage=consumed(self.inherited, self.picks),
                            watermark=self.valve.last_output,
                            history={kg: (entries, len(entries)) for kg, entries in self.history.items()})

    def trigger_checkpoint_after_input_ended(self, checkpoint_id: int) -> None:
        """FLIP-147: a task whose input ended is checkpointed directly (as a mail)."""
        self.executor.execute(lambda: self.acknowledge(checkpoint_id, self._snapshot(checkpoint_id)),
                              f"checkpoint {checkpoint_id} of finished task")

    def notify_checkpoint_complete(self, checkpoint_id: int, terminate: bool = False) -> None:
        """As a mail: commits the sink; ``terminate`` ends the task after a stop savepoint
        (no drain: no ``finish()``, pending timers stay in the savepoint)."""
        def notify() -> None:
            self.sink.notify_checkpoint_complete(checkpoint_id)
            final = self.final_checkpoint is not None and checkpoint_id >= self.final_checkpoint
            if terminate or (self.state == self.FINISHED and final and not self.sink.pending and not self.sink.current):
                self.operator.close()
                self.state = self.TERMINATED
        self.executor.execute(notify, f"notifyCheckpointComplete {checkpoint_id}")

    def fail(self) -> None:
        """Cancelled by a failover: uncommitted data is aborted; the mailbox is closed."""
        self.state = self.FAILED
        self.sink.abort()
        self.mailbox.quiesce()
        self.mailbox.close()

    @property
    def input_ended(self) -> bool:
        return self.state in (self.FINISHED, self.TERMINATED)


def pending_timers(operator: KeyedProcessOperator) -> int:
    """The event- and processing-time timers ``operator`` has pending."""
    manager = operator.time_service_manager
    return manager.num_event_time_timers() + manager.num_processing_time_timers()

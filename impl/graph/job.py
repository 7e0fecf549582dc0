"""The job runtime: sources, a keyed exchange, operator tasks, the checkpoint coordinator, the
completed-checkpoint store and failover (region or global, with or without rescaling).

The job graph is ``source[s] --keyBy--> keyed operator + 2PC sink [p]``. Each source subtask
reads a bounded list of elements (records and watermarks) with an offset that checkpoints
record; records go to the operator subtask owning their key group, watermarks, barriers and
EndOfData are broadcast. Time is simulated; :mod:`streamproof.impl.graph.sim` decides who runs next.
"""

from __future__ import annotations

import random
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any, Callable

from streamproof.impl.graph.checkpoint_coordinator import (
    CheckpointCoordinator,
    CompletedCheckpoint,
)
from streamproof.impl.operators.keyed_process_operator import (
    KeyedProcessFunction,
    StreamRecord,
)
from streamproof.impl.operators.two_phase_commit_sink import ExternalSystem
from streamproof.impl.state.key_groups import (
    KeyGroupRange,
    assign_to_key_group,
    compute_key_group_range_for_operator_index,
    compute_operator_index_for_key_group,
)
from streamproof.impl.tasks.stream_elements import (
    EndOfData,
    ProcessingTimeAdvance,
    Watermark,
)
from streamproof.impl.tasks.stream_task import OperatorTask
from streamproof.impl.tasks.task_state import TaskConfig
from streamproof.impl.timers.internal_timer_service import TIE_ORDERS
from streamproof.impl.timers.processing_time_service import (
    MAX_WATERMARK,
    MIN_WATERMARK,
    ManualProcessingTimeService,
)


@dataclass(frozen=True)
class PeriodicWatermark(Watermark):
    """An emission point of a source's bounded-out-of-orderness watermark generator (Flink's
    ``BoundedOutOfOrdernessWatermarks`` behind the source's periodic emitter): here the source
    emits ``max(timestamps of the records it emitted since its (re)start) - bound - 1`` when that
    is above every watermark it emitted since its (re)start, else nothing. A restarted source
    task starts a new generator, so after a restore the watermarks come from the replayed
    records. ``timestamp`` is what the generator emits here in a failure-free run (the value a
    runtime that does not restart generators, the job-graph runtime, and the model use).
    docs/decisions.md, "Watermarks after a restore"."""

    bound: int = 0


@dataclass
class JobSpec:
    """What to run: per source subtask its elements, the function, parallelism and configuration."""

    sources: list[list]                              # per source subtask: StreamRecord / Watermark
    function_factory: Callable[[], KeyedProcessFunction]
    parallelism: int = 2
    max_parallelism: int = 16
    checkpoint_interval: int = 20                     # simulated time between checkpoint triggers
    config: TaskConfig = field(default_factory=TaskConfig)
    channel_capacity: int = 4                          # records in flight per channel (back-pressure)
    failover_strategy: str = "region"                  # "region" or "full"
    async_mail_rate: float = 0.3                       # chance that mail arrives while a timer fires
    name: str = "keyed-process"
    # "steps": processing time is the simulation step (it depends on the schedule); "input": each
    # task's clock moves only with the ProcessingTimeAdvance elements of its input
    processing_time: str = "steps"
    # per subtask, the channels to consume input from, in order (a failure-free replay of a run's
    # committed lineage); None: round robin over the channels with data
    forced_lineage: list | None = None
    # a counterfactual, never Flink: restored tasks resume at the input watermark their snapshots
    # had processed (certification's check that a difference comes only from watermarks not being
    # checkpointed, docs/certify.md)
    restore_watermarks: bool = False
    # the order in which event- and processing-time timers with equal timestamps fire (Flink
    # leaves it open): "insertion" (registration order), "reversed" (the reverse of it) or
    # "key-group" (by key group, then registration order: what a restore gives)
    timer_tie_order: str = "insertion"
    # FLIP-147: a source that had ended when a checkpoint was triggered is restored as finished
    # (its channels end first, before any source emits). None: when a source's watermarks come
    # from a generator (PeriodicWatermark elements, params.watermark_bound); False: it ends again
    # whenever the scheduler picks it (what every run did before; existing scenarios keep it)
    ended_sources_finished_on_restore: bool | None = None
    # the sources run ahead: whenever one can emit, it does before any task step (with unbounded
    # channels the whole input is queued at once, so a record that follows a watermark is there
    # while the watermark's timers fire: a timing every job may have)
    eager_sources: bool = False
    # processing time (ms) that passes while the job restarts: a restored input-driven clock resumes
    # that much after its checkpoint's (wall-clock time goes on during a restart; docs/decisions.md)
    restore_clock_gap: int = 0
    # Flink's state.checkpoints.num-retained: completed checkpoints kept for a restore; an older one
    # is subsumed (dropped) when a newer completes. None keeps them all (certification reads every
    # checkpoint's state for its coverage)
    retained_checkpoints: int | None = 1

    def __post_init__(self) -> None:
        if self.timer_tie_order not in TIE_ORDERS:
            raise ValueError(f"timer_tie_order must be one of {', '.join(TIE_ORDERS)}, got {self.timer_tie_order!r}")


class SourceTask:
    """A bounded source subtask with an offset (its checkpointed state).

    Its :class:`PeriodicWatermark` elements are the emission points of a watermark generator that
    restarts with the task (``max_timestamp`` and ``generated`` count from this (re)start only)."""

    def __init__(self, index: int, elements: list, offset: int, job: "Job"):
        self.index, self.elements, self.offset, self.job = index, elements, offset, job
        self.ended = False      # sent EndOfData (drain): nothing more, barriers included
        self.exhausted = False  # no-drain: input read, the channel stays open for the stop savepoint
        self.max_timestamp: int | None = None  # the generator: highest record timestamp since this (re)start
        self.generated = MIN_WATERMARK         # ... and the highest watermark it emitted since then
        self.restart_tick = self._restart_tick()

    def is_runnable(self) -> bool:
        if self.ended or self.exhausted:
            return False
        if self.offset < len(self.elements):
            element = self.elements[self.offset]
            if isinstance(element, StreamRecord):
                return self.job.has_capacity(self.index, self.job.route(element))
        return True

    def emit_next(self) -> None:
        if self.offset < len(self.elements):
            element = self.elements[self.offset]
            self.offset += 1
            if isinstance(element, StreamRecord):
                self._send(element)
                if self.max_timestamp is None or element.timestamp > self.max_timestamp:
                    self.max_timestamp = element.timestamp
                if self.restart_tick is not None and self.restart_tick[0] == self.offset - 1:
                    self.tick(self.restart_tick[1])
                    # where the restarted generator emitted, and what: a failure-free run may too
                    events = getattr(self.job, "events", None)
                    if events is not None:
                        events.append(("regenerated-watermark", self.index, self.offset - 1, self.generated))
            elif isinstance(element, PeriodicWatermark):
                self.tick(element.bound)
            else:
                self.job.broadcast(self.index, element)
            return
        if not self.job.spec.config.drain:
            self.exhausted = True  # stop-with-savepoint without drain: no MAX_WATERMARK, no EndOfData
            return
        self.end()

    def _send(self, record: StreamRecord) -> None:
        self.job.send(self.index, self.job.route(record), record)

    def end(self) -> None:
        """End of input with drain: MAX_WATERMARK, then EndOfData."""
        self.job.broadcast(self.index, Watermark(MAX_WATERMARK))
        self.job.broadcast(self.index, EndOfData())
        self.ended = True

    def tick(self, bound: int) -> None:
        """An emission point of the bounded-out-of-orderness generator (nothing before the first
        record since the (re)start, nothing that is not above what it emitted since then)."""
        if self.max_timestamp is None:
            return
        watermark = self.max_timestamp - bound - 1
        if watermark > self.generated:
            self.generated = watermark
            self.job.broadcast(self.index, Watermark(watermark))

    def _restart_tick(self) -> tuple[int, int] | None:
        """After a restore: ``(index of a record, bound)`` when the restarted generator ticks once
        right after that record, the first one it reads. Only when the restart took a watermark
        away (a failure-free run had emitted one by the offset) and the element list has no
        emission point left where the generator could regain it while records remain: Flink's
        periodic emitter ticks within one interval of the restart while the source reads
        (docs/decisions.md, "Watermarks after a restore")."""
        if self.offset == 0 or any(isinstance(e, PeriodicWatermark) for e in self.elements[self.offset:]):
            return None
        highest, emitted, bound = None, MIN_WATERMARK, None
        for element in self.elements[:self.offset]:  # the failure-free generator up to the offset
            if isinstance(element, StreamRecord):
                highest = element.timestamp if highest is None else max(highest, element.timestamp)
            elif isinstance(element, PeriodicWatermark):
                bound = element.bound
                if highest is not None:
                    emitted = max(emitted, highest - bound - 1)
        if emitted == MIN_WATERMARK:
            return None
        records = (i for i in range(self.offset, len(self.elements)) if isinstance(self.elements[i], StreamRecord))
        first = next(records, None)
        return None if first is None else (first, bound)


class Job:
    """A running job: its current attempt's tasks, channels, clock and coordinator."""

    def __init__(self, spec: JobSpec, external: ExternalSystem | None = None, rng: random.Random | None = None):
        self.spec = spec
        self.rng = rng or random.Random(0)
        self.external = external or ExternalSystem()
        self.now = 0
        self.attempt = 0
        self.parallelism = spec.parallelism
        self.events: list[tuple] = []
        self.output_logs: list[tuple[int, int, list]] = []  # (attempt, subtask, output log) of every task
        self.all_tasks: list[OperatorTask] = []  # every attempt's tasks
        self.coordinator = CheckpointCoordinator(self, spec.checkpoint_interval)
        self.failovers = 0
        self.bookkeeping = TaskBookkeeping()
        finished = spec.ended_sources_finished_on_restore
        self.ended_sources_finished_on_restore = finished if finished is not None else any(
            isinstance(e, PeriodicWatermark) for elements in spec.sources for e in elements)
        self._deploy(None)

    # -- topology ---------------------------------------------------------------------------
    def layout(self) -> int:
        return len(self.tasks)

    def route(self, record: StreamRecord) -> int:
        kg = assign_to_key_group(record.key, self.spec.max_parallelism)
        return compute_operator_index_for_key_group(self.spec.max_parallelism, self.parallelism, kg)

    def has_capacity(self, source: int, target: int) -> bool:
        channel = self.tasks[target].inputs[source]
        return sum(isinstance(e, StreamRecord) for e in channel) < self.spec.channel_capacity

    def send(self, source: int, target: int, element: Any) -> None:
        self.tasks[target].receive(source, element)

    def broadcast(self, source: int, element: Any) -> None:
        for task in self.tasks:
            task.receive(source, element)

    # -- deployment and failover ------------------------------------------------------------
    def _deploy(self, checkpoint: CompletedCheckpoint | None) -> None:
        spec, p = self.spec, self.parallelism
        offsets = checkpoint.source_offsets if checkpoint else [0] * len(spec.sources)
        self.sources = [SourceTask(i, elements, offsets[i], self) for i, elements in enumerate(spec.sources)]
        self.clock = ManualProcessingTimeService(start=self.now)
        self.tasks = []
        for i in range(p):
            kgr = compute_key_group_range_for_operator_index(spec.max_parallelism, p, i)
            clock = self.clock if spec.processing_time == "steps" else \
                ManualProcessingTimeService(start=self._restored_time(checkpoint, kgr)
                                            + (spec.restore_clock_gap if checkpoint is not None else 0))
            task = OperatorTask(spec.name, i, p, self.attempt, spec.max_parallelism, kgr, spec.function_factory(),
                                len(spec.sources), MailboxTimers(clock, self, i), self.external, spec.config,
                                self._acknowledger(self.attempt))
            if spec.timer_tie_order != "insertion":  # before restore and open() create the timer services
                task.operator.time_service_manager.set_tie_order(spec.timer_tie_order)
            if spec.processing_time == "input":
                task.advance_processing_time = self._input_clock(clock)
                task.processing_time_service.fire_due_at_once = True
            task.on_finished = self.coordinator.task_finished
            task.watermark_processor.should_interrupt = self._interrupt_check(task)
            self.bookkeeping.observe(task, f"{task.name}[{i}]", [(task.operator, task.operator_executor,
                                                                  task.watermark_processor)])
            self.tasks.append(task)
            self.all_tasks.append(task)
            self.output_logs.append((self.attempt, i, task.output_log))
        if checkpoint is not None:
            self._restore(checkpoint)
            if self.ended_sources_finished_on_restore:
                self._end_finished_sources(checkpoint)
            for task in self.tasks:
                task.inherited = self._restored_lineage(checkpoint, task.subtask_index)
        elif spec.forced_lineage is not None:
            for task, lineage in zip(self.tasks, spec.forced_lineage):
                task.forced = deque(lineage)
                task.source_done = lambda channel: self.sources[channel].ended or self.sources[channel].exhausted
        for task in self.tasks:
            task.open()

    def _restore(self, checkpoint: CompletedCheckpoint) -> None:
        p = self.parallelism
        for task in self.tasks:
            owned = [s for s in checkpoint.task_snapshots
                     if s.key_group_range.get_intersection(task.key_group_range).get_number_of_key_groups()]
            sink_states = [s.sink for s in checkpoint.task_snapshots if s.subtask_index % p == task.subtask_index]
            task.restore(owned, sink_states)
            if self.spec.restore_watermarks and owned:
                task.restored_watermark = min(snap.watermark for snap in owned)
        self._replay_channel_state(checkpoint)

    def _end_finished_sources(self, checkpoint: CompletedCheckpoint) -> None:
        """FLIP-147: a source subtask that had sent EndOfData when the checkpoint was triggered is
        restored as finished (Flink's ``StreamTaskFinishedOnRestoreSourceInput``: MAX_WATERMARK,
        then end of data, at once). Its channels end at the start of the attempt, before any
        source emits, and every task consumes what is queued on them (replayed channel state
        first) before anything else, so no other channel's watermark waits for them."""
        ended = [i for i, done in enumerate(checkpoint.sources_ended or ()) if done]
        if not ended:
            return
        for i in ended:
            self.sources[i].end()
        for task in self.tasks:
            task.forced = deque(channel for channel in ended for _ in task.inputs[channel])

    def _replay_channel_state(self, checkpoint: CompletedCheckpoint) -> None:
        """Unaligned checkpoints: the persisted in-flight data is delivered again before anything
        the sources send after their restored offsets. It holds every stream element, watermarks
        included (Flink persists the buffers, not only the records): records are re-routed by key
        group; a watermark goes to the tasks on its channel, in order with that channel's records.
        (Replayed watermarks are the old generators' values; a restarted generator's lower ones do
        not lower the channel again: the valve keeps each channel's maximum.)
        After a rescale the old subtasks' buffers of one channel are merged, which Flink keeps
        apart (virtual channels, each with its own watermark); here a channel then gets its
        records in order and, after them, the smallest watermark every old buffer had reached,
        so that no replayed record becomes late."""
        rescaled = checkpoint.parallelism != self.parallelism
        reached: dict[int, list[int]] = {}
        for snapshot in checkpoint.task_snapshots:
            last: dict[int, int] = {}
            for channel, element in snapshot.channel_state:
                if isinstance(element, StreamRecord):
                    self.tasks[self.route(element)].receive(channel, element)
                elif isinstance(element, ProcessingTimeAdvance):
                    if not rescaled:  # after a rescale the restored clocks and the sources move time on
                        self.tasks[snapshot.subtask_index].receive(channel, element)
                elif isinstance(element, Watermark):
                    if rescaled:
                        last[channel] = max(element.timestamp, last.get(channel, element.timestamp))
                    else:
                        self.tasks[snapshot.subtask_index].receive(channel, element)
            for channel, timestamp in last.items():
                reached.setdefault(channel, []).append(timestamp)
        owners = {s.subtask_index for s in checkpoint.task_snapshots}
        for channel, timestamps in reached.items():
            if len(timestamps) == len(owners):  # every old buffer of the channel had a watermark
                self.broadcast(channel, Watermark(min(timestamps)))

    def _input_clock(self, clock: ManualProcessingTimeService):
        def advance(timestamp: int) -> None:
            if timestamp > clock.get_current_processing_time():
                clock.advance_to(timestamp)
        return advance

    def _restored_lineage(self, checkpoint: CompletedCheckpoint, subtask: int) -> list[int] | None:
        if checkpoint.parallelism != self.parallelism:
            return None
        snapshot = next((s for s in checkpoint.task_snapshots if s.subtask_index == subtask), None)
        return None if snapshot is None or snapshot.lineage is None else list(snapshot.lineage)

    @staticmethod
    def _restored_time(checkpoint: CompletedCheckpoint | None, kgr: KeyGroupRange) -> int:
        """Input-driven processing time is part of the input: a restored task's clock resumes where
        the checkpoint's tasks owning its key groups were, and the replayed input moves it on as it
        did (a failure-free run whose clock went as the committed epochs saw it)."""
        if checkpoint is None:
            return 0
        return max((s.processing_time for s in checkpoint.task_snapshots
                    if s.key_group_range.get_intersection(kgr).get_number_of_key_groups()), default=0)

    def _interrupt_check(self, task: OperatorTask):
        return interrupt_check(self.rng, self.spec.async_mail_rate, task.executor, task.executor)

    def _acknowledger(self, attempt: int):
        return lambda checkpoint_id, snapshot: self.coordinator.acknowledge(attempt, checkpoint_id, snapshot)

    def regions(self) -> list[set]:
        """Pipelined regions: tasks connected by pipelined (here: all-to-all keyed) edges."""
        return [set(range(len(self.tasks)))] if self.spec.sources else [{i} for i in range(len(self.tasks))]

    def failover(self, failed_subtask: int, reason: str, new_parallelism: int | None = None) -> None:
        """Restarts the failed task's region (every task here) from the latest completed checkpoint."""
        region = next(r for r in self.regions() if failed_subtask in r) if self.spec.failover_strategy == "region" \
            else set(range(len(self.tasks)))
        for i in region:
            self.tasks[i].fail()
        self.coordinator.abort_pending()
        self.coordinator.stop_savepoint = None
        self.failovers += 1
        self.attempt += 1
        if new_parallelism is not None:
            self.parallelism = new_parallelism
        latest = self.coordinator.latest()
        self.events.append(("failover", reason, failed_subtask, latest.checkpoint_id if latest else None,
                            self.parallelism))
        self._deploy(latest)

    # -- progress ---------------------------------------------------------------------------
    @property
    def done(self) -> bool:
        return all(t.state == t.TERMINATED for t in self.tasks)

    def advance_clock(self, now: int) -> None:
        self.now = now
        self.clock.advance_to(now)


class TaskBookkeeping:
    """What the tasks did that their output does not show, recorded by watching them (never
    changing what they do): the simulator's view of each task's own bookkeeping.

    ``log`` holds ``("snapshot", attempt, task, checkpoint, callback, interrupted)`` for every
    snapshot (``callback``: the user callback on the stack when it was taken, None between mails;
    ``interrupted``: a timer firing waited for its continuation), ``("continuations", attempt,
    task, priority, n)`` when a step left ``n`` > 1 watermark continuations of one operator
    pending, and ``("barrier-in-yield", attempt, task, callback)`` when an operator's yield ran a
    checkpoint barrier's mail. ``counts`` counts yields that ran mail inside a timer callback and
    watermarks that arrived while a continuation was pending."""

    def __init__(self) -> None:
        self.log: list[tuple] = []
        self.counts: Counter = Counter()

    def observe(self, task, label: str, operators: list) -> None:
        """``operators``: (KeyedProcessOperator, its mailbox executor, its watermark processor) of
        each keyed operator of ``task``."""
        attempt = task.attempt
        snapshot, run_step, process_watermark = task._snapshot, task.run_step, task._process_watermark

        def callback() -> str | None:
            return next((op._callback for op, _, _ in operators if op._callback is not None), None)

        def observed_snapshot(checkpoint_id):
            self.log.append(("snapshot", attempt, label, checkpoint_id, callback(), task.firing_interrupted()))
            return snapshot(checkpoint_id)

        priorities = [executor.priority for _, executor, _ in operators]

        def observed_step():
            ran = run_step()
            continuations = Counter(mail.priority for mail in task.mailbox.pending_mails()
                                    if mail.description == "emitWatermarkInsideMailbox")
            if continuations:
                for priority in priorities:
                    if continuations[priority] > 1:
                        self.log.append(("continuations", attempt, label, priority, continuations[priority]))
            return ran

        def observed_watermark(timestamp):
            if task.firing_interrupted():
                self.counts["watermark while a continuation was pending"] += 1
            return process_watermark(timestamp)

        task._snapshot, task.run_step, task._process_watermark = observed_snapshot, observed_step, observed_watermark
        for operator, executor, _ in operators:
            self._observe_yields(task, label, operator, executor)

    def _observe_yields(self, task, label: str, operator, executor) -> None:
        attempt = task.attempt

        def observed(original):
            def yield_(*args):
                before = task.mailbox.pending_mails()
                inside = operator._callback
                ran = original(*args)
                if inside is not None and ran is not False:
                    after = {id(mail) for mail in task.mailbox.pending_mails()}
                    taken = [mail for mail in before if id(mail) not in after]
                    self.counts[f"a yield ran a mail inside {inside}"] += 1
                    if any(mail.description.startswith("unaligned barrier") for mail in taken):
                        self.log.append(("barrier-in-yield", attempt, label, inside))
                return ran
            return yield_

        executor.try_yield, executor.yield_ = observed(executor.try_yield), observed(executor.yield_)


def interrupt_check(rng: random.Random, rate: float, task_executor, executor):
    """``should_interrupt`` of a firing. Mail arrives concurrently in Flink (RPCs, timers): while a
    timer fires, a foreign mail may land in the task's mailbox (with probability ``rate``) before
    the operator's ``executor`` is asked whether to interrupt."""
    def should_interrupt() -> bool:
        if rng.random() < rate:
            task_executor.execute(lambda: None, "rpc")
        return executor.should_interrupt()
    return should_interrupt


class MailboxTimers:
    """The task's processing-time service: physical timers fire as mail in the task's mailbox."""

    # a timer registered at or before the clock fires at once (Flink's SystemProcessingTimeService
    # schedules it with no delay): input-driven clocks, which move only with the input, set it
    fire_due_at_once = False

    def __init__(self, clock: ManualProcessingTimeService, job: Job, subtask: int):
        self.clock, self.job, self.subtask = clock, job, subtask

    def get_current_processing_time(self) -> int:
        return self.clock.get_current_processing_time()

    def register_timer(self, timestamp: int, callback):
        task_ref = lambda: self.job.tasks[self.subtask]
        attempt = self.job.attempt

        def defer_to_mailbox(ts: int) -> None:
            task = task_ref()
            if self.job.attempt == attempt and task.state not in (task.FAILED, task.TERMINATED):
                task.executor.execute(self.mail(task, callback, ts), f"processing timer {ts}")

        timer = self.clock.register_timer(timestamp, defer_to_mailbox)
        if self.fire_due_at_once and timestamp <= self.clock.get_current_processing_time():
            self.clock.advance_to(self.clock.get_current_processing_time())  # into the mailbox, as mail
        return timer

    def mail(self, task, callback, timestamp: int):
        """The mail that runs a physical timer's callback."""
        return lambda: callback(timestamp)

"""The deterministic scheduler of a job: a pure function of the job spec, the seed and the fault
schedule. Each step runs one enabled action chosen by a seeded random generator (a source emits
an element, or a task runs one mailbox step), advances simulated time by one unit, lets the
coordinator trigger a checkpoint when due, and applies the faults scheduled for that point.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from streamproof.impl.graph.job import GraphJobSpec, JobSpec, PeriodicWatermark
from streamproof.impl.graph.job_graph import Edge, JobGraph, OperatorNode
from streamproof.impl.graph.job_runtime import GraphJob
from streamproof.impl.operators.two_phase_commit_sink import ExternalSystem
from streamproof.impl.timers.snapshot_format import decode_snapshot


class SimulationError(RuntimeError):
    """The job did not finish: no enabled action (deadlock) or the step budget ran out."""


@dataclass(frozen=True)
class Fault:
    """``kind``: ``fail`` (at step ``at``), ``fail_in_interrupted_firing`` (the ``nth`` time a task is
    between two parts of an interrupted firing), or ``rescale`` (at step ``at`` to ``parallelism``)."""

    kind: str
    at: int = 0
    nth: int = 1
    subtask: int = 0
    parallelism: int | None = None
    after_checkpoint: bool = False  # fail_in_interrupted_firing: only after a checkpoint completed during it
    operator: str | None = None  # rescale of a job graph: the operator whose chain (and forward group) rescales
    checkpoints: int = 0  # fail / rescale: not before this many checkpoints completed (in the whole run)


@dataclass
class SimulationResult:
    committed: list
    steps: int
    failovers: int
    checkpoints: int
    output_logs: list
    events: list
    interrupted_firings_seen: int = 0
    faults_applied: list = field(default_factory=list)
    stalled_firings: list = field(default_factory=list)  # (attempt, subtask, interrupted advances without progress)
    channel_state_records: int = 0  # in-flight records carried by completed unaligned checkpoints
    final_timers: list = field(default_factory=list)  # timers left in the last completed checkpoint
    # processing-time timers left in the last completed checkpoint: (key, ts, termination action)
    final_processing_timers: list = field(default_factory=list)
    flushes: list = field(default_factory=list)  # (attempt, subtask, FlushRecord) of every end-of-input flush
    late_records: int = 0  # records that reached an operator at or below its current watermark
    side_outputs: int = 0  # side outputs emitted (committed through the sink as ("side-output", tag, value))
    timers_before_end: int = 0  # timers fired (every attempt) before end of input reached a task
    # per final subtask, the channels of the input its committed state and output consumed, in
    # order (None when a rescale merged tasks): replayed without faults, it is the run's reference
    lineage: list | None = None
    metrics: dict = field(default_factory=dict)  # runtime-specific measurements (job graphs: liveness)
    # the tasks' own bookkeeping (TaskBookkeeping): snapshots and where they were taken,
    # pending watermark continuations, barriers a yield ran; and counts of what happened inside steps
    task_log: list = field(default_factory=list)
    task_counts: dict = field(default_factory=dict)
    # split firings (FLIP-443), every attempt: records processed between two parts of a firing,
    # those of a key whose timer was due and not fired yet, those that registered or deleted a timer
    split_records: int = 0
    split_due_key_records: int = 0
    split_timer_changes: int = 0
    event_timers_fired: int = 0  # event-time timers fired by watermarks, every attempt (MAX_WATERMARK's too)
    event_timers_before_end: int = 0  # ... by watermarks below MAX_WATERMARK
    restored_timers: int = 0  # timers restored from checkpoints, every attempt
    snapshots_with_timers: int = 0  # task snapshots taken while timers were pending, every attempt
    # per key group, what the final tasks' committed state and output consumed, in order
    # (OperatorTask.history): each key group's failure-free run
    histories: dict = field(default_factory=dict)


def simulate(spec: JobSpec | GraphJobSpec, seed: int, faults: tuple[Fault, ...] = (), max_steps: int = 200_000,
             external: ExternalSystem | None = None) -> SimulationResult:
    """Runs a job under the seeded scheduler and the fault schedule: a job graph
    (:class:`~streamproof.impl.graph.job_runtime.GraphJobSpec`) or a one-stage job
    (:class:`~streamproof.impl.graph.job.JobSpec`), which runs as its one-operator job graph
    (:func:`graph_spec_of`). The one job runtime of both is
    :class:`~streamproof.impl.graph.job_runtime.GraphJob`."""
    rng = random.Random(seed)
    graph_spec = graph_spec_of(spec) if isinstance(spec, JobSpec) else spec
    job = ObservedGraphJob(graph_spec, external, random.Random(rng.random()))
    step, applied, interrupted_seen = run_schedule(job, rng, faults, max_steps)
    if isinstance(spec, JobSpec):
        return _one_stage_result(job, spec.name, step, applied, interrupted_seen)
    return _graph_result(job, step, applied, interrupted_seen)


def run_schedule(job, rng: random.Random, faults: tuple[Fault, ...], max_steps: int) -> tuple[int, list, int]:
    """Runs ``job`` (a :class:`Job` or a job graph) to the end under the fault schedule; returns
    (steps, faults applied, steps spent inside interrupted firings)."""
    pending = sorted(faults, key=lambda f: (f.kind != "fail_in_interrupted_firing", f.at))
    applied: list[Fault] = []
    interrupted_seen = checkpointed_during_interruption = 0
    completed_seen = 0
    step = 0
    eager = getattr(job.spec, "eager_sources", False)
    while not job.done:
        if step >= max_steps:
            raise SimulationError(f"job did not finish within {max_steps} steps (livelock?)")
        step += 1
        job.advance_clock(step)
        job.coordinator.maybe_trigger(step)
        completed_now = job.coordinator.completed_count
        # no firing is interrupted while no watermark processor of this attempt has a continuation scheduled
        if job.scheduled_continuations[0] and any(t.firing_interrupted() for t in job.tasks if t.state != t.FAILED):
            interrupted_seen += 1
            checkpointed_during_interruption += completed_now > completed_seen
            due = pending and next((f for f in pending if f.kind == "fail_in_interrupted_firing" and (
                f.nth <= checkpointed_during_interruption if f.after_checkpoint else f.nth <= interrupted_seen)), None)
            if due:
                pending.remove(due)
                applied.append(due)
                victim = next(t for t in job.tasks if t.state != t.FAILED and t.firing_interrupted())
                job.failover(victim.subtask_index, "failure inside an interrupted firing")
                continue
        completed_seen = completed_now
        due = pending and next((f for f in pending if f.kind in ("fail", "rescale") and f.at <= step
                                and (not f.checkpoints or job.coordinator.completed_count >= f.checkpoints)), None)
        if due:
            pending.remove(due)
            applied.append(due)
            where = {"operator": due.operator} if due.operator else {}
            job.failover(due.subtask % len(job.tasks), due.kind, due.parallelism if due.kind == "rescale" else None,
                         **where)
            continue
        actions = [s.emit_next for s in job.sources if s.is_runnable()]
        if actions and eager:
            actions[0]()
            continue
        actions += [t.run_step for t in job.tasks if t.is_runnable()]
        if not actions:
            if job.coordinator.pending or any(t.state == t.FINISHED for t in job.tasks):
                continue  # waiting for a checkpoint to complete: time passes
            raise SimulationError(f"deadlock at step {step}: no source or task can run")
        rng.choice(actions)()
    return step, applied, interrupted_seen


def _graph_result(job, step: int, applied: list, interrupted_seen: int) -> SimulationResult:
    """What a job graph's run reports: its output and events, with liveness metrics per operator."""
    keyed = [(t, op) for t in job.all_tasks for op in t.operators if hasattr(op, "watermark_processor")]
    stalled = [(t.attempt, f"{op.name}[{t.vertex_subtask}]", op.watermark_processor.stalled)
               for t, op in keyed if op.watermark_processor.stalled]
    final = []
    for task in job.tasks:
        for op in task.operators:
            manager = getattr(getattr(op, "operator", None), "time_service_manager", None)
            due = 0
            if manager is not None:
                wm = op.watermark_processor.max_input_watermark
                due = sum(1 for service in manager.services.values()
                          for timer in [service.event_time_timers_queue.peek()] if timer is not None and timer[0] <= wm)
            final.append((f"{op.name}[{task.vertex_subtask}]", op.kind, op.last_watermark, due))
    metrics = {
        "watermark_lags": [(t.attempt, f"{op.name}[{t.vertex_subtask}]", op.max_lag) for t, op in keyed if op.max_lag],
        "timer_delays": job.timer_mail_delays(),
        "stranded": sum(t.stranded for t in job.all_tasks)
        + sum(len(q) for t in job.tasks for q in t.inputs),
        "final": final,
        "layout": job.layout(),
        "trigger_log": list(job.trigger_log),
        "finish_log": list(job.finish_log),
        "deploy_log": list(job.deploy_log),
        "layouts": list(job.layouts),
        "started": [(t.attempt, t.name, t.vertex_subtask, t.started_at) for t in job.all_tasks],
        "declined": len(job.declined),
        # per keyed operator of every attempt: (attempt, label, operator, log, log position at MAX_WATERMARK)
        "keyed_logs": [(t.attempt, f"{op.name}[{t.vertex_subtask}]", op.name, op.log, op.input_ended_at)
                       for t, op in keyed],
        "chains": [c.name for c in job.graph.chains],
        "second_input_records": job.second_input_records,
    }
    return SimulationResult(job.external.output(), step, job.failovers, job.coordinator.completed_count,
                            job.output_logs, job.events, interrupted_seen, applied, stalled,
                            job.coordinator.channel_state_records, late_records=sum(t.late_records for t in job.all_tasks),
                            side_outputs=sum(t.side_outputs for t in job.all_tasks), lineage=None, metrics=metrics,
                            task_log=job.bookkeeping.log, task_counts=dict(job.bookkeeping.counts))


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

        mailbox = task.mailbox

        def observed_step():
            ran = run_step()
            if mailbox.size() < 2:  # no two continuations pending (issue 30: asked at every step)
                return ran
            continuations = Counter(mail.priority for mail in mailbox.pending_mails()
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


class ObservedGraphJob(GraphJob):
    """The job runtime with each task watched by a :class:`TaskBookkeeping` as it is created."""

    def __init__(self, *args, **kwargs):
        self.bookkeeping = TaskBookkeeping()
        super().__init__(*args, **kwargs)

    def _create_task(self, chain, s: int):
        task = super()._create_task(chain, s)
        keyed = [(op.operator, op.executor, op.watermark_processor) for op in task.operators
                 if hasattr(op, "watermark_processor")]
        self.bookkeeping.observe(task, f"{task.name}[{s}]", keyed)
        return task


SOURCE, SINK = "source", "sink"


def graph_spec_of(spec: JobSpec) -> GraphJobSpec:
    """The one-operator job graph of ``spec`` (its records keep the keys they carry)."""
    name = spec.name
    graph = JobGraph([OperatorNode(SOURCE, "source", len(spec.sources)),
                      OperatorNode(name, "keyed_process", spec.parallelism, name),
                      OperatorNode(SINK, "sink", spec.parallelism)],
                     [Edge(SOURCE, name, "keyed"), Edge(name, SINK, "forward")])
    finished = spec.ended_sources_finished_on_restore
    if finished is None:
        finished = any(isinstance(e, PeriodicWatermark) for elements in spec.sources for e in elements)
    chain = graph.chain_of[name]
    forced = None if spec.forced_lineage is None else \
        {(chain, s): list(lineage) for s, lineage in enumerate(spec.forced_lineage)}
    return GraphJobSpec(graph, [list(elements) for elements in spec.sources], {name: spec.function_factory},
                        max_parallelism=spec.max_parallelism, checkpoint_interval=spec.checkpoint_interval,
                        config=spec.config, channel_capacity=spec.channel_capacity,
                        async_mail_rate=spec.async_mail_rate, watermark_mode="flink-2.3",
                        eager_sources=spec.eager_sources, processing_time=spec.processing_time,
                        forced_elements=forced, timer_tie_order=spec.timer_tie_order,
                        restore_watermarks=spec.restore_watermarks, histories=True,
                        ended_sources_finished_on_restore=finished, restore_clock_gap=spec.restore_clock_gap,
                        retained_checkpoints=spec.retained_checkpoints, one_stage=name)


def _one_stage_result(job, name: str, step: int, applied: list, interrupted_seen: int) -> SimulationResult:
    """What a one-stage job's run reports, shaped as one stage: per subtask of the operator its output
    log and lineage, per key group its history, the timers left in the last completed checkpoint."""
    tasks = sorted(job.tasks, key=lambda t: t.vertex_subtask)
    every = [(t, op) for t in job.all_tasks for op in t.keyed]
    lineages = [t.lineage() for t in tasks]
    chain = job.graph.chain_of[name]
    events = [one_stage_event(e, chain) for e in job.events]
    latest = job.coordinator.latest()
    entries = [entry for s in (latest.task_snapshots if latest else ()) if s.vertex == chain
               for entry in decode_snapshot(s.sink[name].timers).entries()]
    return SimulationResult(
        job.external.output(), step, job.failovers, job.coordinator.completed_count,
        [(a, int(label[label.rindex("[") + 1:-1]), _increasing(log)) for a, label, log in job.output_logs
         if label.startswith(f"{name}[")],
        events, interrupted_seen, applied,
        [(t.attempt, t.vertex_subtask, op.watermark_processor.stalled) for t, op in every
         if op.watermark_processor.stalled],
        job.coordinator.channel_state_records,
        flushes=[(t.attempt, t.vertex_subtask, op.flush) for t, op in every if op.flush is not None],
        late_records=sum(t.late_records for t in job.all_tasks),
        side_outputs=sum(t.side_outputs for t in job.all_tasks),
        timers_before_end=sum(t.timers_fired_before_end_of_input() for t in job.all_tasks),
        lineage=None if any(x is None for x in lineages) else lineages,
        task_log=job.bookkeeping.log, task_counts=dict(job.bookkeeping.counts),
        split_records=sum(op.split_records for _, op in every),
        split_due_key_records=sum(op.split_due_key_records for _, op in every),
        split_timer_changes=sum(op.split_timer_changes for _, op in every),
        event_timers_fired=sum(op.watermark_processor.event_timers_fired for _, op in every),
        event_timers_before_end=sum(op.watermark_processor.event_timers_fired_before_end for _, op in every),
        restored_timers=sum(t.restored_timers for t in job.all_tasks if t.restored_timers > 0),
        snapshots_with_timers=sum(t.snapshots_with_timers for t in job.all_tasks),
        histories={kg: entries for t in tasks for kg, entries in t.history.items()},
        final_timers=sorted(((timer.key, timer.timestamp) for _, _, timer, _ in entries), key=repr),
        final_processing_timers=sorted(((timer.key, timer.timestamp, int(action)) for _, domain, timer, action
                                        in entries if domain == "processing"), key=repr),
    )


def one_stage_event(event: tuple, chain: str) -> tuple:
    """A one-stage job's event: a failover names its operator's new parallelism (a job graph's, every
    chain's)."""
    return event[:4] + (dict(event[4])[chain],) + event[5:] if event[0] == "failover" else event


def _increasing(log: list) -> list:
    """The operator's output log as its sink's input sees it: a watermark not above the last one
    is dropped (the downstream valve forwards only increasing watermarks; Flink 2.3's operator
    emits a repeated one, which no output can tell)."""
    kept, last = [], None
    for entry in log:
        if entry[0] == "watermark":
            if last is not None and entry[1] <= last:
                continue
            last = entry[1]
        kept.append(entry)
    return kept

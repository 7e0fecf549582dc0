"""A one-stage job run on the job-graph runtime: the :class:`~streamproof.impl.graph.job.JobSpec` of one
keyed operator (sources --keyBy--> the operator -> its exactly-once sink) as the one-operator job
graph, with what certification reads from a one-stage run: per subtask the lineage of every input
element, per key group its history, the timer and split-firing metrics.

One runtime for ``certify`` of an operator and of a job (docs/decisions.md, "One runtime"): the
operator is certified as the one-operator job it is.
"""

from __future__ import annotations

import random

from streamproof.impl.graph.job import JobSpec, PeriodicWatermark
from streamproof.impl.graph.job_graph import Edge, JobGraph, OperatorNode
from streamproof.impl.graph.job_runtime import GraphJobSpec
from streamproof.impl.graph.sim import (
    Fault,
    SimulationResult,
    _observed_graph_job,
    run_schedule,
)
from streamproof.impl.operators.two_phase_commit_sink import ExternalSystem

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
                        retained_checkpoints=spec.retained_checkpoints)


def simulate_one_operator(spec: JobSpec, seed: int, faults: tuple[Fault, ...] = (), max_steps: int = 200_000,
                          external: ExternalSystem | None = None) -> SimulationResult:
    """Runs ``spec`` as its one-operator job graph under the simulator's scheduler."""
    rng = random.Random(seed)
    job = _observed_graph_job()(graph_spec_of(spec), external, random.Random(rng.random()))
    step, applied, interrupted_seen = run_schedule(job, rng, faults, max_steps)
    return _result(job, spec.name, step, applied, interrupted_seen)


def _result(job, name: str, step: int, applied: list, interrupted_seen: int) -> SimulationResult:
    tasks = sorted(job.tasks, key=lambda t: t.vertex_subtask)
    every = [(t, op) for t in job.all_tasks for op in t.keyed]
    lineages = [t.lineage() for t in tasks]
    chain = job.graph.chain_of[name]  # a failover event names the operator's parallelism, as one stage's does
    events = [e[:4] + (dict(e[4])[chain],) + e[5:] if e[0] == "failover" else e for e in job.events]
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
    )


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

"""The passive recorder of a job run: for the duration of one run it wraps the places the job
simulator passes through, numbering every output-log / event / bookkeeping entry as it is appended
and noting records in, watermarks in, end of input and sink commits; every wrapper calls the
original unchanged. :class:`Run` is what a run recorded, from the recorder or from a finished
``SimulationResult``."""

from __future__ import annotations

import itertools
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator


class _Stamped(list):
    """A list that numbers each append with a shared clock (``stamps[i]`` belongs to ``self[i]``)."""

    def __init__(self, items=(), clock=None):
        super().__init__(items)
        self.clock = clock
        self.stamps = [next(clock) for _ in self]

    def append(self, item):
        self.stamps.append(next(self.clock))
        super().append(item)


class Recorder:
    """Wraps, for the duration of one run, the places a job run passes through; every wrapper
    calls the original unchanged and only notes what went by."""

    def __init__(self) -> None:
        self.clock = itertools.count(1)
        self.jobs: list = []
        self.notes: list[tuple] = []  # (stamp, kind, attempt, task, payload)

    def note(self, kind: str, task: Any, payload: Any) -> None:
        self.notes.append((next(self.clock), kind, getattr(task, "attempt", None), task, payload))

    @contextmanager
    def active(self) -> Iterator["Recorder"]:
        from streamproof.impl.graph import job_runtime, sim
        from streamproof.impl.operators import two_phase_commit_sink as sink
        from streamproof.impl.tasks import chained_operators, operator_chain
        from streamproof.impl.tasks import stream_task as task
        rec = self

        def wrap(stack: ExitStack, cls: type, name: str, make) -> None:
            if name not in cls.__dict__:
                return
            original = cls.__dict__[name]
            setattr(cls, name, make(original))
            stack.callback(setattr, cls, name, original)

        def job_init(original):
            def __init__(self, *args, **kwargs):
                original(self, *args, **kwargs)
                self.events = _Stamped(self.events, rec.clock)
                rec.jobs.append(self)
            return __init__

        def bookkeeping_init(original):
            def __init__(self, *args, **kwargs):
                original(self, *args, **kwargs)
                self.log = _Stamped(self.log, rec.clock)
            return __init__

        def task_init(original):
            def __init__(self, *args, **kwargs):
                original(self, *args, **kwargs)
                if isinstance(self.__dict__.get("output_log"), list):
                    self.output_log = _Stamped(self.output_log, rec.clock)
            return __init__

        def operator_init(original):
            def __init__(self, *args, **kwargs):
                original(self, *args, **kwargs)
                self.log = _Stamped(self.log, rec.clock)
            return __init__

        def noting(kind):
            def make(original):
                def method(self, *args):
                    rec.note(kind, self, args[0] if args else None)
                    return original(self, *args)
                return method
            return make

        def commit(original):
            def method(self, txn_id, records):
                if txn_id not in self.committed:
                    rec.note("commit", None, (txn_id, records))
                return original(self, txn_id, records)
            return method

        with ExitStack() as stack:
            wrap(stack, job_runtime.GraphJob, "__init__", job_init)
            wrap(stack, sim.TaskBookkeeping, "__init__", bookkeeping_init)
            wrap(stack, task.OperatorTask, "__init__", task_init)
            wrap(stack, chained_operators.ChainedOperator, "__init__", operator_init)
            for cls in (task.OperatorTask, operator_chain.ChainTask):
                wrap(stack, cls, "_process_record", noting("in"))
                wrap(stack, cls, "_process_watermark", noting("wm in"))
                wrap(stack, cls, "_end_input", noting("end of input"))
            wrap(stack, sink.ExternalSystem, "commit", commit)
            yield self


@dataclass
class Run:
    """What a job run recorded, from a finished :class:`SimulationResult` or a (crashed) job."""

    output_logs: list
    events: list
    task_log: list
    flushes: list
    committed: list
    graph: bool
    notes: list = field(default_factory=list)
    stamped: bool = False


def run_of_result(result) -> Run:
    graph = bool(result.metrics.get("chains"))
    return Run(list(result.output_logs), list(result.events), list(result.task_log), list(result.flushes),
                list(result.committed), graph)


def run_of_job(job, recorder: Recorder) -> Run:
    name = getattr(job.spec, "one_stage", None)
    if name is not None:  # a one-stage job: its operator's subtasks, as the one-stage result shows them
        logs = [(a, int(label[label.rindex("[") + 1:-1]), _increasing(log)) for a, label, log in job.output_logs
                if label.startswith(f"{name}[")]
        flushes = [(t.attempt, t.vertex_subtask, op.flush) for t in job.all_tasks for op in t.keyed
                   if op.flush is not None]
        from streamproof.impl.graph.sim import one_stage_event
        chain = job.graph.chain_of[name]
        events = _Stamped.__new__(_Stamped)
        list.__init__(events, [one_stage_event(e, chain) for e in job.events])
        events.clock, events.stamps = job.events.clock, job.events.stamps
        return Run(logs, events, job.bookkeeping.log, flushes, job.external.output(), False, recorder.notes,
                   stamped=True)
    flushes = [(t.attempt, t.subtask_index, t.flush) for t in job.all_tasks if getattr(t, "flush", None) is not None]
    return Run(list(job.output_logs), job.events, job.bookkeeping.log, flushes, job.external.output(), True,
               recorder.notes, stamped=True)


def _increasing(log: list) -> list:
    """The operator's log without a watermark that is not above the last one, with its stamps
    (what the one-stage result reports, :func:`streamproof.impl.graph.sim._increasing`)."""
    stamps = getattr(log, "stamps", None)
    kept, kept_stamps, last = [], [], None
    for i, entry in enumerate(log):
        if entry[0] == "watermark":
            if last is not None and entry[1] <= last:
                continue
            last = entry[1]
        kept.append(entry)
        if stamps is not None:
            kept_stamps.append(stamps[i])
    if stamps is None or len(stamps) != len(log):
        return kept
    stamped = _Stamped.__new__(_Stamped)
    list.__init__(stamped, kept)
    stamped.clock, stamped.stamps = log.clock, kept_stamps
    return stamped

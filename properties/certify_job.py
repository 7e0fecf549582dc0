"""Certification of a whole PyFlink job as its author wrote it (``streamproof certify job.py``,
docs/certify.md "Certifying a job").

The job's file is captured (:mod:`streamproof.flink.capture`: nothing runs for real), built into a
job graph (:mod:`streamproof.properties.certify_job_graph`) and run on the graph runtime with the
job's own records, timestamp assigner, watermark strategy and key selectors. What the exploration
varies is what Flink leaves open: where each source's periodic watermark generator emits (its
emission points), the parallelism of operators the job does not fix, the interleaving of parallel
inputs (the schedule), checkpoints (aligned or unaligned), failures, failures inside interrupted
timer firings, rescales, and where interruptible timer firings are split (FLIP-443).

The exploration is a fixed plan (every emission point, failures spread over the job's run, each
fault kind) plus ``examples`` random scenarios drawn from ``seed``: the plan's verdict does not
depend on the example count, and the same seed gives the same verdict.
"""

from __future__ import annotations

import dataclasses
import json
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from streamproof.flink import pipeline as pl
from streamproof.impl.graph_job import GraphJobSpec
from streamproof.impl.job import PeriodicWatermark
from streamproof.impl.operators import StreamRecord
from streamproof.impl.sim import Fault, SimulationError, run_schedule
from streamproof.impl.task import ProcessingTimeAdvance, TaskConfig
from streamproof.impl.timers import MAX_WATERMARK, MIN_WATERMARK
from streamproof.properties.certify_job_graph import BuiltJob, JobGraphError, build
from streamproof.properties.job.values import canonical

PROPERTIES = ("job.same-output", "job.interruptible-timers", "job.watermarks", "job.end-of-input")
SCENARIO_FORMAT = "streamproof-job-scenario/1"
EVERY_CHANCE, SPLIT_MAIL_RATE = 1.0, 0.8
OTHER_SCHEDULES = 5
CALLBACK_SECONDS = 5.0
FAILURE_POINTS = 8        # failures spread over a failure-free run's steps, per plan
MAX_STEPS = 100_000
FAST_CLOCK = 10**6        # a source clock pace far beyond any timer delay: every timer due at the next record
PACES = (1, 10, 100, 1000, FAST_CLOCK)
DEFAULT_EXAMPLES = 50     # random scenarios after the plan
FINDING_LATE = "output for late records depends on timing"
NOT_APPLICABLE = "not applicable"
FINDING_ORDER = "output depends on arrival order across channels"


class JobCertifyError(ValueError):
    """The job cannot be certified (one line naming the job's line or operator; exit 2)."""


# -- scenarios -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class JobScenario:
    """One run's choices. ``points``: per source subtask, after which of its records (by index)
    its watermark generator emits; ``parallelism``: operators the job does not fix; ``faults``;
    ``checkpoint_interval`` in steps; ``seed`` the schedule; ``mail_rate`` how often foreign mail
    lands while timers fire (interruptible firings split)."""

    points: tuple
    parallelism: int = 1
    faults: tuple = ()
    checkpoint_interval: int = 4
    seed: int = 0
    mail_rate: float = 0.3
    unaligned: bool = False
    drop: tuple = ()  # (source subtask, record index) left out: the scenario without its late records
    uniform: bool = False  # every operator at ``parallelism``, also those the job fixes (a rescaled job)
    eager: bool = False    # sources run ahead (records queued while timers fire): a split at every chance
    pace: int = 1          # processing time (ms) a source's clock moves on after each record it reads

    def to_json(self) -> dict:
        return {"format": SCENARIO_FORMAT, "points": [list(p) for p in self.points], "parallelism": self.parallelism,
                "faults": [dataclasses.asdict(f) for f in self.faults], "checkpoint_interval": self.checkpoint_interval,
                "seed": self.seed, "mail_rate": self.mail_rate, "unaligned": self.unaligned,
                "drop": [list(d) for d in self.drop], "uniform": self.uniform, "eager": self.eager,
                "pace": self.pace}

    @classmethod
    def from_json(cls, document: Any) -> "JobScenario":
        if not isinstance(document, dict) or document.get("format") != SCENARIO_FORMAT:
            raise JobCertifyError(f"not a job scenario (format {SCENARIO_FORMAT})")
        try:
            return cls(tuple(tuple(int(i) for i in p) for p in document["points"]), int(document["parallelism"]),
                       tuple(Fault(**f) for f in document["faults"]), int(document["checkpoint_interval"]),
                       int(document["seed"]), float(document["mail_rate"]), bool(document["unaligned"]),
                       tuple(tuple(int(i) for i in d) for d in document.get("drop", ())),
                       bool(document.get("uniform", False)), bool(document.get("eager", False)),
                       int(document.get("pace", 1)))
        except (KeyError, TypeError, ValueError) as e:
            raise JobCertifyError(f"malformed job scenario: {type(e).__name__}: {e}") from None


# -- the subject -------------------------------------------------------------------------------------
@dataclass
class JobSubject:
    """A captured job and its graphs per parallelism."""

    target: str
    pipeline: pl.Pipeline
    _built: dict = field(default_factory=dict)
    given: dict = field(default_factory=dict)  # source name -> records (``--records NAME=...``)

    def built(self, parallelism: int, uniform: bool = False) -> BuiltJob:
        if (parallelism, uniform) not in self._built:
            try:
                self._built[(parallelism, uniform)] = build(self.pipeline, parallelism, uniform=uniform)
            except JobGraphError as e:
                raise JobCertifyError(str(e)) from None
        return self._built[(parallelism, uniform)]

    @property
    def source_records(self) -> list[list]:
        """Per source subtask, the job's own records."""
        built = self.built(1)
        out = []
        for op in built.graph.sources:
            records = built.collections[op.name]
            if records is None and op.name in self.given:  # a connector: its records over its subtasks
                records = self.given[op.name]
                out += [records[i::op.parallelism] for i in range(op.parallelism)]
                continue
            if records is None:
                node = built.labels[op.name]
                raise JobCertifyError(f"{node.line}: the source {op.name!r} ({node.source.description}) has no data in "
                                      f"the job's file: give --records '{op.name}=module:records'")
            out += [records] + [[] for _ in range(op.parallelism - 1)]
        return out

    @property
    def free_parallelism(self) -> bool:
        """Whether some operator's parallelism is not fixed by the job."""
        built = self.built(1)
        return any(op.kind != "source" and op.name not in built.fixed and not op.name.endswith("/tag")
                   for op in built.graph.operators if op.kind not in ("sink",))


def given_records(option: str) -> tuple[str, list]:
    """``NAME=module:attr`` (``--records`` of a job): the records a connector source ``NAME``
    reads: a list, a function returning one, or a Hypothesis strategy of a list (drawn once,
    derandomized: the same records every run)."""
    from streamproof.properties.certify_input import InputError, resolve

    name, sep, ref = option.partition("=")
    if not sep or not name or ":" not in ref:
        raise JobCertifyError(f"--records {option}: a job takes SOURCE=module:records (the source's name)")
    try:
        value = resolve(ref, "--records")
    except InputError as e:
        raise JobCertifyError(str(e)) from None
    if callable(value) and not hasattr(value, "example"):
        value = value()
    if hasattr(value, "example") and hasattr(value, "map"):  # a Hypothesis strategy
        from hypothesis import HealthCheck, given, settings

        drawn: list = []
        settings(max_examples=1, database=None, derandomize=True, suppress_health_check=list(HealthCheck))(
            given(value)(drawn.append))()
        value = drawn[0]
    if not isinstance(value, (list, tuple)):
        raise JobCertifyError(f"--records {option}: not a list of records (got {type(value).__name__})")
    return name, list(value)


def load_job(target: Any, records: dict | None = None) -> JobSubject:
    """The job ``target``: a job file, a job module, or a module-level function of a job module
    that builds the pipeline (its module is re-run with PyFlink bound to streamproof; the function
    as given is never called); ``records``: source name -> the records of a connector source.
    Bad input is a :class:`JobCertifyError` (one line)."""
    from streamproof.flink.capture import capture, capture_callable

    try:
        pipeline = capture_callable(target) if callable(target) else capture(target)
        target = target if isinstance(target, str) else f"{target.__module__}:{target.__qualname__}"
    except pl.CaptureError as e:
        raise JobCertifyError(str(e)) from None
    if pipeline.runtime_mode == "BATCH":
        raise JobCertifyError(f"{pipeline.file}: set_runtime_mode(BATCH) is not certified: a BATCH job has no "
                              "checkpoints, watermarks or interruptible timers (Flink re-runs it from its blocking "
                              "results); certify it in STREAMING mode")
    subject = JobSubject(target, pipeline, given=dict(records or {}))
    built = subject.built(1)
    unknown = [name for name in subject.given if name not in {op.name for op in built.graph.sources}]
    if unknown:
        raise JobCertifyError(f"--records {unknown[0]}=...: the job has no source named {unknown[0]!r} (its sources: "
                              f"{', '.join(op.name for op in built.graph.sources)})")
    subject.source_records  # noqa: B018 - a source without data is bad input, said now
    preflight(subject)
    return subject


# -- runs ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Indexed(StreamRecord):
    """A source record that knows its index in the job's collection."""

    index: int = -1


@dataclass
class JobRun:
    committed: Counter
    raw: list
    job: Any
    steps: int
    applied: list
    interrupted: int

    @property
    def lineage(self) -> dict | None:
        """Per final task, the channels its committed state and output took records from."""
        return self.job.record_lineage()


def _elements(subject: JobSubject, points: tuple, drop: tuple = (), pace: int = 1) -> list[list]:
    """Per source subtask: its records, the watermark emission points after the chosen ones, and
    after each record its clock ``pace`` ms on (input-driven processing time: the same progress
    relative to the input in every run, restored with the checkpoint)."""
    sources = []
    dropped = set(drop)
    for s, records in enumerate(subject.source_records):
        chosen = set(points[s]) if s < len(points) else set()
        elements: list = []
        for i, record in enumerate(records):
            if (s, i) not in dropped:
                elements.append(_Indexed(None, record, MIN_WATERMARK, i))
            elements.append(ProcessingTimeAdvance((i + 1) * pace))
            if i in chosen:
                elements.append(PeriodicWatermark(MIN_WATERMARK, 0))
        sources.append(elements)
    return sources


def _functions(built: BuiltJob, interruptible: set[str] | bool) -> dict:
    functions = dict(built.functions)
    for name in built.keyed:
        on = interruptible if isinstance(interruptible, bool) else name in interruptible

        def make(factory=functions[name], on=on):
            function = factory()
            function.interruptible_timers = on
            return function
        functions[name] = make
    return functions


def simulate(subject: JobSubject, scenario: JobScenario, interruptible: set[str] | bool = True,
             mail_rate: float | None = None, faults: tuple | None = None, eager: bool = False,
             points: tuple | None = None, checkpoints: bool = True, lineage: JobRun | None = None,
             final: JobRun | None = None) -> JobRun | str:
    """One run; a string says why it did not finish (the user's error, a deadlock). ``lineage``:
    a failure-free replay of that run's record lineage, on its final graph (after rescales);
    ``final``: on that run's final graph."""
    from streamproof.impl.sim import _observed_graph_job

    built = subject.built(scenario.parallelism, scenario.uniform)
    if lineage is not None or final is not None:
        built = dataclasses.replace(built, graph=(lineage or final).job.graph)
    config = TaskConfig(interruptible_timers=bool(interruptible), unaligned_checkpoints=scenario.unaligned,
                        callback_seconds=CALLBACK_SECONDS)
    spec = GraphJobSpec(built.graph, _elements(subject, scenario.points if points is None else points, scenario.drop,
                                               scenario.pace),
                        _functions(built, interruptible), max_parallelism=built.max_parallelism,
                        checkpoint_interval=scenario.checkpoint_interval if checkpoints else 10**9, config=config,
                        channel_capacity=10**9 if eager or lineage is not None else 4,
                        async_mail_rate=scenario.mail_rate if mail_rate is None else mail_rate,
                        programs=built.programs, eager_sources=eager, processing_time="input",
                        forced_lineage=lineage.lineage if lineage is not None else None)
    rng = random.Random(scenario.seed)
    try:
        job = _observed_graph_job()(spec, None, random.Random(rng.random()))
        steps, applied, interrupted = run_schedule(job, rng, scenario.faults if faults is None else faults, MAX_STEPS)
    except SimulationError as e:
        return f"the job did not finish: {e}"
    except Exception as e:  # noqa: BLE001 - the user's code may raise anything: a verdict, not a crash
        return f"{type(e).__name__}: {' '.join(str(e).split())}{_where(e, subject.pipeline.file)}"
    raw = job.external.output()
    return JobRun(Counter(canonical(v) for v in raw), raw, job, steps, applied, interrupted)


def _where(error: BaseException, job_file: str) -> str:
    """`` (at job.py:42)``: the job file's innermost line in the error's traceback."""
    import os
    import traceback

    if not job_file:
        return ""
    lines = [f for f in traceback.extract_tb(error.__traceback__) if os.path.realpath(f.filename) == job_file]
    cause = error.__cause__
    if not lines and cause is not None:
        lines = [f for f in traceback.extract_tb(cause.__traceback__) if os.path.realpath(f.filename) == job_file]
    return f" (at {os.path.basename(job_file)}:{lines[-1].lineno})" if lines else ""


def preflight(subject: JobSubject) -> None:
    """A failure-free run of the job's input: an error here is bad input (exit 2), named."""
    records = subject.source_records
    run = simulate(subject, JobScenario(tuple(tuple(range(len(r))) for r in records)), interruptible=False)
    if isinstance(run, str):
        hint = ""
        strategies = [n for n in subject.pipeline.nodes if n.kind == pl.TIMESTAMPS]
        if "MIN_VALUE" in run and strategies and all(n.watermarks.assigner is None for n in strategies):
            hint = (f" (the watermark strategy at {strategies[0].line} has no timestamp assigner: as PyFlink 2.3, "
                    "with_idleness() and with_watermark_alignment() return a strategy without it, and from_source "
                    "does not apply one)")
        raise JobCertifyError(f"{subject.target}: fails on a failure-free run of its own input: {run[:300]}{hint}")


# -- the properties --------------------------------------------------------------------------------
@dataclass
class Outcome:
    """A property's verdict on one scenario: ``None`` held, else the message; ``finding`` set
    when it is a finding (reported apart, not a refusal)."""

    message: str | None = None
    finding: str | None = None
    split: tuple | None = None  # (mail rate, eager): the split run that differed (job.interruptible-timers)


def by_sink(run: JobRun) -> dict:
    """Per sink, its committed values (a multiset compared by value)."""
    sinks: dict = {}
    for value in run.raw:
        sink, inner = value if isinstance(value, tuple) and len(value) == 2 else ("?", value)
        sinks.setdefault(sink, Counter())[canonical(inner)] += 1
    return sinks


def _decoded(run: JobRun) -> dict:
    return {canonical(v[1] if isinstance(v, tuple) and len(v) == 2 else v): v[1] if isinstance(v, tuple) else v
            for v in run.raw}


def describe_difference(got: JobRun, want: JobRun) -> str:
    """Per sink: what the run committed that the reference did not, and the other way round."""
    parts = []
    got_sinks, want_sinks = by_sink(got), by_sink(want)
    shown = {**_decoded(want), **_decoded(got)}
    for sink in sorted(set(got_sinks) | set(want_sinks), key=str):
        g, w = got_sinks.get(sink, Counter()), want_sinks.get(sink, Counter())
        extra, missing = g - w, w - g
        if extra or missing:
            text = f"{sink}:"
            if extra:
                text += f" committed {_shown(extra, shown)}"
            if missing:
                text += f"{';' if extra else ''} missing {_shown(missing, shown)}"
            parts.append(text)
    return "; ".join(parts)


def _shown(values: Counter, shown: dict) -> str:
    items = [f"{shown.get(v, v)!r}" + (f" x{values[v]}" if values[v] > 1 else "") for v in list(values)[:4]]
    return ", ".join(items) + (" ..." if len(values) > 4 else "")


def _restore_offsets(run: JobRun) -> list[int] | None:
    """Per source subtask, the offset the last restore rewound it to (None: no restore)."""
    restored = [e for e in run.job.events if e[0] == "failover" and e[3] is not None]
    if not restored:
        return None
    checkpoint = next(c for c in run.job.coordinator.completed if c.checkpoint_id == restored[-1][3])
    return list(checkpoint.source_offsets)


def _points_from(scenario: JobScenario, offsets: list[int], records: list[list]) -> tuple:
    """The emission points a source reaches after its restored offset (an offset counts the
    elements read: records and emission points): where a restarted generator can emit."""
    out = []
    dropped = set(scenario.drop)
    for s, rs in enumerate(records):
        chosen = set(scenario.points[s]) if s < len(scenario.points) else set()
        index, kept = 0, []
        for i in range(len(rs)):  # as _elements lays them out: record, clock advance, emission point
            index += 1 if (s, i) in dropped else 2
            if i in chosen:
                if index >= offsets[s]:
                    kept.append(i)
                index += 1
        out.append(tuple(kept))
    return tuple(out)


def references(subject: JobSubject, scenario: JobScenario, faulty: JobRun) -> Iterator[JobRun | str]:
    """Failure-free runs of the same input, the likeliest match first. A failure-free run may
    emit watermarks at any subset of the emission points (Flink's periodic emitter ticks on
    processing time): the scenario's schedule with timers split or not; the points a restarted
    generator reaches after the restored offsets (it emits from the replayed records only); none
    at all (a collection is read faster than the emitter ticks); each point left out; then other
    schedules."""
    records = subject.source_records
    yield simulate(subject, scenario, False, faults=(), checkpoints=False)
    yield simulate(subject, scenario, True, faults=(), checkpoints=False)
    offsets = _restore_offsets(faulty)
    if faulty.lineage is not None:  # the order the committed state consumed its records, replayed
        lineage_points = [scenario.points, tuple(() for _ in records)]
        if offsets is not None:
            lineage_points.insert(1, _points_from(scenario, offsets, records))
        for points in dict.fromkeys(lineage_points):
            for interruptible in (False, True):
                replay = simulate(subject, scenario, interruptible, faults=(), points=points, checkpoints=False,
                                  lineage=faulty)
                if isinstance(replay, str) or replay.lineage == faulty.lineage:
                    yield replay  # else it could not follow the lineage: no reference (checked, never trusted)
    variants = [tuple(() for _ in records)]
    if offsets is not None:
        variants.insert(0, _points_from(scenario, offsets, records))
    variants += [tuple(tuple(j for j in points if (t, j) != (s, i)) for t, points in enumerate(scenario.points))
                 for s, points in enumerate(scenario.points) for i in points]
    tried = {scenario.points}
    for points in variants:
        if points in tried:
            continue
        tried.add(points)
        yield simulate(subject, scenario, False, faults=(), points=points, checkpoints=False)
        yield simulate(subject, scenario, True, faults=(), points=points, checkpoints=False)
    for k in range(1, OTHER_SCHEDULES + 1):
        other = dataclasses.replace(scenario, seed=scenario.seed * 7919 + k)
        for points in [scenario.points, *variants[:2]]:
            yield simulate(subject, other, False, faults=(), points=points, checkpoints=False)
    if _rescaled(faulty):  # the layout the committed output ended in
        for seed in _schedules(scenario):
            yield simulate(subject, dataclasses.replace(scenario, seed=seed), False, faults=(), checkpoints=False,
                           final=faulty)


def _rescaled(run: JobRun) -> bool:
    return run.job.layouts[0] != run.job.layouts[-1]


def _schedules(scenario: JobScenario) -> list[int]:
    return [scenario.seed] + [scenario.seed * 7919 + k for k in range(1, OTHER_SCHEDULES + 1)]


def _order_sensitive(subject: JobSubject, scenario: JobScenario, faulty: JobRun) -> bool:
    """Whether failure-free runs of this input, on the faulty run's final layout, commit different
    outputs under different schedules: the job's output depends on the arrival order across
    channels, which Flink leaves open."""
    outputs = set()
    for seed in _schedules(scenario):
        run = simulate(subject, dataclasses.replace(scenario, seed=seed), False, faults=(), checkpoints=False,
                       final=faulty)
        if not isinstance(run, str):
            outputs.add(frozenset(run.committed.items()))
    return len(outputs) > 1


def same_output(subject: JobSubject, scenario: JobScenario, faulty: JobRun | str | None = None,
                late_check: bool = True) -> Outcome:
    faulty = simulate(subject, scenario) if faulty is None else faulty
    if isinstance(faulty, str):
        return Outcome(f"the job failed: {faulty}")
    first = None
    for reference in references(subject, scenario, faulty):
        if isinstance(reference, str):
            continue
        if reference.committed == faulty.committed:
            return Outcome()
        first = first or reference
    if first is None:
        return Outcome("no failure-free run of this input finished")
    unsplit = simulate(subject, scenario, False)  # the same faults, firings never split
    if not isinstance(unsplit, str) and unsplit.committed != faulty.committed and any(
            not isinstance(r, str) and r.committed == unsplit.committed for r in references(subject, scenario, faulty)):
        return Outcome()  # the splits changed it: job.interruptible-timers judges splits
    if faulty.lineage is None and _order_sensitive(subject, scenario, faulty):
        # a rescale merged tasks (no lineage to replay) and the order across channels is Flink's choice
        return Outcome("after a rescale no failure-free run tried gives the committed output, and failure-free runs "
                       "of this input disagree among themselves", finding=FINDING_ORDER)
    if late_check:
        reduced = without_late(scenario, [faulty, first])
        if reduced is not None and same_output(subject, reduced, late_check=False).message is None:
            return Outcome("the committed output depends on records behind their source's watermark",
                           finding=FINDING_LATE)
    return Outcome(f"the committed output is no failure-free run's: {describe_difference(faulty, first)}"
                   f"{diagnose(subject, scenario, first.committed)}")


def diagnose(subject: JobSubject, scenario: JobScenario, reference: Counter) -> str:
    """Which fault alone reproduces the difference (each alone, then all without splits)."""
    for fault in scenario.faults:
        alone = simulate(subject, scenario, faults=(fault,))
        if not isinstance(alone, str) and alone.committed != reference:
            return f" (cause: the {fault_text(fault)} alone reproduces it)"
    unsplit = simulate(subject, scenario, False)
    if not isinstance(unsplit, str) and unsplit.committed == reference:
        return " (cause: the faults together with split timer firings; without splits the output is right)"
    return ""


def fault_text(fault: Fault) -> str:
    if fault.kind == "fail_in_interrupted_firing":
        return f"failure inside interrupted firing #{fault.nth}" + (" after a checkpoint" if fault.after_checkpoint else "")
    if fault.kind == "rescale":
        return f"rescale to {fault.parallelism} at step {fault.at}" + (
            f" after {fault.checkpoints} checkpoints" if fault.checkpoints else "")
    return f"failure at step {fault.at}" + (f" after {fault.checkpoints} checkpoints" if fault.checkpoints else "")


def _late_at_source(run: JobRun) -> set:
    """(source subtask, record index) of the records read behind their source's watermark."""
    late = set()
    for event in run.job.events:
        if event[0] == "late-at-source":
            source, offset = event[1], event[2]
            element = run.job.spec.sources[source][offset]
            late.add((source, element.index))
    return late


def without_late(scenario: JobScenario, runs: list) -> JobScenario | None:
    """The scenario without the records its runs read behind their source's watermark."""
    late = set().union(*(_late_at_source(r) for r in runs if not isinstance(r, str)))
    return dataclasses.replace(scenario, drop=tuple(sorted(set(scenario.drop) | late))) if late else None


def interruptible_timers(subject: JobSubject, scenario: JobScenario) -> Outcome:
    """Failure-free, the same input and watermarks: firings split at every chance, or at random
    points, give the output of the unsplit run (one schedule when every task reads one channel;
    else any of several unsplit schedules)."""
    whole = simulate(subject, scenario, False, faults=(), eager=True, checkpoints=False)
    if isinstance(whole, str):
        return Outcome(f"the job failed: {whole}")
    for rate, eager in ((EVERY_CHANCE, True), (SPLIT_MAIL_RATE, False)):
        split = simulate(subject, scenario, True, mail_rate=rate, faults=(), eager=eager, checkpoints=False)
        if isinstance(split, str):
            return Outcome(f"the job failed with split firings: {split}")
        if split.committed == whole.committed or _some_unsplit_schedule(subject, scenario, split.committed):
            continue
        culprit = _operator_splitting(subject, scenario, rate, eager, whole.committed)
        message = (f"splitting the timer firings of {culprit or 'its operators'} changes the output: "
                   f"{describe_difference(split, whole)}")
        reduced = without_late(scenario, [whole, split])
        if reduced is not None and interruptible_timers(subject, reduced).message is None:
            return Outcome(message, finding=FINDING_LATE)
        return Outcome(message, split=(rate, eager))
    return Outcome()


def _some_unsplit_schedule(subject: JobSubject, scenario: JobScenario, committed: Counter) -> bool:
    if scenario.parallelism == 1 and not subject.several_inputs:
        return False
    for k in range(1, OTHER_SCHEDULES + 1):
        other = simulate(subject, dataclasses.replace(scenario, seed=scenario.seed * 7919 + k), False, faults=(),
                         checkpoints=False)
        if not isinstance(other, str) and other.committed == committed:
            return True
    return False


def _operator_splitting(subject: JobSubject, scenario: JobScenario, rate: float, eager: bool, whole: Counter) -> str | None:
    """The keyed operator whose split firings alone change the output."""
    for name in subject.built(scenario.parallelism, scenario.uniform).keyed:
        alone = simulate(subject, scenario, {name}, mail_rate=rate, faults=(), eager=eager, checkpoints=False)
        if not isinstance(alone, str) and alone.committed != whole:
            return name
    return None


def watermarks(run: JobRun) -> Outcome:
    """Per operator attempt: output watermarks increase; no event-time timer output at or below
    a watermark leaves after it, unless a record behind the watermark came in after it (a timer
    such a record registers is already due: the operator's choice, as in Flink)."""
    for task in run.job.all_tasks:
        for op in task.operators:
            label, last, late_at = f"{op.name}[{task.vertex_subtask}]", MIN_WATERMARK, getattr(op, "late_at", [])
            last_at = -1
            for i, entry in enumerate(op.log):
                if entry[0] == "watermark":
                    if entry[1] <= last and entry[1] != MAX_WATERMARK or entry[1] < last:
                        return Outcome(f"attempt {task.attempt} {label}: watermark {entry[1]} after {last}")
                    last, last_at = entry[1], i
                elif entry[0] == "record" and entry[3] == "timer" and entry[2] <= last and last != MAX_WATERMARK \
                        and not any(last_at < j <= i for j in late_at):
                    return Outcome(f"attempt {task.attempt} {label}: timer output at {entry[2]} after watermark {last}")
    return Outcome()


def end_of_input(run: JobRun) -> Outcome:
    """Every operator of the last attempt with outputs sent MAX_WATERMARK before its end of data,
    and nothing after it; no interrupted firing left without its continuation."""
    for task in run.job.all_tasks:
        for op in task.operators:
            stalled = getattr(getattr(op, "watermark_processor", None), "stalled", 0)
            if stalled:
                return Outcome(f"attempt {task.attempt} {op.name}[{task.vertex_subtask}]: {stalled} interrupted "
                               "timer firing(s) fired no timer (FLIP-443 fires at least one before it yields)")
    final = max(attempt for attempt, _, _ in run.job.output_logs)
    for attempt, label, log in run.job.output_logs:
        if attempt != final or ("end_of_data",) not in log:
            continue
        end = log.index(("end_of_data",))
        if end != len(log) - 1:
            return Outcome(f"{label}: output after its end of data: {log[end + 1]!r}")
        if not any(e[0] == "watermark" and e[1] == MAX_WATERMARK for e in log[:end]):
            return Outcome(f"{label}: end of data without MAX_WATERMARK before it")
    return Outcome()


def _with_graph_flags(subject: JobSubject) -> None:
    built = subject.built(1)
    subject.several_inputs = any(len(built.graph.network_inputs(c)) > 1 or any(
        e.partitioning != "forward" and built.graph.by_name[e.source].parallelism > 1
        for e in built.graph.network_inputs(c)) for c in built.graph.chains
        if built.graph.by_name[c.head].kind != "source")


JobSubject.several_inputs = False


# -- coverage ---------------------------------------------------------------------------------------
def coverage(run: JobRun, built: BuiltJob, reached: dict) -> None:
    """Per operator, what the run reached that can change an output (each case once per run)."""
    job = run.job
    cases: set[tuple[str, str]] = set()
    restored = {e[3] for e in job.events if e[0] == "failover" and e[3] is not None}
    for task in job.all_tasks:
        for op in task.operators:
            if op.name not in built.keyed:
                continue
            if op.watermark_processor.event_timers_fired:
                cases.add((op.name, TIMERS_USED))
            if op.name in built.windows:
                end = op.input_ended_at if op.input_ended_at is not None else len(op.log)
                if any(entry[0] == "record" for entry in op.log[:end]):
                    cases.add((op.name, "window fired before end of input"))
            elif op.watermark_processor.event_timers_fired_before_end:
                cases.add((op.name, "timer fired before end of input"))
            if op.split_due_key_records:
                cases.add((op.name, "record of a due key inside a split firing"))
            elif op.split_records:
                cases.add((op.name, "record inside a split firing"))
    for checkpoint in job.coordinator.completed:
        for snapshot in checkpoint.task_snapshots:
            for name, state in (snapshot.sink or {}).items():  # a chain task's per-operator states
                if name in built.keyed and state is not None and _holds_state(state):
                    cases.add((name, STATE_CHECKPOINTED))
                    if checkpoint.checkpoint_id in restored:
                        cases.add((name, "state restored after a checkpoint"))
    for name, case in cases:
        reached.setdefault(name, Counter())[case] += 1


STATE_CHECKPOINTED = "checkpoint holding its state"
TIMERS_USED = "event-time timer fired"


def _holds_state(snapshot: Any) -> bool:
    from streamproof.impl.snapshot_format import decode_snapshot

    if any(getattr(snapshot, "keyed_state", None) or {}):
        return True
    timers = getattr(snapshot, "timers", None)
    return bool(timers) and any(True for _ in decode_snapshot(timers).entries())


def needed(reached: Counter) -> list[str]:
    """What an operator's runs must reach before the job's certificate says something about it:
    its state restored, when a checkpoint ever held some. (A timer or window firing mid-stream is
    reached by the plan's emission after every record whenever the job's own input can reach it;
    when it cannot, the certificate says so: :func:`unreachable`.)"""
    return ["state restored after a checkpoint"] if reached[STATE_CHECKPOINTED] else []


def unreachable(name: str, built: BuiltJob, reached: Counter) -> list[str]:
    """What the job's own input never reaches for a keyed operator, whatever the emission points."""
    notes = []
    if name in built.windows and not reached["window fired before end of input"]:
        notes.append("no window fires before end of input (every watermark emission point tried): restores and "
                     "splits are only tested on windows that fire at the end")
    elif reached[TIMERS_USED] and not reached["timer fired before end of input"]:
        notes.append("no timer fires before end of input (every watermark emission point tried)")
    if not reached[STATE_CHECKPOINTED]:
        notes.append("no checkpoint ever held its state")
    return notes


# -- the plan -----------------------------------------------------------------------------------------
def plan(subject: JobSubject, examples: int, seed: int) -> Iterator[tuple[str, JobScenario]]:
    """(what, scenario): every single emission point and every point, at each parallelism; then
    failures, failures inside interrupted firings and rescales spread over each; then
    ``examples`` random scenarios."""
    records = subject.source_records
    every = tuple(tuple(range(len(r))) for r in records)
    none = tuple(() for _ in records)
    built = subject.built(1)
    if all(program.bound is None for program in built.programs.values()):
        every = none  # no watermarks but the end of input's: emission points change nothing
    parallelisms = (1, 2) if subject.free_parallelism else (1,)
    yield "split", JobScenario(every, 1, uniform=True)  # every operator at parallelism 1: one mailbox
    if every != none:
        yield "split", JobScenario(none, 1, uniform=True)
        if _fires_event_timers(subject, JobScenario(every, 1, uniform=True)):  # else nothing to split
            for s, rs in enumerate(records):
                for i in range(len(rs)):
                    points = tuple((i,) if t == s else every[t] for t in range(len(records)))
                    yield "split", JobScenario(points, 1, uniform=True)
    paces = (1, FAST_CLOCK) if uses_processing_time(subject) else (1,)
    base_steps = {}
    for p in parallelisms:
        for points in dict.fromkeys((every, none)):
            for pace in paces:
                run = simulate(subject, JobScenario(points, p, pace=pace), faults=())
                base_steps[(p, points, pace)] = run.steps if not isinstance(run, str) else 50
    for (p, points, pace), steps in base_steps.items():
        for interval in (3, 8):
            for k in range(1, FAILURE_POINTS + 1):
                at = max(1, steps * k // (FAILURE_POINTS + 1))
                yield "failure", JobScenario(points, p, (Fault("fail", at=at),), interval, seed=k, pace=pace)
            for nth in (1, 2, 3):
                yield "failure in firing", JobScenario(points, p, (Fault("fail_in_interrupted_firing", nth=nth),),
                                                       interval, seed=nth, mail_rate=0.8, pace=pace)
            yield "failure in firing", JobScenario(points, p, (Fault("fail_in_interrupted_firing", nth=1,
                                                                     after_checkpoint=True),), interval, mail_rate=0.8,
                                                   pace=pace)
            for k in range(1, 4):
                at = max(1, steps * k // 4)
                yield "rescale", JobScenario(points, p, (Fault("rescale", at=at, parallelism=3 - p if p < 3 else 1),),
                                             interval, seed=k, pace=pace)
    rng = random.Random(seed)
    for _ in range(examples):
        scenario = random_scenario(rng, records if every != none else [[] for _ in records], parallelisms, base_steps)
        yield "random", dataclasses.replace(scenario, pace=rng.choice(PACES)) if len(paces) > 1 else scenario


def uses_processing_time(subject: JobSubject) -> bool:
    """Whether a keyed function of the job registers processing-time timers (read from its code)."""
    import inspect

    for node in subject.pipeline.nodes:
        function = node.function
        if function is None or node.key_selector is None:
            continue
        try:
            source = inspect.getsource(type(function) if not inspect.isfunction(function) else function)
        except (OSError, TypeError):
            return True  # unknown: vary the clock
        if "register_processing_time_timer" in source or "current_processing_time" in source:
            return True
    return False


def _fires_event_timers(subject: JobSubject, scenario: JobScenario) -> bool:
    run = simulate(subject, scenario, True, faults=(), checkpoints=False)  # counted by the interruptible path
    return isinstance(run, str) or any(op.watermark_processor.event_timers_fired for task in run.job.all_tasks
                                       for op in task.operators if hasattr(op, "watermark_processor"))


def random_scenario(rng: random.Random, records: list[list], parallelisms: tuple, base_steps: dict) -> JobScenario:
    points = tuple(tuple(sorted(rng.sample(range(len(r)), rng.randint(0, len(r))))) for r in records)
    p = rng.choice(parallelisms)
    steps = max(base_steps.values()) if base_steps else 50
    faults = []
    for _ in range(rng.randint(0, 2)):
        kind = rng.choice(("fail", "fail", "fail_in_interrupted_firing", "rescale"))
        if kind == "fail":
            faults.append(Fault("fail", at=rng.randint(1, steps), checkpoints=rng.choice((0, 0, 1, 2))))
        elif kind == "rescale":
            faults.append(Fault("rescale", at=rng.randint(1, steps), parallelism=rng.randint(1, 3)))
        else:
            faults.append(Fault("fail_in_interrupted_firing", nth=rng.randint(1, 3), after_checkpoint=rng.random() < .3))
    # unaligned checkpoints never with a rescale: the graph runtime drops in-flight watermarks when
    # it merges channel state (Flink keeps them in virtual channels), which no Flink run does
    rescaled = any(f.kind == "rescale" for f in faults)
    return JobScenario(points, p, tuple(faults), rng.randint(1, 6), rng.randrange(2**31), rng.choice((0.3, 0.8)),
                       rng.random() < 0.3 and not rescaled)


# -- certification --------------------------------------------------------------------------------------
@dataclass
class JobCertificate:
    target: str
    pipeline: list
    results: dict
    coverage: dict
    findings: list
    scenarios: int
    seconds: float
    counterexamples: dict = field(default_factory=dict)
    not_exercised: dict = field(default_factory=dict)
    notes: dict = field(default_factory=dict)  # operator -> what the job's own input never reaches
    operators: dict = field(default_factory=dict)  # keyed operator -> kind, line, interruptible timers verdict

    @property
    def holds(self) -> bool:
        return all(r["verdict"] in ("held", NOT_APPLICABLE) for r in self.results.values())

    @property
    def status(self) -> str:
        if any(r["verdict"] == "failed" for r in self.results.values()):
            return "not certified"
        if any(r["verdict"] == "not exercised" for r in self.results.values()):
            return "not exercised"
        return "certified"

    def to_json(self) -> dict:
        return {"job": self.target, "status": self.status, "certified": self.holds, "pipeline": self.pipeline,
                "results": self.results, "coverage": {k: dict(v) for k, v in self.coverage.items()},
                "operators": self.operators, "findings": self.findings, "notes": self.notes,
                "scenarios": self.scenarios, "seconds": round(self.seconds, 2),
                "counterexamples": {k: v.to_json() for k, v in self.counterexamples.items()}}


def describe_pipeline(subject: JobSubject) -> list[str]:
    """The pipeline, one line per operator: its name, what it is, where the job built it."""
    lines = []
    built = subject.built(1)
    for op in built.graph.operators:
        if op.name.endswith(("/tag", "/type")):
            continue
        node = built.labels.get(op.name)
        inputs = [e.source.removesuffix("/tag") for e in built.graph.inputs(op.name)
                  if not e.source.endswith("/tag") or True]
        inputs = [i for i in inputs if i != f"{op.name}/tag"]
        how = {"keyed": "key_by", "forward": "forward", "rebalance": "rebalance"}
        edges = ", ".join(f"{how[e.partitioning]}{'[' + e.tag + ']' if e.tag else ''} from {e.source}"
                          for e in built.graph.inputs(op.name if op.kind != "sink" else f"{op.name}/tag"))
        line = f"{op.name} ({op.kind}{', keyed' if op.name in built.keyed else ''})"
        if node is not None and node.line:
            line += f" at {node.line}"
        if edges:
            line += f" <- {edges}"
        lines.append(line)
    return lines


def certify_job(subject: JobSubject, examples: int = 100, seed: int = 0,
                progress: Callable[[str, int], None] | None = None) -> JobCertificate:
    """The job's certificate: the plan, then ``examples`` random scenarios (see :func:`plan`)."""
    from streamproof.impl.operators import release_callback_watchdog

    try:
        return _certify_job(subject, examples, seed, progress)
    finally:
        release_callback_watchdog()  # SIGALRM back to whoever had it (pytest-timeout, the interpreter's exit)


def _certify_job(subject: JobSubject, examples: int, seed: int, progress) -> JobCertificate:
    _with_graph_flags(subject)
    start = time.monotonic()
    results = {prop: {"verdict": "held", "scenarios": 0, "message": ""} for prop in PROPERTIES}
    reached: dict = {}
    findings: Counter = Counter()
    counterexamples: dict = {}
    count = 0
    for what, scenario in plan(subject, examples, seed):
        count += 1
        if progress is not None:
            progress(what, count)
        built = subject.built(scenario.parallelism, scenario.uniform)
        if what == "split":
            if "job.interruptible-timers" not in counterexamples:
                outcome = interruptible_timers(subject, scenario)
                _record(results, counterexamples, findings, "job.interruptible-timers", scenario, outcome)
            run = simulate(subject, scenario, faults=(), eager=True, mail_rate=EVERY_CHANCE, checkpoints=False)
            if not isinstance(run, str):
                coverage(run, built, reached)
            continue
        faulty = simulate(subject, scenario)
        if not isinstance(faulty, str):
            coverage(faulty, built, reached)
            _record(results, counterexamples, findings, "job.watermarks", scenario, watermarks(faulty))
            _record(results, counterexamples, findings, "job.end-of-input", scenario, end_of_input(faulty))
        if "job.same-output" not in counterexamples:  # one counterexample is enough
            _record(results, counterexamples, findings, "job.same-output", scenario,
                    same_output(subject, scenario, faulty))
    built = subject.built(1)
    if not any(reached.get(name, Counter())[TIMERS_USED] for name in built.keyed) and \
            results["job.interruptible-timers"]["verdict"] == "held":
        results["job.interruptible-timers"].update(verdict=NOT_APPLICABLE, message=(
            "no operator fires an event-time timer with this input: nothing for FLIP-443 to split"))
    not_exercised, notes = {}, {}
    for name in built.keyed:
        mine = reached.get(name, Counter())
        missing = [c for c in needed(mine) if not mine[c]]
        if missing:
            not_exercised[name] = missing
        if unreachable(name, built, mine):
            notes[name] = unreachable(name, built, mine)
    if not_exercised and results["job.same-output"]["verdict"] == "held":
        results["job.same-output"]["verdict"] = "not exercised"
        results["job.same-output"]["message"] = "; ".join(f"{n}: never {', '.join(m)}" for n, m in not_exercised.items())
    certificate = JobCertificate(subject.target, describe_pipeline(subject), results, reached,
                                 [{"finding": f, "scenarios": n} for f, n in findings.items()], count,
                                 time.monotonic() - start, counterexamples, not_exercised, notes)
    certificate.operators = operator_verdicts(subject, certificate)
    certificate.seconds = time.monotonic() - start
    return certificate


def operator_verdicts(subject: JobSubject, certificate: "JobCertificate") -> dict:
    """Per keyed operator: what it is, where the job built it, and whether it may opt in to
    interruptible timers (FLIP-443): ``safe``, ``unsafe`` (its own split firings change the output
    of the job's input in the split plans), or ``not applicable`` (it fires no event-time timer)."""
    built = subject.built(1)
    failed = certificate.results["job.interruptible-timers"]["verdict"] == "failed"
    counterexample = certificate.counterexamples.get("job.interruptible-timers")
    out = {}
    for name in built.keyed:
        reached = certificate.coverage.get(name, Counter())
        node = built.labels[name]
        verdict = "safe"
        if not reached[TIMERS_USED]:
            verdict = NOT_APPLICABLE
        elif failed and counterexample is not None:
            verdict = "unsafe" if _splitting_changes(subject, counterexample, name) else "safe"
        out[name] = {"kind": "window" if name in built.windows else f"keyed {node.kind}", "line": node.line,
                     "interruptible timers": verdict}
    return out


def _splitting_changes(subject: JobSubject, scenario: JobScenario, name: str) -> bool:
    whole = simulate(subject, scenario, False, faults=(), eager=scenario.eager, checkpoints=False)
    alone = simulate(subject, scenario, {name}, mail_rate=scenario.mail_rate, faults=(), eager=scenario.eager,
                     checkpoints=False)
    return not isinstance(whole, str) and not isinstance(alone, str) and whole.committed != alone.committed


def _record(results: dict, counterexamples: dict, findings: Counter, prop: str, scenario: JobScenario,
            outcome: Outcome) -> None:
    result = results[prop]
    result["scenarios"] += 1
    if outcome.message is None:
        return
    if outcome.finding:
        findings[outcome.finding] += 1
        return
    if result["verdict"] != "failed":
        result["verdict"] = "failed"
        result["message"] = outcome.message
        if outcome.split is not None:
            scenario = dataclasses.replace(scenario, mail_rate=outcome.split[0], eager=outcome.split[1])
        counterexamples[prop] = scenario


def describe_scenario(subject: JobSubject, scenario: JobScenario) -> list[str]:
    """The scenario's choices, one line each, in the job's terms."""
    built = subject.built(scenario.parallelism, scenario.uniform)
    records = subject.source_records
    lines = []
    for s, op in enumerate(op for op in built.graph.sources for _ in range(op.parallelism)):
        points = scenario.points[s] if s < len(scenario.points) else ()
        count = len(records[s])
        where = "after every record" if len(points) == count and count else \
            "never (only the end of input's MAX_WATERMARK)" if not points else \
            "after records " + ", ".join(f"#{i} {records[s][i]!r}" for i in points)
        lines.append(f"{op.name}[{s}]: its {count} records in the file's order; the watermark generator emits {where}")
    dropped = [f"#{i}" for _, i in scenario.drop]
    if dropped:
        lines.append(f"records left out (behind their source's watermark): {', '.join(dropped)}")
    unfixed = [op.name for op in built.graph.operators if op.kind != "source" and op.name not in built.fixed
               and not op.name.endswith(("/tag", "/type"))]
    if unfixed or scenario.uniform:
        lines.append(f"parallelism {scenario.parallelism} for "
                     f"{'every operator' if scenario.uniform else ', '.join(unfixed)}")
    lines.append(f"checkpoints every {scenario.checkpoint_interval} steps"
                 f"{' (unaligned)' if scenario.unaligned else ''}; schedule seed {scenario.seed}; "
                 f"foreign mail during {int(scenario.mail_rate * 100)} % of timer firings (splits)")
    if scenario.eager:
        lines.append("sources run ahead: records wait in the input while timers fire (a split at every chance)")
    lines.append(f"processing time: each source's clock {scenario.pace} ms on after each record")
    lines += [f"fault: {fault_text(f)}" for f in scenario.faults] or ["no faults"]
    return lines


def load_scenario(path: str) -> tuple[JobScenario, str | None, str | None]:
    """A job scenario file: the scenario, the job it was written for and the property it is a
    counterexample of (None when not recorded)."""
    try:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
    except (OSError, ValueError) as e:
        raise JobCertifyError(f"{path}: cannot read a job scenario: {e}") from None
    scenario = JobScenario.from_json(document)
    job, prop = document.get("job"), document.get("property")
    return scenario, job if isinstance(job, str) else None, prop if isinstance(prop, str) else None


def is_job_scenario(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(document, dict) and document.get("format") == SCENARIO_FORMAT


def replay_outcomes(subject: JobSubject, scenario: JobScenario, faulty: JobRun | str) -> dict[str, Outcome]:
    """The properties on one scenario whose faulty run is ``faulty``."""
    _with_graph_flags(subject)
    out = {"job.same-output": same_output(subject, scenario, faulty),
           "job.interruptible-timers": interruptible_timers(subject, dataclasses.replace(scenario, faults=()))}
    if not isinstance(faulty, str):
        out["job.watermarks"] = watermarks(faulty)
        out["job.end-of-input"] = end_of_input(faulty)
    return out


def replay_job(subject: JobSubject, path: str) -> dict[str, Outcome]:
    """The properties on one scenario file."""
    scenario, _, _ = load_scenario(path)
    return replay_outcomes(subject, scenario, simulate(subject, scenario))

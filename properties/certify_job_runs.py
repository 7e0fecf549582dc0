"""A captured job and its runs (``streamproof certify job.py``, docs/certify.md "Certifying a
job"): the job as a :class:`JobSubject` (captured by :mod:`streamproof.flink.capture`, nothing runs
for real; built into a job graph by :mod:`streamproof.properties.certify_job_graph`), a run's
choices as a :class:`JobScenario` (the file format of a counterexample), and :func:`simulate`, one
run on the graph runtime with the job's own records, timestamp assigner, watermark strategy and
key selectors."""

from __future__ import annotations

import dataclasses
import functools
import json
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from streamproof.flink import pipeline as pl
from streamproof.flink.common.typeinfo import float_writes
from streamproof.impl.graph.job import GraphJobSpec
from streamproof.impl.graph.job import PeriodicWatermark
from streamproof.impl.operators.keyed_process_operator import StreamRecord
from streamproof.impl.graph.sim import Fault, SimulationError, run_schedule
from streamproof.impl.tasks.stream_task import ProcessingTimeAdvance, TaskConfig
from streamproof.impl.timers.internal_timer_service import MIN_WATERMARK
from streamproof.properties.certify_job_graph import BuiltJob, JobGraphError, build
from streamproof.properties.job.values import canonical

SCENARIO_FORMAT = "streamproof-job-scenario/1"
CALLBACK_SECONDS = 5.0
STEPS_PER_ELEMENT = 200  # a run longer than this many steps per source element is stuck (livelock)


class JobCertifyError(ValueError):
    """The job cannot be certified (one line naming the job's line or operator; exit 2)."""

    streamproof_one_line = True  # the pytest plugin reports it as one line, without a traceback


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
    restart_gap: int = 0   # processing time (ms) that passes while the job restarts after a failure

    def to_json(self) -> dict:
        return {"format": SCENARIO_FORMAT, "points": [list(p) for p in self.points], "parallelism": self.parallelism,
                "faults": [dataclasses.asdict(f) for f in self.faults], "checkpoint_interval": self.checkpoint_interval,
                "seed": self.seed, "mail_rate": self.mail_rate, "unaligned": self.unaligned,
                "drop": [list(d) for d in self.drop], "uniform": self.uniform, "eager": self.eager,
                "pace": self.pace, "restart_gap": self.restart_gap}

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
                       int(document.get("pace", 1)), int(document.get("restart_gap", 0)))
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
        """Per source subtask *as written*, the job's own records: a collection is one subtask (PyFlink's
        ``from_collection`` is non-parallel), a connector's records are spread over its subtasks. A
        scenario's emission points and dropped records index this layout (:meth:`lanes` maps it to
        the subtasks a run has)."""
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
            out += [records] if op.name in built.spread else [records] + [[] for _ in range(op.parallelism - 1)]
        return out

    def lanes(self, parallelism: int, uniform: bool = False) -> list[tuple[int, int, int]]:
        """Per source subtask of a run at ``parallelism``: (its subtask as written, offset, stride):
        it reads records ``offset::stride`` of that subtask's records (a collection whose Python chain
        runs at the default parallelism is dealt round robin; otherwise stride 1)."""
        key = ("lanes", parallelism, uniform)
        if key not in self._built:
            written, lanes = 0, []
            for op in self.built(parallelism, uniform).graph.sources:
                if op.name in self.built(parallelism, uniform).spread:
                    lanes += [(written, j, op.parallelism) for j in range(op.parallelism)]
                    written += 1
                else:
                    lanes += [(written + i, 0, 1) for i in range(op.parallelism)]
                    written += op.parallelism
            self._built[key] = lanes
        return self._built[key]

    def to_lanes(self, points: tuple, parallelism: int, uniform: bool = False) -> tuple:
        """Emission points as written -> per source subtask of the run."""
        return tuple(tuple(i // stride for i in (points[w] if w < len(points) else ()) if i % stride == j)
                     for w, j, stride in self.lanes(parallelism, uniform))

    def from_lanes(self, points: tuple, parallelism: int, uniform: bool = False) -> tuple:
        """Per source subtask of the run -> as written (the inverse of :meth:`to_lanes`)."""
        out = [set() for _ in self.source_records]
        for (w, j, stride), local in zip(self.lanes(parallelism, uniform), points):
            out[w].update(k * stride + j for k in local)
        return tuple(tuple(sorted(p)) for p in out)

    def lane_of(self, written: tuple, parallelism: int, uniform: bool = False) -> tuple[int, int]:
        """(source subtask as written, record index) -> (run's source subtask, its index there)."""
        w, i = written
        for a, (lw, j, stride) in enumerate(self.lanes(parallelism, uniform)):
            if lw == w and i % stride == j:
                return a, i // stride
        return written

    @functools.cached_property
    def several_inputs(self) -> bool:
        """Whether some task reads records from several channels (their order is Flink's choice)."""
        built = self.built(1)
        return any(len(built.graph.network_inputs(c)) > 1 or any(
            e.partitioning != "forward" and built.graph.by_name[e.source].parallelism > 1
            for e in built.graph.network_inputs(c)) for c in built.graph.chains
            if built.graph.by_name[c.head].kind != "source")

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
    from streamproof.properties.certify_records import InputError, resolve

    name, sep, ref = option.partition("=")
    if not sep or not name or ":" not in ref:
        raise JobCertifyError(f"--records {option}: a job takes SOURCE=module:records (the source's name)")
    try:
        value = resolve(ref, "--records")
    except InputError as e:
        raise JobCertifyError(str(e)) from None
    return name, source_records(value, f"--records {option}")


def source_records(value: Any, what: str) -> list:
    """The records of a connector source given as ``value``: a list, a function returning one, or
    a Hypothesis strategy of a list (drawn once, derandomized: the same records every run)."""
    if callable(value) and not hasattr(value, "example"):
        value = value()
    if hasattr(value, "example") and hasattr(value, "map"):  # a Hypothesis strategy
        from hypothesis import HealthCheck, given, settings

        drawn: list = []
        settings(max_examples=1, database=None, derandomize=True, suppress_health_check=list(HealthCheck))(
            given(value)(drawn.append))()
        value = drawn[0]
    if not isinstance(value, (list, tuple)):
        raise JobCertifyError(f"{what}: not a list of records (got {type(value).__name__})")
    return list(value)


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
    written: list = field(default_factory=list)  # per source subtask of the run: its subtask as written
    wrote_floats: bool = False  # a Types.FLOAT() state value was kept as written (PyFlink's state cache)

    @property
    def lineage(self) -> dict | None:
        """Per final task, the channels its committed state and output took records from."""
        return self.job.record_lineage()


def _elements(subject: JobSubject, points: tuple, drop: tuple = (), pace: int = 1, parallelism: int = 1,
              uniform: bool = False) -> list[list]:
    """Per source subtask of the run: its records, the watermark emission points after the chosen
    ones, and after each record its clock ``pace`` ms on (input-driven processing time: the same
    progress relative to the input in every run, restored with the checkpoint). ``points`` and
    ``drop`` index the records as written; each record keeps its index as written."""
    sources = []
    dropped = set(drop)
    written = subject.source_records
    for w, j, stride in subject.lanes(parallelism, uniform):
        chosen = set(points[w]) if w < len(points) else set()
        elements: list = []
        for i in range(j, len(written[w]), stride):
            if (w, i) not in dropped:
                elements.append(_Indexed(None, written[w][i], MIN_WATERMARK, i))
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
    from streamproof.impl.graph.sim import ObservedGraphJob

    built = subject.built(scenario.parallelism, scenario.uniform)
    if lineage is not None or final is not None:
        built = dataclasses.replace(built, graph=(lineage or final).job.graph)
    config = TaskConfig(interruptible_timers=bool(interruptible), unaligned_checkpoints=scenario.unaligned,
                        callback_seconds=CALLBACK_SECONDS)
    spec = GraphJobSpec(built.graph, _elements(subject, scenario.points if points is None else points, scenario.drop,
                                               scenario.pace, scenario.parallelism, scenario.uniform),
                        _functions(built, interruptible), max_parallelism=built.max_parallelism,
                        checkpoint_interval=scenario.checkpoint_interval if checkpoints else 10**9, config=config,
                        channel_capacity=10**9 if eager or lineage is not None else 4,
                        async_mail_rate=scenario.mail_rate if mail_rate is None else mail_rate,
                        programs=built.programs, eager_sources=eager, processing_time="input",
                        restore_clock_gap=scenario.restart_gap,
                        forced_lineage=lineage.lineage if lineage is not None else None,
                        retained_checkpoints=None)  # coverage() and the restore offsets read them all
    rng = random.Random(scenario.seed)
    floats = float_writes()
    try:
        job = ObservedGraphJob(spec, None, random.Random(rng.random()))
        budget = max(10_000, STEPS_PER_ELEMENT * sum(len(elements) for elements in spec.sources))
        steps, applied, interrupted = run_schedule(job, rng, scenario.faults if faults is None else faults, budget)
    except SimulationError as e:
        return f"the job did not finish: {e}"
    except Exception as e:  # noqa: BLE001 - the user's code may raise anything: a verdict, not a crash
        return f"{type(e).__name__}: {' '.join(str(e).split())}{_where(e, subject.pipeline.file)}"
    raw = job.external.output()
    return JobRun(Counter(canonical(v) for v in raw), raw, job, steps, applied, interrupted,
                  [w for w, _, _ in subject.lanes(scenario.parallelism, scenario.uniform)], float_writes() > floats)


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


def fault_text(fault: Fault) -> str:
    if fault.kind == "fail_in_interrupted_firing":
        return f"failure inside interrupted firing #{fault.nth}" + (" after a checkpoint" if fault.after_checkpoint else "")
    if fault.kind == "rescale":
        return f"rescale to {fault.parallelism} at step {fault.at}" + (
            f" after {fault.checkpoints} checkpoints" if fault.checkpoints else "")
    return f"failure at step {fault.at}" + (f" after {fault.checkpoints} checkpoints" if fault.checkpoints else "")


def describe_scenario(subject: JobSubject, scenario: JobScenario) -> list[str]:
    """The scenario's choices, one line each, in the job's terms."""
    built = subject.built(scenario.parallelism, scenario.uniform)
    records = subject.source_records
    lanes = subject.lanes(scenario.parallelism, scenario.uniform)
    lines = []
    for s, op in enumerate(op for op in built.graph.sources for _ in range(op.parallelism)):
        w, j, stride = lanes[s]
        mine = list(range(j, len(records[w]), stride))
        points = [i for i in (scenario.points[w] if w < len(scenario.points) else ()) if i in mine]
        count = len(mine)
        where = "after every record" if len(points) == count and count else \
            "never (only the end of input's MAX_WATERMARK)" if not points else \
            "after records " + ", ".join(f"#{i} {records[w][i]!r}" for i in points)
        which = "its" if stride == 1 else f"one in {stride} (from #{j}: PyFlink runs the timestamp assigner at " \
            "the default parallelism after a rebalance) of its"
        lines.append(f"{op.name}[{s}]: {which} {count} records in the file's order; the watermark generator emits "
                     f"{where}")
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
    if scenario.restart_gap:
        lines.append(f"a restart takes {scenario.restart_gap} ms of processing time (wall-clock time goes on while "
                     "the job recovers: timers and state TTL see it)")
    lines += [f"fault: {fault_text(f)}" for f in scenario.faults] or ["no faults"]
    return lines


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
        how = {"keyed": "key_by", "forward": "forward", "rebalance": "rebalance", "broadcast": "broadcast"}
        edges = ", ".join(f"{how[e.partitioning]}{'[' + e.tag + ']' if e.tag else ''} from {e.source}"
                          for e in built.graph.inputs(op.name if op.kind != "sink" else f"{op.name}/tag"))
        line = f"{op.name} ({op.kind}{', keyed' if op.name in built.keyed else ''})"
        if node is not None and node.line:
            line += f" at {node.line}"
        if edges:
            line += f" <- {edges}"
        lines.append(line)
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

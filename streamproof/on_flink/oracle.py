"""Apache Flink as the second oracle of a job certification (docs/conformance.md, "Whole jobs on
Apache Flink").

Three measurements on the real engine, for the job as written with its own records:

1. failure-free runs (Flink's own schedules: how its sources, periodic watermark generators and
   network really interleave);
2. runs with one failure injected (a user function raises on its first attempt at its n-th element
   or timer; Flink restores the last completed checkpoint and runs on): each committed output must
   equal an output of a failure-free run of the same input (exactly-once, measured on Flink);
3. simulator fidelity: every failure-free output Flink produced must be one the simulator produces
   failure-free on the same input under some schedule Flink allows (watermark emission points,
   interleavings); one it cannot produce is a divergence of the simulator, reported.
"""

from __future__ import annotations

import itertools
import random
import time
from collections import Counter
from dataclasses import dataclass, field

import os

from streamproof.on_flink.runner import FlinkClient, FlinkRun, FlinkUnavailable, RunSpec, check_available

FAILURE_FREE_RUNS = 2
FAULT_RUNS = 6
FIDELITY_SCHEDULES = 40


@dataclass
class FaultResult:
    """One run with an injected failure: where, and how its committed output compares."""

    fault: tuple
    function: str
    injected: bool
    verdict: str         # "agrees", "agrees (simulator)", "differs", "failed", "not reached"
    detail: str = ""


@dataclass
class FlinkReport:
    """What running the job on Apache Flink showed."""

    version: str
    job: str
    parallelism: int
    failure_free: list = field(default_factory=list)   # FlinkRun
    faults: list = field(default_factory=list)         # FaultResult
    fidelity: list = field(default_factory=list)       # per distinct failure-free output: (producible, how)
    seconds: float = 0.0
    run_seconds: list = field(default_factory=list)
    mode: str = "thread"  # PyFlink's python.execution-mode the runs used

    @property
    def exactly_once(self) -> bool:
        return all(f.verdict.startswith("agrees") or f.verdict == "not reached" for f in self.faults)

    @property
    def faithful(self) -> bool:
        return all(ok for ok, _ in self.fidelity)

    def to_json(self) -> dict:
        return {"version": self.version, "job": self.job, "parallelism": self.parallelism,
                "failure_free_runs": len(self.failure_free), "distinct_failure_free_outputs": len(self.fidelity),
                "faults": [f.__dict__ for f in self.faults], "exactly_once": self.exactly_once,
                "simulator_produces_every_flink_output": self.faithful,
                "fidelity": [{"producible": ok, "how": how} for ok, how in self.fidelity],
                "python_execution_mode": self.mode, "seconds": round(self.seconds, 1), "seconds_per_run": [round(s, 1) for s in self.run_seconds]}


def _key(run: FlinkRun, sinks: int) -> tuple:
    """A run's committed output, comparable: per sink, its sorted values with counts."""
    outputs = list(run.outputs) + [Counter()] * (sinks - len(run.outputs))
    return tuple(tuple(sorted(o.items())) for o in outputs[:sinks])


def fault_points(run: FlinkRun, budget: int) -> list[tuple]:
    """Where to fail, from a failure-free run's call counts: each element-fed function at a third
    and two thirds of its calls, each firing function at its first and last firing; per function
    the kinds alternate (element, timer, element, timer), then round-robin over functions, at most
    ``budget`` points."""
    per_kind: dict = {}
    for (fid, kind), n in sorted(run.calls.items()):
        if n > 0:
            picks = (max(1, n // 3), max(1, 2 * n // 3)) if kind == "element" else (1, n)
            per_kind.setdefault(fid, []).append([(fid, kind, k) for k in dict.fromkeys(picks)])
    per_function = [[p for group in itertools.zip_longest(*kinds) for p in group if p is not None]
                    for _, kinds in sorted(per_kind.items())]
    points = [p for group in itertools.zip_longest(*per_function) for p in group if p is not None]
    return points[:budget]


def simulator_outputs(subject, parallelism: int, sink_names: list[str], wanted: set, budget: int,
                      seed: int = 0) -> tuple[set, dict]:
    """Failure-free outputs the simulator produces on the job's own input (every watermark point,
    none, each single point, then random point sets and schedules), until every ``wanted`` output
    is found or ``budget`` runs are done: (outputs found, output -> the schedule that gave it)."""
    from streamproof.properties.certify_job_checks import by_sink
    from streamproof.properties.certify_job_runs import JobScenario, simulate

    records = subject.source_records
    every = tuple(tuple(range(len(r))) for r in records)
    none = tuple(() for _ in records)
    candidates = [(every, "a watermark after every record"), (none, "no watermark before the end of input")]
    for s, rs in enumerate(records):
        for i in range(len(rs)):
            candidates.append((tuple((i,) if t == s else () for t in range(len(records))),
                               f"one watermark, after record {i} of source subtask {s}"))
    rng = random.Random(seed)
    while len(candidates) < budget:
        points = tuple(tuple(i for i in range(len(r)) if rng.random() < 0.3) for r in records)
        candidates.append((points, "watermarks after records " + str([list(p) for p in points])))
    found: dict = {}
    for n, (points, how) in enumerate(candidates[:budget]):
        for schedule in (0, 1):
            run = simulate(subject, JobScenario(points, parallelism, seed=schedule + 7 * n), faults=(),
                           checkpoints=False)
            if isinstance(run, str):
                continue
            sinks = by_sink(run)
            key = tuple(tuple(sorted(sinks.get(name, Counter()).items())) for name in sink_names)
            found.setdefault(key, f"{how}, schedule {schedule + 7 * n}")
        if wanted <= set(found):
            break
    return set(found), found


def sink_names(subject) -> list[str]:
    """The simulator's sink names in the order the job creates its sinks (the order on Flink)."""
    from streamproof.properties.certify_job_graph import _names

    names = _names(subject.pipeline)
    return [names[node.id] for node in subject.pipeline.sinks]


MODES = ("process", "thread")


def _failure_free(client: FlinkClient, job_file: str, parallelism: int, mode: str) -> tuple[list, str]:
    """The failure-free runs, as written and paced, in PyFlink's ``process`` mode (Beam workers,
    PyFlink's default), or in ``thread`` mode (Python in the JVM: a few seconds per run) falling
    back to process mode when the job does not run there (records of a class defined in the job's
    ``__main__``, which thread mode cannot unpickle)."""
    for mode in dict.fromkeys((mode, "process")):
        specs = [RunSpec(None, parallelism, paced=paced, execution_mode=mode) for paced in (False, True)]
        runs = client.run(job_file, specs)
        if not any(r.error for r in runs) or mode == "process":
            return runs, mode
    raise AssertionError("unreachable")


def run_on_flink(subject, job_file: str, parallelism: int = 2, faults: int = FAULT_RUNS,
                 time_limit: float = 600.0, progress=None, mode: str = "process") -> FlinkReport:
    """Run ``job_file`` (the file ``subject`` was captured from) on Apache Flink and compare.

    Failure-free: once as written (``from_collection`` emits its records at once: typically no
    watermark before the end of input) and once paced (one record per completed checkpoint, so
    checkpoints and periodic watermarks fall between records). With a failure: paced, the points
    from the paced run's call counts (:func:`fault_points`), so that the restore is from a
    checkpoint taken between records. ``mode``: PyFlink's ``python.execution-mode`` (:data:`MODES`;
    thread mode is faster, and cannot checkpoint a session window's merging state in 2.3)."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: one of {', '.join(MODES)}")
    started = time.monotonic()
    version = check_available()
    report = FlinkReport(version, job_file, parallelism)
    say = progress or (lambda text: None)
    say(f"Apache Flink {version}: failure-free runs (as written, and paced: a checkpoint between records)")
    try:
        return _run_on_flink(report, subject, job_file, parallelism, faults, time_limit, say, mode, started)
    except FlinkUnavailable as e:
        report.seconds = time.monotonic() - started
        e.partial = report  # what ran before: kept by the caller
        raise


def _run_on_flink(report: FlinkReport, subject, job_file: str, parallelism: int, faults: int, time_limit: float,
                  say, mode: str, started: float) -> FlinkReport:
    with FlinkClient(os.path.dirname(os.path.abspath(job_file)), time_limit) as client:
        free, mode = _failure_free(client, job_file, parallelism, mode)
        report.mode = mode
        report.failure_free = free
        report.run_seconds += [r.seconds for r in free]
        broken = [r for r in free if r.error or not r.executed]
        if broken:
            report.faults.append(FaultResult((), "", False, "failed", "failure-free run failed on Flink: "
                                             f"{broken[0].error or 'the job never called execute()'}"))
            report.seconds = time.monotonic() - started
            return report
        paced = free[-1]
        points = fault_points(paced, faults)
        say(f"{len(points)} paced runs with a failure injected")
        faulty = client.run(job_file, [RunSpec(p, parallelism, paced=True, execution_mode=mode)
                                       for p in points]) if points else []
    report.run_seconds += [r.seconds for r in faulty]
    names = sink_names(subject)
    sinks = len(names)  # the sinks of the first execute(), the job certify captured (later ones never run)
    outputs = {_key(r, sinks) for r in free}
    say("the simulator on the same input")
    wanted = set(outputs) | {_key(r, sinks) for r in faulty if r.injected and not r.error}
    _, simulated = simulator_outputs(subject, parallelism, names, wanted, FIDELITY_SCHEDULES)
    for output in sorted(outputs):
        how = simulated.get(output)
        report.fidelity.append((how is not None, how or _closest(output, simulated)))
    for r in faulty:
        function = paced.functions[r.spec.fault[0]] if r.spec.fault[0] < len(paced.functions) else "?"
        got = _key(r, sinks)
        if r.error:
            verdict, detail = "failed", r.error
        elif not r.injected:
            verdict, detail = "not reached", "the call was never made: no failure injected"
        elif got in outputs:
            verdict, detail = "agrees", "equals a failure-free output of Flink"
        elif got in simulated:
            verdict, detail = "agrees (simulator)", f"equals a failure-free output the simulator gives ({simulated[got]})"
        else:
            verdict, detail = "differs", _difference(got, outputs)
        report.faults.append(FaultResult(r.spec.fault, function, r.injected, verdict, detail))
    report.seconds = time.monotonic() - started
    return report


def _as_counter(output_sink: tuple) -> Counter:
    return Counter(dict(output_sink))


def _difference(got: tuple, outputs: set) -> str:
    """What ``got`` committed beyond, or lacks from, the nearest failure-free output."""
    best = None
    for want in outputs:
        parts = []
        for i, (g, w) in enumerate(zip(got, want)):
            extra, missing = _as_counter(g) - _as_counter(w), _as_counter(w) - _as_counter(g)
            if extra:
                parts.append(f"sink {i} committed {', '.join(list(extra)[:3])}")
            if missing:
                parts.append(f"sink {i} missing {', '.join(list(missing)[:3])}")
        size = sum(len(p) for p in parts)
        if best is None or size < best[0]:
            best = (size, "; ".join(parts))
    return best[1] if best else ""


def _closest(output: tuple, simulated: dict) -> str:
    if not simulated:
        return "the simulator finished no run"
    return "no schedule tried gives it; nearest: " + _difference(output, set(simulated))

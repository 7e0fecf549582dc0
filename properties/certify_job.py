"""Certification of a whole PyFlink job as its author wrote it (``streamproof certify job.py``,
docs/certify.md "Certifying a job"): the plan of scenarios, coverage per operator and the
certificate. The job and its runs are :mod:`streamproof.properties.certify_job_runs`, the
properties on one scenario :mod:`streamproof.properties.certify_job_checks`. What the exploration
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
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from streamproof.impl.graph.sim import Fault
from streamproof.properties.job.steps import RESTART_GAP  # noqa: F401 - plan() reads it here (tests patch it)
from streamproof.properties.certify_job_checks import (  # noqa: F401 - replay_job for the CLI
    EVERY_CHANCE, Outcome, end_of_input, interruptible_timers, replay_job, same_output, watermarks,
)
from streamproof.properties.certify_job_graph import BuiltJob
from streamproof.properties.certify_job_runs import (  # noqa: F401 - the CLI's names, from one module
    JobCertifyError, JobRun, JobScenario, JobSubject, describe_pipeline, given_records, is_job_scenario,
    load_job, load_scenario, simulate,
)

PROPERTIES = ("job.same-output", "job.interruptible-timers", "job.watermarks", "job.end-of-input")
FAILURE_POINTS = 8        # failures spread over a failure-free run's steps, per plan
FAST_CLOCK = 10**6        # a source clock pace far beyond any timer delay: every timer due at the next record
PACES = (1, 10, 100, 1000, FAST_CLOCK)
DEFAULT_EXAMPLES = 50     # random scenarios after the plan
NOT_APPLICABLE = "not applicable"


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
    from streamproof.impl.timers.snapshot_format import decode_snapshot

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
                if len(paces) > 1 and pace == 1:  # processing time goes on while the job restarts
                    yield "failure", JobScenario(points, p, (Fault("fail", at=at),), interval, seed=k, pace=pace,
                                                 restart_gap=RESTART_GAP)
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
    """Whether a keyed function of the job reads processing time or registers processing-time
    timers, read from the files its code comes from (a class defined in the job's file included;
    ``inspect.getsource`` cannot find those once the capture forgot the job's modules)."""
    files = set()
    for node in subject.pipeline.nodes:
        if node.function is None or node.key_selector is None:
            continue
        function = node.function
        code = getattr(function, "__code__", None)
        if code is not None:
            files.add(code.co_filename)
        for attribute in vars(type(function)).values():
            code = getattr(attribute, "__code__", None)
            if code is not None:
                files.add(code.co_filename)
    for path in files:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError:
            return True  # unknown: vary the clock
        if "processing_time" in text or "enable_time_to_live" in text:  # timers, clocks, state TTL
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
    on_flink: Any = None  # the report of the job's runs on Apache Flink (streamproof.on_flink), when asked for

    @property
    def holds(self) -> bool:
        flink = self.on_flink is None or self.on_flink.exactly_once
        return flink and all(r["verdict"] in ("held", NOT_APPLICABLE) for r in self.results.values())

    @property
    def status(self) -> str:
        if any(r["verdict"] == "failed" for r in self.results.values()):
            return "not certified"
        if self.on_flink is not None and not self.on_flink.exactly_once:
            return "not certified (on Apache Flink)"
        if any(r["verdict"] == "not exercised" for r in self.results.values()):
            return "not exercised"
        return "certified"

    def to_json(self) -> dict:
        return {"job": self.target, "status": self.status, "certified": self.holds, "pipeline": self.pipeline,
                "results": self.results, "coverage": {k: dict(v) for k, v in self.coverage.items()},
                "operators": self.operators, "findings": self.findings, "notes": self.notes,
                "scenarios": self.scenarios, "seconds": round(self.seconds, 2),
                "counterexamples": {k: v.to_json() for k, v in self.counterexamples.items()}}


def certify_job(subject: JobSubject, examples: int = 100, seed: int = 0,
                progress: Callable[[str, int], None] | None = None, until_failed: str | None = None) -> JobCertificate:
    """The job's certificate: the plan, then ``examples`` random scenarios (see :func:`plan`);
    ``until_failed``: stop as soon as that property has a counterexample."""
    from streamproof.impl.operators.user_code import release_callback_watchdog

    try:
        return _certify_job(subject, examples, seed, progress, until_failed)
    finally:
        release_callback_watchdog()  # SIGALRM back to whoever had it (pytest-timeout, the interpreter's exit)


def _certify_job(subject: JobSubject, examples: int, seed: int, progress, until_failed: str | None) -> JobCertificate:
    start = time.monotonic()
    results = {prop: {"verdict": "held", "scenarios": 0, "message": ""} for prop in PROPERTIES}
    reached: dict = {}
    findings: Counter = Counter()
    counterexamples: dict = {}
    count = 0
    for what, scenario in plan(subject, examples, seed):
        if until_failed in counterexamples:
            break
        count += 1
        if progress is not None:
            progress(what, count)
        built = subject.built(scenario.parallelism, scenario.uniform)
        if what == "split":
            if "job.interruptible-timers" not in counterexamples:
                outcome = interruptible_timers(subject, scenario)
                _record(results, counterexamples, findings, "job.interruptible-timers", scenario, outcome)
            run = simulate(subject, scenario, faults=(), eager=True, mail_rate=EVERY_CHANCE, checkpoints=False)
            if not isinstance(run, str):  # the split run is a run of the job: its watermarks and end too
                coverage(run, built, reached)
                split = dataclasses.replace(scenario, eager=True, mail_rate=EVERY_CHANCE)
                _record(results, counterexamples, findings, "job.watermarks", split, watermarks(run))
                _record(results, counterexamples, findings, "job.end-of-input", split, end_of_input(run))
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

"""The certification properties of a user's operator, their reference runs, diagnosis and coverage
(docs/certify.md).

**The reference is Flink's exactly-once promise**: the committed output must equal the output of
*some* failure-free run that consumes the same input. A job's failure-free runs differ only in how
its parallel inputs interleave (the schedule) and, with interruptible timers, where a firing is
split. For each scenario the reference set is the failure-free runs under the scenario's schedule
and two others, each with interruptible timers on and off. ``certify.same-output`` holds when the
committed output is one of them. When the failure-free runs disagree among themselves and the
committed output matches none, the operator depends on arrival order (a finding, reported apart,
never blamed on a fault); when they agree and it matches none, a fault changed the output: the
counterexample is re-run with one cause at a time to say which.

``certify.interruptible-timers`` is the FLIP-443 question on its own: the same input in the same
schedule, firings split by interruptible timers or not, gives the same output.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from functools import lru_cache
from typing import Any

from streamproof.impl.job import JobSpec
from streamproof.impl.sim import Fault, SimulationResult, simulate
from streamproof.properties.bugzoo import clears_on_patch
from streamproof.properties.job import check as job_check
from streamproof.properties.job.functions import FUNCTIONS
from streamproof.properties.job.steps import faults_of, job_params, sources_of, task_config
from streamproof.properties.job.values import canonical, encode
from streamproof.properties.reach import note
from streamproof.properties.scenario import Scenario, dump_scenario, load_scenario
from streamproof.properties.verdict import Verdict

OTHER_SCHEDULES = 7      # failure-free schedules besides the scenario's own (made only when needed)
SPLIT_MAIL_RATE = 0.8    # foreign mail while a timer fires: how often interruptible firings split
# the split schedules every input is tried under: (mail rate, schedule): foreign mail at every
# chance (every timer a part of its own), then at random points under two schedules
SPLIT_PLANS = ((1.0, 0), (SPLIT_MAIL_RATE, 0), (SPLIT_MAIL_RATE, 1))
CALLBACK_SECONDS = 5.0   # a user callback running longer is stopped with one line

FINDING_ARRIVAL_ORDER = "finding: output depends on arrival order"
FINDING_LATE = "finding: output for late records depends on timing"
COVERAGE = (
    "timer fired before end of input",
    "timer firing interrupted",
    "record of a due key inside a split firing",
    "timer changed inside a split firing",
    "failure after a checkpoint",
    "restore with pending timers",
    "failure inside an interrupted firing",
    "rescaled restore",
    "late record",
    "side output",
    "non-empty output",
)
# what the runs of a property must have reached before it may say "held" (else "not exercised")
TIMERS_USED = "timer fired"                           # any timer, end of input included
EVENT_TIMERS_MID_STREAM = "event-time timer fired before end of input"
SPLIT_CASE = "record of a due key inside a split firing"


def required(prop: str, reached: dict) -> list[str]:
    """The cases ``prop``'s scenarios must have exercised for a certificate that says something:
    output always; for an operator with timers, a timer before end of input; for same-output, a
    failure after a checkpoint (state restored), with pending timers when it has timers; for
    interruptible-timers, when event-time timers fire mid-stream, a record of a key whose timer
    was due running between two parts of a split firing (the only way FLIP-443 changes an
    output). ``reached``: case -> scenarios that reached it."""
    needed = ["non-empty output"]
    timers = bool(reached.get(TIMERS_USED))
    if timers:
        needed.append("timer fired before end of input")
    if prop == "certify.same-output":
        needed.append("failure after a checkpoint")
        if timers:
            needed.append("restore with pending timers")
    if prop == "certify.interruptible-timers" and reached.get(EVENT_TIMERS_MID_STREAM):
        needed.append(SPLIT_CASE)
    return needed


def _spec(scenario: Scenario, interruptible: bool, mail_rate: float | None = None, lineage: list | None = None) -> JobSpec:
    if lineage is None:
        spec = _job_spec(scenario, interruptible, mail_rate)
        return dataclasses.replace(spec, config=dataclasses.replace(spec.config, callback_seconds=CALLBACK_SECONDS))
    # a failure-free replay of a run's lineage: no back-pressure, no checkpoints
    # at the parallelism the lineage was recorded at (a rescale before the first completed
    # checkpoint restarted the job from scratch at the new parallelism)
    spec = _spec(scenario, interruptible, mail_rate)
    return dataclasses.replace(spec, forced_lineage=lineage, channel_capacity=10**9, checkpoint_interval=10**9,
                               parallelism=len(lineage))


def _job_spec(scenario: Scenario, interruptible: bool, mail_rate: float | None) -> JobSpec:
    params = job_params(scenario)
    return JobSpec(sources_of(scenario), FUNCTIONS[params["operator"]], parallelism=params["parallelism"],
                   max_parallelism=params["max_parallelism"], checkpoint_interval=params["checkpoint_interval"],
                   config=task_config(params, interruptible), channel_capacity=params["channel_capacity"],
                   async_mail_rate=params["async_mail_rate"] if mail_rate is None else mail_rate,
                   processing_time=params["processing_time"])


def _run(scenario: Scenario, interruptible: bool, seed: int, faults: tuple = (),
         mail_rate: float | None = None, lineage: list | None = None) -> SimulationResult | str:
    try:
        return simulate(_spec(scenario, interruptible, mail_rate, lineage), seed, faults)
    except Exception as e:  # noqa: BLE001 - the user's code may raise anything: a verdict, not a crash
        return f"{type(e).__name__}: {' '.join(str(e).split())}"


class Runs:
    """The runs of one scenario, each made on first use (a correct operator needs three)."""

    def __init__(self, scenario: Scenario):
        self.scenario = scenario
        seed = job_params(scenario)["seed"]
        self.seeds = [seed] + [seed * 7919 + k + 1 for k in range(OTHER_SCHEDULES)]
        self._cache: dict = {}

    def _get(self, key, make):
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    @property
    def faulty(self):
        """Interruptible timers on, the scenario's faults and schedule."""
        return self._get("faulty", lambda: _run(self.scenario, True, self.seeds[0], faults_of(self.scenario)))

    def off(self, i: int):
        """Failure-free, interruptible timers off, schedule ``i`` (0: the scenario's)."""
        return self._get(("off", i), lambda: _run(self.scenario, False, self.seeds[i]))

    def on(self, i: int):
        """Failure-free, interruptible timers on, schedule ``i``."""
        return self._get(("on", i), lambda: _run(self.scenario, True, self.seeds[i]))

    def splits(self):
        """Failure-free runs of the input in exactly ``off(0)``'s order (its lineage), timer firings
        split by interruptible timers (FLIP-443): first at every chance (each timer a part of its
        own, one input element between two parts, as Flink's mailbox allows), then at random
        points (:data:`SPLIT_MAIL_RATE`) under :data:`SPLIT_SCHEDULES` seeds. Made one by one."""
        base = self.off(0)
        if isinstance(base, str) or base.lineage is None:
            return
        for plan in SPLIT_PLANS:
            yield self._get(("split", plan), lambda: _run(self.scenario, True, self.seeds[plan[1]],
                                                         mail_rate=plan[0], lineage=base.lineage))

    def lineage(self, interruptible: bool, mail_rate: float | None = None, k: int = 0):
        """Failure-free, each task consuming its input in the order the faulty run's committed
        state and output did (its lineage): the failure-free run Flink's promise points at; with
        ``mail_rate``, its firings split as :meth:`splits` splits them. None when the faulty run has
        no lineage (a rescale merged tasks) or did not finish."""
        def make():
            if isinstance(self.faulty, str) or self.faulty.lineage is None:
                return None
            return _run(self.scenario, interruptible, self.seeds[k], mail_rate=mail_rate, lineage=self.faulty.lineage)
        return self._get(("lineage", interruptible, mail_rate, k), make)

    def lineage_references(self):
        """The failure-free runs in the faulty run's lineage: timers not split, then split."""
        yield self.lineage(False)
        yield self.lineage(True)
        for rate, k in SPLIT_PLANS:
            yield self.lineage(True, rate, k)

    def references(self):
        """Failure-free runs, the likeliest match first (made one by one as they are needed)."""
        yield self.off(0)
        yield self.on(0)
        for i in range(1, len(self.seeds)):
            yield self.off(i)
            yield self.on(i)


@lru_cache(maxsize=256)
def _runs(text: str) -> Runs:
    return Runs(load_scenario(text))


clears_on_patch(_runs.cache_clear)


def runs(scenario: Scenario) -> Runs:
    return _runs(dump_scenario(scenario))


def output(run: SimulationResult) -> Counter:
    """The committed output as a multiset compared by value (lists, NaN, sets: see job/values.py)."""
    return Counter(canonical(v) for v in run.committed)


def _first_error(*candidates) -> str | None:
    return next((c for c in candidates if isinstance(c, str)), None)


def _difference(got: Counter, want: Counter) -> str:
    def shown(items) -> str:
        return "[" + ", ".join(readable(c) for c in sorted(items)[:3]) + "]"
    return f"extra {shown(got - want)}, missing {shown(want - got)}"


def readable(text: str) -> str:
    """A canonical output shown as the value it stands for."""
    import json

    from streamproof.properties.job.values import decode

    data = json.loads(text)
    if isinstance(data, dict) and "$repr" in data:
        return data["$repr"][1]
    try:
        return repr(decode(data))
    except Exception:  # noqa: BLE001 - e.g. a Row without streamproof.flink
        return text


def observed_of(run: SimulationResult) -> list[dict]:
    """The faulty run as observations: committed outputs (encoded, any shape), then job events."""
    return [{"event": "committed", "record": _plain(v)} for v in run.committed] + \
           [{"event": e[0], "detail": [_plain(x) for x in e[1:]]} for e in run.events]


def _plain(value: Any) -> Any:
    try:
        return encode(value)
    except ValueError:
        return repr(value)


# -- coverage ------------------------------------------------------------------------------
def cover(run: SimulationResult) -> None:
    """Notes the cases ``run`` exercised (:data:`COVERAGE`): only what can change an output."""
    if run.timers_before_end or run.event_timers_fired:
        note(TIMERS_USED)
    if run.timers_before_end:
        note("timer fired before end of input")
    if run.event_timers_before_end:
        note(EVENT_TIMERS_MID_STREAM)
    if run.split_records:
        note("timer firing interrupted")  # a record ran between two parts of a firing
    if run.split_due_key_records:
        note(SPLIT_CASE)
    if run.split_timer_changes:
        note("timer changed inside a split firing")
    if any(e[0] == "failover" and e[3] is not None for e in run.events):
        note("failure after a checkpoint")
    if run.restored_timers:
        note("restore with pending timers")
    for fault in run.faults_applied:
        if fault.kind == "fail_in_interrupted_firing":
            note("failure inside an interrupted firing")
        elif fault.kind == "rescale":
            note("rescaled restore")
    if run.late_records:
        note("late record")
    if run.side_outputs:
        note("side output")
    if run.committed:
        note("non-empty output")


# -- diagnosis -----------------------------------------------------------------------------
def diagnose(scenario: Scenario, references: list[Counter]) -> str:
    """Re-runs the counterexample with one cause at a time; says which reproduces the difference."""
    seed, faults = job_params(scenario)["seed"], faults_of(scenario)
    causes = []
    for fault in faults:
        alone = _run(scenario, True, seed, (fault,))
        if not isinstance(alone, str) and output(alone) not in references:
            causes.append(f"{_fault_text(fault)} alone reproduces it")
    if faults and not causes:
        without_split = _run(scenario, False, seed, faults)
        if not isinstance(without_split, str) and output(without_split) in references:
            causes.append("the faults together with interruptible timers (without interruptible timers the "
                          "output is right)")
        else:
            causes.append("only the faults together reproduce it")
    return "; ".join(causes) or "no single cause isolated"


def _fault_text(fault: Fault) -> str:
    if fault.kind == "fail":
        return f"the failure at step {fault.at}"
    if fault.kind == "rescale":
        return f"the rescale to {fault.parallelism} at step {fault.at}"
    return f"the failure inside interrupted firing #{fault.nth}"


# -- late records --------------------------------------------------------------------------
def without_late(scenario: Scenario) -> Scenario | None:
    """The scenario without the records that are late in their own source (at or below a
    watermark it sent before), or None when it has none. What a late record does depends on when
    it meets the timers (Flink promises nothing there), so a difference that goes away without
    them is a finding about late data, not a fault."""
    from streamproof.properties.job.steps import Record, SourceWatermark, UserRecord

    kept, last, dropped = [], {}, False
    for step in scenario.steps:
        if isinstance(step, SourceWatermark):
            last[step.source] = max(step.ts, last.get(step.source, step.ts))
        elif isinstance(step, (Record, UserRecord)) and step.source in last and step.ts <= last[step.source]:
            dropped = True
            continue
        kept.append(step)
    if not dropped:
        return None
    return dataclasses.replace(scenario, steps=tuple(kept))


def _late_only(scenario: Scenario, check) -> bool:
    """Does ``check`` hold once the late records are gone? (Then the failure was theirs.)"""
    clean = without_late(scenario)
    if clean is None or check(clean, runs(clean)) is not None:
        return False
    note(FINDING_LATE)
    return True


# -- the properties ------------------------------------------------------------------------
def _same_output(scenario: Scenario, r: Runs):
    if isinstance(r.off(0), str):
        return "failure-free-run-finishes", f"the operator fails without any fault: {r.off(0)}"
    if isinstance(r.faulty, str):
        return "job-finishes", r.faulty
    cover(r.faulty)
    got = output(r.faulty)
    if got == output(r.off(0)):
        return None
    problem, references = _matches_lineage(r.faulty, r.lineage_references())
    if problem is None:
        return None
    if problem == "no lineage":  # a rescale merged tasks: the failure-free runs of other schedules
        problem, references = _matches_lineage(r.faulty, r.references())
        if problem is None:
            return None
        if _order_sensitive(r):
            note(FINDING_ARRIVAL_ORDER)
            return None  # no fault to blame: the failure-free runs disagree among themselves (a finding)
    if isinstance(problem, tuple):
        return problem
    if _split_sensitive(r):
        # where firings split changes this input's output (certify.interruptible-timers refuses
        # that): exactly-once is then judged with interruptible timers off, faults as they were
        return _same_output_unsplit(r)
    if _late_only(scenario, _same_output):
        return None
    return ("same-output-as-a-failure-free-run",
            f"the committed output matches no failure-free run of the same input"
            f"{' in the same order' if r.faulty.lineage is not None else ''}: {_difference(got, references[0])}")


def _matches_lineage(faulty: SimulationResult, candidates):
    """(None, refs) when the faulty run's output is one of ``candidates`` (failure-free runs, made
    lazily); ("no lineage", []) when there are none; a problem tuple when one of them fails;
    else ("different", refs)."""
    got, references = output(faulty), []
    for run in candidates:
        if run is None:
            return "no lineage", references
        if isinstance(run, str):
            return ("failure-free-run-finishes", f"the operator fails without any fault: {run}"), references
        references.append(output(run))
        if got == references[-1]:
            return None, references
    return "different", references


def _same_output_unsplit(r: Runs):
    """Exactly-once with interruptible timers off: the faulty run's faults, firings never split,
    against the failure-free run in its own lineage."""
    faulty = r._get("faulty-unsplit", lambda: _run(r.scenario, False, r.seeds[0], faults_of(r.scenario)))
    if isinstance(faulty, str):
        return "job-finishes", faulty
    if faulty.lineage is None:
        return None  # merged by a rescale: no single order to compare with (see docs/certify.md)
    reference = r._get("faulty-unsplit-reference",
                       lambda: _run(r.scenario, False, r.seeds[0], lineage=faulty.lineage))
    if isinstance(reference, str):
        return "failure-free-run-finishes", f"the operator fails without any fault: {reference}"
    if output(faulty) == output(reference):
        return None
    return ("same-output-as-a-failure-free-run",
            "with interruptible timers off, the committed output matches no failure-free run of the same input "
            f"in the same order: {_difference(output(faulty), output(reference))}")


def _split_sensitive(r: Runs) -> bool:
    """Does splitting firings change the output of this input (in a failure-free order)?"""
    base = r.off(0)
    return any(not isinstance(x, str) and output(x) != output(base) for x in r.splits())


def explain(scenario: Scenario) -> str:
    """The cause of a same-output counterexample (re-runs it one cause at a time)."""
    r = runs(scenario)
    lineage = [x for x in (r.lineage(False), r.lineage(True)) if x is not None and not isinstance(x, str)]
    references = [output(x) for x in lineage] or [output(x) for x in r.references() if not isinstance(x, str)]
    return diagnose(scenario, references)


def _order_sensitive(r: Runs) -> bool:
    """Do failure-free runs of the same input (timers never split) differ between schedules?"""
    outputs = [r.off(i) for i in range(len(r.seeds))]
    return len({canonical(sorted(output(x).items())) for x in outputs if not isinstance(x, str)}) > 1


def _interruptible(scenario: Scenario, r: Runs):
    """FLIP-443 on its own: the input in one failure-free order, timers never split, against the
    same input in the same order with firings split (:meth:`Runs.splits`). No finding excuses a
    difference here: the order is fixed, so only the splits can have made it."""
    base = r.off(0)
    if isinstance(base, str):
        return "failure-free-run-finishes", f"the operator fails without any fault: {base}"
    for split in r.splits():
        if isinstance(split, str):
            return ("same-output-with-split-firings",
                    f"with timer firings split (FLIP-443) the operator fails on input it handles unsplit: {split}")
        cover(split)
        if output(split) != output(base):
            return ("same-output-with-split-firings",
                    f"splitting timer firings (FLIP-443) changes the output: "
                    f"{_difference(output(split), output(base))} ({split.interrupted_firings_seen} interrupted "
                    f"firings, {split.split_due_key_records} records of a key whose timer was due ran between "
                    f"their parts; the same input in the same order)")
    return None


def _on_faulty(check):
    def run(scenario: Scenario, r: Runs):
        if isinstance(r.faulty, str):
            return "job-finishes", r.faulty
        cover(r.faulty)
        problem = check(r.faulty, None)
        if problem and r.faulty.late_records and _late_only(scenario, run):
            return None  # a late record's timer fires behind the watermark: the operator's choice
        return problem
    return run


CHECKS = {
    "certify.same-output": _same_output,
    "certify.interruptible-timers": _interruptible,
    "certify.watermarks": _on_faulty(job_check.CHECKS["job.watermarks"]),
    "certify.end-of-input": _on_faulty(job_check.CHECKS["job.end-of-input"]),
}

SUMMARIES = {
    "certify.same-output": "the committed output equals the output of a failure-free run of the same input",
    "certify.interruptible-timers": "splitting timer firings (FLIP-443) does not change the output",
    "certify.watermarks": "per attempt, watermarks increase and no event-time timer output trails its watermark",
    "certify.end-of-input": "MAX_WATERMARK before EndOfData, nothing after it, interrupted firings progress",
}


def check(prop: str, scenario: Scenario) -> Verdict:
    r = runs(scenario)
    problem = CHECKS[prop](scenario, r)
    observed = observed_of(r.faulty) if prop != "certify.interruptible-timers" and not isinstance(r.faulty, str) else []
    if problem:
        return Verdict(prop, False, observed, problem[0], problem[1])
    return Verdict(prop, True, observed)

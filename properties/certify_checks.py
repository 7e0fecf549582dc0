"""The certification properties of a user's operator, their diagnosis and coverage (docs/certify.md);
the runs they compare are :mod:`streamproof.properties.certify_runs`, what late records, watermarks
and timer ties explain :mod:`streamproof.properties.certify_late`.

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

from streamproof.flink.common.typeinfo import floats_rounded, floats_rounded_on_write
from streamproof.impl.state.key_groups import assign_to_key_group, compute_operator_index_for_key_group
from streamproof.impl.operators.keyed_process_operator import KeyedProcessFunction, StreamRecord
from streamproof.impl.operators.user_clock import wall_clock_frozen, wall_clock_is_frozen
from streamproof.impl.graph.sim import Fault, SimulationResult
from streamproof.properties import certify_runs  # _histories_hold_the_input read there (the bug zoo patches it)
from streamproof.properties.certify_late import (
    FINDING_LATE, _late_only, _matches_delayed_watermarks, _matches_regenerated_watermarks, _ticked,
    _tie_order_only, without_late,
)
from streamproof.properties.certify_runs import (
    Runs, _difference, _faulty_split_sensitive, _faulty_unsplit, _matches_history, _matches_lineage,
    _order_sensitive, _run, _split_sensitive, _unsplit_is_exactly_once, history_reference, observed_of,
    output, readable, runs,
)
from streamproof.properties.job import check as job_check
from streamproof.properties.job.functions import FUNCTIONS
from streamproof.properties.job.steps import faults_of, job_params, sources_of
from streamproof.properties.job.values import canonical
from streamproof.properties.reach import note
from streamproof.properties.scenario import Scenario
from streamproof.properties.verdict import Verdict

FINDING_ARRIVAL_ORDER = "finding: output depends on arrival order"
# processing time passing while the job restarts (TTL state expired, processing-time timers came
# due): a failure-free run whose input paused that long commits it too (docs/decisions.md)
FINDING_RESTART_TIME = "finding: output depends on how long a restart takes (processing time)"
# a split firing ends later in processing time and the output reads the clock (a wall-clock stamp):
# with processing time standing still the split and unsplit runs agree (docs/decisions.md)
FINDING_PROCESSING_TIME = "finding: output depends on the processing time timers fire at"
# a replay after a restore reads the clock at other times (a datetime.now() stamp): with the wall
# clock the callbacks read frozen, the committed output is a failure-free run's (docs/decisions.md)
FINDING_WALL_CLOCK = "finding: output depends on the wall-clock time callbacks read"
# PyFlink's state cache hands back the double written to Types.FLOAT() state; a restore reads it
# back in single precision (docs/decisions.md)
FINDING_FLOAT_STATE = "finding: output depends on Types.FLOAT() state precision across a restore"
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
SNAPSHOT_WITH_TIMERS = "checkpoint taken while timers were pending"
# the runtime's own bookkeeping across a restore, checked on every restored run (issue 31)
RESTORED_LINEAGE = "restore whose lineage must hold inherited input"
RESTORED_CLOCK = "restore whose processing-time clock was checked"


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
        if reached.get(SNAPSHOT_WITH_TIMERS):  # reachable with this input: a checkpoint held timers
            needed.append("restore with pending timers")
    if prop == "certify.interruptible-timers" and reached.get(EVENT_TIMERS_MID_STREAM):
        needed.append(SPLIT_CASE)
    return needed


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
    if run.snapshots_with_timers:
        note(SNAPSHOT_WITH_TIMERS)
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


# -- late records across a restore (it judges with _same_output; the other matchers: certify_late) --
def _late_records_across_a_restore(scenario: Scenario, r: Runs, interruptible: bool = True) -> bool:
    """Is the difference only what Flink's restore does to late records? Flink does not checkpoint
    watermarks: after a restore the operator's watermark starts again at Long.MIN_VALUE, so a
    replayed record that was late before can be on time (an operator that reads
    ``current_watermark()`` to drop late data treats it as new). Checked, not assumed: (1) without
    its late records the same scenario holds, and (2) the same faults on a counterfactual runtime
    that restores the watermark with the state give a failure-free run's output. A fault of the
    runtime or of the operator shows in (1) or (2)."""
    if without_late(scenario) is None and without_late(_ticked(scenario, r.faulty)) is None:
        return False
    if not any(_same_output(clean, runs(clean)) is None for clean in
               (without_late(scenario), without_late(_ticked(scenario, r.faulty))) if clean is not None):
        return False
    faulty = r._get(("faulty-watermarks-restored", interruptible), lambda: _run(
        r.scenario, interruptible, r.seeds[0], faults_of(r.scenario), restore_watermarks=True))
    if isinstance(faulty, str):
        return False
    got = output(faulty)
    if _matches_history(scenario, faulty, got):
        return True
    if faulty.lineage is not None:
        candidates = (_run(r.scenario, i, r.seeds[0], lineage=faulty.lineage) for i in (False, True))
    else:  # merged by a rescale: the failure-free runs of every schedule
        candidates = r.references()
    return any(not isinstance(x, str) and output(x) == got for x in candidates)


# -- the properties ------------------------------------------------------------------------
def _same_output(scenario: Scenario, r: Runs):
    problem = _same_output_as_run(scenario, r)
    if problem is not None and scenario.params.get("restart_gap"):
        instant = dataclasses.replace(scenario, params={**scenario.params, "restart_gap": 0})
        other = runs(instant)
        if (isinstance(other.faulty, str) or isinstance(r.faulty, str) or output(other.faulty) != output(r.faulty)) \
                and _same_output(instant, other) is None:
            note(FINDING_RESTART_TIME)
            return None  # the restart's processing time alone made the difference (a finding)
    if problem is not None and not wall_clock_is_frozen():
        with wall_clock_frozen():
            still = _same_output(scenario, runs(scenario))
        if still is None:
            note(FINDING_WALL_CLOCK)
            return None  # only the wall-clock time the callbacks read differed (a finding)
    if problem is not None and getattr(r, "wrote_floats", True) and not floats_rounded():
        with floats_rounded_on_write():  # no state cache: Types.FLOAT() state single precision from the write on
            rounded = _same_output_as_run(scenario, runs(scenario))
        if rounded is None:
            note(FINDING_FLOAT_STATE)
            return None  # only FLOAT state read back in single precision after a restore differed
    return problem


def _same_output_as_run(scenario: Scenario, r: Runs):
    if not isinstance(r.faulty, str) and not r.faulty.faults_applied:
        cover(r.faulty)
        return None  # no fault took effect: the run is itself a failure-free run of this input
    if isinstance(r.off(0), str):
        return "failure-free-run-finishes", f"the operator fails without any fault: {r.off(0)}"
    if isinstance(r.faulty, str):
        return "job-finishes", r.faulty
    cover(r.faulty)
    problem = _lineage_forgets_input(scenario, r.faulty) or _restored_clock_differs(scenario, r)
    if problem is not None:
        return problem
    got = output(r.faulty)
    if got == output(r.off(0)):
        return None
    if _matches_history(scenario, r.faulty, got):
        # each key group's committed output is its failure-free run's (the operator alone per key
        # group: tried before the lineage's job runs, which cost ten times as much)
        return None
    if _unsplit_is_exactly_once(r, got):
        return None
    problem, references = _matches_lineage(r.faulty, r.lineage_references())
    if problem is None:
        return None
    if problem == "no lineage":  # a rescale merged tasks: the failure-free runs of other schedules
        if r.faulty.late_records and not (_split_sensitive(r) or _faulty_split_sensitive(r)) \
                and _late_records_across_a_restore(scenario, r):
            # tried before the sixteen failure-free runs of every schedule (its counterfactual
            # run's histories usually decide it): the verdict the flow below ends in, found sooner
            # (a split-sensitive input is judged with firings never split first, as below)
            note(FINDING_LATE)
            return None
        problem, references = _matches_lineage(r.faulty, r.references())
        if problem is None:
            return None
        if _order_sensitive(r):
            note(FINDING_ARRIVAL_ORDER)
            return None  # no fault to blame: the failure-free runs disagree among themselves (a finding)
    if isinstance(problem, tuple):
        return problem
    if _split_sensitive(r) or _faulty_split_sensitive(r):
        # where firings split changes this input's output (certify.interruptible-timers judges
        # that): exactly-once is then judged with interruptible timers off, faults as they were
        return _same_output_unsplit(scenario, r)
    if _matches_regenerated_watermarks(scenario, r, got):
        return None
    if _matches_delayed_watermarks(scenario, r, got) or _late_records_across_a_restore(scenario, r):
        note(FINDING_LATE)
        return None
    if _tie_order_only(r, interruptible=True):
        return None
    return ("same-output-as-a-failure-free-run",
            f"the committed output matches no failure-free run of the same input"
            f"{' in the same order' if r.faulty.lineage is not None else ''}: {_difference(got, references[0])}")


# -- the runtime's bookkeeping across a restore ------------------------------------------------
def _restored(run: SimulationResult) -> bool:
    """Did a failover restore a completed checkpoint?"""
    return any(e[0] == "failover" and e[3] is not None for e in run.events)


def _lineage_forgets_input(scenario: Scenario, run: SimulationResult):
    """The faulty run's lineage is what its reference replays, so it must name every input
    element the run consumed, those its restored state consumed before the checkpoint too: per
    task and channel at least the records routed to it and, with drain, the end of input's
    MAX_WATERMARK and EndOfData (sent again by every attempt's sources). A lineage that forgets
    some would leave the restore without its reference. (Other elements are not counted: a
    restarted generator may emit fewer watermarks, and a source that ended before the checkpoint
    sends only its end again.)"""
    if run.lineage is None or not _restored(run):
        return None
    note(RESTORED_LINEAGE)
    params = job_params(scenario)
    parallelism, max_parallelism, ends = len(run.lineage), params["max_parallelism"], 2 if params["drain"] else 0
    for channel, elements in enumerate(sources_of(scenario)):
        routed = Counter(compute_operator_index_for_key_group(
            max_parallelism, parallelism, assign_to_key_group(e.key, max_parallelism))
            for e in elements if isinstance(e, StreamRecord))
        for task, lineage in enumerate(run.lineage):
            named = list(lineage).count(channel)
            if named < routed[task] + ends:
                return ("lineage-holds-the-input",
                        f"certify's runtime: after a restore, subtask {task}'s lineage names {named} elements of input "
                        f"channel {channel}, fewer than the {routed[task]} records{' and the end of input' * bool(ends)} "
                        "it consumed there: no failure-free run can be replayed as the reference")
    return None


class ProcessingTimeWitness(KeyedProcessFunction):
    """Certify's own operator: outputs the processing time each record meets."""

    def process_element(self, value, ctx, out):
        out.collect((value, ctx.timestamp(), ctx.timer_service().current_processing_time()))


CLOCK_WITNESS = "certify:processing-time-witness"
FUNCTIONS[CLOCK_WITNESS] = ProcessingTimeWitness
WITNESS_TIME = 1  # the one processing-time advance at the head of each source of the witness's input


def clock_witness(scenario: Scenario) -> Scenario:
    """The scenario's records, watermarks and faults with the witness for its operator and one
    processing-time advance to :data:`WITNESS_TIME` first in every source (none elsewhere): every
    task's clock is 0 until it reads one, then that value, so a checkpoint's tasks agree on it (a
    rescale merging them too) and a record read after a restore, before the replayed input moved
    the clock, meets the restored clock."""
    from streamproof.properties.job.steps import ProcessingTime

    heads = tuple(ProcessingTime(source, WITNESS_TIME) for source in range(job_params(scenario)["sources"]))
    return dataclasses.replace(scenario, steps=heads + tuple(s for s in scenario.steps if not isinstance(s, ProcessingTime)),
                               params={**scenario.params, "operator": CLOCK_WITNESS})


def _restored_clock_differs(scenario: Scenario, r: Runs):
    """Input-driven processing time resumes after a restore where the checkpoint's tasks were, plus
    the restart's gap. The witness (:func:`clock_witness`) runs with the scenario's faults and
    schedule. With a gap, every record a restored attempt reads meets a clock of at least the gap;
    without one, each record meets the processing time its key group's history gives (the advances
    consumed before it; not with unaligned checkpoints and a rescale, whose merge drops in-flight
    advances). Else processing-time timers of a restored job fire at other points than any
    failure-free run's (or a restart's)."""
    params = job_params(scenario)
    if params["processing_time"] != "input" or not _restored(r.faulty):
        return None
    witness = clock_witness(scenario)
    run = r._get("clock-witness", lambda: _run(witness, False, r.seeds[0], faults_of(witness)))
    if isinstance(run, str) or not _restored(run):
        return None
    note(RESTORED_CLOCK)
    gap = params["restart_gap"]
    if gap:
        failovers = [e for e in run.events if e[0] == "failover"]
        restored = {attempt for attempt, e in enumerate(failovers, 1) if e[3] is not None}
        early = [entry[1] for attempt, _, log in run.output_logs if attempt in restored
                 for entry in log if entry[0] == "record" and entry[1][2] < gap]
        if not early:
            return None
        return ("processing-time-resumes-after-a-restore",
                f"certify's runtime: the restart takes {gap} ms of processing time, yet a restored task read "
                f"{readable(canonical(early[0][0]))} at processing time {early[0][2]}")
    if not certify_runs._histories_hold_the_input(witness, run) or (
            params["unaligned"] and any(f.kind == "rescale" for f in run.faults_applied)):
        return None
    reference = history_reference(witness, run)
    if not isinstance(reference, Counter) or output(run) == reference:
        return None
    return ("processing-time-resumes-after-a-restore",
            "certify's runtime: after a restore, records meet another processing time than the input before them "
            f"gives (record, timestamp, processing time): {_difference(output(run), reference)}")


def _same_output_unsplit(scenario: Scenario, r: Runs):
    """Exactly-once with interruptible timers off: the faulty run's faults, firings never split,
    against the failure-free runs (in its own lineage; every schedule when a rescale merged tasks),
    restores judged as in :func:`_same_output`."""
    faulty = _faulty_unsplit(r)
    if isinstance(faulty, str):
        return "job-finishes", faulty
    got = output(faulty)
    if faulty.lineage is not None:
        reference = r._get("faulty-unsplit-reference",
                           lambda: _run(r.scenario, False, r.seeds[0], lineage=faulty.lineage))
        if isinstance(reference, str):
            return "failure-free-run-finishes", f"the operator fails without any fault: {reference}"
        references = [output(reference)]
    else:
        references = [output(x) for x in (r.off(i) for i in range(len(r.seeds))) if not isinstance(x, str)]
        if _order_sensitive(r) and got not in references:
            note(FINDING_ARRIVAL_ORDER)
            return None
    if got in references or _matches_history(scenario, faulty, got):
        return None
    if _matches_regenerated_watermarks(scenario, r, got, faulty):
        return None
    if _late_records_across_a_restore(scenario, r, interruptible=False):
        note(FINDING_LATE)
        return None
    if _tie_order_only(r, interruptible=False):
        return None
    unsplit = dataclasses.replace(scenario, params={**scenario.params, "async_mail_rate": 0.0})
    if unsplit != scenario and _same_output(unsplit, runs(unsplit)) is None:
        return None  # the same faults without foreign mail splitting firings: exactly-once holds
    return ("same-output-as-a-failure-free-run",
            "with interruptible timers off, the committed output matches no failure-free run of the same input"
            f"{' in the same order' if faulty.lineage is not None else ''}: {_difference(got, references[0])}")


def explain(scenario: Scenario) -> str:
    """The cause of a same-output counterexample (re-runs it one cause at a time)."""
    r = runs(scenario)
    lineage = [x for x in (r.lineage(False), r.lineage(True)) if x is not None and not isinstance(x, str)]
    references = [output(x) for x in lineage] or [output(x) for x in r.references() if not isinstance(x, str)]
    return diagnose(scenario, references)


def _interruptible(scenario: Scenario, r: Runs):
    """FLIP-443 on its own: the input in one failure-free order, timers never split, against the
    same input in the same order with firings split (:meth:`Runs.splits`). The input, its order
    and its watermarks are the same in both: only enabling interruptible timers differs. A
    difference that goes away when the records behind their source's watermark are removed (the
    same scenario otherwise, split the same ways) is the finding "output for late records depends
    on timing" (a late record re-registering a timer that already fired is enough for it), not a
    refusal; the burst scenarios look for the shape with records on time."""
    base = r.off(0)
    if isinstance(base, str):
        return "failure-free-run-finishes", f"the operator fails without any fault: {base}"
    for split in r.splits():
        if isinstance(split, str):
            return ("same-output-with-split-firings",
                    f"with timer firings split (FLIP-443) the operator fails on input it handles unsplit: {split}")
        cover(split)
        if output(split) != output(base):
            if split.late_records and _late_only(scenario, _interruptible):
                return None  # only late records met the split (a finding): without them it holds
            if _clock_only(scenario, _interruptible):
                return None  # only the processing time timers fired at differed (a finding)
            late = " (records behind the watermark among them)" if split.late_records else ""
            return ("same-output-with-split-firings",
                    f"splitting timer firings (FLIP-443) changes the output: "
                    f"{_difference(output(split), output(base))} ({split.interrupted_firings_seen} interrupted "
                    f"firings, {split.split_due_key_records} records of a key whose timer was due ran between "
                    f"their parts{late}; the same input in the same order)")
    return None


def _clock_only(scenario: Scenario, check) -> bool:
    """Does ``check`` hold with processing time standing still (no processing-time steps, no
    restart gap)? Then the difference was when, in processing time, the timers fired (a split
    firing ends later): an output that reads the clock (a wall-clock stamp) differs in Flink too."""
    from streamproof.properties.job.steps import ProcessingTime

    steps = tuple(step for step in scenario.steps if not isinstance(step, ProcessingTime))
    if len(steps) == len(scenario.steps) and not scenario.params.get("restart_gap"):
        return False
    still = dataclasses.replace(scenario, steps=steps, params={**scenario.params, "restart_gap": 0})
    if check(still, runs(still)) is not None:
        return False
    note(FINDING_PROCESSING_TIME)
    return True


def _on_faulty(check):
    def run(scenario: Scenario, r: Runs):
        if isinstance(r.faulty, str):
            return "job-finishes", r.faulty
        cover(r.faulty)
        problem = check(r.faulty, None)
        if problem and r.faulty.late_records and (_late_only(scenario, run) or _late_only(_ticked(scenario, r.faulty), run)):
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

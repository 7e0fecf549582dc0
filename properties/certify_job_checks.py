"""The job certification properties on one scenario (docs/certify.md "Certifying a job"):
``job.same-output`` against failure-free runs of the same input (the faulty run's record lineage
replayed first, then emission-point variants and other schedules), ``job.interruptible-timers``
(split firings against unsplit ones), ``job.watermarks``, ``job.end-of-input``; the findings Flink
does not promise against (late records, arrival order after a rescale) and the diagnosis."""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from typing import Iterator

from streamproof.flink.common.typeinfo import floats_rounded, floats_rounded_on_write
from streamproof.impl.operators.user_clock import wall_clock_frozen, wall_clock_is_frozen
from streamproof.impl.timers.internal_timer_service import MAX_WATERMARK, MIN_WATERMARK
from streamproof.properties.certify_job_runs import (
    JobRun, JobScenario, JobSubject, fault_text, load_scenario, simulate,
)
from streamproof.properties.job.values import canonical

EVERY_CHANCE, SPLIT_MAIL_RATE = 1.0, 0.8
OTHER_SCHEDULES = 5
FINDING_LATE = "output for late records depends on timing"
FINDING_ORDER = "output depends on arrival order across channels"
# processing time passing during a restart (TTL state expired, processing-time timers came due):
# a failure-free run whose input paused as long commits it too (docs/decisions.md)
FINDING_RESTART_TIME = "output depends on how long a restart takes (processing time)"
# a split firing ends later in processing time, and the output reads the clock (a wall-clock
# stamp, datetime.now() in a window function): with processing time standing still the split and
# the unsplit runs agree (docs/decisions.md)
FINDING_PROCESSING_TIME = "output depends on the processing time timers fire at"
# a replay after a restore reads the clock at other times (a datetime.now() stamp): with the wall
# clock the callbacks read frozen, the committed output is a failure-free run's (docs/decisions.md)
FINDING_WALL_CLOCK = "output depends on the wall-clock time callbacks read"
# PyFlink's state cache hands back the double written to Types.FLOAT() state until a restore reads
# the single-precision value back: later results differ in their last digits after a failure
FINDING_FLOAT_STATE = "output depends on Types.FLOAT() state precision across a restore"


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


def _points_from(subject: JobSubject, scenario: JobScenario, offsets: list[int]) -> tuple:
    """The emission points (as written) a source reaches after its restored offset (an offset counts
    the elements a source subtask read: records and emission points): where a restarted generator
    can emit."""
    out = [set() for _ in subject.source_records]
    dropped = set(scenario.drop)
    written = subject.source_records
    for a, (w, j, stride) in enumerate(subject.lanes(scenario.parallelism, scenario.uniform)):
        chosen = set(scenario.points[w]) if w < len(scenario.points) else set()
        index = 0
        for i in range(j, len(written[w]), stride):  # as _elements lays them out: record, clock advance, point
            index += 1 if (w, i) in dropped else 2
            if i in chosen:
                if index >= offsets[a]:
                    out[w].add(i)
                index += 1
    return tuple(tuple(sorted(p)) for p in out)


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
            lineage_points.insert(1, _points_from(subject, scenario, offsets))
        for points in dict.fromkeys(lineage_points):
            for interruptible in (False, True):
                replay = simulate(subject, scenario, interruptible, faults=(), points=points, checkpoints=False,
                                  lineage=faulty)
                if isinstance(replay, str) or replay.lineage == faulty.lineage:
                    yield replay  # else it could not follow the lineage: no reference (checked, never trusted)
    variants = [tuple(() for _ in records)]
    if offsets is not None:
        variants.insert(0, _points_from(subject, scenario, offsets))
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
    instant = dataclasses.replace(scenario, restart_gap=0)
    if scenario.restart_gap and _commits_otherwise(subject, instant, faulty) and \
            ((o := same_output(subject, instant, late_check=late_check)).message is None or o.finding):
        # the restart's processing time changed the output, and without it: held, or another finding
        return Outcome(f"the committed output differs when the restart takes {scenario.restart_gap} ms of processing "
                       f"time and not when it takes none: {describe_difference(faulty, first)}",
                       finding=FINDING_RESTART_TIME)
    if not wall_clock_is_frozen():
        with wall_clock_frozen():
            still = same_output(subject, scenario, late_check=late_check)
        if still.message is None:
            return Outcome(f"the committed output differs only in the wall-clock time its callbacks read (the same "
                           f"with it frozen): {describe_difference(faulty, first)}", finding=FINDING_WALL_CLOCK)
    if faulty.wrote_floats and not floats_rounded():  # no state cache: FLOAT state single precision from the write on
        with floats_rounded_on_write():
            rounded = same_output(subject, scenario, late_check=late_check)
        if rounded.message is None:
            return Outcome(f"the committed output differs only in Types.FLOAT() state values read back in single "
                           f"precision after a restore: {describe_difference(faulty, first)}",
                           finding=FINDING_FLOAT_STATE)
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


def _commits_otherwise(subject: JobSubject, scenario: JobScenario, faulty: JobRun) -> bool:
    """Whether ``scenario`` (the faulty run's, one thing changed) commits another output."""
    run = simulate(subject, scenario)
    return isinstance(run, str) or run.committed != faulty.committed


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


def _late_at_source(run: JobRun) -> set:
    """(source subtask, record index) of the records read behind their source's watermark."""
    late = set()
    for event in run.job.events:
        if event[0] == "late-at-source":
            source, offset = event[1], event[2]
            element = run.job.spec.sources[source][offset]
            late.add((run.written[source] if run.written else source, element.index))
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
        still = dataclasses.replace(scenario, pace=0, restart_gap=0)
        if scenario.pace and interruptible_timers(subject, still).message is None:
            return Outcome(message, finding=FINDING_PROCESSING_TIME)
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


def replay_outcomes(subject: JobSubject, scenario: JobScenario, faulty: JobRun | str) -> dict[str, Outcome]:
    """The properties on one scenario whose faulty run is ``faulty``."""
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

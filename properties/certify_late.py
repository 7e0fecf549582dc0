"""Whether where watermarks fell, late records or the order of equal-timestamp timers explain a
committed output that matches no failure-free run: the same input with its watermarks where a
restarted generator emitted them or later, without its late records, or with timers of equal
timestamps in key-group order. Such a difference is no fault (late records and timer ties: a
finding, reported apart)."""

from __future__ import annotations

import dataclasses
from collections import Counter

from streamproof.properties import certify_runs
from streamproof.properties.certify_runs import Runs, _matches_history, _run, output, runs
from streamproof.properties.job.steps import faults_of, job_params
from streamproof.properties.reach import note
from streamproof.properties.scenario import Scenario

# the findings these report (reach labels, listed apart on a certificate)
FINDING_LATE = "finding: output for late records depends on timing"
FINDING_TIE_ORDER = "finding: output depends on the order of equal-timestamp timers"
# certify_runs.SPLIT_PLANS and certify_runs.OTHER_TIE_ORDERS are read there (the bug zoo patches them there)


def effective_watermarks(scenario: Scenario) -> list:
    """Per step, the watermark value its source emits there (None for other steps, or when a
    generator emits nothing): the step's value, or, with ``params.watermark_bound``, what the
    source's generator emits at that emission point in a failure-free run."""
    from streamproof.properties.job.steps import Record, SourceWatermark, UserRecord, generated_watermark, \
        watermark_bounds

    bounds = watermark_bounds(job_params(scenario))
    values, highest = [], {}
    for step in scenario.steps:
        value = None
        if isinstance(step, (Record, UserRecord)):
            highest[step.source] = max(step.ts, highest.get(step.source, step.ts))
        elif isinstance(step, SourceWatermark):
            bound = bounds[step.source] if step.source < len(bounds) else None
            value = step.ts if bound is None else generated_watermark(highest.get(step.source), bound)
        values.append(value)
    return values


def without_late(scenario: Scenario) -> Scenario | None:
    """The scenario without the records that are late in their own source (at or below a
    watermark it sent before), or None when it has none. What a late record does depends on when
    it meets the timers (Flink promises nothing there), so a difference that goes away without
    them is a finding about late data, not a fault."""
    from streamproof.properties.job.steps import Record, UserRecord

    kept, last, dropped = [], {}, False
    for step, value in zip(scenario.steps, effective_watermarks(scenario)):
        if value is not None:
            last[step.source] = max(value, last.get(step.source, value))
        elif isinstance(step, (Record, UserRecord)) and step.source in last and step.ts <= last[step.source]:
            dropped = True
            continue
        kept.append(step)
    if not dropped:
        return None
    return dataclasses.replace(scenario, steps=tuple(kept))


def with_emission_points(scenario: Scenario, points: dict) -> Scenario:
    """The scenario with a watermark after each ``(source, element index)`` of ``points`` (its
    value the dict's), every watermark written as the value it has (``params.watermark_bound``
    dropped): a failure-free run whose sources emitted where and what the faulty run's restarted
    generators did (Flink's periodic emitter may tick anywhere)."""
    from streamproof.properties.job.steps import ProcessingTime, Record, SourceWatermark, UserRecord

    steps, seen = [], {}
    for step, value in zip(scenario.steps, effective_watermarks(scenario)):
        if isinstance(step, SourceWatermark):
            if value is not None:
                steps.append(SourceWatermark(step.source, value))
        else:
            steps.append(step)
        if isinstance(step, (Record, UserRecord, SourceWatermark, ProcessingTime)):
            index = seen.get(step.source, 0)
            seen[step.source] = index + 1
            if (step.source, index) in points:
                steps.append(SourceWatermark(step.source, points[(step.source, index)]))
    return dataclasses.replace(scenario, steps=tuple(steps), params={**scenario.params, "watermark_bound": None})


def _matches_regenerated_watermarks(scenario: Scenario, r: Runs, got: Counter, faulty=None) -> bool:
    """After a restore the sources' watermark generators emit again from the replayed records,
    where the failure-free run may have had no emission point (Flink's periodic emitter ticks
    whenever its interval passes): is the committed output that of a failure-free run that ticks
    where the faulty run's restarted generators did, in the faulty run's order? (``faulty``: the
    faulty run judged, by default :attr:`Runs.faulty`.)"""
    faulty = r.faulty if faulty is None else faulty
    ticked = _ticked(scenario, faulty)
    if ticked is scenario:
        return False
    if faulty.lineage is None:  # merged by a rescale: the ticking run's schedules, its histories
        return _matches_history(ticked, faulty, got) or any(
            not isinstance(run, str) and output(run) == got for run in runs(ticked).references())
    plans = [(False, None, 0), (True, None, 0)] + [(True, rate, k) for rate, k in certify_runs.SPLIT_PLANS]
    for interruptible, rate, k in plans:
        run = _run(ticked, interruptible, r.seeds[k], mail_rate=rate, lineage=faulty.lineage)
        if not isinstance(run, str) and output(run) == got:
            return True
    return False


def _ticked(scenario: Scenario, faulty) -> Scenario:
    """The scenario with emission points where the faulty run's restarted generators emitted (the
    scenario itself when they emitted nowhere else)."""
    points = {} if isinstance(faulty, str) else \
        {(e[1], e[2]): e[3] for e in faulty.events if e[0] == "regenerated-watermark"}
    return with_emission_points(scenario, points) if points else scenario


def delayed_watermarks(scenario: Scenario) -> Scenario | None:
    """The same input with each source's watermarks emitted later: each one after the records of
    its source that it would make late (a periodic generator emits when its timer fires, so a
    failure-free run may emit the same watermark after them); a watermark that would then come
    after a larger one of its source is left out. None when no record is late."""
    from streamproof.properties.job.steps import Record, SourceWatermark, UserRecord

    slots: dict[int, list[int]] = {}
    values = effective_watermarks(scenario)
    for i, step in enumerate(scenario.steps):
        if isinstance(step, (Record, UserRecord, SourceWatermark)):
            slots.setdefault(step.source, []).append(i)
    steps, changed = list(scenario.steps), False
    for source, places in slots.items():
        own = [scenario.steps[i] for i in places]
        value = {k: values[i] for k, i in enumerate(places)}
        placed: list = []  # (position, original index, step)
        for k, step in enumerate(own):
            position = k
            if isinstance(step, SourceWatermark) and value[k] is not None:
                later = [j for j in range(k + 1, len(own)) if not isinstance(own[j], SourceWatermark)
                         and own[j].ts <= value[k]]
                if later:
                    changed = True
                    if any(isinstance(own[j], SourceWatermark) and value[j] is not None and value[j] >= value[k]
                           for j in range(k + 1, later[-1] + 1)):
                        continue  # a larger watermark of its source comes before: left out
                    position = later[-1] + 0.5
            placed.append((position, k, step))
        own = [step for _, _, step in sorted(placed, key=lambda x: (x[0], x[1]))]
        for i, step in zip(places, own):
            steps[i] = step
        for i in places[len(own):]:
            steps[i] = None
    if not changed:
        return None
    return dataclasses.replace(scenario, steps=tuple(x for x in steps if x is not None))


def _matches_delayed_watermarks(scenario: Scenario, r: Runs, got: Counter) -> bool:
    """Is the committed output that of a failure-free run whose watermarks fell later (after the
    records they made late: :func:`delayed_watermarks`)? Then what differed was only where the
    watermarks fell relative to late records, a freedom Flink has (a finding, not a fault)."""
    delayed = delayed_watermarks(scenario)
    if delayed is None:
        return False
    d = runs(delayed)
    candidates = [d.off(0), d.on(0)]
    if not isinstance(r.faulty, str) and r.faulty.lineage is not None:
        candidates += [d._get(("lineage-of", interruptible), lambda i=interruptible: _run(
            delayed, i, d.seeds[0], lineage=r.faulty.lineage)) for interruptible in (False, True)]
    return any(not isinstance(x, str) and output(x) == got for x in candidates)


def _tie_order_only(r: Runs, interruptible: bool) -> bool:
    """Is the difference only the order in which timers of equal timestamps fire? A restore fires
    them key group by key group, and Flink's timer heap leaves their order open, so an operator
    whose output depends on it (its failure-free runs differ between tie orders) may commit
    another failure-free run's output. Checked, not assumed: the same faults on a runtime whose
    timers fire in key-group order throughout (before and after the restore alike) must give the
    output of a failure-free run in that order (in its lineage; every schedule when a rescale
    merged tasks). A lost or duplicated firing shows there too."""
    base = r.off(0)
    if isinstance(base, str) or not any(
            not isinstance(x, str) and output(x) != output(base)
            for x in (r._get(("off-tie", tie), lambda t=tie: _run(r.scenario, False, r.seeds[0], tie=t))
                      for tie in certify_runs.OTHER_TIE_ORDERS)):
        return False  # the failure-free output does not depend on the tie order
    if "key-group" not in certify_runs.OTHER_TIE_ORDERS:
        return False
    faulty = r._get(("faulty-tie", interruptible), lambda: _run(
        r.scenario, interruptible, r.seeds[0], faults_of(r.scenario), tie="key-group"))
    if isinstance(faulty, str):
        return False
    if faulty.lineage is not None:
        split = [(True, rate, k) for rate, k in certify_runs.SPLIT_PLANS]
        plans = [(False, None, 0)] + ([(True, None, 0)] + split if interruptible else [])
        candidates = (_run(r.scenario, i, r.seeds[k], mail_rate=rate, lineage=faulty.lineage, tie="key-group")
                      for i, rate, k in plans)
    else:
        candidates = (_run(r.scenario, i, seed, tie="key-group") for seed in r.seeds
                      for i in ((False, True) if interruptible else (False,)))
    if any(not isinstance(x, str) and output(x) == output(faulty) for x in candidates):
        note(FINDING_TIE_ORDER)
        return True
    return False


def _late_only(scenario: Scenario, check) -> bool:
    """Does ``check`` hold once the late records are gone? (Then the failure was theirs.)"""
    clean = without_late(scenario)
    if clean is None or check(clean, runs(clean)) is not None:
        return False
    note(FINDING_LATE)
    return True

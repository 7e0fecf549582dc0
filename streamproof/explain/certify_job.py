"""A job certification counterexample as a timeline (``streamproof explain FILE --job JOB.py``):
the scenario re-run under the passive recorder (:mod:`streamproof.explain.recorder`), one lane per
operator subtask of the job (its user records in, its outputs, timers, watermarks), the job
manager's lane (checkpoints, failures, rescales), the scenario in words, and what the failure-free
reference committed."""

from __future__ import annotations

from streamproof.explain.job_families import LEGEND, job_rows
from streamproof.explain.recorder import Recorder, run_of_job
from streamproof.explain.timeline import Timeline, mark, show
from streamproof.properties.certify_job_checks import FINDING_LATE, replay_outcomes
from streamproof.properties.certify_job_runs import (
    JobScenario, JobSubject, describe_pipeline, describe_scenario, simulate,
)


def job_timeline(subject: JobSubject, scenario: JobScenario, file: str, prop: str | None = None):
    """The :class:`streamproof.explain.timeline.Timeline` of ``scenario`` on ``subject``: for a
    ``job.interruptible-timers`` counterexample, its failure-free run with firings split as the
    scenario splits them, next to the unsplit run; else its faulty run."""
    split = prop == "job.interruptible-timers"
    recorder = Recorder()
    with recorder.active():
        drawn = simulate(subject, scenario, True, faults=(), eager=scenario.eager, checkpoints=False) if split \
            else simulate(subject, scenario)
    faulty = drawn if not split else simulate(subject, scenario)
    outcomes = replay_outcomes(subject, scenario, faulty)
    failed = {p: o for p, o in outcomes.items() if o.message is not None and not o.finding}
    verdicts = [f"property {p}: " + ("held" if o.message is None else f"finding ({o.finding})" if o.finding
                                     else "FAILED") for p, o in outcomes.items()]
    failure = next((f"{p}: {o.message}" for p, o in failed.items()), None)
    job = recorder.jobs[0] if recorder.jobs else None
    if job is None:
        rows, lanes = [], []
    else:
        rows, lanes = job_rows(run_of_job(job, recorder))
        hidden = {lane for lane in lanes if lane.split("[")[0].endswith(("/tag", "/type"))}  # certify's own
        rows, lanes = [r for r in rows if r.lane not in hidden], [lane for lane in lanes if lane not in hidden]
    timeline = Timeline(f"{file} (certification of {subject.target})", "certify-job", lanes, rows, verdicts,
                        not failed, failure, "as it ran: the scenario re-run with a passive recorder numbering every "
                        "logged entry", legend=list(LEGEND))
    sections = [("the pipeline", _pipeline(subject)), ("the scenario", describe_scenario(subject, scenario))]
    if split:
        sections.append(("the run drawn", ["failure-free, timer firings split "
                                           + ("at every chance (sources run ahead)" if scenario.eager else
                                              f"when foreign mail arrives ({int(scenario.mail_rate * 100)} %)")]))
    if isinstance(drawn, str):
        sections.append(("the run", [f"did not finish: {drawn}"]))
    else:
        sections.append(("committed (this run)", [", ".join(show(v) for v in drawn.raw) or "(nothing)"]))
        reference = reference_of(subject, scenario, split)
        if not isinstance(reference, str):
            extra, missing = drawn.committed - reference.committed, reference.committed - drawn.committed
            sections.append(("the same input, timer firings never split (interruptible timers off)",
                             [", ".join(show(v) for v in reference.raw) or "(nothing)",
                              "this run: same multiset" if not extra and not missing else
                              f"this run: {sum(extra.values())} values more, {sum(missing.values())} missing"]))
    for p, o in outcomes.items():
        if o.finding == FINDING_LATE:
            sections.append(("finding", [f"{p}: {o.message} ({o.finding})"]))
    timeline.sections = sections
    if failure is not None and not _mark_output(timeline, drawn, reference_of(subject, scenario, split), failure,
                                                last=not split):
        mark(timeline, None, failure)
    return timeline


def reference_of(subject: JobSubject, scenario: JobScenario, split: bool):
    return simulate(subject, scenario, False, faults=(), eager=split and scenario.eager, checkpoints=False)


def _mark_output(timeline, drawn, reference, failure: str, last: bool) -> bool:
    """Marks the first (``last``: the last, where a restored attempt repeats it) output row of a
    value the drawn run committed more often than the reference."""
    from streamproof.properties.job.values import canonical

    if isinstance(drawn, str) or isinstance(reference, str):
        return False
    extra = drawn.committed - reference.committed
    texts = [show(v[1] if isinstance(v, tuple) and len(v) == 2 else v) for v in drawn.raw
             if canonical(v) in extra]
    for row in reversed(timeline.rows) if last else timeline.rows:
        if row.kind in ("timer", "record-out") and any(text in row.text for text in texts):
            row.mark, row.note = True, failure
            return True
    return False


def _pipeline(subject: JobSubject) -> list[str]:
    return describe_pipeline(subject)


__all__ = ["describe_scenario", "job_timeline"]

"""Builds a scenario's :class:`~streamproof.explain.timeline.Timeline`: replays it (as
``streamproof replay`` does), takes each property's verdict, draws the run the way its family
records one (job families: :mod:`streamproof.explain.job_families`; ``valve_job``: the
coordinator's log; every other family: its steps in one lane) and marks the row where the
invariant broke."""

from __future__ import annotations

from typing import Any

from streamproof.explain.job_families import job_family_timeline
from streamproof.explain.timeline import JM, Row, Timeline, mark, show
from streamproof.properties.scenario import Scenario

JOB_FAMILIES = ("job", "termination")


def explain(scenario: Scenario, file: str | None = None) -> Timeline:
    """Replays ``scenario`` (its properties, as ``streamproof replay`` does) and builds its
    timeline. Raises what :func:`streamproof.replayer.replay` raises on a scenario it cannot check."""
    from streamproof.replayer import replay

    outcome = replay(scenario)
    return build_timeline(scenario, None, outcome, file)


def build_timeline(scenario: Scenario, result: Any = None, verdict: Any = None, file: str | None = None) -> Timeline:
    """The timeline of ``scenario``: ``result`` is the family's run (a ``SimulationResult``, a valve
    job's pipeline) or None to run it (with the passive recorder); ``verdict`` a ``ReplayResult``, a
    ``Verdict`` or None to replay the scenario."""
    if verdict is None:
        from streamproof.replayer import replay
        verdict = replay(scenario)
    verdicts, holds, failure, failed = _verdict_parts(verdict)
    name = scenario.name or scenario.family
    title = f"{file} ({scenario.family}: {name})" if file else f"{scenario.family}: {name}"
    if scenario.family in JOB_FAMILIES:
        timeline = job_family_timeline(scenario, result, failed, title)
    elif scenario.family == "valve_job":
        timeline = _valve_job_timeline(scenario, result, title)
    else:
        timeline = _steps_timeline(scenario, verdict, title)
    timeline.verdicts, timeline.holds, timeline.failure = verdicts, holds, failure
    if failed is not None or failure is not None:
        mark(timeline, failed, failure)
    return timeline


def _verdict_parts(verdict) -> tuple[list[str], bool, str | None, Any]:
    """(lines per property, holds, one-line failure, the first failed Verdict or None)."""
    from streamproof.properties.verdict import Verdict
    if isinstance(verdict, Verdict):
        failure = None if verdict.holds else f"{verdict.invariant}: {verdict.message}"
        return [f"property {verdict.property}: {verdict.verdict}"], verdict.holds, failure, \
            None if verdict.holds else verdict
    lines = [f"property {v.property}: {v.verdict}" for v in verdict.verdicts]
    if verdict.matches_expected is not None:
        what = " and ".join(verdict.compared_with)
        lines.append(f"matches {what}: yes" if verdict.matches_expected else f"matches {what}: NO ({verdict.mismatch})")
    failed = next((v for v in verdict.verdicts if not v.holds), None)
    return lines, verdict.holds, verdict.failure(), failed


# -------------------------------------------------------------------------------- valve job

def _valve_job_timeline(scenario: Scenario, pipeline, title: str) -> Timeline:
    from streamproof.properties.valve.job import job_params, run_job
    if pipeline is None:
        pipeline = run_job(scenario)
    events = job_params(scenario)["events"]
    rows: list[Row] = []
    lanes = [JM]
    for i, entry in enumerate(pipeline.log):
        kind = entry[0]
        if kind == "completed":
            rows.append(Row(i, None, JM, f"complete checkpoint {entry[1]}", "checkpoint",
                            (f"checkpoint {entry[1]},",)))
        elif kind == "global failover":
            rows.append(Row(i, None, JM, f"FAILOVER global (scheduler step {entry[1]})", "failover"))
        elif kind == "region failover":
            _, op, subtask, at = entry
            rows.append(Row(i, None, JM, f"FAILOVER region: operator {op} subtask {subtask} (step {at})", "failover"))
        else:
            rows.append(Row(i, None, JM, "error " + " ".join(str(x) for x in entry[1:]), "coordinator"))
    n = len(pipeline.log)
    for op, per_op in enumerate(pipeline.final):
        for i, received in enumerate(per_op):
            lane = f"op{op}[{i}]"
            lanes.append(lane)
            rows.append(Row(n, None, lane, f"final state {show(received)}", "end",
                            (f"operator {op} subtask {i} holds",)))
            n += 1
    lines = [f"op{op}[i] holds [0..{count - 1}] for every subtask i; each completed checkpoint holds exactly the "
             f"events its coordinator had sent" for op, count in enumerate(events)]
    return Timeline(title, scenario.family, lanes, rows, [], True, None,
                    "the coordinator's log in order, then each recipient's final state",
                    sections=[("reference (the ITCases' oracle, what valve.job-exactly-once expects)", lines)],
                    not_recorded=["events sent, delivered and acknowledged per step, barriers and mail: the "
                                  "pipeline logs only completed checkpoints, failovers and errors"],
                    legend=[("complete", "a checkpoint completed"), ("FAILOVER", "global or region failover"),
                            ("final state", "the events a recipient's state holds at the end")])


# ------------------------------------------------------------------------- step-list families

def _steps_timeline(scenario: Scenario, outcome, title: str) -> Timeline:
    rows = []
    for i, step in enumerate(scenario.steps):
        data = step.to_json() if hasattr(step, "to_json") else {"op": type(step).__name__}
        op = data.pop("op", "?")
        args = " ".join(f"{k}={_compact(v)}" for k, v in data.items())
        rows.append(Row(i, None, "steps", f"{i}: {op} {args}".rstrip(), "step"))
    sections = []
    observed = getattr(outcome, "observed", None) or []
    if observed:
        sections.append(("observed (the implementation)", [_compact(e) for e in observed]))
    for name in ("flink_observed", "expected"):
        reference = getattr(scenario, name)
        if reference is not None:
            sections.append((f"reference ({name})", [_compact(e) for e in reference]))
    mismatch = getattr(outcome, "mismatch", None)
    if mismatch:
        sections.append(("difference", [mismatch]))
    return Timeline(title, scenario.family, ["steps"], rows, [], True, None,
                    "the scenario's steps in order (this family runs no job: one lane)", sections=sections,
                    not_recorded=["lanes per subtask: this family's steps drive one component directly"],
                    legend=[("N: op", "step N of the scenario (0-based) and its fields")])


def _compact(value: Any) -> str:
    import json
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return show(value)

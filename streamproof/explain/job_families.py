"""The timeline of the ``job`` and ``termination`` families: the scenario re-run as its checker runs
it, under the passive recorder (:mod:`streamproof.explain.recorder`), drawn one lane per subtask
(a job graph: per operator subtask) plus ``JM``, then what was committed and the family's
reference."""

from __future__ import annotations

import re
from typing import Any

from streamproof.explain.recorder import Recorder, Run, run_of_job, run_of_result
from streamproof.explain.timeline import JM, Row, Timeline, show
from streamproof.properties.scenario import Scenario, dump_scenario

# properties of the job family that check the one-stage run (the others run a scenario as its graph)
ONE_STAGE_PROPERTIES = ("job.exactly-once", "job.timer-effects-once", "job.watermarks", "job.end-of-input")

LEGEND = [
    ("in", "a record the task took from its input (key, value, timestamp); in a chain, its head operator"),
    ("out", "a record the operator emitted (origin: element)"),
    ("fire(event)", "an event-time timer fired: the record its callback emitted (timestamp = the timer's)"),
    ("fire(proc)", "a processing-time timer fired: the record its callback emitted"),
    ("register", "a processing-time timer registered (termination's operator reports it as ('r', key, ts))"),
    ("wm in / wm out", "the task's combined input watermark / a watermark leaving the operator"),
    ("trigger / complete", "the checkpoint coordinator triggered / completed a checkpoint (trigger: at step)"),
    ("snapshot", "a task snapshot (checkpoint barrier or FLIP-147 checkpoint of a finished task)"),
    ("FAILOVER", "failure (or rescale): the next attempt restores the latest completed checkpoint"),
    ("end of input", "every input channel ended: end_input(), the flush, finish()"),
    ("flush", "the FLIP-269 end-of-input flush of processing-time timers (clock, horizons)"),
    ("EndOfData", "EndOfData left the task (after finish())"),
    ("commit", "the external system committed a sink transaction (txn id, records)"),
    ("side", "a side output (tag, value)"),
]
NOT_RECORDED_JOB = [
    "mail and its priority: the simulator does not log the mailbox (only the bookkeeping's "
    "'continuations' entries, shown when present, name an executor priority)",
    "checkpoint barriers travelling through channels: only the coordinator's trigger and each task's "
    "snapshot are recorded",
    "elements in flight lost at a failover, and processing time per row (only triggers carry a step)",
]
NOT_RECORDED_JOB_ONLY = ["timer registrations: the timer service does not log them (their firings show)"]


def _job_run(scenario: Scenario, on_graph: bool):
    """(recorded run or None, the checker's own run, the reference run or None). The recorded run
    is the checker's construction (its ``_run`` without the cache) under the recorder."""
    text = dump_scenario(scenario)
    if scenario.family == "termination":
        from streamproof.properties.termination import check
        plain, reference = check.run(scenario), None
        runner = lambda: check._run.__wrapped__(text)  # noqa: E731
    elif (scenario.property or "").startswith("certify."):  # certify's own faulty run (its one-operator graph)
        from streamproof.properties import certify_runs
        from streamproof.properties.job.steps import faults_of, job_params
        plain, reference = certify_runs.runs(scenario).faulty, None
        runner = lambda: certify_runs._run(scenario, True, job_params(scenario)["seed"],  # noqa: E731
                                             faults_of(scenario))
    else:
        from streamproof.properties.job import check
        plain, reference = check.runs(scenario, on_graph)
        graph = on_graph or check.is_graph(scenario)
        runner = lambda: check._run.__wrapped__(text, graph, False)  # noqa: E731
    recorder = Recorder()
    with recorder.active():
        try:
            runner()
        except Exception:  # noqa: BLE001 - the checker reports it; the recorder keeps what ran
            pass
    recorded = run_of_job(recorder.jobs[-1], recorder) if recorder.jobs else None
    return recorded, plain, reference


def job_family_timeline(scenario: Scenario, result, failed, title: str) -> Timeline:
    on_graph = failed is not None and scenario.family == "job" and failed.property not in ONE_STAGE_PROPERTIES
    reference = None
    notes: list[str] = []
    if result is not None and not isinstance(result, str):
        run = run_of_result(result)
        ordering = ("per attempt and lane, in each lane's log order (no order across lanes: a plain "
                    "SimulationResult does not record one)")
    else:
        run, plain, reference = _job_run(scenario, on_graph)
        if run is None:
            run = Run([], [], [], [], [], False)
        ordering = ("as it ran: the scenario ran once more, as its checker runs it, with a passive recorder "
                    "numbering every logged entry")
        if not isinstance(plain, str) and (run.committed != list(plain.committed) or
                                          [list(x[2]) for x in run.output_logs] != [list(x[2]) for x in plain.output_logs]):
            notes.append("the recorded run differs from the checker's run (the implementation is not "
                         "deterministic under the recorder): a streamproof bug, please report it")
        if isinstance(plain, str):
            notes.append(f"the run did not finish: {plain}; the timeline shows what ran until then")
    rows, lanes = job_rows(run)
    timeline = Timeline(title, scenario.family, lanes, rows, [], True, None, ordering,
                        legend=list(LEGEND), not_recorded=list(NOT_RECORDED_JOB))
    if scenario.family == "job":
        timeline.not_recorded += NOT_RECORDED_JOB_ONLY
    timeline.sections = _job_sections(scenario, run, reference) + ([("notes", notes)] if notes else [])
    return timeline


def _lane_of_subtask(run: Run, label: Any) -> str:
    return label if run.graph else f"subtask {label}"


def _lane_of_task(run: Run, task) -> str:
    if not run.graph:  # a one-stage job: one lane per subtask of its operator
        return f"subtask {getattr(task, 'vertex_subtask', task.subtask_index)}"
    if hasattr(task, "operators"):  # a chain: records and watermarks enter at its head
        return f"{task.operators[0].name}[{task.vertex_subtask}]" if task.operators else f"{task.name}[{task.vertex_subtask}]"
    return f"subtask {task.subtask_index}"


def _lane_of_label(run: Run, label: str, lanes: list[str]) -> str:
    """A task label of the bookkeeping (``name[i]``; a chain's ``A -> B[i]``) as a lane."""
    m = re.match(r"^(.*)\[(\d+)\]$", label)
    if not m:
        return label
    name, index = m.groups()
    if not run.graph:
        return f"subtask {index}"
    head = name.split(" -> ")[0]
    for candidate in (f"{head}[{index}]", *(f"{n}[{index}]" for n in name.split(" -> "))):
        if candidate in lanes:
            return candidate
    return f"{head}[{index}]"


def _output_row(entry: tuple, last_wm: Any) -> tuple[str, str, tuple]:
    kind = entry[0]
    if kind == "watermark":
        return f"wm out {show(entry[1])}", "watermark", (f": {entry[1]} after {last_wm}", f"{entry!r} after")
    if kind == "end_of_data":
        return "EndOfData", "end", (f"{entry!r} after",)
    if kind == "side":
        return f"side {entry[3]} {show(entry[1])}", "record-out", (f"{entry!r} after",)
    if kind != "record":
        return show(entry), "other", (f"{entry!r} after",)
    value, ts, origin = entry[1], entry[2], entry[3]
    phrases = [f"{entry!r} after", f"output {value!r}"]
    if isinstance(value, tuple) and value[:1] == ("p",) and len(value) == 5:
        _, key, pts, action, now = value
        phrases.append(f"timer {pts} of key {key!r}")
        return f"fire(proc) {key!r}@{pts} {action} reads {show(now)}", "timer", tuple(phrases)
    if isinstance(value, tuple) and value[:1] == ("e",) and len(value) == 3:
        return f"fire(event) {value[1]!r}@{value[2]}", "timer", tuple(phrases)
    if isinstance(value, tuple) and value[:1] == ("r",) and len(value) == 3:
        via = "" if origin == "element" else " (in a callback)"
        return f"register proc timer {value[1]!r}@{value[2]}{via}", "register", tuple(phrases)
    if isinstance(value, tuple) and value[:1] == ("pending",) and len(value) == 4:
        timers = ", ".join(f"{t[0]!r}@{t[1]} {t[2]}" for t in value[2])
        return f"pending at end (override {value[1]}): {timers or 'none'}", "flush", tuple(phrases)
    if value == ("finish",):
        return "finish()", "end", tuple(phrases)
    prefix = {"timer": "fire(event)", "processing-timer": "fire(proc)"}.get(origin, "out")
    at = "" if ts is None else f" @{show(ts)}"
    return f"{prefix} {show(value)}{at}", "timer" if origin != "element" else "record-out", tuple(phrases)


def job_rows(run: Run) -> tuple[list[Row], list[str]]:
    rows: list[Row] = []
    lanes: list[str] = []

    def lane_add(lane: str) -> None:
        if lane not in lanes:
            lanes.append(lane)

    flushes = {(a, s): f for a, s, f in run.flushes}
    for attempt, label, log in run.output_logs:
        lane = _lane_of_subtask(run, label)
        lane_add(lane)
        stamps = getattr(log, "stamps", None)
        if stamps is not None and len(stamps) != len(log):
            stamps = None
        last_wm = None
        flush = flushes.get((attempt, label))
        for i, entry in enumerate(log):
            order = stamps[i] if stamps is not None else (attempt, i, lanes.index(lane))
            if flush is not None and i == flush.start:
                rows.append(Row(_before(order), attempt, lane, _flush_text(flush, "begins"), "flush"))
            text, kind, phrases = _output_row(entry, last_wm)
            rows.append(Row(order, attempt, lane, text, kind, phrases))
            if flush is not None and i == flush.end - 1 and flush.end > flush.start:
                rows.append(Row(_after(order), attempt, lane, "flush ends", "flush"))
            if entry[0] == "watermark":
                last_wm = entry[1]
        if flush is not None and flush.start >= len(log):
            order = (stamps[-1] if stamps else (attempt, len(log), lanes.index(lane)))
            rows.append(Row(_after(order), attempt, lane, _flush_text(flush, "(nothing pending)"), "flush"))
    stamped_events = getattr(run.events, "stamps", None)
    attempt = 0
    failovers: list = []  # stamps of the failover events
    for i, event in enumerate(run.events):
        order = stamped_events[i] if stamped_events is not None else (attempt, -1, i)
        kind = event[0]
        if kind == "trigger":
            text = f"trigger checkpoint {event[1]} (step {event[2]})"
        elif kind == "complete":
            text = f"complete checkpoint {event[1]}"
        elif kind == "failover":
            _, reason, subtask, restored, parallelism = event[:5]
            restore = f"restore checkpoint {restored}" if restored is not None else "restart from scratch"
            text = (f"FAILOVER ({reason}, subtask {subtask}) -> attempt {attempt + 1}: {restore}, "
                    f"parallelism {show(parallelism)}")
        else:
            text = show(event)
        rows.append(Row(order, attempt, JM, text, "failover" if kind == "failover" else "checkpoint",
                        (f"checkpoint {event[1]}",) if kind in ("trigger", "complete") else ()))
        if kind == "failover":
            attempt += 1
            failovers.append(order)
    stamped_log = getattr(run.task_log, "stamps", None)
    for i, entry in enumerate(run.task_log):
        lane = _lane_of_label(run, entry[2], lanes)
        lane_add(lane)
        order = stamped_log[i] if stamped_log is not None else (entry[1], 10**9 + i, lanes.index(lane))
        if entry[0] == "snapshot":
            _, att, label, checkpoint, callback, interrupted = entry
            where = f" inside {callback}" if callback else ""
            text = f"snapshot checkpoint {checkpoint}{where}{' (firing interrupted)' if interrupted else ''}"
            phrases = (f"checkpoint {checkpoint}'s snapshot", f"a yield inside {callback}")
            rows.append(Row(order, att, lane, text, "snapshot", phrases))
        elif entry[0] == "continuations":
            _, att, label, priority, n = entry
            rows.append(Row(order, att, lane, f"{n} watermark continuation mails pending (priority {priority})",
                            "mail", (f"{n} watermark continuations",)))
        elif entry[0] == "barrier-in-yield":
            _, att, label, callback = entry
            rows.append(Row(order, att, lane, f"a yield inside {callback} ran a barrier's mail", "mail",
                            (f"a yield inside {callback}",)))
    for stamp, kind, att, task, payload in run.notes:
        if kind == "commit":
            txn, records = payload
            lane = _commit_lane(run, txn, lanes)
            att = sum(1 for f in failovers if f < stamp)
            rows.append(Row(stamp, att, lane, f"commit {show(txn)}: {len(records)} record(s)", "commit",
                            tuple(f"{r!r}" for r in records)))
            continue
        lane = _lane_of_task(run, task)
        lane_add(lane)
        if kind == "in":
            rows.append(Row(stamp, att, lane, f"in {payload.key!r}: {show(payload.value)} @{show(payload.timestamp)}",
                            "record-in"))
        elif kind == "wm in":
            rows.append(Row(stamp, att, lane, f"wm in {show(payload)}", "watermark"))
        else:
            rows.append(Row(stamp, att, lane, "end of input", "end"))
    rows.sort(key=lambda r: r.order)
    if any(r.lane == JM for r in rows):
        lanes.insert(0, JM)
    lanes = [JM] * (JM in lanes) + sorted((lane for lane in lanes if lane != JM), key=_natural)
    return rows, lanes


def _commit_lane(run: Run, txn: Any, lanes: list[str]) -> str:
    if isinstance(txn, tuple) and len(txn) >= 2:
        lane = f"{txn[0]}[{txn[1]}]" if run.graph else f"subtask {txn[1]}"
        if lane in lanes:
            return lane
    return JM


def _natural(text: str) -> list:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def _before(order: Any) -> Any:
    return order - 0.5 if isinstance(order, int) else (*order[:-1], order[-1] - 0.5)


def _after(order: Any) -> Any:
    return order + 0.25 if isinstance(order, int) else (*order[:-1], order[-1] + 0.25)


def _flush_text(flush, what: str) -> str:
    horizons = ", ".join(f"{k} {show(v)}" for k, v in flush.horizons.items() if v is not None) or "none"
    return f"flush {what} (clock {show(flush.clock)}, horizons: {horizons})"


def _job_sections(scenario: Scenario, run: Run, reference) -> list[tuple[str, list[str]]]:
    from collections import Counter
    out = [("committed (this run)", [", ".join(show(r) for r in run.committed) or "(nothing)"])]
    if scenario.family == "termination":
        from streamproof.properties.termination.check import certain_timers
        from streamproof.properties.termination.steps import termination_params
        try:
            certain, children = certain_timers(scenario)
        except Exception:  # noqa: BLE001 - a scenario its checker rejects has its own verdict
            return out
        drain = termination_params(scenario)["drain"]
        lines = [f"drain: {drain}; each certain TRIGGER/WAIT timer must be committed exactly once"
                 + ("" if drain else " or kept, with its action, in the stop savepoint")]
        lines += [f"  {key!r}@{ts} {action}" for (key, ts), action in sorted(certain.items(), key=repr)]
        lines += [f"  {key!r}@{ts} {action} (child of {parent[0]!r}@{parent[1]}, once it fired)"
                  for (key, ts), (parent, action) in sorted(children.items(), key=repr)]
        fired = Counter((r[1], r[2]) for r in run.committed if isinstance(r, tuple) and r[:1] == ("p",))
        lost = [t for t in certain if not fired[t]] if drain else []
        twice = [t for t, n in fired.items() if n > 1]
        if lost or twice:
            lines.append("this run: " + "; ".join(filter(None, (
                lost and "never committed " + ", ".join(f"{k!r}@{ts}" for k, ts in sorted(lost, key=repr)),
                twice and "committed twice " + ", ".join(f"{k!r}@{ts}" for k, ts in sorted(twice, key=repr))))))
        out.append(("reference (the scenario's certain timers, what termination.fires-once expects)", lines))
        return out
    if reference is None or isinstance(reference, str):
        if isinstance(reference, str):
            out.append(("reference (failure-free run)", [f"did not finish: {reference}"]))
        return out
    got, want = Counter(run.committed), Counter(reference.committed)
    lines = [", ".join(show(r) for r in reference.committed) or "(nothing)"]
    extra, missing = sorted(got - want, key=repr), sorted(want - got, key=repr)
    lines.append("this run: same multiset" if not extra and not missing else
                 f"this run: extra {show(extra[:5])}, missing {show(missing[:5])}")
    out.append(("reference (failure-free run, interruptible timers off: what job.exactly-once compares)", lines))
    return out

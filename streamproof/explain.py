"""``streamproof explain``: a counterexample a person can read.

One job: replay a scenario on the implementation, turn what the run recorded into timeline rows
(one lane per subtask, plus ``JM`` for the job manager / coordinator), and render them as text or
as a self-contained HTML page (``streamproof/templates/``). The row where the property's invariant
broke is marked and the verdict's message printed beside it; the family's reference (what its
checker compares with) is printed after the timeline.

What a family records decides what a timeline can show:

* ``job`` (one-stage jobs and job graphs) and ``termination`` run the job simulator
  (:class:`~streamproof.impl.graph.sim.SimulationResult`). Its per-task output logs are not stamped
  with a global order, so :func:`explain` runs the scenario once more, exactly as the family's
  checker does, with a *passive* recorder: every output-log / event / bookkeeping entry is
  numbered as it is appended, and records in, watermarks in, end of input and sink commits are
  noted by wrappers that call the original method unchanged. Nothing the simulator does or
  returns changes (the recorded run is compared with the checker's; a difference is reported).
  Given a plain :class:`SimulationResult` (``timeline_html(scenario, result, verdict)``), rows
  are grouped per attempt and per lane in log order, without an order across lanes.
* ``valve_job`` records the coordinator's log (completed checkpoints, failovers, errors) and each
  recipient's final state.
* Every other family (timers, mailbox, snapshots, valve, chain_watermark, extensions) has no job
  run: its steps are drawn in one lane, with the verdict, and the implementation's observations.
"""

from __future__ import annotations

import itertools
import re
import textwrap
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Iterator

from markupsafe import Markup

from streamproof.properties import html_pages
from streamproof.properties.scenario import Scenario, dump_scenario

JM = "JM"
MAX = 2**63 - 1
MIN = -(2**63)
JOB_FAMILIES = ("job", "termination")
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


@dataclass
class Row:
    order: Any            # sort key: the recorder's number, or (attempt, position, lane) without one
    attempt: int | None
    lane: str
    text: str
    kind: str
    phrases: tuple = ()   # texts of a verdict message that point at this row
    mark: bool = False
    note: str = ""


@dataclass
class Timeline:
    title: str
    family: str
    lanes: list[str]
    rows: list[Row]
    verdicts: list[str]
    holds: bool
    failure: str | None
    ordering: str
    sections: list[tuple[str, list[str]]] = field(default_factory=list)  # (title, lines): reference etc.
    not_recorded: list[str] = field(default_factory=list)
    legend: list[tuple[str, str]] = field(default_factory=list)
    injected: str | None = None  # the bug-zoo variant applied while replaying (--inject)

    @property
    def marked(self) -> Row | None:
        return next((r for r in self.rows if r.mark), None)


# ------------------------------------------------------------------------------------ values

def show(value: Any) -> str:
    """A value as the timeline prints it: MAX / MIN for the watermark bounds."""
    if value == MAX and isinstance(value, int) and not isinstance(value, bool):
        return "MAX"
    if value == MIN and isinstance(value, int) and not isinstance(value, bool):
        return "MIN"
    if isinstance(value, tuple):
        inner = ", ".join(show(v) for v in value)
        return f"({inner}{',' if len(value) == 1 else ''})"
    if isinstance(value, list):
        return "[" + ", ".join(show(v) for v in value) + "]"
    return repr(value)


# --------------------------------------------------------------------------- passive recorder

class _Stamped(list):
    """A list that numbers each append with a shared clock (``stamps[i]`` belongs to ``self[i]``)."""

    def __init__(self, items=(), clock=None):
        super().__init__(items)
        self.clock = clock
        self.stamps = [next(clock) for _ in self]

    def append(self, item):
        self.stamps.append(next(self.clock))
        super().append(item)


class Recorder:
    """Wraps, for the duration of one run, the places a job run passes through; every wrapper
    calls the original unchanged and only notes what went by."""

    def __init__(self) -> None:
        self.clock = itertools.count(1)
        self.jobs: list = []
        self.notes: list[tuple] = []  # (stamp, kind, attempt, task, payload)

    def note(self, kind: str, task: Any, payload: Any) -> None:
        self.notes.append((next(self.clock), kind, getattr(task, "attempt", None), task, payload))

    @contextmanager
    def active(self) -> Iterator["Recorder"]:
        from streamproof.impl.tasks import operator_chain as chain
        from streamproof.impl.graph import job_runtime as graph_job
        from streamproof.impl.graph import job
        from streamproof.impl.operators import two_phase_commit_sink as sink
        from streamproof.impl.tasks import stream_task as task
        rec = self

        def wrap(stack: ExitStack, cls: type, name: str, make) -> None:
            if name not in cls.__dict__:
                return
            original = cls.__dict__[name]
            setattr(cls, name, make(original))
            stack.callback(setattr, cls, name, original)

        def job_init(original):
            def __init__(self, *args, **kwargs):
                original(self, *args, **kwargs)
                self.events = _Stamped(self.events, rec.clock)
                rec.jobs.append(self)
            return __init__

        def bookkeeping_init(original):
            def __init__(self, *args, **kwargs):
                original(self, *args, **kwargs)
                self.log = _Stamped(self.log, rec.clock)
            return __init__

        def task_init(original):
            def __init__(self, *args, **kwargs):
                original(self, *args, **kwargs)
                if isinstance(self.__dict__.get("output_log"), list):
                    self.output_log = _Stamped(self.output_log, rec.clock)
            return __init__

        def operator_init(original):
            def __init__(self, *args, **kwargs):
                original(self, *args, **kwargs)
                self.log = _Stamped(self.log, rec.clock)
            return __init__

        def noting(kind):
            def make(original):
                def method(self, *args):
                    rec.note(kind, self, args[0] if args else None)
                    return original(self, *args)
                return method
            return make

        def commit(original):
            def method(self, txn_id, records):
                if txn_id not in self.committed:
                    rec.note("commit", None, (txn_id, records))
                return original(self, txn_id, records)
            return method

        with ExitStack() as stack:
            wrap(stack, job.Job, "__init__", job_init)
            wrap(stack, graph_job.GraphJob, "__init__", job_init)
            wrap(stack, job.TaskBookkeeping, "__init__", bookkeeping_init)
            wrap(stack, task.OperatorTask, "__init__", task_init)
            wrap(stack, chain.ChainedOperator, "__init__", operator_init)
            for cls in (task.OperatorTask, chain.ChainTask):
                wrap(stack, cls, "_process_record", noting("in"))
                wrap(stack, cls, "_process_watermark", noting("wm in"))
                wrap(stack, cls, "_end_input", noting("end of input"))
            wrap(stack, sink.ExternalSystem, "commit", commit)
            yield self


@dataclass
class _Run:
    """What a job run recorded, from a finished :class:`SimulationResult` or a (crashed) job."""

    output_logs: list
    events: list
    task_log: list
    flushes: list
    committed: list
    graph: bool
    notes: list = field(default_factory=list)
    stamped: bool = False


def _run_of_result(result) -> _Run:
    graph = bool(result.metrics.get("chains"))
    return _Run(list(result.output_logs), list(result.events), list(result.task_log), list(result.flushes),
                list(result.committed), graph)


def _run_of_job(job, recorder: Recorder) -> _Run:
    graph = not hasattr(job, "spec") or not hasattr(job.spec, "function_factory")
    flushes = [(t.attempt, t.subtask_index, t.flush) for t in job.all_tasks if getattr(t, "flush", None) is not None]
    return _Run(list(job.output_logs), job.events, job.bookkeeping.log, flushes, job.external.output(), graph,
                recorder.notes, stamped=True)


# ---------------------------------------------------------------------------------- replay

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
        timeline = _job_timeline(scenario, result, failed, title)
    elif scenario.family == "valve_job":
        timeline = _valve_job_timeline(scenario, result, title)
    else:
        timeline = _steps_timeline(scenario, verdict, title)
    timeline.verdicts, timeline.holds, timeline.failure = verdicts, holds, failure
    if failed is not None or failure is not None:
        _mark(timeline, failed, failure)
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


# ------------------------------------------------------------------------------- job families

def _job_run(scenario: Scenario, on_graph: bool):
    """(recorded run or None, the checker's own run, the reference run or None). The recorded run
    is the checker's construction (its ``_run`` without the cache) under the recorder."""
    text = dump_scenario(scenario)
    if scenario.family == "termination":
        from streamproof.properties.termination import check
        plain, reference = check.run(scenario), None
        runner = lambda: check._run.__wrapped__(text)  # noqa: E731
    elif (scenario.property or "").startswith("certify."):  # certify's own faulty run (its one-operator graph)
        from streamproof.properties import certify_checks
        from streamproof.properties.job.steps import faults_of, job_params
        plain, reference = certify_checks.runs(scenario).faulty, None
        runner = lambda: certify_checks._run(scenario, True, job_params(scenario)["seed"],  # noqa: E731
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
    recorded = _run_of_job(recorder.jobs[-1], recorder) if recorder.jobs else None
    return recorded, plain, reference


def _job_timeline(scenario: Scenario, result, failed, title: str) -> Timeline:
    on_graph = failed is not None and scenario.family == "job" and failed.property not in ONE_STAGE_PROPERTIES
    reference = None
    notes: list[str] = []
    if result is not None and not isinstance(result, str):
        run = _run_of_result(result)
        ordering = ("per attempt and lane, in each lane's log order (no order across lanes: a plain "
                    "SimulationResult does not record one)")
    else:
        run, plain, reference = _job_run(scenario, on_graph)
        if run is None:
            run = _Run([], [], [], [], [], False)
        ordering = ("as it ran: the scenario ran once more, as its checker runs it, with a passive recorder "
                    "numbering every logged entry")
        if not isinstance(plain, str) and (run.committed != list(plain.committed) or
                                          [list(x[2]) for x in run.output_logs] != [list(x[2]) for x in plain.output_logs]):
            notes.append("the recorded run differs from the checker's run (the implementation is not "
                         "deterministic under the recorder): a streamproof bug, please report it")
        if isinstance(plain, str):
            notes.append(f"the run did not finish: {plain}; the timeline shows what ran until then")
    rows, lanes = _job_rows(run)
    timeline = Timeline(title, scenario.family, lanes, rows, [], True, None, ordering,
                        legend=list(LEGEND), not_recorded=list(NOT_RECORDED_JOB))
    if scenario.family == "job":
        timeline.not_recorded += NOT_RECORDED_JOB_ONLY
    timeline.sections = _job_sections(scenario, run, reference) + ([("notes", notes)] if notes else [])
    return timeline


def _lane_of_subtask(run: _Run, label: Any) -> str:
    return label if run.graph else f"subtask {label}"


def _lane_of_task(task) -> str:
    if hasattr(task, "operators"):  # a chain: records and watermarks enter at its head
        return f"{task.operators[0].name}[{task.vertex_subtask}]" if task.operators else f"{task.name}[{task.vertex_subtask}]"
    return f"subtask {task.subtask_index}"


def _lane_of_label(run: _Run, label: str, lanes: list[str]) -> str:
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


def _job_rows(run: _Run) -> tuple[list[Row], list[str]]:
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
        lane = _lane_of_task(task)
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


def _commit_lane(run: _Run, txn: Any, lanes: list[str]) -> str:
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


def _job_sections(scenario: Scenario, run: _Run, reference) -> list[tuple[str, list[str]]]:
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


# ------------------------------------------------------------------------------------ marking

def _mark(timeline: Timeline, failed, failure: str | None) -> None:
    """Marks the row where the invariant broke: the step the verdict names; the row of the lane
    and attempt its message names and, within them, the entry it quotes (the lane's last row in
    that attempt when it quotes none); else the last row (the end of the run)."""
    message = failed.message if failed is not None else ""
    note = failure or (f"{failed.invariant}: {failed.message}" if failed is not None else "")
    rows = timeline.rows
    if not rows:
        return
    target = None
    if failed is not None and failed.step is not None and timeline.lanes == ["steps"]:
        target = next((r for r in rows if r.order == failed.step), None)
    if target is None and message:
        target = _locate(rows, message)
    if target is None:
        target = rows[-1]
    target.mark, target.note = True, note


def _locate(rows: list[Row], message: str) -> Row | None:
    best = None  # (position in the message, attempt, lane)
    for attempt, lane in {(r.attempt, r.lane) for r in rows}:
        names = [lane] + ([lane.split(" ", 1)[1]] if lane.startswith("subtask ") else [f"subtask {lane}"])
        for name in names:
            for needle in (f"attempt {attempt} {name}",) if attempt is not None else ():
                for m in re.finditer(re.escape(needle) + r"(?![\d\]])", message):
                    if best is None or m.start() < best[0]:
                        best = (m.start(), attempt, lane)
    if best is not None:
        _, attempt, lane = best
        mine = [r for r in rows if r.attempt == attempt and r.lane == lane]
        hit = next((r for r in mine if any(p and p in message for p in r.phrases)), None)
        return hit or (mine[-1] if mine else None)
    hits = [r for r in rows if r.lane != JM and r.kind != "commit" and any(p and p in message for p in r.phrases)]
    if hits and len({r.attempt for r in hits}) == 1 and len(hits) == 1:
        return hits[0]
    jm = [r for r in rows if r.lane == JM and any(p and p in message for p in r.phrases)]
    return jm[0] if jm else None


# ------------------------------------------------------------------------------------- text

def render_text(timeline: Timeline, width: int = 120) -> str:
    width = max(width, 40)
    lanes = timeline.lanes
    prefix = 11  # ">> " + row number + attempt
    widths = _lane_widths(timeline, width - prefix - 3 * len(lanes))
    out = [f"== {timeline.title} =="]
    if timeline.injected:
        out.append(f"BUG INJECTED: {timeline.injected} (a bug-zoo variant applied while replaying; not the runtime as it is)")
    out += textwrap.wrap(f"order: {timeline.ordering}", width=width, subsequent_indent="  ")
    header = f"{'':3}{'#':>4} {'att':>3} " + "".join(f"| {_fit(lane, widths[lane])} " for lane in lanes)
    out += [header.rstrip(), "-" * min(width, len(header))]
    attempt = None
    for n, row in enumerate(timeline.rows, 1):
        if row.attempt is not None and attempt is not None and row.attempt != attempt:
            out.append(f"{'':3}---- attempt {row.attempt} " + "-" * max(0, min(width, len(header)) - 20))
        if row.attempt is not None:
            attempt = row.attempt
        cells = "".join(f"| {_fit(row.text if lane == row.lane else '', widths[lane])} " for lane in lanes)
        att = "" if row.attempt is None else str(row.attempt)
        out.append(f"{'>> ' if row.mark else '':3}{n:>4} {att:>3} {cells}".rstrip())
        if row.mark:
            full = f"broke here: {row.note}" + (f" [{row.text}]" if len(row.text) > widths[row.lane] else "")
            out += textwrap.wrap(full, width=max(20, width - 9), initial_indent=" " * 9 + "^ ",
                                 subsequent_indent=" " * 11)
    if not timeline.rows:
        out.append("   (nothing recorded)")
    out.append("")
    for line in timeline.verdicts:
        out.append(line)
    out.append("verdict: held" if timeline.holds else f"verdict: FAILED ({timeline.failure})")
    for title, lines in timeline.sections:
        out += ["", f"{title}:"]
        for line in lines:
            out += textwrap.wrap(line, width=width, initial_indent="  ", subsequent_indent="    ") or ["  "]
    out += ["", "legend:"]
    for symbol, meaning in timeline.legend:
        out += textwrap.wrap(f"{symbol}: {meaning}", width=width, initial_indent="  ", subsequent_indent="      ")
    if timeline.not_recorded:
        out += ["", "not recorded (so not drawn):"]
        for line in timeline.not_recorded:
            out += textwrap.wrap(line, width=width, initial_indent="  - ", subsequent_indent="    ")
    return "\n".join(out) + "\n"


def _lane_widths(timeline: Timeline, available: int) -> dict[str, int]:
    """Each lane as wide as its longest cell, the widest ones cut to share ``available``."""
    natural = {lane: len(lane) for lane in timeline.lanes}
    for row in timeline.rows:
        natural[row.lane] = max(natural.get(row.lane, 0), len(row.text))
    cap = max(natural.values(), default=12)
    while cap > 12 and sum(min(w, cap) for w in natural.values()) > available:
        cap -= 1
    return {lane: max(3, min(w, cap)) for lane, w in natural.items()}


def _fit(text: str, width: int) -> str:
    return text.ljust(width) if len(text) <= width else text[:width - 1] + "~"


# ------------------------------------------------------------------------------------- html

def render_html(timeline: Timeline) -> str:
    """A self-contained page (``streamproof/templates/explain.html.j2``) of the timeline."""
    return html_pages.render("explain.html.j2", package="streamproof",
                             title=f"streamproof explain: {timeline.title}", fragment=timeline_fragment(timeline))


def timeline_fragment(timeline: Timeline, anchor: str | None = "broken") -> Markup:
    """The timeline as an HTML fragment (its own ``<section>``; the shared stylesheet's classes);
    ``anchor``: the ``id`` of the row where the property broke (None: no id)."""
    rows, attempt = [], None
    for n, row in enumerate(timeline.rows, 1):
        new_attempt = None  # a separator row before the first row of a later attempt
        if row.attempt is not None:
            if attempt is not None and row.attempt != attempt:
                new_attempt = row.attempt
            attempt = row.attempt
        cells = [None if lane != row.lane else {"kind": row.kind, "text": row.text, "note": row.note}
                 for lane in timeline.lanes]
        rows.append({"n": n, "attempt": "" if row.attempt is None else row.attempt, "new_attempt": new_attempt,
                     "mark": row.mark, "cells": cells})
    verdict = "held" if timeline.holds else f"FAILED ({timeline.failure})"
    return Markup(html_pages.render("timeline.html.j2", package="streamproof", timeline=timeline, rows=rows,
                                    verdict=verdict, anchor=anchor))


def failure_fragment(scenario_json: str, inject: str | None = None, anchor: str | None = None) -> Markup:
    """The timeline fragment of a scenario (JSON text) replayed with bug-zoo variant ``inject``
    applied: the campaign report's ``explain`` hook (no row id: a report embeds several)."""
    from streamproof.properties.bugzoo import get_variant
    from streamproof.properties.scenario import load_scenario

    scenario = load_scenario(scenario_json)
    with get_variant(inject).patch() if inject else nullcontext():
        timeline = explain(scenario)
    timeline.injected = inject
    return timeline_fragment(timeline, anchor)


def timeline_html(scenario: Scenario, result: Any = None, verdict: Any = None) -> str:
    """A self-contained HTML page of ``scenario``'s timeline, for reports and certificates to embed.
    ``result``: the family's run (``SimulationResult``, a valve job's pipeline) or None to run it
    with the recorder; ``verdict``: a ``ReplayResult`` or ``Verdict``, or None to replay."""
    return render_html(build_timeline(scenario, result, verdict))

"""Checks of a ``job`` scenario: the faulty run (interruptions, checkpoints, failures, rescales)
against the job's reference, the output of its failure-free run as ``model/job.py`` gives it.

  * ``job.exactly-once``: the committed output equals the reference as a multiset, and per key
    in the order the operator promises (window ends increasing);
  * ``job.timer-effects-once``: every timer's effect (key, timer timestamp) is committed exactly once,
    and (the task's bookkeeping) every snapshot was taken between mails, none inside a callback;
  * ``job.watermarks``: in every task attempt, output watermarks strictly increase and no record
    produced by a timer at or below a watermark leaves after that watermark; (bookkeeping) at most
    one watermark continuation per operator is pending;
  * ``job.end-of-input``: with drain, MAX_WATERMARK leaves before EndOfData and nothing after it
    (FLINK-39481), and every interrupted timer firing made progress (FLIP-443: at least one
    timer per attempt).
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache

from streamproof.impl.graph.job import GraphJobSpec
from streamproof.impl.graph.job import JobSpec
from streamproof.impl.operators.keyed_process_operator import StreamRecord
from streamproof.model import job as job_model
from streamproof.impl.graph.sim import SimulationError, SimulationResult, simulate
from streamproof.impl.timers.internal_timer_service import MAX_WATERMARK
from streamproof.properties.job.functions import FUNCTIONS, STATELESS_FUNCTIONS
from streamproof.properties.job.steps import _PLAIN_GRAPHS, _parsed_graph, faults_of, graph_of, job_params, sources_of, task_config
from streamproof.properties.bugzoo import clears_on_patch
from streamproof.properties.reach import note
from streamproof.properties.scenario import Scenario, dump_scenario, load_scenario
from streamproof.properties.verdict import Verdict


def _spec(scenario: Scenario, interruptible: bool | None) -> JobSpec:
    params = job_params(scenario)
    function = FUNCTIONS[params["operator"]]
    return JobSpec(sources_of(scenario), function, parallelism=params["parallelism"],
                   max_parallelism=params["max_parallelism"], checkpoint_interval=params["checkpoint_interval"],
                   config=task_config(params, interruptible), channel_capacity=params["channel_capacity"],
                   async_mail_rate=params["async_mail_rate"], processing_time=params["processing_time"],
                   restore_clock_gap=params["restart_gap"])


def graph_spec(scenario: Scenario, interruptible: bool | None = None) -> GraphJobSpec:
    """The scenario as a job graph (its one-stage graph when it names none)."""
    params = job_params(scenario)
    return GraphJobSpec(graph_of(scenario), sources_of(scenario), {**FUNCTIONS, **STATELESS_FUNCTIONS},
                        max_parallelism=params["max_parallelism"], checkpoint_interval=params["checkpoint_interval"],
                        config=task_config(params, interruptible), channel_capacity=params["channel_capacity"],
                        async_mail_rate=params["async_mail_rate"], watermark_mode=params["watermark_mode"],
                        slots=params["slots"])


def is_graph(scenario: Scenario) -> bool:
    return job_params(scenario)["graph"] is not None


# the job properties draw the same scenarios from one seed and explore one after another: the cache
# must hold a whole exploration's runs (faulty and reference) for the next property to find them.
# 256 entries missed everything at the default 300 examples; a run is about 70 kB (issue 30)
RUN_CACHE_SIZE = 2048


# the scenario object whose text ``_run`` is asked for (set around the call): a run simulates it
# as it is, without parsing the text back (issue 30: that round trip was 4 % of an exploration)
_asked: dict[str, Scenario] = {}


@lru_cache(maxsize=RUN_CACHE_SIZE)
def _run(text: str, on_graph: bool, reference: bool) -> SimulationResult | str:
    """The faulty run of a scenario, or its reference (failure-free, interruptible timers off);
    a scenario with a graph (or ``on_graph``) runs on the job-graph runtime. Cached: every job
    property of one scenario shares them."""
    scenario = _asked.get(text) or load_scenario(text)
    seed = job_params(scenario)["seed"]
    interruptible, faults = (False, ()) if reference else (None, faults_of(scenario))
    try:
        if on_graph or is_graph(scenario):
            return simulate(graph_spec(scenario, interruptible), seed, faults)
        return simulate(_spec(scenario, interruptible), seed, faults)
    except (SimulationError, RuntimeError) as e:
        return f"{type(e).__name__}: {e}"


clears_on_patch(_run.cache_clear)
clears_on_patch(_parsed_graph.cache_clear)  # a bug patch may change what a graph declares
clears_on_patch(_PLAIN_GRAPHS.clear)


def _cached_run(scenario: Scenario, on_graph: bool, reference: bool) -> SimulationResult | str:
    text = dump_scenario(scenario)
    _asked[text] = scenario
    try:
        return _run(text, on_graph or is_graph(scenario), reference)
    finally:
        _asked.pop(text, None)


def faulty_run(scenario: Scenario, on_graph: bool = False) -> SimulationResult | str:
    """The scenario's run with its faults."""
    return _cached_run(scenario, on_graph, False)


def reference_run(scenario: Scenario, on_graph: bool = False) -> SimulationResult | str:
    """The scenario's failure-free run, interruptible timers off (run only where it is read)."""
    return _cached_run(scenario, on_graph, True)


def runs(scenario: Scenario, on_graph: bool = False) -> tuple[SimulationResult | str, SimulationResult | str]:
    """(faulty run, reference run) of a scenario."""
    return faulty_run(scenario, on_graph), reference_run(scenario, on_graph)


def _observed(run: SimulationResult) -> list[dict]:
    return [{"event": "committed", "record": list(r) if isinstance(r, tuple) else r} for r in run.committed] + \
           [{"event": e[0], "detail": list(e[1:])} for e in run.events]


def _reach(run: SimulationResult) -> None:
    if run.interrupted_firings_seen:
        note("timer firing interrupted")
    for fault in run.faults_applied:
        if fault.after_checkpoint:
            note("failure after a checkpoint taken inside an interrupted firing")
        note({"fail_in_interrupted_firing": "failure inside an interrupted firing",
              "rescale": "rescaled restore", "fail": "failure at a step"}[fault.kind])
    if any(e[0] == "failover" and e[3] is not None for e in run.events):
        note("restored from a completed checkpoint")
    if run.channel_state_records:
        note("unaligned checkpoint carried in-flight records")
    if any(e[0] == "failover" and e[3] is None for e in run.events):
        note("restarted before the first checkpoint")
    counts = run.task_counts
    if counts.get("a yield ran a mail inside on_timer"):
        note("try_yield ran a mail inside a timer callback")
    if any(e[0] == "snapshot" and (e[4] is not None or e[5]) for e in run.task_log):
        note("barrier processed during an interrupted firing")
    if counts.get("checkpoint aborted after a task's snapshot"):
        note("failure between a task's snapshot and its checkpoint's completion")
    if counts.get("watermark while a continuation was pending"):
        note("continuation pending when a new watermark arrived")
    if run.metrics.get("chains"):
        _reach_graph(run)


def _reach_graph(run: SimulationResult) -> None:
    chains = [c.split(" -> ") for c in run.metrics["chains"]]
    if len(chains) > 2:
        note("job graph with more than one stage")
    if any(len(c) > 2 or (len(c) == 2 and "sink" not in c[-1]) for c in chains):
        note("operator chain of more than one operator before its sink")
    if any(e[0] == "failover" and e[1] == "rescale" for e in run.events):
        note("job graph rescaled")
    for _, _, log in run.output_logs:
        marks = [e[1] for e in log if e[0] == "watermark"]
        if any(b <= a for a, b in zip(marks, marks[1:])):
            note("an operator emitted a watermark twice")
            break
    if any(lag for _, _, lag in run.metrics["watermark_lags"]):
        note("output watermark behind the timers it fired")
    if run.metrics["timer_delays"]:
        note("processing-time timer mail ran")
    if run.metrics.get("second_input_records"):
        note("a two-input operator processed records of both inputs")


def _reach_restores(scenario: Scenario, run: SimulationResult) -> None:
    """Issue 31's targeted cases: a rescale of a keyed operator reading a keyed stream over a
    forward edge, and a restore after end of input reached a task (each also with in-flight
    records carried by unaligned checkpoints, counted in both labels)."""
    inflight = " with in-flight records" if run.channel_state_records else ""
    failovers = [e for e in run.events if e[0] == "failover"]
    if run.metrics.get("layouts") and any(e[1] == "rescale" and e[3] is not None for e in failovers):
        graph = graph_of(scenario)
        forward = {graph.chain_of[op.name] for op in graph.operators if op.kind == "keyed_process" and any(
            e.partitioning == "forward" and graph.by_name[e.source].kind != "source" for e in graph.inputs(op.name))}
        layouts = run.metrics["layouts"]
        if any(a.get(c) != b.get(c) for a, b in zip(layouts, layouts[1:]) for c in forward):
            note("keyed forward edge rescaled from a checkpoint")
            if inflight:
                note("keyed forward edge rescaled from a checkpoint" + inflight)
    restored = {n + 1 for n, e in enumerate(failovers) if e[3] is not None}  # attempts restored from a checkpoint
    if any(attempt + 1 in restored and any(e[0] == "end_of_data" for e in log) for attempt, _, log in run.output_logs):
        note("restored after a task's end of input")
        if inflight:
            note("restored after a task's end of input" + inflight)


def check_job(scenario: Scenario, prop: str) -> Verdict:
    """The property on the scenario's faulty run. A property that compares with the failure-free
    output (:data:`READS_REFERENCE`) compares with ``model/job.py``'s; the failure-free *run* is
    simulated only when the faulty run's output differs, to say which run is wrong: when it too
    differs from the model the invariant is ``reference-run-matches-model`` (issue 30: the
    reference run was a third of such an example's time and, where the faulty output matches the
    model, changes no verdict)."""
    faulty = faulty_run(scenario)
    if isinstance(faulty, str):
        return Verdict(prop, False, [], "job-finishes", faulty)
    _reach(faulty)
    _reach_restores(scenario, faulty)
    observed = _observed(faulty)
    expected = model_reference(scenario) if prop in READS_REFERENCE else None
    problem = CHECKS[prop](faulty, expected)
    if problem and expected is not None:
        reference = reference_run(scenario)
        if isinstance(reference, str):
            return Verdict(prop, False, [], "reference-run", f"the failure-free run did not finish: {reference}")
        if Counter(reference.committed) != expected:
            extra = sorted(Counter(reference.committed) - expected, key=repr)[:3]
            missing = sorted(expected - Counter(reference.committed), key=repr)[:3]
            return Verdict(prop, False, observed, "reference-run-matches-model",
                           f"the failure-free run differs from model/job.py: extra {extra}, missing {missing}")
    if problem:
        invariant, message = problem
        return Verdict(prop, False, observed, invariant, message)
    return Verdict(prop, True, observed)


def model_reference(scenario: Scenario) -> Counter:
    """``model/job.py``'s reference output for the scenario (independent of the implementation)."""
    params = job_params(scenario)
    sources = [[("record", e.key, e.value, e.timestamp) if isinstance(e, StreamRecord) else ("watermark", e.timestamp)
                for e in source] for source in sources_of(scenario)]
    if params["graph"] is not None:
        return job_model.graph_reference(params["graph"], sources, params["drain"])
    return job_model.reference_output(params["operator"], sources, params["drain"])


def _exactly_once(run: SimulationResult, expected: Counter):
    got, want = Counter(run.committed), expected
    if got != want:
        extra, missing = sorted(got - want, key=repr)[:3], sorted(want - got, key=repr)[:3]
        return "committed-equals-reference", f"extra {extra}, missing {missing}"
    if run.metrics:
        return None  # a job graph: output of several upstream subtasks has no promised order
    per_key: dict = {}
    for record in run.committed:
        if len(record) == 3 and record[0] == "side-output":
            record = record[2]  # a side output: the window result it carries
        key, ts = record[0], record[1]
        if per_key.get(key, -2**63 - 1) >= ts:
            return "per-key-order", f"key {key!r}: window {ts} committed after window {per_key[key]}"
        per_key[key] = ts
    return None


def _effects(committed: list) -> Counter:
    """A timer's effect is named by the (key, timer timestamp) its output starts with (a side
    output's by its value's)."""
    unwrapped = (r[2] if isinstance(r, tuple) and len(r) == 3 and r[0] == "side-output" else r for r in committed)
    return Counter((r[0], r[1]) for r in unwrapped if isinstance(r, tuple) and len(r) >= 2)


def _snapshots_between_mails(run: SimulationResult):
    """Flink takes a snapshot only between mails: the checkpoint's mail (``triggerCheckpointAsync``,
    an unaligned barrier's priority-event mail) is put by the task's main executor, of
    MIN_PRIORITY, and an operator's ``yield``/``tryYield`` takes only mail of at least its own
    priority (its chain index), never that one. A snapshot taken inside a callback holds the fired
    timer's removal but not its output: after a restore from it the timer's effect is lost."""
    for entry in run.task_log:
        if entry[0] == "barrier-in-yield":
            _, attempt, task, callback = entry
            return ("snapshot-between-mails",
                    f"attempt {attempt} {task}: a yield inside {callback} ran a checkpoint barrier's mail")
        if entry[0] == "snapshot" and entry[4] is not None:
            _, attempt, task, checkpoint, callback, _ = entry
            return ("snapshot-between-mails",
                    f"attempt {attempt} {task}: checkpoint {checkpoint}'s snapshot taken inside {callback}")
    return None


def _timer_effects_once(run: SimulationResult, expected: Counter):
    if (problem := _snapshots_between_mails(run)) is not None:
        return problem
    effects, wanted = _effects(run.committed), _effects(expected.elements())
    twice = [e for e, n in effects.items() if n > wanted.get(e, 1)]
    if twice:
        return "each-timer-effect-once", f"timer effects committed more than once: {sorted(twice, key=repr)[:3]}"
    lost = sorted((e for e, n in wanted.items() if effects.get(e, 0) < n), key=repr)
    if lost:
        return "each-timer-effect-once", f"timer effects never committed: {lost[:3]}"
    return None


def _one_continuation(run: SimulationResult):
    """FLIP-443 (``MailboxWatermarkProcessor.progressWatermarkScheduled``): at most one watermark
    continuation per operator is pending; a watermark arriving meanwhile only raises the target."""
    for entry in run.task_log:
        if entry[0] == "continuations":
            _, attempt, task, priority, pending = entry
            return ("one-watermark-continuation",
                    f"attempt {attempt} {task}: {pending} watermark continuations of the operator at chain "
                    f"index {priority} pending at once")
    return None


def _watermarks(run: SimulationResult, expected: Counter | None):
    if (problem := _one_continuation(run)) is not None:
        return problem
    for attempt, subtask, log in run.output_logs:
        last = None
        for position, entry in enumerate(log):
            if entry[0] == "watermark":
                if last is not None and entry[1] <= last:
                    return "watermarks-strictly-increase", f"attempt {attempt} subtask {subtask}: {entry[1]} after {last}"
                last = entry[1]
            # event-time timer output only: a processing-time timer's timestamp is wall-clock
            # time, which no watermark orders
            elif entry[0] == "record" and entry[3] == "timer" and last is not None and entry[2] <= last:
                return ("no-timer-output-behind-its-watermark",
                        f"attempt {attempt} subtask {subtask}: timer {entry[2]} output {entry[1]!r} after watermark {last}")
    return None


def _end_of_input(run: SimulationResult, expected: Counter | None):
    for attempt, subtask, log in run.output_logs:
        kinds = [e[0] for e in log]
        if "end_of_data" not in kinds:
            continue
        end = kinds.index("end_of_data")
        if end != len(log) - 1:
            return "nothing-after-end-of-data", f"attempt {attempt} subtask {subtask}: {log[end + 1]!r} after EndOfData"
        if ("watermark", MAX_WATERMARK) not in log[:end]:
            return "max-watermark-before-end-of-data", f"attempt {attempt} subtask {subtask} ended without MAX_WATERMARK"
    for attempt, subtask, stalled in run.stalled_firings:
        return "interrupted-firing-makes-progress", f"attempt {attempt} subtask {subtask}: {stalled} interrupted advances fired no timer"
    return None


# -- liveness (job-graph runtime) -----------------------------------------------------------------
TIMER_MAIL_STEPS = 3  # a processing-time timer's mail runs within this many of its task's mailbox steps


def _watermark_liveness(run: SimulationResult, expected: Counter | None):
    from streamproof.impl.tasks.chained_operators import LAG_STEPS
    for attempt, label, lag in run.metrics["watermark_lags"]:
        if lag > LAG_STEPS:
            return ("output-watermark-advances",
                    f"attempt {attempt} {label}: the output watermark stayed behind the timers it had fired "
                    f"for {lag} mailbox steps (allowed {LAG_STEPS})")
    return None


def _timer_liveness(run: SimulationResult, expected: Counter | None):
    delays = run.metrics["timer_delays"]
    if delays and max(delays) > TIMER_MAIL_STEPS:
        return ("processing-timer-mail-runs",
                f"a processing-time timer's mail waited {max(delays)} mailbox steps (allowed {TIMER_MAIL_STEPS})")
    return None


def _drain_liveness(run: SimulationResult, expected: Counter | None):
    from streamproof.impl.timers.internal_timer_service import MAX_WATERMARK as END
    if run.metrics["stranded"]:
        return "nothing-left-behind", f"{run.metrics['stranded']} elements reached a task after its EndOfData"
    drained = any(e[0] == "end_of_data" for _, _, log in run.output_logs for e in log)
    for label, kind, watermark, due in run.metrics["final"]:
        if due:
            return "due-timers-fire", f"{label}: {due} event-time timers due at its watermark never fired"
        if drained and watermark != END:
            return "output-watermark-reaches-input", f"{label} ({kind}) ended at watermark {watermark}, not MAX_WATERMARK"
    return None


LIVENESS = {
    "job.watermark-liveness": _watermark_liveness,
    "job.timer-liveness": _timer_liveness,
    "job.drain-liveness": _drain_liveness,
}


def check_liveness(scenario: Scenario, prop: str) -> Verdict:
    """A liveness property, on the job-graph runtime (a scenario without a graph runs as its
    one-stage graph): the run must finish, then the property's own measure."""
    faulty = _cached_run(scenario, True, False)  # no reference needed
    if isinstance(faulty, str):
        return Verdict(prop, False, [], "job-finishes", faulty)
    _reach(faulty)
    problem = LIVENESS[prop](faulty, None)
    if problem:
        return Verdict(prop, False, _observed(faulty), *problem)
    return Verdict(prop, True, _observed(faulty))


# the properties that compare the faulty run with the failure-free one (the others read the faulty
# run alone and never simulate the reference: issue 30, a third of a job example's time)
READS_REFERENCE = frozenset({"job.exactly-once", "job.timer-effects-once"})

CHECKS = {
    "job.exactly-once": _exactly_once,
    "job.timer-effects-once": _timer_effects_once,
    "job.watermarks": _watermarks,
    "job.end-of-input": _end_of_input,
}

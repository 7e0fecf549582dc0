"""Checks of a ``termination`` scenario (FLIP-269 at end of input, DESIGN.md §3.4) on one run of
the job with its faults. The oracle is the scenario itself: which timers exist and with which
action follows from the input, whatever the interleaving.

  * ``termination.fires-once``: no processing-time timer's output is committed twice; with drain
    every *certain* TRIGGER / WAIT timer (below) is committed exactly once; without drain each is
    committed or kept, with its action, in the stop savepoint (with format-1 checkpoints, once the
    job restored from one, each fires at most once: restored timers became CANCEL);
  * ``termination.actions-obeyed``: in every end-of-input flush, a timer that was not due when
    the flush began fires only if its effective action is TRIGGER (reading MAX) or WAIT (reading
    at least its time) and its time is at most the horizon; with format-1 checkpoints and no
    override, only if this attempt registered it (a restored one is CANCEL); no firing reads a
    time before its timer's; outside a flush nothing reads MAX; without drain there is no flush;
  * ``termination.finish-is-last``: the job finishes (the flush terminates); with drain every
    event-time timer (one per record) is committed exactly once; in every task
    attempt that ended, MAX_WATERMARK and every event-time timer's output (the interrupted
    firing's continuation) come before the flush, the flush before ``finish()``, and only
    EndOfData after ``finish()``.

A timer is *certain* when its key and time belong to one record of the input, no callback can
register or delete that key and time (a child ``then`` away, a deletion ``deletes`` away), and
its effective action is TRIGGER or WAIT; also the one child of a committed certain timer with a
negative ``then``, when nothing else can name it. Other timers fire at most once: whether they
fire depends on the interleaving (a deletion racing with a registration, a chain cut by the
horizon), which the scenario does not fix.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache, partial

from streamproof.impl.graph.job import JobSpec
from streamproof.impl.graph.sim import SimulationError, SimulationResult, simulate
from streamproof.impl.tasks.stream_task import TaskConfig
from streamproof.impl.timers.termination import TimerTerminationAction
from streamproof.impl.timers.internal_timer_service import MAX_WATERMARK, TimerFiringBudgetExceeded
from streamproof.properties.bugzoo import clears_on_patch
from streamproof.properties.reach import note
from streamproof.properties.scenario import Scenario, dump_scenario, load_scenario
from streamproof.properties.termination.steps import (
    ProcessingTimer, TerminationTimers, faults_of, overrides_of, sources_of, termination_params,
)
from streamproof.model.termination import CANCEL, DUE, MAX_TIME, TRIGGER, WAIT, FlushSpec
from streamproof.properties.verdict import Verdict


FIRING_BUDGET = 10_000  # per call (an advance, a flush): a runaway flush fails fast


def _spec(scenario: Scenario) -> JobSpec:
    p = termination_params(scenario)
    config = TaskConfig(interruptible_timers=p["interruptible_timers"], unaligned_checkpoints=p["unaligned"],
                        drain=p["drain"], firing_budget=FIRING_BUDGET, snapshot_format=p["snapshot_format"])
    return JobSpec(sources_of(scenario), partial(TerminationTimers, p["override"], p["yielding"], overrides_of(scenario)),
                   parallelism=p["parallelism"], max_parallelism=p["max_parallelism"],
                   checkpoint_interval=p["checkpoint_interval"], config=config,
                   channel_capacity=p["channel_capacity"], async_mail_rate=p["async_mail_rate"])


@lru_cache(maxsize=256)
def _run(text: str) -> SimulationResult | str:
    scenario = load_scenario(text)
    try:
        return simulate(_spec(scenario), termination_params(scenario)["seed"], faults_of(scenario))
    except TimerFiringBudgetExceeded as e:
        return f"flush-terminates: {e}"
    except (SimulationError, RuntimeError) as e:
        return f"job-finishes: {type(e).__name__}: {e}"


clears_on_patch(_run.cache_clear)


def run(scenario: Scenario) -> SimulationResult | str:
    return _run(dump_scenario(scenario))


def effective(scenario: Scenario, action: str) -> str:
    return termination_params(scenario)["override"] or action


def possible_actions(scenario: Scenario, action: str) -> set:
    """Every effective action a timer registered with ``action`` may have: ``override`` steps
    change it while the job runs (when, relative to the end, depends on the run)."""
    return {effective(scenario, action), *(a for a, _ in overrides_of(scenario))}


def certain_timers(scenario: Scenario) -> dict:
    """(``(key, ts) -> effective action`` of the record timers that must fire exactly once with
    drain, ``child -> (parent, action)`` of the certain timers' earlier children)."""
    timers = [s for s in scenario.steps if isinstance(s, ProcessingTimer)]
    named = Counter((s.key, s.pts) for s in timers)
    for s in timers:
        if s.deletes:
            named[(s.key, s.pts + s.deletes)] += 1
        if s.then and s.then < 0:
            named[(s.key, s.pts + s.then)] += 1
    chains = [(s.key, s.pts, s.then) for s in timers if s.then and s.then > 0]

    def in_chain(key, ts) -> bool:
        return any(k == key and ts > start and (ts - start) % then == 0 for k, start, then in chains)

    certain = {}
    for s in timers:
        action = effective(scenario, s.action or "CANCEL")
        if "CANCEL" not in possible_actions(scenario, s.action or "CANCEL") and named[(s.key, s.pts)] == 1 and not in_chain(s.key, s.pts):
            certain[(s.key, s.pts)] = action
    children = {}
    for s in timers:
        if (s.key, s.pts) in certain and s.then and s.then < 0:
            child = (s.key, s.pts + s.then)
            if named[child] == 1 and not in_chain(*child):
                children[child] = ((s.key, s.pts), certain[(s.key, s.pts)])
    return certain, children


def _firings(records) -> list[tuple]:
    return [r for r in records if isinstance(r, tuple) and r and r[0] == "p"]


def _fires_once(scenario: Scenario, result: SimulationResult):
    drain = termination_params(scenario)["drain"]
    committed = Counter((r[1], r[2]) for r in _firings(result.committed))
    twice = sorted((t for t, n in committed.items() if n > 1), key=repr)
    if twice:
        return "each-firing-once", f"processing-time timers committed more than once: {twice[:3]}"
    certain, children = certain_timers(scenario)
    expected = dict(certain)
    for (key, ts), (parent, action) in children.items():  # registered once its parent fired
        if committed[parent]:
            expected[(key, ts)] = action
    if _format_1_restore(scenario, result):
        return None  # restored timers became CANCEL: at most once (checked above), see actions-obeyed
    if drain:
        lost = sorted((t for t in expected if not committed[t]), key=repr)
        if lost:
            return "trigger-and-wait-fire-once", (
                f"{len(lost)} TRIGGER/WAIT timer(s) never committed, e.g. " +
                ", ".join(f"key {k!r} at {ts} ({expected[(k, ts)]})" for k, ts in lost[:3]))
        return None
    kept = {(k, ts): a for k, ts, a in result.final_processing_timers}
    in_format = termination_params(scenario)["snapshot_format"]
    for timer, action in sorted(expected.items(), key=repr):
        if committed[timer]:
            continue
        if timer not in kept:
            return "kept-in-the-stop-savepoint", f"{action} timer {timer} neither fired nor in the stop savepoint"
        allowed = {int(TimerTerminationAction[a]) for a in possible_actions(scenario, action)} | {
            int(TimerTerminationAction[action])}
        if in_format == 2 and kept[timer] not in allowed:
            return "kept-in-the-stop-savepoint", f"timer {timer} is in the stop savepoint with action {kept[timer]}, not {action}"
    return None


def _format_1_restore(scenario: Scenario, result: SimulationResult) -> bool:
    """Whether the job restored timers from a format-1 checkpoint (their actions became CANCEL)."""
    return termination_params(scenario)["snapshot_format"] == 1 and any(
        e[0] == "failover" and e[3] is not None for e in result.events)


def _pending_report(log: list, flush) -> tuple | None:
    """The operator's ``("pending", override, timers, history)`` record just before ``flush``."""
    return next((e[1] for e in reversed(log[:flush.start]) if e[0] == "record" and isinstance(e[1], tuple)
                 and e[1][:1] == ("pending",)), None)


def _actions_obeyed(scenario: Scenario, result: SimulationResult):
    params = termination_params(scenario)
    drain = params["drain"]
    flushes = {(attempt, subtask): f for attempt, subtask, f in result.flushes}
    if flushes and not drain:
        return "no-flush-without-drain", f"stop without drain flushed timers in {sorted(flushes)[:3]}"
    for attempt, subtask, log in result.output_logs:
        flush = flushes.get((attempt, subtask))
        report = None if flush is None else _pending_report(log, flush)
        override = params["override"] if report is None else report[1]
        restored_as_cancel = params["snapshot_format"] == 1 and override is None
        for position, entry in enumerate(log):
            if entry[0] != "record" or not (isinstance(entry[1], tuple) and entry[1][:1] == ("p",)):
                continue
            _, key, ts, action, now = entry[1]
            where = f"attempt {attempt} subtask {subtask}: timer {ts} of key {key!r}"
            inside = flush is not None and flush.start <= position < flush.end
            if now != MAX_WATERMARK and now < ts:
                return "not-before-its-time", f"{where} fired reading processing time {now}"
            if not inside:
                if now == MAX_WATERMARK:
                    return "max-only-in-the-flush", f"{where} read MAX outside the end-of-input flush"
                continue
            if ts <= flush.clock:
                continue  # already due: fired as usual
            act = override or action
            if restored_as_cancel and not any(e[0] == "record" and e[1] == ("r", key, ts) for e in log[:position]):
                return ("format-1-restores-cancel", f"{where} fired by its action in the flush, but this attempt "
                        f"only restored it from a format-1 checkpoint (no action: CANCEL)")
            if act == "CANCEL":
                return "no-cancel-after-end-of-input", f"{where} is CANCEL and fired in the end-of-input flush"
            horizon = flush.horizons.get("user-timers")
            if horizon is None or ts > horizon:
                return "nothing-after-the-horizon", f"{where} fired in the flush after its horizon {horizon}"
            if act == "TRIGGER" and now != MAX_WATERMARK:
                return "trigger-reads-max", f"{where} is TRIGGER and read {now} in the flush, not MAX"
            if act == "WAIT" and now == MAX_WATERMARK:
                return "wait-reads-its-time", f"{where} is WAIT and read MAX in the flush"
        if report is not None:
            problem = _flush_refines_the_model(scenario, result, attempt, subtask, log, flush, report)
            if problem:
                return problem
    return None


CODES = {"CANCEL": CANCEL, "TRIGGER": TRIGGER, "WAIT": WAIT}
NAMES = {CANCEL: "CANCEL", TRIGGER: "TRIGGER", WAIT: "WAIT", DUE: "already due"}


def _registered_actions(scenario, result, attempt, log, flush, report) -> dict:
    """The registered action (model code) of every timer pending at the flush's start: the one of
    its last registration in this attempt; a restored one's: CANCEL from a format-1 checkpoint,
    from a format-2 one the action the checkpoint wrote (the effective one then, so possibly an
    override an earlier attempt had set: when several are possible, the one the flush applied if
    it is one of them)."""
    params = termination_params(scenario)
    registered_here = {e[1][1:] for e in log[:flush.start] if e[0] == "record" and isinstance(e[1], tuple)
                       and e[1][:1] == ("r",)}
    fired = {(r[1], r[2]): (TRIGGER if r[4] == MAX_WATERMARK else WAIT)
             for _, r in _flush_records(log, flush) if r[0] == "p"}
    actions = {}
    for key, pts, action, _, _ in report[2]:
        if (key, pts) in registered_here:
            actions[(key, pts)] = CODES[action]
        elif params["snapshot_format"] == 1:
            actions[(key, pts)] = CANCEL
        else:
            allowed = {CODES[a] for a in possible_actions(scenario, action)} | {CODES[action]}
            seen = fired.get((key, pts), CANCEL)
            actions[(key, pts)] = seen if seen in allowed else CODES[action]
    return actions


def _flush_records(log, flush):
    return [(i, e[1]) for i, e in enumerate(log[flush.start:flush.end], flush.start)
            if e[0] == "record" and isinstance(e[1], tuple) and e[1][:1] in (("p",), ("r",))]


def _flush_refines_the_model(scenario, result, attempt, subtask, log, flush, report):
    """Replays the flush on :class:`streamproof.model.termination.FlushSpec` from the timers the
    operator had pending when it began: the firings must be the model's, in its order (timestamp
    order; equal timestamps in any order), each reading the model's clock (TRIGGER: MAX; WAIT: the
    later of the flush's clock and its time; already due: the clock), with the override in effect
    applied to every timer, earlier and restored ones included; CANCEL ones and ones after the
    horizon never fire, and no TRIGGER / WAIT one is left out."""
    where = f"attempt {attempt} subtask {subtask}"
    override = report[1]
    spec = FlushSpec(clock=flush.clock, override=None if override is None else CODES[override])
    plans = {(key, pts): (action, then, deletes) for key, pts, action, then, deletes in report[2]}
    for (key, pts), action in _registered_actions(scenario, result, attempt, log, flush, report).items():
        spec.register((pts, key, None), action)
    spec.start_flush()
    observed = [r for _, r in _flush_records(log, flush) if r[0] == "p"]
    i = 0

    def label(timer):
        if timer[0] <= spec.clock:
            return f"timer {timer[0]} of key {timer[1]!r} (already due at the flush's clock {spec.clock})"
        action = spec.effective(timer)
        return f"timer {timer[0]} of key {timer[1]!r} ({NAMES[action]}{' by the override' if spec.override is not None else ''})"

    while spec.actions:
        candidates = sorted(spec.candidates(), key=repr)
        nxt = observed[i] if i < len(observed) else None
        timer = None if nxt is None else (nxt[2], nxt[1], None)
        if timer in candidates:
            outcome = spec.handle(timer)
            if outcome is None:
                return ("flush-applies-the-effective-action",
                        f"{where}: timer {nxt[2]} of key {nxt[1]!r} fired in the flush, but its effective action "
                        f"there is {NAMES[spec.effective(timer)] if timer in spec.actions else 'CANCEL or it is after the horizon'}"
                        f" (override {override})")
            action, now = outcome
            expected = MAX_WATERMARK if now == MAX_TIME else now
            if nxt[4] != expected:
                return ("flush-reads-the-specified-clock",
                        f"{where}: {NAMES[action]} timer {nxt[2]} of key {nxt[1]!r} read processing time {nxt[4]} "
                        f"in the flush, not {expected} (flush clock {spec.clock if action != TRIGGER else 'n/a'})")
            key, ts = nxt[1], nxt[2]
            plan_action, then, deletes = plans.pop((key, ts), ("CANCEL", None, None))
            if then:
                child = ts + then
                plans[(key, child)] = (plan_action, then if then > 0 else None, None)
                spec.register((child, key, None), CODES[plan_action])
            if deletes:
                spec.delete((ts + deletes, key, None))
                plans.pop((key, ts + deletes), None)
            i += 1
            continue
        silent = next((c for c in candidates if spec.outcome(c) is None), None)
        if silent is not None:
            spec.handle(silent)
            plans.pop((silent[1], silent[0]), None)
            continue
        first = candidates[0]
        if nxt is None:
            return ("flush-applies-the-effective-action",
                    f"{where}: {label(first)} was pending at the flush's start and never fired in it "
                    f"(override {override})")
        if any((r[2], r[1], None) == first for r in observed[i:]):
            return ("flush-in-timestamp-order",
                    f"{where}: the flush fired timer {nxt[2]} of key {nxt[1]!r} while {label(first)} was pending "
                    f"(timestamp order)")
        if timer in spec.actions:
            return ("flush-applies-the-effective-action",
                    f"{where}: {label(first)} was pending at the flush's start and never fired in it "
                    f"(override {override})")
        return ("flush-applies-the-effective-action",
                f"{where}: the flush fired timer {nxt[2]} of key {nxt[1]!r}, which was not pending (the next is "
                f"{label(first)})")
    if i < len(observed):
        return ("flush-applies-the-effective-action",
                f"{where}: the flush fired timer {observed[i][2]} of key {observed[i][1]!r}, which was not pending")
    return None


def _finish_is_last(scenario: Scenario, result: SimulationResult):
    if termination_params(scenario)["drain"]:  # MAX_WATERMARK fired each event-time timer once
        fired = Counter((r[1], r[2]) for r in result.committed if isinstance(r, tuple) and r[:1] == ("e",))
        wanted = Counter((s.key, s.pts) for s in scenario.steps if isinstance(s, ProcessingTimer))
        if fired != wanted:
            wrong = sorted(set(fired.elements()) ^ set(wanted.elements()), key=repr)[:3] or sorted(
                (t for t in wanted if fired[t] != wanted[t]), key=repr)[:3]
            return "event-timers-fire-once", f"event-time timers not committed exactly once: {wrong}"
    flushes = {(attempt, subtask): f for attempt, subtask, f in result.flushes}
    for attempt, subtask, log in result.output_logs:
        kinds = [e[0] for e in log]
        if "end_of_data" not in kinds:
            continue
        where = f"attempt {attempt} subtask {subtask}"
        finish = next((i for i, e in enumerate(log) if e[0] == "record" and e[1] == ("finish",)), None)
        if finish is None:
            return "finish-called", f"{where} sent EndOfData without finish()"
        if log[finish + 1:] != [("end_of_data",)]:
            return "nothing-after-finish", f"{where}: {log[finish + 1]!r} after finish()"
        flush = flushes.get((attempt, subtask))
        if flush is None:
            continue
        if flush.end > finish:
            return "flush-before-finish", f"{where}: the flush ended at {flush.end}, after finish() at {finish}"
        before = log[:flush.start]
        if ("watermark", MAX_WATERMARK) not in before:
            return "max-watermark-before-flush", f"{where}: the flush began before MAX_WATERMARK left"
        late = [e for e in log[flush.start:] if e[0] == "record" and isinstance(e[1], tuple) and e[1][:1] == ("e",)]
        if late:
            return "event-timers-before-flush", f"{where}: event-time timer output {late[0][1]!r} after the flush began"
    return None


CHECKS = {
    "termination.fires-once": _fires_once,
    "termination.actions-obeyed": _actions_obeyed,
    "termination.finish-is-last": _finish_is_last,
}


def _reach(scenario: Scenario, result: SimulationResult) -> None:
    params = termination_params(scenario)
    note("end with drain" if params["drain"] else "stop without drain")
    if params["override"]:
        note("operator override set")
    if _format_1_restore(scenario, result):
        note("restored from a format-1 checkpoint")
    if result.faults_applied:
        note("failure before the end")
    if result.interrupted_firings_seen and params["drain"]:
        note("timer firing interrupted")
    if not params["drain"] and any(a for _, _, a in result.final_processing_timers):
        note("TRIGGER/WAIT timers kept in the stop savepoint")
    committed = _firings(result.committed)
    if any(r[4] == MAX_WATERMARK for r in committed):
        note("committed a TRIGGER firing of the flush")
    logs = {(attempt, subtask): log for attempt, subtask, log in result.output_logs}
    for attempt, subtask, flush in result.flushes:
        log = logs[(attempt, subtask)]
        report = _pending_report(log, flush)
        if report is not None:
            _reach_flush(scenario, log, flush, report)
        override = params["override"] if report is None else report[1]
        for entry in log[flush.start:flush.end]:
            if entry[0] == "record" and isinstance(entry[1], tuple) and entry[1][:1] == ("p",):
                _, _, ts, action, _ = entry[1]
                note("flush: a timer already due fired as usual" if ts <= flush.clock
                     else f"flush fired a {override or action} timer")


def _reach_flush(scenario: Scenario, log: list, flush, report: tuple) -> None:
    _, override, pending, history = report
    if any(n for _, n, _ in history):
        note("override set after timers exist")
    if any(restored for _, _, restored in history):
        note("override set after a restore")
    registered = {}
    for i, e in enumerate(log[:flush.end]):
        if e[0] == "record" and isinstance(e[1], tuple) and e[1][:1] == ("r",):
            registered[e[1][1:]] = i  # the last registration
    here = {e[1][1:] for e in log[:flush.start] if e[0] == "record" and isinstance(e[1], tuple) and e[1][:1] == ("r",)}
    params = termination_params(scenario)
    if override is not None and params["snapshot_format"] == 1 and any((k, ts) not in here for k, ts, *_ in pending):
        note("format-1 restore under an override")
    fired = [r for _, r in _flush_records(log, flush) if r[0] == "p"]
    order = [registered.get((r[1], r[2]), -1) for r in fired]
    if any(a > b for a, b in zip(order, order[1:])):
        note("flush handled timers out of registration order")
    if any(r[4] != MAX_WATERMARK and r[4] > r[2] for r in fired if r[2] > flush.clock):
        note("WAIT timer read a flush clock later than its time")


def check_termination(scenario: Scenario, prop: str) -> Verdict:
    result = run(scenario)
    if isinstance(result, str):
        invariant, _, message = result.partition(": ")
        return Verdict(prop, False, [], invariant, message)
    _reach(scenario, result)
    observed = [{"event": "committed", "record": list(r)} for r in result.committed]
    problem = CHECKS[prop](scenario, result)
    if problem:
        return Verdict(prop, False, observed, *problem)
    return Verdict(prop, True, observed)

"""z3 model of the FLIP-269 end-of-input flush of one timer service (docs/termination.md), proved
by k-induction for any timestamps, actions and callback registrations (``streamproof prove flush``).

State: ``SLOTS`` timer slots (pending, timestamp, action 0 CANCEL / 1 TRIGGER / 2 WAIT), the phase
(0 RUNNING, 1 FLUSHING, 2 FLUSHED), the horizon, the clock, and per slot the bookkeeping of the
timer pending when the flush began (its action, whether it was handled, how often it fired).

Actions: ``register(slot, ts, action)`` at any time (before the flush: the operator; during it: a
callback; after it: dropped); ``start_flush`` (horizon = the largest pending timestamp);
``handle(slot)`` of a pending timer of least timestamp (after the horizon: dropped; CANCEL: dropped;
TRIGGER / WAIT: fired, WAIT moving the clock); ``end_flush`` once nothing is pending.

Timers already due at flush start are left out (they fire as usual, before all this).
"""

from __future__ import annotations

import z3

from streamproof.properties.z3kit import TransitionSystem
from streamproof.properties.z3models import ModelVariant, Z3Model

SLOTS = 3
CANCEL, TRIGGER, WAIT = 0, 1, 2
VARIANTS = {
    "no-horizon": "registrations during the flush are all handled and nothing is dropped after the horizon",
    "head-only": "only the head timer is handled; the ones behind it are dropped at flush start",
    "cancel-fires": "a CANCEL timer fires in the flush like a TRIGGER one",
    "ends-with-timers-pending": "the flush ends while timers are still pending (they stay behind finish())",
}
REFUTES = {"no-horizon": "nothing-fires-after-the-horizon", "head-only": "trigger-and-wait-fire-once",
           "cancel-fires": "trigger-and-wait-fire-once", "ends-with-timers-pending": "nothing-pending-once-flushed"}
REPRODUCED_BY = {"head-only": "bugzoo:flush-handles-head-only", "cancel-fires": "bugzoo:flush-fires-cancel-timers",
                 # no scenario: its shortest counterexample registers during a flush with nothing
                 # pending, a registration no termination-scenario callback can make
                 "no-horizon": None,
                 # no scenario: what it leaves pending is a CANCEL timer, which no output shows; the
                 # implementation's flush loops until its queue is empty
                 "ends-with-timers-pending": None}


def _max(a, b):
    return z3.If(a >= b, a, b)


def flush_system(variant: str | None = None, size: int = SLOTS) -> TransitionSystem:
    if variant is not None and variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r} of model flush (known: {', '.join(VARIANTS)})")
    slots = range(size)
    per_slot = {"pend": "bool", "ts": "int", "act": "int", "cur_orig": "bool",
                "orig": "bool", "oact": "int", "handled": "bool", "ofired": "int"}
    variables = {"phase": "int", "horizon": "int", "has_horizon": "bool", "clock": "int",
                 "max_fired": "int", "any_fired": "bool"}
    variables.update({f"{name}{i}": kind for i in slots for name, kind in per_slot.items()})
    system = TransitionSystem("flush", variables, lambda s: None, {}, {},
                              "FLIP-269 end-of-input flush of one service: " + (variant or "as built"))

    def v(s, name, i):
        return s[f"{name}{i}"]

    def init(s):
        return z3.And([s["phase"] == 0, s["clock"] == 0, s["max_fired"] == 0, z3.Not(s["any_fired"]),
                       s["horizon"] == 0, z3.Not(s["has_horizon"])] +
                      [z3.And(z3.Not(v(s, "pend", i)), z3.Not(v(s, "orig", i)), z3.Not(v(s, "cur_orig", i)),
                              z3.Not(v(s, "handled", i)), v(s, "ofired", i) == 0, v(s, "act", i) == 0,
                              v(s, "oact", i) == 0, v(s, "ts", i) == 0) for i in slots])

    def register(s, t, p):
        j, ts, a = p["slot"], p["ts"], p["action"]
        accepted = z3.Or(s["phase"] == 0, z3.And(s["phase"] == 1, z3.Or(
            variant == "no-horizon", z3.And(s["has_horizon"], ts <= s["horizon"]))))
        updates = []
        for i in slots:
            here = z3.And(accepted, j == i)
            updates += [v(t, "pend", i) == z3.If(here, True, v(s, "pend", i)),
                        v(t, "ts", i) == z3.If(here, ts, v(s, "ts", i)),
                        v(t, "act", i) == z3.If(here, a, v(s, "act", i)),
                        v(t, "cur_orig", i) == z3.If(here, False, v(s, "cur_orig", i))]
        changed = [f"{n}{i}" for i in slots for n in ("pend", "ts", "act", "cur_orig")]
        free = z3.Or([z3.And(j == i, z3.Not(v(s, "pend", i))) for i in slots])
        return z3.And(free, ts >= 0, a >= 0, a <= 2, z3.And(updates), system.frame(s, t, *changed))

    def least(s, i):
        return z3.And(v(s, "pend", i), z3.And([z3.Implies(v(s, "pend", k), v(s, "ts", i) <= v(s, "ts", k))
                                               for k in slots]))

    def start_flush(s, t, p):
        pending = z3.Or([v(s, "pend", i) for i in slots])
        horizon = z3.And([z3.Implies(v(s, "pend", i), t["horizon"] >= v(s, "ts", i)) for i in slots] +
                         [z3.Implies(pending, z3.Or([z3.And(v(s, "pend", i), t["horizon"] == v(s, "ts", i))
                                                     for i in slots])),
                          z3.Implies(z3.Not(pending), t["horizon"] == 0)])  # None: nothing is handled
        updates = []
        for i in slots:
            # head-only: a pending timer survives only if it is the first of least timestamp
            first = z3.And(least(s, i), z3.And([z3.Not(least(s, k)) for k in range(i)]))
            kept = z3.And(v(s, "pend", i), first) if variant == "head-only" else v(s, "pend", i)
            updates += [v(t, "pend", i) == kept, v(t, "orig", i) == v(s, "pend", i),
                        v(t, "cur_orig", i) == kept, v(t, "oact", i) == v(s, "act", i),
                        v(t, "handled", i) == z3.Not(kept), v(t, "ofired", i) == 0]
        changed = ["phase", "horizon", "has_horizon"] + [f"{n}{i}" for i in slots
                                                         for n in ("pend", "orig", "cur_orig", "oact", "handled", "ofired")]
        return z3.And(s["phase"] == 0, t["phase"] == 1, t["has_horizon"] == pending, horizon,
                      z3.And(updates), system.frame(s, t, *changed))

    def handle(s, t, p):
        j = p["slot"]
        updates, guard = [], []
        for i in slots:
            here = j == i
            within = z3.Or(variant == "no-horizon", z3.And(s["has_horizon"], v(s, "ts", i) <= s["horizon"]))
            fires = z3.And(here, within, z3.Or(variant == "cancel-fires", v(s, "act", i) != CANCEL))
            guard.append(z3.Implies(here, least(s, i)))
            updates += [v(t, "pend", i) == z3.If(here, False, v(s, "pend", i)),
                        v(t, "cur_orig", i) == z3.If(here, False, v(s, "cur_orig", i)),
                        v(t, "handled", i) == z3.If(z3.And(here, v(s, "cur_orig", i)), True, v(s, "handled", i)),
                        v(t, "ofired", i) == v(s, "ofired", i) + z3.If(z3.And(fires, v(s, "cur_orig", i)), 1, 0)]
            guard.append(z3.Implies(fires, z3.And(
                t["max_fired"] == _max(s["max_fired"], v(s, "ts", i)), t["any_fired"],
                t["clock"] == z3.If(v(s, "act", i) == WAIT, _max(s["clock"], v(s, "ts", i)), s["clock"]))))
            guard.append(z3.Implies(z3.And(here, z3.Not(fires)), z3.And(
                t["max_fired"] == s["max_fired"], t["any_fired"] == s["any_fired"], t["clock"] == s["clock"])))
        changed = ["max_fired", "any_fired", "clock"] + [f"{n}{i}" for i in slots
                                                         for n in ("pend", "cur_orig", "handled", "ofired")]
        in_range = z3.Or([j == i for i in slots])
        return z3.And(s["phase"] == 1, in_range, z3.And(guard), z3.And(updates), system.frame(s, t, *changed))

    def end_flush(s, t, p):
        drained = z3.And([z3.Not(v(s, "pend", i)) for i in slots])
        return z3.And(s["phase"] == 1, z3.Or(variant == "ends-with-timers-pending", drained), t["phase"] == 2,
                      system.frame(s, t, "phase"))

    system.init = init
    system.actions = {
        "register": ({"slot": "int", "ts": "int", "action": "int"}, register),
        "start_flush": ({}, start_flush),
        "handle": ({"slot": "int"}, handle),
        "end_flush": ({}, end_flush),
    }
    system.invariants = {
        # the theorem: every timer pending at flush start fires once iff TRIGGER / WAIT
        "trigger-and-wait-fire-once": lambda s: z3.Implies(s["phase"] == 2, z3.And([z3.Implies(
            v(s, "orig", i), z3.And(v(s, "handled", i), v(s, "ofired", i) == z3.If(v(s, "oact", i) != CANCEL, 1, 0)))
            for i in slots])),
        "nothing-fires-after-the-horizon": lambda s: z3.And(
            z3.Implies(s["any_fired"], z3.And(s["has_horizon"], s["max_fired"] <= s["horizon"])),
            z3.Implies(z3.Not(s["any_fired"]), s["max_fired"] == 0)),
        "nothing-pending-once-flushed": lambda s: z3.Implies(s["phase"] == 2, z3.And(
            [z3.Not(v(s, "pend", i)) for i in slots])),
        # strengthening (inductive helpers), proved like the others
        "phases-and-actions-in-range": lambda s: z3.And([s["phase"] >= 0, s["phase"] <= 2, s["horizon"] >= 0] + [
            v(s, "ts", i) >= 0 for i in slots] + [
            z3.And(v(s, "act", i) >= 0, v(s, "act", i) <= 2, v(s, "oact", i) >= 0, v(s, "oact", i) <= 2)
            for i in slots]),
        "no-firing-before-the-flush": lambda s: z3.Implies(s["phase"] == 0, z3.And(
            [z3.Not(s["any_fired"])] + [z3.And(z3.Not(v(s, "orig", i)), z3.Not(v(s, "cur_orig", i)),
                                               v(s, "ofired", i) == 0) for i in slots])),
        "each-original-is-pending-unchanged-or-fired-by-its-action": lambda s: z3.And([z3.And(
            z3.Implies(z3.And(v(s, "orig", i), z3.Not(v(s, "handled", i))),
                       z3.And(v(s, "pend", i), v(s, "cur_orig", i), v(s, "act", i) == v(s, "oact", i))),
            z3.Implies(v(s, "cur_orig", i), z3.And(v(s, "orig", i), z3.Not(v(s, "handled", i)))),
            z3.Implies(z3.Not(v(s, "orig", i)), v(s, "ofired", i) == 0),
            z3.Implies(z3.And(v(s, "orig", i), z3.Not(v(s, "handled", i))), v(s, "ofired", i) == 0),
            v(s, "ofired", i) <= z3.If(v(s, "oact", i) != CANCEL, 1, 0),
            z3.Implies(z3.And(v(s, "orig", i), v(s, "handled", i)),
                       v(s, "ofired", i) == z3.If(v(s, "oact", i) != CANCEL, 1, 0))) for i in slots]),
        "pending-originals-are-within-the-horizon": lambda s: z3.Implies(s["phase"] >= 1, z3.And([z3.Implies(
            v(s, "cur_orig", i), z3.And(s["has_horizon"], v(s, "ts", i) <= s["horizon"])) for i in slots])),
    }
    return system


def to_scenario(trace: list, variant: str | None) -> dict:
    """A ``termination`` scenario of the registrations made before ``start_flush``: one ``timer``
    record per registration (key ``slot<i>``, its action, the time far beyond the run so nothing is
    due before end of input), drained at the end; checked by ``termination.fires-once``."""
    steps, seen = [], set()
    for action, params, _ in trace:
        if action == "start_flush":
            break
        if action == "register" and (params["slot"], params["ts"]) not in seen:
            seen.add((params["slot"], params["ts"]))
            steps.append({"op": "timer", "source": 0, "key": f"slot{params['slot']}", "pts": FAR + params["ts"],
                          "action": ("CANCEL", "TRIGGER", "WAIT")[params["action"]]})
    prop = "termination.actions-obeyed" if variant == "cancel-fires" else "termination.fires-once"
    return {"format": "streamproof.scenario/1", "family": "termination", "property": prop,
            "description": f"z3 model flush, variant {variant}: the registrations of its counterexample, "
                           "then end of input with drain",
            "params": {"sources": 1, "parallelism": 1, "drain": True, "seed": 0}, "steps": steps}


FAR = 1_000_000  # processing time the scenario's run never reaches before end of input

MODEL = Z3Model(
    name="flush", family="termination",
    summary="FLIP-269 end-of-input flush of one timer service",
    abstracts="one service and its timer slots; keys, event time, the mailbox and failures are left "
              "out (the lifecycle model has them); timestamps are unbounded integers",
    build=flush_system, k=1, depth=8, size_name="timers", size=SLOTS, to_scenario=to_scenario,
    variants={name: ModelVariant(name, "FLIP-269", text, REFUTES[name], REPRODUCED_BY[name])
              for name, text in VARIANTS.items()})
MODELS = {"flush": flush_system}


def replay_on_impl(trace: list) -> tuple[set, set]:
    """Runs a counterexample whose registrations all come before ``start_flush`` on the
    implementation (one ``InternalTimerService``, a clock before every timestamp, so nothing is
    due): returns (the TRIGGER / WAIT timers registered, the timers fired), as ``(slot, ts)``."""
    from streamproof.impl.state.key_groups import KeyGroupRange
    from streamproof.impl.timers.termination import TimerTerminationAction
    from streamproof.impl.timers.internal_time_service_manager import InternalTimeServiceManager
    from streamproof.impl.timers.internal_timer_service import KeyContext
    from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService

    class Fired:
        def __init__(self):
            self.timers = set()

        def on_event_time(self, timer):
            pass

        def on_processing_time(self, timer):
            self.timers.add((int(timer.key[4:]), timer.timestamp))

    context = KeyContext(128)
    manager = InternalTimeServiceManager(context, KeyGroupRange(0, 127), ManualProcessingTimeService(start=-1))
    target = Fired()
    service = manager.get_internal_timer_service("user-timers", target)
    registered = {}
    for action, params, _ in trace:
        if action == "start_flush":
            break
        if action == "register":
            context.set_current_key(f"slot{params['slot']}")
            service.register_processing_time_timer("w", params["ts"], TimerTerminationAction(params["action"]))
            registered[(params["slot"], params["ts"])] = params["action"]
    service.flush_processing_time_timers()
    return {t for t, a in registered.items() if a != CANCEL}, target.timers

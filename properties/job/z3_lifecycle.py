"""z3 model of the timer life cycle in a job (``streamproof prove lifecycle``): timers registered,
deleted and fired by event time with interruptible firing (FLIP-443), checkpoints at any point, a
two-phase-commit sink, failures at any point (inside an interrupted firing too), restore to another
parallelism, and end of input with FLIP-269's actions for processing-time timers.

**The input** is frozen at the start (the solver picks it): ``n_in`` positions, each a
registration of a timer slot, a deletion of one, or a watermark. A slot is registered at most
once, a deletion follows its registration, and a registration's timestamp is above every watermark
before it (DESIGN §3.7: no record at or below a watermark already read). A restore rewinds the
source offset, so the same input is read again.

**A timer slot** ``i``: timestamp ``ts``, key group ``kg`` (0/1; owned by subtask 0 at parallelism
1, by subtask ``kg`` at 2), domain (event / processing) and termination action. Processing-time
timers are the ones still pending at end of input (the clock never reaches them before: the flush
is what decides them).

**Per subtask** ``s``: the service's watermark ``W``, the largest input watermark ``max_in``, the
firing state (0 idle, 1 firing inside one mail, 2 interrupted: a continuation mail is pending and
records, barriers and failures may come in between), and the watermark emitted downstream.

**The lineage** is the run the committed output belongs to: per slot ``reg``/``deleted``/
``dropped`` (CANCEL at the flush) and ``fired`` (how often its effect was emitted), restored from
the snapshot with the timers. Effects flow ``out`` (the open transaction) → ``pre`` (pre-committed
with the pending checkpoint) → ``tx`` (its checkpoint completed) → ``com`` (committed; also on
restore: recover-and-commit).

**Theorem**: the committed history holds each timer's effect at most once, exactly the expected
ones at the end (every registered and not deleted event-time timer, every TRIGGER / WAIT one), never
a CANCEL or a deleted timer's, and no effect after a watermark at or above its timestamp went
downstream.

Size: one z3 model (system, invariants, schedule back to scenario), read as one like the other ``z3_*`` models.
"""

from __future__ import annotations

import z3

from streamproof.properties.z3kit import TransitionSystem
from streamproof.properties.z3models import ModelVariant, Z3Model

SLOTS = 3
SUBTASKS = 2
MAXW = 1_000_000                   # MAX_WATERMARK; every timestamp of the model is below it
MIN = -1                           # the watermark after a (re)start
REG, DEL, WM = 0, 1, 2
EVENT, PROC = 0, 1
CANCEL, TRIGGER, WAIT = 0, 1, 2

VARIANTS = {
    "finish-drops-continuation": ModelVariant(
        "finish-drops-continuation", "FLINK-39481",
        "at end of input the task finishes while a watermark continuation is pending: the timers it "
        "had still to fire never fire", "committed-exactly-once-at-end", "bugzoo:finish-drops-deferrable-mail"),
    "snapshot-before-fired-effects": ModelVariant(
        "snapshot-before-fired-effects", "FLIP-443",
        "a checkpoint inside an interrupted firing takes the timers as they were when the firing "
        "began, while the fired timers' effects are already in its transaction: after a restore they "
        "fire again", "fires-at-most-once-in-the-committed-run", "bugzoo:snapshot-before-fired-effects"),
    "watermark-past-interrupted-firing": ModelVariant(
        "watermark-past-interrupted-firing", "FLIP-443",
        "an interrupted advance emits its watermark downstream at once: the timers it has still to "
        "fire produce output behind that watermark", "no-effect-behind-the-emitted-watermark",
        "bugzoo:watermark-emitted-when-interrupted"),
}

_LIVE = ("pend", "reg", "deleted", "dropped", "fired")       # timer and lineage state a snapshot holds
_FLOW = ("out", "pre", "tx", "com")                            # where each effect is on its way to commit
_SUBTASK = ("W", "max_in", "firing", "emitted", "fired_in_call")


def lifecycle_system(variant: str | None = None, size: int = SLOTS, subtasks: int = SUBTASKS) -> TransitionSystem:
    """``size`` timer slots, ``size + 2`` input positions, ``subtasks`` subtasks (1 or 2)."""
    if variant is not None and variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r} of model lifecycle (known: {', '.join(VARIANTS)})")
    if subtasks not in (1, 2):
        raise ValueError("the lifecycle model has 1 or 2 subtasks")
    slots, positions, subtasks = range(size), range(size + 2), range(subtasks)
    variables = {"n_in": "int", "off": "int", "par": "int", "ck": "bool", "ck_off": "int", "sn": "bool",
                 "sn_off": "int", "ended": "bool", "finished": "bool", "done": "bool", "late": "bool"}
    for i in slots:
        variables.update({f"ts{i}": "int", f"kg{i}": "int", f"dom{i}": "int", f"act{i}": "int",
                          f"fic{i}": "bool"})
        for name in _LIVE:
            kind = "int" if name == "fired" else "bool"
            variables.update({f"{name}{i}": kind, f"ck_{name}{i}": kind, f"sn_{name}{i}": kind})
        variables.update({f"{name}{i}": "int" for name in _FLOW})
    for j in positions:
        variables.update({f"in_kind{j}": "int", f"in_slot{j}": "int", f"in_ts{j}": "int"})
    for s in subtasks:
        variables.update({f"{name}{s}": "bool" if name == "fired_in_call" else "int" for name in _SUBTASK})
    system = TransitionSystem("lifecycle", variables, lambda s: None, {}, {},
                              "timer life cycle under interruption, checkpoints, failover, restore and "
                              "end of input: " + (variant or "as built"))

    def at(s, name, index, default=0):
        """The input field ``name`` at position ``index`` (a term)."""
        term = z3.IntVal(default)
        for j in reversed(positions):
            term = z3.If(index == j, s[f"{name}{j}"], term)
        return term

    def par_ok(par):
        return z3.And(par >= 1, par <= len(subtasks))

    def owner(s, i):
        return z3.If(s["par"] == 1, 0, s[f"kg{i}"])

    def due(s, i, sub):
        return z3.And(s[f"pend{i}"], s[f"dom{i}"] == EVENT, owner(s, i) == sub, s[f"ts{i}"] <= s[f"W{sub}"])

    def expected(s, i):
        return z3.And(s[f"reg{i}"], z3.Not(s[f"deleted{i}"]),
                      z3.Or(s[f"dom{i}"] == EVENT, s[f"act{i}"] != CANCEL))

    def update(s, t, values: dict):
        """``t`` is ``s`` with ``values`` (name -> term) assigned."""
        return z3.And([t[n] == v for n, v in values.items()] + [system.frame(s, t, *values)])

    def event_time_done(s):
        finished = [z3.And(s[f"firing{k}"] == 0, s[f"W{k}"] == MAXW) for k in subtasks]
        if variant == "finish-drops-continuation":  # BUG: a pending continuation counts as done
            finished = [z3.Or(f, s[f"firing{k}"] == 2) for k, f in zip(subtasks, finished)]
        return z3.And(s["ended"], z3.And(finished))

    def well_formed_input(s):
        facts = [s["n_in"] >= 0, s["n_in"] <= len(positions)]
        for j in positions:
            kind, slot, wts = s[f"in_kind{j}"], s[f"in_slot{j}"], s[f"in_ts{j}"]
            facts += [kind >= REG, kind <= WM, slot >= 0, slot < size, wts >= 0, wts < MAXW]
            for i in slots:
                registers = z3.And(j < s["n_in"], kind == REG, slot == i)
                deletes = z3.And(j < s["n_in"], kind == DEL, slot == i)
                facts.append(z3.Implies(registers, z3.And(
                    [z3.Not(z3.And(s[f"in_kind{k}"] == REG, s[f"in_slot{k}"] == i)) for k in range(j)] +
                    [z3.Implies(s[f"in_kind{k}"] == WM, s[f"ts{i}"] > s[f"in_ts{k}"]) for k in range(j)])))
                facts.append(z3.Implies(deletes, z3.Or(
                    [z3.And(s[f"in_kind{k}"] == REG, s[f"in_slot{k}"] == i) for k in range(j)])))
        for i in slots:
            facts += [s[f"ts{i}"] >= 0, s[f"ts{i}"] < MAXW, z3.Or(s[f"kg{i}"] == 0, s[f"kg{i}"] == 1),
                      z3.Or(s[f"dom{i}"] == EVENT, s[f"dom{i}"] == PROC), s[f"act{i}"] >= CANCEL,
                      s[f"act{i}"] <= WAIT]
        return z3.And(facts)

    def init(s):
        facts = [well_formed_input(s), s["off"] == 0, par_ok(s["par"]), z3.Not(s["ck"]),
                 s["ck_off"] == 0, z3.Not(s["sn"]), s["sn_off"] == 0, z3.Not(s["ended"]), z3.Not(s["finished"]),
                 z3.Not(s["done"]), z3.Not(s["late"])]
        for i in slots:
            facts.append(z3.Not(s[f"fic{i}"]))
            for prefix in ("", "ck_", "sn_"):
                facts += [z3.Not(s[f"{prefix}{n}{i}"]) for n in ("pend", "reg", "deleted", "dropped")]
                facts.append(s[f"{prefix}fired{i}"] == 0)
            facts += [s[f"{n}{i}"] == 0 for n in _FLOW]
        for k in subtasks:
            facts += [s[f"W{k}"] == MIN, s[f"max_in{k}"] == MIN, s[f"firing{k}"] == 0, s[f"emitted{k}"] == MIN,
                      z3.Not(s[f"fired_in_call{k}"])]
        return z3.And(facts)

    def start_or_keep_firing(s, k, new_max):
        """What a watermark up to ``new_max`` does to subtask ``k``'s processor."""
        starts = z3.And(s[f"firing{k}"] == 0, new_max > s[f"W{k}"])
        return {f"max_in{k}": new_max, f"W{k}": z3.If(starts, new_max, s[f"W{k}"]),
                f"firing{k}": z3.If(starts, 1, s[f"firing{k}"]),
                f"fired_in_call{k}": z3.If(starts, False, s[f"fired_in_call{k}"])}

    def read(s, t, p):
        """The next input element: a registration or deletion at its key's subtask, or a watermark
        at every subtask (none of them inside a mail)."""
        off = s["off"]
        kind, slot, wts = at(s, "in_kind", off), at(s, "in_slot", off), at(s, "in_ts", off)
        values = {"off": off + 1}
        for i in slots:
            here = slot == i
            registers, deletes = z3.And(kind == REG, here), z3.And(kind == DEL, here, s[f"pend{i}"])
            values[f"pend{i}"] = z3.If(registers, True, z3.If(deletes, False, s[f"pend{i}"]))
            values[f"reg{i}"] = z3.Or(s[f"reg{i}"], registers)
            values[f"deleted{i}"] = z3.Or(s[f"deleted{i}"], deletes)
        for k in subtasks:
            new_max = z3.If(kind == WM, z3.If(wts > s[f"max_in{k}"], wts, s[f"max_in{k}"]), s[f"max_in{k}"])
            values.update(start_or_keep_firing(s, k, new_max))
        target_free = z3.And([z3.Implies(z3.And(slot == i, owner(s, i) == k), s[f"firing{k}"] != 1)
                              for i in slots for k in subtasks])
        all_free = z3.And([s[f"firing{k}"] != 1 for k in subtasks])
        return z3.And(off < s["n_in"], z3.Not(s["ended"]), z3.If(kind == WM, all_free, target_free),
                      update(s, t, values))

    def fire(s, t, p):
        """Subtask ``sub`` fires one due event-time timer ``slot`` (any one of them: ties and order
        do not matter here) and emits its effect."""
        sub, slot = p["subtask"], p["slot"]
        options = []
        for k in subtasks:
            for i in slots:
                values = {f"pend{i}": False, f"fired{i}": s[f"fired{i}"] + 1, f"out{i}": s[f"out{i}"] + 1,
                          f"fic{i}": True, f"fired_in_call{k}": True,
                          "late": z3.Or(s["late"], s[f"ts{i}"] <= s[f"emitted{k}"])}
                options.append(z3.And(sub == k, slot == i, s[f"firing{k}"] == 1, due(s, i, k), update(s, t, values)))
        return z3.Or(options)

    def interrupt(s, t, p):
        """Mail arrived: firing stops after at least one timer; a continuation is scheduled."""
        sub = p["subtask"]
        options = []
        for k in subtasks:
            values = {f"firing{k}": 2}
            if variant == "watermark-past-interrupted-firing":
                values[f"emitted{k}"] = s[f"W{k}"]  # BUG: the watermark goes downstream anyway
            options.append(z3.And(sub == k, s[f"firing{k}"] == 1, s[f"fired_in_call{k}"], update(s, t, values)))
        return z3.Or(options)

    def resume(s, t, p):
        """The continuation mail: advance again, to the largest input watermark."""
        sub = p["subtask"]
        return z3.Or([z3.And(sub == k, s[f"firing{k}"] == 2,
                             update(s, t, {f"firing{k}": 1, f"W{k}": s[f"max_in{k}"], f"fired_in_call{k}": False}))
                      for k in subtasks])

    def complete_advance(s, t, p):
        """No due timer is left: the advance completes and the watermark goes downstream."""
        sub = p["subtask"]
        options = []
        for k in subtasks:
            values = {f"firing{k}": 0, f"emitted{k}": s[f"W{k}"]}
            values.update({f"fic{i}": z3.If(owner(s, i) == k, False, s[f"fic{i}"]) for i in slots})
            options.append(z3.And(sub == k, s[f"firing{k}"] == 1, z3.And([z3.Not(due(s, i, k)) for i in slots]),
                                  update(s, t, values)))
        return z3.Or(options)

    def checkpoint(s, t, p):
        """The barrier at every subtask between two mails (aligned, or unaligned as mail during an
        interrupted firing): the source offset, timers and lineage; the open transaction is
        pre-committed."""
        values = {"ck": True, "ck_off": s["off"]}
        for i in slots:
            for name in _LIVE:
                values[f"ck_{name}{i}"] = s[f"{name}{i}"]
            if variant == "snapshot-before-fired-effects":  # BUG: the timers from before the firing
                values[f"ck_pend{i}"] = z3.Or(s[f"pend{i}"], s[f"fic{i}"])
            values[f"pre{i}"] = s[f"out{i}"]
            values[f"out{i}"] = 0
        return z3.And(z3.Not(s["ck"]), z3.Not(s["finished"]), z3.And([s[f"firing{k}"] != 1 for k in subtasks]),
                      update(s, t, values))

    def complete_checkpoint(s, t, p):
        values = {"ck": False, "sn": True, "sn_off": s["ck_off"]}
        for i in slots:
            values.update({f"sn_{name}{i}": s[f"ck_{name}{i}"] for name in _LIVE})
            values.update({f"tx{i}": s[f"tx{i}"] + s[f"pre{i}"], f"pre{i}": 0})
        return z3.And(s["ck"], update(s, t, values))

    def abort_checkpoint(s, t, p):
        """Declined or timed out: its pre-committed transaction waits for a later checkpoint."""
        values = {"ck": False}
        for i in slots:
            values.update({f"out{i}": s[f"out{i}"] + s[f"pre{i}"], f"pre{i}": 0})
        return z3.And(s["ck"], update(s, t, values))

    def commit(s, t, p):
        """notifyCheckpointComplete reaches the sink: completed transactions commit."""
        values = {}
        for i in slots:
            values.update({f"com{i}": s[f"com{i}"] + s[f"tx{i}"], f"tx{i}": 0})
        return update(s, t, values)

    def fail(s, t, p):
        """Any failure before the job is done: restart every subtask at parallelism ``par`` from the
        latest completed checkpoint (or from scratch), committing its transactions (recover-and-
        commit); the open and pre-committed ones are aborted."""
        values = {"par": p["par"], "off": z3.If(s["sn"], s["sn_off"], 0), "ck": False, "ended": False,
                  "finished": False}
        for i in slots:
            for name in _LIVE:
                values[f"{name}{i}"] = s[f"sn_{name}{i}"]  # all-initial while no checkpoint completed
            values.update({f"com{i}": s[f"com{i}"] + s[f"tx{i}"], f"tx{i}": 0, f"pre{i}": 0, f"out{i}": 0,
                           f"fic{i}": False})
        for k in subtasks:
            values.update({f"W{k}": MIN, f"max_in{k}": MIN, f"firing{k}": 0, f"emitted{k}": MIN,
                           f"fired_in_call{k}": False})
        return z3.And(z3.Not(s["done"]), par_ok(p["par"]), update(s, t, values))

    def end_input(s, t, p):
        """MAX_WATERMARK after the last element (drain)."""
        values = {"ended": True}
        for k in subtasks:
            values.update(start_or_keep_firing(s, k, z3.IntVal(MAXW)))
        return z3.And(s["off"] == s["n_in"], z3.Not(s["ended"]), z3.And([s[f"firing{k}"] != 1 for k in subtasks]),
                      update(s, t, values))

    def flush(s, t, p):
        """FLIP-269, once event time is done: a pending processing-time timer is handled by its
        action (CANCEL: dropped; TRIGGER / WAIT: fired once)."""
        slot = p["slot"]
        options = []
        for i in slots:
            fires = s[f"act{i}"] != CANCEL
            values = {f"pend{i}": False, f"dropped{i}": z3.Not(fires),
                      f"fired{i}": s[f"fired{i}"] + z3.If(fires, 1, 0), f"out{i}": s[f"out{i}"] + z3.If(fires, 1, 0)}
            options.append(z3.And(slot == i, s[f"pend{i}"], s[f"dom{i}"] == PROC, update(s, t, values)))
        return z3.And(event_time_done(s), z3.Not(s["finished"]), z3.Or(options))

    def finish(s, t, p):
        values = {"finished": True}
        values.update({f"firing{k}": 0 for k in subtasks})
        no_processing = z3.And([z3.Not(z3.And(s[f"pend{i}"], s[f"dom{i}"] == PROC)) for i in slots])
        return z3.And(event_time_done(s), no_processing, z3.Not(s["finished"]), update(s, t, values))

    def final_checkpoint(s, t, p):
        """FLIP-147: the final checkpoint completes and commits everything."""
        values = {"done": True, "ck": False}
        for i in slots:
            values.update({f"com{i}": s[f"com{i}"] + s[f"tx{i}"] + s[f"pre{i}"] + s[f"out{i}"],
                           f"tx{i}": 0, f"pre{i}": 0, f"out{i}": 0})
        return z3.And(s["finished"], z3.Not(s["done"]), update(s, t, values))

    system.init = init
    system.actions = {
        "read": ({}, read),
        "fire": ({"subtask": "int", "slot": "int"}, fire),
        "interrupt": ({"subtask": "int"}, interrupt),
        "resume": ({"subtask": "int"}, resume),
        "complete_advance": ({"subtask": "int"}, complete_advance),
        "checkpoint": ({}, checkpoint),
        "complete_checkpoint": ({}, complete_checkpoint),
        "abort_checkpoint": ({}, abort_checkpoint),
        "commit": ({}, commit),
        "fail": ({"par": "int"}, fail),
        "end_input": ({}, end_input),
        "flush": ({"slot": "int"}, flush),
        "finish": ({}, finish),
        "final_checkpoint": ({}, final_checkpoint),
    }
    system.invariants = _invariants(slots, positions, subtasks, owner, due, expected, well_formed_input)
    return system


def _invariants(slots, positions, subtasks, owner, due, expected, well_formed_input) -> dict:
    def registered_before(s, i, limit, kind=REG):
        return z3.Or([z3.And(j < limit, s[f"in_kind{j}"] == kind, s[f"in_slot{j}"] == i) for j in positions])

    def timers_match_lineage(s, prefix, limit):
        """A snapshot (or the live state) is a consistent cut of the lineage: a timer is registered
        iff its registration was read, pending iff registered and neither fired, deleted nor
        dropped; each fires at most once and never after a deletion or a drop."""
        facts = []
        for i in slots:
            pend, reg, deleted, dropped, fired = (s[f"{prefix}{n}{i}"] for n in _LIVE)
            facts += [reg == registered_before(s, i, limit),
                      z3.Implies(deleted, registered_before(s, i, limit, DEL)),
                      fired >= 0, fired <= 1,
                      pend == z3.And(reg, z3.Not(deleted), z3.Not(dropped), fired == 0),
                      z3.Implies(z3.Or(deleted, dropped), fired == 0), z3.Not(z3.And(deleted, dropped)),
                      z3.Implies(z3.Or(deleted, dropped, fired >= 1), reg),
                      z3.Implies(dropped, z3.And(s[f"dom{i}"] == PROC, s[f"act{i}"] == CANCEL)),
                      z3.Implies(z3.And(fired == 1, s[f"dom{i}"] == PROC), s[f"act{i}"] != CANCEL)]
        return z3.And(facts)

    def max_input_watermark_read(s, k):
        """``max_in`` is MIN, MAX at end of input, or a watermark of the input before ``off``."""
        return z3.Or(s[f"max_in{k}"] == MIN, z3.And(s["ended"], s[f"max_in{k}"] == MAXW),
                     z3.Or([z3.And(j < s["off"], s[f"in_kind{j}"] == WM, s[f"in_ts{j}"] == s[f"max_in{k}"])
                            for j in positions]))

    return {
        # the theorem
        "committed-at-most-once": lambda s: z3.And([s[f"com{i}"] <= 1 for i in slots]),
        "fires-at-most-once-in-the-committed-run": lambda s: z3.And([s[f"fired{i}"] <= 1 for i in slots]),
        "committed-exactly-once-at-end": lambda s: z3.Implies(s["done"], z3.And(
            [s[f"com{i}"] == z3.If(expected(s, i), 1, 0) for i in slots])),
        "never-for-cancel-or-deleted": lambda s: z3.And([z3.Implies(
            z3.Or(s[f"deleted{i}"], z3.And(s[f"dom{i}"] == PROC, s[f"act{i}"] == CANCEL)), s[f"com{i}"] == 0)
            for i in slots]),
        "no-effect-behind-the-emitted-watermark": lambda s: z3.Not(s["late"]),
        # strengthening: what makes the conjunction inductive
        "input-is-well-formed": lambda s: well_formed_input(s),
        "offsets-and-phases": lambda s: z3.And(
            [s["off"] >= 0, s["off"] <= s["n_in"], s["ck_off"] >= 0, z3.Implies(s["ck"], s["ck_off"] <= s["off"]),
             s["sn_off"] >= 0, s["sn_off"] <= s["n_in"], s["par"] >= 1, s["par"] <= len(subtasks),
             z3.Implies(s["ended"], s["off"] == s["n_in"]), z3.Implies(s["finished"], s["ended"]),
             z3.Implies(s["done"], s["finished"])] +
            [z3.And(s[f"firing{k}"] >= 0, s[f"firing{k}"] <= 2) for k in subtasks]),
        "live-state-and-snapshots-are-consistent-cuts": lambda s: z3.And(
            timers_match_lineage(s, "", s["off"]),
            z3.Implies(s["ck"], timers_match_lineage(s, "ck_", s["ck_off"])),
            z3.Implies(s["sn"], timers_match_lineage(s, "sn_", s["sn_off"])),
            z3.Implies(z3.Not(s["sn"]), z3.And([z3.And(z3.Not(s[f"sn_{n}{i}"]) if n != "fired" else s[f"sn_fired{i}"] == 0)
                                                for i in slots for n in _LIVE] + [s["sn_off"] == 0]))),
        "every-effect-is-on-its-way-to-commit": lambda s: z3.And([z3.And(
            s[f"out{i}"] >= 0, s[f"pre{i}"] >= 0, s[f"tx{i}"] >= 0, s[f"com{i}"] >= 0,
            s[f"fired{i}"] == s[f"com{i}"] + s[f"tx{i}"] + s[f"pre{i}"] + s[f"out{i}"],
            z3.Implies(s["ck"], s[f"ck_fired{i}"] == s[f"com{i}"] + s[f"tx{i}"] + s[f"pre{i}"]),
            z3.Implies(z3.Not(s["ck"]), s[f"pre{i}"] == 0),
            z3.Implies(z3.Not(s["done"]), s[f"sn_fired{i}"] == s[f"com{i}"] + s[f"tx{i}"]),
            z3.Implies(s["done"], z3.And(s[f"tx{i}"] == 0, s[f"pre{i}"] == 0, s[f"out{i}"] == 0))) for i in slots]),
        "watermarks-and-firing": lambda s: z3.And([z3.And(
            s[f"emitted{k}"] <= s[f"W{k}"], s[f"W{k}"] <= s[f"max_in{k}"], s[f"emitted{k}"] >= MIN,
            max_input_watermark_read(s, k),
            z3.Implies(s[f"firing{k}"] != 2, s[f"W{k}"] == s[f"max_in{k}"]),
            z3.Implies(s[f"firing{k}"] == 0, s[f"emitted{k}"] == s[f"W{k}"]),
            z3.Implies(s["finished"], z3.And(s[f"firing{k}"] == 0, s[f"W{k}"] == MAXW)),
            z3.Implies(s["ended"], s[f"max_in{k}"] == MAXW),
            z3.And([z3.Implies(z3.And(s[f"firing{k}"] == 0, owner(s, i) == k), z3.Not(due(s, i, k)))
                    for i in slots]),
            z3.And([z3.Implies(z3.And(s[f"pend{i}"], s[f"dom{i}"] == EVENT, owner(s, i) == k),
                               s[f"ts{i}"] > s[f"emitted{k}"]) for i in slots]),
            ) for k in subtasks] +
            [z3.Implies(s["finished"], z3.And([z3.Not(s[f"pend{i}"]) for i in slots]))]),
    }


_PROPERTY = {"committed-exactly-once-at-end": "job.exactly-once", "committed-at-most-once": "job.timer-effects-once",
             "no-effect-behind-the-emitted-watermark": "job.watermarks",
             "never-for-cancel-or-deleted": "job.exactly-once",
             "fires-at-most-once-in-the-committed-run": "job.timer-effects-once"}
CHECKPOINT_INTERVALS = (5, 3, 2, 1)  # find_schedule: the checkpoint intervals it tries, in this order,
SEEDS = 40                           # each with the schedule seeds 0 .. SEEDS - 1


def to_scenario(trace: list, variant: str | None) -> dict:
    """A ``job`` scenario of the counterexample, one source.

    **Input**: the trace's input as records and watermarks (slot ``i`` ↦ key ``k<i>``, value 1;
    timestamps replaced by their rank ``r`` among the input's timestamps, which keeps which timers
    are due: an event-time registration ↦ a record at ``10·r`` whose timers are due exactly from
    the watermark ``10·r + 9``, a watermark ↦ ``10·r + 9``). Deletions and processing-time timers
    have no counterpart in the job operators and are left out. End of input is the drain's
    MAX_WATERMARK, except when the trace takes a checkpoint inside a firing that end of input
    started: then it is first a watermark ``10·(n + 1) + 9`` above every timestamp (``n``
    timestamps: the rank of MAX_WATERMARK), because in the one-stage job no barrier reaches a task
    once its source has sent MAX_WATERMARK and EndOfData. When the trace finishes while a
    continuation is pending, the watermarks whose advance is still interrupted at end of input
    are left out (:func:`_merged_into_end_of_input`: end of input raises that continuation's
    target to MAX_WATERMARK, so the end-of-input advance stands for them).

    **Faults**, from the trace's failures: one inside an interrupted firing ↦
    ``fail_in_interrupted_firing`` (``nth``: the interruptions so far; with ``after_checkpoint``
    and ``nth`` the checkpoints completed inside interruptions so far, when one completed during
    it); any other ↦ ``fail`` at the model step's index (``rescale`` to the new parallelism when
    the restore changes it), a rough image: the simulator's steps are finer.

    **Shape**, chosen so the implementation can realize the trace's interleaving (interruption
    after every timer, as the model may interrupt after any):

    * the trace finishes while a continuation is pending (FLINK-39481): the job graph source
      --keyBy--> ``mailing_window_sum`` --forward--> ``mailing_window_sum`` --forward--> sink,
      one chain (each timer callback puts a mail, so every firing is interrupted after each timer;
      ``async_mail_rate`` 0), ``watermark_mode`` ``flink-2.3`` (no intermediate watermark: the
      second window gets MAX_WATERMARK only when the first completes its advance). The second
      operator's timers are the trace's (the first passes each key's window on at the same
      timestamp); its advance starts inside the first one's last continuation, after EndOfData
      was read: a task ends its input while a continuation with due timers is pending only when
      that continuation was queued in the same mailbox step (one queued earlier runs in the next
      batch, before the default action);
    * the trace takes a checkpoint inside an interrupted firing: the one-stage ``timer_chain``
      (each record's timer at ``10·r + 3`` arms one more at ``10·r + 6``, due at the same
      watermarks), ``async_mail_rate`` 1 (a mail lands while each timer fires): the barrier's
      mail queues behind the continuation, so it is taken inside the firing only when the
      continuation itself fires a timer and is interrupted again. (Not a job graph: the bug zoo's
      snapshot-before-fired-effects patches the one-stage task's snapshot);
    * otherwise the one-stage ``window_sum``, ``async_mail_rate`` 1;

    unaligned checkpoints, drain, ``parallelism`` the trace's first. The checkpoint interval and
    seed are chosen by :func:`find_schedule`: for a checkpoint inside an interrupted firing, the
    first whose run on the correct implementation realizes the trace's situation
    (:func:`_restores_fired_effects`); otherwise the first where the variant's property fails
    under its bug-zoo patch and holds without it."""
    init = trace[0][2]
    used = range(init["n_in"])
    times = sorted({init[f"ts{init[f'in_slot{j}']}"] for j in used if init[f"in_kind{j}"] == REG} |
                   {init[f"in_ts{j}"] for j in used if init[f"in_kind{j}"] == WM})
    rank = {t: n + 1 for n, t in enumerate(times)}  # order-preserving: the same timers are due
    end_mark = 10 * (len(times) + 1) + 9

    def interrupted(state) -> list[int]:
        return [k for k in range(SUBTASKS) if state.get(f"firing{k}") == 2]

    finishes_interrupted = any(a == "finish" and interrupted(trace[n - 1][2])
                               for n, (a, _, _) in enumerate(trace) if n)
    inside = next(((trace[n - 1][2], interrupted(trace[n - 1][2])[0]) for n, (a, _, _) in enumerate(trace)
                   if n and a == "checkpoint" and interrupted(trace[n - 1][2])), None)
    explicit_end = inside is not None and inside[0]["ended"] and not finishes_interrupted
    chain = not finishes_interrupted and inside is not None

    def mark(t):
        """The scenario's image of a model watermark (None: MIN)."""
        return None if t == MIN else end_mark if t == MAXW else 10 * rank[t] + 9

    merged = _merged_into_end_of_input(trace) if finishes_interrupted else set()
    steps = []
    for j in used:
        kind, slot = init[f"in_kind{j}"], init[f"in_slot{j}"]
        if kind == REG and init[f"dom{slot}"] == EVENT:
            steps.append({"op": "record", "source": 0, "key": f"k{slot}", "value": 1,
                          "ts": 10 * rank[init[f"ts{slot}"]]})
        elif kind == WM and j not in merged:
            steps.append({"op": "watermark", "source": 0, "ts": mark(init[f"in_ts{j}"])})
    if explicit_end:
        steps.append({"op": "watermark", "source": 0, "ts": end_mark})
    interrupts = completions = 0
    completed_during = False
    for n, (action, params, state) in enumerate(trace[1:], start=1):
        before = trace[n - 1][2]
        if action == "interrupt":
            interrupts += 1
            completed_during = False
        elif action == "complete_checkpoint" and interrupted(before):
            completions += 1
            completed_during = True
        elif action == "fail":
            if interrupted(before):
                nth = completions if completed_during else max(interrupts, 1)
                step = {"op": "fail_in_interrupted_firing", "nth": nth}
                if completed_during:
                    step["after_checkpoint"] = True
            elif params["par"] != before["par"]:
                step = {"op": "rescale", "at": n, "parallelism": params["par"]}
            else:
                step = {"op": "fail", "at": n}
            steps.append(step)
            completed_during = False
    settings = {"sources": 1, "max_parallelism": 16, "checkpoint_interval": CHECKPOINT_INTERVALS[0],
                "interruptible_timers": True, "unaligned": True, "drain": True, "seed": 0}
    if finishes_interrupted:
        settings.update(async_mail_rate=0.0, graph=_chained_windows(init["par"]), watermark_mode="flink-2.3")
    else:
        settings.update(operator="timer_chain" if chain else "window_sum", parallelism=init["par"], async_mail_rate=1.0)
    invariant = VARIANTS[variant].refutes if variant else "committed-exactly-once-at-end"
    scenario = {"format": "streamproof.scenario/1", "family": "job", "property": _PROPERTY[invariant],
                "description": f"z3 model lifecycle, variant {variant}: its counterexample's input and faults "
                               f"({len(trace) - 1} model steps)",
                "params": settings, "steps": steps}
    realized = None
    if chain:
        state, k = inside
        realized = _restores_fired_effects(mark(state[f"emitted{k}"]), mark(state[f"W{k}"]))
    return find_schedule(scenario, variant, realized)


def _merged_into_end_of_input(trace: list) -> set[int]:
    """The input positions of the watermarks whose advance is still interrupted when end of input
    comes: their continuation is then an advance to MAX_WATERMARK (``end_input`` raises its
    target), so end of input's advance stands for them."""
    init, merged = trace[0][2], set()
    since: dict[int, list[int]] = {k: [] for k in range(SUBTASKS)}  # watermarks read since k was last idle
    for n, (action, _, state) in enumerate(trace[1:], start=1):
        before = trace[n - 1][2]
        if action == "read" and init[f"in_kind{before['off']}"] == WM:
            for k in since:
                since[k].append(before["off"])
        elif action == "end_input":
            merged.update(j for k in since if before.get(f"firing{k}") == 2 for j in since[k])
        for k in since:
            if state.get(f"firing{k}", 0) == 0:
                since[k] = []
    return merged


def _chained_windows(parallelism: int) -> dict:
    """source --keyBy--> w1 --forward--> w2 --forward--> sink, w1 -> w2 -> sink one chain; both
    windows put a mail in every timer callback."""
    window = {"kind": "keyed_process", "parallelism": parallelism, "function": "mailing_window_sum"}
    return {"operators": [{"name": "source", "kind": "source"}, {"name": "w1", **window}, {"name": "w2", **window},
                          {"name": "sink", "kind": "sink", "parallelism": parallelism}],
            "edges": [{"from": "source", "to": "w1", "partitioning": "keyed"},
                      {"from": "w1", "to": "w2", "partitioning": "forward"},
                      {"from": "w2", "to": "sink", "partitioning": "forward"}]}


def _restores_fired_effects(low: int | None, high: int):
    """Whether a run (of the correct implementation) realizes "a checkpoint taken inside the
    interrupted firing of the advance to ``high`` (from ``low``) completed, then a failure inside
    an interrupted firing restored it": a ``fail_in_interrupted_firing`` fault with
    ``after_checkpoint`` was applied, and the attempt it started does not fire again a timer of
    that advance (timestamp in ``(low, high]``) that the failed attempt fired. On the correct
    implementation the restored attempt fires again every timer fired after its checkpoint was
    taken, so such a timer fired before the checkpoint, which was taken inside the firing; a
    checkpoint completed just before the firing began (which the simulator's ``after_checkpoint``
    also counts) restores all of them."""
    def fired(run, attempt) -> set:
        return {(e[1][0], e[2]) for a, _, log in run.output_logs if a == attempt for e in log
                if e[0] == "record" and e[3] == "timer" and (low is None or e[2] > low) and e[2] <= high}

    def realized(run) -> bool:
        return any(f.kind == "fail_in_interrupted_firing" and f.after_checkpoint and fired(run, i) - fired(run, i + 1)
                   for i, f in enumerate(run.faults_applied))
    return realized


def find_schedule(scenario: dict, variant: str | None, realized=None) -> dict:
    """``scenario`` with the first ``(checkpoint_interval, seed)`` of :data:`CHECKPOINT_INTERVALS`
    × ``0 .. SEEDS - 1`` (intervals outer, seeds from 0) that reproduces the trace: with
    ``realized`` (a predicate on a :class:`~streamproof.impl.graph.sim.SimulationResult`), the first
    whose run on the correct implementation satisfies it; without, the first where the scenario's
    property fails under the variant's bug-zoo patch and holds on the correct implementation.
    Deterministic; at most ``4 · SEEDS`` candidates (a few ms each; the lifecycle variants' are
    found at the first). None found (or no predicate and no bug-zoo counterpart): the first
    candidate, whose round trip will then report the failure."""
    from streamproof.properties import registry
    from streamproof.properties.bugzoo import get_variant
    from streamproof.properties.job.check import faulty_run
    from streamproof.properties.scenario import scenario_from_dict

    def candidate(interval: int, seed: int) -> dict:
        return {**scenario, "params": {**scenario["params"], "checkpoint_interval": interval, "seed": seed}}

    how = VARIANTS[variant].reproduced_by if variant else None
    if realized is None and not (how or "").startswith("bugzoo:"):
        return candidate(CHECKPOINT_INTERVALS[0], 0)
    prop = registry.get(scenario["property"])
    for interval in CHECKPOINT_INTERVALS:
        for seed in range(SEEDS):
            chosen = candidate(interval, seed)
            parsed = scenario_from_dict(chosen)
            if realized is not None:
                faulty = faulty_run(parsed)
                if not isinstance(faulty, str) and realized(faulty):
                    return chosen
                continue
            with get_variant(how.partition(":")[2]).patch():
                reproduced = prop.check(parsed)
            if not reproduced.holds and prop.check(parsed).holds:
                return chosen
    return candidate(CHECKPOINT_INTERVALS[0], 0)


MODEL = Z3Model(
    name="lifecycle", family="job",
    summary="timer life cycle: interruptible firing, checkpoints, failover, restore, end of input",
    abstracts="an abstract input of at most 5 elements, timers as slots with their effect counted (not "
              "their output values), one source and up to 2 subtasks over 2 key groups with channels of "
              "capacity 0 (a barrier is a consistent cut), processing time only at end of input (FLIP-269)",
    build=lifecycle_system, k=1, depth=12, size_name="timers", size=SLOTS, to_scenario=to_scenario,
    variants=VARIANTS, variant_size=2, variant_bounds={"subtasks": 1})

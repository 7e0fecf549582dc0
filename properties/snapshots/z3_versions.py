"""z3 model of copy-on-write timer snapshot versions (FLINK-9182, corrected; docs/snapshots.md),
proved by k-induction for unbounded versions (registered in ``properties/z3models.py``).

State: the *state version* ``V``; per timer ``t`` (``size`` of them, one key group each) whether it is
live and its *history*, the implementation's tuple of transitions ``(version, value)`` kept as a
bounded list (``hlen{t}`` entries ``hv{t}_{j}`` / ``hval{t}_{j}``, ``hlen == 0``: no history); per
snapshot slot (``SLOTS`` of them) its state (0 free, 1 running, 2 finished), its version, how many
timers its asynchronous part has serialized (``cursor``, key groups in order, as
``TimerSnapshot.run_async_step`` writes them), what it serialized (``ser``) and, as a ghost, the
live set when it started (``ghost``).

Actions (one per step, in any interleaving):
  * ``register(timer)`` / ``delete(timer)`` of a timer that is not / is live; while a snapshot runs,
    the change is recorded at ``V`` as ``VersionedTimerQueue.record`` does it (a second change in
    the same version replaces the first; a history back to "as before" is dropped). A firing is a
    ``poll`` that records exactly like a delete: it is not a separate action;
  * ``start(slot)``: the synchronous part, ``V += 1``, the slot runs at version ``V``;
  * ``step(slot)``: the asynchronous part serializes the next timer as the snapshot sees it
    (the last transition with a version ``< s``; a timer without history: as it is live);
  * ``finish(slot)``: serializes the rest and releases the version; ``cancel(slot)``: releases it.
    Releasing compacts every history for the snapshots still running (the history with versions
    among theirs that gives each of them the value it saw, ends in the live value and has no two
    equal neighbours: ``VersionedTimerQueue.compact``'s output, stated by what it produces), or
    drops all of them when none runs.

Invariants: ``point-in-time`` (the theorem: what a running or finished snapshot serialized of each
timer is whether it was live when the snapshot started) and ``no-leftovers`` (no history once no
snapshot runs); ``history-fits`` (``SLOTS + 2`` entries always suffice: the bounded list loses
nothing); the strengthening that makes the conjunction 1-inductive, each of them needed:
``snapshot-versions``, ``histories-well-formed``, ``running-snapshots-see-their-start`` (the
implementation's own invariant, ``VersionedTimerQueue``'s docstring) and
``one-stale-version-at-most`` (docs/prove.md, model ``versions``).

Variants (``VARIANTS``) mirror the bug zoo's patches of ``properties/snapshots/bugzoo.py``; their
counterexamples become ``snapshots`` scenarios (:func:`to_scenario`) that fail
``snapshots.point-in-time`` under the patch and hold on the implementation. ``REVIVE`` is the
seed's other reading (not in the bug zoo), built by ``versions_system("revive-on-register")``.
"""

from __future__ import annotations

import z3

from streamproof.properties.z3kit import TransitionSystem
from streamproof.properties.z3models import ModelVariant, Z3Model

TIMERS = 2       # default size
SLOTS = 2        # snapshots that may run at once
BASE = -1        # BASE_VERSION: "as it was before the history began"
FREE, RUNNING, FINISHED = 0, 1, 2

VARIANTS = {
    "single-create-delete-pair": (
        "FLINK-9182 (seed design)", "point-in-time", "bugzoo:seed-single-create-delete-pair",
        "one create and one delete version per timer, as the seed writes it: a registration makes a "
        "new timer created now, a deletion gives the (one) timer its delete version; a timer deleted "
        "and registered again while a snapshot runs is lost by it"),
    "snapshot-sees-newer-timers": (
        "FLINK-9182 (seed design)", "point-in-time", "bugzoo:snapshot-sees-newer-timers",
        "the visibility test compares versions with <= instead of <: a change made after the snapshot "
        "started, in its own version, is serialized by it"),
    "physical-delete-while-snapshot-runs": (
        "FLINK-9182 (seed design)", "point-in-time", "bugzoo:physical-delete-while-snapshot-runs",
        "a timer deleted while a snapshot runs is removed at once instead of kept as a tombstone: "
        "the running snapshot misses it"),
    "tombstones-never-purged": (
        "FLINK-9182 (seed design)", "no-leftovers", "bugzoo:tombstones-never-purged",
        "releasing a snapshot neither compacts nor drops the histories: tombstones stay although no "
        "snapshot needs them"),
}
# Not registered (no bug-zoo patch; its counterexample needs 5 steps, one more than the model's
# depth): the seed's other reading, which needs two snapshots to fail.
REVIVE = ("revive-on-register", "FLINK-9182 (seed design)", "point-in-time",
          "the other reading of the seed's single pair: registering a deleted timer again clears its "
          "delete version; a snapshot started between the deletion and the registration (two snapshots "
          "run) sees the deleted timer resurrected")


def versions_system(variant: str | None = None, size: int = TIMERS, slots: int = SLOTS) -> TransitionSystem:
    if variant is not None and variant not in VARIANTS and variant != REVIVE[0]:
        raise ValueError(f"unknown variant {variant!r} of model versions (known: {', '.join([*VARIANTS, REVIVE[0]])})")
    if size < 1 or slots < 1:
        raise ValueError("the versions model needs at least one timer and one snapshot slot")
    timers, slot_ids = range(size), range(slots)
    H = slots + 2  # -1, one per running version, one stale version (the invariant history-fits)
    variables = {"V": "int"}
    for x in timers:
        variables[f"live{x}"] = "bool"
        variables[f"hlen{x}"] = "int"
        for j in range(H):
            variables[f"hv{x}_{j}"] = "int"
            variables[f"hval{x}_{j}"] = "bool"
    for i in slot_ids:
        variables.update({f"state{i}": "int", f"ver{i}": "int", f"cursor{i}": "int"})
        for x in timers:
            variables[f"ghost{i}_{x}"] = "bool"
            variables[f"ser{i}_{x}"] = "bool"
    system = TransitionSystem("versions", variables, lambda s: None, {}, {},
                              f"FLINK-9182 copy-on-write snapshot versions, {size} timers, {slots} slots: "
                              + (variant or "as built"))

    def hv(s, x):
        return [s[f"hv{x}_{j}"] for j in range(H)]

    def hval(s, x):
        return [s[f"hval{x}_{j}"] for j in range(H)]

    def pick(items, index):
        out = items[0]
        for j in range(1, len(items)):
            out = z3.If(index == j, items[j], out)
        return out

    def visible(s, x, version):
        """The value of the last transition with a version < ``version`` (False: none)."""
        out = z3.BoolVal(False)
        for j in range(H):
            newer = hv(s, x)[j] <= version if variant == "snapshot-sees-newer-timers" else hv(s, x)[j] < version
            out = z3.If(z3.And(j < s[f"hlen{x}"], newer), hval(s, x)[j], out)
        return out

    def view(s, x, version):
        """What a snapshot at ``version`` serializes of timer ``x`` now."""
        return z3.If(s[f"hlen{x}"] == 0, s[f"live{x}"], visible(s, x, version))

    def running(s, i):
        return s[f"state{i}"] == RUNNING

    def any_running(s, but=None):
        return z3.Or([running(s, i) for i in slot_ids if i != but] or [z3.BoolVal(False)])

    def is_running_version(s, version):
        return z3.Or([z3.And(running(s, i), s[f"ver{i}"] == version) for i in slot_ids])

    def set_history(t, x, length, versions, values):
        """The history of ``x`` in ``t``; entries past its length are normalized to (0, False)."""
        out = [t[f"hlen{x}"] == length]
        for j in range(H):
            out += [t[f"hv{x}_{j}"] == z3.If(j < length, versions[j], 0),
                    t[f"hval{x}_{j}"] == z3.If(j < length, values[j], False)]
        return z3.And(out)

    def record(s, t, x, before: bool, after: bool):
        """``VersionedTimerQueue.record(before -> after)`` at version ``V`` (or the variant's)."""
        V, L = s["V"], s[f"hlen{x}"]
        fresh = L == 0
        e_len = z3.If(fresh, 1, L)
        e_v = [z3.If(fresh, BASE, hv(s, x)[0])] + hv(s, x)[1:]
        e_val = [z3.If(fresh, before, hval(s, x)[0])] + hval(s, x)[1:]
        if variant == "physical-delete-while-snapshot-runs" and not after:
            return set_history(t, x, L, hv(s, x), hval(s, x))  # BUG: no tombstone
        if variant == "single-create-delete-pair" or (variant == "revive-on-register" and not after):
            if after:  # a fresh timer object, created now, not deleted
                return set_history(t, x, 2, [z3.IntVal(BASE), V] + [z3.IntVal(0)] * (H - 2),
                                   [z3.BoolVal(False), z3.BoolVal(True)] + [z3.BoolVal(False)] * (H - 2))
            # deleted: the (one) timer object gets its delete version
            return set_history(t, x, e_len + 1, [z3.If(e_len == j, V, e_v[j]) for j in range(H)],
                               [z3.If(e_len == j, False, e_val[j]) for j in range(H)])
        if variant == "revive-on-register":  # registered again: its delete version is cleared
            revived = L - 1
            return z3.If(fresh, set_history(
                t, x, 2, [z3.IntVal(BASE), V] + [z3.IntVal(0)] * (H - 2),
                [z3.BoolVal(False), z3.BoolVal(True)] + [z3.BoolVal(False)] * (H - 2)),
                set_history(t, x, z3.If(revived == 1, 0, revived), hv(s, x), hval(s, x)))
        last_v = pick(e_v, e_len - 1)
        d_len = z3.If(last_v == V, e_len - 1, e_len)  # a later change in the same version replaces it
        append = pick(e_val, d_len - 1) != after
        n_len = z3.If(append, d_len + 1, d_len)
        return set_history(t, x, z3.If(n_len == 1, 0, n_len),  # only "as before": nothing to remember
                           [z3.If(z3.And(append, d_len == j), V, e_v[j]) for j in range(H)],
                           [z3.If(z3.And(append, d_len == j), after, e_val[j]) for j in range(H)])

    def timer_change(before: bool, after: bool):
        def relation(s, t, p):
            x = p["timer"]
            parts = [z3.Or([x == y for y in timers])]
            for y in timers:
                here = x == y
                keep = set_history(t, y, s[f"hlen{y}"], hv(s, y), hval(s, y))
                parts += [z3.Implies(here, s[f"live{y}"] == before),
                          t[f"live{y}"] == z3.If(here, after, s[f"live{y}"]),
                          z3.If(z3.And(here, any_running(s)), record(s, t, y, before, after), keep)]
            changed = [f"live{y}" for y in timers] + history_names
            return z3.And(parts + [system.frame(s, t, *changed)])
        return relation

    history_names = [f"{n}{x}_{j}" for x in timers for j in range(H) for n in ("hv", "hval")] + [
        f"hlen{x}" for x in timers]

    def slot_names(i):
        return [f"state{i}", f"ver{i}", f"cursor{i}"] + [f"{n}{i}_{x}" for x in timers for n in ("ghost", "ser")]

    def start(s, t, p):
        i = p["slot"]
        parts = [z3.Or([i == j for j in slot_ids]), t["V"] == s["V"] + 1]
        for j in slot_ids:
            here = i == j
            parts += [z3.Implies(here, z3.Not(running(s, j))),
                      t[f"state{j}"] == z3.If(here, RUNNING, s[f"state{j}"]),
                      t[f"ver{j}"] == z3.If(here, t["V"], s[f"ver{j}"]),
                      t[f"cursor{j}"] == z3.If(here, 0, s[f"cursor{j}"])]
            for x in timers:
                parts += [t[f"ghost{j}_{x}"] == z3.If(here, s[f"live{x}"], s[f"ghost{j}_{x}"]),
                          t[f"ser{j}_{x}"] == z3.If(here, False, s[f"ser{j}_{x}"])]
        return z3.And(parts + [system.frame(s, t, "V", *[n for j in slot_ids for n in slot_names(j)])])

    def step(s, t, p):
        i = p["slot"]
        parts = [z3.Or([i == j for j in slot_ids])]
        for j in slot_ids:
            here = i == j
            c = s[f"cursor{j}"]
            parts += [z3.Implies(here, z3.And(running(s, j), c < size)),
                      t[f"cursor{j}"] == z3.If(here, c + 1, c)]
            for x in timers:
                parts.append(t[f"ser{j}_{x}"] == z3.If(z3.And(here, c == x), view(s, x, s[f"ver{j}"]),
                                                      s[f"ser{j}_{x}"]))
        changed = [f"cursor{j}" for j in slot_ids] + [f"ser{j}_{x}" for j in slot_ids for x in timers]
        return z3.And(parts + [system.frame(s, t, *changed)])

    def compact(s, t, x, released):
        """The histories after slot ``released`` ends, for the snapshots still running."""
        others = [r for r in slot_ids if r != released]
        if variant == "tombstones-never-purged":
            return set_history(t, x, s[f"hlen{x}"], hv(s, x), hval(s, x))  # BUG: nothing purged
        drop = set_history(t, x, 0, hv(s, x), hval(s, x))
        if not others:
            return drop
        n_len, n_v, n_val = t[f"hlen{x}"], hv(t, x), hval(t, x)
        all_live = z3.And([z3.Implies(running(s, r), view(s, x, s[f"ver{r}"]) == s[f"live{x}"]) for r in others])
        kept = [n_len >= 1, n_len <= H, n_v[0] == BASE, pick(n_val, n_len - 1) == s[f"live{x}"]]
        for j in range(1, H):
            kept.append(z3.Implies(j < n_len, z3.And(n_v[j - 1] < n_v[j], n_val[j - 1] != n_val[j], z3.Or(
                [z3.And(running(s, r), n_v[j] == s[f"ver{r}"]) for r in others]))))
        for j in range(H):
            kept.append(z3.Implies(j >= n_len, z3.And(n_v[j] == 0, z3.Not(n_val[j]))))
        kept += [z3.Implies(running(s, r), visible(t, x, s[f"ver{r}"]) == view(s, x, s[f"ver{r}"])) for r in others]
        return z3.If(z3.And(any_running(s, released), z3.Not(all_live)), z3.And(kept), drop)

    def release(s, t, i, done: bool):
        parts = []
        for j in slot_ids:
            here = i == j
            c = s[f"cursor{j}"]
            parts += [z3.Implies(here, running(s, j)),
                      t[f"state{j}"] == z3.If(here, FINISHED if done else FREE, s[f"state{j}"])]
            if done:  # the rest is serialized, then the version released
                parts.append(t[f"cursor{j}"] == z3.If(here, size, c))
                for x in timers:
                    parts.append(t[f"ser{j}_{x}"] == z3.If(z3.And(here, c <= x), view(s, x, s[f"ver{j}"]),
                                                          s[f"ser{j}_{x}"]))
        for x in timers:
            parts.append(z3.And([z3.Implies(i == j, compact(s, t, x, j)) for j in slot_ids]))
        changed = [f"state{j}" for j in slot_ids] + history_names
        if done:
            changed += [f"cursor{j}" for j in slot_ids] + [f"ser{j}_{x}" for j in slot_ids for x in timers]
        return z3.And(parts + [z3.Or([i == j for j in slot_ids]), system.frame(s, t, *changed)])

    def init(s):
        parts = [s["V"] == 0]
        for x in timers:  # any live set, nothing versioned
            parts.append(set_history(s, x, 0, hv(s, x), hval(s, x)))
        for i in slot_ids:
            parts += [s[f"state{i}"] == FREE, s[f"ver{i}"] == 0, s[f"cursor{i}"] == 0]
            parts += [z3.And(z3.Not(s[f"ghost{i}_{x}"]), z3.Not(s[f"ser{i}_{x}"])) for x in timers]
        return z3.And(parts)

    def entries(s, x):
        return [(j, hv(s, x)[j], hval(s, x)[j]) for j in range(H)]

    system.init = init
    system.actions = {
        "register": ({"timer": "int"}, timer_change(False, True)),
        "delete": ({"timer": "int"}, timer_change(True, False)),
        "start": ({"slot": "int"}, start),
        "step": ({"slot": "int"}, step),
        "finish": ({"slot": "int"}, lambda s, t, p: release(s, t, p["slot"], True)),
        "cancel": ({"slot": "int"}, lambda s, t, p: release(s, t, p["slot"], False)),
    }
    system.invariants = {
        # the theorem
        "point-in-time": lambda s: z3.And([z3.Implies(
            z3.And(s[f"state{i}"] != FREE, x < s[f"cursor{i}"]), s[f"ser{i}_{x}"] == s[f"ghost{i}_{x}"])
            for i in slot_ids for x in timers]),
        "no-leftovers": lambda s: z3.Implies(z3.Not(any_running(s)), z3.And([s[f"hlen{x}"] == 0 for x in timers])),
        # the model's own bound: a history never needs more than SLOTS + 2 entries
        "history-fits": lambda s: z3.And([z3.And(s[f"hlen{x}"] >= 0, s[f"hlen{x}"] <= H) for x in timers]),
        # strengthening
        "snapshot-versions": lambda s: z3.And([s["V"] >= 0] + [z3.And(
            s[f"state{i}"] >= FREE, s[f"state{i}"] <= FINISHED, s[f"cursor{i}"] >= 0, s[f"cursor{i}"] <= size,
            z3.Implies(s[f"state{i}"] == FINISHED, s[f"cursor{i}"] == size),
            z3.Implies(running(s, i), z3.And(s[f"ver{i}"] >= 1, s[f"ver{i}"] <= s["V"])))
            for i in slot_ids] + [z3.Implies(z3.And(running(s, i), running(s, j)), s[f"ver{i}"] != s[f"ver{j}"])
                                  for i in slot_ids for j in slot_ids if i < j]),
        "histories-well-formed": lambda s: z3.And([z3.Implies(s[f"hlen{x}"] > 0, z3.And(
            [hv(s, x)[0] == BASE, pick(hval(s, x), s[f"hlen{x}"] - 1) == s[f"live{x}"]] +
            [z3.Implies(j < s[f"hlen{x}"], z3.And(hv(s, x)[j - 1] < hv(s, x)[j], hv(s, x)[j] <= s["V"]))
             for j in range(1, H)])) for x in timers]),
        "running-snapshots-see-their-start": lambda s: z3.And([z3.Implies(
            running(s, i), view(s, x, s[f"ver{i}"]) == s[f"ghost{i}_{x}"]) for i in slot_ids for x in timers]),
        "one-stale-version-at-most": lambda s: z3.And([z3.And(
            [z3.Implies(z3.And(j < s[f"hlen{x}"], z3.Not(is_running_version(s, s["V"]))),
                        z3.Or(is_running_version(s, v), v == s["V"])) for j, v, _ in entries(s, x)[1:]] +
            [z3.Implies(k < s[f"hlen{x}"], z3.Or(is_running_version(s, v), is_running_version(s, w)))
             for j, v, _ in entries(s, x)[1:] for k, w, _ in entries(s, x)[1:] if j < k]) for x in timers]),
    }
    return system


# -- counterexample -> scenario ----------------------------------------------------------------
NAMESPACE, TIMESTAMP = "w", 10


def timer_keys(size: int) -> list[str]:
    """Timer ``t`` of the model is event-time timer ``key@10`` in namespace ``w`` of a key in key group
    ``t`` (max parallelism ``size``): the asynchronous part serializes timer ``t`` at its ``t``-th step."""
    from streamproof.impl.state.key_groups import assign_to_key_group

    keys, n = {}, 0
    while len(keys) < size:
        candidate = "abcdefghijklmnopqrstuvwxyz"[n % 26] + ("" if n < 26 else str(n // 26))
        keys.setdefault(assign_to_key_group(candidate, size), candidate)
        n += 1
    return [keys[t] for t in range(size)]


def to_scenario(trace: list, variant: str | None) -> dict:
    """A ``snapshots`` scenario following the trace step by step: a job of one subtask over ``size``
    key groups, timer ``t`` in key group ``t``; the timers live in the initial state are registered
    first; ``start(slot)`` starts a snapshot with a new id, ``step`` / ``finish`` / ``cancel`` drive the
    snapshot the slot holds; the snapshots still running at the end are finished (the property
compares a snapshot's files when it finishes, and a section written by a ``step`` stays as it was
written). Checked by ``snapshots.point-in-time``."""
    size = sum(1 for name in trace[0][2] if name.startswith("live"))
    keys = timer_keys(size)
    steps: list[dict] = [{"op": "new_job", "max_parallelism": size, "parallelism": 1}]
    current = [None]

    def timer_op(op: str, x: int) -> None:
        if current[0] != keys[x]:
            steps.append({"op": "set_key", "key": keys[x]})
            current[0] = keys[x]
        steps.append({"op": op, "domain": "event", "namespace": NAMESPACE, "ts": TIMESTAMP})

    for x in range(size):
        if trace[0][2][f"live{x}"]:
            timer_op("register", x)
    ids: dict[int, str] = {}
    started = 0
    for action, params, _ in trace[1:]:
        if action in ("register", "delete"):
            timer_op(action, params["timer"])
        elif action == "start":
            started += 1
            ids[params["slot"]] = f"s{started}"
            steps.append({"op": "start_snapshot", "id": ids[params["slot"]]})
        else:
            op = {"step": "snapshot_step", "finish": "finish_snapshot", "cancel": "cancel_snapshot"}[action]
            steps.append({"op": op, "id": ids[params["slot"]]})
            if action != "step":
                del ids[params["slot"]]
    for slot in sorted(ids):  # the property compares a snapshot when it finishes: finish the rest
        steps.append({"op": "finish_snapshot", "id": ids[slot]})
    refutes = VARIANTS[variant][1] if variant in VARIANTS else REVIVE[2]
    return {"format": "streamproof.scenario/1", "family": "snapshots", "property": "snapshots.point-in-time",
            "description": f"z3 model versions, variant {variant}: its counterexample to {refutes} "
                           f"({len(trace) - 1} steps), timer t = key {', '.join(keys)} @{TIMESTAMP} in key group t",
            "steps": steps}


MODEL = Z3Model(
    name="versions", family="snapshots",
    summary="FLINK-9182 copy-on-write timer snapshot versions: every snapshot serializes the timers live "
            "at its start; nothing is left behind once none runs",
    abstracts="one timer service of event-time timers without payloads (actions), one timer per key group "
              "and a firing as a delete; a snapshot's release compacts all histories at once (the "
              "implementation compacts key group by key group under the write lock); locks, threads, "
              "bytes and restore are left out; versions are unbounded integers",
    build=versions_system, k=1, depth=4, size_name="timers", size=TIMERS, to_scenario=to_scenario,
    variants={name: ModelVariant(name, source, text, refutes, how)
              for name, (source, refutes, how, text) in VARIANTS.items()})

"""z3 model of the operator-coordinator event valve (FLINK-26029, docs/valve.md) with one holder and
``S`` subtasks, proved for the ``streamproof`` protocol by k-induction (``streamproof prove valve``)
and refuted for ``legacy`` (the FLINK-26029 inconsistent checkpoint) and ``flink-2.3`` (finding (b):
an event buffered on a replaced gateway stalls every later checkpoint).

The JobManager main thread is atomic per action; one checkpoint at a time. Events are abstracted
into counts per subtask ``i`` (RPCs to a task are FIFO and the coordinator sends 0, 1, 2, ...,
again from its restored count after a rollback, so counts determine the sequences):

  * ``sent_i``   the coordinator's state: how many events it sent to i (rolled back on failover);
  * ``app_i``    applied by i's current attempt (its state);
  * ``fly_i``    issued to the current attempt on a pending RPC (applied when acknowledged);
  * ``buf_i``    buffered on i's current gateway (closed);
  * ``closed_i`` i's gateway closed for the pending checkpoint; ``pend_i`` the RPC mode of i
    (pending, else acknowledged at once; chosen at the start, fixed for the run); ``acked_i`` i
    took its snapshot of the pending checkpoint;
  * ``csnap_i`` / ``ssnap_i``: ``sent_i`` in the coordinator's / ``app_i`` in i's snapshot of the
    pending checkpoint; ``lc_i`` / ``ls_i``: the same for the latest completed checkpoint (0 / 0
    before any: the initial state);
  * ``ph`` the pending checkpoint: 0 none, 1 triggered (coordinator future pending), 2 gateways
    closed and the holder's future waiting for the events sent before the close, 3 holder's future
    done (tasks triggered, acknowledgements come), 4 holder's future failed (the abort is due);
  * ``ofly`` unconfirmed events in flight to attempts that no longer run; ``stuck`` unconfirmed
    events left on replaced gateways (neither sent nor failed: flink-2.3's flaw (b)).

Actions: ``send(i)``, ``rpc_ack_all`` / ``rpc_fail_all`` (every RPC in flight succeeds / fails; a
failure to a running attempt fails it over at once), ``trigger``, ``coordinator_done`` (close the gateways; the holder's
future completes once nothing sent before the close is unacknowledged), ``ack(i)`` (i's synchronous
snapshot and its AcknowledgeCheckpointEvent: reopen its gateway), ``complete`` (every subtask
acknowledged: notify complete), ``abort`` (the JobManager aborts the pending checkpoint),
``failover(i)`` (region failover: fail, restart from the latest completed checkpoint, fresh gateway,
``subtask_reset``, the late abort of the pending checkpoint), ``reset`` (global failover).
"""

from __future__ import annotations

import z3

from streamproof.properties.z3kit import TransitionSystem
from streamproof.properties.z3models import ModelVariant, Z3Model

SUBTASKS = 2
IDLE, TRIGGERED, WAITING, TASKS, FAILED = 0, 1, 2, 3, 4

# name -> (source, description, refuted invariant, reproduced_by)
VARIANTS = {
    "legacy": (
        "FLINK-26029",
        "the 1.14/1.15 OperatorEventValve: one valve, shut when the coordinator's future completes and "
        "opened as soon as the holder's future is done (the barriers injected at the sources); "
        "AcknowledgeCheckpointEvent is ignored: an event sent then reaches a subtask before its snapshot",
        "consistent-checkpoints", "protocol:legacy"),
    "flink-2.3": (
        "Flink 2.3 (docs/valve.md finding b)",
        "Flink 2.3's flaw (b): a region failover replaces the gateway without failing its buffered "
        "events, which stay unconfirmed for good and every later coordinator checkpoint waits for them "
        "(the variant has this flaw only; findings (a), 3 and 4 are outside the model)",
        "no-stall", "protocol:flink-2.3"),
    "no-wait-for-event-acks": (
        "FLINK-21996",
        "the holder's future completes as soon as the gateways close, without waiting for the events "
        "sent before the close: one still in flight misses the subtask's snapshot",
        "consistent-checkpoints", "bugzoo:no-wait-for-event-acks"),
    "gateways-closed-for-some-subtasks": (
        "streamproof",
        "closing stops after the first gateway: the other subtasks apply events sent after the "
        "coordinator's checkpoint before their own snapshot",
        "consistent-checkpoints", "bugzoo:gateways-closed-for-some-subtasks"),
}
PER_SUBTASK = {"sent": "int", "app": "int", "fly": "int", "buf": "int", "closed": "bool", "pend": "bool",
               "acked": "bool", "csnap": "int", "ssnap": "int", "lc": "int", "ls": "int"}


def valve_system(variant: str | None = None, size: int = SUBTASKS) -> TransitionSystem:
    if variant is not None and variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r} of model valve (known: {', '.join(VARIANTS)})")
    subtasks = range(size)
    legacy = variant == "legacy"
    variables = {"ph": "int", "ofly": "int", "stuck": "int"}
    variables.update({f"{n}{i}": kind for i in subtasks for n, kind in PER_SUBTASK.items()})
    system = TransitionSystem("valve", variables, lambda s: None, {}, {},
                              "operator-coordinator event valve: " + (variant or "streamproof"))

    def v(s, name, i):
        return s[f"{name}{i}"]

    def assign(s, t, updates: dict) -> z3.BoolRef:
        """The successor: ``updates`` (name -> new value), every other variable unchanged."""
        return z3.And([t[n] == updates.get(n, s[n]) for n in variables])

    def release(s, u: dict, i, k) -> None:
        """Issue ``k`` events to subtask i's current attempt (in ``u``, on top of earlier updates)."""
        app, fly = u.get(f"app{i}", v(s, "app", i)), u.get(f"fly{i}", v(s, "fly", i))
        u[f"app{i}"] = app + z3.If(v(s, "pend", i), 0, k)
        u[f"fly{i}"] = fly + z3.If(v(s, "pend", i), k, 0)

    def open_gateway(s, u: dict, i, when=True) -> None:
        """Open i's gateway (when ``when``), releasing what it buffered."""
        buf = u.get(f"buf{i}", v(s, "buf", i))
        release(s, u, i, z3.If(when, buf, 0))
        u[f"buf{i}"] = z3.If(when, 0, buf)
        u[f"closed{i}"] = z3.If(when, False, u.get(f"closed{i}", v(s, "closed", i)))

    def restart(s, u: dict, i, when=True) -> None:
        """Region failover of i (when ``when``): a new attempt restored to the latest completed
        checkpoint, the coordinator told subtask_reset (rolls back to it), a fresh gateway; the
        old attempt's RPCs in flight stay unconfirmed, its buffered events are failed
        (streamproof) or stay on the replaced gateway (flink-2.3)."""
        u[f"sent{i}"] = z3.If(when, v(s, "lc", i), v(s, "sent", i))
        u[f"app{i}"] = z3.If(when, v(s, "ls", i), v(s, "app", i))
        u[f"fly{i}"] = z3.If(when, 0, v(s, "fly", i))
        u[f"buf{i}"] = z3.If(when, 0, v(s, "buf", i))
        u[f"closed{i}"] = z3.If(when, False, v(s, "closed", i))
        u["ofly"] = u.get("ofly", s["ofly"]) + z3.If(when, v(s, "fly", i), 0)
        if variant == "flink-2.3":
            u["stuck"] = u.get("stuck", s["stuck"]) + z3.If(when, v(s, "buf", i), 0)

    def end_checkpoint(s, u: dict, when=True) -> None:
        """The pending checkpoint ends (completed or aborted, when ``when``): every gateway opens."""
        u["ph"] = z3.If(when, IDLE, u.get("ph", s["ph"]))
        for i in subtasks:
            u[f"acked{i}"] = z3.If(when, False, u.get(f"acked{i}", v(s, "acked", i)))
            open_gateway(s, u, i, when)

    def holder_done(s, u: dict, when) -> None:
        """The holder's future completes (``when``): the tasks are triggered. legacy: the barriers
        are injected at the sources and the valve opens."""
        u["ph"] = z3.If(when, TASKS, u.get("ph", s["ph"]))
        for i in subtasks:
            if legacy:
                open_gateway(s, u, i, when)

    def in_range(i):
        return z3.Or([i == j for j in subtasks])

    def nothing_in_flight(s):
        return z3.And([s["ofly"] == 0] + [v(s, "fly", j) == 0 for j in subtasks])

    # -- actions: each is its guard (``guards``, also read by next_checkpoint_completes) and a
    # deterministic update -------------------------------------------------------------------
    guards = {
        "send": lambda s, p: in_range(p["i"]),
        "rpc_ack_all": lambda s, p: z3.Not(nothing_in_flight(s)),
        "rpc_fail_all": lambda s, p: z3.Not(nothing_in_flight(s)),
        "trigger": lambda s, p: s["ph"] == IDLE,
        "coordinator_done": lambda s, p: s["ph"] == TRIGGERED,
        "ack": lambda s, p: z3.And(s["ph"] == TASKS, z3.Or([z3.And(p["i"] == i, z3.Not(v(s, "acked", i)))
                                                             for i in subtasks])),
        "complete": lambda s, p: z3.And([s["ph"] == TASKS] + [v(s, "acked", i) for i in subtasks]),
        "abort": lambda s, p: s["ph"] != IDLE,
        "failover": lambda s, p: in_range(p["i"]),
        "reset": lambda s, p: z3.BoolVal(True),
    }
    def send(s, t, p):
        options = []
        for i in subtasks:
            u = {f"sent{i}": v(s, "sent", i) + 1, f"buf{i}": v(s, "buf", i) + z3.If(v(s, "closed", i), 1, 0)}
            release(s, u, i, z3.If(v(s, "closed", i), 0, 1))
            options.append(z3.And(p["i"] == i, assign(s, t, u)))
        return z3.And(guards["send"](s, p), z3.Or(options))

    def rpc_ack_all(s, t, p):
        u = {"ofly": 0}
        for i in subtasks:
            u[f"app{i}"] = v(s, "app", i) + v(s, "fly", i)
            u[f"fly{i}"] = 0
        holder_done(s, u, z3.And(s["ph"] == WAITING, s["stuck"] == 0))
        return z3.And(guards["rpc_ack_all"](s, p), assign(s, t, u))

    def rpc_fail_all(s, t, p):
        u = {"ofly": 0}
        failing = [v(s, "fly", i) > 0 for i in subtasks]
        any_failing = z3.Or(failing)
        for i in subtasks:
            restart(s, u, i, failing[i])
        u["ofly"] = 0  # the old attempts' RPCs failed too (no failover: those attempts are gone)
        # a failover aborts the pending checkpoint; else the holder's future fails if it waited
        end_checkpoint(s, u, z3.And(any_failing, s["ph"] != IDLE))
        u["ph"] = z3.If(any_failing, IDLE, z3.If(s["ph"] == WAITING, FAILED, s["ph"]))
        return z3.And(guards["rpc_fail_all"](s, p), assign(s, t, u))

    def trigger(s, t, p):
        return z3.And(guards["trigger"](s, p), assign(s, t, {"ph": TRIGGERED}))

    def coordinator_done(s, t, p):
        u = {}
        for i in subtasks:
            u[f"csnap{i}"] = v(s, "sent", i)
            u[f"closed{i}"] = i == 0 if variant == "gateways-closed-for-some-subtasks" else True
        u["ph"] = WAITING
        waits = z3.And(nothing_in_flight(s), s["stuck"] == 0)
        holder_done(s, u, z3.Or(variant == "no-wait-for-event-acks", waits))
        return z3.And(guards["coordinator_done"](s, p), assign(s, t, u))

    def ack(s, t, p):
        options = []
        for i in subtasks:
            u = {f"ssnap{i}": v(s, "app", i), f"acked{i}": True}
            if not legacy:  # legacy: AcknowledgeCheckpointEvent did not exist
                open_gateway(s, u, i)
            options.append(z3.And(p["i"] == i, assign(s, t, u)))
        return z3.And(guards["ack"](s, p), z3.Or(options))

    def complete(s, t, p):
        u = {}
        for i in subtasks:
            u[f"lc{i}"] = v(s, "csnap", i)
            u[f"ls{i}"] = v(s, "ssnap", i)
        end_checkpoint(s, u)
        return z3.And(guards["complete"](s, p), assign(s, t, u))

    def abort(s, t, p):
        u = {}
        end_checkpoint(s, u)
        return z3.And(guards["abort"](s, p), assign(s, t, u))

    def failover(s, t, p):
        options = []
        for i in subtasks:
            u = {}
            restart(s, u, i)
            end_checkpoint(s, u, s["ph"] != IDLE)  # the abort of the pending checkpoint
            options.append(z3.And(p["i"] == i, assign(s, t, u)))
        return z3.And(guards["failover"](s, p), z3.Or(options))

    def reset(s, t, p):
        u = {}
        for i in subtasks:
            restart(s, u, i)
            u["stuck"] = s["stuck"]  # a global reset fails every current gateway's events
        end_checkpoint(s, u, s["ph"] != IDLE)
        return z3.And(guards["reset"](s, p), assign(s, t, u))

    def init(s):
        return z3.And([s["ph"] == IDLE, s["ofly"] == 0, s["stuck"] == 0] + [
            z3.And([v(s, n, i) == 0 for n, kind in PER_SUBTASK.items() if kind == "int"] +
                   [z3.Not(v(s, n, i)) for n in ("closed", "acked")])  # pend_i: either mode
            for i in subtasks])

    system.init = init
    system.guards = guards  # not a TransitionSystem field: next_checkpoint_completes reads it
    system.actions = {
        "send": ({"i": "int"}, send),
        "rpc_ack_all": ({}, rpc_ack_all),
        "rpc_fail_all": ({}, rpc_fail_all),
        "trigger": ({}, trigger),
        "coordinator_done": ({}, coordinator_done),
        "ack": ({"i": "int"}, ack),
        "complete": ({}, complete),
        "abort": ({}, abort),
        "failover": ({"i": "int"}, failover),
        "reset": ({}, reset),
    }
    ints = ["sent", "app", "fly", "buf", "csnap", "ssnap", "lc", "ls"]
    system.invariants = {
        # the theorem (DESIGN.md §3.6): a checkpoint is complete once the holder's future is done and
        # every subtask acknowledged it (then notify_complete); it and the latest completed one hold,
        # for every subtask, in its snapshot exactly what the coordinator's snapshot says it sent
        "consistent-checkpoints": lambda s: z3.And(
            [z3.Implies(z3.And([s["ph"] == TASKS] + [v(s, "acked", i) for i in subtasks]),
                        z3.And([v(s, "ssnap", i) == v(s, "csnap", i) for i in subtasks]))] +
            [v(s, "lc", i) == v(s, "ls", i) for i in subtasks]),
        # no stall: nothing unconfirmed is left on a replaced gateway, and a buffered event sits only
        # on a current gateway closed for the pending checkpoint (its end or the subtask's snapshot
        # releases it); so the next close waits only for events in flight, which the RPCs settle
        # (next_checkpoint_completes proves that from every state where the invariants hold)
        "no-stall": lambda s: z3.And([s["stuck"] == 0] + [
            z3.Implies(v(s, "buf", i) > 0, z3.And(v(s, "closed", i), s["ph"] >= WAITING)) for i in subtasks]),
        # strengthening (inductive helpers), proved like the others
        "counts-and-phase-in-range": lambda s: z3.And(
            [s["ph"] >= IDLE, s["ph"] <= FAILED, s["ofly"] >= 0, s["stuck"] >= 0] +
            [v(s, n, i) >= 0 for i in subtasks for n in ints]),
        "every-sent-event-is-applied-in-flight-or-buffered": lambda s: z3.And(
            [v(s, "sent", i) == v(s, "app", i) + v(s, "fly", i) + v(s, "buf", i) for i in subtasks]),
        "gateways-closed-from-the-close-to-the-subtasks-snapshot": lambda s: z3.And([z3.And(
            z3.Implies(s["ph"] <= TRIGGERED, z3.And(z3.Not(v(s, "closed", i)), z3.Not(v(s, "acked", i)))),
            z3.Implies(z3.Or(s["ph"] == WAITING, s["ph"] == FAILED),
                       z3.And(v(s, "closed", i), z3.Not(v(s, "acked", i)))),
            z3.Implies(s["ph"] == TASKS, v(s, "closed", i) == z3.Not(v(s, "acked", i)))) for i in subtasks]),
        "pending-snapshots-hold-what-the-coordinator-sent-before-the-close": lambda s: z3.Implies(
            s["ph"] >= WAITING, z3.And([z3.And(
                z3.Implies(v(s, "closed", i), v(s, "app", i) + v(s, "fly", i) == v(s, "csnap", i)),
                z3.Implies(z3.And(s["ph"] == TASKS, v(s, "closed", i)), v(s, "fly", i) == 0),
                z3.Implies(v(s, "acked", i), v(s, "ssnap", i) == v(s, "csnap", i))) for i in subtasks])),
    }
    return system


# ------------------------------------------------------------------------ counterexample -> scenario

PROPERTY = {"consistent-checkpoints": "valve.consistent-checkpoints", "no-stall": "valve.liveness"}


def protocol_of_variant(variant: str | None) -> str:
    """The ``params.protocol`` a variant's scenario runs under (a bug-zoo variant patches streamproof)."""
    if variant is None:
        return "streamproof"
    how = VARIANTS[variant][3]
    return how.partition(":")[2] if how.startswith("protocol:") else "streamproof"


def to_scenario(trace: list, variant: str | None) -> dict:
    """A ``valve`` scenario of the counterexample, step for step: ``coordinator_done`` is the
    coordinator's ``complete``, ``complete`` is ``notify_complete``, a failover is ``fail_subtask``
    + ``restart_subtask`` (to the latest completed checkpoint) followed by the late
    ``notify_aborted`` of the checkpoint it aborts (and ``abort_triggering`` when the holder's
    future was not done, as the JobManager and the drain phase do), an RPC failure to a running
    attempt is followed by its failover; events carry the coordinator's next number for the
    subtask. Checked by the property of the refuted invariant (the drain phase of
    ``valve.liveness`` then shows a stall)."""
    size = sum(1 for n in trace[0][2] if n.startswith("sent"))
    steps: list[dict] = [{"op": "new_holder", "parallelism": size}]
    sent_to = {params["i"] for action, params, _ in trace if action == "send"}
    steps += [{"op": "rpc", "subtask": i, "mode": "pending"} for i in sorted(sent_to) if trace[0][2][f"pend{i}"]]
    checkpoint, latest = 0, -1

    def aborted(before: dict) -> list[dict]:
        if before["ph"] == IDLE:
            return []
        out = [{"op": "notify_aborted", "checkpoint": checkpoint}]
        if before["ph"] != TASKS:
            out.append({"op": "abort_triggering"})
        return out

    for (_, _, before), (action, params, _) in zip(trace, trace[1:]):
        i = params.get("i")
        if action == "send":
            steps.append({"op": "send", "subtask": i, "event": before[f"sent{i}"]})
        elif action == "rpc_ack_all":
            steps.append({"op": "rpc_ack_all"})
        elif action == "rpc_fail_all":
            steps.append({"op": "rpc_fail_all"})
            failing = [j for j in range(size) if before[f"fly{j}"] > 0]
            steps += [{"op": "fail_subtask", "subtask": j} for j in failing]
            steps += [{"op": "restart_subtask", "subtask": j, "checkpoint": latest} for j in failing]
            if failing:
                steps += aborted(before)
        elif action == "trigger":
            checkpoint += 1
            steps.append({"op": "trigger", "checkpoint": checkpoint})
        elif action == "coordinator_done":
            steps.append({"op": "complete", "checkpoint": checkpoint})
        elif action == "ack":
            steps.append({"op": "ack", "subtask": i, "checkpoint": checkpoint})
        elif action == "complete":
            steps.append({"op": "notify_complete", "checkpoint": checkpoint})
            latest = checkpoint
        elif action == "abort":
            steps += aborted(before)
        elif action == "failover":
            steps += [{"op": "fail_subtask", "subtask": i},
                      {"op": "restart_subtask", "subtask": i, "checkpoint": latest}]
            steps += aborted(before)
        elif action == "reset":
            steps += [{"op": "fail_subtask", "subtask": j} for j in range(size)]
            steps.append({"op": "reset", "checkpoint": latest})
            steps += aborted(before)
        else:
            raise ValueError(f"unknown action {action!r} in a valve trace")
    refuted = VARIANTS[variant][2] if variant is not None else "consistent-checkpoints"
    return {"format": "streamproof.scenario/1", "family": "valve", "property": PROPERTY[refuted],
            "description": f"z3 model valve, variant {variant}: its counterexample to {refuted}, step for step"
                           + (" (then the drain phase shows the stall)" if refuted == "no-stall" else ""),
            "params": {"protocol": protocol_of_variant(variant)}, "steps": steps}


MODEL = Z3Model(
    name="valve", family="valve",
    summary="operator-coordinator event valve (FLINK-26029): one holder, its subtasks, the streamproof protocol",
    abstracts="events are per-subtask counts; one checkpoint at a time, a region failover is atomic "
              "(fail, restart, late abort) and a coordinator future completes only for the pending "
              "checkpoint; lost-at-once RPCs, subtask-to-coordinator events and several coordinators "
              "are left out (docs/valve.md has them)",
    build=valve_system, k=1, depth=5, size_name="subtasks", size=SUBTASKS, to_scenario=to_scenario,
    variants={name: ModelVariant(name, source, text, refutes, how)
              for name, (source, text, refutes, how) in VARIANTS.items()})


def next_checkpoint_completes(size: int = SUBTASKS, variant: str | None = None) -> bool:
    """What ``no-stall`` is for, proved for every state satisfying the model's invariants (not only
    the reachable ones): the JobManager's drain, with no more faults (abort the pending checkpoint
    if any, every RPC in flight acknowledged, trigger, the coordinator completes, every RPC
    acknowledged), is enabled step by step and leaves the holder's future done; then every subtask
    acknowledges, the checkpoint completes, and nothing is left buffered. True when z3 shows it."""
    system = valve_system(variant, size)
    subtasks = range(size)
    s = system.state(0)
    solver = z3.Solver()
    solver.add(z3.And([inv(s) for inv in system.invariants.values()]))

    def in_flight(x):
        return z3.Or([x["ofly"] > 0] + [x[f"fly{i}"] > 0 for i in subtasks])

    schedule = [("abort", {}, lambda x: x["ph"] != IDLE), ("rpc_ack_all", {}, in_flight),
                ("trigger", {}, None), ("coordinator_done", {}, None), ("rpc_ack_all", {}, in_flight)]
    schedule += [("ack", {"i": i}, None) for i in subtasks] + [("complete", {}, None)]
    for n, (name, params, when) in enumerate(schedule):
        t = system.state(n + 1)
        relation = system.actions[name][1]
        p = {k: z3.IntVal(v) for k, v in params.items()}
        enabled = system.guards[name](s, p)  # the update is deterministic: enabled iff the guard holds
        solver.push()
        solver.add(z3.Not(enabled) if when is None else z3.And(when(s), z3.Not(enabled)))
        if solver.check() != z3.unsat:
            return False
        solver.pop()
        step = relation(s, t, p)
        solver.add(step if when is None else z3.If(when(s), step, system.frame(s, t)))
        s = t
    solver.add(z3.Not(z3.And([s["ph"] == IDLE, s["stuck"] == 0] + [s[f"buf{i}"] == 0 for i in subtasks])))
    return solver.check() == z3.unsat

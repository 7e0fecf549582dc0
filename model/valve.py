"""Specification of the operator-coordinator event valve (FLINK-26029) and of what it must
guarantee.

Two parts.

``ValveSpec`` -- the protocol, step by step, for each of the three protocols (``flink-2.3``,
``legacy``, ``streamproof``), predicting what a ``valve`` scenario observes (the vectors' format:
``deliver``, ``deliver_refused``, ``lost``, ``task_failover``, ``coordinator_received``,
``coordinator_reset``, ``coordinator_subtask_reset``, ``result``, ``global_failure``, ``error``).

``Epochs`` -- what must hold whatever the protocol, fed with the steps and the implementation's
observations. It keeps the coordinator's state (per subtask, the events it has sent, as it would
put them in its checkpoint), every subtask's state (the events applied by its current attempt),
the snapshots taken at each ``ack`` and the coordinator checkpoints taken at each ``complete``.
Its invariants, by name:

  * ``consistent-checkpoints``: when checkpoint c completes (the holder's future is done and every
    current attempt acknowledged c, with no failover since c was triggered), for every subtask i
    the events the coordinator sent to i before it completed c are exactly the events applied in
    i's snapshot for c, in order;
  * ``gateways-all-or-none``: when a coordinator checkpoint completes, either every current
    gateway closes for it or none does;
  * ``delivered-to-target``: an event reaches only the attempt that was current when it was sent;
  * ``applied-once``: no event (a value, per subtask) is applied twice to a subtask's state, across
    any failovers (the ITCase oracle: exactly [0..N-1]);
  * ``nothing-lost`` (after the drain phase): every subtask's state is exactly the coordinator's
    view of what it sent, in order;
  * ``liveness`` (after the drain phase: no more faults, every RPC succeeds, failed attempts are
    restarted, the pending checkpoint is aborted, one more checkpoint runs, then one probe event
    is sent to each subtask): that checkpoint completes, every probe arrives, and no event is
    left buffered or in flight;
  * ``subtask-events-consistent`` (a known limitation, FLINK-28639, not part of any property):
    the events a subtask sent to the coordinator before its snapshot for c are exactly those the
    coordinator had received when it completed c.

What is modelled
  * The JobManager's main thread as one FIFO queue; RPCs to a task are FIFO; an RPC completes at
    once (``ack``), later (``pending``: in flight until ``rpc_ack_all`` applies it or
    ``rpc_fail_all`` loses it) or is lost (``lost``); an RPC to an attempt no longer running is
    refused. A failed RPC to a running attempt fails it over (``task_failover``).
  * An event in flight is applied to the subtask's state when its RPC is acknowledged; a subtask's
    snapshot (taken just before its ``ack``) holds the events applied so far.
  * The coordinator's contract: its checkpoint c holds the events it sent before completing c;
    after ``subtask_reset(i, c)`` it forgets what it sent to i after c (and sends it again); after
    ``reset(c)`` it is its checkpoint c.

What is left out
  * Several coordinators, concurrent checkpoints (one at a time, as Flink's default), speculative
    execution (concurrent attempts), savepoints, the content of events (a value identifies an
    event per subtask: sending a value again is a resend of the same logical event).

Checked by ``tests/test_valve*.py``: the 18 Flink 2.3 traces (model and implementation), and the
state machines of ``properties/valve/machine.py`` (numbers in docs/properties.md).

Size: one specification, read top to bottom: the protocols (``ValveSpec``), what each must guarantee (``Epochs``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterable

NO_CHECKPOINT = -(2**63)
PROBE = 2**31 - 1   # the value of the events the drain phase sends last, one per subtask
INVARIANTS = ("consistent-checkpoints", "gateways-all-or-none", "delivered-to-target", "applied-once",
              "nothing-lost", "liveness")
PROTOCOLS = ("flink-2.3", "legacy", "streamproof")
RPC_MODES = ("ack", "pending", "lost")


# =============================================================================== the protocol


@dataclass
class Event:
    """One event the coordinator sent: to ``subtask``, bound to the attempt current then."""

    number: int
    subtask: int
    attempt: int
    value: int
    done: bool = False      # its send future completed (the holder knows the outcome)
    failed: bool = False


@dataclass
class Gateway:
    """One attempt's gateway (flink-2.3, streamproof)."""

    subtask: int
    attempt: int
    marked: set = field(default_factory=set)
    blocked: dict = field(default_factory=dict)   # checkpoint -> [event number], in send order
    latest: int = NO_CHECKPOINT


@dataclass
class Valve:
    """The one valve of the legacy protocol."""

    current: int = NO_CHECKPOINT
    last: int = NO_CHECKPOINT
    shut: bool = False
    blocked: dict = field(default_factory=dict)   # subtask -> [event number], subtasks in first-block order


@dataclass
class HolderCheckpoint:
    """The holder's side of checkpoint c: the coordinator's future, the holder's future."""

    checkpoint: int
    started: bool = True                          # the coordinator was asked (marking did not throw)
    coordinator_done: bool = False
    result: str = "pending"                       # pending | done | failed
    waiting: list | None = None                   # events the result waits for


class SpecError(Exception):
    """A call the protocol refuses (Flink throws); ``flink`` names the exception."""

    def __init__(self, message: str, flink: str = "IllegalStateException", fatal: bool = False):
        super().__init__(message)
        self.flink, self.fatal = flink, fatal


class ValveSpec:
    """The protocol as actions on a small state. ``apply(op, fields)`` returns the observations."""

    def __init__(self, protocol: str, parallelism: int):
        if protocol not in PROTOCOLS:
            raise ValueError(f"unknown protocol {protocol!r}")
        self.protocol = protocol
        self.parallelism = parallelism
        self.attempt = [0] * parallelism            # current attempt per subtask
        self.running = [True] * parallelism
        self.rpc_mode = ["ack"] * parallelism
        self.gateways = [Gateway(i, 0) for i in range(parallelism)]
        self.retired: list[Gateway] = []            # replaced gateways (their events stay there)
        self.valve = Valve()
        self.events: list[Event] = []
        self.unconfirmed: list[int] = []            # event numbers tracked while incomplete
        self.in_flight: list[int] = []              # RPCs pending
        self.checkpoints: dict[int, HolderCheckpoint] = {}
        self.queue: deque = deque()                 # the JobManager's main thread
        self.draining = False
        self.out: list[dict] = []

    # -- the main thread -----------------------------------------------------------------------
    def run(self, task: Callable[[], None]) -> None:
        """Submit a task to the main thread (FIFO); a thrown SpecError is an ``error``."""
        self.queue.append(task)
        if self.draining:
            return
        self.draining = True
        try:
            while self.queue:
                try:
                    self.queue.popleft()()
                except SpecError as e:
                    self.error(e)
        finally:
            self.draining = False

    def error(self, e: SpecError) -> None:
        event = {"event": "error", "text": e.flink, "message": str(e)}
        if e.fatal:
            event["fatal"] = True
        self.out.append(event)

    def apply(self, op: str, fields: dict) -> list[dict]:
        self.out = []
        getattr(self, op)(**fields)
        return self.out

    # -- RPCs ----------------------------------------------------------------------------------
    def issue(self, number: int) -> None:
        """The RPC carrying event ``number`` leaves now (released or sent through)."""
        e = self.events[number]
        seen = {"subtask": e.subtask, "attempt": e.attempt, "value": e.value}
        if not (self.running[e.subtask] and self.attempt[e.subtask] == e.attempt):
            self.out.append({"event": "deliver_refused", **seen})
            self.settle(number, ok=False)
        elif self.rpc_mode[e.subtask] == "lost":
            self.out.append({"event": "lost", **seen})
            self.settle(number, ok=False)
        else:
            self.out.append({"event": "deliver", **seen})
            if self.rpc_mode[e.subtask] == "pending":
                self.in_flight.append(number)
            else:
                self.settle(number, ok=True)

    def settle(self, number: int, ok: bool) -> None:
        """The RPC's outcome reaches the holder, on the main thread: a failure to a running attempt
        fails it over (FLINK-21996); the event's future completes."""
        def task():
            e = self.events[number]
            if not ok and self.running[e.subtask] and self.attempt[e.subtask] == e.attempt:
                self.out.append({"event": "task_failover", "subtask": e.subtask, "attempt": e.attempt})
            self.finish(number, ok)
        self.run(task)

    def finish(self, number: int, ok: bool) -> None:
        e = self.events[number]
        if e.done:
            return
        e.done, e.failed = True, not ok
        if number in self.unconfirmed:
            self.unconfirmed.remove(number)
        for ck in self.checkpoints.values():
            if ck.result == "pending" and ck.waiting is not None and all(self.events[n].done for n in ck.waiting):
                self.set_result(ck, "failed" if any(self.events[n].failed for n in ck.waiting) else "done")

    def set_result(self, ck: HolderCheckpoint, result: str) -> None:
        ck.result = result
        if result == "done" and self.protocol == "legacy":  # the JM injects barriers, then opens
            self.run(lambda: self.legacy_open(ck.checkpoint))

    # -- steps: coordinator -> subtask ---------------------------------------------------------
    def send(self, subtask: int, event: int) -> None:
        number = len(self.events)
        self.events.append(Event(number, subtask, self.attempt[subtask], event))

        def task():
            if self.protocol == "legacy":
                if self.valve.shut:
                    self.valve.blocked.setdefault(subtask, []).append(number)
                else:
                    self.issue(number)
            else:
                gateway = self.gateways[subtask]
                if gateway.blocked:
                    gateway.blocked[max(gateway.blocked)].append(number)
                else:
                    self.issue(number)
            if not self.events[number].done:
                self.unconfirmed.append(number)
        self.run(task)

    def from_subtask(self, subtask: int, event: int) -> None:
        if not self.running[subtask]:
            self.error(SpecError(f"subtask {subtask} is not running", "TaskNotRunningException"))
            return
        attempt = self.attempt[subtask]
        self.run(lambda: self.out.append(
            {"event": "coordinator_received", "subtask": subtask, "attempt": attempt, "value": str(event)}))

    # -- steps: checkpoints --------------------------------------------------------------------
    def trigger(self, checkpoint: int) -> None:
        self.checkpoints[checkpoint] = HolderCheckpoint(checkpoint)

        def task():
            if self.protocol == "legacy":
                v = self.valve
                if v.current != NO_CHECKPOINT and v.current != checkpoint or checkpoint <= v.last:
                    self.checkpoints[checkpoint].result = "failed"
                    self.checkpoints[checkpoint].started = False
                    self.out.append({"event": "global_failure"})
                    return
                v.current = v.last = checkpoint
            else:
                for g in self.gateways:
                    if checkpoint > g.latest:
                        g.marked.add(checkpoint)
                        g.latest = checkpoint
        self.run(task)

    def complete(self, checkpoint: int) -> None:
        ck = self.checkpoints.get(checkpoint)
        if ck is None or not ck.started:
            self.error(SpecError(f"no coordinator checkpoint {checkpoint} was triggered"))
            return
        if ck.coordinator_done:
            return  # a future completes once
        ck.coordinator_done = True
        self.run(lambda: self.close_and_wait(ck))

    def close_and_wait(self, ck: HolderCheckpoint) -> None:
        if ck.result != "pending":
            return
        c = ck.checkpoint
        if self.protocol == "legacy":
            closed = c == self.valve.current
            if closed:
                self.valve.shut = True
        else:
            can = [c in g.marked for g in self.gateways]
            if self.protocol == "streamproof" and not all(can):
                can = [False] * len(can)   # all or none, decided before any closes
            for g, ok in zip(self.gateways, can):
                if ok:
                    g.blocked.setdefault(c, [])
            if any(can) and not all(can):
                raise SpecError("Some subtask gateway can be closed while others cannot.", fatal=True)
            closed = any(can)
        if not closed:
            ck.result = "failed"
            return
        ck.waiting = list(self.unconfirmed)
        if self.protocol != "streamproof":  # Flink hands them to this checkpoint and forgets them
            self.unconfirmed = []
        if not ck.waiting:
            self.set_result(ck, "done")
        elif all(self.events[n].done for n in ck.waiting):  # cannot happen: tracked means incomplete
            self.set_result(ck, "done")

    def result(self, checkpoint: int) -> None:
        ck = self.checkpoints.get(checkpoint)
        if ck is None:
            self.error(SpecError(f"checkpoint {checkpoint} was never triggered"))
            return
        self.out.append({"event": "result", "checkpoint": checkpoint, "state": ck.result})

    def ack(self, subtask: int, checkpoint: int) -> None:
        if not self.running[subtask]:
            self.error(SpecError(f"subtask {subtask} is not running", "TaskNotRunningException"))
            return
        if self.protocol != "legacy":
            self.run(lambda: self.open_for(self.gateways[subtask], checkpoint))

    def notify_complete(self, checkpoint: int) -> None:
        self.notify(checkpoint)

    def notify_aborted(self, checkpoint: int) -> None:
        self.notify(checkpoint)

    def notify(self, checkpoint: int) -> None:
        if self.protocol == "legacy":
            return  # the legacy holder only tells the coordinator

        def task():
            for g in list(self.gateways):   # flink-2.3: a throwing gateway stops the loop
                self.open_for(g, checkpoint)
        self.run(task)

    def abort_triggering(self) -> None:
        def task():
            if self.protocol == "legacy":
                self.legacy_open(None)
                return
            for g in list(self.gateways):
                if g.marked:
                    self.open_for(g, max(g.marked))
        self.run(task)

    # -- gateways ------------------------------------------------------------------------------
    def open_for(self, g: Gateway, c: int) -> None:
        """Open gateway ``g`` for checkpoint c and unmark it."""
        if g.latest < c:
            if self.protocol == "streamproof":
                return
            raise SpecError(f"Trying to open gateway for unseen checkpoint: latest known checkpoint = "
                            f"{g.latest}, incoming checkpoint = {c}")
        if c not in g.marked:
            return
        if c in g.blocked:
            if min(g.blocked) == c:
                for number in g.blocked[c]:
                    self.issue(number)
            else:  # released after, and with, the earlier checkpoint's events
                g.blocked[max(k for k in g.blocked if k < c)].extend(g.blocked[c])
            del g.blocked[c]
        g.marked.discard(c)

    def open_all(self, g: Gateway) -> None:
        for c in sorted(g.blocked):
            for number in g.blocked[c]:
                self.issue(number)
        g.blocked.clear()
        g.marked.clear()

    def discard(self, g: Gateway) -> None:
        """streamproof: fail the buffered events (their target attempt is gone)."""
        numbers = [n for c in sorted(g.blocked) for n in g.blocked[c]]
        g.blocked.clear()
        g.marked.clear()
        for number in numbers:
            self.settle(number, ok=False)

    def legacy_open(self, expected: int | None) -> None:
        v = self.valve
        if expected is not None and expected != v.current:
            raise SpecError(f"Valve closed for different checkpoint: closed for = {v.current}, expected = {expected}")
        v.current = NO_CHECKPOINT
        if not v.shut:
            return
        numbers = [n for subtask in v.blocked for n in v.blocked[subtask]]
        v.blocked.clear()
        v.shut = False
        for number in numbers:
            self.issue(number)

    def fresh_gateway(self, subtask: int) -> None:
        self.retired.append(self.gateways[subtask])
        self.gateways[subtask] = Gateway(subtask, self.attempt[subtask])

    # -- steps: failover -----------------------------------------------------------------------
    def reset(self, checkpoint: int) -> None:
        for i in range(self.parallelism):
            if not self.running[i]:
                self.attempt[i] += 1
                self.running[i] = True

        def task():
            if self.protocol == "legacy":
                self.legacy_open(None)
            for g in list(self.gateways):
                if self.protocol == "streamproof":
                    self.discard(g)
                elif self.protocol == "flink-2.3":
                    self.open_all(g)
            for i in range(self.parallelism):
                self.fresh_gateway(i)
            self.out.append({"event": "coordinator_reset", "checkpoint": checkpoint})
        self.run(task)

    def fail_subtask(self, subtask: int) -> None:
        self.running[subtask] = False

    def restart_subtask(self, subtask: int, checkpoint: int) -> None:
        self.running[subtask] = False
        self.attempt[subtask] += 1
        self.running[subtask] = True

        def task():
            if self.protocol == "streamproof":
                for g in self.gateways:
                    if g.subtask != subtask:
                        self.open_all(g)
                self.discard(self.gateways[subtask])
            self.fresh_gateway(subtask)
            self.out.append({"event": "coordinator_subtask_reset", "subtask": subtask, "checkpoint": checkpoint})
        self.run(task)

    # -- steps: RPCs ---------------------------------------------------------------------------
    def rpc(self, subtask: int, mode: str) -> None:
        self.rpc_mode[subtask] = mode

    def rpc_ack_all(self) -> None:
        pending, self.in_flight = self.in_flight, []
        for number in pending:
            self.settle(number, ok=True)

    def rpc_fail_all(self) -> None:
        pending, self.in_flight = self.in_flight, []
        for number in pending:
            self.settle(number, ok=False)

    def new_holder(self, parallelism: int) -> None:
        self.__init__(self.protocol, parallelism)

    # -- views ---------------------------------------------------------------------------------
    def buffered(self) -> int:
        gateways = self.gateways + self.retired
        return sum(len(v) for g in gateways for v in g.blocked.values()) + \
            sum(len(v) for v in self.valve.blocked.values())

    def result_state(self, checkpoint: int) -> str | None:
        ck = self.checkpoints.get(checkpoint)
        return None if ck is None else ck.result


# ============================================================== what must hold: the epochs


class Broken(Exception):
    """An invariant does not hold."""

    def __init__(self, invariant: str, message: str):
        super().__init__(f"{invariant}: {message}")
        self.invariant, self.detail = invariant, message


@dataclass
class Epochs:
    """Coordinator and subtask states across checkpoints and failovers, fed with steps and the
    implementation's observations. ``result_of(c)`` reads the holder's future for c."""

    parallelism: int
    coordinator: list = field(default_factory=list)       # per subtask: values sent (its state)
    received: list = field(default_factory=list)          # per subtask: values it received from the subtask
    applied: list = field(default_factory=list)           # per subtask: values applied by the current attempt
    sent_up: list = field(default_factory=list)           # per subtask: values it sent to the coordinator
    in_flight: list = field(default_factory=list)         # per subtask: values delivered on pending RPCs
    outstanding: list = field(default_factory=list)       # per subtask: [(target attempt, value)] not yet arrived
    attempt: list = field(default_factory=list)
    running: list = field(default_factory=list)
    failing_over: list = field(default_factory=list)      # a failover was requested for the current attempt
    rpc_mode: list = field(default_factory=list)
    coordinator_checkpoints: dict = field(default_factory=dict)  # c -> (sent per subtask, received per subtask)
    snapshots: dict = field(default_factory=dict)         # c -> subtask -> (applied, sent_up)
    triggered: list = field(default_factory=list)         # checkpoints triggered, in order
    open_checkpoints: set = field(default_factory=set)    # triggered, neither completed nor aborted
    abort_due: set = field(default_factory=set)           # aborted by a failover, the holder not told yet
    completed: list = field(default_factory=list)
    checked: frozenset = frozenset(INVARIANTS)            # the invariants that raise when broken

    def __post_init__(self) -> None:
        n = self.parallelism
        self.coordinator = [[] for _ in range(n)]
        self.received = [[] for _ in range(n)]
        self.applied = [[] for _ in range(n)]
        self.sent_up = [[] for _ in range(n)]
        self.in_flight = [[] for _ in range(n)]
        self.outstanding = [[] for _ in range(n)]
        self.attempt = [0] * n
        self.running = [True] * n
        self.failing_over = [False] * n
        self.rpc_mode = ["ack"] * n

    # -- feeding -------------------------------------------------------------------------------
    def step(self, op: str, fields: dict, observed: list[dict], result_of: Callable[[int], str | None],
             closed_for: Callable[[int], list] | None = None, checked: Iterable[str] | None = None) -> list[str]:
        """Advance with one step and its observations; returns notes on what happened and raises
        :class:`Broken` at the first broken invariant among ``checked`` (default: all)."""
        if checked is not None:
            self.checked = frozenset(checked)
        notes: list[str] = []
        before = getattr(self, "before_" + op, None)
        if before is not None:
            before(**fields)
        for event in observed:
            self.observe(event, notes)
        after = getattr(self, "after_" + op, None)
        if after is not None:
            after(**fields)
        if op == "complete" and closed_for is not None:
            closed = closed_for(fields["checkpoint"])
            if any(closed) and not all(closed):
                self.broken("gateways-all-or-none",
                             f"checkpoint {fields['checkpoint']}: gateways of subtasks "
                             f"{[i for i, c in enumerate(closed) if c]} closed, of "
                             f"{[i for i, c in enumerate(closed) if not c]} not")
        self.complete_checkpoints(result_of, notes)
        return notes

    def broken(self, invariant: str, message: str) -> None:
        if invariant in self.checked:
            raise Broken(invariant, message)

    def before_send(self, subtask: int, event: int) -> None:
        self.coordinator[subtask].append(event)
        self.outstanding[subtask].append((self.attempt[subtask], event))

    def before_from_subtask(self, subtask: int, event: int) -> None:
        if self.running[subtask]:
            self.sent_up[subtask].append(event)
            self.received[subtask].append(event)

    def before_trigger(self, checkpoint: int) -> None:
        self.triggered.append(checkpoint)
        self.open_checkpoints.add(checkpoint)

    def before_complete(self, checkpoint: int) -> None:
        if checkpoint not in self.coordinator_checkpoints and checkpoint in self.triggered:
            self.coordinator_checkpoints[checkpoint] = (
                [list(v) for v in self.coordinator], [list(v) for v in self.received])

    def before_ack(self, subtask: int, checkpoint: int) -> None:
        if self.running[subtask]:
            taken = self.snapshots.setdefault(checkpoint, {})
            taken[subtask] = (list(self.applied[subtask]), list(self.sent_up[subtask]))

    def before_notify_aborted(self, checkpoint: int) -> None:
        self.open_checkpoints.discard(checkpoint)
        self.abort_due.discard(checkpoint)

    def before_rpc(self, subtask: int, mode: str) -> None:
        self.rpc_mode[subtask] = mode

    def before_rpc_ack_all(self) -> None:
        for i in range(self.parallelism):
            for attempt, value in self.in_flight[i]:
                if attempt == self.attempt[i] and self.running[i]:
                    self.apply_value(i, value)
            self.in_flight[i] = []

    def before_rpc_fail_all(self) -> None:
        self.in_flight = [[] for _ in range(self.parallelism)]

    def before_fail_subtask(self, subtask: int) -> None:
        self.running[subtask] = False

    def before_restart_subtask(self, subtask: int, checkpoint: int) -> None:
        self.attempt[subtask] += 1
        self.running[subtask] = True
        self.failing_over[subtask] = False
        self.applied[subtask], self.sent_up[subtask] = self.restored(subtask, checkpoint)
        self.in_flight[subtask] = []
        sent, received = self.coordinator_checkpoints.get(checkpoint, (None, None)) \
            if checkpoint in self.completed else (None, None)
        self.coordinator[subtask] = list(sent[subtask]) if sent else []
        self.received[subtask] = list(received[subtask]) if received else []
        self.abort_pending()

    def abort_pending(self) -> None:
        """SchedulerBase.restoreState aborts every pending checkpoint; the holder hears of it
        later, through the main thread's queue."""
        self.abort_due |= self.open_checkpoints
        self.open_checkpoints.clear()

    def before_reset(self, checkpoint: int) -> None:
        known = checkpoint in self.completed
        sent, received = self.coordinator_checkpoints.get(checkpoint) if known else (None, None)
        for i in range(self.parallelism):
            if not self.running[i]:
                self.attempt[i] += 1
                self.running[i] = True
            self.failing_over[i] = False
            self.applied[i], self.sent_up[i] = self.restored(i, checkpoint)
            self.in_flight[i] = []
            self.coordinator[i] = list(sent[i]) if sent else []
            self.received[i] = list(received[i]) if received else []
        self.abort_pending()

    def restored(self, subtask: int, checkpoint: int) -> tuple[list, list]:
        if checkpoint in self.completed:
            applied, sent_up = self.snapshots[checkpoint][subtask]
            return list(applied), list(sent_up)
        return [], []

    # -- observations --------------------------------------------------------------------------
    def observe(self, event: dict, notes: list[str]) -> None:
        kind = event["event"]
        if kind in ("deliver", "deliver_refused", "lost"):
            i, a, v = event["subtask"], event["attempt"], event["value"]
            self.arrived(i, a, v, delivered=kind == "deliver")
            if kind == "deliver" and self.running[i] and a == self.attempt[i]:
                if self.rpc_mode[i] == "pending":
                    self.in_flight[i].append((a, v))
                else:
                    self.apply_value(i, v)
        elif kind == "task_failover":
            if event["attempt"] == self.attempt[event["subtask"]]:
                self.failing_over[event["subtask"]] = True
        elif kind == "error":
            notes.append("fatal error" if event.get("fatal") else "protocol error")

    def arrived(self, subtask: int, attempt: int, value: int, delivered: bool) -> None:
        waiting = self.outstanding[subtask]
        for k, (target, v) in enumerate(waiting):
            if v == value and target == attempt:
                del waiting[k]
                return
        for k, (target, v) in enumerate(waiting):
            if v == value:
                del waiting[k]
                if delivered:
                    self.broken("delivered-to-target",
                                f"event {value} sent to subtask {subtask} attempt {target} reached attempt {attempt}")
                return
        if delivered:
            self.broken("delivered-to-target", f"event {value} reached subtask {subtask} attempt {attempt}, "
                         "but no such event was sent to it")

    def apply_value(self, subtask: int, value: int) -> None:
        if value in self.applied[subtask]:
            self.broken("applied-once", f"event {value} applied twice to subtask {subtask} "
                         f"(its state: {self.applied[subtask] + [value]})")
        self.applied[subtask].append(value)

    # -- checkpoints ---------------------------------------------------------------------------
    def complete_checkpoints(self, result_of: Callable[[int], str | None], notes: list[str]) -> None:
        for c in sorted(self.open_checkpoints):
            taken = self.snapshots.get(c, {})
            if result_of(c) == "done" and c in self.coordinator_checkpoints and \
                    all(i in taken for i in range(self.parallelism)):
                self.open_checkpoints.discard(c)
                self.completed.append(c)
                notes.append("checkpoint completed")
                self.check_consistent(c)

    def check_consistent(self, c: int) -> None:
        sent, _ = self.coordinator_checkpoints[c]
        for i in range(self.parallelism):
            in_snapshot = self.snapshots[c][i][0]
            if sent[i] != in_snapshot:
                self.broken("consistent-checkpoints",
                             f"checkpoint {c}, subtask {i}: the coordinator had sent {sent[i]} when it "
                             f"completed its checkpoint, the subtask's snapshot holds {in_snapshot}")

    def subtask_events_consistent(self) -> str | None:
        """FLINK-28639 (a known limitation): None if every completed checkpoint agrees on the
        events subtasks sent to the coordinator, else where it does not."""
        for c in self.completed:
            _, received = self.coordinator_checkpoints[c]
            for i in range(self.parallelism):
                sent_up = self.snapshots[c][i][1]
                if received[i] != sent_up:
                    return (f"checkpoint {c}, subtask {i}: the subtask's snapshot records sending "
                            f"{sent_up}, the coordinator's checkpoint records receiving {received[i]}")
        return None

    # -- the end -------------------------------------------------------------------------------
    def latest_completed(self) -> int:
        return self.completed[-1] if self.completed else -1

    def check_nothing_lost(self) -> None:
        """After the drain phase: every subtask holds exactly what the coordinator sent it."""
        for i in range(self.parallelism):
            applied = [v for v in self.applied[i] if v != PROBE]  # the probes are liveness's business
            sent = [v for v in self.coordinator[i] if v != PROBE]
            if applied != sent:
                missing = [v for v in sent if v not in applied]
                extra = [v for v in applied if v not in sent]
                what = "; ".join(part for part in (
                    f"never applied: {missing}" if missing else "",
                    f"applied, yet the coordinator's state says it never sent them, so it sends them again: "
                    f"{extra} (duplicates)" if extra else "") if part) or "in another order"
                raise Broken("nothing-lost", f"subtask {i} holds {applied} but the coordinator sent it {sent} ({what})")


def drain_plan(epochs: Epochs, spec_checkpoints: dict, next_checkpoint: int) -> list[dict]:
    """The steps of the drain phase, from where a scenario stopped: every RPC succeeds from now
    on, failed (or failing-over) attempts are restarted from the latest completed checkpoint,
    the open checkpoint is aborted as the JobManager would (a late coordinator future completes,
    triggering is aborted), then one more checkpoint runs. ``spec_checkpoints`` maps checkpoint
    to (coordinator future completed?, holder result) as seen so far. Returns step dicts; the
    acknowledgements and ``notify_complete`` of the last checkpoint are added by the caller once
    its holder future is done (a JobManager triggers the tasks only then), and so are the probes
    (:data:`PROBE`, one per subtask) sent after it."""
    steps: list[dict] = []
    for i in range(epochs.parallelism):
        steps.append({"op": "rpc", "subtask": i, "mode": "ack"})
    steps.append({"op": "rpc_ack_all"})
    latest = epochs.latest_completed()
    open_checkpoints = sorted(epochs.open_checkpoints | epochs.abort_due)
    for i in range(epochs.parallelism):
        if not epochs.running[i] or epochs.failing_over[i]:
            if epochs.running[i]:
                steps.append({"op": "fail_subtask", "subtask": i})
            steps.append({"op": "restart_subtask", "subtask": i, "checkpoint": latest})
    for c in sorted(set(epochs.triggered)):
        coordinator_done, result = spec_checkpoints.get(c, (True, "done"))
        if not coordinator_done:
            steps.append({"op": "complete", "checkpoint": c})   # the late future
    for c in open_checkpoints:
        steps.append({"op": "notify_aborted", "checkpoint": c})
        _, result = spec_checkpoints.get(c, (True, "done"))
        if result != "done":
            steps.append({"op": "abort_triggering"})
    steps.append({"op": "trigger", "checkpoint": next_checkpoint})
    steps.append({"op": "complete", "checkpoint": next_checkpoint})
    return steps

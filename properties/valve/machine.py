"""Hypothesis state machines: the coordinator event valve under what a real JobManager can do.

Every rule emits ``valve`` scenario steps, applied by :class:`~streamproof.properties.valve.check.ValveCheck`
(which checks the property's invariants after each step); the drain phase and the end-of-run
invariants run at teardown. The steps and ``params.protocol`` are recorded, so a failure is the
minimal scenario that ``streamproof replay`` reproduces.

The JobManager the rules play (``SchedulerBase`` and ``CheckpointCoordinator``):
  * checkpoint ids increase; one checkpoint at a time; the coordinator completes its future
    whenever it likes, also after the checkpoint was aborted (a late future);
  * a subtask acknowledges checkpoint c only once the holder's future for c is done (the tasks
    are triggered only then), and c completes (``notify_complete``) once every current attempt
    acknowledged it;
  * a checkpoint may be aborted at any time (``notify_aborted``, with ``abort_triggering`` when
    its trigger phase was not over, in either order);
  * a failed RPC to a running attempt fails it over at once (``task_failover``, then
    ``fail_subtask``);
  * a region failover restarts a failed subtask from the latest completed checkpoint and then
    aborts the pending checkpoint: ``SchedulerBase.restoreState`` aborts pending checkpoints
    before ``subtask_reset``, but the holder hears of it through the main thread's queue, so
    ``notify_aborted`` comes after ``restart_subtask`` (a racing coordinator future may complete
    in between);
  * a global failover fails every attempt, resets to the latest completed checkpoint, then aborts
    the pending checkpoint the same way;
  * the coordinator sends each subtask 0, 1, 2, ... and after a rollback sends the same numbers
    again (what ``subtask_reset`` / ``reset_to_checkpoint`` oblige it to do); RPC modes change only
    when nothing is in flight to that subtask (RPCs are FIFO).
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from streamproof.impl.coordination import PROTOCOLS
from streamproof.properties import scenario as sc
from streamproof.properties.valve import steps as vs
from streamproof.properties.reach import note
from streamproof.properties.valve.check import ValveCheck

RARELY = st.integers(0, 3)  # faults act when it is 0: about one draw in four, and shrinking keeps them

REACHABILITY = (
    "event buffered while a gateway was closed",
    "buffered event released by an acknowledgement",
    "checkpoint waited for event acknowledgements",
    "event sent while a checkpoint waited for acknowledgements",
    "checkpoint completed",
    "checkpoint failed: an event sent before the close was lost",
    "region failover while events were buffered",
    "region failover during a checkpoint",
    "late coordinator future",
    "global failover restored a completed checkpoint",
    "lost RPC failed a running attempt over",
    "event refused by a failed attempt",
    "subtask event reached the coordinator",
    "drain checkpoint completed",
)


class ValveMachine(RuleBasedStateMachine):
    """Explores :attr:`PROPERTY` under :attr:`PROTOCOL` (None: each example draws one)."""

    PROPERTY: str | None = "valve.consistent-checkpoints"
    PROTOCOL: str | None = "streamproof"

    def __init__(self) -> None:
        super().__init__()
        self.protocol = self.PROTOCOL or "streamproof"  # the property name None: every invariant
        self.run: ValveCheck | None = None
        self.steps: list = []
        self.parallelism = 1
        self.last_checkpoint = 0
        self.pending: int | None = None      # the checkpoint the JobManager is taking
        self.late: set[int] = set()          # aborted checkpoints whose coordinator future is still open
        self.acked: set[int] = set()
        self.up_values = 0

    # -- recording ---------------------------------------------------------------------------
    def do(self, step) -> list[dict]:
        self.steps.append(step)
        try:
            observed = self.run.apply_step(step)
        except Exception as e:
            self._attach(e)
            raise
        self._notice(step, observed)
        for event in observed:  # the JobManager fails an attempt over as soon as asked
            if event["event"] == "task_failover" and self.epochs.running[event["subtask"]] and \
                    event["attempt"] == self.epochs.attempt[event["subtask"]]:
                note("lost RPC failed a running attempt over")
                self.do(vs.FailSubtask(event["subtask"]))
        return observed

    def _attach(self, e: BaseException) -> None:
        e.streamproof_steps = list(self.steps)
        e.streamproof_scenario = self.scenario()

    def scenario(self) -> sc.Scenario:
        return sc.Scenario(family="valve", steps=tuple(self.steps), params={"protocol": self.protocol},
                           property=self.PROPERTY)

    @property
    def epochs(self):
        return self.run.epochs

    @property
    def harness(self):
        return self.run.impl.harness

    def _notice(self, step, observed: list[dict]) -> None:
        kinds = {e["event"] for e in observed}
        if step.op == "send" and not observed:
            note("event buffered while a gateway was closed")
        if step.op == "ack" and "deliver" in kinds:
            note("buffered event released by an acknowledgement")
        if "deliver_refused" in kinds:
            note("event refused by a failed attempt")
        if "coordinator_received" in kinds:
            note("subtask event reached the coordinator")
        if self.pending is not None and self.harness.result_state(self.pending) == "failed" and \
                step.op in ("rpc_fail_all", "send", "rpc_ack_all"):
            note("checkpoint failed: an event sent before the close was lost")

    # -- the JobManager's view -----------------------------------------------------------------
    def coordinator_done(self, checkpoint: int) -> bool:
        future = self.harness.coordinator.checkpoints.get(checkpoint)
        return future is None or future.is_done()

    def result(self, checkpoint: int) -> str | None:
        return self.harness.result_state(checkpoint)

    def latest(self) -> int:
        return self.epochs.latest_completed()

    def in_flight(self, subtask: int) -> bool:
        return bool(self.epochs.in_flight[subtask])

    def abort_pending(self, race: bool = False, triggering_first: bool = False) -> None:
        """The JobManager aborts the pending checkpoint."""
        c = self.pending
        if c is None:
            return
        self.pending = None
        if race and not self.coordinator_done(c):
            note("late coordinator future")
            self.do(vs.Complete(c))
        trigger_over = self.result(c) == "done"
        if triggering_first and not trigger_over:
            self.do(vs.AbortTriggering())
        self.do(vs.NotifyAborted(c))
        if not triggering_first and not trigger_over:
            self.do(vs.AbortTriggering())
        if not self.coordinator_done(c):
            self.late.add(c)

    # -- rules -------------------------------------------------------------------------------
    @initialize(parallelism=st.integers(1, 3), protocol=st.sampled_from(PROTOCOLS))
    def new_holder(self, parallelism, protocol):
        if self.PROTOCOL is not None:
            protocol = self.PROTOCOL
        self.protocol = protocol
        self.parallelism = parallelism
        self.run = ValveCheck(self.PROPERTY, protocol)
        self.do(vs.NewHolder(parallelism))

    @rule(data=st.data())
    def send(self, data):
        subtask = data.draw(st.integers(0, self.parallelism - 1), label="subtask")
        self.do(vs.Send(subtask, len(self.epochs.coordinator[subtask])))

    @rule()
    def send_to_all(self):
        for subtask in range(self.parallelism):
            self.do(vs.Send(subtask, len(self.epochs.coordinator[subtask])))

    @rule(data=st.data())
    def from_subtask(self, data):
        subtask = data.draw(st.integers(0, self.parallelism - 1), label="subtask")
        if self.epochs.running[subtask]:
            self.up_values += 1
            self.do(vs.FromSubtask(subtask, self.up_values))

    @precondition(lambda self: self.pending is None)
    @rule(gap=st.integers(1, 2))
    def trigger(self, gap):
        self.last_checkpoint += gap
        self.pending = self.last_checkpoint
        self.acked = set()
        self.do(vs.Trigger(self.pending))

    @precondition(lambda self: self.pending is None)
    @rule(gap=st.integers(1, 2))
    def whole_checkpoint(self, gap):
        """Trigger, coordinator checkpoint, every acknowledgement, completion, when nothing stops it."""
        self.trigger(gap)
        self.coordinator_completes()
        if self._can_ack():
            self.ack_the_rest()
        if self.pending is not None and self.pending in self.epochs.completed:
            self.checkpoint_completes()

    @precondition(lambda self: self.pending is None)
    @rule(gap=st.integers(1, 2))
    def checkpoint_while_events_in_flight(self, gap):
        """FLINK-16986's window, aimed at: events in flight (their RPCs unanswered) when a
        checkpoint is triggered, the coordinator's future completing before they are acknowledged,
        an event sent right then (it belongs after the checkpoint: the valve must hold it until
        the subtasks' snapshots), then the RPCs answered."""
        for subtask in range(self.parallelism):
            if not self.in_flight(subtask):
                self.do(vs.Rpc(subtask, "pending"))
        self.send_to_all()
        self.trigger(gap)
        self.coordinator_completes()
        if self.pending is not None and self.result(self.pending) == "pending":
            note("event sent while a checkpoint waited for acknowledgements")
        self.send_to_all()
        if any(self.in_flight(i) for i in range(self.parallelism)):
            self.do(vs.RpcAckAll())

    @precondition(lambda self: self.pending is not None and not self.coordinator_done(self.pending))
    @rule()
    def coordinator_completes(self):
        self.do(vs.Complete(self.pending))
        if self.result(self.pending) == "pending":
            note("checkpoint waited for event acknowledgements")

    @precondition(lambda self: bool(self.late))
    @rule(data=st.data())
    def late_future(self, data):
        c = data.draw(st.sampled_from(sorted(self.late)), label="late checkpoint")
        self.late.discard(c)
        note("late coordinator future")
        self.do(vs.Complete(c))

    def _can_ack(self) -> list[int]:
        c = self.pending
        if c is None or self.result(c) != "done":
            return []
        return [i for i in range(self.parallelism)
                if i not in self.acked and self.epochs.running[i] and not self.epochs.failing_over[i]]

    @precondition(lambda self: bool(self._can_ack()))
    @rule(data=st.data())
    def ack(self, data):
        subtask = data.draw(st.sampled_from(self._can_ack()), label="subtask")
        self.acked.add(subtask)
        self.do(vs.Ack(subtask, self.pending))

    @precondition(lambda self: self.pending is not None and self.pending in self.epochs.completed)
    @rule()
    def checkpoint_completes(self):
        c, self.pending = self.pending, None
        note("checkpoint completed")
        self.do(vs.NotifyComplete(c))

    @precondition(lambda self: bool(self._can_ack()))
    @rule()
    def ack_the_rest(self):
        for subtask in self._can_ack():
            self.acked.add(subtask)
            self.do(vs.Ack(subtask, self.pending))

    @precondition(lambda self: self.pending is not None)
    @rule(rarely=RARELY, triggering_first=st.booleans())
    def abort(self, rarely, triggering_first):
        if rarely == 0:
            self.abort_pending(triggering_first=triggering_first)

    @rule(data=st.data(), mode=st.sampled_from(["ack", "pending", "pending", "lost"]))
    def rpc_mode(self, data, mode):
        subtask = data.draw(st.integers(0, self.parallelism - 1), label="subtask")
        if not self.in_flight(subtask):
            self.do(vs.Rpc(subtask, mode))

    @precondition(lambda self: any(self.in_flight(i) for i in range(self.parallelism)))
    @rule(outcome=st.sampled_from(["ack", "fail", "later", "later"]))
    def rpcs_complete(self, outcome):
        if outcome != "later":
            self.do(vs.RpcFailAll() if outcome == "fail" else vs.RpcAckAll())

    @rule(data=st.data(), rarely=RARELY)
    def fail_subtask(self, data, rarely):
        running = [i for i in range(self.parallelism) if self.epochs.running[i]]
        if running and rarely == 0:
            self.do(vs.FailSubtask(data.draw(st.sampled_from(running), label="subtask")))

    @precondition(lambda self: not all(self.epochs.running))
    @rule(data=st.data(), race=st.booleans(), triggering_first=st.booleans())
    def region_failover(self, data, race, triggering_first):
        failed = [i for i in range(self.parallelism) if not self.epochs.running[i]]
        subtask = data.draw(st.sampled_from(failed), label="subtask")
        if self.harness.holder.buffered_events():
            note("region failover while events were buffered")
        if self.pending is not None:
            note("region failover during a checkpoint")
        self.do(vs.RestartSubtask(subtask, self.latest()))
        self.abort_pending(race=race, triggering_first=triggering_first)

    @rule(rarely=RARELY, race=st.booleans(), triggering_first=st.booleans())
    def global_failover(self, rarely, race, triggering_first):
        if rarely != 0:
            return
        for i in range(self.parallelism):
            if self.epochs.running[i]:
                self.do(vs.FailSubtask(i))
        if self.latest() >= 0:
            note("global failover restored a completed checkpoint")
        self.do(vs.Reset(self.latest()))
        self.abort_pending(race=race, triggering_first=triggering_first)

    def teardown(self):
        if self.run is None or self.run.epochs is None:
            return
        try:
            self.run.finish()
        except Exception as e:
            self._attach(e)
            raise
        if "drain checkpoint completed" in self.run.notes:
            note("drain checkpoint completed")


def machine_for(property_name: str | None, protocol: str | None) -> type:
    """The machine exploring ``property_name`` (None: the invariants of every valve property at
    once) under ``protocol`` (None: any, drawn per example)."""
    what = (property_name or "valve.all").split(".")[-1]
    name = f"Valve_{what}_{protocol or 'any'}".replace("-", "_").replace(".", "_")
    return type(name, (ValveMachine,), {"PROPERTY": property_name, "PROTOCOL": protocol})


__all__ = ["REACHABILITY", "ValveMachine", "machine_for"]

"""A small job around coordinator holders, for the ports of Flink's coordinator ITCases.

Each coordinated operator has ``parallelism`` recipient subtasks and an
:class:`EventSendingCoordinator` that sends every subtask the numbers 0 .. N-1; a recipient keeps
the numbers it received in its checkpointed state (Flink's ``EventCollectingTask``). Two shapes:

``recipient="source"`` (``CoordinatorEventsExactlyOnceITCase``)
    the recipients are source tasks: the JobManager injects their checkpoint barrier by RPC, on the
    same FIFO channel as the coordinator's events;
``recipient="operator"`` (``CoordinatorEventsToStreamOperatorRecipientExactlyOnceITCase``)
    a source task per recipient forwards the barrier through a network channel to the recipient,
    which also gets the coordinator's events by RPC: the barrier and the events race.

The JobManager (one main thread): a checkpoint coordinator (one checkpoint at a time, a timeout),
the holders (any protocol of :mod:`streamproof.impl.coordination`), global failover (``fail_job``: every task
restarts from the latest completed checkpoint, coordinators reset) and region failover (a
recipient and its source restart; the coordinator hears ``subtask_reset``; the pending checkpoint
is aborted and the holder hears it after the reset, through the main thread's queue). Every step
is chosen by a seeded random generator: a run is a pure function of its configuration.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from streamproof.impl.coordination import (
    AcknowledgeCheckpointEvent, CompletableFuture, MainThreadExecutor, OperatorCoordinator, SubtaskAccess,
    TaskNotRunningException, create_holder,
)


@dataclass
class PipelineConfig:
    protocol: str = "flink-2.3"
    recipient: str = "operator"                 # "source" or "operator"
    events: tuple = (200,)                      # per coordinated operator: events per subtask
    parallelism: int = 1
    global_failure_at: tuple = (None,)          # per operator: fail the job once it sent this many events
    subtask_failure_at: int | None = None       # recipient (0, 0) fails once after receiving this many
    recipient_failures: tuple = ()              # (operator, subtask, after): each fails once after receiving that many
    seed: int = 0
    checkpoint_probability: float = 0.05        # per scheduler step while no checkpoint is pending
    checkpoint_timeout: int = 300               # scheduler steps
    max_steps: int = 500_000


@dataclass
class Attempt:
    operator: int
    subtask: int
    number: int
    received: list = field(default_factory=list)   # the checkpointed state
    rpc_inbox: deque = field(default_factory=deque)  # (kind, payload, future)
    net_inbox: deque = field(default_factory=deque)  # barriers from the source (operator recipients)
    source_rpc: deque = field(default_factory=deque)  # the source task's RPC inbox (operator recipients)
    running: bool = True


class EventSendingCoordinator(OperatorCoordinator):
    """Sends each subtask 0 .. N-1; its state is the next number per subtask. Completes its
    checkpoint future when the scheduler lets it (its own thread, in Flink's test)."""

    def __init__(self, operator: int, events: int, parallelism: int, pipeline: ValvePipeline) -> None:
        self.operator, self.events, self.pipeline = operator, events, pipeline
        self.next = [0] * parallelism
        self.gateways: dict[int, Any] = {}
        self.pending: list[tuple[int, CompletableFuture]] = []
        self.states: dict[int, list[int]] = {}     # checkpoint -> next numbers it holds

    def execution_attempt_ready(self, subtask: int, attempt: int, gateway) -> None:
        self.gateways[subtask] = gateway

    def can_send(self) -> list[int]:
        return [i for i in range(len(self.next)) if self.next[i] < self.events and i in self.gateways]

    def send(self, subtask: int) -> None:
        self.gateways[subtask].send_event(self.next[subtask])
        self.next[subtask] += 1

    def sent(self) -> int:
        return sum(self.next)

    def checkpoint_coordinator(self, checkpoint_id: int, result: CompletableFuture) -> None:
        self.pending.append((checkpoint_id, result))

    def complete_checkpoint(self) -> None:
        checkpoint_id, result = self.pending.pop(0)
        self.states[checkpoint_id] = list(self.next)
        result.complete(list(self.next))

    def subtask_reset(self, subtask: int, checkpoint_id: int) -> None:
        self.next[subtask] = self.states[checkpoint_id][subtask] if checkpoint_id in self.states else 0

    def reset_to_checkpoint(self, checkpoint_id: int, checkpoint_data: Any) -> None:
        self.next = list(checkpoint_data) if checkpoint_data is not None else [0] * len(self.next)
        self.pending.clear()


class PipelineSubtaskAccess(SubtaskAccess):
    """One attempt: an event is an RPC put in the attempt's inbox, acknowledged when processed."""

    def __init__(self, pipeline: ValvePipeline, attempt: Attempt) -> None:
        self.pipeline, self.attempt = pipeline, attempt
        self.subtask_index, self.attempt_number = attempt.subtask, attempt.number

    def create_event_send_action(self, event: Any):
        def send() -> CompletableFuture:
            future = CompletableFuture()
            if not self.attempt.running:
                future.complete_exceptionally(TaskNotRunningException("attempt not running"))
            else:
                self.attempt.rpc_inbox.append(("event", event, future))
            return future
        return send

    def has_switched_to_running(self) -> CompletableFuture:
        return CompletableFuture.completed()

    def is_still_running(self) -> bool:
        return self.attempt.running

    def trigger_task_failover(self, cause: BaseException) -> None:
        self.pipeline.failover_requests.append((self.attempt.operator, self.attempt.subtask))


class _Accesses:
    def __init__(self, pipeline: ValvePipeline, operator: int) -> None:
        self.pipeline, self.operator = pipeline, operator

    def get_access_for_subtask(self, subtask: int) -> PipelineSubtaskAccess:
        return PipelineSubtaskAccess(self.pipeline, self.pipeline.attempts[self.operator][subtask])


class ValvePipeline:
    """The job; :meth:`run` returns, per operator and subtask, the numbers its final state holds."""

    def __init__(self, config: PipelineConfig) -> None:
        self.config = config
        self.random = random.Random(config.seed)
        self.log: list[tuple] = []
        # an exception escaping a main-thread task is logged and the JobManager goes on
        self.main_thread = MainThreadExecutor(uncaught=lambda e: self.log.append(("error", type(e).__name__, str(e))))
        self.jm_inbox: deque = deque()               # task -> JobManager messages
        self.failover_requests: list = []
        self.attempts = [[Attempt(op, i, 0) for i in range(config.parallelism)] for op in range(len(config.events))]
        self.coordinators = [EventSendingCoordinator(op, n, config.parallelism, self) for op, n in enumerate(config.events)]
        self.holders = []
        for op, coordinator in enumerate(self.coordinators):
            holder = create_holder(config.protocol, coordinator, _Accesses(self, op), config.parallelism,
                                   self.main_thread, global_failure_handler=lambda e: self.global_failover())
            self.holders.append(holder)
            self.main_thread.execute(holder.lazy_initialize)
        self.global_failures_done = [False] * len(config.events)
        failures = list(config.recipient_failures)
        if config.subtask_failure_at is not None:
            failures.append((0, 0, config.subtask_failure_at))
        self.recipient_failures = failures           # not yet happened
        self.checkpoint_id = 0
        self.pending: dict | None = None
        self.completed: dict | None = None           # the latest completed checkpoint
        self.steps = 0
        self.inconsistent: list[tuple] = []  # (checkpoint, operator, subtask, coordinator's next, subtask's state)

    # -- the JobManager ------------------------------------------------------------------------
    def all_attempts(self) -> list[Attempt]:
        return [a for per_op in self.attempts for a in per_op]

    def trigger_checkpoint(self) -> None:
        self.checkpoint_id += 1
        c = self.checkpoint_id
        self.pending = {"id": c, "futures": [], "acks": set(), "states": {}, "coordinator": {}, "since": self.steps,
                        "injected": False}
        for op, holder in enumerate(self.holders):
            future = CompletableFuture()
            self.pending["futures"].append(future)
            holder.checkpoint_coordinator(c, future)

    def maybe_inject_barriers(self) -> None:
        p = self.pending
        if p is None or p["injected"] or not all(f.is_done() for f in p["futures"]):
            return
        if any(f.is_completed_exceptionally() for f in p["futures"]):
            self.abort_checkpoint(triggering=True)
            return
        p["injected"] = True
        p["coordinator"] = {op: f._value for op, f in enumerate(p["futures"])}
        for attempt in self.all_attempts():
            inbox = attempt.rpc_inbox if self.config.recipient == "source" else attempt.source_rpc
            inbox.append(("barrier", p["id"], None))
        for holder in self.holders:
            holder.after_source_barrier_injection(p["id"])

    def abort_checkpoint(self, triggering: bool) -> None:
        c = self.pending["id"]
        self.pending = None
        for holder in self.holders:
            if triggering:
                holder.abort_current_triggering()
            holder.notify_checkpoint_aborted(c)

    def acknowledge(self, operator: int, subtask: int, number: int, checkpoint: int, state: list) -> None:
        """A task's checkpoint acknowledgement reaches the checkpoint coordinator."""
        p = self.pending
        if p is None or p["id"] != checkpoint or not self.attempts[operator][subtask].number == number:
            return
        p["acks"].add((operator, subtask))
        p["states"][(operator, subtask)] = state
        if len(p["acks"]) == len(self.all_attempts()):
            self.completed = {"id": checkpoint, "coordinator": p["coordinator"], "states": p["states"]}
            for (op, i), state in p["states"].items():
                if state != list(range(p["coordinator"][op][i])):
                    self.inconsistent.append((checkpoint, op, i, p["coordinator"][op][i], state))
            self.pending = None
            self.log.append(("completed", checkpoint))
            for holder in self.holders:
                holder.notify_checkpoint_complete(checkpoint)

    def restore_point(self) -> tuple[int, dict]:
        return (self.completed["id"], self.completed) if self.completed else (-1, None)

    def global_failover(self) -> None:
        self.log.append(("global failover", self.steps))
        c, completed = self.restore_point()
        pending, triggering = self._abandon_pending()
        for op, per_op in enumerate(self.attempts):
            for i, old in enumerate(per_op):
                old.running = False
                per_op[i] = Attempt(op, i, old.number + 1, list(completed["states"][(op, i)]) if completed else [])
        for op, holder in enumerate(self.holders):
            data = completed["coordinator"][op] if completed else None
            self.main_thread.execute(lambda holder=holder, data=data: holder.reset_to_checkpoint(c, data))
        self._tell_aborted(pending, triggering)

    def region_failover(self, operator: int, subtask: int) -> None:
        self.log.append(("region failover", operator, subtask, self.steps))
        c, completed = self.restore_point()
        pending, triggering = self._abandon_pending()  # SchedulerBase.restoreState aborts them first
        old = self.attempts[operator][subtask]
        old.running = False
        self.attempts[operator][subtask] = Attempt(
            operator, subtask, old.number + 1, list(completed["states"][(operator, subtask)]) if completed else [])
        self.main_thread.execute(lambda: self.holders[operator].subtask_reset(subtask, c))
        self._tell_aborted(pending, triggering)  # after the reset: it went through the main thread's queue

    def _abandon_pending(self) -> tuple[int | None, bool]:
        if self.pending is None:
            return None, False
        pending, triggering = self.pending["id"], not self.pending["injected"]
        self.pending = None
        return pending, triggering

    def _tell_aborted(self, pending: int | None, triggering: bool) -> None:
        if pending is None:
            return
        for holder in self.holders:
            holder.notify_checkpoint_aborted(pending)
            if triggering:  # the trigger phase fails too (onTriggerFailure)
                holder.abort_current_triggering()

    # -- tasks ---------------------------------------------------------------------------------
    def process_rpc(self, attempt: Attempt) -> None:
        kind, payload, future = attempt.rpc_inbox.popleft()
        if kind == "event":
            attempt.received.append(payload)
            future.complete("ack")
            for failure in self.recipient_failures:
                op, subtask, after = failure
                if (attempt.operator, attempt.subtask) == (op, subtask) and len(attempt.received) >= after:
                    self.recipient_failures.remove(failure)
                    self.region_failover(op, subtask)
                    break
        else:
            self.snapshot(attempt, payload)

    def process_source_rpc(self, attempt: Attempt) -> None:
        kind, payload, _ = attempt.source_rpc.popleft()
        attempt.net_inbox.append(payload)  # the source forwards the barrier downstream

    def process_network(self, attempt: Attempt) -> None:
        self.snapshot(attempt, attempt.net_inbox.popleft())

    def snapshot(self, attempt: Attempt, checkpoint: int) -> None:
        state = list(attempt.received)
        op, i, number = attempt.operator, attempt.subtask, attempt.number
        self.jm_inbox.append(lambda: self.holders[op].handle_event_from_operator(i, number, AcknowledgeCheckpointEvent(checkpoint))
                             if self.attempts[op][i].number == number else None)
        self.jm_inbox.append(lambda: self.acknowledge(op, i, number, checkpoint, state))

    # -- the scheduler -------------------------------------------------------------------------
    def enabled(self) -> list:
        actions: list = []
        for op, coordinator in enumerate(self.coordinators):
            for subtask in coordinator.can_send():
                actions.append(("send", op, subtask))
            if coordinator.pending:
                actions.append(("complete", op))
        for attempt in self.all_attempts():
            if attempt.rpc_inbox:
                actions.append(("rpc", attempt))
            if attempt.source_rpc:
                actions.append(("source", attempt))
            if attempt.net_inbox:
                actions.append(("network", attempt))
        if self.jm_inbox:
            actions.append(("jm",))
        return actions

    def step(self, action: tuple) -> None:
        kind = action[0]
        if kind == "send":
            _, op, subtask = action
            self.main_thread.execute(lambda: self.coordinators[op].send(subtask))
            sent = self.coordinators[op].sent()
            fail_at = self.config.global_failure_at[op] if op < len(self.config.global_failure_at) else None
            if fail_at is not None and not self.global_failures_done[op] and sent >= fail_at:
                self.global_failures_done[op] = True
                self.main_thread.execute(self.global_failover)  # context.failJob(...)
        elif kind == "complete":
            self.main_thread.execute(self.coordinators[action[1]].complete_checkpoint)
        elif kind == "rpc":
            self.process_rpc(action[1])
        elif kind == "source":
            self.process_source_rpc(action[1])
        elif kind == "network":
            self.process_network(action[1])
        elif kind == "jm":
            self.main_thread.execute(self.jm_inbox.popleft())
        while self.failover_requests:
            op, subtask = self.failover_requests.pop(0)
            if self.attempts[op][subtask].running:
                self.region_failover(op, subtask)
        self.maybe_inject_barriers()

    def run(self) -> list[list[list[int]]]:
        while self.steps < self.config.max_steps:
            self.steps += 1
            if self.pending is None and self.random.random() < self.config.checkpoint_probability:
                self.trigger_checkpoint()
            elif self.pending is not None and self.steps - self.pending["since"] > self.config.checkpoint_timeout:
                self.abort_checkpoint(triggering=not self.pending["injected"])
            actions = self.enabled()
            if not actions:
                if self.pending is None:
                    break
                continue
            self.step(self.random.choice(actions))
        return [[list(a.received) for a in per_op] for per_op in self.attempts]

"""The holder-level harness of the ``valve`` scenario family: one holder of a protocol, scripted
subtasks and RPCs (:class:`ScriptedTasks`), a recording coordinator, one method per step
(:class:`ValveHarness`); observations in the vectors' format."""

from __future__ import annotations

from typing import Any, Callable

from streamproof.impl.coordination.api import (
    AcknowledgeCheckpointEvent, OperatorCoordinator, SubtaskAccess, SubtaskGateway,
)
from streamproof.impl.coordination.protocols import create_holder
from streamproof.impl.coordination.runtime import (
    CompletableFuture, FlinkException, IllegalStateException, MainThreadExecutor, TaskNotRunningException,
)


class ScriptedTasks:
    """The subtasks of one operator as the holder sees them, with scripted RPCs. Attempts run as
    soon as they are deployed; ``rpc_mode[subtask]`` says how the RPCs issued to it from now on
    complete: ``ack`` (at once), ``pending`` (when ``ack_pending`` / ``fail_pending`` is called)
    or ``lost`` (failed at once, the event never arrives). An RPC to an attempt that no longer runs
    is refused. Observations go to ``trace``."""

    def __init__(self, parallelism: int, trace: list) -> None:
        self.parallelism = parallelism
        self.trace = trace
        self.attempts = [0] * parallelism
        self.running = [True] * parallelism
        self.rpc_mode = ["ack"] * parallelism
        self.pending: list[CompletableFuture] = []

    def get_access_for_subtask(self, subtask: int) -> ScriptedSubtaskAccess:
        return ScriptedSubtaskAccess(self, subtask, self.attempts[subtask])

    def is_running(self, subtask: int, attempt: int) -> bool:
        return self.running[subtask] and self.attempts[subtask] == attempt

    def fail(self, subtask: int) -> None:
        self.running[subtask] = False

    def deploy_new_attempt(self, subtask: int) -> int:
        self.attempts[subtask] += 1
        self.running[subtask] = True
        return self.attempts[subtask]

    def rpc(self, subtask: int, attempt: int, event: Any) -> CompletableFuture:
        observed = {"subtask": subtask, "attempt": attempt, "value": event}
        if not self.is_running(subtask, attempt):
            self.trace.append({"event": "deliver_refused", **observed})
            return CompletableFuture.failed(TaskNotRunningException(f"subtask {subtask} attempt {attempt} is not running"))
        mode = self.rpc_mode[subtask]
        if mode == "lost":
            self.trace.append({"event": "lost", **observed})
            return CompletableFuture.failed(FlinkException("RPC lost"))
        self.trace.append({"event": "deliver", **observed})
        if mode == "ack":
            return CompletableFuture.completed("ack")
        future = CompletableFuture()
        self.pending.append(future)
        return future

    def ack_pending(self) -> None:
        pending, self.pending = self.pending, []
        for future in pending:
            future.complete("ack")

    def fail_pending(self) -> None:
        pending, self.pending = self.pending, []
        for future in pending:
            future.complete_exceptionally(FlinkException("RPC failed"))


class ScriptedSubtaskAccess(SubtaskAccess):
    def __init__(self, tasks: ScriptedTasks, subtask: int, attempt: int) -> None:
        self.tasks = tasks
        self.subtask_index = subtask
        self.attempt_number = attempt

    def create_event_send_action(self, event: Any) -> Callable[[], CompletableFuture]:
        return lambda: self.tasks.rpc(self.subtask_index, self.attempt_number, event)

    def has_switched_to_running(self) -> CompletableFuture:
        return CompletableFuture.completed()

    def is_still_running(self) -> bool:
        return self.tasks.is_running(self.subtask_index, self.attempt_number)

    def trigger_task_failover(self, cause: BaseException) -> None:
        self.tasks.trace.append({"event": "task_failover", "subtask": self.subtask_index, "attempt": self.attempt_number})


class RecordingCoordinator(OperatorCoordinator):
    """The coordinator of holder-level scenarios: it sends what the scenario says, completes its
    checkpoint future when the scenario says, and records what reaches it."""

    def __init__(self, trace: list) -> None:
        self.trace = trace
        self.gateways: dict[int, SubtaskGateway] = {}
        self.checkpoints: dict[int, CompletableFuture] = {}

    def execution_attempt_ready(self, subtask: int, attempt: int, gateway: SubtaskGateway) -> None:
        self.gateways[subtask] = gateway

    def send(self, subtask: int, event: Any) -> CompletableFuture:
        return self.gateways[subtask].send_event(event)

    def checkpoint_coordinator(self, checkpoint_id: int, result: CompletableFuture) -> None:
        self.checkpoints[checkpoint_id] = result

    def complete(self, checkpoint_id: int) -> None:
        if checkpoint_id not in self.checkpoints:
            raise IllegalStateException(f"no coordinator checkpoint {checkpoint_id} was triggered")
        self.checkpoints[checkpoint_id].complete(f"coordinator state for {checkpoint_id}")

    def handle_event_from_operator(self, subtask: int, attempt: int, event: Any) -> None:
        self.trace.append({"event": "coordinator_received", "subtask": subtask, "attempt": attempt, "value": str(event)})

    def reset_to_checkpoint(self, checkpoint_id: int, checkpoint_data: Any) -> None:
        self.trace.append({"event": "coordinator_reset", "checkpoint": checkpoint_id})

    def subtask_reset(self, subtask: int, checkpoint_id: int) -> None:
        self.trace.append({"event": "coordinator_subtask_reset", "subtask": subtask, "checkpoint": checkpoint_id})


class ValveHarness:
    """One holder of ``protocol`` with ``parallelism`` scripted subtasks and a recording
    coordinator; the JobManager's main thread runs inline. One method per ``valve`` step;
    observations accumulate in ``trace`` in the vectors' format. For ``legacy`` the JobManager
    injects the barriers at the sources as soon as the holder's checkpoint future is done, then
    calls ``after_source_barrier_injection`` (what the 1.15 CheckpointCoordinator did)."""

    def __init__(self, protocol: str, parallelism: int) -> None:
        self.protocol = protocol
        self.trace: list[dict] = []
        self.main_thread = MainThreadExecutor(uncaught=self._error)
        self.tasks = ScriptedTasks(parallelism, self.trace)
        self.coordinator = RecordingCoordinator(self.trace)
        self.holder = create_holder(protocol, self.coordinator, self.tasks, parallelism, self.main_thread,
                                    global_failure_handler=self._global_failure,
                                    fatal_error_handler=self._fatal)
        self.results: dict[int, CompletableFuture] = {}
        self.sent: list[CompletableFuture] = []  # every send's future, in send order
        self.main_thread.execute(self.holder.lazy_initialize)
        self.main_thread.execute(self.holder.start)

    # -- reporting -------------------------------------------------------------------------------
    def _error(self, e: BaseException, fatal: bool = False) -> None:
        event = {"event": "error", "text": type(e).__name__, "message": str(e)}
        if fatal:
            event["fatal"] = True
        self.trace.append(event)

    def _fatal(self, e: BaseException) -> None:
        self._error(e, fatal=True)

    def _global_failure(self, e: BaseException) -> None:
        self.trace.append({"event": "global_failure", "message": str(e)})

    def _call(self, fn: Callable[[], None]) -> None:
        """A call from outside the main thread that may throw (the vectors' ``error``)."""
        try:
            fn()
        except Exception as e:  # noqa: BLE001
            self._error(e)

    # -- steps ---------------------------------------------------------------------------------
    def send(self, subtask: int, event: int) -> None:
        def go():
            self.sent.append(self.coordinator.send(subtask, event))
        self._call(go)

    def from_subtask(self, subtask: int, event: int) -> None:
        attempt = self.tasks.attempts[subtask]
        if not self.tasks.is_running(subtask, attempt):
            self._error(TaskNotRunningException(f"subtask {subtask} attempt {attempt} is not running"))
            return
        self.main_thread.execute(lambda: self.holder.handle_event_from_operator(subtask, attempt, event))

    def ack(self, subtask: int, checkpoint: int) -> None:
        attempt = self.tasks.attempts[subtask]
        if not self.tasks.is_running(subtask, attempt):
            self._error(TaskNotRunningException(f"subtask {subtask} attempt {attempt} is not running"))
            return
        event = AcknowledgeCheckpointEvent(checkpoint)
        self.main_thread.execute(lambda: self.holder.handle_event_from_operator(subtask, attempt, event))

    def trigger(self, checkpoint: int) -> None:
        result = CompletableFuture()
        self.results[checkpoint] = result
        result._on_done(lambda _v, e: self.holder.after_source_barrier_injection(checkpoint) if e is None else None)
        self.holder.checkpoint_coordinator(checkpoint, result)

    def complete(self, checkpoint: int) -> None:
        self._call(lambda: self.coordinator.complete(checkpoint))

    def result(self, checkpoint: int) -> None:
        future = self.results.get(checkpoint)
        if future is None:
            self._error(IllegalStateException(f"checkpoint {checkpoint} was never triggered"))
            return
        self.trace.append({"event": "result", "checkpoint": checkpoint, "state": future.state()})

    def notify_complete(self, checkpoint: int) -> None:
        self.holder.notify_checkpoint_complete(checkpoint)

    def notify_aborted(self, checkpoint: int) -> None:
        self.holder.notify_checkpoint_aborted(checkpoint)

    def abort_triggering(self) -> None:
        self.holder.abort_current_triggering()

    def reset(self, checkpoint: int) -> None:
        for subtask in range(self.tasks.parallelism):
            if not self.tasks.running[subtask]:
                self.tasks.deploy_new_attempt(subtask)
        self.main_thread.execute(lambda: self.holder.reset_to_checkpoint(checkpoint, None))

    def fail_subtask(self, subtask: int) -> None:
        attempt = self.tasks.attempts[subtask]
        self.tasks.fail(subtask)
        self.main_thread.execute(lambda: self.holder.execution_attempt_failed(subtask, attempt, None))

    def restart_subtask(self, subtask: int, checkpoint: int) -> None:
        if self.tasks.running[subtask]:
            self.fail_subtask(subtask)
        self.tasks.deploy_new_attempt(subtask)
        self.main_thread.execute(lambda: self.holder.subtask_reset(subtask, checkpoint))

    def rpc(self, subtask: int, mode: str) -> None:
        self.tasks.rpc_mode[subtask] = mode

    def rpc_ack_all(self) -> None:
        self.tasks.ack_pending()

    def rpc_fail_all(self) -> None:
        self.tasks.fail_pending()

    # -- inspection ----------------------------------------------------------------------------
    def result_state(self, checkpoint: int) -> str | None:
        future = self.results.get(checkpoint)
        return None if future is None else future.state()

    def unresolved_sends(self) -> int:
        """Sent events whose future never completed (buffered, in flight, or stuck)."""
        return sum(1 for future in self.sent if not future.is_done())

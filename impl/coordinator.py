"""The operator-coordinator event valve: Flink's ``OperatorCoordinatorHolder`` and its gateways.

An ``OperatorCoordinator`` runs on the JobManager and talks to the subtasks of its operator through
one ``SubtaskGateway`` per subtask. Its checkpoint must line up with the subtasks' snapshots: the
events it sent before it completed checkpoint c are exactly the events whose effect is in the
subtasks' snapshots for c. Three protocols are implemented behind one switch (:data:`PROTOCOLS`,
:func:`create_holder`):

``flink-2.3``
    What Flink ships since FLINK-26029 (1.16), flaws included: a ``SubtaskGatewayImpl`` per subtask
    is marked when the checkpoint is triggered, closed when the coordinator completes its
    checkpoint future (all or none), buffers what is sent while closed per checkpoint in order, and
    reopens when that subtask's ``AcknowledgeCheckpointEvent`` (sent after its synchronous
    snapshot) arrives, or on checkpoint complete / abort, abort of triggering, or reset. The
    coordinator checkpoint completes only when every event sent before the close is acknowledged
    (FLINK-21996). Reproduces ``shared/vectors/flink_valve_traces.json``.
``legacy``
    The 1.11-1.15 ``OperatorEventValve`` (FLINK-16986): one valve for all subtasks, shut at the
    coordinator's future completion, reopened after the barriers were injected at the sources.
    Right for sources, wrong for any other operator (FLINK-26029's duplicate).
``streamproof``
    ``flink-2.3`` with the flaws the checker found fixed (docs/valve.md): a gateway asked to open
    for a checkpoint it never saw does nothing (instead of throwing and skipping the other
    gateways); a failover aborts the in-flight checkpoint on every gateway and fails the events
    buffered on a replaced gateway (instead of leaving them in the unconfirmed set forever); a
    global reset fails buffered events instead of releasing them to the old attempts; gateways
    close all or none, checked before any closes; a checkpoint waits for every unacknowledged
    event sent before its close, not only those no earlier checkpoint waited for.

Everything runs on the JobManager's main thread (:class:`MainThreadExecutor`, one FIFO queue);
RPCs to a task are FIFO and may fail with or without the task failing (:class:`SubtaskAccess`). A
holder-level harness with scripted tasks and RPCs (:class:`ValveHarness`) drives the ``valve``
scenario family. :class:`SplitAssigningSourceCoordinator` is an example of a user coordinator.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterable

NO_CHECKPOINT = -(2**63)  # Long.MIN_VALUE
PROTOCOLS = ("flink-2.3", "legacy", "streamproof")
EVENT_LOSS_ERROR_MESSAGE = ("An OperatorEvent from an OperatorCoordinator to a task was lost. "
                            "Triggering task failover to ensure consistency. Event: '%s', targetTask: %s")


# ------------------------------------------------------------------------------------- errors


class FlinkException(Exception):
    pass


class FlinkRuntimeException(RuntimeError):
    pass


class IllegalStateException(RuntimeError):
    pass


class TaskNotRunningException(FlinkException):
    pass


# ------------------------------------------------------------------------------------ futures


class CompletableFuture:
    """A small ``java.util.concurrent.CompletableFuture``: completed once, with a value or an
    error; dependent actions run in the completing thread, in registration order (Java runs them
    last-registered first; nothing here depends on that order)."""

    __slots__ = ("_done", "_value", "_error", "_callbacks")

    def __init__(self) -> None:
        self._done = False
        self._value: Any = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[Any, BaseException | None], None]] = []

    @staticmethod
    def completed(value: Any = None) -> CompletableFuture:
        future = CompletableFuture()
        future.complete(value)
        return future

    @staticmethod
    def failed(error: BaseException) -> CompletableFuture:
        future = CompletableFuture()
        future.complete_exceptionally(error)
        return future

    def is_done(self) -> bool:
        return self._done

    def is_completed_exceptionally(self) -> bool:
        return self._done and self._error is not None

    def state(self) -> str:
        """``pending``, ``done`` or ``failed`` (the vectors' words)."""
        return "pending" if not self._done else ("failed" if self._error is not None else "done")

    def complete(self, value: Any = None) -> bool:
        return self._finish(value, None)

    def complete_exceptionally(self, error: BaseException) -> bool:
        return self._finish(None, error)

    def _finish(self, value: Any, error: BaseException | None) -> bool:
        if self._done:
            return False
        self._done, self._value, self._error = True, value, error
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(value, error)
        return True

    def _on_done(self, callback: Callable[[Any, BaseException | None], None]) -> None:
        if self._done:
            callback(self._value, self._error)
        else:
            self._callbacks.append(callback)

    def when_complete(self, action: Callable[[Any, BaseException | None], None]) -> CompletableFuture:
        """Runs ``action`` when done; the returned future completes like this one afterwards."""
        out = CompletableFuture()

        def run(value, error):
            try:
                action(value, error)
            except Exception as e:  # noqa: BLE001 - as in Java: the dependent future fails
                out.complete_exceptionally(error or e)
                return
            out._finish(value, error)

        self._on_done(run)
        return out

    def when_complete_async(self, action, executor: MainThreadExecutor) -> CompletableFuture:
        out = CompletableFuture()

        def run(value, error):
            def task():
                try:
                    action(value, error)
                except Exception as e:  # noqa: BLE001
                    out.complete_exceptionally(error or e)
                    return
                out._finish(value, error)
            executor.execute(task)

        self._on_done(run)
        return out

    def handle_async(self, fn: Callable[[Any, BaseException | None], Any], executor: MainThreadExecutor) -> CompletableFuture:
        """Runs ``fn(value, error)`` on ``executor``; the returned future holds its result, or fails
        with what it raised."""
        out = CompletableFuture()

        def run(value, error):
            def task():
                try:
                    result = fn(value, error)
                except Exception as e:  # noqa: BLE001
                    out.complete_exceptionally(e)
                    return
                out.complete(result)
            executor.execute(task)

        self._on_done(run)
        return out


def forward(source: CompletableFuture, target: CompletableFuture) -> None:
    """``FutureUtils.forward``: complete ``target`` like ``source``."""
    source._on_done(lambda v, e: target.complete_exceptionally(e) if e is not None else target.complete(v))


def wait_for_all(futures: Iterable[CompletableFuture]) -> CompletableFuture:
    """``FutureUtils.waitForAll``: completes once every future is done; fails if any failed."""
    futures = list(futures)
    out = CompletableFuture()
    state = {"left": len(futures), "error": None}
    if not futures:
        out.complete()
        return out

    def one_done(_value, error):
        if error is not None and state["error"] is None:
            state["error"] = error
        state["left"] -= 1
        if state["left"] == 0:
            out.complete_exceptionally(state["error"]) if state["error"] is not None else out.complete()

    for future in futures:
        future._on_done(one_done)
    return out


def assert_no_exception(future: CompletableFuture, fatal_error_handler: Callable[[BaseException], None]) -> None:
    """``FutureUtils.assertNoException``: a failure is a fatal error (Flink's
    ``FatalExitExceptionHandler`` stops the JobManager process)."""
    future._on_done(lambda _v, e: fatal_error_handler(e) if e is not None else None)


class MainThreadExecutor:
    """The JobMaster's main thread: one FIFO queue. A task submitted while another runs waits its
    turn; a task submitted from outside runs at once (with whatever it queued) before ``execute``
    returns. An exception escaping a task goes to ``uncaught`` (Flink's RPC endpoint logs it and
    goes on)."""

    def __init__(self, uncaught: Callable[[BaseException], None] | None = None) -> None:
        self._queue: deque[Callable[[], None]] = deque()
        self._running = False
        self.uncaught = uncaught

    def execute(self, runnable: Callable[[], None]) -> None:
        self._queue.append(runnable)
        if self._running:
            return
        self._running = True
        try:
            while self._queue:
                task = self._queue.popleft()
                try:
                    task()
                except Exception as e:  # noqa: BLE001 - the main thread goes on
                    if self.uncaught is None:
                        raise
                    self.uncaught(e)
        finally:
            self._running = False

    def assert_running_in_main_thread(self) -> None:
        """Single-threaded simulation: every call already runs on the main thread."""


class IncompleteFuturesTracker:
    """Remembers futures while they are incomplete (Flink's ``IncompleteFuturesTracker``)."""

    def __init__(self) -> None:
        self.incomplete_futures: dict[int, CompletableFuture] = {}  # insertion-ordered set
        self.failure_cause: BaseException | None = None

    def track_future_while_incomplete(self, future: CompletableFuture) -> None:
        if future.is_done():
            return
        if self.failure_cause is not None:
            future.complete_exceptionally(self.failure_cause)
            return
        self.incomplete_futures[id(future)] = future
        future._on_done(lambda _v, _e: self.incomplete_futures.pop(id(future), None))

    def get_current_incomplete(self) -> list[CompletableFuture]:
        return list(self.incomplete_futures.values())

    def get_current_incomplete_and_reset(self) -> list[CompletableFuture]:
        futures = list(self.incomplete_futures.values())
        self.incomplete_futures.clear()
        return futures

    def fail_all_futures(self, cause: BaseException) -> None:
        if self.failure_cause is not None:
            return
        self.failure_cause = cause
        futures = list(self.incomplete_futures.values())
        self.incomplete_futures.clear()
        for future in futures:
            future.complete_exceptionally(cause)


# -------------------------------------------------------------------------- coordinator API


@dataclass(frozen=True)
class AcknowledgeCheckpointEvent:
    """Sent by a subtask to its coordinator once its synchronous snapshot for ``checkpoint_id`` is
    taken (FLINK-26029); it reopens that subtask's gateway."""

    checkpoint_id: int


class SubtaskGateway:
    """What a coordinator sends through: ``send_event(event)`` returns a future completed when
    the subtask acknowledged the RPC (failed when it was lost)."""

    def send_event(self, event: Any) -> CompletableFuture:  # pragma: no cover - interface
        raise NotImplementedError

    def get_subtask(self) -> int:  # pragma: no cover - interface
        raise NotImplementedError

    def get_attempt_number(self) -> int:  # pragma: no cover - interface
        raise NotImplementedError


class OperatorCoordinator:
    """The coordinator API users implement (Flink's ``OperatorCoordinator``). Every method is
    called on the JobManager's main thread.

    The contract that makes checkpoints consistent (Flink's javadoc of ``checkpointCoordinator``):
    the state a coordinator puts into ``result`` must reflect exactly the events it sent before it
    completes ``result``; events sent afterwards belong to the next epoch. After
    ``subtask_reset(i, c)`` it must treat every event it sent to subtask ``i`` after checkpoint
    ``c`` as lost (and send it again if it still matters); after ``reset_to_checkpoint`` it
    restores its own state.
    """

    def start(self) -> None:
        pass

    def close(self) -> None:
        pass

    def handle_event_from_operator(self, subtask: int, attempt: int, event: Any) -> None:
        pass

    def execution_attempt_failed(self, subtask: int, attempt: int, reason: BaseException | None) -> None:
        pass

    def execution_attempt_ready(self, subtask: int, attempt: int, gateway: SubtaskGateway) -> None:
        pass

    def subtask_reset(self, subtask: int, checkpoint_id: int) -> None:
        pass

    def checkpoint_coordinator(self, checkpoint_id: int, result: CompletableFuture) -> None:
        result.complete(b"")

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        pass

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        pass

    def reset_to_checkpoint(self, checkpoint_id: int, checkpoint_data: Any) -> None:
        pass


class SubtaskAccess:
    """The holder's view of one execution attempt of a subtask (Flink's ``SubtaskAccess``)."""

    subtask_index: int
    attempt_number: int

    def create_event_send_action(self, event: Any) -> Callable[[], CompletableFuture]:  # pragma: no cover
        """An RPC to *this attempt*, issued when the action is called."""
        raise NotImplementedError

    def has_switched_to_running(self) -> CompletableFuture:  # pragma: no cover
        raise NotImplementedError

    def is_still_running(self) -> bool:  # pragma: no cover
        raise NotImplementedError

    def trigger_task_failover(self, cause: BaseException) -> None:  # pragma: no cover
        raise NotImplementedError

    def subtask_name(self) -> str:
        return f"subtask {self.subtask_index} (attempt #{self.attempt_number})"


# --------------------------------------------------------------------- flink-2.3: gateways


@dataclass
class BlockedEvent:
    send_action: Callable[[], CompletableFuture]
    future: CompletableFuture
    event: Any = None  # kept for inspection (Flink's BlockedEvent holds only the action)


def _call_send_action(send_action: Callable[[], CompletableFuture], result: CompletableFuture) -> None:
    try:
        forward(send_action(), result)
    except Exception as e:  # noqa: BLE001 - SubtaskGatewayImpl.callSendAction
        result.complete_exceptionally(e)


class SubtaskGatewayImpl(SubtaskGateway):
    """Flink 2.3's ``SubtaskGatewayImpl``: one attempt's gateway. Marked for a checkpoint when it
    is triggered, closed for it when the coordinator's future completes, it buffers every event
    sent while closed (per checkpoint, in order) and releases them when opened for it."""

    def __init__(self, subtask_access: SubtaskAccess, main_thread: MainThreadExecutor,
                 incomplete_futures_tracker: IncompleteFuturesTracker) -> None:
        self.subtask_access = subtask_access
        self.main_thread = main_thread
        self.incomplete_futures_tracker = incomplete_futures_tracker
        self.blocked_events_map: dict[int, list[BlockedEvent]] = {}  # a TreeMap: see _first / _last
        self.current_marked_checkpoint_ids: set[int] = set()
        self.latest_attempted_checkpoint_id = NO_CHECKPOINT

    # -- sending -------------------------------------------------------------------------------
    def send_event(self, evt: Any) -> CompletableFuture:
        if not self.is_ready():
            raise FlinkRuntimeException("SubtaskGateway is not ready, task not yet running.")
        send_action = self.subtask_access.create_event_send_action(evt)
        send_result = CompletableFuture()

        def on_result(_success, failure):
            # FLINK-21996: a lost event must fail the receiver over, or its state misses the event
            if failure is not None and self.subtask_access.is_still_running():
                message = EVENT_LOSS_ERROR_MESSAGE % (evt, self.subtask_access.subtask_name())
                self.subtask_access.trigger_task_failover(FlinkException(message, failure))

        result = send_result.when_complete_async(on_result, self.main_thread)

        def send_in_main_thread():
            self._send_event_internal(send_action, send_result, evt)
            self.incomplete_futures_tracker.track_future_while_incomplete(result)

        self.main_thread.execute(send_in_main_thread)
        return result

    def _send_event_internal(self, send_action, result: CompletableFuture, event: Any = None) -> None:
        if self.blocked_events_map:
            self.blocked_events_map[self._last()].append(BlockedEvent(send_action, result, event))
        else:
            _call_send_action(send_action, result)

    def get_subtask(self) -> int:
        return self.subtask_access.subtask_index

    def get_attempt_number(self) -> int:
        return self.subtask_access.attempt_number

    def is_ready(self) -> bool:
        return self.subtask_access.has_switched_to_running().is_done()

    # -- marking, closing, opening --------------------------------------------------------------
    def _first(self) -> int:
        return min(self.blocked_events_map)

    def _last(self) -> int:
        return max(self.blocked_events_map)

    def mark_for_checkpoint(self, checkpoint_id: int) -> None:
        if checkpoint_id > self.latest_attempted_checkpoint_id:
            self.current_marked_checkpoint_ids.add(checkpoint_id)
            self.latest_attempted_checkpoint_id = checkpoint_id

    def try_close_gateway(self, checkpoint_id: int) -> bool:
        if checkpoint_id in self.current_marked_checkpoint_ids:
            self.blocked_events_map.setdefault(checkpoint_id, [])
            return True
        return False

    def is_closed_for(self, checkpoint_id: int) -> bool:
        return checkpoint_id in self.blocked_events_map

    def open_gateway_and_unmark_checkpoint(self, checkpoint_id: int) -> None:
        # Flink throws for a checkpoint this gateway never saw: a fresh gateway (after a region
        # failover) throws on a late notification, and the holder's loop stops there.
        if self.latest_attempted_checkpoint_id < checkpoint_id:
            raise IllegalStateException(
                f"Trying to open gateway for unseen checkpoint: latest known checkpoint = "
                f"{self.latest_attempted_checkpoint_id}, incoming checkpoint = {checkpoint_id}")
        if checkpoint_id not in self.current_marked_checkpoint_ids:
            return
        if checkpoint_id in self.blocked_events_map:
            if self._first() == checkpoint_id:
                for blocked in self.blocked_events_map[checkpoint_id]:
                    _call_send_action(blocked.send_action, blocked.future)
            else:  # released with the earlier checkpoint's events, after them
                earlier = max(c for c in self.blocked_events_map if c <= checkpoint_id - 1)
                self.blocked_events_map[earlier].extend(self.blocked_events_map[checkpoint_id])
            del self.blocked_events_map[checkpoint_id]
        self.current_marked_checkpoint_ids.discard(checkpoint_id)

    def open_gateway_and_unmark_all_checkpoint(self) -> None:
        for checkpoint_id in sorted(self.blocked_events_map):
            for blocked in self.blocked_events_map[checkpoint_id]:
                _call_send_action(blocked.send_action, blocked.future)
        self.blocked_events_map.clear()
        self.current_marked_checkpoint_ids.clear()

    def open_gateway_and_unmark_last_checkpoint_if_any(self) -> None:
        if self.current_marked_checkpoint_ids:
            self.open_gateway_and_unmark_checkpoint(max(self.current_marked_checkpoint_ids))

    def buffered_events(self) -> int:
        return sum(len(events) for events in self.blocked_events_map.values())


# ----------------------------------------------------------------------- flink-2.3: holder


class OperatorCoordinatorHolder:
    """Flink 2.3's ``OperatorCoordinatorHolder``: the coordinator, its gateways (one per subtask,
    replaced on every subtask reset), the unconfirmed events, and the checkpoint protocol."""

    PROTOCOL = "flink-2.3"

    def __init__(self, coordinator: OperatorCoordinator, task_accesses, operator_parallelism: int,
                 main_thread: MainThreadExecutor,
                 global_failure_handler: Callable[[BaseException], None] | None = None,
                 fatal_error_handler: Callable[[BaseException], None] | None = None) -> None:
        self.coordinator = coordinator
        self.task_accesses = task_accesses  # get_access_for_subtask(subtask) -> SubtaskAccess
        self.operator_parallelism = operator_parallelism
        self.main_thread = main_thread
        self.global_failure_handler = global_failure_handler or (lambda e: None)
        self.fatal_error_handler = fatal_error_handler or _raise
        self.unconfirmed_events = IncompleteFuturesTracker()
        self.subtask_gateway_map: dict[int, SubtaskGatewayImpl] = {}
        self.replaced_gateways: list[SubtaskGatewayImpl] = []  # for inspection only

    def lazy_initialize(self) -> None:
        self.setup_all_subtask_gateways()

    def start(self) -> None:
        self.coordinator.start()

    def close(self) -> None:
        self.coordinator.close()

    # -- events and failures -------------------------------------------------------------------
    def handle_event_from_operator(self, subtask: int, attempt: int, event: Any) -> None:
        if isinstance(event, AcknowledgeCheckpointEvent):
            self.subtask_gateway_map[subtask].open_gateway_and_unmark_checkpoint(event.checkpoint_id)
            return
        self.coordinator.handle_event_from_operator(subtask, attempt, event)

    def execution_attempt_failed(self, subtask: int, attempt: int, reason: BaseException | None) -> None:
        self.coordinator.execution_attempt_failed(subtask, attempt, reason)

    def subtask_reset(self, subtask: int, checkpoint_id: int) -> None:
        # first, so that the coordinator may access the gateway in subtask_reset()
        self.setup_subtask_gateway(subtask)
        self.coordinator.subtask_reset(subtask, checkpoint_id)

    # -- checkpoints ---------------------------------------------------------------------------
    def checkpoint_coordinator(self, checkpoint_id: int, result: CompletableFuture) -> None:
        self.main_thread.execute(lambda: self._checkpoint_coordinator_internal(checkpoint_id, result))

    def _checkpoint_coordinator_internal(self, checkpoint_id: int, result: CompletableFuture) -> None:
        coordinator_checkpoint = CompletableFuture()

        def on_coordinator_checkpoint(success, failure):
            if failure is not None:
                result.complete_exceptionally(failure)
            elif self.close_gateways(checkpoint_id):
                self.complete_checkpoint_once_events_are_done(checkpoint_id, result, success)
            else:
                # the checkpoint was aborted before: the safety net of Flink's holder
                result.complete_exceptionally(FlinkException("Cannot close gateway"))

        assert_no_exception(coordinator_checkpoint.handle_async(on_coordinator_checkpoint, self.main_thread),
                            self.fatal_error_handler)
        try:
            self.mark_for_checkpoint(checkpoint_id)
            self.coordinator.checkpoint_coordinator(checkpoint_id, coordinator_checkpoint)
        except Exception as e:  # noqa: BLE001
            result.complete_exceptionally(e)
            self.global_failure_handler(e)

    def mark_for_checkpoint(self, checkpoint_id: int) -> None:
        for gateway in self.subtask_gateway_map.values():
            gateway.mark_for_checkpoint(checkpoint_id)

    def close_gateways(self, checkpoint_id: int) -> bool:
        closed = sum(1 for gateway in self.subtask_gateway_map.values() if gateway.try_close_gateway(checkpoint_id))
        if closed != 0 and closed != len(self.subtask_gateway_map):
            raise IllegalStateException(
                "Some subtask gateway can be closed while others cannot. There might be a bug here.")
        return closed != 0

    def complete_checkpoint_once_events_are_done(self, checkpoint_id: int, checkpoint_future: CompletableFuture,
                                                 checkpoint_result: Any) -> None:
        # FLINK-21996: every event sent before the close must have reached its task
        pending_events = self.events_to_wait_for()
        if not pending_events:
            checkpoint_future.complete(checkpoint_result)
            return

        def on_events(_success, failure):
            if failure is None:
                checkpoint_future.complete(checkpoint_result)
            else:
                checkpoint_future.complete_exceptionally(FlinkException(
                    "Failing OperatorCoordinator checkpoint because some OperatorEvents before this "
                    "checkpoint barrier were not received by the target tasks."))

        wait_for_all(pending_events)._on_done(on_events)

    def events_to_wait_for(self) -> list[CompletableFuture]:
        """Flink hands the unconfirmed events to this checkpoint and forgets them: a later
        checkpoint does not wait for an event an aborted one was waiting for."""
        return self.unconfirmed_events.get_current_incomplete_and_reset()

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        def run():
            for gateway in list(self.subtask_gateway_map.values()):
                gateway.open_gateway_and_unmark_checkpoint(checkpoint_id)
            self.coordinator.notify_checkpoint_complete(checkpoint_id)
        self.main_thread.execute(run)

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        def run():
            for gateway in list(self.subtask_gateway_map.values()):
                gateway.open_gateway_and_unmark_checkpoint(checkpoint_id)
            self.coordinator.notify_checkpoint_aborted(checkpoint_id)
        self.main_thread.execute(run)

    def abort_current_triggering(self) -> None:
        def run():
            for gateway in list(self.subtask_gateway_map.values()):
                gateway.open_gateway_and_unmark_last_checkpoint_if_any()
        self.main_thread.execute(run)

    def after_source_barrier_injection(self, checkpoint_id: int) -> None:
        """Called by the JobManager once the barriers were sent to the sources; FLINK-26029
        removed it (the gateways reopen per subtask on its acknowledgement)."""

    def reset_to_checkpoint(self, checkpoint_id: int, checkpoint_data: Any) -> None:
        for gateway in list(self.subtask_gateway_map.values()):
            gateway.open_gateway_and_unmark_all_checkpoint()
        self.setup_all_subtask_gateways()
        self.coordinator.reset_to_checkpoint(checkpoint_id, checkpoint_data)

    # -- gateways ------------------------------------------------------------------------------
    def setup_all_subtask_gateways(self) -> None:
        for subtask in range(self.operator_parallelism):
            self.setup_subtask_gateway(subtask)

    def new_gateway(self, access: SubtaskAccess) -> SubtaskGatewayImpl:
        return SubtaskGatewayImpl(access, self.main_thread, self.unconfirmed_events)

    def setup_subtask_gateway(self, subtask: int) -> None:
        access = self.task_accesses.get_access_for_subtask(subtask)
        gateway = self.new_gateway(access)
        old = self.subtask_gateway_map.get(subtask)
        if old is not None:
            self.replaced_gateways.append(old)
        self.subtask_gateway_map[subtask] = gateway

        def ready(_value, _error):
            if access.is_still_running():
                self.coordinator.execution_attempt_ready(subtask, access.attempt_number, gateway)

        access.has_switched_to_running()._on_done(ready)

    # -- inspection ----------------------------------------------------------------------------
    def gateways_closed_for(self, checkpoint_id: int) -> list[bool]:
        """Per current gateway (subtask order): closed for ``checkpoint_id``?"""
        return [self.subtask_gateway_map[s].is_closed_for(checkpoint_id) for s in sorted(self.subtask_gateway_map)]

    def buffered_events(self) -> int:
        """Events held back by any gateway, replaced ones included."""
        gateways = list(self.subtask_gateway_map.values()) + self.replaced_gateways
        return sum(gateway.buffered_events() for gateway in gateways)


def _raise(e: BaseException) -> None:
    raise e


# ------------------------------------------------------------------- streamproof: the fixes


class StreamproofSubtaskGateway(SubtaskGatewayImpl):
    """Flink 2.3's gateway, except that opening for a checkpoint it never saw does nothing."""

    def open_gateway_and_unmark_checkpoint(self, checkpoint_id: int) -> None:
        if self.latest_attempted_checkpoint_id < checkpoint_id:
            return  # a fresh gateway holds nothing for an older attempt's checkpoint
        super().open_gateway_and_unmark_checkpoint(checkpoint_id)

    def discard_blocked_events(self, cause: BaseException) -> None:
        """Fails every buffered event: its target attempt is gone; the coordinator was told."""
        blocked = [event for c in sorted(self.blocked_events_map) for event in self.blocked_events_map[c]]
        self.blocked_events_map.clear()
        self.current_marked_checkpoint_ids.clear()
        for event in blocked:
            event.future.complete_exceptionally(cause)


class StreamproofOperatorCoordinatorHolder(OperatorCoordinatorHolder):
    """The corrected protocol (docs/valve.md, "streamproof"). Differences from Flink 2.3:

    * a failover (``subtask_reset``) aborts the in-flight checkpoint on every gateway (the
      JobManager aborts it anyway in ``SchedulerBase.restoreState``, but tells the holder only
      later, through the main thread's queue) and fails the replaced gateway's buffered events, so
      none stays in the unconfirmed set forever;
    * ``reset_to_checkpoint`` fails buffered events instead of releasing them to old attempts;
    * a checkpoint waits for every unacknowledged event sent before its close, also those an
      aborted checkpoint was waiting for (Flink hands them to one checkpoint and forgets them);
    * gateways close all or none: if one cannot close, none does and the checkpoint fails;
    * notifications reach every gateway (a gateway never throws for an unseen checkpoint).
    """

    PROTOCOL = "streamproof"

    def new_gateway(self, access: SubtaskAccess) -> SubtaskGatewayImpl:
        return StreamproofSubtaskGateway(access, self.main_thread, self.unconfirmed_events)

    def events_to_wait_for(self) -> list[CompletableFuture]:
        # every event sent before the close and not yet acknowledged, also those an aborted
        # checkpoint was waiting for
        return self.unconfirmed_events.get_current_incomplete()

    def subtask_reset(self, subtask: int, checkpoint_id: int) -> None:
        for other, gateway in self.subtask_gateway_map.items():
            if other != subtask:
                gateway.open_gateway_and_unmark_all_checkpoint()
        old = self.subtask_gateway_map.get(subtask)
        if old is not None:
            old.discard_blocked_events(FlinkException(f"Event discarded: subtask {subtask} was reset"))
        super().subtask_reset(subtask, checkpoint_id)

    def reset_to_checkpoint(self, checkpoint_id: int, checkpoint_data: Any) -> None:
        for gateway in list(self.subtask_gateway_map.values()):
            gateway.discard_blocked_events(FlinkException("Event discarded: global failover"))
        self.setup_all_subtask_gateways()
        self.coordinator.reset_to_checkpoint(checkpoint_id, checkpoint_data)

    def close_gateways(self, checkpoint_id: int) -> bool:
        gateways = list(self.subtask_gateway_map.values())
        if not all(checkpoint_id in g.current_marked_checkpoint_ids for g in gateways):
            return False  # all or none: some gateway cannot close, so none does
        for gateway in gateways:
            gateway.try_close_gateway(checkpoint_id)
        return bool(gateways)


# ------------------------------------------------------------------------ legacy (1.11-1.15)


class OperatorEventValve:
    """The 1.11-1.15 ``OperatorEventValve`` (FLINK-16986): one valve for every subtask of the
    operator, blocking per subtask while shut."""

    def __init__(self) -> None:
        self.blocked_events: dict[int, list[BlockedEvent]] = {}  # LinkedHashMap by subtask
        self.current_checkpoint_id = NO_CHECKPOINT
        self.last_checkpoint_id = NO_CHECKPOINT
        self.shut = False

    def send_event(self, send_action, subtask: int, result: CompletableFuture) -> None:
        if not self.shut:
            _call_send_action(send_action, result)
            return
        self.blocked_events.setdefault(subtask, []).append(BlockedEvent(send_action, result))

    def mark_for_checkpoint(self, checkpoint_id: int) -> None:
        if self.current_checkpoint_id != NO_CHECKPOINT and self.current_checkpoint_id != checkpoint_id:
            raise IllegalStateException(f"Cannot mark for checkpoint {checkpoint_id}, already marked for "
                                        f"checkpoint {self.current_checkpoint_id}")
        if checkpoint_id > self.last_checkpoint_id:
            self.current_checkpoint_id = checkpoint_id
            self.last_checkpoint_id = checkpoint_id
        else:
            raise IllegalStateException(f"Regressing checkpoint IDs. Previous checkpointId = "
                                        f"{self.last_checkpoint_id}, new checkpointId = {checkpoint_id}")

    def try_shut_valve(self, checkpoint_id: int) -> bool:
        if checkpoint_id == self.current_checkpoint_id:
            self.shut = True
            return True
        return False

    def open_valve_and_unmark_checkpoint(self, expected_checkpoint_id: int | None = None) -> None:
        if expected_checkpoint_id is not None and expected_checkpoint_id != self.current_checkpoint_id:
            raise IllegalStateException(f"Valve closed for different checkpoint: closed for = "
                                        f"{self.current_checkpoint_id}, expected = {expected_checkpoint_id}")
        self.current_checkpoint_id = NO_CHECKPOINT
        if not self.shut:
            return
        blocked = [event for events in self.blocked_events.values() for event in events]
        self.blocked_events.clear()
        self.shut = False
        for event in blocked:
            _call_send_action(event.send_action, event.future)

    def buffered_events(self) -> int:
        return sum(len(events) for events in self.blocked_events.values())


class LegacySubtaskGateway(SubtaskGateway):
    """The 1.14 ``SubtaskGatewayImpl``: sends through the operator's one valve."""

    def __init__(self, subtask_access: SubtaskAccess, valve: OperatorEventValve, main_thread: MainThreadExecutor,
                 incomplete_futures_tracker: IncompleteFuturesTracker, fatal_error_handler) -> None:
        self.subtask_access = subtask_access
        self.valve = valve
        self.main_thread = main_thread
        self.incomplete_futures_tracker = incomplete_futures_tracker
        self.fatal_error_handler = fatal_error_handler

    def send_event(self, evt: Any) -> CompletableFuture:
        if not self.subtask_access.has_switched_to_running().is_done():
            raise FlinkRuntimeException("SubtaskGateway is not ready, task not yet running.")
        send_action = self.subtask_access.create_event_send_action(evt)
        result = CompletableFuture()

        def on_result(_success, failure):
            if failure is not None and self.subtask_access.is_still_running():
                message = EVENT_LOSS_ERROR_MESSAGE % (evt, self.subtask_access.subtask_name())
                self.subtask_access.trigger_task_failover(FlinkException(message, failure))

        assert_no_exception(result.handle_async(on_result, self.main_thread), self.fatal_error_handler)

        def send_in_main_thread():
            self.valve.send_event(send_action, self.subtask_access.subtask_index, result)
            self.incomplete_futures_tracker.track_future_while_incomplete(result)

        self.main_thread.execute(send_in_main_thread)
        return result

    def get_subtask(self) -> int:
        return self.subtask_access.subtask_index

    def get_attempt_number(self) -> int:
        return self.subtask_access.attempt_number

    def is_closed_for(self, checkpoint_id: int) -> bool:
        return self.valve.shut and self.valve.current_checkpoint_id == checkpoint_id

    def buffered_events(self) -> int:
        return 0  # the valve holds them


class LegacyOperatorCoordinatorHolder(OperatorCoordinatorHolder):
    """The 1.14/1.15 holder: the valve is shut when the coordinator's future completes and opened
    once the JobManager injected the barriers at the sources (``after_source_barrier_injection``),
    on abort of triggering, and on reset. ``AcknowledgeCheckpointEvent`` did not exist."""

    PROTOCOL = "legacy"

    def __init__(self, *args, **kwargs) -> None:
        self.event_valve = OperatorEventValve()
        super().__init__(*args, **kwargs)

    def new_gateway(self, access: SubtaskAccess):
        return LegacySubtaskGateway(access, self.event_valve, self.main_thread, self.unconfirmed_events,
                                    self.fatal_error_handler)

    def handle_event_from_operator(self, subtask: int, attempt: int, event: Any) -> None:
        if isinstance(event, AcknowledgeCheckpointEvent):
            return  # sent only since Flink 1.16
        self.coordinator.handle_event_from_operator(subtask, attempt, event)

    def _checkpoint_coordinator_internal(self, checkpoint_id: int, result: CompletableFuture) -> None:
        coordinator_checkpoint = CompletableFuture()

        def on_coordinator_checkpoint(success, failure):
            if failure is not None:
                result.complete_exceptionally(failure)
            elif self.event_valve.try_shut_valve(checkpoint_id):
                self.complete_checkpoint_once_events_are_done(checkpoint_id, result, success)
            else:
                result.complete_exceptionally(FlinkException("Cannot shut event valve"))

        assert_no_exception(coordinator_checkpoint.handle_async(on_coordinator_checkpoint, self.main_thread),
                            self.fatal_error_handler)
        try:
            self.event_valve.mark_for_checkpoint(checkpoint_id)
            self.coordinator.checkpoint_coordinator(checkpoint_id, coordinator_checkpoint)
        except Exception as e:  # noqa: BLE001
            result.complete_exceptionally(e)
            self.global_failure_handler(e)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.main_thread.execute(lambda: self.coordinator.notify_checkpoint_complete(checkpoint_id))

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        self.main_thread.execute(lambda: self.coordinator.notify_checkpoint_aborted(checkpoint_id))

    def after_source_barrier_injection(self, checkpoint_id: int) -> None:
        self.main_thread.execute(lambda: self.event_valve.open_valve_and_unmark_checkpoint(checkpoint_id))

    def abort_current_triggering(self) -> None:
        self.main_thread.execute(self.event_valve.open_valve_and_unmark_checkpoint)

    def reset_to_checkpoint(self, checkpoint_id: int, checkpoint_data: Any) -> None:
        self.event_valve.open_valve_and_unmark_checkpoint()
        self.setup_all_subtask_gateways()
        self.coordinator.reset_to_checkpoint(checkpoint_id, checkpoint_data)

    def gateways_closed_for(self, checkpoint_id: int) -> list[bool]:
        closed = self.event_valve.shut and self.event_valve.current_checkpoint_id == checkpoint_id
        return [closed] * len(self.subtask_gateway_map)

    def buffered_events(self) -> int:
        return self.event_valve.buffered_events()


HOLDERS = {
    "flink-2.3": OperatorCoordinatorHolder,
    "legacy": LegacyOperatorCoordinatorHolder,
    "streamproof": StreamproofOperatorCoordinatorHolder,
}


def create_holder(protocol: str, coordinator: OperatorCoordinator, task_accesses, parallelism: int,
                  main_thread: MainThreadExecutor, **handlers) -> OperatorCoordinatorHolder:
    """A holder of ``protocol`` (one of :data:`PROTOCOLS`); call ``lazy_initialize`` and
    ``start`` next, as the scheduler does."""
    if protocol not in HOLDERS:
        raise ValueError(f"unknown valve protocol {protocol!r}; known: {', '.join(PROTOCOLS)}")
    return HOLDERS[protocol](coordinator, task_accesses, parallelism, main_thread, **handlers)


# ------------------------------------------------------ example: a split-assigning coordinator


@dataclass(frozen=True)
class AddSplitEvent:
    split: str


@dataclass(frozen=True)
class RequestSplitEvent:
    pass


@dataclass(frozen=True)
class NoMoreSplitsEvent:
    pass


class SplitAssigningSourceCoordinator(OperatorCoordinator):
    """An example coordinator: a FLIP-27 style split enumerator. Readers ask for splits
    (``RequestSplitEvent``); it answers with ``AddSplitEvent`` or ``NoMoreSplitsEvent``.

    Its checkpoint is the unassigned splits plus, per checkpoint, the splits assigned since the
    previous one (Flink's ``SplitAssignmentTracker``). After ``subtask_reset(i, c)`` the splits
    assigned to reader ``i`` after ``c`` go back to the unassigned pool: the reader restored from
    ``c`` never saw them. With a consistent valve every split is read exactly once.
    """

    def __init__(self, splits: Iterable[str]) -> None:
        self.unassigned: list[str] = list(splits)
        self.assigned_since_checkpoint: dict[int, list[str]] = {}  # subtask -> splits (current epoch)
        self.uncheckpointed: dict[int, dict[int, list[str]]] = {}  # checkpoint -> subtask -> splits
        self.gateways: dict[int, SubtaskGateway] = {}
        self.waiting: list[int] = []  # readers that asked while nothing was left... (kept for order)
        self.no_more_sent: set[int] = set()

    # -- events --------------------------------------------------------------------------------
    def execution_attempt_ready(self, subtask: int, attempt: int, gateway: SubtaskGateway) -> None:
        self.gateways[subtask] = gateway

    def handle_event_from_operator(self, subtask: int, attempt: int, event: Any) -> None:
        if isinstance(event, RequestSplitEvent):
            self.assign(subtask)

    def assign(self, subtask: int) -> None:
        gateway = self.gateways[subtask]
        if self.unassigned:
            split = self.unassigned.pop(0)
            self.assigned_since_checkpoint.setdefault(subtask, []).append(split)
            gateway.send_event(AddSplitEvent(split))
        else:
            gateway.send_event(NoMoreSplitsEvent())

    # -- checkpoints ---------------------------------------------------------------------------
    def checkpoint_coordinator(self, checkpoint_id: int, result: CompletableFuture) -> None:
        self.uncheckpointed[checkpoint_id] = {s: list(v) for s, v in self.assigned_since_checkpoint.items()}
        self.assigned_since_checkpoint = {}
        result.complete((tuple(self.unassigned), self._pending_assignments()))

    def _pending_assignments(self) -> tuple:
        return tuple(sorted((c, s, tuple(v)) for c, m in self.uncheckpointed.items() for s, v in m.items()))

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        for c in [c for c in self.uncheckpointed if c <= checkpoint_id]:
            del self.uncheckpointed[c]

    def subtask_reset(self, subtask: int, checkpoint_id: int) -> None:
        back: list[str] = []
        for c in sorted(self.uncheckpointed):
            if c > checkpoint_id:
                back += self.uncheckpointed[c].pop(subtask, [])
        back += self.assigned_since_checkpoint.pop(subtask, [])
        self.unassigned = back + self.unassigned

    def reset_to_checkpoint(self, checkpoint_id: int, checkpoint_data: Any) -> None:
        unassigned, pending = checkpoint_data if checkpoint_data is not None else ((), ())
        self.unassigned = list(unassigned)
        self.uncheckpointed = {}
        for c, s, splits in pending:
            self.uncheckpointed.setdefault(c, {})[s] = list(splits)
        self.assigned_since_checkpoint = {}


# ------------------------------------------------------------- holder-level harness (scenarios)


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

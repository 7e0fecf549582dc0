"""Protocol ``flink-2.3``: Flink's ``OperatorCoordinatorHolder`` and ``SubtaskGatewayImpl``.

What Flink ships since FLINK-26029 (1.16), flaws included: a gateway per subtask is marked when
the checkpoint is triggered, closed when the coordinator completes its checkpoint future (all or
none), buffers what is sent while closed per checkpoint in order, and reopens when that subtask's
``AcknowledgeCheckpointEvent`` arrives, or on checkpoint complete / abort, abort of triggering, or
reset. The coordinator checkpoint completes only when every event sent before the close is
acknowledged (FLINK-21996). Reproduces ``shared/vectors/flink_valve_traces.json``.

This holder is also the base of the other two protocols: :mod:`streamproof.impl.coordination.streamproof_protocol`
and :mod:`streamproof.impl.coordination.legacy_protocol` override only the steps where they differ. The valve bug zoo
patches methods in the class that defines them: keep each method in its class.
"""

from __future__ import annotations

from typing import Any, Callable

from streamproof.impl.coordination.api import (
    AcknowledgeCheckpointEvent, OperatorCoordinator, SubtaskAccess, SubtaskGateway,
)
from streamproof.impl.coordination.runtime import (
    EVENT_LOSS_ERROR_MESSAGE, NO_CHECKPOINT, BlockedEvent, CompletableFuture, FlinkException,
    FlinkRuntimeException, IllegalStateException, IncompleteFuturesTracker, MainThreadExecutor,
    _call_send_action, assert_no_exception, wait_for_all,
)

# ------------------------------------------------------------------------------------ gateway


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


# ------------------------------------------------------------------------------------- holder


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

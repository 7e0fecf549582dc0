"""Protocol ``legacy``: the 1.11-1.15 ``OperatorEventValve`` (FLINK-16986).

One valve for all subtasks, shut at the coordinator's future completion, reopened after the
barriers were injected at the sources. Right for sources, wrong for any other operator
(FLINK-26029's duplicate). Only the differences from :mod:`streamproof.impl.coordination.flink_protocol`: the gateways
send through the valve, the holder shuts and opens it, and ``AcknowledgeCheckpointEvent`` is
ignored (it did not exist).
"""

from __future__ import annotations

from typing import Any

from streamproof.impl.coordination.api import AcknowledgeCheckpointEvent, SubtaskAccess, SubtaskGateway
from streamproof.impl.coordination.flink_protocol import OperatorCoordinatorHolder
from streamproof.impl.coordination.runtime import (
    EVENT_LOSS_ERROR_MESSAGE, NO_CHECKPOINT, BlockedEvent, CompletableFuture, FlinkException,
    FlinkRuntimeException, IllegalStateException, IncompleteFuturesTracker, MainThreadExecutor,
    _call_send_action, assert_no_exception,
)


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

"""Protocol ``streamproof``: ``flink-2.3`` with the flaws the checker found fixed (docs/valve.md).

Only the differences from :mod:`streamproof.impl.coordination.flink_protocol`: a gateway asked to open for a checkpoint
it never saw does nothing (instead of throwing and skipping the other gateways); a failover aborts
the in-flight checkpoint on every gateway and fails the events buffered on a replaced gateway
(instead of leaving them in the unconfirmed set forever); a global reset fails buffered events
instead of releasing them to the old attempts; gateways close all or none, checked before any
closes; a checkpoint waits for every unacknowledged event sent before its close, not only those no
earlier checkpoint waited for.
"""

from __future__ import annotations

from typing import Any

from streamproof.impl.coordination.api import SubtaskAccess
from streamproof.impl.coordination.flink_protocol import OperatorCoordinatorHolder, SubtaskGatewayImpl
from streamproof.impl.coordination.runtime import CompletableFuture, FlinkException


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

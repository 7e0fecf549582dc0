"""Known-bug variants of the coordinator event valve. Each patches the ``streamproof`` protocol
(the one that holds every invariant) and is caught by the property named."""

from __future__ import annotations

from contextlib import contextmanager

from streamproof.impl.coordination import (
    FlinkException, OperatorCoordinatorHolder, StreamproofOperatorCoordinatorHolder, StreamproofSubtaskGateway,
    SubtaskGatewayImpl, _call_send_action, wait_for_all,
)
from streamproof.properties.bugzoo import variant
from streamproof.properties.timers.bugzoo import patched


@variant("no-wait-for-event-acks", "FLINK-21996", "valve.consistent-checkpoints",
         "The coordinator checkpoint completes as soon as the gateways are closed, without waiting for "
         "the acknowledgement of the events sent before the close: an event still in flight misses the "
         "subtask's snapshot though the coordinator's checkpoint counts it as sent (a split is lost).")
@contextmanager
def no_wait_for_event_acks():
    def complete_checkpoint_once_events_are_done(self, checkpoint_id, checkpoint_future, checkpoint_result):
        self.unconfirmed_events.get_current_incomplete_and_reset()
        checkpoint_future.complete(checkpoint_result)  # BUG: events before the close may still be in flight

    with patched(OperatorCoordinatorHolder, complete_checkpoint_once_events_are_done=complete_checkpoint_once_events_are_done):
        yield


@variant("valve-shut-after-future-completion", "FLINK-16986", "valve.consistent-checkpoints",
         "The gateways close only once the events sent before the checkpoint are acknowledged, not when "
         "the coordinator completes its checkpoint future: an event the coordinator sends in between "
         "(after its checkpoint) reaches the subtask before its snapshot.")
@contextmanager
def valve_shut_late():
    def close_gateways(self, checkpoint_id):
        gateways = list(self.subtask_gateway_map.values())
        return bool(gateways) and all(checkpoint_id in g.current_marked_checkpoint_ids for g in gateways)

    def complete_checkpoint_once_events_are_done(self, checkpoint_id, checkpoint_future, checkpoint_result):
        pending = self.unconfirmed_events.get_current_incomplete_and_reset()

        def shut_then_complete(_value, failure):
            if failure is not None:
                checkpoint_future.complete_exceptionally(FlinkException("events lost"))
                return
            for gateway in self.subtask_gateway_map.values():  # BUG: shut only now
                gateway.try_close_gateway(checkpoint_id)
            checkpoint_future.complete(checkpoint_result)

        wait_for_all(pending)._on_done(shut_then_complete)

    with patched(StreamproofOperatorCoordinatorHolder, close_gateways=close_gateways), \
            patched(OperatorCoordinatorHolder, complete_checkpoint_once_events_are_done=complete_checkpoint_once_events_are_done):
        yield


@variant("late-event-reaches-new-attempt", "FLINK-18071", "valve.exactly-once",
         "On a region failover the fresh gateway takes over the events buffered on the replaced one and "
         "sends them to the new attempt (a tempting fix for the stuck events of Flink 2.3): an event meant "
         "for the failed attempt reaches the restored one, which the coordinator will also send it again.")
@contextmanager
def late_event_reaches_new_attempt():
    original = StreamproofOperatorCoordinatorHolder.subtask_reset

    def subtask_reset(self, subtask, checkpoint_id):
        old = self.subtask_gateway_map.get(subtask)
        carried = [e for c in sorted(old.blocked_events_map) for e in old.blocked_events_map[c]] if old else []
        if old is not None:
            old.blocked_events_map.clear()
        original(self, subtask, checkpoint_id)
        fresh = self.subtask_gateway_map[subtask]
        for blocked in carried:  # BUG: re-targeted to the new attempt
            _call_send_action(fresh.subtask_access.create_event_send_action(blocked.event), blocked.future)

    with patched(StreamproofOperatorCoordinatorHolder, subtask_reset=subtask_reset):
        yield


@variant("gateways-closed-for-some-subtasks", "streamproof", "valve.consistent-checkpoints",
         "Closing stops after the first gateway: the other subtasks receive events sent after the "
         "coordinator's checkpoint before their own snapshot.")
@contextmanager
def some_gateways_closed():
    def close_gateways(self, checkpoint_id):
        for gateway in self.subtask_gateway_map.values():
            if gateway.try_close_gateway(checkpoint_id):
                return True  # BUG: the others stay open
        return False

    with patched(StreamproofOperatorCoordinatorHolder, close_gateways=close_gateways):
        yield


@variant("buffered-events-released-out-of-order", "streamproof", "valve.exactly-once",
         "A reopening gateway releases its buffered events last-in first-out: the subtask applies the "
         "coordinator's events in another order than they were sent.")
@contextmanager
def released_out_of_order():
    original = SubtaskGatewayImpl.open_gateway_and_unmark_checkpoint

    def open_gateway_and_unmark_checkpoint(self, checkpoint_id):
        for events in self.blocked_events_map.values():
            events.reverse()  # BUG: LIFO
        original(self, checkpoint_id)
        for events in self.blocked_events_map.values():
            events.reverse()

    with patched(StreamproofSubtaskGateway, open_gateway_and_unmark_checkpoint=open_gateway_and_unmark_checkpoint):
        yield

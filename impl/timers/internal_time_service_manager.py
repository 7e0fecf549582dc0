"""Flink's ``InternalTimeServiceManager``: the named timer services of one operator, advanced
together by watermarks (in the order of Java's ``HashMap``), snapshotted and restored together, and
flushed at the end of input by their termination actions (FLIP-269)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from streamproof.impl.state.java_hashmap import hash_map_order
from streamproof.impl.state.key_groups import KeyGroupRange
from streamproof.impl.timers.heap_priority_queue_set import KeyGroupOutOfRangeError
from streamproof.impl.timers.internal_timer import InternalTimersSnapshot
from streamproof.impl.timers.internal_timer_service import (
    TIE_ORDERS, FlushResult, InternalTimerService, KeyContext, Triggerable,
)
from streamproof.impl.timers.processing_time_service import (
    DEFAULT_FIRING_BUDGET, MAX_WATERMARK, ProcessingTimeService,
)
from streamproof.impl.timers.snapshots import start_snapshot
from streamproof.impl.timers.termination import TimerTerminationAction


# -- the manager ---------------------------------------------------------------------------
@dataclass
class InternalTimeServiceManager:
    """The named timer services of one keyed operator instance.

    ``services`` is kept in creation order, but whatever goes to every service (watermarks, the
    interruptible advance, the end-of-input flush, the termination-action override, the
    per-key-group snapshot) visits them in Flink's order: the iteration order of the
    ``java.util.HashMap<String, ...>`` Flink's ``InternalTimeServiceManagerImpl`` keeps them in
    (:func:`streamproof.impl.state.java_hashmap.hash_map_order` of the names in the order they entered
    that map: restored names when their state is restored, the others when first created).
    """

    key_context: KeyContext
    key_group_range: KeyGroupRange
    processing_time_service: ProcessingTimeService
    firing_budget: int = DEFAULT_FIRING_BUDGET
    services: dict[str, InternalTimerService] = field(default_factory=dict)
    _restored: dict[str, dict[int, InternalTimersSnapshot]] = field(default_factory=dict)
    # FLIP-269: restored termination actions of services not created yet (name -> timer -> action)
    _restored_actions: dict[str, dict] = field(default_factory=dict)
    # FLIP-269 per-operator override, given to every service (created later ones too)
    termination_action_override: TimerTerminationAction | None = None
    # The copy-on-write snapshot versions (impl.snapshots.SnapshotVersions), made on first use.
    snapshot_versions: object = field(default=None, repr=False, compare=False)
    # Names in the order they entered Flink's HashMap (restored ones at restore), and the cached
    # iteration order of the created services ((names seen, services seen) -> order).
    _registered: dict = field(default_factory=dict, repr=False, compare=False)
    _order: tuple = field(default=((), ()), repr=False, compare=False)
    # the order of equal-timestamp timers in every service (TIE_ORDERS; set before any is created)
    tie_order: str = "insertion"

    def set_tie_order(self, tie_order: str) -> None:
        """The order of equal-timestamp timers of the services created from now on: configuration,
        set before the first service is created (restored timers wait for their service)."""
        if tie_order not in TIE_ORDERS:
            raise ValueError(f"tie order must be one of {', '.join(TIE_ORDERS)}, got {tie_order!r}")
        if self.services and tie_order != self.tie_order:
            raise ValueError(f"tie order set to {tie_order!r} after timer services were created")
        self.tie_order = tie_order

    def _register_name(self, name: str) -> None:
        self._registered.setdefault(name, None)

    def services_in_flink_order(self) -> list[InternalTimerService]:
        """The created services in the iteration order of Flink's ``HashMap`` of services."""
        key = (len(self._registered), len(self.services))
        if self._order[0] != key:
            names = hash_map_order([*self._registered, *self.services])
            self._order = (key, [self.services[n] for n in names if n in self.services])
        return self._order[1]

    def get_internal_timer_service(self, name: str, triggerable: Triggerable) -> InternalTimerService:
        """The service called ``name``, created (and restored, then started) on first use."""
        service = self.services.get(name)
        if service is None:
            service = InternalTimerService(
                name, self.key_context, self.processing_time_service, self.key_group_range,
                firing_budget=self.firing_budget, tie_order=self.tie_order,
            )
            for key_group, snapshot in sorted(self._restored.pop(name, {}).items()):
                service.restore_timers_for_key_group(snapshot, key_group)
            actions = self._restored_actions.pop(name, None)
            if actions:
                service.restore_termination_actions(actions)
            if self.termination_action_override is not None:
                service.set_timer_termination_action(self.termination_action_override)
            self._register_name(name)
            self.services[name] = service
        service.start_timer_service(triggerable)
        return service

    def advance_watermark(self, time: int) -> None:
        # a service created by a callback during the advance gets the next watermark
        for service in list(self.services_in_flink_order()):
            service.advance_watermark(time)

    def try_advance_watermark(self, time: int, should_stop_advancing: Callable[[], bool]) -> bool:
        """Stops at the first interrupted service (in Flink's order); later services keep their
        old watermark."""
        for service in list(self.services_in_flink_order()):
            if not service.try_advance_watermark(time, should_stop_advancing):
                return False
        return True

    def get_reached_watermark(self) -> int:
        """The largest time up to which every service fired all its event-time timers (at most
        each service's watermark): what an interrupted advance may already emit (FLINK-40101)."""
        reached = MAX_WATERMARK
        for service in self.services.values():
            head = service.event_time_timers_queue.peek()
            at = service.current_watermark if head is None or head[0] > service.current_watermark else head[0] - 1
            reached = min(reached, at)
        return reached

    def snapshot_state_for_key_group(self, key_group: int) -> dict[str, InternalTimersSnapshot]:
        """Per service name, in Flink's order (what its serialization proxy writes: a restore
        registers the names in this order)."""
        return {s.name: s.snapshot_timers_for_key_group(key_group) for s in self.services_in_flink_order()}

    def snapshot_state(self) -> dict[int, dict[str, InternalTimersSnapshot]]:
        """Every local key group's timers, per service name."""
        return {kg: self.snapshot_state_for_key_group(kg) for kg in self.key_group_range}

    def start_snapshot(self, format_version: int = 2):
        """The synchronous part of a point-in-time checkpoint of every timer, O(1) in the number of
        timers (FLINK-9182): returns an :class:`streamproof.impl.timers.snapshots.TimerSnapshot` whose asynchronous
        part writes the timers as they are now."""
        return start_snapshot(self, format_version)

    def restore_state_for_key_group(self, key_group: int, per_service: dict[str, InternalTimersSnapshot]) -> None:
        """Keeps a key group's timers until their service is created (Flink restores lazily)."""
        if not self.key_group_range.contains(key_group):
            raise KeyGroupOutOfRangeError(key_group, self.key_group_range)
        for name, snapshot in per_service.items():
            self._register_name(name)  # Flink registers a restored service while restoring
            if name in self.services:
                self.services[name].restore_timers_for_key_group(snapshot, key_group)
            else:
                self._restored.setdefault(name, {})[key_group] = snapshot

    def restore_state(self, snapshot: dict[int, dict[str, InternalTimersSnapshot]]) -> None:
        """Restores the key groups of ``snapshot`` that are in the local range (rescaling)."""
        for key_group in self.key_group_range:
            if key_group in snapshot:
                self.restore_state_for_key_group(key_group, snapshot[key_group])

    def set_timer_termination_action(self, action: TimerTerminationAction | None) -> None:
        """The override of every service's processing-time timers (None removes it)."""
        self.termination_action_override = None if action is None else TimerTerminationAction(action)
        for service in self.services_in_flink_order():
            service.set_timer_termination_action(action)

    def flush_processing_time_timers(self, budget: int | None = None) -> list[tuple[str, "FlushResult"]]:
        """The end-of-input flush of every service, in Flink's order of services (a service
        created by a callback during the flush is flushed too, after the others). Returns
        ``[(name, FlushResult)]``."""
        results: list[tuple[str, FlushResult]] = []
        done: set[str] = set()
        while True:
            todo = [(s.name, s) for s in self.services_in_flink_order() if s.name not in done]
            if not todo:
                return results
            for name, service in todo:
                done.add(name)
                results.append((name, service.flush_processing_time_timers(budget)))

    def restore_termination_actions(self, actions: dict) -> None:
        """Installs restored termination actions (``(service name, timer) -> action``, as in
        ``RestoreResult.actions``); a service not created yet gets them when it is created."""
        per_service: dict[str, dict] = {}
        for (name, timer), action in actions.items():
            per_service.setdefault(name, {})[timer] = action
        for name, timers in per_service.items():
            if name in self.services:
                self.services[name].restore_termination_actions(timers)
            else:
                self._restored_actions.setdefault(name, {}).update(timers)

    def restored_service_names(self) -> list[str]:
        return list(self._restored)

    def num_event_time_timers(self) -> int:
        return sum(s.num_event_time_timers() for s in self.services.values())

    def num_processing_time_timers(self) -> int:
        return sum(s.num_processing_time_timers() for s in self.services.values())

"""The keyed timer service: Flink's ``InternalTimerServiceImpl`` and ``InternalTimeServiceManager``.

Layering as in Flink: a key-group-partitioned queue per time domain (:mod:`impl.queues`), one
:class:`InternalTimerService` per name, a :class:`InternalTimeServiceManager` holding the named
services of one operator, and a :class:`ProcessingTimeService` owning the physical timers
(:class:`ManualProcessingTimeService` is the simulated clock used everywhere in streamproof).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from itertools import count
from typing import Callable, Collection, Hashable, NamedTuple, Protocol

from impl.keygroups import INT64_MAX, INT64_MIN, Key, KeyGroupRange, assign_to_key_group
from impl.queues import KeyGroupedPriorityQueueSet, KeyGroupOutOfRangeError
from impl.termination import TimerTerminationAction

MIN_WATERMARK = INT64_MIN
MAX_WATERMARK = INT64_MAX
DEFAULT_FIRING_BUDGET = 1_000_000

__all__ = [
    "InternalTimer", "Triggerable", "KeyContext", "ProcessingTimeService", "ScheduledTimer",
    "ManualProcessingTimeService", "InternalTimerService", "InternalTimeServiceManager",
    "InternalTimersSnapshot", "TimerFiringBudgetExceeded", "NoCurrentKeyError", "KeyGroupOutOfRangeError",
    "MIN_WATERMARK", "MAX_WATERMARK",
]


class InternalTimer(NamedTuple):
    """A timer: ``(timestamp, key, namespace)``; equal timers are one timer."""

    timestamp: int
    key: Key
    namespace: Hashable


_new_timer = tuple.__new__  # InternalTimer without the NamedTuple constructor's overhead


class NoCurrentKeyError(ValueError):
    """A keyed timer operation with no key in the key context (Flink: NullPointerException)."""


class TimerFiringBudgetExceeded(RuntimeError):
    """One advance fired more timers than the budget: a callback keeps registering due timers."""


class Triggerable(Protocol):
    def on_event_time(self, timer: InternalTimer) -> None: ...

    def on_processing_time(self, timer: InternalTimer) -> None: ...


class KeyContext:
    """The current key of a keyed operator and its key group (computed once per key change)."""

    __slots__ = ("max_parallelism", "current_key", "current_key_group_index")

    def __init__(self, max_parallelism: int):
        self.max_parallelism = max_parallelism
        self.current_key: Key | None = None
        self.current_key_group_index = -1

    def set_current_key(self, key: Key) -> None:
        self.current_key_group_index = assign_to_key_group(key, self.max_parallelism)
        self.current_key = key

    def get_current_key(self) -> Key | None:
        return self.current_key

    def get_current_key_group_index(self) -> int:
        return self.current_key_group_index


# -- processing time ---------------------------------------------------------------------------
class ScheduledTimer:
    """A physical timer handle returned by :meth:`ProcessingTimeService.register_timer`."""

    __slots__ = ("timestamp", "callback", "_service", "pending")

    def __init__(self, timestamp: int, callback: Callable[[int], None], service: "ManualProcessingTimeService"):
        self.timestamp = timestamp
        self.callback = callback
        self._service = service
        self.pending = True

    def cancel(self) -> None:
        if self.pending:
            self.pending = False
            self._service._on_cancel(self)


class ProcessingTimeService(Protocol):
    def get_current_processing_time(self) -> int: ...

    def register_timer(self, timestamp: int, callback: Callable[[int], None]) -> ScheduledTimer: ...


class ManualProcessingTimeService:
    """A simulated processing-time clock with physical timers (Flink's TestProcessingTimeService).

    ``advance_to(t)`` sets the clock to ``t`` and then fires every pending physical timer with
    time <= t one by one in time order (equal times: registration order), including the ones
    registered while advancing. Listeners see every register and cancel (what traces record).
    """

    def __init__(self, start: int = MIN_WATERMARK, budget: int = DEFAULT_FIRING_BUDGET):
        self._now = start
        self._queue: list[tuple[int, int, ScheduledTimer]] = []
        self._seq = count()
        self._pending = 0
        self.budget = budget
        self.on_register: list[Callable[[int], None]] = []
        self.on_cancel: list[Callable[[int], None]] = []

    def get_current_processing_time(self) -> int:
        return self._now

    def register_timer(self, timestamp: int, callback: Callable[[int], None]) -> ScheduledTimer:
        timer = ScheduledTimer(timestamp, callback, self)
        heapq.heappush(self._queue, (timestamp, next(self._seq), timer))
        self._pending += 1
        for listener in self.on_register:
            listener(timestamp)
        return timer

    def _on_cancel(self, timer: ScheduledTimer) -> None:
        self._pending -= 1
        for listener in self.on_cancel:
            listener(timer.timestamp)

    def num_pending_timers(self) -> int:
        return self._pending

    def advance_to(self, time: int) -> None:
        self._now = time
        fired = 0
        queue = self._queue
        while queue and queue[0][0] <= time:
            _, _, timer = heapq.heappop(queue)
            if not timer.pending:
                continue
            timer.pending = False
            self._pending -= 1
            fired += 1
            if fired > self.budget:
                raise TimerFiringBudgetExceeded(
                    f"processing-time service fired more than {self.budget} physical timers while "
                    f"advancing to {time}: a callback keeps registering due timers"
                )
            timer.callback(timer.timestamp)


# -- snapshots -----------------------------------------------------------------------------
@dataclass(frozen=True)
class InternalTimersSnapshot:
    """The timers of one service in one key group (Flink's ``InternalTimersSnapshot``).

    As in Flink, :meth:`InternalTimerService.snapshot_timers_for_key_group` fills it with *live
    views* of the key group's sets: it is point-in-time only if read (serialized or
    :meth:`materialize`-d) before the service changes. Checkpoints use copy-on-write snapshots.
    """

    event_time_timers: Collection[InternalTimer] = ()
    processing_time_timers: Collection[InternalTimer] = ()

    def materialize(self) -> "InternalTimersSnapshot":
        """A frozen copy of what the views show now."""
        return InternalTimersSnapshot(tuple(self.event_time_timers), tuple(self.processing_time_timers))


# -- the timer service ---------------------------------------------------------------------
class InternalTimerService:
    """Event- and processing-time timers of one named service, partitioned by key group."""

    def __init__(
        self,
        name: str,
        key_context: KeyContext,
        processing_time_service: ProcessingTimeService,
        key_group_range: KeyGroupRange,
        triggerable: Triggerable | None = None,
        firing_budget: int = DEFAULT_FIRING_BUDGET,
    ):
        self.name = name
        self.key_context = key_context
        self.processing_time_service = processing_time_service
        self.key_group_range = key_group_range
        self.triggerable = triggerable
        self.firing_budget = firing_budget
        max_parallelism = key_context.max_parallelism

        def key_group_of(timer: InternalTimer) -> int:
            return assign_to_key_group(timer[1], max_parallelism)

        self.event_time_timers_queue: KeyGroupedPriorityQueueSet[InternalTimer] = KeyGroupedPriorityQueueSet(
            key_group_range, key_group_of
        )
        self.processing_time_timers_queue: KeyGroupedPriorityQueueSet[InternalTimer] = KeyGroupedPriorityQueueSet(
            key_group_range, key_group_of
        )
        self.current_watermark = MIN_WATERMARK
        self.next_timer: ScheduledTimer | None = None
        self.started = False

    # -- life cycle --------------------------------------------------------------------------
    def start_timer_service(self, triggerable: Triggerable) -> None:
        """Binds the callback target and schedules the physical timer for a restored head."""
        if self.started and triggerable is not self.triggerable:
            raise ValueError(f"timer service '{self.name}' is already started with another triggerable")
        self.triggerable = triggerable
        if not self.started:
            self.started = True
            head = self.processing_time_timers_queue.peek()
            if head is not None:
                self.next_timer = self.processing_time_service.register_timer(head[0], self.on_processing_time)

    # -- registration ------------------------------------------------------------------------
    def current_processing_time(self) -> int:
        return self.processing_time_service.get_current_processing_time()

    def _current_timer(self, namespace: Hashable, time: int) -> InternalTimer:
        key = self.key_context.current_key
        if key is None:
            raise NoCurrentKeyError("no current key: set a key before registering or deleting a timer")
        return _new_timer(InternalTimer, (time, key, namespace))

    def register_processing_time_timer(self, namespace: Hashable, time: int) -> None:
        # Only a strictly earlier head moves the single physical timer. add() is True iff the timer
        # is strictly earlier than the old head, or the queue was empty: then, as Flink compares
        # against Long.MAX_VALUE, a timer at MAX_WATERMARK schedules nothing.
        if (
            self.processing_time_timers_queue.add(
                self._current_timer(namespace, time), self.key_context.current_key_group_index
            )
            and time < MAX_WATERMARK
        ):
            if self.next_timer is not None:
                self.next_timer.cancel()
            self.next_timer = self.processing_time_service.register_timer(time, self.on_processing_time)

    def register_event_time_timer(self, namespace: Hashable, time: int) -> None:
        context = self.key_context
        key = context.current_key
        if key is None:
            raise NoCurrentKeyError("no current key: set a key before registering or deleting a timer")
        self.event_time_timers_queue.add(_new_timer(InternalTimer, (time, key, namespace)),
                                         context.current_key_group_index)

    def delete_processing_time_timer(self, namespace: Hashable, time: int) -> None:
        # Deletes never reschedule the physical timer: a deleted head causes a spurious wake-up.
        self.processing_time_timers_queue.remove(
            self._current_timer(namespace, time), self.key_context.get_current_key_group_index()
        )

    def delete_event_time_timer(self, namespace: Hashable, time: int) -> None:
        self.event_time_timers_queue.remove(
            self._current_timer(namespace, time), self.key_context.get_current_key_group_index()
        )

    # -- firing ------------------------------------------------------------------------------
    def _over_budget(self, what: str, time: int) -> TimerFiringBudgetExceeded:
        return TimerFiringBudgetExceeded(
            f"timer service '{self.name}' fired more than {self.firing_budget} timers in one "
            f"{what}({time}) call: a callback keeps registering due timers"
        )

    def _fire_due(self, queue, time: int, callback, call: str,
                  should_stop: Callable[[], bool] = lambda: False) -> tuple[bool, InternalTimer | None]:
        """Fires the queue's timers <= ``time`` in order; returns (completed, the head left)."""
        key_context = self.key_context
        fired = 0
        while (timer := queue.peek()) is not None and timer[0] <= time:
            key_context.set_current_key(timer[1])  # before poll: FLINK-26063
            queue.poll(key_context.current_key_group_index)
            callback(timer)
            fired += 1
            # Checked after at least one timer, to guarantee progress and prevent starvation.
            if should_stop():
                return False, queue.peek()
            if fired >= self.firing_budget and (head := queue.peek()) is not None and head[0] <= time:
                raise self._over_budget(call, time)
        return True, timer

    def on_processing_time(self, time: int) -> None:
        """Physical timer callback: fires every processing-time timer <= ``time``."""
        # Null out the physical timer in case a callback registers a processing-time timer.
        self.next_timer = None
        _, head = self._fire_due(self.processing_time_timers_queue, time,
                                 self.triggerable.on_processing_time, "on_processing_time")
        if head is not None and self.next_timer is None:
            self.next_timer = self.processing_time_service.register_timer(head[0], self.on_processing_time)

    def advance_watermark(self, time: int) -> None:
        """Sets the watermark, then fires every event-time timer <= ``time``."""
        self.try_advance_watermark(time, _never_stop)

    def try_advance_watermark(self, time: int, should_stop_advancing: Callable[[], bool]) -> bool:
        """Like :meth:`advance_watermark`, but asks ``should_stop_advancing`` after each fired timer.

        Returns False when stopped (FLIP-443); the watermark is ``time`` either way.
        """
        self.current_watermark = time
        completed, _ = self._fire_due(self.event_time_timers_queue, time, self.triggerable.on_event_time,
                                      "advance_watermark", should_stop_advancing)
        return completed

    def termination_action_of(self, timer: InternalTimer) -> TimerTerminationAction:
        """What happens to a pending processing-time timer at end of input (FLIP-269).

        CANCEL (what Flink does today) until actions can be registered; copy-on-write snapshots
        write it per processing-time timer (format 2) and read it while the timer is pending.
        """
        return TimerTerminationAction.CANCEL

    # -- inspection --------------------------------------------------------------------------
    def num_event_time_timers(self) -> int:
        return self.event_time_timers_queue.size()

    def num_processing_time_timers(self) -> int:
        return self.processing_time_timers_queue.size()

    # -- snapshot / restore ------------------------------------------------------------------
    def snapshot_timers_for_key_group(self, key_group: int) -> InternalTimersSnapshot:
        """This key group's timers as live views (Flink's ``snapshotTimersForKeyGroup``)."""
        return InternalTimersSnapshot(
            self.event_time_timers_queue.get_subset_for_key_group(key_group),
            self.processing_time_timers_queue.get_subset_for_key_group(key_group),
        )

    def restore_timers_for_key_group(self, snapshot: InternalTimersSnapshot, key_group: int) -> None:
        """Adds a key group's timers; rejects a key group or timer outside the local range."""
        if not self.key_group_range.contains(key_group):
            raise KeyGroupOutOfRangeError(key_group, self.key_group_range)
        max_parallelism = self.key_context.max_parallelism
        for queue, timers in (
            (self.event_time_timers_queue, snapshot.event_time_timers),
            (self.processing_time_timers_queue, snapshot.processing_time_timers),
        ):
            for timer in list(timers):
                actual = assign_to_key_group(timer.key, max_parallelism)
                if actual != key_group:
                    raise ValueError(f"restored timer {timer} belongs to key group {actual}, not {key_group}")
                queue.add(_new_timer(InternalTimer, tuple(timer)), key_group)


def _never_stop() -> bool:
    return False


_SNAPSHOTS: dict = {}  # impl.snapshots.start_snapshot, once imported


# -- the manager ---------------------------------------------------------------------------
@dataclass
class InternalTimeServiceManager:
    """The named timer services of one keyed operator instance.

    Services are kept in creation order; every watermark goes to all of them in that order
    (Flink iterates a HashMap: some fixed order; see docs/decisions.md).
    """

    key_context: KeyContext
    key_group_range: KeyGroupRange
    processing_time_service: ProcessingTimeService
    firing_budget: int = DEFAULT_FIRING_BUDGET
    services: dict[str, InternalTimerService] = field(default_factory=dict)
    _restored: dict[str, dict[int, InternalTimersSnapshot]] = field(default_factory=dict)
    # The copy-on-write snapshot versions (impl.snapshots.SnapshotVersions), made on first use.
    snapshot_versions: object = field(default=None, repr=False, compare=False)

    def get_internal_timer_service(self, name: str, triggerable: Triggerable) -> InternalTimerService:
        """The service called ``name``, created (and restored, then started) on first use."""
        service = self.services.get(name)
        if service is None:
            service = InternalTimerService(
                name, self.key_context, self.processing_time_service, self.key_group_range,
                firing_budget=self.firing_budget,
            )
            for key_group, snapshot in sorted(self._restored.pop(name, {}).items()):
                service.restore_timers_for_key_group(snapshot, key_group)
            self.services[name] = service
        service.start_timer_service(triggerable)
        return service

    def advance_watermark(self, time: int) -> None:
        # a service created by a callback during the advance gets the next watermark
        for service in list(self.services.values()):
            service.advance_watermark(time)

    def try_advance_watermark(self, time: int, should_stop_advancing: Callable[[], bool]) -> bool:
        """Stops at the first interrupted service; later services keep their old watermark."""
        for service in list(self.services.values()):
            if not service.try_advance_watermark(time, should_stop_advancing):
                return False
        return True

    def snapshot_state_for_key_group(self, key_group: int) -> dict[str, InternalTimersSnapshot]:
        return {name: s.snapshot_timers_for_key_group(key_group) for name, s in self.services.items()}

    def snapshot_state(self) -> dict[int, dict[str, InternalTimersSnapshot]]:
        """Every local key group's timers, per service name."""
        return {kg: self.snapshot_state_for_key_group(kg) for kg in self.key_group_range}

    def start_snapshot(self, format_version: int = 2):
        """The synchronous part of a point-in-time checkpoint of every timer, O(1) in the number of
        timers (FLINK-9182): returns an :class:`impl.snapshots.TimerSnapshot` whose asynchronous
        part writes the timers as they are now."""
        start = _SNAPSHOTS.get("start")
        if start is None:  # impl.snapshots builds on this module: bound on first use
            from impl.snapshots import start_snapshot as start
            _SNAPSHOTS["start"] = start
        return start(self, format_version)

    def restore_state_for_key_group(self, key_group: int, per_service: dict[str, InternalTimersSnapshot]) -> None:
        """Keeps a key group's timers until their service is created (Flink restores lazily)."""
        if not self.key_group_range.contains(key_group):
            raise KeyGroupOutOfRangeError(key_group, self.key_group_range)
        for name, snapshot in per_service.items():
            if name in self.services:
                self.services[name].restore_timers_for_key_group(snapshot, key_group)
            else:
                self._restored.setdefault(name, {})[key_group] = snapshot

    def restore_state(self, snapshot: dict[int, dict[str, InternalTimersSnapshot]]) -> None:
        """Restores the key groups of ``snapshot`` that are in the local range (rescaling)."""
        for key_group in self.key_group_range:
            if key_group in snapshot:
                self.restore_state_for_key_group(key_group, snapshot[key_group])

    def restored_service_names(self) -> list[str]:
        return list(self._restored)

    def num_event_time_timers(self) -> int:
        return sum(s.num_event_time_timers() for s in self.services.values())

    def num_processing_time_timers(self) -> int:
        return sum(s.num_processing_time_timers() for s in self.services.values())

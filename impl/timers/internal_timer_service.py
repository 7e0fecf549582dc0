"""The keyed timer service: Flink's ``InternalTimerServiceImpl``.

One :class:`InternalTimerService` per name: a key-group-partitioned queue per time domain
(:mod:`streamproof.impl.timers.heap_priority_queue_set`; a :class:`TieOrderedQueueSet` when timers of
equal timestamp leave in another order Flink allows), its physical timer on a
:class:`ProcessingTimeService` (:mod:`streamproof.impl.timers.processing_time_service`), FLIP-443's
interruptible watermark advance and FLIP-269's end-of-input flush of processing-time timers. The
named services of one operator are held by
:mod:`streamproof.impl.timers.internal_time_service_manager`, which also starts copy-on-write
snapshots (:mod:`streamproof.impl.timers.snapshots`, which never imports this module). The timer
values (:class:`InternalTimer`, :class:`InternalTimersSnapshot`) live in
:mod:`streamproof.impl.timers.internal_timer`.

Size: one class, Flink's ``InternalTimerServiceImpl``, kept whole so it reads beside Flink's source.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from heapq import heappop
from typing import Callable, Hashable, Protocol

from streamproof.impl.state.key_context import KeyContext
from streamproof.impl.state.key_groups import INT64_MAX, INT64_MIN, KeyGroupRange, assign_to_key_group
from streamproof.impl.timers.heap_priority_queue_set import (
    KeyGroupedPriorityQueueSet, KeyGroupOutOfRangeError,
)
from streamproof.impl.timers.heap_priority_queue_set import KeyGroupedPriorityQueueSet as _PlainQueueSet
from streamproof.impl.timers.internal_timer import InternalTimer, InternalTimersSnapshot
from streamproof.impl.timers.processing_time_service import (
    DEFAULT_FIRING_BUDGET, MAX_WATERMARK, MIN_WATERMARK, ManualProcessingTimeService, ProcessingTimeService, ScheduledTimer,
    TimerFiringBudgetExceeded,
)
from streamproof.impl.timers.termination import TimerTerminationAction

# The order of timers with equal timestamps, which Flink leaves open (docs/decisions.md):
# registration order, its reverse, or by key group then registration order (what a restore gives).
TIE_ORDERS = ("insertion", "reversed", "key-group")

__all__ = [
    "InternalTimer", "Triggerable", "KeyContext",
    "InternalTimerService",
    "InternalTimersSnapshot", "FlushResult", "TimerFiringBudgetExceeded", "NoCurrentKeyError", "TimestampOutOfRangeError", "KeyGroupOutOfRangeError",
    "MIN_WATERMARK", "MAX_WATERMARK", "TIE_ORDERS", "TieOrderedQueueSet",
]


_new_timer = tuple.__new__  # InternalTimer without the NamedTuple constructor's overhead


class NoCurrentKeyError(ValueError):
    """A keyed timer operation with no key in the key context (Flink: NullPointerException)."""


_NO_CURRENT_KEY = "no current key: set a key before registering or deleting a timer"


class TimestampOutOfRangeError(ValueError):
    """A timer registered outside Java's long range (Flink's timestamps are longs: a PyFlink
    operator's arithmetic past 2^63 - 1 fails when the timestamp crosses into Java)."""


def _long(time: int) -> int:
    if not INT64_MIN <= time <= INT64_MAX:
        raise TimestampOutOfRangeError(f"timer timestamp {time} is outside Java's long range "
                                       f"[{INT64_MIN}, {INT64_MAX}] (an overflow in the operator?)")
    return time


def _never_stop() -> bool:
    return False


class Triggerable(Protocol):
    def on_event_time(self, timer: InternalTimer) -> None: ...

    def on_processing_time(self, timer: InternalTimer) -> None: ...


# -- the timer service ---------------------------------------------------------------------
class TieOrderedQueueSet(KeyGroupedPriorityQueueSet):
    """A timer queue whose timers of equal timestamp leave in another order Flink allows than
    insertion order: ``reversed`` (the last registered first) or ``key-group`` (by key group,
    then registration order, as timers restored key group by key group come back).

    ``add`` returns True iff the timer is strictly earlier than the old head (or the queue was
    empty), as insertion order gives: what the processing-time service needs to know (Flink
    reschedules its physical timer only for a strictly earlier one), whatever the tie order."""

    def __init__(self, key_group_range: KeyGroupRange, key_group_of: Callable, tie_order: str):
        if tie_order not in TIE_ORDERS[1:]:
            raise ValueError(f"tie order must be one of {', '.join(TIE_ORDERS[1:])}, got {tie_order!r}")
        super().__init__(key_group_range, key_group_of)
        self.tie_order = tie_order

    def add(self, element, key_group: int | None = None) -> bool:
        if key_group is None:
            key_group = self._key_group_of(element)
        index = key_group - self._first
        if index < 0 or index >= len(self._maps):
            raise KeyGroupOutOfRangeError(key_group, self._range)
        subset = self._maps[index]
        if element in subset:
            return False
        head = self._peek_entry()
        seq = next(self._seq)
        # the heap's second item (unique per add: lazy deletion compares it with the map's value)
        tie = -seq if self.tie_order == "reversed" else (index << 64) + seq
        subset[element] = tie
        self._size += 1
        heapq.heappush(self._heap, (element[0], tie, element, index))
        return head is None or element[0] < head[0]


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
        tie_order: str = "insertion",
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

        if tie_order == "insertion":
            queues = [KeyGroupedPriorityQueueSet(key_group_range, key_group_of) for _ in range(2)]
        else:
            queues = [TieOrderedQueueSet(key_group_range, key_group_of, tie_order) for _ in range(2)]
        self.event_time_timers_queue: KeyGroupedPriorityQueueSet[InternalTimer] = queues[0]
        self.processing_time_timers_queue: KeyGroupedPriorityQueueSet[InternalTimer] = queues[1]
        self.current_watermark = MIN_WATERMARK
        self.next_timer: ScheduledTimer | None = None
        self.started = False
        # FLIP-269: the registered action of every pending processing-time timer whose action is
        # not CANCEL (absent = CANCEL), and the per-service override (None = no override).
        self.termination_actions: dict[InternalTimer, TimerTerminationAction] = {}
        self.termination_action_override: TimerTerminationAction | None = None
        # Sticky: set once any timer or the override is not CANCEL; until then snapshots write
        # CANCEL without asking (termination_action_source).
        self.uses_termination_actions = False
        # The end-of-input flush (flush_processing_time_timers): RUNNING, FLUSHING, FLUSHED.
        self.processing_time_state = "RUNNING"
        self._flush_clock: int | None = None  # what current_processing_time() reads while flushing
        self.dropped_after_flush = 0

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
        if self._flush_clock is not None:
            return self._flush_clock
        return self.processing_time_service.get_current_processing_time()

    def _current_timer(self, namespace: Hashable, time: int) -> InternalTimer:
        key = self.key_context.current_key
        if key is None:
            raise NoCurrentKeyError(_NO_CURRENT_KEY)
        return _new_timer(InternalTimer, (_long(time), key, namespace))

    def register_processing_time_timer(self, namespace: Hashable, time: int,
                                       action: TimerTerminationAction | None = None) -> None:
        """Registers a processing-time timer with its termination action (None: CANCEL).

        Registering a pending timer again with another action replaces its action (the last
        registration wins; docs/decisions.md); a snapshot running meanwhile keeps the old one.
        After the end-of-input flush the timer is dropped and counted (nothing fires after it).
        """
        # Only a strictly earlier head moves the single physical timer. add() is True iff the timer
        # is strictly earlier than the old head, or the queue was empty: then, as Flink compares
        # against Long.MAX_VALUE, a timer at MAX_WATERMARK schedules nothing.
        if action is None and not self.termination_actions and self.processing_time_state == "RUNNING":
            # Every pending timer's action is CANCEL: registering a pending one again changes nothing.
            context = self.key_context
            key = context.current_key
            if key is None:
                raise NoCurrentKeyError(_NO_CURRENT_KEY)
            if not INT64_MIN <= time <= INT64_MAX:
                _long(time)  # raises
            queue = self.processing_time_timers_queue
            if (queue.add(_new_timer(InternalTimer, (time, key, namespace)), context.current_key_group_index)
                    and time < MAX_WATERMARK):
                self._schedule_physical_timer(time)
            return
        if self.processing_time_state == "FLUSHED":
            self._current_timer(namespace, time)  # same key check as before
            self.dropped_after_flush += 1
            return
        timer = self._current_timer(namespace, time)
        key_group = self.key_context.current_key_group_index
        queue = self.processing_time_timers_queue
        action = TimerTerminationAction.CANCEL if action is None else TimerTerminationAction(action)
        if action != TimerTerminationAction.CANCEL:
            self._use_termination_actions()
        if queue.contains(timer, key_group):
            self._set_termination_action(timer, key_group, action)
            return
        # the action is in place before add(): a running snapshot records the timer with it
        if action != TimerTerminationAction.CANCEL:
            self.termination_actions[timer] = action
        if (
            queue.add(timer, key_group)
            and time < MAX_WATERMARK
            and self.processing_time_state == "RUNNING"  # no physical timer once flushing
        ):
            self._schedule_physical_timer(time)

    def _schedule_physical_timer(self, time: int) -> None:
        """Moves the single physical timer to ``time`` (the new head's)."""
        if self.next_timer is not None:
            self.next_timer.cancel()
        self.next_timer = self.processing_time_service.register_timer(time, self.on_processing_time)

    def register_event_time_timer(self, namespace: Hashable, time: int) -> None:
        context = self.key_context
        key = context.current_key
        if key is None:
            raise NoCurrentKeyError(_NO_CURRENT_KEY)
        if not INT64_MIN <= time <= INT64_MAX:
            _long(time)  # raises
        queue = self.event_time_timers_queue
        queue.add(_new_timer(InternalTimer, (time, key, namespace)), context.current_key_group_index)

    def delete_processing_time_timer(self, namespace: Hashable, time: int) -> None:
        # Deletes never reschedule the physical timer: a deleted head causes a spurious wake-up.
        timer = self._current_timer(namespace, time)
        self.processing_time_timers_queue.remove(timer, self.key_context.get_current_key_group_index())
        if self.termination_actions:  # after remove(): a running snapshot reads the action first
            self.termination_actions.pop(timer, None)

    # -- termination actions (FLIP-269) --------------------------------------------------------
    def _use_termination_actions(self) -> None:
        """From now on snapshots ask :meth:`termination_action_of`. Until now every timer was
        CANCEL, so what a running snapshot layer recorded with its default value stays true."""
        if not self.uses_termination_actions:
            self.uses_termination_actions = True
            layer = self.processing_time_timers_queue.mutation_router
            if layer is not None and getattr(layer, "active", False):
                layer.value_of = self.termination_action_of

    def _set_termination_action(self, timer: InternalTimer, key_group: int,
                                action: TimerTerminationAction) -> None:
        """Changes the registered action of a pending timer, recorded for running snapshots."""
        if self.termination_actions.get(timer, TimerTerminationAction.CANCEL) == action:
            return
        layer = self.processing_time_timers_queue.mutation_router
        if layer is not None and getattr(layer, "active", False):
            with layer.versions.lock.write():
                before = self.termination_action_of(timer)
                self._store_action(timer, action)
                layer.record(key_group, timer, before, self.termination_action_of(timer))
        else:
            self._store_action(timer, action)

    def _store_action(self, timer: InternalTimer, action: TimerTerminationAction) -> None:
        if action == TimerTerminationAction.CANCEL:
            self.termination_actions.pop(timer, None)
        else:
            self.termination_actions[timer] = action

    def set_timer_termination_action(self, action: TimerTerminationAction | None) -> None:
        """Per-service override: wins over every registered action; None removes it.

        The override is configuration (set it before processing): a snapshot running when it
        changes may write the new effective action for timers it did not see change.
        """
        action = None if action is None else TimerTerminationAction(action)
        if action is not None and action != TimerTerminationAction.CANCEL:
            self._use_termination_actions()
        self.termination_action_override = action

    def flush_processing_time_timers(self, budget: int | None = None) -> "FlushResult":
        """End of input with drain (FLIP-269, DESIGN.md §3.4).

        1. Timers already due (timestamp <= the current processing time: in Flink their callback
           is in the mailbox, or about to be) fire as they would have, whatever their action.
        2. Every other pending processing-time timer, the ones behind the head included, is
           handled in timestamp order by its termination action: CANCEL drops it; TRIGGER fires
           it with ``current_processing_time()`` reading MAX_WATERMARK; WAIT moves the simulated
           clock to its time (never back) and fires it reading that time.
        3. Timers registered meanwhile with a timestamp <= the *horizon* (the largest pending
           timestamp when step 2 began) are handled the same way; later ones are dropped and
           counted. More than ``budget`` fired timers raise :class:`TimerFiringBudgetExceeded`.

        Afterwards the service is FLUSHED: nothing fires any more and registering a
        processing-time timer only counts it as dropped (nothing fires after ``finish()``).
        """
        if self.processing_time_state != "RUNNING":
            raise RuntimeError(f"timer service '{self.name}' is {self.processing_time_state}: flushed once only")
        budget = self.firing_budget if budget is None else budget
        result = FlushResult()
        queue = self.processing_time_timers_queue
        key_context = self.key_context
        clock = self.processing_time_service.get_current_processing_time()
        self.processing_time_state = "FLUSHING"  # from here on no physical timer is registered
        if self.next_timer is not None:
            self.next_timer.cancel()
            self.next_timer = None
        try:
            while (timer := queue.peek()) is not None and timer[0] <= clock:
                key_context.set_current_key(timer[1])
                queue.poll(key_context.current_key_group_index)
                self._check_flush_budget(result, budget)
                result.due.append(timer)
                self._fire_processing_timer(timer)
            horizon = self._flush_horizon()
            result.horizon = horizon
            while (timer := self._next_to_flush()) is not None:
                key_context.set_current_key(timer[1])
                action = self.termination_action_of(timer)
                queue.remove(timer, key_context.current_key_group_index)
                self.termination_actions.pop(timer, None)
                if horizon is None or timer[0] > horizon:
                    result.dropped_after_horizon += 1
                    continue
                if action == TimerTerminationAction.CANCEL:
                    result.cancelled.append(timer)
                    continue
                self._check_flush_budget(result, budget)
                if action == TimerTerminationAction.WAIT:
                    clock = self._wait_clock(clock, timer[0])
                    advance = getattr(self.processing_time_service, "set_time_without_firing", None)
                    if advance is not None:
                        advance(clock)
                    self._flush_clock = clock
                else:
                    self._flush_clock = self._trigger_clock(clock)
                result.fired.append((timer, action))
                self.triggerable.on_processing_time(timer)
                self._flush_clock = None
        finally:
            self._flush_clock = None
            self.processing_time_state = "FLUSHED"
        return result

    # The flush's rules, one method each (the bug zoo replaces them).

    def _next_to_flush(self) -> InternalTimer | None:
        """The pending timer the flush handles next: the head (timestamp order)."""
        return self.processing_time_timers_queue.peek()
    def _flush_horizon(self) -> int | None:
        """The largest pending timestamp when the flush by actions begins (None: none pending)."""
        return max((t[0] for t in self.processing_time_timers_queue), default=None)

    def _trigger_clock(self, clock: int) -> int:
        """What ``current_processing_time()`` reads while a TRIGGER timer fires in the flush."""
        return MAX_WATERMARK

    def _wait_clock(self, clock: int, timestamp: int) -> int:
        """The clock while a WAIT timer fires in the flush: its time, never going back."""
        return max(clock, timestamp)

    def _check_flush_budget(self, result: "FlushResult", budget: int) -> None:
        if len(result.due) + len(result.fired) >= budget:
            raise TimerFiringBudgetExceeded(
                f"timer service '{self.name}' fired more than {budget} timers while flushing "
                f"its processing-time timers at end of input: a callback keeps registering timers"
            )

    def restore_termination_actions(self, actions: dict) -> None:
        """Installs restored actions (``timer -> action``) of pending processing-time timers."""
        for timer, action in actions.items():
            timer = _new_timer(InternalTimer, tuple(timer))
            action = TimerTerminationAction(action)
            if action == TimerTerminationAction.CANCEL:
                continue
            key_group = assign_to_key_group(timer[1], self.key_context.max_parallelism)
            if not self.processing_time_timers_queue.contains(timer, key_group):
                raise ValueError(f"restored action {action.name} for {timer}, which is not a pending timer")
            self._use_termination_actions()
            self._set_termination_action(timer, key_group, action)

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
                  should_stop: Callable[[], bool] = _never_stop) -> tuple[bool, InternalTimer | None]:
        """Fires the queue's timers <= ``time`` in order; returns (completed, the head left).

        Called by the physical timer (``on_processing_time``) of a simulated clock with nothing
        watching it: when the head left would get a physical timer that the clock's
        ``fire_inline`` says fires next, that physical timer's firing goes on here, as a new
        call for Flink (with its own ``time`` and budget)."""
        key_context = self.key_context
        set_current_key = key_context.set_current_key
        stoppable = should_stop is not _never_stop
        budget = self.firing_budget
        fired = 0
        # This service's own _fire_processing_timer is done inline (one call less per timer).
        fire_processing = (getattr(callback, "__func__", None) is _FIRE_PROCESSING_TIMER
                           and callback.__self__ is self)
        clock = self.processing_time_service
        inline = clock.fire_inline if fire_processing and type(clock) is ManualProcessingTimeService else None
        # While the queue is `direct` and has no stale heap entry, peek() is heap[0]'s timer and
        # poll(key_group) of a key group equal to the head's is heappop + forgetting it in its
        # key group's map: done inline. Anything else (a routed queue, lazy deletion, a head
        # filed under another key group) goes through peek() / poll() as Flink's loop.
        exact = type(queue) is _PlainQueueSet
        while True:
            # looked up each time: a callback may start a snapshot (routes poll) or compact the heap
            if exact and queue._direct and (heap := queue._heap) and not queue._stale:
                entry = heap[0]
                timer = entry[2]
                if timer[0] > time:
                    if inline is None or self.next_timer is not None or not inline(timer[0]):
                        break
                    time, fired = timer[0], 0
                    continue
                set_current_key(timer[1])  # before poll: FLINK-26063
                key_group = key_context.current_key_group_index
                if key_group - queue._first == entry[3]:
                    heappop(heap)
                    if queue._maps[entry[3]].pop(timer, None) is not None:
                        queue._size -= 1
                else:
                    queue.poll(key_group)
            else:
                if (timer := queue.peek()) is None:
                    break
                if timer[0] > time:
                    if inline is None or self.next_timer is not None or not inline(timer[0]):
                        break
                    time, fired = timer[0], 0
                    continue
                set_current_key(timer[1])  # before poll: FLINK-26063
                queue.poll(key_context.current_key_group_index)
            if fire_processing:  # _fire_processing_timer(timer), line for line
                if self.termination_actions:
                    self.termination_actions.pop(timer, None)
                self.triggerable.on_processing_time(timer)
            else:
                callback(timer)
            fired += 1
            # Checked after at least one timer, to guarantee progress and prevent starvation.
            if stoppable and should_stop():
                return False, queue.peek()
            if fired >= budget and (head := queue.peek()) is not None and head[0] <= time:
                raise self._over_budget(call, time)
        return True, timer

    def on_processing_time(self, time: int) -> None:
        """Physical timer callback: fires every processing-time timer <= ``time``."""
        # Null out the physical timer in case a callback registers a processing-time timer.
        self.next_timer = None
        _, head = self._fire_due(self.processing_time_timers_queue, time,
                                 self._fire_processing_timer, "on_processing_time")
        if head is not None and self.next_timer is None:
            self.next_timer = self.processing_time_service.register_timer(head[0], self.on_processing_time)

    def _fire_processing_timer(self, timer: InternalTimer) -> None:
        # the fired timer's action goes (after poll, which a running snapshot records with it)
        if self.termination_actions:
            self.termination_actions.pop(timer, None)
        self.triggerable.on_processing_time(timer)

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
        """What happens to a pending processing-time timer at end of input (FLIP-269): the
        override if set, else the action it was registered with (CANCEL by default). Copy-on-write
        snapshots write it per processing-time timer (format 2) and read it while it is pending.
        """
        override = self.termination_action_override
        if override is not None:
            return override
        return self.termination_actions.get(timer, TimerTerminationAction.CANCEL)

    def termination_action_source(self) -> Callable[[InternalTimer], TimerTerminationAction] | None:
        """What a copy-on-write snapshot asks for the action of each processing-time timer: the
        bound :meth:`termination_action_of`, or None while it answers CANCEL for every timer (the
        value of an event-time timer too, so the snapshot layer needs no call per timer)."""
        action_of = self.termination_action_of
        if (getattr(action_of, "__func__", None) is InternalTimerService.termination_action_of
                and not self.uses_termination_actions):  # set once any action is not CANCEL
            return None
        return action_of

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


_FIRE_PROCESSING_TIMER = InternalTimerService._fire_processing_timer  # what _fire_due inlines


@dataclass
class FlushResult:
    """What :meth:`InternalTimerService.flush_processing_time_timers` did: the timers already due
    (fired as usual), the horizon (None: no timer was pending after them), the fired
    ``(timer, action)`` in order, the cancelled timers and the number
    of timers registered during the flush after the horizon (dropped)."""

    horizon: int | None = None
    due: list = field(default_factory=list)  # timers already due at flush start, fired as usual
    fired: list = field(default_factory=list)
    cancelled: list = field(default_factory=list)
    dropped_after_horizon: int = 0

"""Known-bug variants of the timer service (caught by ``timers.differential``)."""

from __future__ import annotations

import heapq
from contextlib import contextmanager
from itertools import count

import streamproof.impl.timers.internal_timer_service as timers
from streamproof.impl.timers.heap_priority_queue_set import KeyGroupedPriorityQueueSet
from streamproof.impl.timers.internal_time_service_manager import InternalTimeServiceManager
from streamproof.impl.timers.internal_timer_service import InternalTimerService
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService
from streamproof.properties.bugzoo import variant

PROPERTY = "timers.differential"


@contextmanager
def patched(owner, **replacements):
    """Replaces attributes of ``owner`` for the duration of the block."""
    saved = {name: owner.__dict__[name] for name in replacements}
    try:
        for name, value in replacements.items():
            setattr(owner, name, value)
        yield
    finally:
        for name, value in saved.items():
            setattr(owner, name, value)


@variant("key-context-set-after-poll", "FLINK-26063", PROPERTY,
         "The head is polled before the key context is set to its key, so the removal is "
         "attributed to the previous key's key group: the timer stays pending though it fired.")
@contextmanager
def key_context_after_poll():
    def _fire_due(self, queue, time, callback, call, should_stop=lambda: False):
        fired = 0
        while (timer := queue.peek()) is not None and timer[0] <= time:
            queue.poll(self.key_context.current_key_group_index)  # BUG: polled before the key is set
            self.key_context.set_current_key(timer[1])
            callback(timer)
            fired += 1
            if should_stop():
                return False, queue.peek()
            if fired >= self.firing_budget and (head := queue.peek()) is not None and head[0] <= time:
                raise self._over_budget(call, time)
        return True, timer

    with patched(InternalTimerService, _fire_due=_fire_due):
        yield


@variant("equal-timestamp-reregisters-physical", "streamproof", PROPERTY,
         "A processing-time timer equal to the head cancels and re-registers the physical timer "
         "(Flink moves it only for a strictly earlier head).")
@contextmanager
def equal_reregisters():
    def register_processing_time_timer(self, namespace, time, action=None):  # action: ignored here
        queue = self.processing_time_timers_queue
        old_head = queue.peek()
        timer = self._current_timer(namespace, time)
        kg = self.key_context.get_current_key_group_index()
        if not queue.contains(timer, kg):
            queue.add(timer, kg)
            next_trigger_time = old_head[0] if old_head is not None else timers.MAX_WATERMARK
            if time < next_trigger_time or (old_head is not None and time == old_head[0]):  # BUG
                if self.next_timer is not None:
                    self.next_timer.cancel()
                self.next_timer = self.processing_time_service.register_timer(time, self.on_processing_time)

    with patched(InternalTimerService, register_processing_time_timer=register_processing_time_timer):
        yield


@variant("delete-cancels-physical-timer", "streamproof", PROPERTY,
         "Deleting the head processing-time timer cancels the physical timer without "
         "registering one for the next head: the timers behind it never fire.")
@contextmanager
def delete_cancels_physical():
    original = InternalTimerService.delete_processing_time_timer

    def delete_processing_time_timer(self, namespace, time):
        head = self.processing_time_timers_queue.peek()
        original(self, namespace, time)
        if head is not None and head == self._current_timer(namespace, time) and self.next_timer is not None:
            self.next_timer.cancel()  # BUG: and no physical timer for the new head
            self.next_timer = None

    with patched(InternalTimerService, delete_processing_time_timer=delete_processing_time_timer):
        yield


@variant("register-at-watermark-fires-at-once", "streamproof", PROPERTY,
         "An event-time timer registered at or below the current watermark fires immediately "
         "instead of waiting for the next watermark advance.")
@contextmanager
def register_below_watermark_fires():
    original = InternalTimerService.register_event_time_timer

    def register_event_time_timer(self, namespace, time):
        if time <= self.current_watermark and self.triggerable is not None:
            self.triggerable.on_event_time(self._current_timer(namespace, time))  # BUG
            return
        original(self, namespace, time)

    with patched(InternalTimerService, register_event_time_timer=register_event_time_timer):
        yield


class ListPriorityQueue(KeyGroupedPriorityQueueSet):
    """A heap *list* of timers: duplicates are kept, so a timer registered twice fires twice."""

    def __init__(self, key_group_range, key_group_of):
        super().__init__(key_group_range, key_group_of)
        self._entries: list = []
        self._ids = count()

    def add(self, element, key_group=None):
        head = self.peek()
        self._local_index(self._key_group_of(element) if key_group is None else key_group)
        heapq.heappush(self._entries, (element[0], next(self._ids), element))  # BUG: no dedup
        return head is None or element[0] < head[0]

    def remove(self, element, key_group=None):
        for i, entry in enumerate(self._entries):
            if entry[2] == element:
                self._entries.pop(i)
                heapq.heapify(self._entries)
                return True
        return False

    def contains(self, element, key_group=None):
        return any(entry[2] == element for entry in self._entries)

    def peek(self):
        return self._entries[0][2] if self._entries else None

    def poll(self, key_group=None):
        return heapq.heappop(self._entries)[2] if self._entries else None

    def size(self):
        return len(self._entries)

    def __iter__(self):
        return iter({entry[2]: None for entry in self._entries})

    def get_subset_for_key_group(self, key_group):
        return [e[2] for e in self._entries if self._key_group_of(e[2]) == key_group]


@variant("timer-list-not-set", "streamproof", PROPERTY,
         "Timers kept in a list instead of a set: registering the same timer twice makes it "
         "fire twice.")
@contextmanager
def list_not_set():
    with patched(timers, KeyGroupedPriorityQueueSet=ListPriorityQueue):
        yield


@variant("restore-accepts-foreign-key-groups", "streamproof", PROPERTY,
         "Restore takes every key group of the snapshot, not only those in the new instance's "
         "range, filing foreign timers under a local key group: after rescaling they fire in two "
         "instances.")
@contextmanager
def restore_foreign_key_groups():
    def restore_state(self, snapshot):
        for key_group, per_service in snapshot.items():  # BUG: no intersection with the range
            local = key_group if self.key_group_range.contains(key_group) else self.key_group_range.start_key_group
            for name, timers_snapshot in per_service.items():
                target = self._restored.setdefault(name, {}).setdefault(local, [[], []])
                target[0].extend(timers_snapshot.event_time_timers)
                target[1].extend(timers_snapshot.processing_time_timers)
        self._restored = {
            name: {kg: timers.InternalTimersSnapshot(tuple(ev), tuple(pr)) for kg, (ev, pr) in groups.items()}
            for name, groups in self._restored.items()
        }

    def restore_timers_for_key_group(self, snapshot, key_group):
        for queue, restored in ((self.event_time_timers_queue, snapshot.event_time_timers),
                                (self.processing_time_timers_queue, snapshot.processing_time_timers)):
            for timer in list(restored):
                queue.add(timer, key_group)  # BUG: no check that the timer belongs here

    with patched(InternalTimeServiceManager, restore_state=restore_state), \
            patched(InternalTimerService, restore_timers_for_key_group=restore_timers_for_key_group):
        yield


@variant("physical-timer-kept-while-firing", "Flink InternalTimerServiceImpl.onProcessingTime", "timers.differential",
         "The physical-timer callback keeps the fired physical timer as the service's next timer while "
         "it fires (Flink nulls it first, 'in case a callback registers a processing-time timer'): a "
         "callback that registers a timer behind a tied one schedules nothing, and after the firing "
         "the stale timer stops a new one being scheduled, so the timer never fires (issue 31: "
         "equal processing-time timestamps with callbacks that register timers).")
@contextmanager
def physical_timer_kept_while_firing():
    def on_processing_time(self, time):
        fired_physical = self.next_timer  # BUG: not nulled before the callbacks run
        _, head = self._fire_due(self.processing_time_timers_queue, time,
                                 self._fire_processing_timer, "on_processing_time")
        if self.next_timer is fired_physical:
            self.next_timer = fired_physical if head is not None else None
            return
        if head is not None and self.next_timer is None:
            self.next_timer = self.processing_time_service.register_timer(head[0], self.on_processing_time)

    with patched(InternalTimerService, on_processing_time=on_processing_time):
        yield


@variant("inline-firing-jumps-the-clock-queue", "streamproof", PROPERTY,
         "The clock fires a service's next head inline whenever it is due, without looking at the "
         "physical timers already pending: a head due no earlier than another service's pending "
         "physical timer fires before it (the watched clock fires them in time order).")
@contextmanager
def inline_firing_jumps_the_queue():
    def fire_inline(self, timestamp):
        if self._target is None or timestamp > self._target or self.on_register:
            return False
        self._fired += 1  # BUG: no look at self._queue's head
        if self._fired > self.budget:
            raise self._over_budget()
        self.inline_fired += 1
        return True

    with patched(ManualProcessingTimeService, fire_inline=fire_inline):
        yield

"""Key-group-partitioned priority-queue set: Flink's ``HeapPriorityQueueSet`` in Python.

Set semantics (adding a present element or removing an absent one changes nothing), one subset
per key group (what a checkpoint writes per key group), and O(log n) add / remove / poll.

Elements are tuples whose first item is the priority (a timer's timestamp). The heap holds
``(priority, sequence, element, key_group_index)`` entries; a removal only forgets the element in
its key group's map and the stale heap entry is skipped when it surfaces (lazy deletion, compacted
when stale entries outnumber live ones). Elements of equal priority leave in insertion order,
which is one of the orders Flink allows (it promises none). While no removal has left a stale
entry behind (the common case: timers only registered and fired), the heap's first entry is the
head without looking it up in its map.

While a copy-on-write snapshot runs (:mod:`streamproof.impl.timers.snapshots`), ``add`` / ``remove`` / ``poll`` are
routed through its versioned layer: :meth:`route_mutations` shadows the three methods with the
layer's on this instance, :meth:`unroute_mutations` removes the shadows. When no snapshot runs the
hot path is exactly the unversioned one (FLINK-9182: "physical deletion is immediate when no
snapshot runs").
"""

from __future__ import annotations

import heapq
from heapq import heappop, heappush
from itertools import count
from typing import Callable, Generic, Iterator, KeysView, TypeVar

from streamproof.impl.state.key_groups import KeyGroupRange

E = TypeVar("E", bound=tuple)


class KeyGroupOutOfRangeError(ValueError):
    """An element's key group is not in the local key-group range (Flink: IllegalArgumentException)."""

    def __init__(self, key_group: int, key_group_range: KeyGroupRange):
        super().__init__(
            f"Key group {key_group} is not in {key_group_range}. Unless you're directly using low level "
            "state access APIs, this is most likely caused by non-deterministic shuffle key "
            "(hashCode and equals implementation)."
        )
        self.key_group = key_group


class KeyGroupedPriorityQueueSet(Generic[E]):
    """A priority-queue set partitioned by key group, ordered by ``element[0]``."""

    _COMPACT_MIN = 64

    def __init__(self, key_group_range: KeyGroupRange, key_group_of: Callable[[E], int]):
        self._range = key_group_range
        self._first = key_group_range.start_key_group
        self._key_group_of = key_group_of
        self._maps: list[dict[E, int]] = [{} for _ in range(key_group_range.get_number_of_key_groups())]
        self._heap: list[tuple] = []
        self._seq = count()
        self._size = 0
        # At least the number of stale entries in the heap (0: the heap's first entry is live).
        self._stale = 0
        self._direct = type(self) is KeyGroupedPriorityQueueSet  # see `direct`

    @property
    def direct(self) -> bool:
        """True iff this queue is exactly this class and no snapshot routes its mutations: its
        ``add`` / ``poll`` are this class's own, so a caller may do their work inline on the
        internals (the timer service's hot paths do). A subclass, or a routed queue, is only ever
        changed through its ``add`` / ``remove`` / ``poll`` attributes."""
        return self._direct

    # -- key groups -------------------------------------------------------------------------
    @property
    def key_group_range(self) -> KeyGroupRange:
        return self._range

    def _local_index(self, key_group: int) -> int:
        index = key_group - self._first
        if not 0 <= index < len(self._maps):
            raise KeyGroupOutOfRangeError(key_group, self._range)
        return index

    def get_subset_for_key_group(self, key_group: int) -> KeysView[E]:
        """A live view of one key group's elements, as Flink's ``getSubsetForKeyGroup``."""
        return self._maps[self._local_index(key_group)].keys()

    def key_group_of(self, element: E) -> int:
        return self._key_group_of(element)

    # -- copy-on-write routing (impl.snapshots) --------------------------------------------
    _ROUTED = ("add", "remove", "poll")

    def route_mutations(self, router) -> None:
        """Sends add / remove / poll of this queue to ``router`` (which has the three methods and
        calls this class's own to change the queue) until :meth:`unroute_mutations`."""
        self.__dict__.update(add=router.add, remove=router.remove, poll=router.poll, _router=router,
                             _direct=False)

    def unroute_mutations(self) -> None:
        for name in (*self._ROUTED, "_router"):
            self.__dict__.pop(name, None)
        self._direct = type(self) is KeyGroupedPriorityQueueSet

    @property
    def mutation_router(self):
        """The versioned layer the mutations go through, or None."""
        return self.__dict__.get("_router")

    # -- set operations ---------------------------------------------------------------------
    def add(self, element: E, key_group: int | None = None) -> bool:
        """Adds ``element`` unless present. True iff it became the new head (Flink's contract)."""
        if key_group is None:
            key_group = self._key_group_of(element)
        index = key_group - self._first
        maps = self._maps
        if not 0 <= index < len(maps):
            raise KeyGroupOutOfRangeError(key_group, self._range)
        seq = next(self._seq)
        if maps[index].setdefault(element, seq) is not seq:
            return False  # present (its sequence stays; a skipped number orders nothing differently)
        self._size += 1
        entry = (element[0], seq, element, index)
        heap = self._heap
        heappush(heap, entry)
        # The new entry has the largest sequence, so it surfaces as the live head iff every other
        # live element has a strictly greater priority: exactly "element[0] < old head's".
        if self._stale:
            return self._peek_entry() is entry
        return heap[0] is entry

    def remove(self, element: E, key_group: int | None = None) -> bool:
        """Removes ``element`` if present. True iff it was present."""
        if key_group is None:
            key_group = self._key_group_of(element)
        subset = self._maps[self._local_index(key_group)]
        if subset.pop(element, None) is None:
            return False
        self._size -= 1
        self._stale += 1
        if len(self._heap) > max(self._COMPACT_MIN, 2 * self._size):
            self._compact()
        return True

    def contains(self, element: E, key_group: int | None = None) -> bool:
        if key_group is None:
            key_group = self._key_group_of(element)
        return element in self._maps[self._local_index(key_group)]

    def peek(self) -> E | None:
        heap = self._heap
        if heap and not self._stale:
            return heap[0][2]
        entry = self._peek_entry()
        return None if entry is None else entry[2]

    def poll(self, key_group: int | None = None) -> E | None:
        """Removes and returns the head.

        With ``key_group`` the removal is attributed to that key group, as Flink's
        changelog-backed queues attribute it to the current key context (FLINK-26063): the
        caller must set the key context to the head's key *before* polling.
        """
        heap = self._heap
        if heap and not self._stale:
            entry = heappop(heap)
        else:
            entry = self._peek_entry()
            if entry is None:
                return None
            heappop(heap)
        element, index = entry[2], entry[3]
        if key_group is not None and key_group - self._first != index:
            # another key group's map (FLINK-26063): its element's heap entry, if any, goes stale
            index = self._local_index(key_group)
            if self._maps[index].pop(element, None) is not None:
                self._size -= 1
                self._stale += 1
            return element
        if self._maps[index].pop(element, None) is not None:
            self._size -= 1
        return element

    def size(self) -> int:
        return self._size

    __len__ = size

    def is_empty(self) -> bool:
        return self._size == 0

    def __iter__(self) -> Iterator[E]:
        for subset in self._maps:
            yield from subset

    # -- internals --------------------------------------------------------------------------
    def _peek_entry(self) -> tuple | None:
        heap, maps = self._heap, self._maps
        while heap:
            entry = heap[0]
            if not self._stale or maps[entry[3]].get(entry[2]) == entry[1]:
                return entry
            heappop(heap)  # stale: removed (and maybe re-added with a newer sequence)
            self._stale -= 1
        self._stale = 0  # an empty heap has no stale entry (the count may have been too high)
        return None

    def _compact(self) -> None:
        maps = self._maps
        self._heap = [e for e in self._heap if maps[e[3]].get(e[2]) == e[1]]
        heapq.heapify(self._heap)
        self._stale = 0

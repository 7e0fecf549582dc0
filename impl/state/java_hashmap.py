"""The iteration order of a ``java.util.HashMap<String, V>``: the order in which Flink's
``InternalTimeServiceManagerImpl`` visits its named timer services (its ``timerServices`` field is
a ``HashMap``; ``advanceWatermark``, ``tryAdvanceWatermark`` and the snapshot serialization proxy
iterate ``timerServices.values()`` / ``entrySet()``).

OpenJDK's ``HashMap`` (default capacity 16, load factor 0.75), keys put and never removed:
  * a key's bucket is ``spread(h) & (capacity - 1)`` with ``spread(h) = h ^ (h >>> 16)`` and
    ``h = String.hashCode()``;
  * a new key is appended to its bucket's list; iteration walks the buckets in index order and
    each list from its head, so within a bucket the order is insertion order;
  * the table doubles when the size exceeds ``0.75 * capacity`` (13th key: 32, 25th: 64, ...), and
    also when a bucket reaches 9 keys while the capacity is below 64 (``treeifyBin`` resizes
    instead of treeifying); a resize splits each bucket into two, keeping relative order, so the
    rule "(bucket at the current capacity, insertion order)" stays exact.

Not reproduced: a bucket with 9 or more keys at capacity 64 or more becomes a red-black tree,
whose iteration order is not insertion order. That needs at least 9 service names colliding in
their low 6 hash bits: out of reach for the handful of services an operator has; such a bucket
keeps insertion order here.
"""

from __future__ import annotations

from typing import Iterable

from streamproof.impl.state.key_groups import java_hash_code

DEFAULT_INITIAL_CAPACITY = 16
LOAD_FACTOR = 0.75
TREEIFY_THRESHOLD = 8        # a bucket holding more than this many keys is treeified ...
MIN_TREEIFY_CAPACITY = 64    # ... or, below this capacity, the table is resized instead

__all__ = ["spread_hash", "hash_map_capacity", "hash_map_order"]


def spread_hash(name: str) -> int:
    """``HashMap.hash(name)`` as an unsigned 32-bit value: ``h ^ (h >>> 16)``."""
    h = java_hash_code(name) & 0xFFFFFFFF
    return h ^ (h >> 16)


def _table(names: list[str]) -> int:
    capacity = DEFAULT_INITIAL_CAPACITY
    spread = [spread_hash(n) for n in names]
    for size in range(1, len(names) + 1):
        mask = capacity - 1
        bucket = spread[size - 1] & mask
        in_bucket = sum(1 for s in spread[:size] if s & mask == bucket)
        if in_bucket > TREEIFY_THRESHOLD and capacity < MIN_TREEIFY_CAPACITY:
            capacity *= 2  # treeifyBin -> resize()
        if size > capacity * LOAD_FACTOR:
            capacity *= 2
    return capacity


def hash_map_capacity(names: Iterable[str]) -> int:
    """The table length of a ``HashMap`` after ``names`` were put in this order."""
    return _table(list(dict.fromkeys(names)))


def hash_map_order(names: Iterable[str]) -> list[str]:
    """The iteration order of a ``HashMap`` whose keys ``names`` were put in this order (a name
    put again keeps its first place, as ``put`` of a present key does)."""
    names = list(dict.fromkeys(names))
    mask = _table(names) - 1
    return [name for _, _, name in sorted((spread_hash(n) & mask, i, n) for i, n in enumerate(names))]

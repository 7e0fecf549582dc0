"""A timer snapshot whose file is written when first read (issue 30).

The simulated task takes a checkpoint's synchronous and asynchronous parts in one mailbox step, and
most of the files it wrote were never read: a restore reads the latest completed checkpoint's only.
:func:`snapshot_deferred` takes the synchronous part as :func:`~streamproof.impl.timers.snapshots.
snapshot_at_once` does (a new state version) and copies each queue's timers per key group (and the
termination action of each processing-time timer) instead of writing them;
:meth:`DeferredTimerFile.read` writes, from that copy, the bytes ``snapshot_at_once`` would have
written at that moment, with the same :class:`~streamproof.impl.timers.snapshots.TimerSnapshot`
writer. Timers changed after the snapshot do not reach it: the copy is the point in time.

In Flink the asynchronous part writes while the task goes on
(``org.apache.flink.runtime.state.heap.HeapPriorityQueueSnapshotRestoreWrapper`` copies the queue's
array for it); here the copy is taken the same way and the writing waits for a reader.

Left out: a snapshot started while a copy-on-write snapshot of the same manager runs is written at
once (:func:`~streamproof.impl.timers.snapshots.start_snapshot`), as before.
"""

from __future__ import annotations

from streamproof.impl.timers.snapshot_format import CURRENT_FORMAT_VERSION
from streamproof.impl.timers.snapshots import (
    SnapshotVersions, TimerSnapshot, TimeServiceManager, VersionedTimerQueue, start_snapshot, versions_of,
)


class FrozenTimerQueue:
    """A timer queue's elements per key group, in its order, as they were when copied: the two
    reads a snapshot's asynchronous part makes of a queue."""

    __slots__ = ("_subsets",)

    def __init__(self, queue) -> None:
        first = queue.key_group_range.start_key_group
        self._subsets = {first + index: list(subset) for index, subset in enumerate(queue._maps) if subset}

    def get_subset_for_key_group(self, key_group: int) -> list:
        return self._subsets.get(key_group, [])

    def is_empty(self) -> bool:
        return not self._subsets

    def elements(self):
        return (element for subset in self._subsets.values() for element in subset)


class DeferredTimerFile:
    """The file of one timer snapshot, written on the first :meth:`read` (then kept)."""

    __slots__ = ("_data", "_snapshot")

    def __init__(self, snapshot: TimerSnapshot | None = None, data: bytes | None = None) -> None:
        self._snapshot, self._data = snapshot, data

    def read(self) -> bytes:
        if self._data is None:
            self._data = self._snapshot.finish()
            self._snapshot = None
        return self._data


def snapshot_deferred(manager: TimeServiceManager, format_version: int = CURRENT_FORMAT_VERSION) -> DeferredTimerFile:
    """A snapshot of ``manager``'s timers now, written when read: the bytes
    ``snapshot_at_once(manager, format_version)`` returns at this moment."""
    if format_version not in (1, 2):
        raise ValueError(f"unknown snapshot format {format_version} (known: 1, 2)")
    versions = versions_of(manager)
    if versions.running:
        return DeferredTimerFile(data=start_snapshot(manager, format_version).finish())
    with versions.lock.write():  # the version snapshot_at_once takes (and releases at once)
        versions.state_version += 1
        version = versions.state_version
    own = SnapshotVersions()  # what the deferred writer runs under: this snapshot alone
    own.state_version = version
    own.running.append(version)
    layers = []
    for name, service in manager.services.items():
        processing = FrozenTimerQueue(service.processing_time_timers_queue)
        action_of = service.termination_action_source()
        if action_of is not None:  # the actions as they are now
            action_of = {timer: action_of(timer) for timer in processing.elements()}.__getitem__
        layers.append((name, VersionedTimerQueue(FrozenTimerQueue(service.event_time_timers_queue), own, None),
                       VersionedTimerQueue(processing, own, action_of)))
    restored = {name: dict(groups) for name, groups in manager._restored.items()} if manager._restored else {}
    return DeferredTimerFile(TimerSnapshot(manager, own, version, layers, restored, format_version))

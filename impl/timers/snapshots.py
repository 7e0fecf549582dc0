"""Copy-on-write timer snapshots: FLINK-9182's design, corrected (DESIGN.md §3.3, docs/snapshots.md).

The seed's design, kept:
  * a *state version* and the set of *running snapshot versions* per
    :class:`~streamproof.impl.timers.internal_time_service_manager.InternalTimeServiceManager`
    (:class:`SnapshotVersions`), guarded by a read/write lock (:class:`ReadWriteLock`);
  * the synchronous part of a snapshot bumps the state version, records it as running and notes
    which services exist: O(1) in the number of timers (:func:`start_snapshot`);
  * the asynchronous part writes, key group by key group, exactly the timers live at its version;
  * a deleted timer a running snapshot still needs is kept as a tombstone (deferred physical
    deletion); when no snapshot runs, deletion is immediate and nothing is versioned at all.

The seed's design, corrected: one create/delete version pair per timer cannot describe a timer
deleted and registered again while snapshots run (either the older snapshot loses it or a newer
one sees it resurrected). Here a timer changed while snapshots run has a *history*: the
transitions ``(version, value)`` it went through, ``value`` None when absent, else its payload
(the termination action of a processing-time timer). A snapshot at version ``s`` sees the last
transition with version ``< s``; a timer without history is as it is live. When a snapshot ends,
each history keeps only what the still-running snapshots need, and when none runs every history
is dropped and the queues are unrouted: memory returns to the live set.

Where it lives: the timer service's queues stay as they are for ordering and firing. While any
snapshot runs, each captured queue routes ``add`` / ``remove`` / ``poll`` through a
:class:`VersionedTimerQueue`, which records the transition under the write lock and then changes
the queue. The asynchronous part copies one key group's live set and history under the read lock
and filters outside it. It runs on a background thread in production
(:meth:`TimerSnapshot.run_in_background`) and step by step under the deterministic scheduler in
tests (:meth:`TimerSnapshot.run_async_step`).

Dependencies: :mod:`streamproof.impl.timers.internal_time_service_manager` imports this module (the
manager's ``start_snapshot``), never the reverse, and this module imports neither it nor
:mod:`streamproof.impl.timers.internal_timer_service`; a snapshot reads a manager and its services
through what :class:`TimeServiceManager` and ``InternalTimerService.termination_action_source``
name.

Size: one design whose parts (versions, routed queues, writer, restore) keep one invariant: what version ``s`` sees.
"""

from __future__ import annotations

import threading
from concurrent.futures import Executor, Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Protocol

from streamproof.impl.state.key_groups import KeyGroupRange
from streamproof.impl.timers.heap_priority_queue_set import KeyGroupOutOfRangeError
from streamproof.impl.timers.internal_timer import InternalTimersSnapshot
from streamproof.impl.timers.snapshot_format import (
    CURRENT_FORMAT_VERSION, SnapshotFormatError, SnapshotWriter, TimerSnapshotContents, decode_snapshot,
)
from streamproof.impl.timers.termination import TimerTerminationAction

BASE_VERSION = -1  # the transition "as it was before the history began", seen by every snapshot
DEFAULT_VALUE = TimerTerminationAction.CANCEL  # payload of event-time timers and of services without actions


__all__ = [
    "ReadWriteLock", "SnapshotVersions", "VersionedTimerQueue", "TimerSnapshot", "RestoreResult",
    "start_snapshot", "snapshot_at_once", "restore_from_snapshots", "versions_of", "SnapshotFormatError",
]


class TimeServiceManager(Protocol):
    """What a snapshot reads and calls of an ``streamproof.impl.timers.internal_time_service_manager.InternalTimeServiceManager``."""

    key_context: Any  # its max_parallelism
    key_group_range: KeyGroupRange
    services: dict  # name -> InternalTimerService, in creation order
    snapshot_versions: Any  # SnapshotVersions, made by versions_of on first use
    _restored: dict  # name -> {key group: InternalTimersSnapshot} of services not created yet

    def restore_state_for_key_group(self, key_group: int, per_service: dict) -> None: ...

    def restore_termination_actions(self, actions: dict) -> None: ...


# -- the lock ------------------------------------------------------------------------------
class ReadWriteLock:
    """A readers-writer lock (the first readers-writers solution).

    Readers are the asynchronous parts copying a key group (several snapshots may copy at once);
    writers are the task thread's mutations while snapshots run, starting a snapshot and
    compacting after one ends. The write side is one ``threading.Lock`` (cheap on the hot path);
    the first reader in takes it for all readers and the last one out gives it back.
    """

    def __init__(self) -> None:
        self._write = threading.Lock()
        self._readers_mutex = threading.Lock()
        self._readers = 0

    def write(self) -> threading.Lock:
        """``with lock.write(): ...``"""
        return self._write

    def acquire_read(self) -> None:
        with self._readers_mutex:
            self._readers += 1
            if self._readers == 1:
                self._write.acquire()

    def release_read(self) -> None:
        with self._readers_mutex:
            self._readers -= 1
            if self._readers == 0:
                self._write.release()

    @contextmanager
    def read(self) -> Iterator[None]:
        self.acquire_read()
        try:
            yield
        finally:
            self.release_read()


# -- versions ------------------------------------------------------------------------------
def visible(history: tuple, version: int):
    """The value a snapshot at ``version`` sees: the last transition with a smaller version."""
    for transition_version, value in reversed(history):
        if transition_version < version:
            return value
    return None


class SnapshotVersions:
    """The seed's ``stateTableVersion`` and ``snapshotVersions`` of one manager, and its lock.

    ``state_version`` is the version of every change made now; ``running`` the versions of the
    snapshots not yet finished (ascending); ``layers`` the versioned queues routed while any runs.
    """

    def __init__(self) -> None:
        self.state_version = 0
        self.running: list[int] = []
        self.lock = ReadWriteLock()
        self.layers: list[VersionedTimerQueue] = []

    def begin(self, services: list) -> tuple[int, list]:
        """Synchronous part: a new version, recorded as running; routes the queues of ``services``
        (pairs ``(name, InternalTimerService)``) through versioned layers. O(number of services).
        Returns the version and ``[(name, event-time layer, processing-time layer)]``."""
        with self.lock.write():
            self.state_version += 1
            version = self.state_version
            self.running.append(version)
            layers = [(name, self._route(service.event_time_timers_queue, None),
                       self._route(service.processing_time_timers_queue, service.termination_action_source()))
                      for name, service in services]
            return version, layers

    def _route(self, queue, value_of: Callable | None) -> "VersionedTimerQueue":
        layer = queue.mutation_router
        if layer is None or layer.versions is not self or not layer.active:
            layer = VersionedTimerQueue(queue, self, value_of)
            queue.route_mutations(layer)
            self.layers.append(layer)
        return layer

    def end(self, version: int) -> None:
        """A snapshot finished or was cancelled: forget what only it needed (any thread)."""
        with self.lock.write():
            self.running.remove(version)
            if not self.running:
                for layer in self.layers:
                    layer.deactivate()
                self.layers = []
                return
            work = [(layer, key_group) for layer in self.layers for key_group in list(layer.history)]
        for layer, key_group in work:  # one key group at a time: the task thread waits for one only
            with self.lock.write():
                layer.compact(key_group, tuple(self.running))

    def leftovers(self) -> dict:
        """What versioning holds now; all zero when no snapshot runs."""
        with self.lock.write():
            return {
                "running": len(self.running),
                "routed_queues": len(self.layers),
                "history_entries": sum(layer.history_size() for layer in self.layers),
            }


def versions_of(manager: TimeServiceManager) -> SnapshotVersions:
    versions = manager.snapshot_versions
    if versions is None:
        versions = manager.snapshot_versions = SnapshotVersions()
    return versions


class VersionedTimerQueue:
    """The copy-on-write layer of one timer queue while snapshots run.

    ``history[key_group][timer]`` is a tuple of transitions ``(version, value)``, ascending; its
    first is ``(BASE_VERSION, value before the history began)`` and its last value is the timer's
    live value. Invariant: for every running snapshot ``s`` and timer ``t``, the set at ``s`` holds
    ``t`` with value ``visible(history[t], s)`` if ``t`` has a history, else iff ``t`` is live.
    """

    def __init__(self, queue, versions: SnapshotVersions, value_of: Callable | None):
        self.queue = queue
        self.versions = versions
        self.value_of = value_of or _default_value  # present timer -> its payload (never None)
        self.history: dict[int, dict] = {}
        self.active = True

    # -- routed mutations (task thread) --------------------------------------------------------
    def add(self, element, key_group: int | None = None) -> bool:
        queue, cls = self.queue, type(self.queue)
        with self.versions.lock.write():
            if not self.active:
                return cls.add(queue, element, key_group)
            if key_group is None:
                key_group = queue.key_group_of(element)
            present = queue.contains(element, key_group)
            head = cls.add(queue, element, key_group)
            if not present and queue.contains(element, key_group):
                self.record(key_group, element, None, self.value_of(element))
            return head

    def remove(self, element, key_group: int | None = None) -> bool:
        queue, cls = self.queue, type(self.queue)
        with self.versions.lock.write():
            if not self.active:
                return cls.remove(queue, element, key_group)
            if key_group is None:
                key_group = queue.key_group_of(element)
            before = self.value_of(element) if queue.contains(element, key_group) else None
            removed = cls.remove(queue, element, key_group)
            if before is not None and not queue.contains(element, key_group):
                self.record(key_group, element, before, None)
            return removed

    def poll(self, key_group: int | None = None):
        queue, cls = self.queue, type(self.queue)
        with self.versions.lock.write():
            element = queue.peek()
            if not self.active or element is None:
                return cls.poll(queue, key_group)
            # the removal happens in the key group the caller names (FLINK-26063: the key context)
            target = queue.key_group_of(element) if key_group is None else key_group
            before = self.value_of(element) if _contains(queue, element, target) else None
            polled = cls.poll(queue, key_group)
            if before is not None and not queue.contains(element, target):
                self.record(target, element, before, None)
            return polled

    def record(self, key_group: int, element, before, after) -> None:
        """Appends the transition to ``after`` made at the current state version."""
        version = self.versions.state_version
        per_key_group = self.history.get(key_group)
        if per_key_group is None:
            per_key_group = self.history[key_group] = {}
        history = per_key_group.get(element) or ((BASE_VERSION, before),)
        if history[-1][0] == version:  # a later change in the same version replaces it: no
            history = history[:-1]     # snapshot can tell them apart
        if history[-1][1] != after:
            history += ((version, after),)
        if len(history) == 1:  # only "as before", which is the live value: nothing to remember
            per_key_group.pop(element, None)
            if not per_key_group:
                del self.history[key_group]
        else:
            per_key_group[element] = history

    # -- the asynchronous part -----------------------------------------------------------------
    def timers_at(self, version: int, key_group: int) -> list[tuple]:
        """``[(timer, value)]`` of one key group as they were when snapshot ``version`` started."""
        value_of = self.value_of
        with self.versions.lock.read():
            history = dict(self.history.get(key_group, ()))
            live = self.queue.get_subset_for_key_group(key_group)
            if value_of is _default_value:
                unchanged = [(timer, DEFAULT_VALUE) for timer in live if timer not in history]
            else:  # read payloads under the lock: a deleted and re-registered timer may change it
                unchanged = [(timer, value_of(timer)) for timer in live if timer not in history]
        for timer, transitions in history.items():
            value = self.visible(transitions, version)
            if value is not None:
                unchanged.append((timer, value))
        return unchanged

    visible = staticmethod(visible)

    def compact(self, key_group: int, running: tuple) -> None:
        """Keeps of each history only what the ``running`` snapshots need (under the write lock)."""
        per_key_group = self.history.get(key_group)
        if not per_key_group:
            return
        for element, history in list(per_key_group.items()):
            live = history[-1][1]
            values = [self.visible(history, s) for s in running]
            if all(value == live for value in values):
                del per_key_group[element]  # every running snapshot sees it as it is live
                continue
            kept = [(BASE_VERSION, values[0])]
            for previous, value in zip(running, values[1:]):
                if value != kept[-1][1]:
                    kept.append((previous, value))  # seen from the next running snapshot on
            if live != kept[-1][1]:
                kept.append((running[-1], live))
            per_key_group[element] = tuple(kept)
        if not per_key_group:
            del self.history[key_group]

    def deactivate(self) -> None:
        """No snapshot runs: back to the plain queue, every tombstone and old version dropped."""
        self.active = False
        self.history = {}
        if self.queue.mutation_router is self:
            self.queue.unroute_mutations()

    def history_size(self) -> int:
        return sum(len(per_key_group) for per_key_group in self.history.values())


def _default_value(timer) -> int:
    return DEFAULT_VALUE


def _contains(queue, element, key_group: int) -> bool:
    try:
        return queue.contains(element, key_group)
    except KeyGroupOutOfRangeError:
        return False


# -- a running snapshot --------------------------------------------------------------------
class TimerSnapshot:
    """A copy-on-write snapshot of one manager's timers, started by :func:`start_snapshot`.

    Drive its asynchronous part either step by step (:meth:`run_async_step`, one key group per
    step), or at once (:meth:`finish`), or on a background thread (:meth:`run_in_background`);
    one driver at a time. :meth:`finish` returns the snapshot file and releases the version;
    :meth:`cancel` releases it without output. Both are idempotent.
    """

    def __init__(self, manager: TimeServiceManager, versions: SnapshotVersions, version: int,
                 services: list, restored: dict, format_version: int):
        self.version = version
        self.format_version = format_version
        self.key_group_range: KeyGroupRange = manager.key_group_range
        self.max_parallelism = manager.key_context.max_parallelism
        self._versions = versions
        self._services = services  # [(name, event layer, processing layer)]
        self._restored = restored  # name -> {key group: InternalTimersSnapshot}, immutable from here
        self._writer: SnapshotWriter | None = None  # made by the asynchronous part
        self._next: Iterator[int] | None = None
        self._sections: dict[int, bytes] = {}
        self._timers = 0
        self._mutex = threading.Lock()
        self._result: bytes | None = None
        self.state = "running"

    @property
    def running(self) -> bool:
        return self.state == "running"

    def timers_for_key_group(self, key_group: int) -> dict:
        """name -> (event timers, [(processing timer, action)]) of ``key_group`` at this version."""
        per_service = {}
        for name, event_layer, processing_layer in self._services:
            event = [timer for timer, _ in event_layer.timers_at(self.version, key_group)]
            processing = processing_layer.timers_at(self.version, key_group)
            per_service[name] = (event, processing)
        for name, groups in self._restored.items():
            restored = groups.get(key_group)
            if restored is not None and name not in per_service:
                per_service[name] = (tuple(restored.event_time_timers),
                                     [(t, TimerTerminationAction.CANCEL) for t in restored.processing_time_timers])
        return per_service

    def write_key_group(self, key_group: int) -> bytes:
        """The section of ``key_group`` (``b""`` when it holds no timer), written once."""
        if not self.key_group_range.contains(key_group):
            raise KeyGroupOutOfRangeError(key_group, self.key_group_range)
        with self._mutex:
            return self._write_locked(key_group)

    def _write_locked(self, key_group: int) -> bytes:
        if self.state == "cancelled":
            raise RuntimeError(f"snapshot {self.version} was cancelled")
        section = self._sections.get(key_group)
        if section is None:
            section, count = self._get_writer().section(key_group, self.timers_for_key_group(key_group))
            self._sections[key_group] = section
            self._timers += count
        return section

    def _get_writer(self) -> SnapshotWriter:
        if self._writer is None:
            names = [name for name, _, _ in self._services]
            names += [name for name in self._restored if name not in names]
            self._writer = SnapshotWriter(self.format_version, self.max_parallelism, self.key_group_range,
                                          self.version, names)
        return self._writer

    def run_async_step(self) -> bool:
        """Writes the next key group; False when every key group is written."""
        with self._mutex:
            if self._next is None:
                self._next = iter(self.key_group_range)
            for key_group in self._next:
                if key_group not in self._sections:
                    self._write_locked(key_group)
                    return True
            return False

    def finish(self) -> bytes:
        """Writes what is left, releases the version, returns the snapshot file."""
        with self._mutex:
            if self._result is not None:
                return self._result
            if self.state == "cancelled":
                raise RuntimeError(f"snapshot {self.version} was cancelled")
            try:
                occupied = self._occupied()
                for key_group in self.key_group_range:
                    if key_group in occupied:
                        self._write_locked(key_group)
                    else:
                        self._sections.setdefault(key_group, b"")  # what section() writes for no timer
            except BaseException:
                self._release("cancelled")
                raise
            writer = self._get_writer()
            chunks = [writer.header()] + [s for kg, s in sorted(self._sections.items()) if s]
            chunks.append(writer.end(chunks, len(chunks) - 1, self._timers))
            self._result = b"".join(chunks)
            self._sections = {}
            self._release("finished")
            return self._result

    def _occupied(self) -> set[int]:
        """Key groups that may hold a timer of this snapshot's version: those with live timers or
        with a copy-on-write history (a timer removed since the version started is in it while the
        version runs), and restored ones. Any other key group held none at the version."""
        occupied: set[int] = set()
        for groups in self._restored.values():
            occupied.update(groups)
        with self._versions.lock.read():
            for _, event_layer, processing_layer in self._services:
                for layer in (event_layer, processing_layer):
                    occupied.update(kg for kg, per_key_group in layer.history.items() if per_key_group)
                    queue = layer.queue
                    if not queue.is_empty():
                        occupied.update(kg for kg in self.key_group_range if queue.get_subset_for_key_group(kg))
        return occupied

    def cancel(self) -> None:
        """Abandons the snapshot (an aborted checkpoint): releases the version, writes nothing."""
        with self._mutex:
            if self.state == "running":
                self._sections = {}
                self._release("cancelled")

    def _release(self, state: str) -> None:
        self.state = state
        self._versions.end(self.version)

    def run_in_background(self, executor: Executor | None = None) -> "Future[bytes]":
        """Runs :meth:`finish` on ``executor`` or on a new daemon thread; the future has the bytes."""
        if executor is not None:
            return executor.submit(self.finish)
        future: Future = Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(self.finish())
            except BaseException as e:  # noqa: BLE001 - handed to whoever waits on the future
                future.set_exception(e)

        threading.Thread(target=run, name=f"timer-snapshot-{self.version}", daemon=True).start()
        return future


def start_snapshot(manager: TimeServiceManager,
                   format_version: int = CURRENT_FORMAT_VERSION) -> TimerSnapshot:
    """The synchronous part of a checkpoint of ``manager``'s timers: O(number of services)."""
    if format_version not in (1, 2):
        raise ValueError(f"unknown snapshot format {format_version} (known: 1, 2)")
    versions = versions_of(manager)
    version, layers = versions.begin(list(manager.services.items()))
    restored = {name: dict(groups) for name, groups in manager._restored.items()} if manager._restored else {}
    return TimerSnapshot(manager, versions, version, layers, restored, format_version)


def snapshot_at_once(manager: TimeServiceManager, format_version: int = CURRENT_FORMAT_VERSION) -> bytes:
    """Both parts of a snapshot back to back, for a caller that changes no timer in between (the
    simulated task takes it inside one mailbox step): the file ``start_snapshot(...).finish()``
    writes, without routing the queues through copy-on-write layers nobody writes to (issue 30).
    With another snapshot running it is exactly that."""
    if format_version not in (1, 2):
        raise ValueError(f"unknown snapshot format {format_version} (known: 1, 2)")
    versions = versions_of(manager)
    if versions.running:
        return start_snapshot(manager, format_version).finish()
    with versions.lock.write():
        versions.state_version += 1
        version = versions.state_version
        versions.running.append(version)
    layers = [(name, VersionedTimerQueue(service.event_time_timers_queue, versions, None),
               VersionedTimerQueue(service.processing_time_timers_queue, versions, service.termination_action_source()))
              for name, service in manager.services.items()]  # unrouted: nothing records, they read the live queues
    restored = {name: dict(groups) for name, groups in manager._restored.items()} if manager._restored else {}
    return TimerSnapshot(manager, versions, version, layers, restored, format_version).finish()


# -- restore -------------------------------------------------------------------------------
@dataclass
class RestoreResult:
    """What a restore brought in: the service names (in snapshot order), the number of timers,
    the key groups restored, and the termination action of every restored processing-time timer
    whose action is not CANCEL (``(service, timer) -> action``; FLIP-269 installs them)."""

    service_names: list = field(default_factory=list)
    timers: int = 0
    key_groups: list = field(default_factory=list)
    actions: dict = field(default_factory=dict)


def restore_from_snapshots(manager: TimeServiceManager, snapshots: Iterable,
                           require_full_coverage: bool = True) -> RestoreResult:
    """Restores the key groups of ``manager``'s range from snapshot files (or decoded contents).

    Rescaling N -> M: give each of the M new managers all N files; each takes its key groups.
    Everything is decoded and checked before the manager changes: a malformed file raises
    :class:`SnapshotFormatError`; another max parallelism, two files claiming one key group
    (a timer would fire twice) or, with ``require_full_coverage``, a local key group no file
    covers (its timers would be lost) raise ``ValueError``.
    """
    contents = [s if isinstance(s, TimerSnapshotContents) else decode_snapshot(s) for s in snapshots]
    max_parallelism = manager.key_context.max_parallelism
    local = manager.key_group_range
    owner: dict[int, int] = {}
    for i, c in enumerate(contents):
        if c.max_parallelism != max_parallelism:
            raise ValueError(f"snapshot {i} has max parallelism {c.max_parallelism}, the operator {max_parallelism}")
        for key_group in c.key_group_range:
            if key_group in owner:
                raise ValueError(f"key group {key_group} is in snapshots {owner[key_group]} and {i}")
            owner[key_group] = i
    if require_full_coverage:
        missing = [kg for kg in local if kg not in owner]
        if missing:
            raise ValueError(f"key groups {_ranges(missing)} of {local} are in no snapshot")
    result = RestoreResult()
    for c in contents:
        for name in c.service_names:
            if name not in result.service_names:
                result.service_names.append(name)
    for key_group in local:
        if key_group not in owner:
            continue
        per_service = contents[owner[key_group]].key_groups.get(key_group)
        if not per_service:
            continue
        restored = {}
        for name, timers in per_service.items():
            restored[name] = InternalTimersSnapshot(timers.event, tuple(t for t, _ in timers.processing))
            result.timers += len(timers)
            for timer, action in timers.processing:
                if action != TimerTerminationAction.CANCEL:
                    result.actions[(name, timer)] = action
        manager.restore_state_for_key_group(key_group, restored)
        result.key_groups.append(key_group)
    if result.actions:  # FLIP-269: the services get their timers' actions (created ones now)
        manager.restore_termination_actions(result.actions)
    return result


def _ranges(key_groups: list[int]) -> str:
    spans, start = [], key_groups[0]
    for previous, current in zip(key_groups, key_groups[1:] + [None]):
        if current != previous + 1:
            spans.append(f"{start}" if start == previous else f"{start}-{previous}")
            start = current
    return ", ".join(spans)

"""Known-bug variants of copy-on-write timer snapshots and their format.

Caught by ``snapshots.point-in-time`` (what a snapshot holds, what is left behind) and
``snapshots.restore-equivalence`` (what a restore brings back).
"""

from __future__ import annotations

import struct
import zlib
from contextlib import contextmanager

import streamproof.impl.timers.snapshot_format as snapshot_format
from streamproof.impl.timers.snapshots import BASE_VERSION, SnapshotVersions, VersionedTimerQueue
from streamproof.impl.timers.termination import TimerTerminationAction
from streamproof.properties.bugzoo import variant
from streamproof.properties.timers.bugzoo import patched

POINT_IN_TIME = "snapshots.point-in-time"
RESTORE = "snapshots.restore-equivalence"


@variant("seed-single-create-delete-pair", "FLINK-9182 (seed design)", POINT_IN_TIME,
         "Each timer has one create version and one delete version, as the seed proposes. A timer "
         "deleted and registered again while a snapshot runs becomes a new timer created at the "
         "current version: the running snapshot, which must see the timer, loses it.")
@contextmanager
def single_create_delete_pair():
    def record(self, key_group, element, before, after):
        version = self.versions.state_version
        per_key_group = self.history.setdefault(key_group, {})
        if after is not None:  # registered: a fresh timer object, created now, not deleted
            per_key_group[element] = ((BASE_VERSION, None), (version, after))
        else:                  # deleted: the (one) timer object gets its delete version
            created = per_key_group.get(element, ((BASE_VERSION, before),))
            per_key_group[element] = created + ((version, None),)

    with patched(VersionedTimerQueue, record=record):
        yield


@variant("physical-delete-while-snapshot-runs", "FLINK-9182 (seed design)", POINT_IN_TIME,
         "A timer deleted (or fired) while a snapshot runs is removed physically at once instead of "
         "kept as a tombstone: the running snapshot, which must still write it, misses it.")
@contextmanager
def physical_delete_while_running():
    original = VersionedTimerQueue.record

    def record(self, key_group, element, before, after):
        if after is None:
            return  # BUG: no tombstone, the entry is gone for every running snapshot
        original(self, key_group, element, before, after)

    with patched(VersionedTimerQueue, record=record):
        yield


@variant("snapshot-sees-newer-timers", "FLINK-9182 (seed design)", POINT_IN_TIME,
         "The visibility test compares versions with <= instead of <: a timer registered (or deleted) "
         "after the snapshot started, in the snapshot's own version, is written by it.")
@contextmanager
def sees_newer_timers():
    def visible(history, version):
        for transition_version, value in reversed(history):
            if transition_version <= version:  # BUG: the snapshot's own version is after its start
                return value
        return None

    with patched(VersionedTimerQueue, visible=staticmethod(visible)):
        yield


@variant("tombstones-never-purged", "FLINK-9182 (seed design)", POINT_IN_TIME,
         "Finishing a snapshot removes its version but never compacts or drops the histories: "
         "tombstones and old versions pile up although no snapshot needs them (a memory leak).")
@contextmanager
def tombstones_never_purged():
    def end(self, version):
        with self.lock.write():
            self.running.remove(version)  # BUG: no compaction, the queues stay versioned

    with patched(SnapshotVersions, end=end):
        yield


@variant("compaction-shows-the-newest-snapshot-the-live-value", "FLINK-9182 (seed design)", POINT_IN_TIME,
         "When a snapshot ends while others run, compaction records a timer's live value as seen from "
         "the newest running snapshot on (one version too early): that snapshot, which started before "
         "the change, writes the timer as it is now (issue 31: compaction with several snapshots open).")
@contextmanager
def compaction_shows_the_newest_snapshot_the_live_value():
    original = VersionedTimerQueue.compact

    def compact(self, key_group, running):
        original(self, key_group, running)
        per_key_group = self.history.get(key_group) or {}
        for element, history in per_key_group.items():
            if len(history) > 1 and history[-1][0] == running[-1]:
                per_key_group[element] = history[:-1] + ((running[-1] - 1, history[-1][1]),)  # BUG

    with patched(VersionedTimerQueue, compact=compact):
        yield


@variant("crc-not-checked", "streamproof", RESTORE,
         "The reader does not verify the CRC32s: a bit flipped in a timestamp, key or action restores "
         "a different timer instead of failing with SnapshotFormatError.")
@contextmanager
def crc_not_checked():
    def _check_crc(expected, actual, offset, what):
        return None  # BUG

    with patched(snapshot_format, _check_crc=_check_crc):
        yield


@variant("format-1-restores-trigger", "FLIP-269", RESTORE,
         "Restoring a format-1 snapshot (written before termination actions existed) gives its "
         "processing-time timers TRIGGER, the window operators' FLIP-269 choice, instead of CANCEL: "
         "after the upgrade, pending timers fire at end of input where they never did.")
@contextmanager
def format_1_restores_trigger():
    with patched(snapshot_format, FORMAT_1_ACTION=TimerTerminationAction.TRIGGER):
        yield


@variant("section-crc-skips-payload", "streamproof", RESTORE,
         "Writer and reader agree on a section CRC32 over the section's key group and length only, "
         "not its payload. A raw bit flip is still caught by the whole-file CRC of the end record; "
         "a payload byte flipped with that file CRC recomputed restores a different timer, or fails "
         "with an error that does not name the section.")
@contextmanager
def section_crc_skips_payload():
    write_section, read_section = snapshot_format.SnapshotWriter.section, snapshot_format._read_section

    def section(self, key_group, per_service):
        data, timers = write_section(self, key_group, per_service)
        if data:  # BUG: the CRC covers the key group and the length, not the payload
            data = data[:9] + struct.pack(">I", zlib.crc32(data[1:9])) + data[13:]
        return data, timers

    def _read_section(r, *args):
        at = r.pos
        if r.left() >= 13:
            head, stored = r.data[at + 1:at + 9], struct.unpack_from(">I", r.data, at + 9)[0]
            length = struct.unpack_from(">I", head, 4)[0]
            if stored == zlib.crc32(head) and length <= r.left() - 13:
                # BUG: the header matches its CRC, so the payload is read unchecked (the correct
                # reader is handed the CRC it computes, its other checks stay as they are)
                payload = r.data[at + 13:at + 13 + length]
                r.data = r.data[:at + 9] + struct.pack(">I", zlib.crc32(payload, zlib.crc32(head))) + r.data[at + 13:]
        return read_section(r, *args)

    with patched(snapshot_format.SnapshotWriter, section=section), patched(snapshot_format, _read_section=_read_section):
        yield

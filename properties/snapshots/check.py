"""The differential check of copy-on-write timer snapshots: ``streamproof.impl.timers.snapshots`` against
``model/snapshot.py``, step by step, on ``snapshots`` scenarios.

Invariants (each property checks its own, see :data:`INVARIANTS`):
  * ``point-in-time``: a finished snapshot's files, decoded, hold exactly the model's live timers
    at the snapshot's start, each once, with their actions (format 1: CANCEL), each file only the
    key groups of its subtask;
  * ``no-leftovers``: while no snapshot runs, no queue is routed and no tombstone or old version
    is kept (memory is back to the live set), also in a job a restore abandoned;
  * ``same-firings``: an advance fires exactly the model's due timers, each once;
  * ``same-live-timers``: after every step the subtasks together hold exactly the model's live
    timers, each once, each in the subtask owning its key group, with their actions;
  * ``restore-accepted``: restoring a valid snapshot succeeds (N -> M for any M);
  * ``corruption-rejected``: restoring a corrupted snapshot raises ``SnapshotFormatError`` and
    leaves the job as it was; when only sections were corrupted (``corrupt_section``: a payload
    byte flipped and the file CRC recomputed, so only the section's CRC32 can tell), the error
    names a corrupted section's key group and an offset inside that section.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections import Counter
from typing import Iterable

from streamproof.impl.state.key_groups import (
    KeyGroupRange, assign_to_key_group, compute_key_group_range_for_operator_index,
    compute_operator_index_for_key_group,
)
from streamproof.impl.state.key_groups import Int32
from streamproof.impl.timers.snapshot_format import END, SECTION, SnapshotFormatError, decode_snapshot
from streamproof.impl.timers.snapshots import restore_from_snapshots, versions_of
from streamproof.impl.timers.termination import TimerTerminationAction
from streamproof.impl.timers.internal_timer_service import InternalTimer, KeyContext
from streamproof.impl.timers.internal_time_service_manager import InternalTimeServiceManager
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService
from streamproof.model import snapshot as spec
from streamproof.properties.timers.runner import DEFAULT_SERVICE, _model_key, encode_key
from streamproof.properties.verdict import Verdict, Violation

INVARIANTS = {
    "snapshots.point-in-time": ("point-in-time", "no-leftovers"),
    "snapshots.restore-equivalence": ("same-firings", "same-live-timers", "restore-accepted",
                                      "corruption-rejected"),
}
ALL_INVARIANTS = tuple(dict.fromkeys(i for names in INVARIANTS.values() for i in names))
BUDGET = 100_000


# -- section corruption ------------------------------------------------------------------------
def section_spans(data) -> tuple[list[tuple[int, int, int]], int | None]:
    """Walks a file's framing as docs/snapshots.md lays it out (nothing is checked): the sections
    as ``(key group, offset of the record, offset after its payload)`` and the offset of the end
    record (None when the framing does not lead to one)."""
    spans: list[tuple[int, int, int]] = []
    try:
        pos = 30
        for _ in range(struct.unpack_from(">H", data, 28)[0]):  # service names
            pos += 2 + struct.unpack_from(">H", data, pos)[0]
        pos += 4  # header CRC
        while pos < len(data) and data[pos] == SECTION:
            key_group, length = struct.unpack_from(">II", data, pos + 1)
            spans.append((key_group, pos, pos + 13 + length))
            pos += 13 + length
        if pos + 17 <= len(data) and data[pos] == END:
            return spans, pos
    except struct.error:
        pass
    return spans, None


def corrupt_section(data: bytearray, key_group: int, offset: int, xor: int) -> tuple[int, int] | None:
    """XORs payload byte ``offset`` (modulo the payload length) of ``key_group``'s section with
    ``xor`` and recomputes the file CRC of the end record, in place: only the section's CRC32
    still tells. Returns the section's span ``(start, end)``, or None (no such section: unchanged)."""
    spans, end = section_spans(data)
    for group, start, stop in spans:
        if group == key_group and stop > start + 13 and end is not None:
            data[start + 13 + offset % (stop - start - 13)] ^= xor
            data[end + 13:end + 17] = struct.pack(">I", zlib.crc32(memoryview(data)[:end + 13]))
            return start, stop
    return None


def names_key_group(message: str, key_group: int) -> bool:
    return re.search(rf"\bkey group {key_group}(?!\d)", message) is not None


def _impl_key(model_key):
    return Int32(model_key[1]) if isinstance(model_key, tuple) and model_key[:1] == ("int32",) else model_key


# -- implementation ----------------------------------------------------------------------------
class _Subtask:
    """One keyed operator instance: key context, clock, timer services, and the termination
    actions of its processing-time timers (the harness stands in for FLIP-269's registration)."""

    def __init__(self, run: "ImplSnapshotsRun", index: int, max_parallelism: int, key_groups: KeyGroupRange):
        self.run, self.index, self.key_group_range = run, index, key_groups
        self.key_context = KeyContext(max_parallelism)
        self.clock = ManualProcessingTimeService(budget=BUDGET)
        self.manager = InternalTimeServiceManager(self.key_context, key_groups, self.clock, firing_budget=BUDGET)
        self.actions: dict = {}  # (service, timer) -> action, read only while the timer is pending

    def service(self, name: str):
        service = self.manager.services.get(name)
        if service is None:
            service = self.manager.get_internal_timer_service(name, _Recorder(self.run, name))
            service.termination_action_of = lambda timer, name=name: self.actions.get(
                (name, timer), TimerTerminationAction.CANCEL)
        return service

    def live(self) -> Iterable[tuple]:
        """``(service, domain, timer, action)`` of every pending timer."""
        for name, service in self.manager.services.items():
            for timer in service.event_time_timers_queue:
                yield name, "event", timer, None
            for timer in service.processing_time_timers_queue:
                yield name, "processing", timer, service.termination_action_of(timer)


class _Recorder:
    def __init__(self, run: "ImplSnapshotsRun", name: str):
        self.run, self.name = run, name

    def on_event_time(self, timer) -> None:
        self.run.fired.append((self.name, "event", timer))

    def on_processing_time(self, timer) -> None:
        self.run.fired.append((self.name, "processing", timer))


class ImplSnapshotsRun:
    """Drives ``streamproof.impl.timers.snapshots`` through a ``snapshots`` scenario."""

    def __init__(self) -> None:
        self.max_parallelism = 1
        self.subtasks: list[_Subtask] = []
        self.abandoned: list[_Subtask] = []  # subtasks of jobs a restore replaced
        self.key = None
        self.snapshots: dict[str, dict] = {}  # id -> {"running": [TimerSnapshot], "files": [bytes]}
        self.fired: list[tuple] = []
        self.last_restore_error: str | None = None
        self.last_restore_offset: int | None = None

    def new_job(self, max_parallelism: int, parallelism: int, open_services: bool = True) -> list[_Subtask]:
        """Subtasks with the default timer service open (other services start on first use).
        A restoring job opens its services after the restore, as Flink does."""
        subtasks = [_Subtask(self, i, max_parallelism,
                             compute_key_group_range_for_operator_index(max_parallelism, parallelism, i))
                    for i in range(parallelism)]
        for subtask in subtasks if open_services else ():
            subtask.service(DEFAULT_SERVICE)
        return subtasks

    def _replace_job(self, subtasks: list[_Subtask], max_parallelism: int) -> None:
        for snapshot in self.snapshots.values():
            for running in snapshot.get("running", ()):
                running.cancel()  # a failover aborts the checkpoints in flight
            snapshot.pop("running", None)
        self.abandoned = self.subtasks
        self.subtasks, self.max_parallelism = subtasks, max_parallelism

    def owner(self) -> _Subtask:
        key_group = assign_to_key_group(self.key, self.max_parallelism)
        subtask = self.subtasks[compute_operator_index_for_key_group(
            self.max_parallelism, len(self.subtasks), key_group)]
        subtask.key_context.set_current_key(self.key)
        return subtask

    def apply(self, step) -> list[dict]:
        op, out = step.op, []
        if op == "new_job":
            self._replace_job(self.new_job(step.max_parallelism, step.parallelism), step.max_parallelism)
            out.append({"event": "job", "parallelism": step.parallelism})
        elif op == "set_key":
            self.key = step.key
        elif op in ("register", "delete"):
            subtask = self.owner()
            name = step.service or DEFAULT_SERVICE
            service = subtask.service(name)
            if op == "register" and step.domain == "processing":
                timer = InternalTimer(step.ts, self.key, step.namespace)
                if not service.processing_time_timers_queue.contains(timer, subtask.key_context.current_key_group_index):
                    subtask.actions[(name, timer)] = TimerTerminationAction[step.action or "CANCEL"]
            domain = "event_time" if step.domain == "event" else "processing_time"
            getattr(service, f"{op}_{domain}_timer")(step.namespace, step.ts)
        elif op in ("advance_watermark", "advance_processing_time"):
            self.fired = []
            for subtask in self.subtasks:
                if op == "advance_watermark":
                    subtask.manager.advance_watermark(step.to)
                else:
                    subtask.clock.advance_to(step.to)
            out += [_fire_event(name, domain, timer) for name, domain, timer in self.fired]
        elif op == "start_snapshot":
            running = [s.manager.start_snapshot(step.format or 2) for s in self.subtasks]
            self.snapshots[step.id] = {"running": running, "max_parallelism": self.max_parallelism}
            out.append({"event": "snapshot_started", "id": step.id})
        elif op == "snapshot_step":
            for snapshot in self.snapshots[step.id]["running"]:
                for _ in range(step.steps or 1):
                    if not snapshot.run_async_step():
                        break  # every key group written: further steps do nothing
        elif op == "finish_snapshot":
            snapshot = self.snapshots[step.id]
            snapshot["files"] = [bytearray(s.finish()) for s in snapshot.pop("running")]
            timers = sum(decode_snapshot(bytes(f)).timer_count() for f in snapshot["files"])
            out.append({"event": "snapshot_finished", "id": step.id, "timers": timers})
        elif op == "cancel_snapshot":
            for snapshot in self.snapshots[step.id].pop("running"):
                snapshot.cancel()
            out.append({"event": "snapshot_cancelled", "id": step.id})
        elif op == "corrupt":
            files = self.snapshots[step.id]["files"]
            data = files[step.subtask % len(files)]
            data[step.offset % len(data)] ^= step.xor
            self.snapshots[step.id]["raw_corrupted"] = True
            out.append({"event": "corrupted", "id": step.id})
        elif op == "corrupt_section":
            snapshot = self.snapshots[step.id]
            files = snapshot["files"]
            subtask = step.subtask % len(files)
            span = corrupt_section(files[subtask], step.key_group, step.offset, step.xor)
            if span is None:
                out.append({"event": "no_section", "id": step.id, "key_group": step.key_group})
            else:
                snapshot.setdefault("section_corruptions", []).append((subtask, step.key_group, *span))
                out.append({"event": "corrupted", "id": step.id, "key_group": step.key_group})
        elif op == "restore":
            out.append(self._restore(step))
        elif op == "count":
            out.append({"event": "count", "timers": sum(1 for s in self.subtasks for _ in s.live())})
        else:
            raise ValueError(f"unknown snapshots op {op!r}")
        return out

    def _restore(self, step) -> dict:
        snapshot = self.snapshots[step.id]
        max_parallelism = snapshot["max_parallelism"]
        try:
            contents = [decode_snapshot(bytes(f)) for f in snapshot["files"]]
        except SnapshotFormatError as e:
            self.last_restore_error, self.last_restore_offset = str(e), e.offset
            return {"event": "rejected", "id": step.id, "message": str(e)}
        subtasks = self.new_job(max_parallelism, step.parallelism, open_services=False)
        restored = 0
        for subtask in subtasks:
            try:
                result = restore_from_snapshots(subtask.manager, contents)
            except ValueError as e:  # not a format error: the file decoded, yet cannot be restored
                return {"event": "restore_failed", "id": step.id, "message": f"{type(e).__name__}: {e}"}
            subtask.actions.update(result.actions)
            for name in [DEFAULT_SERVICE, *result.service_names]:
                subtask.service(name)
            restored += result.timers
        self._replace_job(subtasks, max_parallelism)
        return {"event": "restored", "id": step.id, "parallelism": step.parallelism, "timers": restored}

    def snapshot_files(self, snapshot_id: str) -> list[bytes]:
        return [bytes(f) for f in self.snapshots[snapshot_id]["files"]]


def _fire_event(service: str, domain: str, timer) -> dict:
    event = {"event": "fire", "domain": domain, "key": encode_key(timer.key), "namespace": timer.namespace,
             "ts": timer.timestamp}
    if service != DEFAULT_SERVICE:
        event["service"] = service
    return event


def _model_entry(service: str, domain: str, timer, action) -> tuple:
    payload = None if action is None else TimerTerminationAction(action).name
    return (service, domain, (timer[0], _model_key(timer[1]), timer[2])), payload


# -- model -----------------------------------------------------------------------------------
class ModelSnapshotsRun:
    """Drives ``model/snapshot.py`` through the same steps."""

    def __init__(self) -> None:
        self.model = spec.SnapshotModel()
        self.key = None
        self.fired: Counter = Counter()
        self.rejected = False
        self.job = (1, 1)   # (max parallelism, parallelism) of the current job
        self.taken = {}     # snapshot id -> the job's (max parallelism, parallelism) when it started

    def apply(self, step) -> list[dict]:
        m, op, out = self.model, step.op, []
        self.fired, self.rejected = Counter(), False
        if op == "new_job":
            self.job = (step.max_parallelism, step.parallelism)
            m.live = {}
            for snapshot_id in m.running():
                m.cancel(snapshot_id)
            out.append({"event": "job", "parallelism": step.parallelism})
        elif op == "set_key":
            self.key = _model_key(step.key)
        elif op == "register":
            m.register(step.service or DEFAULT_SERVICE, step.domain, (step.ts, self.key, step.namespace), step.action)
        elif op == "delete":
            m.delete(step.service or DEFAULT_SERVICE, step.domain, (step.ts, self.key, step.namespace))
        elif op in ("advance_watermark", "advance_processing_time"):
            self.fired = m.advance("event" if op == "advance_watermark" else "processing", step.to)
        elif op == "start_snapshot":
            m.start(step.id, step.format or 2)
            self.taken[step.id] = self.job
            out.append({"event": "snapshot_started", "id": step.id})
        elif op == "snapshot_step":
            pass
        elif op == "finish_snapshot":
            out.append({"event": "snapshot_finished", "id": step.id, "timers": len(m.finish(step.id))})
        elif op == "cancel_snapshot":
            m.cancel(step.id)
            out.append({"event": "snapshot_cancelled", "id": step.id})
        elif op == "corrupt":
            m.corrupt(step.id)
            out.append({"event": "corrupted", "id": step.id})
        elif op == "corrupt_section":
            if step.key_group in self.section_key_groups(step.id, step.subtask):
                m.corrupt(step.id)
                out.append({"event": "corrupted", "id": step.id, "key_group": step.key_group})
            else:
                out.append({"event": "no_section", "id": step.id, "key_group": step.key_group})
        elif op == "restore":
            try:
                m.restore(step.id)
                self.job = (self.taken[step.id][0], step.parallelism)
                out.append({"event": "restored", "id": step.id, "parallelism": step.parallelism, "timers": len(m.live)})
            except spec.Rejected:
                self.rejected = True
        elif op == "count":
            out.append({"event": "count", "timers": len(m.live)})
        return out

    def section_key_groups(self, snapshot_id: str, subtask: int) -> list[int]:
        """The key groups subtask ``subtask``'s file of the snapshot has a section for: those of its
        range holding a timer of the snapshot (the format writes only non-empty key groups)."""
        max_parallelism, parallelism = self.taken[snapshot_id]
        owned = compute_key_group_range_for_operator_index(max_parallelism, parallelism, subtask)
        groups = {assign_to_key_group(_impl_key(timer[1]), max_parallelism)
                  for _, _, timer in self.model.readable(snapshot_id)}
        return sorted(g for g in groups if owned.contains(g))


# -- side by side ------------------------------------------------------------------------------
class DifferentialSnapshots:
    """Implementation and model side by side; ``apply`` raises :class:`Violation` for a broken
    invariant among ``invariants``."""

    def __init__(self, invariants: Iterable[str] = ALL_INVARIANTS):
        self.invariants = frozenset(invariants)
        self.impl = ImplSnapshotsRun()
        self.model = ModelSnapshotsRun()
        self.trace: list[dict] = []
        self.steps = 0

    def _fail(self, invariant: str, message: str, index: int) -> None:
        if invariant in self.invariants:
            raise Violation(invariant, message, index)

    def apply(self, step) -> list[dict]:
        index = self.steps
        self.steps += 1
        observed = self.impl.apply(step)
        self.model.apply(step)
        self.trace.extend(observed)
        op = step.op
        if op in ("advance_watermark", "advance_processing_time"):
            fired = Counter(_model_entry(name, domain, timer, None)[0] for name, domain, timer in self.impl.fired)
            if not spec.same_firings(self.model.fired, fired):
                self._fail("same-firings", f"fired {_diff(fired, self.model.fired)}", index)
        elif op == "finish_snapshot":
            self._check_point_in_time(step.id, index)
        elif op == "corrupt_section":
            found = observed[-1]["event"] == "corrupted"
            if found != (step.key_group in self.model.section_key_groups(step.id, step.subtask)):
                has, holds = ("a", "no timer") if found else ("no", "timers")
                self._fail("restore-accepted" if found else "corruption-rejected",
                           f"subtask {step.subtask}'s file of snapshot {step.id!r} has {has} section for key group "
                           f"{step.key_group}, yet the snapshot holds {holds} of it", index)
        elif op == "restore":
            restored = observed[-1]["event"] == "restored"
            if self.model.rejected and not restored and observed[-1]["event"] != "rejected":
                self._fail("corruption-rejected", f"snapshot {step.id!r} is corrupted, yet the reader accepted "
                                                  f"it and the restore failed later: {observed[-1]['message']}", index)
            if self.model.rejected and restored:
                self._fail("corruption-rejected", f"snapshot {step.id!r} is corrupted, yet it was restored", index)
            if not self.model.rejected and not restored:
                self._fail("restore-accepted", f"snapshot {step.id!r} was rejected: {observed[-1]['message']}", index)
            if self.model.rejected and observed[-1]["event"] == "rejected":
                self._check_section_named(step.id, index)
        self._check_live(index)
        self._check_leftovers(index)
        return observed

    def _check_section_named(self, snapshot_id: str, index: int) -> None:
        """A snapshot whose only damage is in section payloads (the file CRC recomputed) is
        rejected by a section check: the error names a damaged key group and lies in its section."""
        snapshot = self.impl.snapshots[snapshot_id]
        damaged = snapshot.get("section_corruptions")
        if not damaged or snapshot.get("raw_corrupted"):
            return
        message, offset = self.impl.last_restore_error or "", self.impl.last_restore_offset
        if not any(names_key_group(message, kg) and start <= offset < end for _, kg, start, end in damaged):
            where = ", ".join(f"key group {kg} (subtask {s}, bytes [{start}, {end}))" for s, kg, start, end in damaged)
            self._fail("corruption-rejected", f"snapshot {snapshot_id!r} has a corrupted section payload ({where}; "
                                              f"file CRC recomputed), yet the error does not name that section: "
                                              f"{message}", index)

    def _check_point_in_time(self, snapshot_id: str, index: int) -> None:
        read: Counter = Counter()
        for subtask, data in zip(self.impl.subtasks, self.impl.snapshot_files(snapshot_id)):
            contents = decode_snapshot(data)
            if contents.key_group_range != subtask.key_group_range:
                self._fail("point-in-time", f"subtask {subtask.index} wrote key groups {contents.key_group_range}, "
                                            f"it owns {subtask.key_group_range}", index)
            read.update(_model_entry(*entry) for entry in contents.entries())
        if not spec.point_in_time(self.model.model, snapshot_id, read):
            expected = Counter(self.model.model.readable(snapshot_id).items())
            self._fail("point-in-time", f"snapshot {snapshot_id!r} holds {_diff(read, expected)}", index)

    def _check_live(self, index: int) -> None:
        if "same-live-timers" not in self.invariants:
            return
        live: Counter = Counter()
        for subtask in self.impl.subtasks:
            for name, domain, timer, action in subtask.live():
                kg = assign_to_key_group(timer.key, self.impl.max_parallelism)
                if not subtask.key_group_range.contains(kg):
                    self._fail("same-live-timers", f"subtask {subtask.index} holds {timer} of key group {kg}", index)
                live[_model_entry(name, domain, timer, action)] += 1
        if not spec.same_live_timers(self.model.model, live):
            self._fail("same-live-timers", f"the job holds {_diff(live, Counter(self.model.model.live.items()))}", index)

    def _check_leftovers(self, index: int) -> None:
        if "no-leftovers" not in self.invariants:
            return
        quiet = not self.model.model.running()
        for subtask in self.impl.subtasks + self.impl.abandoned:
            if subtask in self.impl.abandoned or quiet:
                left = versions_of(subtask.manager).leftovers()
                if any(left.values()):
                    self._fail("no-leftovers", f"subtask {subtask.index} keeps {left} with no snapshot running",
                               index)


def _diff(actual: Counter, expected: Counter, limit: int = 4) -> str:
    extra = sorted((actual - expected).elements(), key=repr)[:limit]
    missing = sorted((expected - actual).elements(), key=repr)[:limit]
    parts = []
    if extra:
        parts.append(f"unexpected {extra}")
    if missing:
        parts.append(f"missing {missing}")
    return "; ".join(parts) or "the same timers"


def check_snapshots(steps: Iterable, property_name: str) -> Verdict:
    """Replays ``steps`` checking the property's invariants; the verdict fails at the first broken
    one (an exception out of the implementation is a failure too)."""
    run = DifferentialSnapshots(INVARIANTS[property_name])
    try:
        for step in steps:
            run.apply(step)
    except Violation as v:
        return Verdict(property_name, False, run.trace, v.invariant, v.detail, v.step)
    except Exception as e:  # noqa: BLE001 - the implementation crashed: a failed verdict
        text = str(e).splitlines()[0] if str(e) else type(e).__name__
        return Verdict(property_name, False, run.trace, f"crash: {type(e).__name__}", text[:500], run.steps - 1)
    return Verdict(property_name, True, run.trace)

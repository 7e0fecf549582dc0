"""The binary format of timer snapshots (DESIGN.md §3.3; byte by byte in docs/snapshots.md).

One snapshot file holds the timers of one operator instance (every named timer service, both
time domains) for the key groups of its ``KeyGroupRange``: a header, one section per non-empty
key group in increasing order, and an end record. All integers are big-endian, as Java's
``DataOutputStream`` writes them::

    header   magic "SPTM" | format u16 | flags u16 (0) | max_parallelism u32 | first key group u32
             | key group count u32 | snapshot version u64 | service count u16
             | service count x (name length u16 | UTF-8 name) | header CRC32 u32
    section  0x53 'S' | key group u32 | payload length u32 | CRC32(key group, length, payload) u32
             | payload: entry count u16 | entry count x (service index u16 | event count u32
             | event timers | processing count u32 | processing timers)
    timer    timestamp i64 | key | namespace | action u8 (processing-time timers, format 2 only)
    end      0x45 'E' | section count u32 | timer count u64 | CRC32 of every byte before it u32

Keys and namespaces are tagged values: 0x01 string (u32 length, UTF-8), 0x02 long (i64),
0x03 int (i32, a :class:`~streamproof.impl.state.key_groups.Int32` key); namespaces may also be 0x04 None,
0x05 false, 0x06 true, 0x07 tuple (u16 count, values; nested at most 16 deep) and 0x08 bytes
(u32 length). Format 1 has no action byte: restoring it gives CANCEL (FLIP-269). The writer
writes format 2 unless asked for 1.

Reading checks everything and trusts nothing: any malformed, truncated, bit-flipped or foreign
input raises :class:`SnapshotFormatError` naming the byte offset and what was wrong (every byte
is covered by a CRC or by a structural check). No pickle, no eval.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from streamproof.impl.state.key_groups import (
    INT64_MAX, INT64_MIN, UPPER_BOUND_MAX_PARALLELISM, CompositeKey, Int32, KeyGroupRange,
    assign_to_key_group,
)
from streamproof.impl.timers.internal_timer import InternalTimer
from streamproof.impl.timers.termination import TimerTerminationAction

MAGIC = b"SPTM"
FORMAT_VERSIONS = (1, 2)
CURRENT_FORMAT_VERSION = 2
FORMAT_1_ACTION = TimerTerminationAction.CANCEL  # format 1 carries no action (FLIP-269: CANCEL)
SECTION, END = 0x53, 0x45
MAX_VALUE_DEPTH = 16

_U8, _U16, _U32, _U64 = struct.Struct(">B"), struct.Struct(">H"), struct.Struct(">I"), struct.Struct(">Q")
_I32, _I64, _F64 = struct.Struct(">i"), struct.Struct(">q"), struct.Struct(">d")
_FIXED_HEADER = struct.Struct(">4sHHIIIQH")  # magic .. service count
_SECTION_HEAD = struct.Struct(">BIII")       # type, key group, length, crc
_END = struct.Struct(">BIQI")                # type, section count, timer count, crc
_MIN_TIMER = 8 + 5 + 1                       # timestamp, the shortest key (empty string), None namespace

_TAG_STR, _TAG_LONG, _TAG_INT32, _TAG_NONE, _TAG_FALSE, _TAG_TRUE, _TAG_TUPLE, _TAG_BYTES = range(1, 9)
_TAG_COMPOSITE, _TAG_FLOAT = 9, 10  # a composite key (its value follows); a double
_ACTION_BYTES = {int(action): _U8.pack(action) for action in TimerTerminationAction}

__all__ = [
    "SnapshotFormatError", "KeyGroupTimers", "TimerSnapshotContents", "SnapshotWriter",
    "encode_snapshot", "decode_snapshot", "MAGIC", "FORMAT_VERSIONS", "CURRENT_FORMAT_VERSION",
]


class SnapshotFormatError(ValueError):
    """Bytes that are not a valid timer snapshot: names the offset and what was wrong."""

    def __init__(self, offset: int, problem: str):
        super().__init__(f"timer snapshot: offset {offset}: {problem}")
        self.offset = offset
        self.problem = problem


# -- contents ------------------------------------------------------------------------------
@dataclass(frozen=True)
class KeyGroupTimers:
    """The timers of one service in one key group; processing-time timers with their action."""

    event: tuple = ()       # InternalTimer, ...
    processing: tuple = ()  # (InternalTimer, TimerTerminationAction), ...

    def __len__(self) -> int:
        return len(self.event) + len(self.processing)


@dataclass(frozen=True)
class TimerSnapshotContents:
    """What a snapshot file holds (only non-empty key groups and services appear)."""

    format_version: int
    max_parallelism: int
    key_group_range: KeyGroupRange
    snapshot_version: int
    service_names: tuple
    key_groups: Mapping[int, Mapping[str, KeyGroupTimers]] = field(default_factory=dict)

    def timer_count(self) -> int:
        return sum(len(t) for per_service in self.key_groups.values() for t in per_service.values())

    def entries(self) -> Iterable[tuple]:
        """Every timer as ``(service, domain, timer, action)``; event-time timers have action None."""
        for per_service in self.key_groups.values():
            for name, timers in per_service.items():
                for timer in timers.event:
                    yield name, "event", timer, None
                for timer, action in timers.processing:
                    yield name, "processing", timer, action


# -- writing -------------------------------------------------------------------------------
def _value(value, depth: int = 0, floats: bool = False) -> bytes:
    """The tagged encoding of a key or namespace (``floats``: inside a composite key only)."""
    if isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")
        return _U8.pack(_TAG_STR) + _U32.pack(len(data)) + data
    if value is None:
        return _U8.pack(_TAG_NONE)
    if isinstance(value, bool):
        return _U8.pack(_TAG_TRUE if value else _TAG_FALSE)
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise ValueError(f"cannot write {value}: integers in snapshots are Java longs")
        return _U8.pack(_TAG_LONG) + _I64.pack(value)
    if isinstance(value, Int32):
        return _U8.pack(_TAG_INT32) + _I32.pack(value.value)
    if isinstance(value, tuple):
        if depth >= MAX_VALUE_DEPTH or len(value) > 0xFFFF:
            raise ValueError(f"cannot write a tuple nested over {MAX_VALUE_DEPTH} deep or over 65535 long")
        return _U8.pack(_TAG_TUPLE) + _U16.pack(len(value)) + b"".join(_value(v, depth + 1, floats) for v in value)
    if isinstance(value, (bytes, bytearray)):
        return _U8.pack(_TAG_BYTES) + _U32.pack(len(value)) + bytes(value)
    if isinstance(value, float) and floats:
        return _U8.pack(_TAG_FLOAT) + _F64.pack(value)
    raise TypeError(f"cannot write a {type(value).__name__} in a timer snapshot (str, int, Int32, None, "
                    "bool, tuple or bytes; floats inside a composite key)")


def _key(key) -> bytes:
    if isinstance(key, CompositeKey):
        return _U8.pack(_TAG_COMPOSITE) + _value(key.value, floats=True)
    if isinstance(key, bool) or not isinstance(key, (str, int, Int32)):
        raise TypeError(f"cannot write key {key!r}: keys are str, int or Int32")
    return _value(key)


class SnapshotWriter:
    """Writes one snapshot file piece by piece: :meth:`header`, :meth:`section` per key group
    (in increasing order), then :meth:`end` over everything written before."""

    def __init__(self, format_version: int, max_parallelism: int, key_group_range: KeyGroupRange,
                 snapshot_version: int, service_names: Sequence[str]):
        if format_version not in FORMAT_VERSIONS:
            raise ValueError(f"unknown snapshot format {format_version} (known: {FORMAT_VERSIONS})")
        if len(service_names) > 0xFFFF:
            raise ValueError("more than 65535 timer services")
        self.format_version = format_version
        self.max_parallelism = max_parallelism
        self.key_group_range = key_group_range
        self.snapshot_version = snapshot_version
        self.service_names = tuple(service_names)
        self.service_index = {name: i for i, name in enumerate(self.service_names)}

    def header(self) -> bytes:
        kgr = self.key_group_range
        parts = [_FIXED_HEADER.pack(MAGIC, self.format_version, 0, self.max_parallelism, kgr.start_key_group,
                                    kgr.get_number_of_key_groups(), self.snapshot_version, len(self.service_names))]
        for name in self.service_names:
            data = name.encode("utf-8", "surrogatepass")
            if len(data) > 0xFFFF:
                raise ValueError(f"timer service name of {len(data)} bytes (at most 65535)")
            parts += [_U16.pack(len(data)), data]
        head = b"".join(parts)
        return head + _U32.pack(zlib.crc32(head))

    def section(self, key_group: int, per_service: Mapping[str, tuple]) -> tuple[bytes, int]:
        """``per_service``: name -> (event timers, [(processing timer, action)]). Returns the
        section and its number of timers (``b""`` and 0 when every service is empty)."""
        pack_ts = _I64.pack
        with_action = self.format_version >= 2
        cache: dict = {}  # (key, namespace) -> their encoding: keys and namespaces repeat
        parts: list[bytes] = []
        entries = timers = 0
        for name in sorted(per_service, key=self.service_index.__getitem__):
            event, processing = per_service[name]
            if not event and not processing:
                continue
            entries += 1
            parts += [_U16.pack(self.service_index[name]), _U32.pack(len(event))]
            for timer in event:
                kn = (timer[1], timer[2])
                encoded = cache.get(kn)
                if encoded is None:
                    encoded = cache[kn] = _key(timer[1]) + _value(timer[2])
                parts += (pack_ts(timer[0]), encoded)
            parts.append(_U32.pack(len(processing)))
            for timer, action in processing:
                kn = (timer[1], timer[2])
                encoded = cache.get(kn)
                if encoded is None:
                    encoded = cache[kn] = _key(timer[1]) + _value(timer[2])
                parts += (pack_ts(timer[0]), encoded)
                if with_action:
                    action_byte = _ACTION_BYTES.get(action)
                    if action_byte is None:
                        raise ValueError(f"timer {timer}: {action!r} is not a TimerTerminationAction")
                    parts.append(action_byte)
            timers += len(event) + len(processing)
        if not entries:
            return b"", 0
        payload = _U16.pack(entries) + b"".join(parts)
        head = _U32.pack(key_group) + _U32.pack(len(payload))
        crc = zlib.crc32(payload, zlib.crc32(head))
        return _U8.pack(SECTION) + head + _U32.pack(crc) + payload, timers

    @staticmethod
    def end(written: Sequence[bytes], section_count: int, timer_count: int) -> bytes:
        """The end record; ``written`` is every byte before it (header and sections)."""
        crc = 0
        for chunk in written:
            crc = zlib.crc32(chunk, crc)
        body = _U8.pack(END) + _U32.pack(section_count) + _U64.pack(timer_count)
        return body + _U32.pack(zlib.crc32(body, crc))


def encode_snapshot(contents: TimerSnapshotContents, format_version: int | None = None) -> bytes:
    """The bytes of ``contents`` (in ``format_version``, default the contents' own)."""
    writer = SnapshotWriter(format_version or contents.format_version, contents.max_parallelism,
                            contents.key_group_range, contents.snapshot_version, contents.service_names)
    chunks = [writer.header()]
    sections = timers = 0
    for key_group in sorted(contents.key_groups):
        per_service = {name: (t.event, t.processing) for name, t in contents.key_groups[key_group].items()}
        data, count = writer.section(key_group, per_service)
        if data:
            chunks.append(data)
            sections += 1
            timers += count
    chunks.append(writer.end(chunks, sections, timers))
    return b"".join(chunks)


# -- reading -------------------------------------------------------------------------------
class _Reader:
    __slots__ = ("data", "pos", "end")

    def __init__(self, data: bytes, pos: int = 0, end: int | None = None):
        self.data, self.pos, self.end = data, pos, len(data) if end is None else end

    def fail(self, problem: str, offset: int | None = None) -> SnapshotFormatError:
        return SnapshotFormatError(self.pos if offset is None else offset, problem)

    def take(self, n: int, what: str) -> int:
        """Reserves ``n`` bytes for ``what``; returns their offset."""
        at = self.pos
        if n > self.end - at:
            raise self.fail(f"truncated: {what} needs {n} bytes, only {self.end - at} left")
        self.pos = at + n
        return at

    def unpack(self, fmt: struct.Struct, what: str):
        return fmt.unpack_from(self.data, self.take(fmt.size, what))[0]

    def left(self) -> int:
        return self.end - self.pos


def _read_text(r: _Reader, n: int, what: str) -> str:
    at = r.take(n, what)
    try:
        return r.data[at:at + n].decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as e:
        raise r.fail(f"{what} is not UTF-8 (byte 0x{r.data[at + e.start]:02x})", at + e.start) from None


def _read_value(r: _Reader, what: str, depth: int = 0, key: bool = False, floats: bool = False):
    at = r.pos
    tag = r.unpack(_U8, f"the tag of {what}")
    if tag == _TAG_STR:
        return _read_text(r, r.unpack(_U32, f"the length of {what}"), what)
    if tag == _TAG_LONG:
        return r.unpack(_I64, what)
    if tag == _TAG_INT32:
        return Int32(r.unpack(_I32, what))
    if key and tag == _TAG_COMPOSITE:
        return CompositeKey.of(_read_value(r, what, depth + 1, floats=True))
    if not key:
        if tag == _TAG_FLOAT and floats:
            return r.unpack(_F64, what)
        if tag == _TAG_NONE:
            return None
        if tag in (_TAG_FALSE, _TAG_TRUE):
            return tag == _TAG_TRUE
        if tag == _TAG_TUPLE:
            if depth >= MAX_VALUE_DEPTH:
                raise r.fail(f"{what} is nested deeper than {MAX_VALUE_DEPTH}", at)
            count = r.unpack(_U16, f"the length of {what}")
            return tuple(_read_value(r, what, depth + 1, floats=floats) for _ in range(count))
        if tag == _TAG_BYTES:
            n = r.unpack(_U32, f"the length of {what}")
            start = r.take(n, what)
            return bytes(r.data[start:start + n])
    kinds = "0x01-0x03 or 0x09" if key else ("0x01-0x08 or 0x0a" if floats else "0x01-0x08")
    raise r.fail(f"unknown tag 0x{tag:02x} for {what} (expected {kinds})", at)


def _read_header(r: _Reader) -> tuple:
    if r.left() < 4 and MAGIC.startswith(bytes(r.data)):
        raise r.fail(f"truncated: the magic needs 4 bytes, only {r.left()} left", 0)
    if bytes(r.data[:4]) != MAGIC:
        found = bytes(r.data[:4])
        raise r.fail(f"not a streamproof timer snapshot: magic {found!r}, expected {MAGIC!r}", 0)
    magic, version, flags, max_parallelism, first, count, snapshot_version, services = \
        _FIXED_HEADER.unpack_from(r.data, r.take(_FIXED_HEADER.size, "the header"))
    if version not in FORMAT_VERSIONS:
        raise r.fail(f"unsupported format version {version} (supported: 1, 2)", 4)
    if flags != 0:
        raise r.fail(f"unknown header flags 0x{flags:04x}", 6)
    if not 1 <= max_parallelism <= UPPER_BOUND_MAX_PARALLELISM:
        raise r.fail(f"max parallelism {max_parallelism} outside [1, {UPPER_BOUND_MAX_PARALLELISM}]", 8)
    if first + count > max_parallelism:
        raise r.fail(f"key groups [{first}, {first + count - 1}] outside max parallelism {max_parallelism}", 12)
    names = []
    for i in range(services):
        name = _read_text(r, r.unpack(_U16, f"the length of service name {i}"), f"service name {i}")
        if name in names:
            raise r.fail(f"service name {name!r} appears twice")
        names.append(name)
    crc_at = r.pos
    _check_crc(r.unpack(_U32, "the header CRC"), zlib.crc32(memoryview(r.data)[:crc_at]), crc_at, "header")
    kgr = KeyGroupRange(first, first + count - 1) if count else KeyGroupRange.empty()
    return version, max_parallelism, kgr, snapshot_version, tuple(names)


def _read_timers(r: _Reader, count: int, what: str, key_group: int, max_parallelism: int,
                 with_action: int | None) -> tuple:
    """``with_action``: None for event time; else True (format 2) or False (format 1)."""
    per_timer = _MIN_TIMER + (1 if with_action else 0)
    if count * per_timer > r.left():
        raise r.fail(f"{count} {what} need at least {count * per_timer} bytes, only {r.left()} left")
    out, seen = [], set()
    for _ in range(count):
        at = r.pos
        ts = r.unpack(_I64, f"a timestamp of the {what}")
        key = _read_value(r, f"a key of the {what}", key=True)
        namespace = _read_value(r, f"a namespace of the {what}")
        timer = InternalTimer(ts, key, namespace)
        actual = assign_to_key_group(key, max_parallelism)
        if actual != key_group:
            raise r.fail(f"timer {timer} belongs to key group {actual}, found in the section of {key_group}", at)
        if timer in seen:
            raise r.fail(f"timer {timer} appears twice among the {what}", at)
        seen.add(timer)
        if with_action is None:
            out.append(timer)
        elif with_action:
            byte_at = r.pos
            action = r.unpack(_U8, "a termination action")
            if action > max(TimerTerminationAction):
                raise r.fail(f"unknown termination action {action} (0 CANCEL, 1 TRIGGER, 2 WAIT)", byte_at)
            out.append((timer, TimerTerminationAction(action)))
        else:
            out.append((timer, FORMAT_1_ACTION))
    return tuple(out)


def _check_crc(expected: int, actual: int, offset: int, what: str) -> None:
    if actual != expected:
        raise SnapshotFormatError(offset, f"{what} CRC mismatch (stored 0x{expected:08x}, computed "
                                          f"0x{actual:08x}): the bytes are corrupted")


def _read_section(r: _Reader, version: int, max_parallelism: int, kgr: KeyGroupRange, names: tuple,
                  previous: int) -> tuple[int, dict, int]:
    at = r.pos
    _, key_group, length, crc = _SECTION_HEAD.unpack_from(r.data, r.take(_SECTION_HEAD.size, "a section header"))
    if not kgr.contains(key_group):
        raise r.fail(f"section for key group {key_group} outside the snapshot's {kgr}", at + 1)
    if key_group <= previous:
        raise r.fail(f"section for key group {key_group} after key group {previous} (must increase)", at + 1)
    if length > r.left():
        raise r.fail(f"truncated: the section of key group {key_group} needs {length} bytes, "
                     f"only {r.left()} left")
    view = memoryview(r.data)
    _check_crc(crc, zlib.crc32(view[r.pos:r.pos + length], zlib.crc32(view[at + 1:at + 9])), at + 9,
               f"section of key group {key_group}:")
    body = _Reader(r.data, r.pos, r.pos + length)
    r.pos += length
    entries = body.unpack(_U16, "the entry count")
    if entries == 0:
        raise body.fail(f"empty section for key group {key_group}")
    per_service: dict[str, KeyGroupTimers] = {}
    last_index, timers = -1, 0
    for _ in range(entries):
        index_at = body.pos
        index = body.unpack(_U16, "a service index")
        if index >= len(names):
            raise body.fail(f"service index {index} but the header names {len(names)} services", index_at)
        if index <= last_index:
            raise body.fail(f"service index {index} after {last_index} (must increase)", index_at)
        last_index = index
        event = _read_timers(body, body.unpack(_U32, "an event timer count"), "event-time timers",
                             key_group, max_parallelism, None)
        processing = _read_timers(body, body.unpack(_U32, "a processing timer count"), "processing-time timers",
                                  key_group, max_parallelism, version >= 2)
        if not event and not processing:
            raise body.fail(f"empty entry for service {names[index]!r}", index_at)
        per_service[names[index]] = KeyGroupTimers(event, processing)
        timers += len(event) + len(processing)
    if body.left():
        raise body.fail(f"{body.left()} unexpected bytes at the end of the section of key group {key_group}")
    return key_group, per_service, timers


def decode_snapshot(data) -> TimerSnapshotContents:
    """Reads a snapshot file; raises :class:`SnapshotFormatError` on anything but a valid one."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"a timer snapshot is bytes, not {type(data).__name__}")
    data = bytes(data)
    r = _Reader(data)
    version, max_parallelism, kgr, snapshot_version, names = _read_header(r)
    key_groups: dict[int, dict] = {}
    previous, timers = -1, 0
    while True:
        if not r.left():
            raise r.fail("truncated: no end record")
        record = data[r.pos]
        if record == SECTION:
            key_group, per_service, count = _read_section(r, version, max_parallelism, kgr, names, previous)
            key_groups[key_group] = per_service
            previous, timers = key_group, timers + count
        elif record == END:
            break
        else:
            raise r.fail(f"unknown record type 0x{record:02x} (expected 0x53 section or 0x45 end)")
    at = r.pos
    _, sections, count, crc = _END.unpack_from(data, r.take(_END.size, "the end record"))
    if sections != len(key_groups):
        raise r.fail(f"the end record counts {sections} sections, the file has {len(key_groups)}", at + 1)
    if count != timers:
        raise r.fail(f"the end record counts {count} timers, the sections hold {timers}", at + 5)
    _check_crc(crc, zlib.crc32(memoryview(data)[:at + 13]), at + 13, "file")
    if r.left():
        raise r.fail(f"{r.left()} unexpected bytes after the end record")
    return TimerSnapshotContents(version, max_parallelism, kgr, snapshot_version, names, key_groups)

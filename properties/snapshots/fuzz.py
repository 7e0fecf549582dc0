"""Fuzzing the timer-snapshot reader with mutated valid snapshots.

The corpus is a handful of valid files (both formats, several services, every key and namespace
type, empty ones). A mutation is one of :data:`MUTATIONS`. Two kinds of outcome are allowed:

  * a raw mutation (the bytes as a damaged disk or a wrong file would give them): the reader
    raises :class:`SnapshotFormatError`, or returns exactly the original contents (the mutation
    changed nothing that matters, e.g. a byte set to its own value), or the mutation produced
    another valid file byte for byte (a splice that kept the other file whole); anything else is
    a *wrong restore*;
  * a *re-sealed* mutation (every CRC recomputed after mutating, so the structural checks behind
    the CRCs are reached): :class:`SnapshotFormatError`, or contents that restore cleanly.

Any other exception is a bug of the reader. :func:`fuzz_reader` runs a seeded, deterministic loop
and counts; ``tests/test_snapshot_format.py`` runs it and a Hypothesis version of it.
"""

from __future__ import annotations

import random
import struct
import zlib
from collections import Counter
from dataclasses import dataclass, field

from streamproof.impl.state.key_groups import Int32, KeyGroupRange, assign_to_key_group, compute_key_group_range_for_operator_index
from streamproof.impl.timers.snapshot_format import (
    MAGIC, SECTION, KeyGroupTimers, SnapshotFormatError, TimerSnapshotContents, decode_snapshot, encode_snapshot,
)
from streamproof.impl.timers.snapshots import restore_from_snapshots
from streamproof.impl.timers.termination import TimerTerminationAction
from streamproof.impl.timers.internal_timer_service import InternalTimer, KeyContext
from streamproof.impl.timers.internal_time_service_manager import InternalTimeServiceManager
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService

MUTATIONS = (
    "truncate", "bit_flip", "byte_set", "insert", "delete", "duplicate", "swap", "foreign_magic",
    "wrong_version", "huge_count", "splice", "garbage", "resealed_byte_set", "resealed_huge_count",
    "resealed_insert",
)
KEYS = ["a", "b", "key1", "日本", "", 1, -7, 2**40, Int32(3), Int32(-9)]
NAMESPACES = ["w", "", None, True, False, 7, (1, "x", (None,)), b"\x00\xff", Int32(2)]


def corpus(seed: int = 0) -> list[bytes]:
    """Valid snapshot files: formats 1 and 2, up to three services, every value type, empty."""
    rng = random.Random(seed)
    files = []
    for max_parallelism, parallelism, timers, version in [
        (128, 1, 40, 2), (128, 2, 25, 1), (4, 1, 12, 2), (16, 3, 30, 2), (1, 1, 5, 1), (8, 1, 0, 2),
    ]:
        for index in range(parallelism):
            kgr = compute_key_group_range_for_operator_index(max_parallelism, parallelism, index)
            files.append(encode_snapshot(random_contents(rng, max_parallelism, kgr, timers, version)))
    return files


def random_contents(rng: random.Random, max_parallelism: int, kgr: KeyGroupRange, timers: int,
                    version: int) -> TimerSnapshotContents:
    names = ("timers", "other", "窓")[:rng.randint(1, 3)]
    groups: dict = {}
    for _ in range(timers):
        key = rng.choice(KEYS)
        kg = assign_to_key_group(key, max_parallelism)
        if not kgr.contains(kg):
            continue
        timer = InternalTimer(rng.choice([0, 5, -(2**63), 2**63 - 1, rng.randint(-1000, 1000)]), key,
                              rng.choice(NAMESPACES))
        event, processing = groups.setdefault(kg, {}).setdefault(rng.choice(names), ({}, {}))
        if rng.random() < 0.5:
            event[timer] = None
        else:
            processing[timer] = rng.choice(list(TimerTerminationAction)) if version == 2 else \
                TimerTerminationAction.CANCEL
    key_groups = {kg: {name: KeyGroupTimers(tuple(ev), tuple(pr.items())) for name, (ev, pr) in per.items()}
                  for kg, per in sorted(groups.items())}
    return TimerSnapshotContents(version, max_parallelism, kgr, rng.randint(1, 2**40), names, key_groups)


# -- mutations ---------------------------------------------------------------------------------
def mutate(data: bytes, kind: str, rng: random.Random, other: bytes = b"") -> bytes:
    b = bytearray(data)
    n = len(b)
    at = rng.randrange(n)
    if kind == "truncate":
        return bytes(b[:rng.randrange(n)])
    if kind == "bit_flip":
        for _ in range(rng.randint(1, 3)):
            b[rng.randrange(n)] ^= 1 << rng.randrange(8)
        return bytes(b)
    if kind in ("byte_set", "resealed_byte_set"):
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(n)] = rng.randrange(256)
        return bytes(b)
    if kind in ("insert", "resealed_insert"):
        return bytes(b[:at] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 8))) + b[at:])
    if kind == "delete":
        return bytes(b[:at] + b[at + rng.randint(1, 8):])
    if kind == "duplicate":
        end = min(n, at + rng.randint(1, 64))
        return bytes(b[:end] + b[at:end] + b[end:])
    if kind == "swap":
        i, j = sorted(rng.sample(range(n), 2)) if n > 1 else (0, 0)
        size = rng.randint(1, 16)
        b[i:i + size], b[j:j + size] = b[j:j + size], b[i:i + size]
        return bytes(b)
    if kind == "foreign_magic":
        return rng.choice([b"PK\x03\x04", b"\x89PNG", b"\xac\xed\x00\x05", b"SPTN", b"\x00\x00\x00\x00"]) + bytes(b[4:])
    if kind == "wrong_version":
        b[4:6] = struct.pack(">H", rng.choice([0, 3, 7, 256, 0xFFFF]))
        return bytes(b)
    if kind in ("huge_count", "resealed_huge_count"):
        positions = _count_positions(bytes(b))
        if positions:
            pos, size = rng.choice(positions)
            b[pos:pos + size] = rng.choice([b"\xff", b"\x7f", b"\x80"]) * size
        else:
            b[at] = 0xFF
        return bytes(b)
    if kind == "splice":
        cut = rng.randrange(len(other)) if other else 0
        return bytes(b[:at] + other[cut:])
    if kind == "garbage":
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 96)))
    raise ValueError(f"unknown mutation {kind!r}")


def _count_positions(data: bytes) -> list[tuple[int, int]]:
    """Offsets of length and count fields of a valid file: (offset, size)."""
    out = [(28, 2)]  # service count
    try:
        pos = _header_end(data)
        while pos < len(data) and data[pos] == SECTION:
            length = struct.unpack_from(">I", data, pos + 5)[0]
            out += [(pos + 5, 4), (pos + 13, 2), (pos + 15 + 2, 4)]  # length, entries, first event count
            pos += 13 + length
        out += [(pos + 1, 4), (pos + 5, 8)]  # end record: sections, timers
    except (struct.error, IndexError):
        pass
    return out


def _header_end(data: bytes) -> int:
    services = struct.unpack_from(">H", data, 28)[0]
    pos = 30
    for _ in range(services):
        pos += 2 + struct.unpack_from(">H", data, pos)[0]
    return pos + 4


def reseal(data: bytes) -> bytes:
    """Recomputes every CRC of a (possibly mutated) file whose framing still parses."""
    b = bytearray(data)
    try:
        head = _header_end(b) - 4
        if head + 4 > len(b):
            return data
        b[head:head + 4] = struct.pack(">I", zlib.crc32(b[:head]))
        pos = head + 4
        while pos < len(b) and b[pos] == SECTION and pos + 13 <= len(b):
            length = struct.unpack_from(">I", b, pos + 5)[0]
            if pos + 13 + length > len(b):
                return bytes(b)
            crc = zlib.crc32(b[pos + 13:pos + 13 + length], zlib.crc32(b[pos + 1:pos + 9]))
            b[pos + 9:pos + 13] = struct.pack(">I", crc)
            pos += 13 + length
        if pos + 17 <= len(b) and b[pos] == 0x45:
            b[pos + 13:pos + 17] = struct.pack(">I", zlib.crc32(b[:pos + 13]))
    except (struct.error, IndexError):
        pass
    return bytes(b)


# -- the loop --------------------------------------------------------------------------------
@dataclass
class FuzzReport:
    inputs: int = 0
    format_errors: int = 0     # SnapshotFormatError
    unchanged: int = 0         # accepted, contents identical to the original
    other_file: int = 0        # a splice that produced another valid file byte for byte
    accepted_resealed: int = 0  # a re-sealed mutation that is a valid snapshot (restored cleanly)
    wrong_restores: list = field(default_factory=list)    # (kind, seed, what)
    other_exceptions: list = field(default_factory=list)  # (kind, seed, repr)
    by_kind: Counter = field(default_factory=Counter)
    problems: Counter = field(default_factory=Counter)    # first words of the error messages

    @property
    def ok(self) -> bool:
        return not self.wrong_restores and not self.other_exceptions


def check_one(original: bytes, mutated: bytes, kind: str, report: FuzzReport, tag=None,
              other: bytes = b"") -> None:
    """Reads one mutated input and files the outcome in ``report``."""
    report.inputs += 1
    report.by_kind[kind] += 1
    try:
        contents = decode_snapshot(mutated)
    except SnapshotFormatError as e:
        report.format_errors += 1
        report.problems[" ".join(e.problem.split()[:3])] += 1
        return
    except Exception as e:  # noqa: BLE001 - exactly what the fuzzer looks for
        report.other_exceptions.append((kind, tag, f"{type(e).__name__}: {e}"[:300]))
        return
    if kind.startswith("resealed"):
        try:
            _restore(contents)
        except Exception as e:  # noqa: BLE001
            report.other_exceptions.append((kind, tag, f"restore: {type(e).__name__}: {e}"[:300]))
            return
        report.accepted_resealed += 1
    elif contents == decode_snapshot(original):
        report.unchanged += 1
    elif mutated == other:
        report.other_file += 1
    else:
        report.wrong_restores.append((kind, tag, f"{len(original)} -> {len(mutated)} bytes"))


def _restore(contents: TimerSnapshotContents) -> None:
    manager = InternalTimeServiceManager(KeyContext(contents.max_parallelism), contents.key_group_range,
                                         ManualProcessingTimeService())
    restore_from_snapshots(manager, [contents])


def fuzz_reader(count: int, seed: int = 0) -> FuzzReport:
    """``count`` seeded mutations of the corpus, each read back; deterministic."""
    rng = random.Random(seed)
    files = corpus(seed)
    report = FuzzReport()
    for i in range(count):
        original = rng.choice(files)
        kind = MUTATIONS[i % len(MUTATIONS)]
        other = rng.choice(files)
        mutated = mutate(original, kind, rng, other)
        if kind.startswith("resealed"):
            mutated = reseal(mutated)
        check_one(original, mutated, kind, report, (seed, i), other)
    return report


__all__ = ["MUTATIONS", "corpus", "mutate", "reseal", "fuzz_reader", "check_one", "FuzzReport", "MAGIC"]

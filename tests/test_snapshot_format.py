"""The timer-snapshot file format (impl/timers/snapshot_format.py): round trips, the layout of
docs/snapshots.md, errors naming the offset, and the reader under fuzzing."""

import random
import struct
import zlib

import pytest
from hypothesis import given, strategies as st

from streamproof.impl.state.key_groups import Int32, KeyGroupRange
from streamproof.impl.timers.snapshot_format import (
    MAGIC, KeyGroupTimers, SnapshotFormatError, TimerSnapshotContents, decode_snapshot, encode_snapshot,
)
from streamproof.impl.timers.termination import TimerTerminationAction
from streamproof.impl.timers.internal_timer_service import InternalTimer
from streamproof.properties.snapshots.fuzz import (
    MUTATIONS, FuzzReport, check_one, corpus, fuzz_reader, mutate, random_contents, reseal,
)

CANCEL, TRIGGER, WAIT = TimerTerminationAction


def small(version=2):
    kg = 55  # key group of "x" under max parallelism 128
    timers = KeyGroupTimers((InternalTimer(7, "x", "w"),), ((InternalTimer(-1, "x", (1, None)), TRIGGER),))
    return TimerSnapshotContents(version, 128, KeyGroupRange(0, 127), 9, ("timers", "other"), {kg: {"other": timers}})


def test_layout_byte_by_byte():
    data = encode_snapshot(small())
    assert data[:4] == MAGIC == b"SPTM"
    assert struct.unpack_from(">HHIIIQH", data, 4) == (2, 0, 128, 0, 128, 9, 2)
    assert data[30:38] == b"\x00\x06timers" and data[38:45] == b"\x00\x05other"
    assert struct.unpack_from(">I", data, 45)[0] == zlib.crc32(data[:45])
    assert data[49] == 0x53 and struct.unpack_from(">I", data, 50)[0] == 55
    length = struct.unpack_from(">I", data, 54)[0]
    assert struct.unpack_from(">I", data, 58)[0] == zlib.crc32(data[62:62 + length], zlib.crc32(data[50:58]))
    payload = data[62:62 + length]
    assert payload[:4] == b"\x00\x01\x00\x01"  # one entry: service index 1 ("other")
    assert payload[4:8] == b"\x00\x00\x00\x01"  # one event timer
    assert payload[8:16] == struct.pack(">q", 7) and payload[16:22] == b"\x01\x00\x00\x00\x01x"
    assert payload[22:28] == b"\x01\x00\x00\x00\x01w"
    assert payload[28:32] == b"\x00\x00\x00\x01"  # one processing timer
    assert payload[-1:] == b"\x01"                # its action: TRIGGER
    end = data[62 + length:]
    assert end[0] == 0x45 and struct.unpack(">IQI", end[1:]) == (1, 2, zlib.crc32(data[:-4]))


def test_format_1_has_no_action_and_reads_as_cancel():
    v2, v1 = encode_snapshot(small(2)), encode_snapshot(small(2), format_version=1)
    assert len(v1) == len(v2) - 1 and struct.unpack_from(">H", v1, 4)[0] == 1
    (_, _, _, action), = [e for e in decode_snapshot(v1).entries() if e[1] == "processing"]
    assert action is CANCEL


@pytest.mark.parametrize("seed", range(8))
def test_round_trip(seed):
    rng = random.Random(seed)
    for version in (1, 2):
        contents = random_contents(rng, 128, KeyGroupRange(0, 127), 80, version)
        assert decode_snapshot(encode_snapshot(contents)) == contents


def test_values_round_trip_exactly():
    namespaces = ["", "日本", "\ud800", None, True, False, -2**63, 2**63 - 1, Int32(-1), (1, ("a", (None, b"")),),
                  b"\x00\xff"]
    for namespace in namespaces:
        contents = TimerSnapshotContents(2, 1, KeyGroupRange(0, 0), 1, ("t",), {0: {"t": KeyGroupTimers(
            (InternalTimer(0, Int32(5), namespace),), ((InternalTimer(2**63 - 1, "", namespace), WAIT),))}})
        back = decode_snapshot(encode_snapshot(contents))
        assert back == contents
        assert [type(e[2].namespace) for e in back.entries()] == [type(namespace)] * 2


def test_writer_refuses_what_it_cannot_write():
    def one(key, namespace):
        return TimerSnapshotContents(2, 1, KeyGroupRange(0, 0), 1, ("t",),
                                     {0: {"t": KeyGroupTimers((InternalTimer(0, key, namespace),))}})
    with pytest.raises(TypeError, match="float"):
        encode_snapshot(one("a", 1.5))
    with pytest.raises(TypeError, match="keys are str, int or Int32"):
        encode_snapshot(one(("a",), "w"))
    with pytest.raises(ValueError, match="Java longs"):
        encode_snapshot(one("a", 2**64))


@pytest.mark.parametrize("mutation,offset,problem", [
    (lambda d: d[:3], 0, "truncated: the magic needs 4 bytes"),
    (lambda d: b"PK\x03\x04" + d[4:], 0, "not a streamproof timer snapshot: magic b'PK\\x03\\x04'"),
    (lambda d: d[:4] + b"\x00\x03" + d[6:], 4, "unsupported format version 3 (supported: 1, 2)"),
    (lambda d: d[:6] + b"\x00\x01" + d[8:], 6, "unknown header flags 0x0001"),
    (lambda d: d[:20], 0, "truncated: the header needs 30 bytes, only 20 left"),
    (lambda d: d[:40] + b"X" + d[41:], 45, "header CRC mismatch"),
    (lambda d: d[:70] + bytes([d[70] ^ 4]) + d[71:], 58, "section of key group 55: CRC mismatch"),
    (lambda d: d[:-17], len(encode_snapshot(small())) - 17, "truncated: no end record"),
    (lambda d: d + b"\x00", len(encode_snapshot(small())), "1 unexpected bytes after the end record"),
    (lambda d: d[:-1] + bytes([d[-1] ^ 1]), len(encode_snapshot(small())) - 4, "file CRC mismatch"),
])
def test_errors_name_the_offset_and_the_problem(mutation, offset, problem):
    with pytest.raises(SnapshotFormatError) as e:
        decode_snapshot(mutation(encode_snapshot(small())))
    assert e.value.offset == offset and problem in e.value.problem
    assert str(e.value).startswith(f"timer snapshot: offset {offset}: ")


def test_resealed_structural_errors_are_named():
    data = bytearray(encode_snapshot(small()))
    data[62 + 2:62 + 4] = b"\x00\x07"  # a service index the header does not name
    with pytest.raises(SnapshotFormatError, match="service index 7 but the header names 2 services"):
        decode_snapshot(reseal(bytes(data)))
    data = bytearray(encode_snapshot(small()))
    data[62 + 4:62 + 8] = b"\xff\xff\xff\xff"  # a huge count
    with pytest.raises(SnapshotFormatError, match="4294967295 event-time timers need at least"):
        decode_snapshot(reseal(bytes(data)))


def test_not_bytes_is_a_type_error():
    with pytest.raises(TypeError):
        decode_snapshot("SPTM")


# -- fuzzing -------------------------------------------------------------------------------------
FUZZ_INPUTS = 10_000


def test_reader_fuzzing_only_raises_snapshot_format_error():
    """The acceptance figure: 10,000 seeded mutations of valid snapshots (about a second)."""
    report = fuzz_reader(FUZZ_INPUTS, seed=20260)
    print(f"\nfuzzed {report.inputs} inputs: {report.format_errors} SnapshotFormatError, {report.unchanged} "
          f"unchanged, {report.other_file} spliced into another valid file, {report.accepted_resealed} "
          f"re-sealed and valid, {len(report.wrong_restores)} wrong restores, {len(report.other_exceptions)} "
          f"other exceptions")
    assert report.inputs == FUZZ_INPUTS and set(report.by_kind) == set(MUTATIONS)
    assert report.other_exceptions == [] and report.wrong_restores == []
    assert report.format_errors > 0.9 * FUZZ_INPUTS


CORPUS = corpus(1)


@given(index=st.integers(0, len(CORPUS) - 1), kind=st.sampled_from(MUTATIONS), seed=st.integers(0, 2**32))
def test_reader_fuzzing_with_hypothesis(index, kind, seed):
    rng = random.Random(seed)
    original = CORPUS[index]
    other = CORPUS[(index + 1) % len(CORPUS)]
    mutated = mutate(original, kind, rng, other)
    if kind.startswith("resealed"):
        mutated = reseal(mutated)
    report = FuzzReport()
    check_one(original, mutated, kind, report, seed, other)
    assert report.ok, (report.other_exceptions, report.wrong_restores)


@given(st.binary(max_size=200))
def test_reader_on_arbitrary_bytes(data):
    try:
        decode_snapshot(data)
    except SnapshotFormatError:
        pass
    try:
        decode_snapshot(MAGIC + data)
    except SnapshotFormatError:
        pass


def test_every_single_bit_flip_of_a_file_is_detected():
    """Every byte is covered by a CRC or a structural check (docs/snapshots.md)."""
    for data in (encode_snapshot(small(2)), encode_snapshot(small(1))):
        for offset in range(len(data)):
            for bit in range(8):
                mutated = bytearray(data)
                mutated[offset] ^= 1 << bit
                with pytest.raises(SnapshotFormatError):
                    decode_snapshot(bytes(mutated))


def test_composite_keys_round_trip_with_their_hash_codes():
    from streamproof.impl.state.key_groups import CompositeKey

    key = CompositeKey.of(("ann", 1.5, True))
    contents = TimerSnapshotContents(2, 1, KeyGroupRange(0, 0), 1, ("t",),
                                     {0: {"t": KeyGroupTimers((InternalTimer(7, key, "w"),))}})
    (entry,) = list(decode_snapshot(encode_snapshot(contents)).entries())
    assert entry[2].key == key and entry[2].key.hash_code == key.hash_code


def test_every_section_payload_flip_with_the_file_crc_recomputed_is_rejected_naming_its_key_group():
    """Only the section CRC32 can catch a payload byte flipped once the whole-file CRC is
    recomputed (``corrupt_section``): every payload byte of every section of the corpus, flipped
    with a few masks, is rejected by that section's CRC, at its offset, naming its key group."""
    from streamproof.properties.snapshots.check import corrupt_section, names_key_group, section_spans

    checked = 0
    for data in corpus(0)[:6]:
        spans, end = section_spans(data)
        assert end is not None
        for key_group, start, stop in spans:
            for offset in range(stop - start - 13):
                for xor in (0x01, 0x80, 0xFF):
                    mutated = bytearray(data)
                    assert corrupt_section(mutated, key_group, offset, xor) == (start, stop)
                    assert zlib.crc32(mutated[:end + 13]) == struct.unpack_from(">I", mutated, end + 13)[0]
                    with pytest.raises(SnapshotFormatError) as e:
                        decode_snapshot(bytes(mutated))
                    assert e.value.offset == start + 9 and "CRC mismatch" in e.value.problem, str(e.value)
                    assert names_key_group(str(e.value), key_group), str(e.value)
                    checked += 1
    assert checked > 1000


def test_corrupt_section_leaves_a_file_without_that_section_unchanged():
    from streamproof.properties.snapshots.check import corrupt_section, section_spans

    data = encode_snapshot(small())
    assert [kg for kg, _, _ in section_spans(data)[0]] == [55]
    mutated = bytearray(data)
    assert corrupt_section(mutated, 54, 0, 1) is None and bytes(mutated) == data


def test_section_crc_skipping_the_payload_lets_a_recomputed_file_through():
    """The bug-zoo variant section-crc-skips-payload: raw flips are still caught (by the file CRC),
    a payload flip with the file CRC recomputed is read back as other timers."""
    from streamproof.properties.bugzoo import get_variant
    from streamproof.properties.snapshots.check import corrupt_section, section_spans

    with get_variant("section-crc-skips-payload").patch():
        data = encode_snapshot(small())
        assert decode_snapshot(data) == decode_snapshot(encode_snapshot(small()))
        (_, start, _), = section_spans(data)[0]
        ts_low = 2 + 2 + 4 + 7  # entry count, service index, event count, then the i64's last byte
        flipped = bytearray(data)
        flipped[start + 13 + ts_low] ^= 0x01
        with pytest.raises(SnapshotFormatError, match="file CRC mismatch"):
            decode_snapshot(bytes(flipped))
        mutated = bytearray(data)
        corrupt_section(mutated, 55, ts_low, 0x01)  # the first timestamp: 7 -> 6
        assert [t.timestamp for _, _, t, _ in decode_snapshot(bytes(mutated)).entries()][0] == 6
    with pytest.raises(SnapshotFormatError, match="section of key group 55"):
        decode_snapshot(bytes(mutated))

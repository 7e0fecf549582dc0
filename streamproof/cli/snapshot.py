"""``streamproof snapshot inspect FILE``: read a timer snapshot file (the binary format of
``impl/timers/snapshot_format.py``, byte by byte in docs/snapshots.md) and say what it holds and whether
it is valid: the header (format, max parallelism, key-group range, snapshot version, services),
one row per section (key group, bytes, CRC, timers per service and domain), the totals and the
verdict. Nothing is trusted: an invalid file is reported with the reader's offset and problem
(exit 1), sections before the damage are still listed. Registered on the ``streamproof`` group
by :mod:`streamproof.cli`."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import click

from streamproof.cli.common import EXIT_FAILED, EXIT_HELD, InputError, emit_json, json_option, table

MAX_SNAPSHOT_BYTES = 256 * 1024 * 1024  # read whole; beyond this inspecting is not what was meant
_SECTION_HEAD = struct.Struct(">BIII")


@click.group()
def snapshot() -> None:
    """Timer snapshot files (the binary format of docs/snapshots.md)."""


@snapshot.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--timers", "show_timers", is_flag=True, help="also list every timer (service, domain, "
              "timestamp, key, namespace, action)")
@json_option
def inspect(file: Path, show_timers: bool, as_json: bool) -> None:
    """Validate a timer snapshot FILE and show its sections, key groups and counts.

    Exit 0: valid; 1: not a valid snapshot (the offset and the problem are printed); 2: the file
    cannot be read."""
    from streamproof.impl.timers.snapshot_format import SnapshotFormatError, decode_snapshot

    data = _read(file)
    sections = _sections(data)
    try:
        contents = decode_snapshot(data)
        error = None
    except SnapshotFormatError as e:
        contents, error = None, e
    report = _report(file, data, sections, contents, error, show_timers)
    if as_json:
        emit_json(report)
    else:
        _print(report)
    click.get_current_context().exit(EXIT_HELD if error is None else EXIT_FAILED)


def _read(file: Path) -> bytes:
    try:
        size = file.stat().st_size
        if size > MAX_SNAPSHOT_BYTES:
            raise InputError(f"{file}: {size} bytes, over the {MAX_SNAPSHOT_BYTES // 2**20} MB this command reads")
        return file.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{file}: file not found") from None
    except OSError as e:
        raise InputError(f"{file}: cannot read: {e.strerror or e}") from None


def _sections(data: bytes) -> list[dict]:
    """The section headers found by walking the file (independently of the reader, so a damaged
    file still shows where its sections are): key group, offset, length, CRC verdict."""
    from streamproof.impl.timers.snapshot_format import SnapshotFormatError, _read_header, _Reader

    try:
        r = _Reader(data)
        _read_header(r)
    except SnapshotFormatError:
        return []
    found, pos = [], r.pos  # the reader checked the header (its CRC too): sections start here
    while pos + _SECTION_HEAD.size <= len(data) and data[pos] == 0x53:
        _, key_group, length, crc = _SECTION_HEAD.unpack_from(data, pos)
        body = pos + _SECTION_HEAD.size
        if body + length > len(data):
            found.append({"key_group": key_group, "offset": pos, "bytes": length, "crc": "truncated"})
            break
        actual = zlib.crc32(data[body:body + length], zlib.crc32(data[pos + 1:pos + 9]))
        found.append({"key_group": key_group, "offset": pos, "bytes": length, "crc": "ok" if actual == crc else "bad"})
        pos = body + length
    return found


def _report(file: Path, data: bytes, sections: list[dict], contents, error, show_timers: bool) -> dict:
    report: dict = {"file": str(file), "bytes": len(data), "valid": error is None}
    if error is not None:
        report["error"] = {"offset": error.offset, "problem": error.problem}
    header = contents and (contents.format_version, contents.max_parallelism, contents.key_group_range,
                           contents.snapshot_version, contents.service_names)
    if header is None:
        from streamproof.impl.timers.snapshot_format import SnapshotFormatError, _read_header, _Reader
        try:
            header = _read_header(_Reader(data))
        except SnapshotFormatError:
            pass
    if header is not None:
        version, max_parallelism, kgr, snapshot_version, names = header
        report.update(format=version, max_parallelism=max_parallelism,
                      key_groups=[kgr.start_key_group, kgr.end_key_group],
                      snapshot_version=snapshot_version, services=list(names))
    if contents is None:
        report["sections"] = sections
        return report
    report["timers"] = contents.timer_count()
    by_group = {s["key_group"]: s for s in sections}
    rows = []
    for key_group, per_service in sorted(contents.key_groups.items()):
        row = dict(by_group.get(key_group, {"key_group": key_group}))
        row["timers"] = {name: {"event": len(t.event), "processing": len(t.processing)} for name, t in per_service.items()}
        rows.append(row)
    report["sections"] = rows
    if show_timers:
        report["timer_list"] = [
            {"service": name, "domain": domain, "timestamp": timer.timestamp, "key": repr(timer.key),
             "namespace": repr(timer.namespace), "action": None if action is None else action.name}
            for name, domain, timer, action in contents.entries()]
    return report


def _print(report: dict) -> None:
    echo = click.echo
    echo(f"{report['file']}: {report['bytes']} bytes")
    if "format" in report:
        first, last = report["key_groups"]
        echo(f"format {report['format']}{' (no termination actions: restored as CANCEL)' if report['format'] == 1 else ''}, "
             f"max parallelism {report['max_parallelism']}, key groups {first}..{last}, "
             f"snapshot version {report['snapshot_version']}")
        echo(f"services: {', '.join(report['services']) or '(none)'}")
    rows = []
    for s in report["sections"]:
        timers = s.get("timers")
        counts = "; ".join(f"{name}: {c['event']} event, {c['processing']} processing" for name, c in timers.items()) \
            if timers else ""
        rows.append((s["key_group"], s.get("offset", ""), s.get("bytes", ""), s.get("crc", ""), counts))
    if rows:
        for line in table(("key group", "offset", "bytes", "CRC", "timers"), rows, {0, 1, 2}):
            echo(line)
    else:
        echo("no sections")
    for t in report.get("timer_list", []):
        echo(f"  {t['service']} {t['domain']} {t['timestamp']} key {t['key']} namespace {t['namespace']}"
             + (f" {t['action']}" if t["action"] else ""))
    if report["valid"]:
        echo(f"valid: {len(report['sections'])} section(s), {report['timers']} timer(s), every CRC checked")
    else:
        echo(f"INVALID: offset {report['error']['offset']}: {report['error']['problem']}")

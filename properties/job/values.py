"""Records and outputs of any JSON-like shape: written into scenario files and compared by value.

``encode`` turns a record (tuples, lists, dicts, PyFlink ``Row``, strings, floats with NaN and
infinities, bytes, sets, dates and times, decimals, nesting) into plain JSON with tagged objects
(``{"$tuple": [...]}``, ``{"$row": [...], "$names": [...]}``, ``{"$float": "nan"}``,
``{"$datetime": "2024-05-01T12:00:00.250000+02:00"}``, ``{"$decimal": "12.50"}``, ...); ``decode``
gives it back, equal and of the same type. ``canonical`` is a hashable, order-free form for
comparing outputs by value: lists and dicts need not be hashable, NaN equals NaN, a set equals a set
with the same elements, an aware datetime equals the same instant in another time zone and
``Decimal("1.50")`` equals ``Decimal("1.5")`` (as ``==`` says).

The types of PyFlink's ``Types`` (docs/flink-api.md): ``SQL_TIMESTAMP``/``LOCAL_DATE_TIME`` give a
``datetime.datetime`` (naive or aware, microseconds; a ``zoneinfo`` zone keeps its name, another
tzinfo its UTC offset), ``SQL_DATE``/``LOCAL_DATE`` a ``datetime.date``, ``SQL_TIME``/``LOCAL_TIME``
a ``datetime.time``, ``BIG_DEC`` a ``decimal.Decimal`` (its exact digits), ``INSTANT`` PyFlink's
``Instant``, ``PRIMITIVE_ARRAY(BYTE())`` ``bytes``; ``datetime.timedelta`` too.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import math
from typing import Any


class UnencodableValue(ValueError):
    """A record of a type a scenario file cannot hold (one line)."""


def _is_flink(value: Any, name: str) -> bool:
    module = type(value).__module__ or ""
    return type(value).__name__ == name and (module.startswith("streamproof.flink") or module.startswith("pyflink"))


def _is_row(value: Any) -> bool:
    return _is_flink(value, "Row")


def _row_fields(row: Any) -> tuple[list, list | None]:
    names = None
    try:
        names = list(row.as_dict().keys()) if getattr(row, "_fields", None) else None
    except Exception:  # noqa: BLE001 - a Row without names
        names = None
    return list(row), names


def _row_kind(row: Any) -> str | None:
    try:
        kind = row.get_row_kind().name
    except Exception:  # noqa: BLE001 - not a kind we know
        return None
    return None if kind == "INSERT" else kind


def encode(value: Any) -> Any:
    """``value`` as plain JSON (tagged objects for what JSON has not); :class:`UnencodableValue`
    (one line) for a type a scenario file cannot hold."""
    return _encode(value, False)


def _encode(value: Any, canon: bool) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return {"$float": "nan"}
        if math.isinf(value):
            return {"$float": "inf" if value > 0 else "-inf"}
        return value
    if _is_row(value):
        values, names = _row_fields(value)
        out = {"$row": [_encode(v, canon) for v in values]}
        if names:
            out["$names"] = names
        kind = _row_kind(value)
        if kind:
            out["$kind"] = kind
        return out
    if isinstance(value, tuple):
        return {"$tuple": [_encode(v, canon) for v in value]}
    if isinstance(value, list):
        return [_encode(v, canon) for v in value]
    if isinstance(value, dict):
        return {"$dict": [[_encode(k, canon), _encode(v, canon)] for k, v in value.items()]}
    if isinstance(value, (set, frozenset)):
        return {"$set": sorted((_encode(v, canon) for v in value), key=_text)}
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, datetime.datetime):  # before date: a datetime is a date
        return _timelike("$datetime", value, canon)
    if isinstance(value, datetime.date):
        return {"$date": value.isoformat()}
    if isinstance(value, datetime.time):
        return _timelike("$time", value, canon)
    if isinstance(value, datetime.timedelta):
        return {"$timedelta": [value.days, value.seconds, value.microseconds]}
    if isinstance(value, decimal.Decimal):
        return {"$decimal": _decimal_text(value) if canon else str(value)}
    if _is_flink(value, "Instant"):
        return {"$instant": [value.seconds, value.nanos]}
    if _is_flink(value, "OutputTag"):  # a (tag, value) pair PyFlink emits as a value (no get_side_output reads it)
        return {"$output_tag": value.tag_id}
    raise UnencodableValue(f"a value of type {type(value).__name__} ({_short(value)}) cannot be written in a "
                           "scenario; records must be JSON-like (str, int, float, bool, None, tuple, list, dict, "
                           "Row, bytes, set, datetime, date, time, timedelta, Decimal, Instant)")


def _timelike(tag: str, value: Any, canon: bool) -> dict:
    """A datetime or time as ISO 8601 text (microseconds, UTC offset); exactly: ``$tz`` names a
    ``zoneinfo`` zone, ``$fold`` marks the second of two equal wall times. Canonically an aware
    datetime is its instant in UTC (``==`` compares instants; fold and zone do not count)."""
    if canon:
        if tag == "$datetime" and value.utcoffset() is not None:
            try:
                value = value.astimezone(datetime.timezone.utc)
            except OverflowError:  # near datetime.min/max: keep the offset
                pass
        return {tag: value.replace(fold=0).isoformat()}
    out = {tag: value.isoformat()}
    key = getattr(value.tzinfo, "key", None)
    if key is not None and type(value.tzinfo).__module__ == "zoneinfo":
        out["$tz"] = key
    if value.fold:
        out["$fold"] = 1
    return out


def _decimal_text(value: decimal.Decimal) -> str:
    """Equal decimals, one text: ``Decimal("1.50")`` and ``Decimal("1.5")`` are ``1.5``; every NaN is ``NaN``."""
    if value.is_nan():
        return "NaN"
    if value.is_infinite() or value.is_zero():
        return str(value) if value.is_infinite() else "0"
    exact = decimal.Context(prec=len(value.as_tuple().digits), Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
    value = value.normalize(exact)  # no rounding: as many digits as it has
    return format(value, "f") if abs(value.as_tuple().exponent) <= 40 else str(value)


def decode(data: Any) -> Any:
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    if "$float" in data:
        return float(data["$float"])
    if "$tuple" in data:
        return tuple(decode(v) for v in data["$tuple"])
    if "$row" in data:
        from streamproof.flink.common.types import Row, RowKind

        values = [decode(v) for v in data["$row"]]
        names = data.get("$names")
        if names and list(names) == sorted(set(names)):
            row = Row(**dict(zip(names, values)))  # as PyFlink builds named rows: fields sorted by name
        else:
            row = Row(*values)
            if names:
                row.set_field_names(list(names))  # Row('b', 'a')(1, 2): the names in their order
        if "$kind" in data:
            row.set_row_kind(RowKind[data["$kind"]])
        return row
    if "$dict" in data:
        return {_hashable(decode(k)): decode(v) for k, v in data["$dict"]}
    if "$set" in data:
        return {_hashable(decode(v)) for v in data["$set"]}
    if "$bytes" in data:
        return base64.b64decode(data["$bytes"])
    if "$datetime" in data:
        return _zoned(datetime.datetime.fromisoformat(data["$datetime"]), data)
    if "$date" in data:
        return datetime.date.fromisoformat(data["$date"])
    if "$time" in data:
        return _zoned(datetime.time.fromisoformat(data["$time"]), data)
    if "$timedelta" in data:
        days, seconds, microseconds = data["$timedelta"]
        return datetime.timedelta(days=days, seconds=seconds, microseconds=microseconds)
    if "$decimal" in data:
        return decimal.Decimal(data["$decimal"])
    if "$instant" in data:
        from streamproof.flink.common.time import Instant

        seconds, nanos = data["$instant"]
        return Instant(seconds, nanos)
    if "$output_tag" in data:
        from streamproof.flink.datastream.output_tag import OutputTag

        return OutputTag(data["$output_tag"])
    raise UnencodableValue(f"unknown tagged value {json.dumps(data)[:80]}")


def _zoned(value: Any, data: dict) -> Any:
    fold = int(data.get("$fold", 0))
    key = data.get("$tz")
    if key is not None:
        try:
            from zoneinfo import ZoneInfo

            return value.replace(tzinfo=ZoneInfo(key), fold=fold)
        except Exception:  # noqa: BLE001 - no such zone here: the UTC offset written stays
            pass
    return value.replace(fold=fold) if fold else value


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def canonical(value: Any) -> str:
    """A hashable form equal for equal values (outputs of any shape; unknown types by repr)."""
    try:
        return _text(_encode(value, True))
    except UnencodableValue:
        return json.dumps({"$repr": [type(value).__name__, repr(value)]})


def _text(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def _short(value: Any) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= 60 else text[:57] + "..."

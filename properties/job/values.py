"""Records and outputs of any JSON-like shape: written into scenario files and compared by value.

``encode`` turns a record (tuples, lists, dicts, PyFlink ``Row``, strings, floats with NaN and
infinities, bytes, sets, nesting) into plain JSON with tagged objects (``{"$tuple": [...]}``,
``{"$row": [...], "$names": [...]}``, ``{"$float": "nan"}``, ...); ``decode`` gives it back.
``canonical`` is a hashable, order-free form for comparing outputs by value: lists and dicts need
not be hashable, NaN equals NaN, a set equals a set with the same elements.
"""

from __future__ import annotations

import base64
import json
import math
from typing import Any


class UnencodableValue(ValueError):
    """A record of a type a scenario file cannot hold (one line)."""


def _is_row(value: Any) -> bool:
    module = type(value).__module__ or ""
    return type(value).__name__ == "Row" and (module.startswith("streamproof.flink") or module.startswith("pyflink"))


def _row_fields(row: Any) -> tuple[list, list | None]:
    names = None
    try:
        names = list(row.as_dict().keys()) if getattr(row, "_fields", None) else None
    except Exception:  # noqa: BLE001 - a Row without names
        names = None
    return list(row), names


def encode(value: Any) -> Any:
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
        out = {"$row": [encode(v) for v in values]}
        if names:
            out["$names"] = names
        return out
    if isinstance(value, tuple):
        return {"$tuple": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {"$dict": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, (set, frozenset)):
        return {"$set": sorted((encode(v) for v in value), key=_text)}
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    raise UnencodableValue(f"a value of type {type(value).__name__} ({_short(value)}) cannot be written in a "
                           "scenario; records must be JSON-like (str, int, float, bool, None, tuple, list, dict, "
                           "Row, bytes, set)")


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
        from streamproof.flink.common import Row

        values = [decode(v) for v in data["$row"]]
        names = data.get("$names")
        return Row(**dict(zip(names, values))) if names else Row(*values)
    if "$dict" in data:
        return {_hashable(decode(k)): decode(v) for k, v in data["$dict"]}
    if "$set" in data:
        return {_hashable(decode(v)) for v in data["$set"]}
    if "$bytes" in data:
        return base64.b64decode(data["$bytes"])
    raise UnencodableValue(f"unknown tagged value {json.dumps(data)[:80]}")


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def canonical(value: Any) -> str:
    """A hashable form equal for equal values (outputs of any shape; unknown types by repr)."""
    try:
        return _text(encode(value))
    except UnencodableValue:
        return json.dumps({"$repr": [type(value).__name__, repr(value)]})


def _text(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def _short(value: Any) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= 60 else text[:57] + "..."

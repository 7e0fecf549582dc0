"""Scenarios: load, validate and dump the JSON documents every check consumes (DESIGN.md §2).

A scenario is ``{"format": "streamproof.scenario/1", "family": ..., "steps": [...], ...}``.
Each family owns a step vocabulary: frozen dataclasses whose fields are declared with
:func:`arg` and a field *kind* (:data:`INT64`, :class:`IntKind`, :class:`EnumKind`, ...).
The kinds drive parsing, dumping and the JSON Schema (:func:`json_schema`), so validation and
``properties/schemas/scenario.schema.json`` cannot drift apart.

Every problem is reported as a one-line :class:`ScenarioError` naming the step and the field.
Regenerate the schema file with
``python3 -m streamproof.properties.scenario > properties/schemas/scenario.schema.json``.

Size: one format: parsing, dumping and the JSON Schema derive from the same field kinds, so they cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Iterable

from streamproof.impl.state.key_groups import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    UPPER_BOUND_MAX_PARALLELISM,
    Int32,
)
from streamproof.properties import families

FORMAT = "streamproof.scenario/1"


def _limit(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() and int(value) > 0 else default


# What one scenario may hold (docs/scenario-format.md#limits): beyond these a replay takes minutes
# and gigabytes with nothing to show, so the loader refuses it at once. Raise them through the
# environment for a deliberate long run.
MAX_SCENARIO_BYTES = _limit("STREAMPROOF_MAX_SCENARIO_BYTES", 4 * 1024 * 1024)
MAX_STEPS = _limit("STREAMPROOF_MAX_STEPS", 10_000)
# io: unreadable file / not UTF-8; json: not JSON; invalid: wrong type, value or range;
# missing / unknown_field / unknown_op: as named; semantic: a rule the JSON Schema cannot express
# (family rules such as "new_instance first", and cross-field rules such as end < max_parallelism).
ERROR_KINDS = ("io", "json", "invalid", "missing", "unknown_field", "unknown_op", "semantic")
MAX_JSON_DEPTH = 64  # nesting allowed inside params / expected / flink_observed

_MISSING: Any = object()
_LINE_BREAKS = {ord(c): repr(c)[1:-1] for c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"}
_NAMED_BOUNDS = {INT64_MIN: "-2^63", INT64_MIN + 1: "-2^63+1", INT64_MAX: "2^63-1", INT32_MIN: "-2^31", INT32_MAX: "2^31-1"}


# ----------------------------------------------------------------------------------- errors


class ScenarioError(ValueError):
    """A malformed scenario; the message is always a single line.

    ``step_index`` is the top-level step (0-based) and ``field`` the offending field, when known;
    ``kind`` is one of :data:`ERROR_KINDS`.
    """

    streamproof_one_line = True  # the pytest plugin reports it as one line, without a traceback

    def __init__(
        self, message: str, step_index: int | None = None, field: str | None = None,
        kind: str = "invalid",
    ) -> None:
        message = str(message).translate(_LINE_BREAKS)
        super().__init__(message)
        self.message = message
        self.step_index = step_index
        self.field = field
        self.kind = kind

    def with_prefix(self, prefix: str) -> ScenarioError:
        """The same error with ``prefix: `` in front (e.g. the file path)."""
        return ScenarioError(f"{prefix}: {self.message}", self.step_index, self.field, self.kind)


def render(value: Any, limit: int = 60) -> str:
    """A short one-line JSON-ish rendering of a (possibly non-JSON) value for messages."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = _safe_repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _safe_repr(value: Any) -> str:
    if isinstance(value, int):
        return f"<integer of {value.bit_length()} bits>"
    try:
        return repr(value)
    except Exception:  # noqa: BLE001 - a broken __repr__ must not escape
        return f"<{type(value).__name__}>"


@dataclass(frozen=True)
class Loc:
    """Where a value sits: the top-level step index and the message prefix."""

    step_index: int | None = None
    prefix: str = ""

    def error(self, field: str | None, detail: str, kind: str = "invalid") -> ScenarioError:
        parts = [p for p in (self.prefix, f"field '{field}'" if field is not None else "") if p]
        return ScenarioError(": ".join(parts + [detail]), self.step_index, field, kind)

    def expected(
        self, field: str | None, what: str, got: Any = _MISSING, kind: str = "invalid"
    ) -> ScenarioError:
        if got is _MISSING:
            return self.error(field, f"missing, expected {what}", "missing")
        return self.error(field, f"expected {what}, got {render(got)}", kind)


def step_error(
    index: int, step: Step, field: str | None, what: str, got: Any = _MISSING,
    kind: str = "semantic",
) -> ScenarioError:
    """An error about top-level step ``index`` (for family ``validate`` hooks)."""
    return Loc(index, f"step {index} ({step.op})").expected(field, what, got, kind)


# ------------------------------------------------------------------------------ field kinds


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _bound(n: int) -> str:
    return _NAMED_BOUNDS.get(n, str(n))


class Kind:
    """How one step field is read from JSON, written back, and described in the schema."""

    expected: str = "a value"

    def parse(self, value: Any, loc: Loc, name: str) -> Any:
        raise NotImplementedError

    def dump(self, value: Any) -> Any:
        return value

    def freeze(self, value: Any) -> Any:
        """Make a Python value given to a step constructor hashable (lists become tuples)."""
        return value

    def schema(self, ref: Callable[[type], str]) -> dict:
        raise NotImplementedError


@dataclass(frozen=True)
class IntKind(Kind):
    """An integer in ``[lo, hi]``; bools and floats (even ``10.0``) are refused."""

    lo: int
    hi: int

    @property
    def expected(self) -> str:  # type: ignore[override]
        return f"an integer in [{_bound(self.lo)}, {_bound(self.hi)}]"

    def parse(self, value: Any, loc: Loc, name: str) -> int:
        if not (_is_int(value) and self.lo <= value <= self.hi):
            raise loc.expected(name, self.expected, value)
        return int(value)

    def schema(self, ref: Callable[[type], str]) -> dict:
        return {"type": "integer", "minimum": self.lo, "maximum": self.hi}


@dataclass(frozen=True)
class StrKind(Kind):
    expected: str = "a string"

    def parse(self, value: Any, loc: Loc, name: str) -> str:
        if not isinstance(value, str):
            raise loc.expected(name, self.expected, value)
        return str(value)

    def schema(self, ref: Callable[[type], str]) -> dict:
        return {"type": "string"}


@dataclass(frozen=True)
class BoolKind(Kind):
    expected: str = "true or false"

    def parse(self, value: Any, loc: Loc, name: str) -> bool:
        if not isinstance(value, bool):
            raise loc.expected(name, self.expected, value)
        return value

    def schema(self, ref: Callable[[type], str]) -> dict:
        return {"type": "boolean"}


@dataclass(frozen=True)
class EnumKind(Kind):
    """One of a fixed set of strings."""

    values: tuple[str, ...]

    @property
    def expected(self) -> str:  # type: ignore[override]
        return "one of " + ", ".join(self.values)

    def parse(self, value: Any, loc: Loc, name: str) -> str:
        if not (isinstance(value, str) and value in self.values):
            raise loc.expected(name, self.expected, value)
        return str(value)

    def schema(self, ref: Callable[[type], str]) -> dict:
        return {"enum": list(self.values)}


KEY_EXPECTED = (
    'a key (a string, an integer in [-2^63, 2^63-1], or {"int32": n} with n in [-2^31, 2^31-1])'
)


def _key_or_missing(value: Any) -> Any:
    if isinstance(value, str):
        return str(value)
    if _is_int(value):
        return int(value) if INT64_MIN <= value <= INT64_MAX else _MISSING
    if isinstance(value, dict) and list(value) == ["int32"]:
        n = value["int32"]
        return Int32(int(n)) if _is_int(n) and INT32_MIN <= n <= INT32_MAX else _MISSING
    return _MISSING


def key_from_json(value: Any, where: str = "field 'key'") -> str | int | Int32:
    """A key from JSON: string → str, integer → int (Java long), ``{"int32": n}`` → Int32."""
    key = _key_or_missing(value)
    if key is _MISSING:
        raise ScenarioError(f"{where}: expected {KEY_EXPECTED}, got {render(value)}")
    return key


def key_to_json(key: str | int | Int32) -> Any:
    """The JSON form of a key (inverse of :func:`key_from_json`)."""
    if isinstance(key, Int32):
        return {"int32": key.value}
    if isinstance(key, str) or (_is_int(key) and INT64_MIN <= key <= INT64_MAX):
        return key
    raise TypeError(f"not a scenario key: {key!r}")


@dataclass(frozen=True)
class KeyKind(Kind):
    expected: str = KEY_EXPECTED

    def parse(self, value: Any, loc: Loc, name: str) -> Any:
        key = _key_or_missing(value)
        if key is _MISSING:
            raise loc.expected(name, self.expected, value)
        return key

    def dump(self, value: Any) -> Any:
        return key_to_json(value)

    def schema(self, ref: Callable[[type], str]) -> dict:
        return {"anyOf": [
            {"type": "string"},
            INT64.schema(ref),
            {"type": "object", "required": ["int32"], "additionalProperties": False,
             "properties": {"int32": INT32.schema(ref)}},
        ]}


@dataclass(frozen=True)
class KeyGroupRangeKind(Kind):
    """``[start, end]`` (inclusive) with ``0 <= start <= end < 32768``; stored as a tuple.

    ``start <= end`` and the step's ``end < max_parallelism`` are ``semantic`` errors: rules the
    JSON Schema does not express.
    """

    expected: str = f"[start, end] with 0 <= start <= end < {UPPER_BOUND_MAX_PARALLELISM}"

    def parse(self, value: Any, loc: Loc, name: str) -> tuple[int, int]:
        ok = (
            isinstance(value, (list, tuple)) and len(value) == 2 and all(map(_is_int, value))
            and all(0 <= v < UPPER_BOUND_MAX_PARALLELISM for v in value)
        )
        if not ok:
            raise loc.expected(name, self.expected, value)
        if value[0] > value[1]:  # a cross-item rule the JSON Schema does not express
            raise loc.expected(name, self.expected, value, "semantic")
        return (int(value[0]), int(value[1]))

    def dump(self, value: Any) -> Any:
        return list(value)

    def freeze(self, value: Any) -> Any:
        return tuple(value)

    def schema(self, ref: Callable[[type], str]) -> dict:
        bound = {"type": "integer", "minimum": 0, "maximum": UPPER_BOUND_MAX_PARALLELISM - 1}
        return {"type": "array", "prefixItems": [bound, bound], "minItems": 2, "maxItems": 2}


class StepsKind(Kind):
    """A nested list of steps drawn from a restricted vocabulary (e.g. ``on_fire.then``)."""

    def __init__(self, *classes: type[Step]) -> None:
        self.classes = {cls.op: cls for cls in classes}
        self.expected = "a list of steps"

    def parse(self, value: Any, loc: Loc, name: str) -> tuple:
        if not isinstance(value, (list, tuple)):
            raise loc.expected(name, self.expected, value)
        return tuple(
            parse_step(item, self.classes, Loc(loc.step_index, f"{loc.prefix} {name}[{i}]"))
            for i, item in enumerate(value)
        )

    def dump(self, value: Any) -> Any:
        return [s.to_json() for s in value]

    def freeze(self, value: Any) -> Any:
        return tuple(value)

    def schema(self, ref: Callable[[type], str]) -> dict:
        return {"type": "array", "items": _dispatch_schema(self.classes.values(), ref)}


class JsonText(str):
    """Canonical JSON text of a value held by a step (hashable; not the value itself)."""


def _json_text(value: Any) -> JsonText:
    return JsonText(json.dumps(value, sort_keys=True, allow_nan=False, separators=(",", ":")))


@dataclass(frozen=True)
class JsonKind(Kind):
    """Any JSON value (no NaN or Infinity); held in a step as its canonical JSON text
    (:class:`JsonText`), so steps stay hashable."""

    expected: str = "a JSON value"

    def parse(self, value: Any, loc: Loc, name: str) -> JsonText:
        try:
            return _json_text(value)
        except (TypeError, ValueError):
            raise loc.expected(name, self.expected, value) from None

    def dump(self, value: Any) -> Any:
        return json.loads(value)

    def freeze(self, value: Any) -> Any:
        return value if isinstance(value, JsonText) else _json_text(value)

    def schema(self, ref: Callable[[type], str]) -> dict:
        return {}


INT64 = IntKind(INT64_MIN, INT64_MAX)
INT32 = IntKind(INT32_MIN, INT32_MAX)
STR = StrKind()
BOOL = BoolKind()
KEY = KeyKind()
KEY_GROUP_RANGE = KeyGroupRangeKind()
JSON = JsonKind()


# ------------------------------------------------------------------------------------ steps


def arg(kind: Kind, optional: bool = False) -> Any:
    """Declare a step field of the given kind; optional fields default to ``None``."""
    meta = {"kind": kind, "optional": optional}
    return field(default=None, metadata=meta) if optional else field(metadata=meta)


class Step:
    """Base of all step dataclasses: ``op`` names the step, fields are declared with :func:`arg`."""

    op: ClassVar[str] = ""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is not None:
                object.__setattr__(self, f.name, f.metadata["kind"].freeze(value))

    @classmethod
    def specs(cls) -> list[tuple[str, Kind, bool]]:
        """``(name, kind, optional)`` for each field, in declaration order."""
        fields = dataclasses.fields(cls)
        return [(f.name, f.metadata["kind"], f.metadata["optional"]) for f in fields]

    def to_json(self) -> dict:
        """The step as a JSON object, ``op`` first, unset optional fields left out."""
        out: dict[str, Any] = {"op": self.op}
        for name, kind, _ in self.specs():
            value = getattr(self, name)
            if value is not None:
                out[name] = kind.dump(value)
        return out

    def check(self, loc: Loc) -> None:
        """Cross-field rules; raise ``loc.expected(...)``. Default: none."""


def step(cls: type) -> type:
    """Class decorator: make a frozen step dataclass and check its declaration."""
    cls = dataclass(frozen=True)(cls)
    if not (issubclass(cls, Step) and cls.op):
        raise TypeError(f"{cls.__name__} must subclass Step and set op")
    for f in dataclasses.fields(cls):
        if not isinstance(f.metadata.get("kind"), Kind):
            raise TypeError(f"{cls.__name__}.{f.name} must be declared with arg(kind)")
    return cls


def parse_step(data: Any, classes: dict[str, type[Step]], loc: Loc) -> Step:
    """Parse one step object against the allowed ``op → class`` vocabulary."""
    if not isinstance(data, dict):
        raise loc.expected(None, "an object with an 'op' field", data)
    ops = "one of " + ", ".join(classes)
    op = data.get("op", _MISSING)
    if op is _MISSING:
        raise loc.expected("op", ops)
    if not (isinstance(op, str) and op in classes):
        raise loc.expected("op", ops, op, kind="unknown_op")
    cls = classes[op]
    loc = Loc(loc.step_index, f"{loc.prefix} ({op})")
    specs = cls.specs()
    names = {name for name, _, _ in specs}
    for key in data:
        if key != "op" and key not in names:
            allowed = ", ".join(["op", *(n for n, _, _ in specs)])
            raise loc.error(str(key), f"unknown field (allowed: {allowed})", "unknown_field")
    values = {}
    for name, kind, optional in specs:
        if name in data:
            values[name] = kind.parse(data[name], loc, name)
        elif not optional:
            raise loc.expected(name, kind.expected)
    result = cls(**values)
    result.check(loc)
    return result


# --------------------------------------------------------------------------------- families


@dataclass(frozen=True)
class Family:
    """A step vocabulary plus an optional whole-scenario ``validate(scenario)`` hook."""

    name: str
    steps: dict[str, type[Step]]
    validate: Callable[[Scenario], None] | None = None


FAMILIES: dict[str, Family] = {}


def register_family(
    name: str, step_classes: list[type], validate: Callable[[Scenario], None] | None = None
) -> Family:
    """Register (or replace) a family: its step classes and an optional semantic check.

    ``validate(scenario)`` runs after every step parsed and raises :func:`step_error` /
    :class:`ScenarioError` (kind ``"semantic"``) for rules the JSON Schema cannot express.
    """
    steps: dict[str, type[Step]] = {}
    for cls in step_classes:
        if not (isinstance(cls, type) and issubclass(cls, Step) and dataclasses.is_dataclass(cls)):
            raise TypeError(f"{cls!r} is not a step class (use @step)")
        if cls.op in steps:
            raise ValueError(f"family {name}: op {cls.op!r} declared twice")
        steps[cls.op] = cls
    FAMILIES[name] = Family(name, steps, validate)
    return FAMILIES[name]


def _ensure_families() -> None:
    families.load("steps")


# -------------------------------------------------------------------------------- scenario


@dataclass(frozen=True)
class Scenario:
    """A validated scenario; build it with :func:`scenario_from_dict` or :func:`load_scenario`."""

    family: str
    steps: tuple
    params: dict = field(default_factory=dict)
    name: str | None = None
    description: str | None = None
    expected: tuple | None = None
    flink_observed: tuple | None = None
    property: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", tuple(self.steps))
        for name in ("expected", "flink_observed"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, tuple(getattr(self, name)))

    def steps_json(self) -> list[dict]:
        return [s.to_json() for s in self.steps]

    def to_dict(self) -> dict:
        """The canonical JSON-able form: with ``format``; ``None`` fields, empty params left out."""
        out: dict[str, Any] = {"format": FORMAT, "family": self.family}
        for name in ("name", "description", "property"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.params:
            out["params"] = _copy_json(self.params)
        out["steps"] = self.steps_json()
        for name in ("expected", "flink_observed"):
            if getattr(self, name) is not None:
                out[name] = [_copy_json(item) for item in getattr(self, name)]
        return out


_TOP_LEVEL = (
    "format", "family", "name", "description", "property", "params", "steps", "expected",
    "flink_observed",
)
TOP = Loc()  # where whole-scenario errors (params, steps) are reported


def scenario_from_dict(d: object) -> Scenario:
    """Validate a decoded JSON document and build the :class:`Scenario`; raises ScenarioError."""
    if not isinstance(d, dict):
        raise TOP.expected(None, "a JSON object at the top level", d)
    for key in d:
        if key not in _TOP_LEVEL:
            allowed = ", ".join(_TOP_LEVEL)
            raise TOP.error(str(key), f"unknown field (allowed: {allowed})", "unknown_field")
    if "format" in d and d["format"] != FORMAT:
        raise TOP.expected("format", json.dumps(FORMAT), d["format"])
    family = _family(d.get("family", _MISSING))
    texts = {k: STR.parse(d[k], TOP, k) for k in ("name", "description", "property") if k in d}
    params = d.get("params", {})
    if not isinstance(params, dict):
        raise TOP.expected("params", "an object", params)
    lists = {k: _objects(d[k], k) for k in ("expected", "flink_observed") if k in d}
    steps = d.get("steps", _MISSING)
    if steps is _MISSING:
        raise TOP.expected("steps", "a list of steps")
    if not isinstance(steps, (list, tuple)):
        raise TOP.expected("steps", "a list of steps", steps)
    if len(steps) > MAX_STEPS:
        raise TOP.error("steps", f"{len(steps)} steps, over the limit of {MAX_STEPS} (STREAMPROOF_MAX_STEPS "
                        f"raises it)", "semantic")
    parsed = tuple(
        parse_step(item, family.steps, Loc(i, f"step {i}")) for i, item in enumerate(steps)
    )
    scenario = Scenario(family.name, parsed, _copy_json(params, "params"), **texts, **lists)
    if family.validate is not None:
        family.validate(scenario)
    return scenario


def _family(value: Any) -> Family:
    if not (isinstance(value, str) and value in FAMILIES):
        _ensure_families()
    if not (isinstance(value, str) and value in FAMILIES):
        raise TOP.expected("family", "one of " + ", ".join(FAMILIES), value)
    return FAMILIES[value]


def _objects(value: Any, name: str) -> tuple:
    if not (isinstance(value, (list, tuple)) and all(isinstance(x, dict) for x in value)):
        raise TOP.expected(name, "a list of objects", value)
    return tuple(_copy_json(x, name) for x in value)


def _copy_json(value: Any, name: str = "value", depth: int = 0) -> Any:
    """Check that ``value`` is plain JSON data (finite numbers, string keys) and copy it."""
    ok = depth <= MAX_JSON_DEPTH
    if ok and (value is None or isinstance(value, (bool, str))):
        return value
    if ok and _is_int(value) and value.bit_length() <= 10_000:
        return int(value)
    if ok and isinstance(value, float) and math.isfinite(value):
        return value
    if ok and isinstance(value, (list, tuple)):
        return [_copy_json(x, name, depth + 1) for x in value]
    if ok and isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _copy_json(v, name, depth + 1) for k, v in value.items()}
    what = f"plain JSON data (finite numbers, string keys, nested at most {MAX_JSON_DEPTH} deep)"
    raise TOP.expected(name, what, value)


def require_first_step(scenario: Scenario, op: str) -> None:
    """Raise a semantic error unless the scenario's first step is ``op``."""
    if not scenario.steps:
        raise TOP.expected("steps", f"a first step {op}", [], "semantic")
    first = scenario.steps[0]
    if first.op != op:
        raise step_error(0, first, "op", f"{op} as the first step", first.op)


# ---------------------------------------------------------------------------- text and files


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {render(key)} in an object")
        out[key] = value
    return out


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _parse_json(text: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    except json.JSONDecodeError as e:
        where = f"line {e.lineno} column {e.colno}"
        raise ScenarioError(f"invalid JSON at {where}: {e.msg}", kind="json") from None
    except RecursionError:
        raise ScenarioError("invalid JSON: nested too deeply", kind="json") from None
    except ValueError as e:  # duplicate keys, NaN/Infinity, integers with too many digits
        raise ScenarioError(f"invalid JSON: {e}", kind="json") from None


def load_scenario(text: str) -> Scenario:
    """Parse and validate a scenario from JSON text (``bytes`` must be UTF-8)."""
    if isinstance(text, (bytes, bytearray)):
        text = _decode(bytes(text))
    if not isinstance(text, str):
        raise ScenarioError(f"expected JSON text, got {type(text).__name__}", kind="io")
    if len(text) > MAX_SCENARIO_BYTES:
        raise _too_large(len(text))
    return scenario_from_dict(_parse_json(text))


def _too_large(size: int) -> ScenarioError:
    return ScenarioError(f"scenario is {size / 2**20:.1f} MB, over the limit of {MAX_SCENARIO_BYTES / 2**20:.1f} MB "
                         f"(STREAMPROOF_MAX_SCENARIO_BYTES raises it)", kind="io")


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ScenarioError(
            f"not UTF-8 text: invalid byte 0x{data[e.start]:02x} at offset {e.start}", kind="io"
        ) from None


def load_scenario_file(path: str | os.PathLike) -> Scenario:
    """Load a scenario file; every error message starts with the path."""
    where = os.fspath(path)
    try:
        with open(where, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_SCENARIO_BYTES:
                raise _too_large(size).with_prefix(where)
            data = f.read(MAX_SCENARIO_BYTES + 1)
            if len(data) > MAX_SCENARIO_BYTES:  # not a regular file (a pipe): its size was unknown
                raise _too_large(len(data)).with_prefix(where)
    except FileNotFoundError:
        raise ScenarioError(f"{where}: file not found", kind="io") from None
    except IsADirectoryError:
        raise ScenarioError(f"{where}: is a directory, not a scenario file", kind="io") from None
    except OSError as e:
        raise ScenarioError(f"{where}: cannot read: {e.strerror or e}", kind="io") from None
    try:
        return load_scenario(_decode(data))
    except ScenarioError as e:
        raise e.with_prefix(str(where)) from None


def dump_scenario(scenario: Scenario, indent: int | None = None) -> str:
    """JSON text: one line, or with ``indent`` one top-level key and one step per line."""
    doc = scenario.to_dict()
    text = _pretty(doc, indent) if indent is not None else json.dumps(doc, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: fall back to \\u escapes
        text = _pretty(doc, indent, True) if indent is not None else json.dumps(doc)
    return text


def _pretty(doc: dict, indent: int, ascii_only: bool = False) -> str:
    pad = " " * indent

    def one(value: Any) -> str:
        return json.dumps(value, ensure_ascii=ascii_only)

    lines = []
    for key, value in doc.items():
        if isinstance(value, list) and value:
            items = f",\n{pad}{pad}".join(one(x) for x in value)
            lines.append(f"{pad}{one(key)}: [\n{pad}{pad}{items}\n{pad}]")
        else:
            lines.append(f"{pad}{one(key)}: {one(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


# ----------------------------------------------------------------------------- JSON Schema


def json_schema() -> dict:
    """The JSON Schema (draft 2020-12) of every registered family, built from the field kinds.

    It checks shapes, types and ranges; the family ``validate`` rules (instance before use,
    restore after snapshot, subtask below parallelism, ...) and ``end < max_parallelism`` are
    only checked by :func:`scenario_from_dict`.
    """
    _ensure_families()
    names: dict[type, str] = {}
    for family in sorted(FAMILIES.values(), key=lambda f: f.name):
        for op, cls in family.steps.items():
            names.setdefault(cls, f"{family.name}.{op}")

    def ref(cls: type) -> str:
        return f"#/$defs/{names[cls]}"

    defs = {name: _step_schema(cls, ref) for cls, name in names.items()}
    for family in sorted(FAMILIES.values(), key=lambda f: f.name):
        defs[f"{family.name}.step"] = _dispatch_schema(family.steps.values(), ref)
    json_objects = {"type": "array", "items": {"type": "object"}}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://streamproof.dev/schemas/scenario.schema.json",
        "title": "streamproof scenario",
        "description": f"A {FORMAT} document; generated by streamproof.properties.scenario.json_schema().",
        "type": "object",
        "required": ["family", "steps"],
        "additionalProperties": False,
        "properties": {
            "format": {"const": FORMAT},
            "family": {"enum": sorted(FAMILIES)},
            "name": {"type": "string"},
            "description": {"type": "string"},
            "property": {"type": "string"},
            "params": {"type": "object"},
            "steps": {"type": "array"},
            "expected": json_objects,
            "flink_observed": json_objects,
        },
        "allOf": [
            {"if": {"properties": {"family": {"const": f.name}}, "required": ["family"]},
             "then": {"properties": {"steps": {"items": {"$ref": f"#/$defs/{f.name}.step"}}}}}
            for f in sorted(FAMILIES.values(), key=lambda f: f.name)
        ],
        "$defs": defs,
    }


def _step_schema(cls: type[Step], ref: Callable[[type], str]) -> dict:
    props: dict[str, Any] = {"op": {"const": cls.op}}
    required = ["op"]
    for name, kind, optional in cls.specs():
        props[name] = kind.schema(ref)
        if not optional:
            required.append(name)
    return {"type": "object", "required": required, "additionalProperties": False,
            "properties": props}


def _dispatch_schema(classes: Iterable[type[Step]], ref: Callable[[type], str]) -> dict:
    classes = list(classes)
    return {
        "type": "object",
        "required": ["op"],
        "properties": {"op": {"enum": [cls.op for cls in classes]}},
        "allOf": [
            {"if": {"properties": {"op": {"const": cls.op}}}, "then": {"$ref": ref(cls)}}
            for cls in classes
        ],
    }


if __name__ == "__main__":
    # Run as a script this file is a second module (__main__): the families' steps modules
    # register into properties.scenario, so print that module's schema.
    from streamproof.properties.scenario import json_schema as registered_schema

    print(json.dumps(registered_schema(), indent=2))

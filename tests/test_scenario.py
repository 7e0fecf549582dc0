"""The scenario format: vectors load and round-trip, errors are precise one-liners, the JSON
Schema is generated from the step declarations, and no input makes the loader crash."""

from __future__ import annotations

import copy
import json
import math
import os
import random
import re
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from streamproof.impl.state.key_groups import Int32
from streamproof.properties import scenario as sc
from streamproof.properties.timers import steps as timer_steps
from streamproof.properties.scenario import (
    ERROR_KINDS,
    FAMILIES,
    FORMAT,
    Scenario,
    ScenarioError,
    dump_scenario,
    json_schema,
    key_from_json,
    key_to_json,
    load_scenario,
    load_scenario_file,
    scenario_from_dict,
)

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_FILE = ROOT / "properties" / "schemas" / "scenario.schema.json"
DOCS_FILE = ROOT / "docs" / "scenario-format.md"
from tests.vectors import VECTORS
VECTOR_FILES = {
    "timers": "flink_timer_traces.json",
    "mailbox": "flink_mailbox_traces.json",
    "valve": "flink_valve_traces.json",
}


def _vector_cases() -> list[dict]:
    cases = []
    for family, name in VECTOR_FILES.items():
        for case in json.loads((VECTORS / name).read_text())["cases"]:
            assert case["family"] == family
            cases.append(case)
    return cases


CASES = _vector_cases()
VALIDATOR = Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))


def _outcome(load, value) -> Scenario | ScenarioError:
    """Scenario or ScenarioError; any other exception escapes and fails the test."""
    try:
        result = load(value)
    except ScenarioError as e:
        assert len(str(e).splitlines()) == 1 and "Traceback" not in str(e), str(e)
        assert e.kind in ERROR_KINDS
        return e
    assert isinstance(result, Scenario)
    return result


def _check_loaded(s: Scenario) -> None:
    assert load_scenario(dump_scenario(s)) == s
    assert load_scenario(dump_scenario(s, indent=2)) == s
    assert VALIDATOR.is_valid(s.to_dict()), "loader accepted what the schema rejects"


# ----------------------------------------------------------------------------------- vectors


def test_all_vector_cases_present():
    assert {c["family"] for c in CASES} == set(VECTOR_FILES)
    assert len(CASES) == 55


@pytest.mark.parametrize("case", CASES, ids=[f"{c['family']}-{c['name']}" for c in CASES])
def test_vector_case_loads_and_round_trips(case):
    s = scenario_from_dict(case)
    assert s.family == case["family"] and s.name == case["name"]
    assert len(s.steps) == len(case["steps"])
    assert s.to_dict() == {**case, "format": FORMAT}
    assert load_scenario(dump_scenario(s)) == s
    assert load_scenario(dump_scenario(s, indent=2)) == s
    assert hash(s.steps) == hash(load_scenario(json.dumps(case)).steps)
    assert VALIDATOR.is_valid(case)


def test_scenario_file_round_trip(tmp_path):
    s = scenario_from_dict(CASES[0])
    path = tmp_path / "s.json"
    path.write_text(dump_scenario(s, indent=2), encoding="utf-8")
    assert load_scenario_file(path) == s
    assert load_scenario_file(str(path)) == s


def test_steps_are_typed_frozen_and_hashable():
    s = scenario_from_dict(next(c for c in CASES if c["name"] == "callback_deletes_pending_timer"))
    new, on_fire = s.steps[0], s.steps[4]
    assert isinstance(new, timer_steps.NewInstance) and new.key_group_range == (0, 127)
    assert isinstance(on_fire, timer_steps.OnFire) and on_fire.then == (timer_steps.Delete("event", "n", 11),)
    assert len({*s.steps, *s.steps}) == len(set(s.steps))
    with pytest.raises(AttributeError):
        new.max_parallelism = 1  # type: ignore[misc]
    assert on_fire.to_json() == {
        "op": "on_fire", "domain": "event", "key": "a", "namespace": "n", "ts": 10,
        "then": [{"op": "delete", "domain": "event", "namespace": "n", "ts": 11}],
    }
    assert list(on_fire.to_json())[0] == "op"


def test_python_built_scenario_dumps_and_loads():
    s = Scenario("timers", [
        timer_steps.NewInstance(128, [0, 127]),
        timer_steps.SetKey(Int32(-3)),
        timer_steps.Register("event", "w", -(2**63), action="WAIT", service="user"),
        timer_steps.OnFire("event", 2**63 - 1, "w", 5, [timer_steps.Delete("event", "w", 6, service="s")]),
        timer_steps.Count(),
    ], params={"max_parallelism": 128}, description="built in Python", property="p")
    assert s.steps[0].key_group_range == (0, 127) and isinstance(s.steps[3].then, tuple)
    assert load_scenario(dump_scenario(s)) == s
    d = s.to_dict()
    assert d["steps"][1] == {"op": "set_key", "key": {"int32": -3}}
    assert d["steps"][2]["action"] == "WAIT" and "service" not in d["steps"][3]
    assert "expected" not in d and d["params"] == {"max_parallelism": 128}


@pytest.mark.parametrize("value, key", [
    ("k", "k"), ("", ""), (7, 7), (-(2**63), -(2**63)), (2**63 - 1, 2**63 - 1),
    ({"int32": 7}, Int32(7)), ({"int32": -(2**31)}, Int32(-(2**31))),
])
def test_key_encoding(value, key):
    assert key_from_json(value) == key and type(key_from_json(value)) is type(key)
    assert key_to_json(key) == value


@pytest.mark.parametrize("value", [
    True, 1.0, None, [1], 2**63, -(2**63) - 1, {"int32": 2**31}, {"int32": "1"}, {"int32": True},
    {"int32": 1, "x": 2}, {"int64": 1}, {},
])
def test_bad_keys(value):
    where = "step 9 (set_key): field 'key'"
    with pytest.raises(ScenarioError, match=r"^step 9 \(set_key\): field 'key': expected a ") as e:
        key_from_json(value, where)
    assert len(str(e.value).splitlines()) == 1


def test_int_and_int32_keys_are_distinct():
    base = {"family": "timers", "steps": [
        {"op": "new_instance", "max_parallelism": 128, "key_group_range": [0, 127]},
        {"op": "set_key", "key": None},
    ]}
    keys = []
    for key in (5, {"int32": 5}, "5"):
        base["steps"][1]["key"] = key
        keys.append(scenario_from_dict(base).steps[1].key)
    assert keys == [5, Int32(5), "5"] and len({type(k) for k in keys}) == 3


# -------------------------------------------------------------------------- malformed input

DROP = object()
NEW = {"op": "new_instance", "max_parallelism": 128, "key_group_range": [0, 127]}
REG = {"op": "register", "domain": "event", "namespace": "n", "ts": 1}
ON_FIRE = {"op": "on_fire", "domain": "event", "key": "a", "namespace": "n", "ts": 1, "then": []}
MAILBOX = {"op": "new_mailbox"}
HOLDER = {"op": "new_holder", "parallelism": 3}
PUT = {"op": "put", "mail": "a", "priority": 0, "options": "default"}


def bare(family_name, *steps, **top):
    return {"family": family_name, "steps": list(steps), **top}


def timers(*steps, **top):
    return bare("timers", NEW, *steps, **top)


def mailbox(*steps):
    return bare("mailbox", MAILBOX, *steps)


def valve(*steps):
    return bare("valve", HOLDER, *steps)


def step_with(base, **changes):
    """``base`` with fields changed; ``DROP`` removes a field."""
    out = {**base, **changes}
    return {k: v for k, v in out.items() if v is not DROP}


def new_with(**changes):
    return bare("timers", step_with(NEW, **changes))


# (id, document, step_index, field, kind, message fragment)
MALFORMED = [
    ("top-not-object", [1, 2], None, None, "invalid", "expected a JSON object at the top level"),
    ("family-missing", {"steps": []}, None, "family", "missing", "field 'family': missing"),
    ("family-unknown", timers(family="foo"), None, "family", "invalid", 'got "foo"'),
    ("format-wrong", timers(format="streamproof.scenario/2"), None, "format", "invalid", "/2"),
    ("top-unknown-key", timers(stepz=[]), None, "stepz", "unknown_field", "unknown field"),
    ("steps-missing", {"family": "timers"}, None, "steps", "missing", "a list of steps"),
    ("steps-not-list", {"family": "timers", "steps": {}}, None, "steps", "invalid", "got {}"),
    ("name-not-str", timers(name=3), None, "name", "invalid", "expected a string, got 3"),
    ("params-not-object", timers(params=[]), None, "params", "invalid", "an object"),
    ("params-nan", timers(params={"x": math.nan}), None, "params", "invalid", "finite"),
    ("observed-not-objects", timers(flink_observed=[1]), None, "flink_observed", "invalid", "obj"),
    ("step-not-object", timers(5), 1, None, "invalid", "step 1: expected an object"),
    ("op-missing", timers({"ts": 1}), 1, "op", "missing", "step 1: field 'op': missing"),
    ("op-unknown", timers({"op": "regster"}), 1, "op", "unknown_op", 'got "regster"'),
    ("op-not-str", timers({"op": 7}), 1, "op", "unknown_op", "got 7"),
    ("field-unknown", timers(step_with(REG, tz=1)), 1, "tz", "unknown_field", "allowed: op, dom"),
    ("field-missing", timers(step_with(REG, ts=DROP)), 1, "ts", "missing", "(register): field"),
    ("ts-bool", timers(step_with(REG, ts=True)), 1, "ts", "invalid", "got true"),
    ("ts-float", timers(step_with(REG, ts=10.0)), 1, "ts", "invalid", "got 10.0"),
    ("ts-too-big", timers(step_with(REG, ts=2**63)), 1, "ts", "invalid", "2^63-1]"),
    ("ts-null", timers(step_with(REG, ts=None)), 1, "ts", "invalid", "got null"),
    ("domain-enum", timers(step_with(REG, domain="t")), 1, "domain", "invalid", "event, process"),
    ("action-enum", timers(step_with(REG, action="STOP")), 1, "action", "invalid", "CANCEL, TRIG"),
    ("kgr-beyond-maxpar", new_with(key_group_range=[0, 128]),
     0, "key_group_range", "semantic", "end < max_parallelism (128)"),
    ("kgr-reversed", new_with(key_group_range=[3, 1]),
     0, "key_group_range", "semantic", "got [3, 1]"),
    ("kgr-short", new_with(key_group_range=[0]), 0, "key_group_range", "invalid", "[start, end]"),
    ("maxpar-zero", new_with(max_parallelism=0), 0, "max_parallelism", "invalid", "[1, 32768]"),
    ("key-bool", timers({"op": "set_key", "key": False}), 1, "key", "invalid", "expected a key"),
    ("key-int32-range", timers({"op": "set_key", "key": {"int32": 2**31}}),
     1, "key", "invalid", "int32"),
    ("interrupt-zero", timers({"op": "try_advance_watermark", "to": 1, "interrupt_after": 0}),
     1, "interrupt_after", "invalid", "[1, 2^31-1]"),
    ("then-bad-op", timers(step_with(ON_FIRE, then=[REG, {"op": "count"}])),
     1, "op", "unknown_op", "step 1 (on_fire) then[1]: field 'op': expected one of register, del"),
    ("then-bad-ts", timers(step_with(ON_FIRE, then=[REG, step_with(REG, ts="x")])),
     1, "ts", "invalid", "step 1 (on_fire) then[1] (register): field 'ts'"),
    ("then-not-list", timers(step_with(ON_FIRE, then={})), 1, "then", "invalid", "list of steps"),
    ("timers-no-instance-first", bare("timers", {"op": "count"}, NEW),
     0, "op", "semantic", "new_instance before any step other than on_fire"),
    ("timers-only-on-fire", bare("timers", ON_FIRE),
     None, "steps", "semantic", "at least one new_instance"),
    ("use-instance-range", timers({"op": "use_instance", "index": 1}),
     1, "index", "semantic", "below 1"),
    ("restore-unknown", timers({"op": "snapshot", "id": "a"}, {**step_with(NEW, id="b"),
                                                               "op": "restore"}),
     2, "id", "semantic", "earlier snapshot (a)"),
    ("mailbox-first-step", bare("mailbox", {"op": "size"}),
     0, "op", "semantic", "new_mailbox as the first step"),
    ("mailbox-empty", bare("mailbox"), None, "steps", "semantic", "new_mailbox"),
    ("mailbox-put-priority", mailbox(step_with(PUT, priority=-1)),
     1, "priority", "invalid", "[0, 2^31-1]"),
    ("mailbox-options", mailbox(step_with(PUT, options="later")),
     1, "options", "invalid", "default, deferrable, urgent"),
    ("mailbox-no-args", mailbox({"op": "size", "priority": 0}),
     1, "priority", "unknown_field", "allowed: op)"),
    ("valve-subtask", valve({"op": "send", "subtask": 3, "event": 1}),
     1, "subtask", "semantic", "below the parallelism 3"),
    ("valve-event-range", valve({"op": "send", "subtask": 0, "event": 2**31}),
     1, "event", "invalid", "2^31-1]"),
    ("valve-rpc-mode", valve({"op": "rpc", "subtask": 0, "mode": "x"}),
     1, "mode", "invalid", "ack, pending, lost"),
    ("valve-checkpoint-negative", valve({"op": "trigger", "checkpoint": -1}),
     1, "checkpoint", "invalid", "[0, 2^63-1]"),
    ("valve-first-step", bare("valve", {"op": "rpc_ack_all"}),
     0, "op", "semantic", "new_holder as the first step"),
]


@pytest.mark.parametrize("doc, index, field, kind, fragment", [m[1:] for m in MALFORMED],
                         ids=[m[0] for m in MALFORMED])
def test_malformed_scenario(doc, index, field, kind, fragment):
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(doc)
    e = info.value
    assert (e.step_index, e.field, e.kind) == (index, field, kind), str(e)
    assert fragment in str(e)
    assert len(str(e).splitlines()) == 1
    if index is not None:
        assert str(e).startswith(f"step {index}")
    elif field is not None:
        assert str(e).startswith(f"field '{field}': ")
    if kind != "semantic" and not _has_float(doc):  # JSON Schema counts 10.0 as an integer
        assert not VALIDATOR.is_valid(doc), "the schema accepts what the loader rejects"


def test_exact_messages():
    with pytest.raises(ScenarioError) as e:
        scenario_from_dict(timers(step_with(REG, ts="x")))
    assert str(e.value) == (
        "step 1 (register): field 'ts': expected an integer in [-2^63, 2^63-1], got \"x\""
    )
    with pytest.raises(ScenarioError) as e:
        scenario_from_dict(timers(family="foo"))
    assert str(e.value).startswith("field 'family': expected one of timers, mailbox, job, snapshots, termination, valve")
    assert str(e.value).endswith(', got "foo"')


def test_json_text_errors():
    with pytest.raises(ScenarioError, match=r"^invalid JSON at line 2 column 1: ") as e:
        load_scenario('{"family": "timers",\n}')
    assert e.value.kind == "json"
    for text, fragment in [
        ('{"family": "timers", "family": "valve", "steps": []}', 'duplicate key "family"'),
        ('{"family": "timers", "params": {"x": NaN}, "steps": []}', "NaN is not a JSON number"),
        ("[" * 100_000, "nested too deeply"),
        ('{"x": 1' + "0" * 5000 + "}", "invalid JSON: "),
        ("", "invalid JSON at line 1 column 1"),
    ]:
        with pytest.raises(ScenarioError, match="^invalid JSON") as e:
            load_scenario(text)
        assert fragment in str(e.value) and e.value.kind == "json"
    with pytest.raises(ScenarioError, match="^not UTF-8 text") as e:
        load_scenario(b'{"family": "\xff"}')
    with pytest.raises(ScenarioError, match="^expected JSON text, got int"):
        load_scenario(5)  # type: ignore[arg-type]


def test_file_errors(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text('{\n  "family": "timers",\n  "steps": [\n  {"op" 1}\n]}\n')
    with pytest.raises(ScenarioError) as e:
        load_scenario_file(bad)
    assert str(e.value) == f"{bad}: invalid JSON at line 4 column 9: Expecting ':' delimiter"
    cases = {
        "missing.json": (None, "file not found"),
        "dir": ("dir", "is a directory"),
        "latin1.json": (b'{"family": "caf\xe9"}', "not UTF-8 text: invalid byte 0xe9 at offset 15"),
        "list.json": (b"[]", "expected a JSON object at the top level, got []"),
        "step.json": (json.dumps(timers(step_with(REG, ts="x"))).encode(),
                      "step 1 (register): field 'ts': expected an integer"),
    }
    for name, (content, fragment) in cases.items():
        path = tmp_path / name
        if content == "dir":
            path.mkdir()
        elif content is not None:
            path.write_bytes(content)
        with pytest.raises(ScenarioError) as e:
            load_scenario_file(path)
        assert str(e.value).startswith(f"{path}: {fragment}"), str(e.value)
        assert len(str(e.value).splitlines()) == 1
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps(CASES[0]).encode())
    assert load_scenario_file(bom) == scenario_from_dict(CASES[0])


def test_messages_stay_on_one_line():
    doc = timers(step_with(REG, **{"a\nb\u2028c": 1}))
    with pytest.raises(ScenarioError) as e:
        scenario_from_dict(doc)
    assert e.value.field == "a\nb\u2028c"
    assert len(str(e.value).splitlines()) == 1 and "a\\nb" in str(e.value)


# ----------------------------------------------------------------------------------- schema


def test_schema_file_is_valid_and_generated():
    committed = json.loads(SCHEMA_FILE.read_text())
    Draft202012Validator.check_schema(committed)
    assert committed == json_schema(), f"regenerate: python3 -m properties.scenario > {SCHEMA_FILE}"


def test_schema_lists_exactly_the_registered_ops():
    defs = json_schema()["$defs"]
    for name, family in FAMILIES.items():
        assert defs[f"{name}.step"]["properties"]["op"]["enum"] == list(family.steps)
    assert json_schema()["properties"]["family"]["enum"] == sorted(FAMILIES)


@pytest.mark.parametrize("doc", [
    timers(step_with(REG, ts="x")),
    timers({"op": "count", "x": 1}),
    timers(step_with(ON_FIRE, then=[{"op": "count"}])),
    timers({"op": "set_key", "key": True}),
    timers(format="other"),
    mailbox(step_with(PUT, options=DROP)),
    valve({"op": "rpc", "subtask": 0, "mode": "maybe"}),
    bare("valve", REG),
])
def test_schema_rejects_malformed(doc):
    assert not VALIDATOR.is_valid(doc)
    with pytest.raises(ScenarioError):
        scenario_from_dict(doc)


# ------------------------------------------------------------------------- family registry


def test_register_family():
    @sc.step
    class Ping(sc.Step):
        op = "ping"
        times: int = sc.arg(sc.IntKind(1, 3))
        note: str | None = sc.arg(sc.STR, optional=True)

    def validate(s: Scenario) -> None:
        if s.steps and s.steps[-1].times == 3:
            raise sc.step_error(len(s.steps) - 1, s.steps[-1], "times", "not 3 last", 3)

    sc.register_family("pingpong", [Ping], validate)
    try:
        s = load_scenario('{"family": "pingpong", "steps": [{"op": "ping", "times": 2}]}')
        assert s.steps == (Ping(2),) and load_scenario(dump_scenario(s)) == s
        with pytest.raises(ScenarioError, match=r"^step 0 \(ping\): field 'times': expected not 3"):
            scenario_from_dict({"family": "pingpong", "steps": [{"op": "ping", "times": 3}]})
        assert json_schema()["$defs"]["pingpong.ping"]["required"] == ["op", "times"]
    finally:
        del FAMILIES["pingpong"]
    with pytest.raises(ValueError, match="declared twice"):
        sc.register_family("dup", [Ping, Ping])
    with pytest.raises(TypeError):
        sc.register_family("bad", [dict])
    assert "dup" not in FAMILIES and "bad" not in FAMILIES


def test_step_declaration_is_checked():
    class NoKind(sc.Step):
        op = "nokind"
        x: int = 0

    with pytest.raises(TypeError, match="arg"):
        sc.step(NoKind)


def test_docs_describe_every_op():
    docs = DOCS_FILE.read_text()
    assert "properties/schemas/scenario.schema.json" in docs
    for family in FAMILIES.values():
        assert f"`{family.name}`" in docs
        for op in family.steps:
            assert f"| `{op}` |" in docs, op


def test_docs_examples_load():
    blocks = re.findall(r"```json\n(.*?)```", DOCS_FILE.read_text(), re.S)
    families = [load_scenario(block).family for block in blocks]
    assert set(families) >= {"timers", "mailbox", "valve", "job"}  # and every block loads


# ------------------------------------------------------------------------------------ fuzz

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=4),
    max_leaves=16,
)
ODD = st.sampled_from([
    None, True, 0, -1, 1, 3, 127, 128, 2**31 - 1, 2**31, -(2**31) - 1, 2**63 - 1, 2**63,
    -(2**63) - 1, 10.0, 0.5, "", "x", "event", [], [0, 127], [3, 1], [0], {}, {"int32": 5},
    {"int32": 2**31},
])


def _valid_value(kind: sc.Kind) -> st.SearchStrategy:
    if isinstance(kind, sc.IntKind):
        return st.integers(kind.lo, kind.hi) | st.integers(max(kind.lo, -1), min(kind.hi, 4))
    if isinstance(kind, sc.EnumKind):
        return st.sampled_from(kind.values)
    if isinstance(kind, sc.KeyKind):
        return st.text(max_size=3) | st.integers(-(2**63), 2**63 - 1) | st.builds(
            lambda n: {"int32": n}, st.integers(-(2**31), 2**31 - 1))
    if isinstance(kind, sc.KeyGroupRangeKind):
        return st.tuples(st.integers(0, 9), st.integers(0, 9)).map(sorted)
    if isinstance(kind, sc.StepsKind):
        return st.lists(st.one_of([_step_dict(c) for c in kind.classes.values()]), max_size=2)
    return st.text(max_size=3)


def _field_value(kind: sc.Kind) -> st.SearchStrategy:
    """Usually valid; one time in twelve odd, one in twelve missing."""
    return st.integers(0, 11).flatmap(
        lambda n: ODD if n == 0 else st.just(DROP) if n == 1 else _valid_value(kind))


def _step_dict(cls: type[sc.Step]) -> st.SearchStrategy:
    """Steps of ``cls`` whose fields are mostly valid, sometimes odd or missing."""
    fields = {name: _field_value(kind) for name, kind, _ in cls.specs()}
    return st.fixed_dictionaries({"op": st.just(cls.op), **fields}).map(
        lambda d: {k: v for k, v in d.items() if v is not DROP})


@st.composite
def scenario_shaped(draw) -> dict:
    family = draw(st.sampled_from(list(FAMILIES)))
    classes = list(FAMILIES[family].steps.values())
    steps = draw(st.lists(st.one_of([_step_dict(c) for c in classes]), max_size=6))
    if draw(st.booleans()):
        steps.insert(0, draw(_step_dict(classes[0])))
    doc = {"family": family, "steps": steps}
    if draw(st.integers(0, 4)) == 0:
        doc[draw(st.sampled_from(sc._TOP_LEVEL + ("other",)))] = draw(ODD | JSON)
    return doc


def _has_float(value) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    return isinstance(value, list) and any(_has_float(v) for v in value)


def _record(result) -> None:
    event(f"error: {result.kind}" if isinstance(result, ScenarioError) else "loaded")


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_fuzz_arbitrary_json(value):
    for result in (_outcome(scenario_from_dict, value), _outcome(load_scenario, json.dumps(value))):
        _record(result)
        if isinstance(result, Scenario):
            _check_loaded(result)


@settings(max_examples=300, deadline=None)
@given(scenario_shaped())
def test_fuzz_scenario_shaped(doc):
    result = _outcome(scenario_from_dict, doc)
    _record(result)
    if isinstance(result, Scenario):
        _check_loaded(result)
    elif VALIDATOR.is_valid(doc) and not _has_float(doc):
        assert result.kind == "semantic", f"schema accepts, loader rejects: {result}"


def _nodes(doc: dict) -> list[dict]:
    """The top-level object and every (nested) step object in it."""
    out = [doc]
    for s in _list(doc.get("steps")):
        if isinstance(s, dict):
            out.append(s)
            out.extend(t for t in _list(s.get("then")) if isinstance(t, dict))
    return out


def _list(value) -> list:
    return value if isinstance(value, list) else []


def _random_json(rnd: random.Random):
    return rnd.choice([
        None, True, False, 0, -1, 1, 2**31, 2**63, -(2**63) - 1, 10.0, 1.5, "", "x", "event",
        "count", [], [0], [0, 200], {}, {"int32": 5}, {"int32": 2**31}, [{"op": "count"}],
    ])


def _mutate_structure(doc: dict, rnd: random.Random) -> None:
    nodes, steps = _nodes(doc), _list(doc.get("steps"))
    node = rnd.choice(nodes)
    how = rnd.randrange(7)
    if how == 0 and node:
        del node[rnd.choice(list(node))]
    elif how == 1 and node:
        node[rnd.choice(list(node))] = _random_json(rnd)
    elif how == 2:
        node[rnd.choice(["x", "op", "ts", "key", "then", "stepz", "name"])] = _random_json(rnd)
    elif how == 3 and steps:
        steps.insert(rnd.randrange(len(steps) + 1), copy.deepcopy(rnd.choice(steps)))
    elif how == 4 and steps:
        del steps[rnd.randrange(len(steps))]
    elif how == 5 and len(steps) > 1:
        i, j = rnd.sample(range(len(steps)), 2)
        steps[i], steps[j] = steps[j], steps[i]
    elif how == 6 and len(nodes) > 1:
        rnd.choice(nodes[1:])["op"] = rnd.choice(["", "Register", "regster", "new_holder", "x"])


def _mutate_text(text: str, rnd: random.Random) -> str:
    i = rnd.randrange(len(text))
    if rnd.random() < 0.5:
        return text[:i]
    return text[:i] + rnd.choice('{}[],:"0a- \\\n') + text[i + 1:]


def mutate(case: dict, rnd: random.Random) -> str:
    """A vector case after 1-3 structural mutations and, sometimes, one text mutation."""
    doc = copy.deepcopy(case)
    for _ in range(rnd.randint(1, 3)):
        _mutate_structure(doc, rnd)
    text = json.dumps(doc)
    return _mutate_text(text, rnd) if rnd.random() < 0.25 else text


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(CASES), st.randoms(use_true_random=False))
def test_fuzz_mutated_vectors(case, rnd):
    text = mutate(case, rnd)
    result = _outcome(load_scenario, text)
    _record(result)
    if isinstance(result, Scenario):
        _check_loaded(result)


def test_mutations_reach_every_error_kind():
    seen = {}
    for seed in range(600):
        rnd = random.Random(seed)
        result = _outcome(load_scenario, mutate(CASES[seed % len(CASES)], rnd))
        kind = result.kind if isinstance(result, ScenarioError) else "loaded"
        seen[kind] = seen.get(kind, 0) + 1
    assert set(seen) == (set(ERROR_KINDS) - {"io"}) | {"loaded"}, seen

"""Key-group assignment equals Flink 2.3 on every vector, in the implementation and the model."""

import pytest

from streamproof.impl.state.key_groups import (
    Int32, KeyGroupRange, assign_to_key_group, compute_key_group_range_for_operator_index,
    compute_operator_index_for_key_group,
)
from streamproof.model import keygroups as spec
from tests.vectors import load

VECTORS = load("flink_key_groups.json")


def _key(entry):
    return Int32(entry["key"]) if entry["type"] == "int32" else entry["key"]


def _model_key(entry):
    return ("int32", entry["key"]) if entry["type"] == "int32" else entry["key"]


def test_vector_counts():
    assert len(VECTORS["assign_to_key_group"]) == 1484
    assert {e["type"] for e in VECTORS["assign_to_key_group"]} == {"str", "int32", "int64"}


@pytest.mark.parametrize("entry", VECTORS["assign_to_key_group"], ids=lambda e: f"{e['type']}:{e['key']!r:.20}@{e['max_parallelism']}")
def test_assign_to_key_group(entry):
    assert assign_to_key_group(_key(entry), entry["max_parallelism"]) == entry["key_group"]
    assert spec.key_group(_model_key(entry), entry["max_parallelism"]) == entry["key_group"]


def test_operator_ranges():
    for e in VECTORS["key_group_range_for_operator"]:
        expected = KeyGroupRange(e["start"], e["end"])
        assert compute_key_group_range_for_operator_index(e["max_parallelism"], e["parallelism"], e["operator_index"]) == expected
        assert spec.operator_range(e["max_parallelism"], e["parallelism"], e["operator_index"]) == (e["start"], e["end"])


def test_operator_index_for_key_group():
    for e in VECTORS["operator_index_for_key_group"]:
        got = compute_operator_index_for_key_group(e["max_parallelism"], e["parallelism"], e["key_group"])
        assert got == e["operator_index"]
        assert spec.operator_of(e["max_parallelism"], e["parallelism"], e["key_group"]) == e["operator_index"]


def test_int_and_int32_are_distinct_keys_with_java_hashes():
    # Long.hashCode(2^32) = 1 while Integer 1 hashes to 1: same key group, different keys
    assert assign_to_key_group(2**32, 128) == assign_to_key_group(Int32(1), 128)
    assert Int32(1) != 1
    assert assign_to_key_group(-1, 128) == assign_to_key_group(Int32(0), 128)  # Long -1 hashes to 0


@pytest.mark.parametrize("bad, error", [
    (lambda: assign_to_key_group(1.5, 128), TypeError),
    (lambda: assign_to_key_group(True, 128), TypeError),
    (lambda: assign_to_key_group(2**63, 128), ValueError),
    (lambda: assign_to_key_group("a", 0), ValueError),
    (lambda: assign_to_key_group("a", 2**15 + 1), ValueError),
    (lambda: Int32(2**31), ValueError),
    (lambda: compute_key_group_range_for_operator_index(128, 0, 0), ValueError),
    (lambda: compute_key_group_range_for_operator_index(128, 2, 2), ValueError),
    (lambda: compute_operator_index_for_key_group(128, 2, 128), ValueError),
    (lambda: KeyGroupRange(3, 1), ValueError),
])
def test_bad_arguments_raise_clear_errors(bad, error):
    with pytest.raises(error):
        bad()


def test_key_group_range_operations():
    r = KeyGroupRange(4, 9)
    assert 4 in r and 9 in r and 10 not in r and len(r) == 6 and list(r)[:2] == [4, 5]
    assert r.get_intersection(KeyGroupRange(8, 20)) == KeyGroupRange(8, 9)
    assert r.get_intersection(KeyGroupRange(10, 20)) == KeyGroupRange.empty()
    assert len(KeyGroupRange.empty()) == 0

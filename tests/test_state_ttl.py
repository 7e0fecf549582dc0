"""State TTL (``StateTtlConfig``) through ``streamproof.testing.for_keyed_process_function``: the
processing-time clock of the harness is the TTL clock (streamproof/flink/state_ttl.py)."""

import pytest

from streamproof import testing
from streamproof.flink import refusal_reason
from streamproof.flink.common import Time, Types
from streamproof.flink.datastream import KeyedProcessFunction
from streamproof.flink.datastream.functions import AggregateFunction
from streamproof.flink.datastream.state import (
    AggregatingStateDescriptor, ListStateDescriptor, MapStateDescriptor, ReducingStateDescriptor, StateTtlConfig,
    ValueStateDescriptor,
)
from streamproof.flink.errors import UnsupportedFeature
from streamproof.flink.state_ttl import TtlValue, expired

U, V = StateTtlConfig.UpdateType, StateTtlConfig.StateVisibility


def config(ttl=100, update=U.OnCreateAndWrite, visibility=V.NeverReturnExpired, full_snapshot=False):
    builder = StateTtlConfig.new_builder(Time.milliseconds(ttl)).set_update_type(update) \
        .set_state_visibility(visibility)
    return (builder.cleanup_full_snapshot() if full_snapshot else builder).build()


class Count(AggregateFunction):
    def create_accumulator(self):
        return 0

    def add(self, value, accumulator):
        return accumulator + value

    def get_result(self, accumulator):
        return accumulator

    def merge(self, a, b):
        return a + b


class AllKinds(KeyedProcessFunction):
    """Records ``(key, command, argument)``; every read yields ``(command, result)``."""

    def __init__(self, ttl_config):
        self.ttl_config = ttl_config

    def open(self, runtime_context):
        def ttl(descriptor):
            descriptor.enable_time_to_live(self.ttl_config)
            return descriptor
        self.value = runtime_context.get_state(ttl(ValueStateDescriptor("value", Types.INT())))
        self.list = runtime_context.get_list_state(ttl(ListStateDescriptor("list", Types.INT())))
        self.map = runtime_context.get_map_state(ttl(MapStateDescriptor("map", Types.STRING(), Types.INT())))
        self.sum = runtime_context.get_reducing_state(
            ttl(ReducingStateDescriptor("sum", lambda a, b: a + b, Types.INT())))
        self.count = runtime_context.get_aggregating_state(
            ttl(AggregatingStateDescriptor("count", Count(), Types.INT())))

    def process_element(self, record, ctx):
        _, command, argument = record
        if command == "update":
            self.value.update(argument)
        elif command == "value":
            yield command, self.value.value()
        elif command == "add":
            self.list.add(argument)
        elif command == "list":
            yield command, self.list.get()
        elif command == "put":
            self.map.put(*argument)
        elif command == "get":
            yield command, self.map.get(argument)
        elif command == "contains":
            yield command, self.map.contains(argument)
        elif command == "items":
            yield command, sorted(self.map.items())
        elif command == "is_empty":
            yield command, self.map.is_empty()
        elif command == "sum+":
            self.sum.add(argument)
        elif command == "sum":
            yield command, self.sum.get()
        elif command == "count+":
            self.count.add(argument)
        elif command == "count":
            yield command, self.count.get()


def run(harness, *commands):
    """Each command ``(time, command, argument)``: the clock moves to ``time`` first; the reads'
    results in order."""
    before = len(harness.extract_output_values())
    for time, command, argument in commands:
        harness.set_processing_time(time)
        harness.process_element(("k", command, argument), 0)
    return [result for _, result in harness.extract_output_values()[before:]]


def harness(**kwargs):
    return testing.for_keyed_process_function(AllKinds(config(**kwargs)), key_selector=lambda r: r[0])


def test_ttl_is_no_longer_refused():
    assert refusal_reason(AllKinds) is None


def test_expired_is_flinks_ttl_utils_expired():
    assert not expired(0, 100, 99) and expired(0, 100, 100)
    assert not expired(2**63 - 10, 100, 2**63 - 11) and expired(2**63 - 10, 100, 2**63 - 1)  # no overflow


def test_value_expires_ttl_after_the_last_write_and_reads_as_absent():
    h = harness()
    assert run(h, (0, "update", 1), (99, "value", None), (100, "value", None)) == [1, None]
    assert h.state("k").get("value") is None  # removed by the read (Flink's heap TTL state)
    assert run(h, (100, "update", 2), (150, "update", 3), (249, "value", None), (250, "value", None)) == [3, None]


def test_on_create_and_write_reads_do_not_refresh_on_read_and_write_do():
    assert run(harness(), (0, "update", 1), (80, "value", None), (150, "value", None)) == [1, None]
    h = harness(update=U.OnReadAndWrite)
    assert run(h, (0, "update", 1), (80, "value", None), (150, "value", None), (249, "value", None)) == [1, 1, 1]
    assert h.state("k")["value"] == TtlValue(1, 249)


def test_return_expired_if_not_cleaned_up_returns_it_once():
    h = harness(visibility=V.ReturnExpiredIfNotCleanedUp)
    assert run(h, (0, "update", 1), (500, "value", None), (500, "value", None)) == [1, None]


def test_list_elements_expire_one_by_one():
    h = harness()
    assert run(h, (0, "add", 1), (50, "add", 2), (120, "list", None)) == [[2]]
    assert [v.user_value for v in h.state("k")["list"]] == [1, 2]  # partially expired: kept, hidden
    assert run(h, (150, "list", None)) == [[]]
    assert "list" not in h.state("k")  # all expired: cleared by the read
    r = harness(visibility=V.ReturnExpiredIfNotCleanedUp)
    assert run(r, (0, "add", 1), (50, "add", 2), (120, "list", None), (120, "list", None)) == [[1, 2], [1, 2]]
    o = harness(update=U.OnReadAndWrite)
    assert run(o, (0, "add", 1), (50, "add", 2), (120, "list", None), (200, "list", None)) == [[2], [2]]
    assert o.state("k")["list"] == [TtlValue(2, 200)]


def test_map_entries_expire_one_by_one():
    h = harness()
    assert run(h, (0, "put", ("a", 1)), (50, "put", ("b", 2)), (120, "is_empty", None), (120, "items", None),
               (120, "get", "a"), (120, "contains", "b"), (150, "contains", "b"), (150, "is_empty", None)) == \
        [False, [("b", 2)], None, True, False, True]
    o = harness(update=U.OnReadAndWrite)
    assert run(o, (0, "put", ("a", 1)), (90, "contains", "a"), (180, "get", "a")) == [True, 1]


def test_reducing_and_aggregating_restart_after_expiry():
    h = harness()
    assert run(h, (0, "sum+", 1), (50, "sum+", 2), (120, "sum", None), (160, "sum+", 5), (160, "sum", None),
               (0 + 160, "count+", 3), (300, "count+", 4), (300, "count", None)) == [3, 5, 4]
    r = harness(visibility=V.ReturnExpiredIfNotCleanedUp)  # an expired value is still folded in
    assert run(r, (0, "sum+", 1), (500, "sum+", 2), (500, "sum", None)) == [3]


def test_snapshot_keeps_timestamps_and_expiry_after_restore_uses_the_restored_clock():
    h = harness()
    run(h, (0, "update", 1), (60, "add", 7))
    snapshot = h.snapshot()
    assert run(h.restore(snapshot), (99, "value", None), (100, "value", None), (159, "list", None)) == [1, None, [7]]


def test_cleanup_full_snapshot_leaves_out_what_is_expired_at_snapshot_time():
    h = harness(full_snapshot=True, visibility=V.ReturnExpiredIfNotCleanedUp)
    run(h, (0, "update", 1), (0, "add", 1), (60, "add", 2), (0 + 60, "put", ("b", 2)))
    h.set_processing_time(120)
    snapshot = h.snapshot()
    assert h.state("k")["value"] == TtlValue(1, 0)  # the running state keeps it
    assert run(h.restore(snapshot), (120, "value", None), (120, "list", None), (120, "items", None)) == \
        [None, [2], [("b", 2)]]
    plain = harness(visibility=V.ReturnExpiredIfNotCleanedUp)
    run(plain, (0, "update", 1))
    plain.set_processing_time(120)
    assert run(plain.restore(plain.snapshot()), (120, "value", None)) == [1]  # without: written and returned


def test_disabled_ttl_is_plain_state_and_bad_configs_are_refused():
    h = testing.for_keyed_process_function(AllKinds(config(update=U.Disabled)), key_selector=lambda r: r[0])
    assert run(h, (0, "update", 1), (10**9, "value", None)) == [1]
    with pytest.raises(UnsupportedFeature, match="TTL is expected to be positive"):
        testing.for_keyed_process_function(AllKinds(config(ttl=0)), key_selector=lambda r: r[0]).open()


def test_a_genuine_looking_ttl_config_of_default_builder():
    c = StateTtlConfig.new_builder(Time.seconds(1)).cleanup_incrementally(10, True) \
        .cleanup_in_rocksdb_compact_filter(1000).disable_cleanup_in_background().build()
    assert c.is_enabled() and not c.get_cleanup_strategies().in_full_snapshot()
    assert c.get_cleanup_strategies().get_incremental_cleanup_strategy().get_cleanup_size() == 10
    assert c.get_cleanup_strategies().get_rocksdb_compact_filter_cleanup_strategy() \
        .get_query_time_after_num_entries() == 1000


# -- the ttl family: ttl.differential against model/state_ttl.py ------------------------------------
from pathlib import Path  # noqa: E402

from hypothesis import settings as current_settings  # noqa: E402

from streamproof.properties import registry  # noqa: E402
from streamproof.properties.explore import explore  # noqa: E402
from streamproof.properties.scenario import load_scenario_file  # noqa: E402

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples" / "ttl").glob("*.json"))


def test_ttl_differential_holds_and_reaches_its_cases():
    prop = registry.get("ttl.differential")
    result = explore(prop, examples=current_settings().max_examples, seed=0)
    assert result.holds, f"{result.invariant}: {result.message}"
    print(f"\nttl.differential reachability over {result.examples} examples:", dict(sorted(result.reach.items())))
    for label in prop.reachability:
        assert result.reach.get(label, 0) > 0, f"never reached: {label}"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_replay_and_hold(path):
    scenario = load_scenario_file(path)
    assert scenario.family == "ttl" and scenario.name == path.stem and scenario.description
    assert registry.get("ttl.differential").check(scenario).holds


def test_examples_are_there():
    assert len(EXAMPLES) >= 2

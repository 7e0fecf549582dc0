"""Flink's Java details as properties (issue 31): the order in which a timer-service manager
advances its named services (Java's ``HashMap`` iteration order of the names) and key-group
assignment (Java's ``String.hashCode`` over UTF-16, ``Long.hashCode``, murmur), each for random
inputs against the model (``model/timers.py:map_order``, ``model/keygroups.py``), which is written
apart from the implementation. The recorded Flink vectors (tests/test_conformance_timers.py,
tests/test_keygroups.py) pin a few cases; these search the rest. Each known way to get them wrong
must be found by the same search."""

from __future__ import annotations

from unittest import mock

from hypothesis import HealthCheck, given, settings, strategies as st

from streamproof.impl.state import java_hashmap

from streamproof.impl.state import key_groups as keygroups

from streamproof.impl.state.key_context import KeyContext
from streamproof.impl.timers import internal_time_service_manager
from streamproof.impl.timers.internal_time_service_manager import InternalTimeServiceManager
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService
from streamproof.model import keygroups as key_spec
from streamproof.model.timers import map_order

EXAMPLES = 200
SEARCH = settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
                  suppress_health_check=list(HealthCheck))
NAMES = st.lists(st.text(st.characters(codec="utf-8"), min_size=1, max_size=12), min_size=2, max_size=14, unique=True)
KEYS = st.one_of(st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20),
                 st.integers(-2**63, 2**63 - 1), st.integers(-2**31, 2**31 - 1).map(lambda n: ("int32", n)))


def advance_order(names: list[str]) -> list[str]:
    """The services of a manager, created in the order of ``names``, in the order one watermark
    fires their (equal-timestamp) timers."""
    fired = []

    class Target:
        def __init__(self, name):
            self.name = name

        def on_event_time(self, timer):
            fired.append(self.name)

        def on_processing_time(self, timer):
            fired.append(self.name)

    context = KeyContext(128)
    manager = InternalTimeServiceManager(context, keygroups.KeyGroupRange(0, 127),
                                                ManualProcessingTimeService())
    context.set_current_key("k")
    for name in names:
        manager.get_internal_timer_service(name, Target(name)).register_event_time_timer("w", 1)
    manager.advance_watermark(5)
    return fired


def impl_key(key):
    return keygroups.Int32(key[1]) if isinstance(key, tuple) else key


def service_order_differences() -> list:
    found = []

    @SEARCH
    @given(NAMES)
    def search(names):
        if advance_order(names) != map_order(names):
            found.append(names)

    search()
    return found


def key_group_differences() -> list:
    found = []

    @SEARCH
    @given(KEYS, st.sampled_from([1, 2, 7, 128, 32768]))
    def search(key, max_parallelism):
        if keygroups.assign_to_key_group(impl_key(key), max_parallelism) != key_spec.key_group(key, max_parallelism):
            found.append((key, max_parallelism))

    keygroups.forget_key_groups()
    try:
        search()
    finally:
        keygroups.forget_key_groups()
    return found


def test_services_advance_in_java_hashmap_order():
    assert service_order_differences() == []


def test_key_groups_of_random_keys_are_flinks():
    assert key_group_differences() == []


def test_each_known_java_detail_bug_is_found():
    """Services in creation order (a Python dict), and String.hashCode over code points or UTF-8
    bytes instead of UTF-16 units, and Long.hashCode without the high word, are each found."""
    with mock.patch.object(internal_time_service_manager, "hash_map_order", lambda names: list(dict.fromkeys(names))):
        assert service_order_differences(), "services in creation order: not found"
    with mock.patch.object(java_hashmap, "spread_hash", lambda name: keygroups.java_hash_code(name) & 0xFFFF):
        assert service_order_differences(), "HashMap spread without the high half: not found"

    def per_code_point(key):
        h = 0
        for c in key:
            h = (31 * h + ord(c)) & 0xFFFFFFFF
        return h - 2**32 if h >= 2**31 else h

    def long_low_word(key):
        return keygroups._to_int32(key & 0xFFFFFFFF) if isinstance(key, int) and not isinstance(key, bool) \
            else original(key)

    original = keygroups.java_hash_code
    for name, wrong in (("String.hashCode over code points", lambda k: per_code_point(k) if isinstance(k, str)
                         else original(k)), ("Long.hashCode without the high word", long_low_word)):
        with mock.patch.object(keygroups, "java_hash_code", wrong):
            assert key_group_differences(), f"{name}: not found"

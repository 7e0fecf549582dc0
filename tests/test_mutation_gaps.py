"""Behaviours the rest of the suite left open, found by mutation testing (issue 17,
``python -m tests.mutation``; docs/properties.md, "Mutation scores"). Each test names the surviving
mutant it kills: ``module:line`` in the commit measured (given there), the function, the mutation."""

import pytest

from streamproof.impl.keygroups import KeyGroupRange
from streamproof.impl.termination import TimerTerminationAction as A
from streamproof.impl.timers import (
    InternalTimeServiceManager, KeyContext, ManualProcessingTimeService, TimerFiringBudgetExceeded,
)

from tests.recorders import Fired

MP = 16


def timer_service(start=0, budget=1000):
    context = KeyContext(MP)
    manager = InternalTimeServiceManager(context, KeyGroupRange(0, MP - 1),
                                         ManualProcessingTimeService(start=start, budget=budget),
                                         firing_budget=budget)
    target = Fired()
    return manager, context, manager.get_internal_timer_service("timers", target), target


# -- impl/timers.py ------------------------------------------------------------------------------

def test_manual_clock_fires_exactly_budget_physical_timers_and_stops_at_one_more():
    """The simulated clock fires ``budget`` physical timers in one advance and raises at one more.
    Kills impl/timers.py:143 (``ManualProcessingTimeService.advance_to``) ``fired = 0`` ->
    ``fired = 1`` (the budget one too small)."""
    clock = ManualProcessingTimeService(start=0, budget=3)
    fired = []
    for ts in (1, 2, 3):
        clock.register_timer(ts, fired.append)
    clock.advance_to(10)
    assert fired == [1, 2, 3]
    for ts in (11, 12, 13, 14):
        clock.register_timer(ts, fired.append)
    with pytest.raises(TimerFiringBudgetExceeded):
        clock.advance_to(20)
    assert fired == [1, 2, 3, 11, 12, 13]


def test_every_processing_time_registration_after_the_flush_is_counted_as_dropped():
    """Nothing fires after the end-of-input flush; each registration is counted. Kills
    impl/timers.py:239 (``register_processing_time_timer``) ``dropped_after_flush += 1`` -> ``= 1``."""
    manager, context, service, target = timer_service()
    service.flush_processing_time_timers()
    for key, ts in (("a", 5), ("b", 6), ("a", 7)):
        context.set_current_key(key)
        service.register_processing_time_timer("w", ts, A.TRIGGER)
    manager.processing_time_service.advance_to(100)
    assert service.dropped_after_flush == 3 and service.num_processing_time_timers() == 0


def test_reached_watermark_stops_just_before_the_first_timer_an_interrupted_advance_left():
    """FLINK-40101: what an interrupted advance may emit is one less than the earliest event-time
    timer it left (at most the watermark). Kills impl/timers.py:629 (``get_reached_watermark``)
    ``head[0]`` -> ``head[1]`` in the comparison, ``head[0] - 1`` -> ``+ 1`` / ``- 2``."""
    manager, context, service, target = timer_service()
    for key, ts in (("a", 5), ("b", 10), ("c", 10), ("d", 30)):
        context.set_current_key(key)
        service.register_event_time_timer("w", ts)
    assert manager.get_reached_watermark() == service.current_watermark  # nothing due yet
    fired = []
    assert not manager.try_advance_watermark(20, lambda: bool(fired.append(1)) or len(fired) >= 2)
    assert [t.timestamp for _, t in target.timers] == [5, 10]
    assert manager.get_reached_watermark() == 9  # the other timer at 10 is still pending
    manager.advance_watermark(20)
    assert manager.get_reached_watermark() == 20  # the head (30) is after the watermark


# -- model/timers.py (and impl/java_hashmap.py) ---------------------------------------------------

def test_a_ninth_name_in_one_bucket_doubles_the_service_map_as_java_does():
    """Nine service names in one bucket of the 16-slot table: Java's ``treeifyBin`` resizes to 32
    instead, which splits the bucket (orders printed by JDK 17's ``HashMap.keySet()``). Kills
    model/timers.py:98 (``map_order``, the treeify resize) ``capacity *= 2`` -> ``= 2`` / ``/= 2``
    / ``*= 3`` (found reviewing the sampled survivors; outside the sample itself)."""
    from streamproof.impl.java_hashmap import hash_map_order
    from streamproof.model.timers import map_order

    eight = ["s12", "s8", "s23", "s34", "s45", "s56", "s67", "s78"]  # all in bucket 5 of 16
    assert map_order(eight) == hash_map_order(eight) == eight
    nine = [*eight, "s89"]
    java = ["s8", "s12", "s23", "s34", "s45", "s56", "s67", "s78", "s89"]  # s8: bucket 5 of 32, the rest 21
    assert map_order(nine) == hash_map_order(nine) == java


def _processing_time_run(timers, budget=3, to=10):
    """Runs processing-time timers ``[(key, ts)]`` on the implementation and on the model (which
    follows the implementation's tie choices) with a small firing budget; returns both traces."""
    from streamproof.properties.scenario import scenario_from_dict
    from streamproof.properties.timers.runner import run_impl, run_model

    steps = [{"op": "new_instance", "max_parallelism": 128, "key_group_range": [0, 127]}]
    for key, ts in timers:
        steps += [{"op": "set_key", "key": key},
                  {"op": "register", "domain": "processing", "namespace": "w", "ts": ts}]
    steps += [{"op": "advance_processing_time", "to": to}, {"op": "count"}]
    steps = scenario_from_dict({"family": "timers", "steps": steps}).steps
    impl = run_impl(steps, budget=budget)
    return impl, run_model(steps, impl, budget=budget)


def _shape(trace):
    return [e["event"] + (" fatal" if e.get("fatal") else "") for e in trace]


def test_model_fires_exactly_budget_due_processing_timers_in_one_callback_as_the_implementation():
    """One physical timer, four processing-time timers due with it, budget 3: both fire three and
    end the run; with three due, both fire all. Kills model/timers.py:258
    (``_on_processing_time``) ``fired = 0`` -> ``fired = 1`` and :262 ``fired += 1`` ->
    ``fired -= 1`` (the callback's budget)."""
    from streamproof.properties.timers.runner import same_trace

    impl, model = _processing_time_run([("a", 1), ("b", 1), ("c", 1)])
    assert _shape(impl) == _shape(model) == ["instance", "physical_register", "fire", "fire", "fire", "count"]
    impl, model = _processing_time_run([("a", 1), ("b", 1), ("c", 1), ("d", 1)])
    assert _shape(impl) == _shape(model) == [
        "instance", "physical_register", "fire", "fire", "fire", "error fatal"]
    assert same_trace(model, impl)


def test_model_fires_exactly_budget_physical_timers_in_one_advance_as_the_implementation():
    """Each firing schedules the next physical timer, still due in the same advance: budget 3
    allows three physical timers and ends the run at a fourth, in both. Kills model/timers.py:247
    (``advance_processing_time``) ``fired = 0`` -> ``fired = 1`` and :251 ``fired += 1`` ->
    ``fired += 2`` (the clock's budget)."""
    from streamproof.properties.timers.runner import same_trace

    impl, model = _processing_time_run([("a", 1), ("b", 2), ("c", 3)])
    assert _shape(impl) == _shape(model) == ["instance"] + ["physical_register", "fire"] * 3 + ["count"]
    impl, model = _processing_time_run([("a", 1), ("b", 2), ("c", 3), ("d", 4)])
    assert _shape(impl) == _shape(model) == ["instance"] + ["physical_register", "fire"] * 3 + [
        "physical_register", "error fatal"]
    assert same_trace(model, impl)


def test_the_model_default_service_is_named_timers_in_the_hashmap_order():
    """The default service is Flink's "timers": created first, it shares bucket 2 with "other"
    and so is advanced before it (tests/test_conformance_timers.py has the JVM's order). Kills
    model/timers.py:50 ``DEFAULT_SERVICE = "timers"`` -> ``"XXtimersXX"``."""
    from streamproof.properties.scenario import scenario_from_dict
    from streamproof.properties.timers.runner import run_impl, run_model

    steps = scenario_from_dict({"family": "timers", "steps": [
        {"op": "new_instance", "max_parallelism": 128, "key_group_range": [0, 127]},
        {"op": "set_key", "key": "k"},
        {"op": "register", "domain": "event", "namespace": "w", "ts": 1, "service": "other"},
        {"op": "register", "domain": "event", "namespace": "w", "ts": 1},
        {"op": "advance_watermark", "to": 5},
    ]}).steps
    impl = run_impl(steps)
    assert [e.get("service", "timers") for e in impl if e["event"] == "fire"] == ["timers", "other"]
    assert run_model(steps, impl) == impl


# -- model/termination.py ------------------------------------------------------------------------

def test_the_flush_spec_drops_and_counts_every_registration_after_the_flush_as_the_implementation():
    """After ``end_flush`` a registration is dropped and counted, never pending (nothing fires
    after ``finish()``), in the specification as in the implementation. Kills
    model/termination.py:82 (``FlushSpec.register``) ``dropped_after_flush += 1`` -> ``= 1`` /
    ``+= 2`` and :143 (``end_flush``) ``phase = "FLUSHED"`` -> ``"XXFLUSHEDXX"``."""
    from streamproof.model.termination import TRIGGER, FlushSpec

    spec = FlushSpec()
    spec.start_flush()
    spec.end_flush()
    spec.register((5, "a", "w"), TRIGGER)
    spec.register((6, "b", "w"))
    spec.check()
    assert spec.phase == "FLUSHED" and spec.actions == {} and spec.dropped_after_flush == 2

    _, context, service, _ = timer_service()
    service.flush_processing_time_timers()
    for key, ts, action in (("a", 5, A.TRIGGER), ("b", 6, None)):
        context.set_current_key(key)
        service.register_processing_time_timer("w", ts, action)
    assert service.dropped_after_flush == spec.dropped_after_flush


def test_the_flush_spec_check_rejects_a_wait_or_due_timer_fired_before_its_time():
    """The invariant "a timer fired before its time" covers WAIT and already-due firings (a
    TRIGGER firing reads MAX_TIME). Kills model/termination.py:148 (``FlushSpec.check``)
    ``a in (WAIT, DUE)`` -> ``a not in (WAIT, DUE)`` (and, outside the sample, ``now >= t[0]`` ->
    ``now > t[0]`` / ``now >= t[1]``)."""
    from streamproof.model.termination import DUE, MAX_TIME, TRIGGER, WAIT, FlushSpec

    for action in (WAIT, DUE):
        spec = FlushSpec()
        spec.fired.append(((10, "a", "w"), action, 5))
        with pytest.raises(AssertionError, match="before its time"):
            spec.check()
    spec = FlushSpec()
    spec.fired.append(((10, "a", "w"), WAIT, 10))
    spec.fired.append(((20, "b", "w"), TRIGGER, MAX_TIME))
    spec.check()


# -- impl/keygroups.py and model/keygroups.py ----------------------------------------------------

def test_a_key_hash_that_murmur_scrambles_to_integer_min_value_lands_in_key_group_zero():
    """``MathUtils.murmurHash`` maps the one scramble equal to ``Integer.MIN_VALUE`` to 0 (its
    negation would overflow); -2089875627 is that key hash (checked with the Java code on JDK 17).
    Kills impl/keygroups.py:120 (``murmur_hash``) ``else 0`` -> ``else 1`` and model/keygroups.py:51
    (``murmur``) ``-(2**31)`` -> ``-(2*31)``."""
    from streamproof.impl.keygroups import Int32, assign_to_key_group, murmur_hash
    from streamproof.model import keygroups as spec

    assert murmur_hash(-2089875627) == spec.murmur(-2089875627) == 0
    for max_parallelism in (128, 7):
        assert assign_to_key_group(Int32(-2089875627), max_parallelism) == 0
        assert spec.key_group(("int32", -2089875627), max_parallelism) == 0


def test_a_string_key_with_a_lone_surrogate_hashes_as_java_string_hash_code():
    """Java hashes UTF-16 code units, lone surrogates included (``"\\uD800".hashCode()`` is 55296,
    ``"a\\uDC00b"`` 1839235 on JDK 17). Kills impl/keygroups.py:88 (``java_hash_code``) and
    model/keygroups.py:27 (``java_hash``) ``"surrogatepass"`` -> ``"XXsurrogatepassXX"``."""
    from streamproof.impl.keygroups import assign_to_key_group, java_hash_code
    from streamproof.model import keygroups as spec

    assert java_hash_code("\ud800") == spec.java_hash("\ud800") == 55296
    assert java_hash_code("a\udc00b") == spec.java_hash("a\udc00b") == 1839235
    assert assign_to_key_group("a\udc00b", 128) == spec.key_group("a\udc00b", 128)


# -- impl/snapshot_format.py ---------------------------------------------------------------------

def _one_key_group(event=(), processing=()):
    from streamproof.impl.snapshot_format import KeyGroupTimers, TimerSnapshotContents

    return TimerSnapshotContents(2, 1, KeyGroupRange(0, 0), 1, ("t",),
                                 {0: {"t": KeyGroupTimers(tuple(event), tuple(processing))}})


def test_the_writer_refuses_a_namespace_nested_deeper_than_the_reader_reads():
    """A tuple nested ``MAX_VALUE_DEPTH`` deep is written; one level more is refused at write
    time (the reader would refuse the file). Kills impl/snapshot_format.py:128 (``_value``)
    ``depth >= MAX_VALUE_DEPTH or len(value) > 0xFFFF`` -> ``... and ...``."""
    from streamproof.impl.snapshot_format import MAX_VALUE_DEPTH, decode_snapshot, encode_snapshot
    from streamproof.impl.timers import InternalTimer

    def nested(levels):
        value = "w"
        for _ in range(levels):
            value = (value,)
        return value

    deepest = InternalTimer(1, "a", nested(MAX_VALUE_DEPTH))
    decoded = decode_snapshot(encode_snapshot(_one_key_group([deepest])))
    assert [timer for _, _, timer, _ in decoded.entries()] == [deepest]
    with pytest.raises(ValueError, match="nested over"):
        encode_snapshot(_one_key_group([InternalTimer(1, "a", nested(MAX_VALUE_DEPTH + 1))]))
    with pytest.raises(ValueError, match="65535 long"):
        encode_snapshot(_one_key_group([InternalTimer(1, "a", (0,) * 0x10000)]))


def test_processing_timers_of_two_keys_with_one_namespace_in_one_key_group_keep_their_keys():
    """The writer caches each (key, namespace) encoding within a section; two processing-time
    timers sharing a namespace must still be written with their own keys. Kills
    impl/snapshot_format.py:198 (``_section``) ``kn = (timer[1], timer[2])`` -> ``(timer[2], timer[2])``."""
    from streamproof.impl.snapshot_format import decode_snapshot, encode_snapshot
    from streamproof.impl.timers import InternalTimer

    processing = [(InternalTimer(5, "a", "w"), A.TRIGGER), (InternalTimer(6, "b", "w"), A.WAIT)]
    decoded = decode_snapshot(encode_snapshot(_one_key_group(processing=processing)))
    assert sorted((t, a) for _, domain, t, a in decoded.entries() if domain == "processing") == processing


def test_an_end_record_counting_other_sections_names_the_offset_of_its_count():
    """Errors name the offset of what is wrong: here the end record's section count, one byte
    after its type. Kills impl/snapshot_format.py:439 (``decode_snapshot``) ``at + 1`` -> ``at - 1``."""
    import struct

    from streamproof.impl.snapshot_format import SnapshotFormatError, decode_snapshot, encode_snapshot
    from streamproof.impl.timers import InternalTimer

    data = bytearray(encode_snapshot(_one_key_group([InternalTimer(1, "a", "w")])))
    end = len(data) - 17  # the end record: type, section count (u32), timer count (u64), CRC (u32)
    assert data[end] == 0x45 and struct.unpack_from(">I", data, end + 1)[0] == 1
    struct.pack_into(">I", data, end + 1, 2)
    with pytest.raises(SnapshotFormatError, match="counts 2 sections, the file has 1") as e:
        decode_snapshot(bytes(data))
    assert e.value.offset == end + 1


# -- impl/snapshots.py ---------------------------------------------------------------------------

def test_a_restore_missing_key_groups_names_them_as_ranges_even_a_single_one():
    """A restore that would lose timers names the uncovered key groups (``2, 5-7``); a single
    uncovered key group is a ValueError like the others. Kills impl/snapshots.py:532 (``_ranges``)
    ``key_groups[0]`` -> ``key_groups[1]`` (an IndexError for one key group), and the message
    mutants :533 ``key_groups[1:]`` -> ``[2:]``, :534 ``previous + 1`` -> ``previous - 1``."""
    from streamproof.impl.snapshot_format import TimerSnapshotContents
    from streamproof.impl.snapshots import restore_from_snapshots

    def covering(first, last):
        return TimerSnapshotContents(2, 8, KeyGroupRange(first, last), 1, ("timers",), {})

    def manager():
        return InternalTimeServiceManager(KeyContext(8), KeyGroupRange(0, 7), ManualProcessingTimeService())

    with pytest.raises(ValueError, match=r"key groups 7 of"):
        restore_from_snapshots(manager(), [covering(0, 6)])
    with pytest.raises(ValueError, match=r"key groups 2, 5-7 of"):
        restore_from_snapshots(manager(), [covering(0, 1), covering(3, 4)])
    assert restore_from_snapshots(manager(), [covering(0, 3), covering(4, 7)]).timers == 0


# -- impl/queues.py ------------------------------------------------------------------------------

def test_the_queue_answers_contains_and_is_empty_without_a_key_group_and_names_a_foreign_one():
    """The queue's API without a key group (Flink's ``contains`` / ``isEmpty``), and the key group
    a :class:`KeyGroupOutOfRangeError` carries. Kills impl/queues.py:124 (``contains``)
    ``key_group is None`` -> ``is not None``, :154 (``is_empty``) ``_size == 0`` -> ``== 1`` and
    :39 (``KeyGroupOutOfRangeError``) ``self.key_group = key_group`` -> ``None``."""
    from streamproof.impl.keygroups import assign_to_key_group
    from streamproof.impl.queues import KeyGroupedPriorityQueueSet, KeyGroupOutOfRangeError

    queue = KeyGroupedPriorityQueueSet(KeyGroupRange(0, 127), lambda e: assign_to_key_group(e[1], 128))
    assert queue.is_empty() and not queue.contains((5, "a", "n"))
    queue.add((5, "a", "n"))
    assert not queue.is_empty() and queue.contains((5, "a", "n")) and not queue.contains((5, "b", "n"))
    queue.poll()
    assert queue.is_empty()
    with pytest.raises(KeyGroupOutOfRangeError) as error:
        KeyGroupedPriorityQueueSet(KeyGroupRange(0, 9), lambda e: 0).add((1, "x", "n"), key_group=50)
    assert error.value.key_group == 50


# -- model/snapshot.py ---------------------------------------------------------------------------

def test_the_snapshot_model_restores_only_a_finished_snapshot_and_abandons_the_running_ones():
    """Restoring an unknown, running or cancelled snapshot is refused; a restore abandons the
    snapshots still running (they can no longer finish). Kills model/snapshot.py:112
    (``SnapshotModel.restore``) ``snapshot is None or ...`` -> ``... and ...`` and :118
    ``other.state == "running"`` -> ``"XXrunningXX"``."""
    from streamproof.model.snapshot import Rejected, SnapshotModel

    model = SnapshotModel()
    model.register("timers", "processing", (5, "a", "w"), "TRIGGER")
    model.start("done", 2)
    model.finish("done")
    model.start("running", 2)
    model.start("cancelled", 2)
    model.cancel("cancelled")
    for snapshot_id in ("unknown", "running", "cancelled"):
        with pytest.raises(Rejected, match="is not finished"):
            model.restore(snapshot_id)
    model.restore("done")
    assert model.running() == [] and model.live == {("timers", "processing", (5, "a", "w")): "TRIGGER"}
    with pytest.raises(Rejected, match="is not running"):
        model.finish("running")

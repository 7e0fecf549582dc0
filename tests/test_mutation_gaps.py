"""Behaviours the rest of the suite left open, found by mutation testing (issue 17,
``python -m tests.mutation``; docs/properties.md, "Mutation scores"). Each test names the surviving
mutant it kills: ``module:line`` in the commit measured (given there), the function, the mutation."""

import pytest

from streamproof.impl.state.key_groups import KeyGroupRange
from streamproof.impl.timers.termination import TimerTerminationAction as A
from streamproof.impl.timers.internal_time_service_manager import InternalTimeServiceManager
from streamproof.impl.timers.internal_timer_service import (
    MAX_WATERMARK, MIN_WATERMARK, KeyContext, TimerFiringBudgetExceeded)
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService

from tests.recorders import Fired

MP = 16


def timer_service(start=0, budget=1000):
    context = KeyContext(MP)
    manager = InternalTimeServiceManager(context, KeyGroupRange(0, MP - 1),
                                         ManualProcessingTimeService(start=start, budget=budget),
                                         firing_budget=budget)
    target = Fired()
    return manager, context, manager.get_internal_timer_service("timers", target), target


# -- impl/timers/internal_timer_service.py ------------------------------------------------------------------------------

def test_manual_clock_fires_exactly_budget_physical_timers_and_stops_at_one_more():
    """The simulated clock fires ``budget`` physical timers in one advance and raises at one more.
    Kills impl/timers/internal_timer_service.py:143 (``ManualProcessingTimeService.advance_to``) ``fired = 0`` ->
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
    impl/timers/internal_timer_service.py:239 (``register_processing_time_timer``) ``dropped_after_flush += 1`` -> ``= 1``."""
    manager, context, service, target = timer_service()
    service.flush_processing_time_timers()
    for key, ts in (("a", 5), ("b", 6), ("a", 7)):
        context.set_current_key(key)
        service.register_processing_time_timer("w", ts, A.TRIGGER)
    manager.processing_time_service.advance_to(100)
    assert service.dropped_after_flush == 3 and service.num_processing_time_timers() == 0


def test_reached_watermark_stops_just_before_the_first_timer_an_interrupted_advance_left():
    """FLINK-40101: what an interrupted advance may emit is one less than the earliest event-time
    timer it left (at most the watermark). Kills impl/timers/internal_timer_service.py:629 (``get_reached_watermark``)
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


# -- model/timers.py (and impl/state/java_hashmap.py) ---------------------------------------------------

def test_a_ninth_name_in_one_bucket_doubles_the_service_map_as_java_does():
    """Nine service names in one bucket of the 16-slot table: Java's ``treeifyBin`` resizes to 32
    instead, which splits the bucket (orders printed by JDK 17's ``HashMap.keySet()``). Kills
    model/timers.py:98 (``map_order``, the treeify resize) ``capacity *= 2`` -> ``= 2`` / ``/= 2``
    / ``*= 3`` (found reviewing the sampled survivors; outside the sample itself)."""
    from streamproof.impl.state.java_hashmap import hash_map_order
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


# -- impl/state/key_groups.py and model/keygroups.py ----------------------------------------------------

def test_a_key_hash_that_murmur_scrambles_to_integer_min_value_lands_in_key_group_zero():
    """``MathUtils.murmurHash`` maps the one scramble equal to ``Integer.MIN_VALUE`` to 0 (its
    negation would overflow); -2089875627 is that key hash (checked with the Java code on JDK 17).
    Kills impl/state/key_groups.py:120 (``murmur_hash``) ``else 0`` -> ``else 1`` and model/keygroups.py:51
    (``murmur``) ``-(2**31)`` -> ``-(2*31)``."""
    from streamproof.impl.state.key_groups import Int32, assign_to_key_group, murmur_hash
    from streamproof.model import keygroups as spec

    assert murmur_hash(-2089875627) == spec.murmur(-2089875627) == 0
    for max_parallelism in (128, 7):
        assert assign_to_key_group(Int32(-2089875627), max_parallelism) == 0
        assert spec.key_group(("int32", -2089875627), max_parallelism) == 0


def test_a_string_key_with_a_lone_surrogate_hashes_as_java_string_hash_code():
    """Java hashes UTF-16 code units, lone surrogates included (``"\\uD800".hashCode()`` is 55296,
    ``"a\\uDC00b"`` 1839235 on JDK 17). Kills impl/state/key_groups.py:88 (``java_hash_code``) and
    model/keygroups.py:27 (``java_hash``) ``"surrogatepass"`` -> ``"XXsurrogatepassXX"``."""
    from streamproof.impl.state.key_groups import assign_to_key_group, java_hash_code
    from streamproof.model import keygroups as spec

    assert java_hash_code("\ud800") == spec.java_hash("\ud800") == 55296
    assert java_hash_code("a\udc00b") == spec.java_hash("a\udc00b") == 1839235
    assert assign_to_key_group("a\udc00b", 128) == spec.key_group("a\udc00b", 128)


# -- impl/timers/snapshot_format.py ---------------------------------------------------------------------

def _one_key_group(event=(), processing=()):
    from streamproof.impl.timers.snapshot_format import KeyGroupTimers, TimerSnapshotContents

    return TimerSnapshotContents(2, 1, KeyGroupRange(0, 0), 1, ("t",),
                                 {0: {"t": KeyGroupTimers(tuple(event), tuple(processing))}})


def test_the_writer_refuses_a_namespace_nested_deeper_than_the_reader_reads():
    """A tuple nested ``MAX_VALUE_DEPTH`` deep is written; one level more is refused at write
    time (the reader would refuse the file). Kills impl/timers/snapshot_format.py:128 (``_value``)
    ``depth >= MAX_VALUE_DEPTH or len(value) > 0xFFFF`` -> ``... and ...``."""
    from streamproof.impl.timers.snapshot_format import MAX_VALUE_DEPTH, decode_snapshot, encode_snapshot
    from streamproof.impl.timers.internal_timer_service import InternalTimer

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
    impl/timers/snapshot_format.py:198 (``_section``) ``kn = (timer[1], timer[2])`` -> ``(timer[2], timer[2])``."""
    from streamproof.impl.timers.snapshot_format import decode_snapshot, encode_snapshot
    from streamproof.impl.timers.internal_timer_service import InternalTimer

    processing = [(InternalTimer(5, "a", "w"), A.TRIGGER), (InternalTimer(6, "b", "w"), A.WAIT)]
    decoded = decode_snapshot(encode_snapshot(_one_key_group(processing=processing)))
    assert sorted((t, a) for _, domain, t, a in decoded.entries() if domain == "processing") == processing


def test_an_end_record_counting_other_sections_names_the_offset_of_its_count():
    """Errors name the offset of what is wrong: here the end record's section count, one byte
    after its type. Kills impl/timers/snapshot_format.py:439 (``decode_snapshot``) ``at + 1`` -> ``at - 1``."""
    import struct

    from streamproof.impl.timers.snapshot_format import SnapshotFormatError, decode_snapshot, encode_snapshot
    from streamproof.impl.timers.internal_timer_service import InternalTimer

    data = bytearray(encode_snapshot(_one_key_group([InternalTimer(1, "a", "w")])))
    end = len(data) - 17  # the end record: type, section count (u32), timer count (u64), CRC (u32)
    assert data[end] == 0x45 and struct.unpack_from(">I", data, end + 1)[0] == 1
    struct.pack_into(">I", data, end + 1, 2)
    with pytest.raises(SnapshotFormatError, match="counts 2 sections, the file has 1") as e:
        decode_snapshot(bytes(data))
    assert e.value.offset == end + 1


# -- impl/timers/snapshots.py ---------------------------------------------------------------------------

def test_a_restore_missing_key_groups_names_them_as_ranges_even_a_single_one():
    """A restore that would lose timers names the uncovered key groups (``2, 5-7``); a single
    uncovered key group is a ValueError like the others. Kills impl/timers/snapshots.py:532 (``_ranges``)
    ``key_groups[0]`` -> ``key_groups[1]`` (an IndexError for one key group), and the message
    mutants :533 ``key_groups[1:]`` -> ``[2:]``, :534 ``previous + 1`` -> ``previous - 1``."""
    from streamproof.impl.timers.snapshot_format import TimerSnapshotContents
    from streamproof.impl.timers.snapshots import restore_from_snapshots

    def covering(first, last):
        return TimerSnapshotContents(2, 8, KeyGroupRange(first, last), 1, ("timers",), {})

    def manager():
        return InternalTimeServiceManager(KeyContext(8), KeyGroupRange(0, 7), ManualProcessingTimeService())

    with pytest.raises(ValueError, match=r"key groups 7 of"):
        restore_from_snapshots(manager(), [covering(0, 6)])
    with pytest.raises(ValueError, match=r"key groups 2, 5-7 of"):
        restore_from_snapshots(manager(), [covering(0, 1), covering(3, 4)])
    assert restore_from_snapshots(manager(), [covering(0, 3), covering(4, 7)]).timers == 0


# -- impl/timers/heap_priority_queue_set.py ------------------------------------------------------------------------------

def test_the_queue_answers_contains_and_is_empty_without_a_key_group_and_names_a_foreign_one():
    """The queue's API without a key group (Flink's ``contains`` / ``isEmpty``), and the key group
    a :class:`KeyGroupOutOfRangeError` carries. Kills impl/timers/heap_priority_queue_set.py:124 (``contains``)
    ``key_group is None`` -> ``is not None``, :154 (``is_empty``) ``_size == 0`` -> ``== 1`` and
    :39 (``KeyGroupOutOfRangeError``) ``self.key_group = key_group`` -> ``None``."""
    from streamproof.impl.state.key_groups import assign_to_key_group
    from streamproof.impl.timers.heap_priority_queue_set import KeyGroupedPriorityQueueSet, KeyGroupOutOfRangeError

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


# -- model/job.py (issue 31) ---------------------------------------------------------------------

def test_end_of_stream_co_group_results_carry_max_timestamp_into_a_following_window():
    """A FLIP-331 co-group's results are stamped Long.MAX_VALUE (the global window's end): a tumbling
    window after it sums them in the window ending at MAX_TIME, in the model as in the runtime.
    Kills model/job.py:140 (``_end_of_stream_co_group``) ``2**63 - 1`` -> ``2*63 - 1``."""
    from collections import Counter

    from streamproof.impl.graph.job_graph import Edge, JobGraph, OperatorNode
    from streamproof.impl.graph.job import GraphJobSpec
    from streamproof.impl.operators.keyed_process_operator import StreamRecord
    from streamproof.impl.graph.sim import simulate
    from streamproof.impl.tasks.stream_task import Watermark
    from streamproof.model.job import MAX_TIME, graph_reference
    from streamproof.properties.job.functions import FUNCTIONS, STATELESS_FUNCTIONS
    from streamproof.properties.job.steps import with_declared_attributes

    ops = [("src", "source", None), ("tag", "map", "tag_right"), ("co", "keyed_process", "eos_co_group"),
           ("win", "keyed_process", "tumbling_window_sum"), ("sink", "sink", None)]
    edges = [("src", "tag", "forward"), ("tag", "co", "keyed"), ("co", "win", "keyed"), ("win", "sink", "forward")]
    doc = {"operators": [{"name": n, "kind": k, "parallelism": 1, "function": f} for n, k, f in ops],
           "edges": [{"from": a, "to": b, "partitioning": p} for a, b, p in edges]}
    sources = [[("record", "a", 5, 1), ("record", "b", 2, 2), ("record", "a", 7, 3), ("watermark", 3)]]
    want = Counter([("a", MAX_TIME, 12), ("b", MAX_TIME, 2)])
    assert graph_reference(doc, sources, drain=True) == want
    nodes = [OperatorNode(n, k, 1, f, True, False, False, "default") for n, k, f in ops]
    graph = with_declared_attributes(JobGraph(nodes, [Edge(a, b, p) for a, b, p in edges]))
    inputs = [[StreamRecord(k, v, ts) for _, k, v, ts in sources[0][:3]] + [Watermark(3)]]
    run = simulate(GraphJobSpec(graph, inputs, {**FUNCTIONS, **STATELESS_FUNCTIONS}), 0)
    assert Counter(run.committed) == want


# -- model/eos.py (issue 31) ---------------------------------------------------------------------

def test_eos_output_before_max_watermark_is_a_violation_and_after_it_is_not():
    """Kills model/eos.py:29 (``output_only_after_end``) ``entry[0] == "record"`` -> ``"XXrecordXX"``
    (no record ever seen: nothing is a violation)."""
    from streamproof.model.eos import output_only_after_end

    log = [("watermark", 5), ("record", ("a", 3)), ("watermark", 2**63 - 1)]
    assert "emitted ('a', 3) before MAX_WATERMARK" in output_only_after_end("w", log, 2)
    assert output_only_after_end("w", log, None) is not None
    assert output_only_after_end("w", log, 1) is None
    assert output_only_after_end("w", [("watermark", 5)], None) is None


def test_eos_a_checkpoint_or_consumer_at_the_step_the_blocking_chain_finished_is_allowed():
    """The blocking chain must have finished at or before the trigger / the consumer's start: the
    same step is allowed, a later finish or none is a violation. Kills model/eos.py:46
    (``no_checkpoint_while_blocking``) and :58 (``consumers_after_producers``) ``end > step`` ->
    ``end >= step``, and :58 ``end is None or end > step`` -> ``... and ...``."""
    from streamproof.model.eos import consumers_after_producers, no_checkpoint_while_blocking

    layouts = [{"p": 2, "c": 1}]
    finish_log = [(0, "p", 0, 4), (0, "p", 1, 7)]  # p finished at step 7 (its last subtask)
    assert no_checkpoint_while_blocking([(0, 1, 7, None)], finish_log, layouts, {"p"}) is None
    assert "triggered at step 6 while p ran" in no_checkpoint_while_blocking([(0, 1, 6, None)], finish_log,
                                                                             layouts, {"p"})
    feeds = {("p", "c")}
    assert consumers_after_producers([(0, "c", 0, 7)], finish_log, layouts, feeds) is None
    assert consumers_after_producers([(0, "c", 0, None)], finish_log, layouts, feeds) is None  # never ran
    assert "c[0] ran at step 6 before p finished" in consumers_after_producers([(0, "c", 0, 6)], finish_log,
                                                                             layouts, feeds)
    unfinished = finish_log[:1]  # only one of p's two subtasks finished: p never finished
    assert "c[0] ran at step 9 before p finished" in consumers_after_producers([(0, "c", 0, 9)], unfinished,
                                                                             layouts, feeds)
    assert no_checkpoint_while_blocking([(0, 1, 9, None)], unfinished, layouts, {"p"}) is not None


# -- impl/operators/windows.py (issue 31) ------------------------------------------------------------------

def test_event_time_windows_refuse_the_no_timestamp_marker():
    """Flink's assigners refuse a record stamped Long.MIN_VALUE (the no-timestamp marker) and take
    Long.MIN_VALUE + 1. Kills impl/operators/windows.py:138 (``_check_timestamp``) ``timestamp <= MIN_WATERMARK``
    -> ``<``."""
    from streamproof.impl.timers.internal_timer_service import MIN_WATERMARK
    from streamproof.impl.operators.windows import SlidingEventTimeWindows, TumblingEventTimeWindows

    for assigner in (TumblingEventTimeWindows.of(10), SlidingEventTimeWindows.of(10, 5)):
        for timestamp in (None, MIN_WATERMARK):
            with pytest.raises(ValueError, match="no timestamp"):
                assigner.assign_windows("x", timestamp)
        assert assigner.assign_windows("x", MIN_WATERMARK + 1)



def test_window_operators_use_interruptible_timers_as_flinks_do():
    """Flink's WindowOperator opts in to interruptible timers (FLIP-443: ``useInterruptibleTimers``);
    a plain keyed function does not unless it says so. Kills impl/operators/windows.py:340
    (``WindowOperator.interruptible_timers``) ``True`` -> ``None`` (its firings would never split)."""
    from streamproof.impl.state.key_groups import KeyGroupRange
    from streamproof.impl.operators.keyed_process_operator import KeyedProcessOperator
    from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService
    from streamproof.impl.operators.windows import SumAggregate, TumblingEventTimeWindows, WindowOperator

    class Plain:
        def process_element(self, value, ctx, out):
            pass

    def uses(function):
        return KeyedProcessOperator(function, 128, KeyGroupRange(0, 127), ManualProcessingTimeService(start=0),
                                    lambda value, ts: None).use_interruptible_timers()

    assert uses(WindowOperator(TumblingEventTimeWindows.of(10), SumAggregate())) is True
    assert uses(Plain()) is False

# -- impl/coordination/runtime.py (issue 31) ------------------------------------------------------

def test_wait_for_all_fails_with_the_first_error_once_every_future_is_done():
    """``FutureUtils.waitForAll`` keeps the first failure (later ones are suppressed into it) and
    completes only when the last future is done. Kills impl/coordination/runtime.py:163
    (``wait_for_all.one_done``) ``error is not None and state["error"] is None`` -> ``... or ...``
    (the last error would win)."""
    from streamproof.impl.coordination.runtime import CompletableFuture, wait_for_all

    first, second, third = CompletableFuture(), CompletableFuture(), CompletableFuture()
    seen = []
    all_done = wait_for_all([first, second, third])
    all_done.when_complete(lambda value, error: seen.append(error))
    one, two = RuntimeError("first"), RuntimeError("second")
    first.complete_exceptionally(one)
    second.complete_exceptionally(two)
    assert not all_done.is_done()
    third.complete("ok")
    assert all_done.state() == "failed" and seen == [one]
    assert wait_for_all([CompletableFuture.completed(1), CompletableFuture.completed(2)]).state() == "done"


# -- impl/operators/keyed_process_operator.py (issue 31) ----------------------------------------------------------------

def test_the_time_limit_holds_off_the_main_thread_where_no_alarm_can_run():
    """Outside the main thread no alarm can be armed: the time limit is checked every 256 timers
    (and outputs) instead. Kills impl/operators/keyed_process_operator.py:582 (``_count_timer``) ``not self._timers & 255``
    -> ``| 255`` and :588 (``_check_time``) ``self._callback is not None`` -> ``is None`` (no check)."""
    import threading

    from streamproof.flink import CallbackLimitExceeded
    from streamproof.flink.datastream import KeyedProcessFunction
    from tests.test_flink_api import feed, make

    class SlowTimers(KeyedProcessFunction):
        def process_element(self, value, ctx):
            for t in range(600):
                sum(range(20_000))  # busy (time.* in this module is the job's clock)
                ctx.timer_service().register_event_time_timer(t)

    errors = []

    def run():
        op, _, _ = make(SlowTimers(), max_seconds_per_callback=0.01)
        try:
            feed(op, "k", 1, 0)
        except CallbackLimitExceeded as error:
            errors.append(str(error))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(120)
    assert errors == ["SlowTimers.process_element ran longer than 0.01 s for one element"]


def test_a_task_emitting_into_an_operator_names_its_task_and_attempt_by_default():
    """Without ``task_name``/``attempt_number`` the owner of ``emit`` (a bound method of a task)
    names them; a plain function leaves ``KeyedProcess(<function class>)`` and attempt 0. Kills
    impl/operators/keyed_process_operator.py:525 (``KeyedProcessOperator.__init__``) ``getattr(emit, "__self__", None)`` ->
    ``"XX__self__XX"``."""
    from streamproof.impl.state.key_groups import KeyGroupRange
    from streamproof.impl.operators.keyed_process_operator import KeyedProcessOperator
    from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService

    class Task:
        name, attempt = "window -> sink[1]", 2

        def emit(self, value, ts):
            pass

    class Noop:
        def process_element(self, value, ctx, out):
            pass

    def make(emit):
        return KeyedProcessOperator(Noop(), 128, KeyGroupRange(0, 127), ManualProcessingTimeService(start=0), emit)

    context = make(Task().emit).runtime_context
    assert (context.task_name, context.attempt_number) == ("window -> sink[1]", 2)
    context = make(lambda value, ts: None).runtime_context
    assert (context.task_name, context.attempt_number) == ("KeyedProcess(Noop)", 0)


# -- impl/graph/job_graph.py (issue 31) --------------------------------------------------------------------

def test_a_graph_written_to_json_and_read_back_keeps_the_flip_331_attributes():
    """Kills impl/graph/job_graph.py:347 (``graph_to_json``) ``{"internal_sorter_supported": True}`` -> ``False``
    (the attribute lost on a round trip: a saved scenario would lose the sorted path)."""
    from streamproof.impl.graph.job_graph import Edge, JobGraph, OperatorNode, graph_from_json, graph_to_json

    graph = JobGraph([OperatorNode("src", "source", 1), OperatorNode("w", "keyed_process", 2, "eos_window_sum",
                                                                     True, True, True, "g"),
                      OperatorNode("sink", "sink", 2, None, False)],
                     [Edge("src", "w", "keyed"), Edge("w", "sink", "forward")])
    document = graph_to_json(graph)
    back = graph_from_json(document, 1)
    assert graph_to_json(back) == document
    w = back.by_name["w"]
    assert (w.output_only_after_end_of_stream, w.internal_sorter_supported, w.slot_sharing_group) == (True, True, "g")
    assert back.by_name["sink"].chaining is False


# -- impl/tasks/operator_chain.py (issue 31) --------------------------------------------------------------------

def test_the_timer_mail_delay_counts_the_mailbox_steps_a_starved_timer_waited():
    """``job.timer-liveness`` reads how many mailbox steps each processing-time timer's mail waited
    (``ChainTask.steps``): none in a plain run, about twenty when FLINK-39898's batching starves it
    until a checkpoint's urgent mail. Kills impl/tasks/operator_chain.py:550 (``ChainTask.run_step``)
    ``self.steps += 1`` -> ``self.steps = 1`` (every delay 0 or 1)."""
    from streamproof.impl.graph.job_graph import one_stage_graph
    from streamproof.impl.graph.job import GraphJobSpec
    from streamproof.impl.operators.keyed_process_operator import StreamRecord
    from streamproof.impl.graph.sim import simulate
    from streamproof.impl.tasks.stream_task import Watermark
    from streamproof.properties.bugzoo import get_variant
    from streamproof.properties.job.functions import FUNCTIONS, STATELESS_FUNCTIONS
    from streamproof.properties.job.steps import with_declared_attributes

    graph = with_declared_attributes(one_stage_graph("processing_buffer", 1, 1))
    inputs = [[StreamRecord(k, i, i) for i, k in enumerate("abcabcabcabc")] + [Watermark(20)]]
    spec = GraphJobSpec(graph, inputs, {**FUNCTIONS, **STATELESS_FUNCTIONS}, checkpoint_interval=5)
    plain = simulate(spec, 0)
    assert plain.metrics["timer_delays"] and max(plain.metrics["timer_delays"]) <= 1
    with get_variant("processing-timer-mail-starved-by-urgent-batching").patch():
        starved = simulate(spec, 0)
    assert max(starved.metrics["timer_delays"]) >= 10
    assert len(plain.committed) == len(starved.committed) == 12


def test_a_broadcast_side_output_keeps_the_broadcast_records_timestamp():
    """What a keyed broadcast-state operator emits while processing a broadcast-side record carries
    that record's timestamp (Flink's TimestampedCollector), keyless. Kills impl/tasks/operator_chain.py:350
    (``KeyedBroadcastOperator._emit_value``) ``timestamp is None`` -> ``is not None`` (Long.MIN_VALUE
    instead: the no-timestamp marker)."""
    from streamproof.impl.graph.job_graph import Edge, JobGraph, OperatorNode
    from streamproof.impl.tasks.stream_elements import SecondInput
    from streamproof.impl.graph.job import GraphJobSpec
    from streamproof.impl.operators.keyed_process_operator import KeyedProcessFunction, StreamRecord
    from streamproof.impl.graph.sim import simulate
    from streamproof.impl.tasks.stream_task import Watermark

    class Rules(KeyedProcessFunction):
        def process_element(self, value, ctx, out):
            out.collect(("rule", value.value) if isinstance(value, SecondInput) else ("event", value))

    graph = JobGraph([OperatorNode("events", "source", 1), OperatorNode("rules", "source", 1),
                      OperatorNode("b", "keyed_process", 1, "rules"), OperatorNode("sink", "sink", 1)],
                     [Edge("events", "b", "keyed"), Edge("rules", "b", "broadcast", input=2), Edge("b", "sink")])
    inputs = [[StreamRecord("a", 1, 5), Watermark(10)], [StreamRecord(None, 9, 7), Watermark(10)]]
    run = simulate(GraphJobSpec(graph, inputs, {"rules": Rules}), 0)
    assert sorted(run.committed) == [("event", 1), ("rule", 9)]
    emitted = sorted(e[1:3] for _, _, name, log, _ in run.metrics["keyed_logs"] if name == "b"
                     for e in log if e[0] == "record")
    assert emitted == [(("event", 1), 5), (("rule", 9), 7)]


# -- impl/tasks/stream_task.py (issue 31) ---------------------------------------------------------------------

def test_split_firing_metrics_count_only_records_between_the_parts_of_a_split_firing():
    """FLIP-443's coverage metrics (records between two parts of a split firing, of a key with a
    due timer, that changed timers) stay zero where no record comes between two parts of a firing
    (none is split here, or nothing arrives in between). Kills
    impl/tasks/stream_task.py:342 (``OperatorTask.__init__``) the three counters starting at 1 and :498
    (``_process_record``) ``not self.firing_interrupted()`` -> ``self.firing_interrupted()``."""
    from streamproof.impl.graph.job import JobSpec
    from streamproof.impl.operators.keyed_process_operator import StreamRecord
    from streamproof.impl.graph.sim import simulate
    from streamproof.impl.tasks.stream_task import TaskConfig, Watermark
    from streamproof.properties.job.functions import WindowSum

    a = [StreamRecord(k, v, t) for k, v, t in [("a", 1, 1), ("b", 2, 3), ("a", 3, 12), ("c", 1, 15)]]
    b = [StreamRecord(k, v, t) for k, v, t in [("b", 5, 2), ("c", 1, 9), ("a", 1, 21)]]
    inputs = [a[:2] + [Watermark(3)] + a[2:] + [Watermark(20)], b[:2] + [Watermark(9)] + b[2:]]
    for config in (TaskConfig(), TaskConfig(interruptible_timers=True)):
        for seed in range(3):
            run = simulate(JobSpec(inputs, lambda: WindowSum(10), parallelism=2, checkpoint_interval=3,
                                   async_mail_rate=0.7, config=config), seed)
            assert (run.split_records, run.split_due_key_records, run.split_timer_changes) == (0, 0, 0)




def test_back_pressure_keeps_every_channel_within_its_capacity(monkeypatch):
    """A task stops writing to a channel holding ``channel_capacity`` records until its reader takes
    one (the reader's ``queued_records`` count). Kills impl/tasks/stream_task.py:442 (``OperatorTask``, taking
    a record from a channel) ``queued_records[channel] -= 1`` -> ``-= 2`` (the count runs negative:
    no back-pressure, the channel fills up)."""
    from streamproof.impl.tasks.operator_chain import ChainTask
    from streamproof.impl.graph.job_graph import one_stage_graph
    from streamproof.impl.graph.job import GraphJobSpec
    from streamproof.impl.operators.keyed_process_operator import StreamRecord
    from streamproof.impl.graph.sim import simulate
    from streamproof.impl.tasks.stream_task import Watermark
    from streamproof.properties.job.functions import FUNCTIONS, STATELESS_FUNCTIONS

    peak = [0]
    receive = ChainTask.receive

    def measured(self, channel, element):
        receive(self, channel, element)
        peak[0] = max(peak[0], sum(isinstance(e, StreamRecord) for e in self.inputs[channel]))

    monkeypatch.setattr(ChainTask, "receive", measured)
    inputs = [[StreamRecord("abc"[i % 3], i, i) for i in range(60)] + [Watermark(100)]]
    for seed in range(2):
        run = simulate(GraphJobSpec(one_stage_graph("window_sum", 1, 1), inputs,
                                          {**FUNCTIONS, **STATELESS_FUNCTIONS}, channel_capacity=2), seed)
        assert len(run.committed) == 18 and peak[0] == 2


def test_a_task_that_restored_nothing_has_the_lineage_of_the_records_it_read():
    """certify's same-output replays each task's record lineage: the input channel of every record
    it consumed (4 from source 0, 1 from source 1 here). Kills impl/tasks/stream_task.py:335 (``OperatorTask``)
    ``inherited_records = []`` -> ``None`` (no lineage: None is kept for tasks a rescale merged)."""
    import random

    from streamproof.impl.graph.job_graph import one_stage_graph
    from streamproof.impl.graph.job_runtime import GraphJob
    from streamproof.impl.graph.job import GraphJobSpec
    from streamproof.impl.operators.keyed_process_operator import StreamRecord
    from streamproof.impl.graph.sim import run_schedule
    from streamproof.impl.tasks.stream_task import Watermark
    from streamproof.properties.job.functions import FUNCTIONS, STATELESS_FUNCTIONS

    inputs = [[StreamRecord("ab"[i % 2], i, i) for i in range(4)] + [Watermark(100)],
              [StreamRecord("c", 1, 1), Watermark(100)]]
    job = GraphJob(GraphJobSpec(one_stage_graph("window_sum", 2, 1), inputs, {**FUNCTIONS, **STATELESS_FUNCTIONS}),
                   None, random.Random(0))
    run_schedule(job, random.Random(1), (), 100_000)
    lineage = job.record_lineage()
    assert lineage is not None and list(lineage) == [("process -> sink", 0)]
    assert sorted(lineage[("process -> sink", 0)]) == [0, 0, 0, 0, 1]

# -- impl/graph/job_runtime.py (issue 31) ----------------------------------------------------------------

def test_a_side_output_edge_gets_its_tags_values_unwrapped_and_the_main_edge_the_rest():
    """PyFlink's ``get_side_output(tag)``: the edge tagged ``odd`` gets the odd window sums
    unwrapped, the untagged edge only the main output. Kills impl/graph/job_runtime.py:652 (``_routed``)
    ``value[1] == tag`` -> ``value[1] != tag`` (the tagged edge would get the other tags only)."""
    from streamproof.impl.graph.job_graph import Edge, JobGraph, OperatorNode
    from streamproof.impl.graph.job import GraphJobSpec
    from streamproof.impl.operators.keyed_process_operator import StreamRecord
    from streamproof.impl.graph.sim import simulate
    from streamproof.impl.tasks.stream_task import Watermark
    from streamproof.properties.job.functions import FUNCTIONS, STATELESS_FUNCTIONS

    ops = [OperatorNode("src", "source", 1),
           OperatorNode("w", "keyed_process", 1, "side_window_sum", route_side_outputs=True),
           OperatorNode("main", "sink", 1), OperatorNode("odd", "sink", 1)]
    graph = JobGraph(ops, [Edge("src", "w", "keyed"), Edge("w", "main"), Edge("w", "odd", tag="odd")])
    inputs = [[StreamRecord("a", 1, 1), StreamRecord("b", 2, 2), StreamRecord("a", 2, 3), Watermark(30)]]
    run = simulate(GraphJobSpec(graph, inputs, {**FUNCTIONS, **STATELESS_FUNCTIONS}), 0)
    assert sorted(run.committed) == [("a", 9, 3), ("b", 9, 2)]  # a's odd sum via the tagged edge, unwrapped



def test_a_rescale_changes_the_parallelism_of_a_chain_joined_by_forward_edges():
    """A rescale of the keyed operator takes its chain (``process -> sink``, a forward edge inside)
    to the new parallelism, named or not; only chains a source feeds forward keep theirs. Kills
    impl/graph/job_runtime.py:593 (``GraphJob.failover``) ``kind == "source"`` -> ``kind != "source"`` (the
    chain would keep its parallelism: no rescale at all)."""
    from streamproof.impl.graph.job_graph import one_stage_graph
    from streamproof.impl.graph.job import GraphJobSpec
    from streamproof.impl.operators.keyed_process_operator import StreamRecord
    from streamproof.impl.graph.sim import Fault, simulate
    from streamproof.impl.tasks.stream_task import Watermark
    from streamproof.properties.job.functions import FUNCTIONS, STATELESS_FUNCTIONS

    inputs = [[StreamRecord("abc"[i % 3], i, i) for i in range(30)] + [Watermark(100)]]
    spec = GraphJobSpec(one_stage_graph("window_sum", 1, 1), inputs, {**FUNCTIONS, **STATELESS_FUNCTIONS},
                        checkpoint_interval=3)
    for operator in ("process", None):
        run = simulate(spec, 0, (Fault("rescale", at=20, parallelism=3, operator=operator),))
        assert len(run.faults_applied) == 1 and len(run.committed) == 9
        assert run.metrics["layouts"][-1] == {"source": 1, "process -> sink": 3}


def test_a_rescale_restores_every_in_flight_broadcast_record_of_an_unaligned_checkpoint():
    """An unaligned checkpoint taken with two broadcast records still queued at the broadcast-state
    operator keeps both as channel state (the rules source's offset is past them); a rescale of the
    operator delivers both to the subtask that had them, none to the new one. Kills
    impl/graph/job_runtime.py:556 (``GraphJob._replay_channel_state``) the broadcast branch's ``continue`` ->
    ``break`` (everything after the first broadcast record of a snapshot dropped)."""
    from streamproof.impl.graph.job_graph import Edge, JobGraph, OperatorNode
    from streamproof.impl.tasks.stream_elements import SecondInput
    from streamproof.impl.graph.job_runtime import GraphJob
    from streamproof.impl.graph.job import GraphJobSpec
    from streamproof.impl.operators.keyed_process_operator import KeyedProcessFunction, StreamRecord
    from streamproof.impl.tasks.stream_task import TaskConfig, Watermark

    class Rules(KeyedProcessFunction):
        def process_element(self, value, ctx, out):
            out.collect(("rule", value.value) if isinstance(value, SecondInput) else ("event", value))

    graph = JobGraph([OperatorNode("events", "source", 1), OperatorNode("rules", "source", 1),
                      OperatorNode("b", "keyed_process", 1, "rules"), OperatorNode("sink", "sink", 1)],
                     [Edge("events", "b", "keyed"), Edge("rules", "b", "broadcast", input=2), Edge("b", "sink")])
    rules = [StreamRecord(None, SecondInput(8), 6), StreamRecord(None, SecondInput(9), 7)]
    inputs = [[StreamRecord("a", 1, 5), Watermark(10)], [StreamRecord(None, 8, 6), StreamRecord(None, 9, 7),
                                                          Watermark(10)]]
    job = GraphJob(GraphJobSpec(graph, inputs, {"rules": Rules}, checkpoint_interval=10**9,
                                config=TaskConfig(unaligned_checkpoints=True)))
    job.sources[1].emit_next()
    job.sources[1].emit_next()              # both rules queued at b
    job.coordinator.trigger(1)              # the barriers overtake them: in-flight data
    (task,) = job.tasks
    while task.is_runnable() and job.coordinator.completed_count == 0:
        task.run_step()
    (snapshot,) = job.coordinator.latest().task_snapshots
    assert [e for _, e in snapshot.channel_state] == rules

    job.failover(0, "rescale", 2, operator="b")
    assert job.sources[1].offset == 2        # the rules source does not send them again
    restored = {t.vertex_subtask: t for t in job.tasks}
    assert sorted(restored) == [0, 1]
    channel = restored[0].channel_index[("rules", 0)]
    assert list(restored[0].inputs[channel]) == rules
    assert all(not q for q in restored[1].inputs)


# -- impl/tasks/watermarks.py (session 15, at 763b6f7) ------------------------------------------------------------------

def _processor(manager=None, **options):
    """A watermark processor over ``manager`` (default: Flink's NoOpInternalTimeServiceManager, whose
    advance completes unless asked to stop, firing nothing) and a mailbox; (processor, emitted, mailbox)."""
    from types import SimpleNamespace

    from streamproof.impl.tasks.mailbox import MailboxExecutor, TaskMailbox
    from streamproof.impl.tasks.watermarks import MailboxWatermarkProcessor

    class NoOp:
        def try_advance_watermark(self, watermark, should_stop):
            return not should_stop()

        def get_reached_watermark(self):
            return MIN_WATERMARK

    operator = manager if manager is not None else SimpleNamespace(time_service_manager=NoOp(), timers_fired=0)
    emitted, mailbox = [], TaskMailbox()
    return MailboxWatermarkProcessor(operator, MailboxExecutor(mailbox, 0), emitted.append, **options), emitted, mailbox


def _run_mail(mailbox):
    from streamproof.impl.tasks.mailbox import MIN_PRIORITY
    while mailbox.has_mail():
        mailbox.take(MIN_PRIORITY).run()


def test_a_finished_channel_no_longer_holds_back_the_combined_watermark():
    """The valve's minimum is over the channels not yet finished. Kills impl/tasks/watermarks.py:28
    (``channel_finished``) ``finished[channel] = True`` -> ``False`` / ``None``."""
    from streamproof.impl.tasks.watermarks import StatusWatermarkValve
    valve = StatusWatermarkValve(2)
    assert valve.input_watermark(0, 5) is None  # channel 1 is still at MIN_WATERMARK
    assert valve.input_watermark(1, 10) == 5
    assert valve.channel_finished(0) == 10
    assert valve.channel_finished(1) is None  # nothing left to combine


def test_as_flink_ships_it_a_completed_advance_emits_the_max_input_watermark_even_if_emitted_before():
    """Flink 2.3's MailboxWatermarkProcessor emits ``maxInputWatermark`` after every completed
    advance; only the ``only_increasing`` correction (off by default) drops a repeat. Kills
    impl/tasks/watermarks.py:54 (``__init__``) default ``only_increasing=False`` -> ``True``."""
    processor, emitted, _ = _processor()
    processor.emit_watermark_inside_mailbox(5)
    processor.emit_watermark_inside_mailbox(5)
    assert emitted == [5, 5]
    corrected, emitted, _ = _processor(only_increasing=True)
    corrected.emit_watermark_inside_mailbox(5)
    corrected.emit_watermark_inside_mailbox(5)
    assert emitted == [5]


def test_the_scheduled_continuation_count_is_one_while_a_continuation_waits_and_zero_after():
    """The count the simulator reads to skip its interrupted-firing scan (issue 30) is exactly the
    processors with a continuation scheduled, cycle after cycle. Kills impl/tasks/watermarks.py:77
    (``progress_watermark_scheduled`` setter) ``+= 1 if value else -1`` -> ``2 if``, ``else +1``,
    ``else -2``."""
    processor, emitted, mailbox = _processor()
    processor.scheduled_count = [0]
    for watermark in (5, 7):
        processor.should_interrupt = lambda: True
        processor.emit_watermark_inside_mailbox(watermark)
        processor.emit_watermark_inside_mailbox(watermark + 1)  # picked up by the one continuation
        assert processor.scheduled_count == [1] and mailbox.size() == 1
        processor.should_interrupt = lambda: False
        _run_mail(mailbox)
        assert processor.scheduled_count == [0]
    assert emitted == [6, 8]


def test_interruptions_and_stalls_are_counted_once_per_interrupted_advance():
    """``interruptions`` counts advances that scheduled a continuation, ``stalled`` those of them that
    fired no timer (FLIP-443 forbids them; job.end-of-input reads it), both from 0. Kills
    impl/tasks/watermarks.py:62 ``interruptions = 0`` -> ``1``, :101 ``+= 1`` -> ``+= 2``, :102
    ``stalled +=`` -> ``-=``."""
    processor, emitted, mailbox = _processor()
    assert (processor.interruptions, processor.stalled) == (0, 0)
    processor.should_interrupt = lambda: True
    processor.emit_watermark_inside_mailbox(5)
    processor.emit_watermark_inside_mailbox(6)  # a continuation is already scheduled: not another interruption
    assert (processor.interruptions, processor.stalled) == (1, 1)
    _take_one(mailbox)  # the continuation, interrupted again
    assert (processor.interruptions, processor.stalled) == (2, 2)
    processor.should_interrupt = lambda: False
    _run_mail(mailbox)
    assert emitted == [6] and (processor.interruptions, processor.stalled) == (2, 2)


def _take_one(mailbox):
    from streamproof.impl.tasks.mailbox import MIN_PRIORITY
    mailbox.take(MIN_PRIORITY).run()


def test_timers_fired_before_end_of_input_count_from_zero_and_leave_out_max_watermark():
    """Certify's coverage case "timer fired before end of input" reads
    ``event_timers_fired_before_end``: the timers watermarks below MAX_WATERMARK fired, from 0.
    Kills impl/tasks/watermarks.py:65 ``event_timers_fired_before_end = 0`` -> ``1``; in
    ``count_fired`` :110 ``timers_fired - fired_before`` -> ``+``, :111 ``event_timers_fired +=`` ->
    ``=`` / ``-=``, :112 ``watermark < MAX_WATERMARK`` -> ``<=``, :113 ``+=`` -> ``=`` / ``-=``."""

    class Operator:
        def __init__(self):
            self.timers_fired = 0
            self.key_context = KeyContext(MP)
            self.time_service_manager = InternalTimeServiceManager(
                self.key_context, KeyGroupRange(0, MP - 1), ManualProcessingTimeService(start=0), firing_budget=100)
            service = self.time_service_manager.get_internal_timer_service("timers", self)
            for ts in (10, 20, 30):
                self.key_context.set_current_key("a")
                service.register_event_time_timer("w", ts)

        def on_event_time(self, timer):
            self.timers_fired += 1

    operator = Operator()
    processor, emitted, _ = _processor(operator)
    assert processor.event_timers_fired_before_end == 0
    processor.emit_watermark_inside_mailbox(15)
    assert (processor.event_timers_fired, processor.event_timers_fired_before_end) == (1, 1)
    processor.emit_watermark_inside_mailbox(25)
    assert (processor.event_timers_fired, processor.event_timers_fired_before_end) == (2, 2)
    processor.emit_watermark_inside_mailbox(MAX_WATERMARK)
    assert (processor.event_timers_fired, processor.event_timers_fired_before_end) == (3, 2)
    assert emitted == [15, 25, MAX_WATERMARK]


def test_the_intermediate_correction_emits_only_progress_beyond_the_last_watermark():
    """FLINK-40101's correction alone (``intermediate``, without ``only_increasing``) emits the
    watermark the timers reached at a continuation only when it is above the last one emitted.
    Kills impl/tasks/watermarks.py:121 (``_continue``) ``reached > self.last_emitted`` -> ``>=``
    (the NoOp manager reaches nothing: MIN_WATERMARK, the last emitted at the start)."""
    processor, emitted, mailbox = _processor(intermediate=True)
    processor.should_interrupt = lambda: True
    processor.emit_watermark_inside_mailbox(5)
    processor.should_interrupt = lambda: False
    _run_mail(mailbox)
    assert emitted == [5]


# -- impl/coordination/flink_protocol.py (session 15, at 763b6f7) -------------------------------------------------------

def _gateway():
    from types import SimpleNamespace

    from streamproof.impl.coordination.flink_protocol import SubtaskGatewayImpl
    from streamproof.impl.coordination.runtime import IncompleteFuturesTracker, MainThreadExecutor
    return SubtaskGatewayImpl(SimpleNamespace(subtask_index=0), MainThreadExecutor(), IncompleteFuturesTracker())


def _buffer(gateway, sent: list, event: str):
    from streamproof.impl.coordination.runtime import CompletableFuture

    def send():
        sent.append(event)
        return CompletableFuture.completed()
    gateway._send_event_internal(send, CompletableFuture(), event)


def test_a_later_checkpoints_events_opened_first_are_released_after_the_earlier_ones():
    """Flink's ``openGatewayAndUnmarkCheckpoint`` for a checkpoint that is not the first one closed
    appends its events to the earlier checkpoint's (``floorEntry(checkpointId - 1)``): they go out
    after those when that one opens. Kills impl/coordination/flink_protocol.py:117 ``earlier =
    max(...)`` -> ``None``."""
    gateway, sent = _gateway(), []
    for checkpoint in (1, 2):
        gateway.mark_for_checkpoint(checkpoint)
    assert gateway.try_close_gateway(1)
    _buffer(gateway, sent, "e1")
    assert gateway.try_close_gateway(2)
    _buffer(gateway, sent, "e2")
    gateway.open_gateway_and_unmark_checkpoint(2)
    assert sent == [] and gateway.buffered_events() == 2 and not gateway.is_closed_for(2)
    gateway.open_gateway_and_unmark_checkpoint(1)
    assert sent == ["e1", "e2"] and gateway.buffered_events() == 0


def test_a_replaced_gateways_buffered_events_still_count_and_a_missing_failure_handler_ignores_failures():
    """What a subtask reset replaced still holds its buffered events (``buffered_events`` counts
    them: the valve machine reads it), and a holder built without a global failure handler ignores
    a coordinator that throws while checkpointing. Kills impl/coordination/flink_protocol.py:284
    ``old = self.subtask_gateway_map.get(subtask)`` -> ``None`` and :154 ``global_failure_handler or
    (lambda e: None)`` -> ``and`` / ``None``."""
    from types import SimpleNamespace

    from streamproof.impl.coordination.flink_protocol import OperatorCoordinatorHolder
    from streamproof.impl.coordination.runtime import CompletableFuture, MainThreadExecutor

    class Accesses:
        def get_access_for_subtask(self, subtask):
            return SimpleNamespace(subtask_index=subtask, attempt_number=0, is_still_running=lambda: True,
                                   has_switched_to_running=CompletableFuture)

    class Throwing:
        def checkpoint_coordinator(self, checkpoint_id, result):
            raise RuntimeError("coordinator failed")

        def execution_attempt_ready(self, *args):
            pass

        def subtask_reset(self, subtask, checkpoint_id):
            pass

    holder = OperatorCoordinatorHolder(Throwing(), Accesses(), 1, MainThreadExecutor())
    holder.lazy_initialize()
    old, sent = holder.subtask_gateway_map[0], []
    old.mark_for_checkpoint(1)
    old.try_close_gateway(1)
    _buffer(old, sent, "e1")
    holder.subtask_reset(0, 1)
    assert holder.subtask_gateway_map[0] is not old and holder.buffered_events() == 1
    result = CompletableFuture()
    holder.checkpoint_coordinator(2, result)  # no handler: nothing escapes
    assert result.is_completed_exceptionally()


# -- impl/timers/processing_time_service.py (session 15, at 6a5feea) ----------------------------------------------------

def test_cancelling_a_physical_timer_that_already_fired_changes_nothing():
    """As a ScheduledFuture that ran: cancelling it afterwards neither counts it again nor tells the
    cancel listeners (what traces record). Kills impl/timers/processing_time_service.py:102
    (``advance_to``) ``timer.pending = False`` -> ``True`` (``None`` is equivalent: falsy too)."""
    clock, fired, cancelled = ManualProcessingTimeService(start=0), [], []
    clock.on_cancel.append(cancelled.append)
    handle = clock.register_timer(5, fired.append)
    clock.register_timer(9, fired.append)
    clock.advance_to(5)
    assert fired == [5] and clock.num_pending_timers() == 1
    handle.cancel()
    assert cancelled == [] and clock.num_pending_timers() == 1
    clock.advance_to(9)
    assert fired == [5, 9] and clock.num_pending_timers() == 0


def test_a_scheduled_timer_built_by_its_constructor_is_pending_at_its_time():
    """The handle's constructor (the service itself builds handles without it, issue 30) gives the
    same handle. Kills impl/timers/processing_time_service.py:29 ``self.timestamp = timestamp`` ->
    ``None`` and :32 ``self.pending = True`` -> ``None``."""
    from streamproof.impl.timers.processing_time_service import ScheduledTimer
    clock = ManualProcessingTimeService(start=0)
    built, registered = ScheduledTimer(7, print, clock), clock.register_timer(7, print)
    assert [(t.timestamp, t.callback, t.pending) for t in (built, registered)] == [(7, print, True)] * 2


# -- impl/coordination/legacy_protocol.py (session 15, at ba8bc1b) ------------------------------------------------------

def test_the_legacy_holder_forwards_completion_and_abort_and_reports_its_valve_per_checkpoint():
    """The 1.14/1.15 holder tells its coordinator of complete and aborted checkpoints (a split
    enumerator commits or forgets on them), and its one valve is closed for the checkpoint it was
    shut for, for no other, and open (False, not another falsy value) once reopened. Kills
    impl/coordination/legacy_protocol.py:158 and :161 (``notify_checkpoint_complete`` / ``_aborted``
    -> ``lambda: None``), :175 (``gateways_closed_for``) ``==`` -> ``!=`` and :65 ``shut = False`` ->
    ``None``."""
    from types import SimpleNamespace

    from streamproof.impl.coordination.legacy_protocol import LegacyOperatorCoordinatorHolder
    from streamproof.impl.coordination.runtime import CompletableFuture, MainThreadExecutor

    class Accesses:
        def get_access_for_subtask(self, subtask):
            return SimpleNamespace(subtask_index=subtask, attempt_number=0, is_still_running=lambda: True,
                                   has_switched_to_running=CompletableFuture)

    class Recording:
        def __init__(self):
            self.seen = []

        def checkpoint_coordinator(self, checkpoint_id, result):
            result.complete(b"state")

        def notify_checkpoint_complete(self, checkpoint_id):
            self.seen.append(("complete", checkpoint_id))

        def notify_checkpoint_aborted(self, checkpoint_id):
            self.seen.append(("aborted", checkpoint_id))

        def execution_attempt_ready(self, *args):
            pass

    coordinator = Recording()
    holder = LegacyOperatorCoordinatorHolder(coordinator, Accesses(), 2, MainThreadExecutor())
    holder.lazy_initialize()
    result = CompletableFuture()
    holder.checkpoint_coordinator(1, result)
    assert holder.gateways_closed_for(1) == [True, True] and holder.gateways_closed_for(2) == [False, False]
    holder.after_source_barrier_injection(1)
    assert holder.gateways_closed_for(1) == [False, False]
    holder.notify_checkpoint_complete(1)
    holder.notify_checkpoint_aborted(2)
    assert coordinator.seen == [("complete", 1), ("aborted", 2)]


# -- impl/state/keyed_state_backend.py (session 15, at be3758d) ---------------------------------------------------------

def test_an_empty_value_state_reads_none_and_map_state_contains_only_its_keys():
    """PyFlink's ``ValueState.value()`` is None until updated (no default given), and
    ``MapState.contains`` is true exactly for the keys put. Kills impl/state/keyed_state_backend.py:23
    (``ValueStateDescriptor.default = None`` -> ``""``) and :175 (``MapState.contains``) ``in`` ->
    ``not in``."""
    from streamproof.impl.state.keyed_state_backend import (
        KeyedStateBackend, MapState, MapStateDescriptor, ValueState, ValueStateDescriptor)
    context = KeyContext(MP)
    backend = KeyedStateBackend(context, KeyGroupRange(0, MP - 1))
    context.set_current_key("a")
    value, mapping = ValueState(backend, ValueStateDescriptor("v")), MapState(backend, MapStateDescriptor("m"))
    assert value.value() is None
    mapping.put("x", 1)
    assert mapping.contains("x") and not mapping.contains("y")

"""Deferred timer files (impl/timers/deferred_snapshot.py): the bytes read later are the bytes
``snapshot_at_once`` writes at the moment of the snapshot, whatever happens to the timers after."""

from hypothesis import given, settings, strategies as st

from streamproof.impl.operators.keyed_process_operator import OperatorSnapshot
from streamproof.impl.state.key_groups import KeyGroupRange
from streamproof.impl.timers.deferred_snapshot import snapshot_deferred
from streamproof.impl.timers.internal_time_service_manager import InternalTimeServiceManager
from streamproof.impl.timers.internal_timer_service import KeyContext
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService
from streamproof.impl.timers.snapshots import restore_from_snapshots, snapshot_at_once, start_snapshot
from streamproof.impl.timers.termination import TimerTerminationAction

from tests.recorders import Fired

MP = 16
ACTIONS = [None, TimerTerminationAction.CANCEL, TimerTerminationAction.TRIGGER, TimerTerminationAction.WAIT]
operations = st.lists(st.tuples(st.sampled_from(["event", "processing", "delete-event", "delete-processing"]),
                                st.sampled_from(["a", "b", "c", "d", "e"]), st.integers(0, 6),
                                st.sampled_from(["s1", "s2"]), st.sampled_from(ACTIONS)), max_size=30)


def build(kgr: KeyGroupRange, tie_order: str):
    context = KeyContext(MP)
    manager = InternalTimeServiceManager(context, kgr, ManualProcessingTimeService(start=0))
    if tie_order != "insertion":
        manager.set_tie_order(tie_order)
    return manager, context


def apply(manager, context, ops) -> None:
    for kind, key, ts, name, action in ops:
        context.set_current_key(key)
        if not manager.key_group_range.contains(context.current_key_group_index):
            continue
        service = manager.services.get(name) or manager.get_internal_timer_service(name, Fired())
        if kind == "event":
            service.register_event_time_timer("w", ts)
        elif kind == "processing":
            service.register_processing_time_timer("w", ts, action)
        else:
            getattr(service, f"delete_{kind[7:]}_time_timer")("w", ts)


@settings(max_examples=150, deadline=None)
@given(before=operations, after=operations, fmt=st.sampled_from([1, 2]),
       tie_order=st.sampled_from(["insertion", "reversed", "key-group"]), half=st.booleans())
def test_deferred_file_is_the_file_at_the_snapshot(before, after, fmt, tie_order, half):
    kgr = KeyGroupRange(0, MP // 2 - 1) if half else KeyGroupRange(0, MP - 1)
    deferred_side, context = build(kgr, tie_order)
    eager_side, eager_context = build(kgr, tie_order)
    apply(deferred_side, context, before)
    apply(eager_side, eager_context, before)
    deferred = snapshot_deferred(deferred_side, fmt)
    expected = snapshot_at_once(eager_side, fmt)
    apply(deferred_side, context, after)  # changes after the snapshot must not reach it
    assert deferred.read() == expected
    assert deferred.read() is deferred.read()  # written once
    # the next snapshot of each side has the same version and contents again
    assert snapshot_deferred(deferred_side, fmt).read() == snapshot_at_once(_replayed(kgr, tie_order, before + after), fmt)


def _replayed(kgr, tie_order, ops):
    manager, context = build(kgr, tie_order)
    apply(manager, context, ops)
    snapshot_at_once(manager)  # the version the deferred side used
    return manager


def test_deferred_snapshot_of_restored_timers_and_a_running_snapshot():
    source, context = build(KeyGroupRange(0, MP - 1), "insertion")
    apply(source, context, [("event", "a", 3, "s1", None), ("processing", "b", 4, "s2", TimerTerminationAction.WAIT)])
    data = snapshot_at_once(source)
    target, _ = build(KeyGroupRange(0, MP - 1), "insertion")
    restore_from_snapshots(target, [data])  # services not created yet: held as restored
    eager, _ = build(KeyGroupRange(0, MP - 1), "insertion")
    restore_from_snapshots(eager, [data])
    assert snapshot_deferred(target).read() == snapshot_at_once(eager)
    running = start_snapshot(target)  # another snapshot runs: written at once, as start_snapshot
    eager_running = start_snapshot(eager)
    assert snapshot_deferred(target).read() == start_snapshot(eager).finish()
    assert running.finish() == eager_running.finish()


def test_operator_snapshot_reads_copies_and_compares_its_bytes():
    manager, context = build(KeyGroupRange(0, MP - 1), "insertion")
    apply(manager, context, [("event", "a", 3, "s1", None)])
    snapshot = OperatorSnapshot({1: {"v": 2}}, snapshot_deferred(manager))
    import copy
    import pickle
    assert copy.deepcopy(snapshot) == snapshot
    assert pickle.loads(pickle.dumps(snapshot)).timers == snapshot.timers
    assert snapshot != OperatorSnapshot({1: {"v": 2}}, b"")
    assert isinstance(snapshot.timers, bytes)


def test_an_action_changed_after_the_snapshot_does_not_reach_it():
    deferred_side, context = build(KeyGroupRange(0, MP - 1), "insertion")
    eager_side, eager_context = build(KeyGroupRange(0, MP - 1), "insertion")
    trigger = [("processing", "a", 4, "s1", TimerTerminationAction.TRIGGER)]
    apply(deferred_side, context, trigger)
    apply(eager_side, eager_context, trigger)
    deferred = snapshot_deferred(deferred_side)
    apply(deferred_side, context, [("processing", "a", 4, "s1", TimerTerminationAction.WAIT)])  # the last action wins
    assert deferred.read() == snapshot_at_once(eager_side)


def test_operator_snapshot_timers_can_be_replaced():
    snapshot = OperatorSnapshot({}, b"old")
    snapshot.timers = b"new"  # what the bug zoo's snapshot-before-fired-effects does
    assert snapshot.timers == b"new"

"""Copy-on-write timer snapshots (impl/timers/snapshots.py): point-in-time contents, the seed's
counterexample, deferred deletion and compaction, nothing left behind, background threads,
restore and rescaling."""

import random
import threading

import pytest

from streamproof.impl.state.key_groups import (
    Int32, KeyGroupRange, assign_to_key_group, compute_key_group_range_for_operator_index,
    compute_operator_index_for_key_group,
)
from streamproof.impl.timers.snapshot_format import SnapshotFormatError, decode_snapshot
from streamproof.impl.timers.snapshots import BASE_VERSION, restore_from_snapshots, start_snapshot, versions_of
from streamproof.impl.timers.termination import TimerTerminationAction
from streamproof.impl.timers.internal_timer_service import InternalTimer, InternalTimersSnapshot, KeyContext
from streamproof.impl.timers.internal_time_service_manager import InternalTimeServiceManager
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService

from tests.recorders import Fired

MP = 128


def manager(kgr=KeyGroupRange(0, MP - 1), max_parallelism=MP):
    context = KeyContext(max_parallelism)
    m = InternalTimeServiceManager(context, kgr, ManualProcessingTimeService())
    return m, context


def service(m, name="timers"):
    return m.services.get(name) or m.get_internal_timer_service(name, Fired())


def live(m):
    """Every pending timer as (service, domain, timer)."""
    out = set()
    for name, s in m.services.items():
        out |= {(name, "event", t) for t in s.event_time_timers_queue}
        out |= {(name, "processing", t) for t in s.processing_time_timers_queue}
    return out


def read(data):
    return {(name, domain, timer) for name, domain, timer, _ in decode_snapshot(data).entries()}


def register(context, s, key, ts, domain="event", namespace="w"):
    context.set_current_key(key)
    getattr(s, f"register_{domain}_time_timer")(namespace, ts)


def delete(context, s, key, ts, domain="event", namespace="w"):
    context.set_current_key(key)
    getattr(s, f"delete_{domain}_time_timer")(namespace, ts)


def no_leftovers(m):
    return versions_of(m).leftovers() == {"running": 0, "routed_queues": 0, "history_entries": 0}


# -- the seed's counterexample and its neighbours ------------------------------------------------
def test_delete_and_register_again_is_seen_by_each_snapshot_as_at_its_version():
    """The case one create/delete version pair per timer cannot answer (docs/snapshots.md)."""
    m, context = manager()
    s = service(m)
    register(context, s, "a", 10)
    s1 = m.start_snapshot()                 # version 1: a@10 live
    delete(context, s, "a", 10)
    s2 = m.start_snapshot()                 # version 2: a@10 deleted
    register(context, s, "a", 10)
    s3 = m.start_snapshot()                 # version 3: a@10 live again
    delete(context, s, "a", 10)
    timer = ("timers", "event", InternalTimer(10, "a", "w"))
    assert read(s2.finish()) == set()
    assert read(s3.finish()) == {timer}
    assert read(s1.finish()) == {timer}
    assert live(m) == set() and no_leftovers(m)


def test_snapshot_never_sees_what_happens_after_it_starts():
    m, context = manager()
    s = service(m)
    for key, ts in [("a", 1), ("b", 2), ("c", 3)]:
        register(context, s, key, ts)
        register(context, s, key, ts + 100, "processing")
    before = live(m)
    snapshot = m.start_snapshot()
    register(context, s, "d", 4)              # created after: invisible
    delete(context, s, "b", 2)                # deleted after: still written
    m.advance_watermark(1)                    # fired after: still written
    register(context, s, "a", 1)              # fired, then registered again: written once
    s.processing_time_timers_queue.poll()     # the processing head leaves too
    other = service(m, "late")                # a service made after the start: not in it
    register(context, other, "e", 5)
    assert read(snapshot.finish()) == before
    assert no_leftovers(m)


def test_sync_part_is_constant_and_never_reads_a_timer():
    """The synchronous part touches no timer: queues that refuse to be read do not matter."""
    m, context = manager()
    s = service(m)
    for i in range(2000):
        register(context, s, f"k{i}", i)
    queue_type = type(s.event_time_timers_queue)

    class Untouchable(queue_type):
        def __iter__(self):
            raise AssertionError("the synchronous part iterated the timers")

        def get_subset_for_key_group(self, key_group):
            raise AssertionError("the synchronous part read a key group")

    for q in (s.event_time_timers_queue, s.processing_time_timers_queue):
        q.__class__ = Untouchable
    snapshot = m.start_snapshot()
    for q in (s.event_time_timers_queue, s.processing_time_timers_queue):
        q.__class__ = queue_type
    assert len(read(snapshot.finish())) == 2000


def test_deferred_deletion_and_compaction_keep_exactly_what_running_snapshots_need():
    m, context = manager()
    s = service(m)
    register(context, s, "a", 1)
    register(context, s, "b", 2)
    versions = versions_of(m)
    s1 = m.start_snapshot()
    delete(context, s, "a", 1)                              # tombstone: s1 needs it
    layer = s.event_time_timers_queue.mutation_router
    assert versions.leftovers()["history_entries"] == 1
    s2 = m.start_snapshot()
    register(context, s, "a", 1)                            # s2 saw it absent, s1 present
    assert versions.leftovers()["history_entries"] == 1
    s1.finish()                                             # only s2's view is left to keep
    (kg_history,) = layer.history.values()
    (history,) = kg_history.values()
    assert history == ((BASE_VERSION, None), (s2.version, TimerTerminationAction.CANCEL))
    register(context, s, "c", 3)
    delete(context, s, "c", 3)                              # registered and deleted in one version: nothing
    assert versions.leftovers()["history_entries"] == 1
    assert read(s2.finish()) == {("timers", "event", InternalTimer(2, "b", "w"))}
    assert no_leftovers(m)
    assert "add" not in vars(s.event_time_timers_queue)    # the hot path is the plain one again


def test_when_no_snapshot_runs_nothing_is_versioned():
    m, context = manager()
    s = service(m)
    register(context, s, "a", 1)
    assert s.event_time_timers_queue.mutation_router is None
    snapshot = m.start_snapshot()
    assert s.event_time_timers_queue.mutation_router is not None
    snapshot.cancel()
    snapshot.cancel()  # idempotent
    assert s.event_time_timers_queue.mutation_router is None and no_leftovers(m)
    delete(context, s, "a", 1)
    assert no_leftovers(m)


def test_step_by_step_writing_interleaved_with_changes():
    m, context = manager(KeyGroupRange(0, 7), 8)
    s = service(m)
    keys = ["a", "b", "c", "d", "e", "f", "g", "h", 1, 2, Int32(3)]
    for i, key in enumerate(keys):
        register(context, s, key, i)
    before = live(m)
    snapshot = m.start_snapshot()
    rng = random.Random(1)
    steps = 0
    while snapshot.run_async_step():
        steps += 1
        key = rng.choice(keys)
        if rng.random() < 0.5:
            delete(context, s, key, keys.index(key))
        else:
            register(context, s, key, rng.randrange(20), rng.choice(["event", "processing"]))
    assert steps == 8 and snapshot.run_async_step() is False
    assert read(snapshot.finish()) == before
    assert snapshot.finish() == snapshot.finish()  # idempotent
    assert no_leftovers(m)


def test_write_key_group_gives_one_section_and_checks_the_range():
    m, context = manager(KeyGroupRange(0, 3), 4)
    s = service(m)
    register(context, s, "a", 1)
    snapshot = m.start_snapshot()
    sections = [snapshot.write_key_group(kg) for kg in range(4)]
    assert sum(1 for section in sections if section) == 1
    with pytest.raises(ValueError, match="not in"):
        snapshot.write_key_group(4)
    data = snapshot.finish()
    assert [section for section in sections if section][0] in data


def test_termination_actions_are_written_per_processing_timer_as_they_were():
    m, context = manager()
    s = service(m)
    actions = {}
    s.termination_action_of = lambda timer: actions.get(timer, TimerTerminationAction.CANCEL)
    context.set_current_key("a")
    timer = InternalTimer(5, "a", "w")
    actions[timer] = TimerTerminationAction.TRIGGER
    s.register_processing_time_timer("w", 5)
    snapshot = m.start_snapshot()
    s.delete_processing_time_timer("w", 5)
    actions[timer] = TimerTerminationAction.WAIT  # registered again with another action
    s.register_processing_time_timer("w", 5)
    later = m.start_snapshot(format_version=2)
    old = m.start_snapshot(format_version=1)
    assert list(decode_snapshot(snapshot.finish()).entries()) == [("timers", "processing", timer,
                                                                  TimerTerminationAction.TRIGGER)]
    assert list(decode_snapshot(later.finish()).entries())[0][3] == TimerTerminationAction.WAIT
    assert list(decode_snapshot(old.finish()).entries())[0][3] == TimerTerminationAction.CANCEL  # format 1


def test_restored_but_not_yet_created_services_are_in_the_snapshot():
    m, context = manager()
    m.restore_state_for_key_group(
        assign_to_key_group("x", MP), {"lazy": InternalTimersSnapshot((InternalTimer(3, "x", "w"),), ())})
    snapshot = m.start_snapshot()
    service(m, "lazy")  # created while the snapshot runs
    assert read(snapshot.finish()) == {("lazy", "event", InternalTimer(3, "x", "w"))}


def test_cancel_and_errors():
    m, _ = manager()
    snapshot = m.start_snapshot()
    snapshot.cancel()
    with pytest.raises(RuntimeError, match="cancelled"):
        snapshot.finish()
    with pytest.raises(ValueError, match="format"):
        m.start_snapshot(format_version=3)
    assert no_leftovers(m)


# -- real threads ----------------------------------------------------------------------------------
@pytest.mark.parametrize("concurrent", [1, 3])
def test_background_threads_write_the_timers_of_their_start(concurrent):
    m, context = manager()
    s = service(m)
    rng = random.Random(concurrent)
    keys = [f"k{i}" for i in range(300)]
    for i in range(6000):
        register(context, s, rng.choice(keys), rng.randrange(1000), rng.choice(["event", "processing"]))
    expected, futures = [], []
    for _ in range(concurrent):
        expected.append(live(m))
        snapshot = m.start_snapshot()
        futures.append(snapshot.run_in_background())
        for _ in range(300):  # the task thread goes on while the snapshots are written
            key, ts = rng.choice(keys), rng.randrange(1000)
            action = rng.random()
            if action < 0.4:
                register(context, s, key, ts, rng.choice(["event", "processing"]))
            elif action < 0.8:
                delete(context, s, key, ts, rng.choice(["event", "processing"]))
            else:
                m.advance_watermark(rng.randrange(200))
    for want, future in zip(expected, futures):
        assert read(future.result(timeout=60)) == want
    assert no_leftovers(m)


def test_lock_lets_readers_share_and_excludes_the_writer():
    from streamproof.impl.timers.snapshots import ReadWriteLock
    lock = ReadWriteLock()
    lock.acquire_read()
    lock.acquire_read()  # a second reader does not wait
    assert not lock.write().acquire(blocking=False)
    lock.release_read()
    assert not lock.write().acquire(blocking=False)
    lock.release_read()
    assert lock.write().acquire(blocking=False)
    got = []
    reader = threading.Thread(target=lambda: (lock.acquire_read(), got.append(1), lock.release_read()))
    reader.start()
    reader.join(0.05)
    assert got == []  # the reader waits for the writer
    lock.write().release()
    reader.join(5)
    assert got == [1]


# -- restore and rescaling ------------------------------------------------------------------------
def populated(parallelism, max_parallelism=16, timers=200, seed=0):
    rng = random.Random(seed)
    managers = []
    for i in range(parallelism):
        kgr = compute_key_group_range_for_operator_index(max_parallelism, parallelism, i)
        managers.append(manager(kgr, max_parallelism))
    for _ in range(timers):
        key = rng.choice(["a", "b", "c", 1, 2, 3, Int32(4), "日本", "x", "y"])
        owner = compute_operator_index_for_key_group(max_parallelism, parallelism,
                                                     assign_to_key_group(key, max_parallelism))
        m, context = managers[owner]
        register(context, service(m, rng.choice(["timers", "other"])), key, rng.randrange(50),
                 rng.choice(["event", "processing"]), rng.choice(["w", "n"]))
    return managers


@pytest.mark.parametrize("old,new", [(1, 1), (1, 3), (3, 1), (2, 5), (4, 4), (3, 2)])
def test_rescale_n_to_m_loses_and_duplicates_nothing(old, new):
    managers = populated(old)
    everything = set().union(*(live(m) for m, _ in managers))
    files = [m.start_snapshot().finish() for m, _ in managers]
    restored = []
    for i in range(new):
        m, _ = manager(compute_key_group_range_for_operator_index(16, new, i), 16)
        result = restore_from_snapshots(m, files)
        for name in result.service_names:
            service(m, name)
        restored.append(live(m))
    assert sum(len(part) for part in restored) == len(everything)
    assert set().union(*restored) == everything


def test_restored_timers_fire_and_schedule_their_physical_timer():
    (m, context), = populated(1, timers=60)
    before = live(m)
    data = m.start_snapshot().finish()
    m2, _ = manager(KeyGroupRange(0, 15), 16)
    restore_from_snapshots(m2, [data])
    targets = {name: Fired() for name in ("timers", "other")}
    for name, target in targets.items():
        m2.get_internal_timer_service(name, target)
    m2.advance_watermark(2**63 - 1)
    m2.processing_time_service.advance_to(2**63 - 1)
    fired = {(name, domain, t) for name, target in targets.items() for domain, t in target.timers}
    assert fired == before and live(m2) == set()


def test_restore_refuses_what_would_lose_or_duplicate_timers():
    managers = populated(2)
    files = [m.start_snapshot().finish() for m, _ in managers]
    m, _ = manager(KeyGroupRange(0, 15), 16)
    with pytest.raises(ValueError, match="in no snapshot"):
        restore_from_snapshots(m, files[:1])
    with pytest.raises(ValueError, match="is in snapshots 0 and 1"):
        restore_from_snapshots(m, [files[0], files[0]])
    other, _ = manager(KeyGroupRange(0, 31), 32)
    with pytest.raises(ValueError, match="max parallelism 16"):
        restore_from_snapshots(other, files)
    corrupted = bytearray(files[1])
    corrupted[-30] ^= 0x10
    with pytest.raises(SnapshotFormatError):
        restore_from_snapshots(m, [files[0], bytes(corrupted)])
    assert live(m) == set() and m.restored_service_names() == []  # nothing changed
    partial = restore_from_snapshots(m, files[:1], require_full_coverage=False)
    assert partial.key_groups and all(kg <= 7 for kg in partial.key_groups)


def test_restore_returns_non_cancel_actions():
    m, context = manager(KeyGroupRange(0, 15), 16)
    s = service(m)
    s.termination_action_of = lambda timer: TimerTerminationAction.WAIT
    register(context, s, "a", 3, "processing")
    register(context, s, "a", 4, "event")
    data = m.start_snapshot().finish()
    m2, _ = manager(KeyGroupRange(0, 15), 16)
    result = restore_from_snapshots(m2, [data])
    assert result.actions == {("timers", InternalTimer(3, "a", "w")): TimerTerminationAction.WAIT}
    assert result.timers == 2 and result.service_names == ["timers"]


def test_start_snapshot_function_and_manager_method_agree():
    m, context = manager()
    s = service(m)
    register(context, s, "a", 1)
    assert read(start_snapshot(m).finish()) == read(m.start_snapshot().finish())


# -- many concurrent snapshots against a brute-force copy ----------------------------------------
from hypothesis import given, strategies as st  # noqa: E402

OPS = st.lists(st.tuples(st.sampled_from(["register", "delete", "fire", "start", "end", "step"]),
                         st.integers(0, 5), st.integers(0, 3), st.sampled_from(["event", "processing"])),
               max_size=120)


@given(ops=OPS)
def test_up_to_six_concurrent_snapshots_each_see_their_start(ops):
    """Compaction with many running versions, ended in any order: each snapshot equals the copy
    taken at its start, and nothing is left once all have ended."""
    m, context = manager(KeyGroupRange(0, 7), 8)
    s = service(m)
    running = []  # (snapshot, copy at its start)
    for op, a, b, domain in ops:
        key, ts = ["a", "b", "c", "d", "e", 1][a], b
        if op == "register":
            register(context, s, key, ts, domain)
        elif op == "delete":
            delete(context, s, key, ts, domain)
        elif op == "fire":
            if domain == "event":
                m.advance_watermark(ts)
            else:
                m.processing_time_service.advance_to(ts)
        elif op == "start" and len(running) < 6:
            running.append((m.start_snapshot(), live(m)))
        elif op == "end" and running:
            snapshot, expected = running.pop(a % len(running))
            assert read(snapshot.finish()) == expected
        elif op == "step" and running:
            running[a % len(running)][0].run_async_step()
    for snapshot, expected in reversed(running):
        assert read(snapshot.finish()) == expected
    assert no_leftovers(m)

"""Unit tests of the implementation's edges: queue set semantics, errors, budget, restore checks."""

import pytest
from hypothesis import given, strategies as st

from streamproof.impl.state.key_groups import KeyGroupRange, assign_to_key_group
from streamproof.impl.timers.heap_priority_queue_set import KeyGroupedPriorityQueueSet, KeyGroupOutOfRangeError
from streamproof.impl.timers.internal_time_service_manager import InternalTimeServiceManager
from streamproof.impl.timers.internal_timer_service import InternalTimersSnapshot, InternalTimer, KeyContext, NoCurrentKeyError, TimerFiringBudgetExceeded
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService


class Recorder:
    def __init__(self):
        self.fired = []
        self.react = None

    def on_event_time(self, timer):
        self.fired.append(("event", timer))
        if self.react:
            self.react(timer)

    def on_processing_time(self, timer):
        self.fired.append(("processing", timer))
        if self.react:
            self.react(timer)


def make(max_parallelism=128, key_groups=(0, 127), budget=1000):
    ctx = KeyContext(max_parallelism)
    clock = ManualProcessingTimeService(budget=budget)
    manager = InternalTimeServiceManager(ctx, KeyGroupRange(*key_groups), clock, firing_budget=budget)
    target = Recorder()
    return ctx, clock, manager, manager.get_internal_timer_service("t", target), target


def kg_of(element):
    return assign_to_key_group(element[1], 128)


@given(st.lists(st.tuples(st.sampled_from(["add", "remove", "poll"]), st.integers(0, 9), st.sampled_from("abc"))))
def test_queue_is_a_priority_set(ops):
    queue = KeyGroupedPriorityQueueSet(KeyGroupRange(0, 127), kg_of)
    reference = set()
    for op, ts, key in ops:
        element = (ts, key, "n")
        if op == "add":
            queue.add(element)
            reference.add(element)
        elif op == "remove":
            assert queue.remove(element) == (element in reference)
            reference.discard(element)
        else:
            polled = queue.poll()
            if reference:
                assert polled in reference and polled[0] == min(e[0] for e in reference)
                reference.discard(polled)
            else:
                assert polled is None
        assert queue.size() == len(reference) == len(set(queue))
        assert set(queue) == reference


def test_queue_add_reports_new_head_only_when_strictly_earlier():
    queue = KeyGroupedPriorityQueueSet(KeyGroupRange(0, 127), kg_of)
    assert queue.add((5, "a", "n"))
    assert not queue.add((5, "b", "n"))  # equal: not a new head
    assert not queue.add((5, "a", "n"))  # present: nothing changes
    assert queue.add((4, "a", "n"))


def test_queue_rejects_foreign_key_groups():
    queue = KeyGroupedPriorityQueueSet(KeyGroupRange(0, 9), kg_of)
    with pytest.raises(KeyGroupOutOfRangeError, match="is not in KeyGroupRange"):
        queue.add((1, "x", "n"), key_group=50)


def test_register_without_key_is_a_clear_error():
    _, _, _, service, _ = make()
    with pytest.raises(NoCurrentKeyError, match="no current key"):
        service.register_event_time_timer("n", 1)


def test_runaway_callback_hits_the_budget():
    ctx, _, _, service, target = make(budget=50)
    ctx.set_current_key("a")
    service.register_event_time_timer("n", 1)
    target.react = lambda timer: service.register_event_time_timer("n", timer.timestamp + 1)
    with pytest.raises(TimerFiringBudgetExceeded, match="fired more than 50 timers"):
        service.advance_watermark(10**6)
    assert len(target.fired) == 50


def test_budget_does_not_trip_on_exactly_budget_timers():
    ctx, _, _, service, target = make(budget=5)
    ctx.set_current_key("a")
    for ts in range(5):
        service.register_event_time_timer("n", ts)
    service.advance_watermark(10)
    assert len(target.fired) == 5


def test_snapshot_is_a_live_view_until_materialized():
    ctx, _, _, service, _ = make()
    ctx.set_current_key("a")
    kg = ctx.get_current_key_group_index()
    service.register_event_time_timer("n", 1)
    view = service.snapshot_timers_for_key_group(kg)
    frozen = view.materialize()
    service.register_event_time_timer("n", 2)
    assert {t.timestamp for t in view.event_time_timers} == {1, 2}  # as Flink's getSubsetForKeyGroup
    assert {t.timestamp for t in frozen.event_time_timers} == {1}


def test_restore_rejects_key_groups_and_timers_outside_the_range():
    ctx, _, _, service, _ = make(key_groups=(0, 9))
    with pytest.raises(KeyGroupOutOfRangeError):
        service.restore_timers_for_key_group(InternalTimersSnapshot(), 10)
    foreign = next(k for k in (f"k{i}" for i in range(1000)) if assign_to_key_group(k, 128) == 3)
    with pytest.raises(ValueError, match="belongs to key group 3"):
        service.restore_timers_for_key_group(InternalTimersSnapshot((InternalTimer(1, foreign, "n"),)), 4)


def test_restore_keeps_only_the_local_key_groups_and_schedules_the_head():
    ctx, clock, manager, service, _ = make()
    keys = [f"k{i}" for i in range(40)]
    for i, key in enumerate(keys):
        ctx.set_current_key(key)
        service.register_processing_time_timer("n", 100 + i)
    snapshot = {kg: {name: s.materialize() for name, s in per.items()} for kg, per in manager.snapshot_state().items()}
    halves = []
    for key_groups in ((0, 63), (64, 127)):
        ctx2 = KeyContext(128)
        clock2 = ManualProcessingTimeService()
        manager2 = InternalTimeServiceManager(ctx2, KeyGroupRange(*key_groups), clock2)
        manager2.restore_state(snapshot)
        restored = manager2.get_internal_timer_service("t", Recorder())
        halves.append({t.key for t in restored.processing_time_timers_queue})
        assert clock2.num_pending_timers() == (1 if halves[-1] else 0)
    assert halves[0] | halves[1] == set(keys) and not halves[0] & halves[1]


def test_manual_clock_fires_physical_timers_in_time_order():
    clock = ManualProcessingTimeService()
    order = []
    clock.register_timer(5, lambda t: order.append(("b", t)))
    clock.register_timer(3, lambda t: order.append(("a", t)))
    cancelled = clock.register_timer(4, lambda t: order.append(("x", t)))
    cancelled.cancel()
    clock.advance_to(10)
    assert order == [("a", 3), ("b", 5)] and clock.num_pending_timers() == 0
    assert clock.get_current_processing_time() == 10

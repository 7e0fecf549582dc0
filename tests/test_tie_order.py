"""The order of equal-timestamp timers, a freedom Flink leaves open (docs/decisions.md, "Order of
equal-timestamp timers"): ``JobSpec.timer_tie_order`` / ``InternalTimeServiceManager.set_tie_order``
chooses "insertion" (the default, unchanged), "reversed" or "key-group"."""

from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

from streamproof.impl.graph.job import JobSpec
from streamproof.impl.graph.job_runtime import GraphJob
from streamproof.impl.state.key_groups import KeyGroupRange, assign_to_key_group
from streamproof.impl.operators.keyed_process_operator import StreamRecord
from streamproof.impl.timers.heap_priority_queue_set import KeyGroupedPriorityQueueSet
from streamproof.impl.graph.sim import Fault, graph_spec_of, simulate
from streamproof.impl.timers.snapshots import restore_from_snapshots
from streamproof.impl.tasks.stream_task import TaskConfig, Watermark
from streamproof.impl.timers.internal_timer_service import TIE_ORDERS, KeyContext, TieOrderedQueueSet
from streamproof.impl.timers.internal_time_service_manager import InternalTimeServiceManager
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService
from streamproof.properties.job.functions import TimerChain, WindowSum

MP = 128
KEYS = [f"k{i}" for i in range(12)]


class Recorder:
    def __init__(self):
        self.fired = []

    def on_event_time(self, timer):
        self.fired.append(("event", timer.key, timer.timestamp))

    def on_processing_time(self, timer):
        self.fired.append(("processing", timer.key, timer.timestamp))


def make(tie_order=None, clock=None):
    manager = InternalTimeServiceManager(KeyContext(MP), KeyGroupRange(0, MP - 1), clock or ManualProcessingTimeService(0))
    if tie_order is not None:
        manager.set_tie_order(tie_order)
    target = Recorder()
    return manager, manager.get_internal_timer_service("t", target), target


def register(manager, service, keys, ts, domain="event"):
    for key in keys:
        manager.key_context.set_current_key(key)
        if domain == "event":
            service.register_event_time_timer("n", ts)
        else:
            service.register_processing_time_timer("n", ts)


def by_key_group(keys, max_parallelism=MP):
    return sorted(keys, key=lambda k: (assign_to_key_group(k, max_parallelism), keys.index(k)))


def test_two_keys_with_one_timestamp_fire_in_opposite_orders():
    orders = {}
    for tie_order in ("insertion", "reversed"):
        manager, service, target = make(tie_order)
        register(manager, service, ["a", "b"], 10)
        manager.advance_watermark(10)
        orders[tie_order] = [key for _, key, _ in target.fired]
    assert orders == {"insertion": ["a", "b"], "reversed": ["b", "a"]}


@pytest.mark.parametrize("tie_order", TIE_ORDERS)
def test_ties_fire_in_the_chosen_order_and_timestamps_still_first(tie_order):
    manager, service, target = make(tie_order)
    register(manager, service, KEYS[6:], 7)
    register(manager, service, KEYS, 5)
    manager.advance_watermark(10)
    fired = [(key, ts) for _, key, ts in target.fired]
    ties = {"insertion": KEYS, "reversed": KEYS[::-1], "key-group": by_key_group(KEYS)}[tie_order]
    later = {"insertion": KEYS[6:], "reversed": KEYS[6:][::-1], "key-group": by_key_group(KEYS[6:])}[tie_order]
    assert fired == [(k, 5) for k in ties] + [(k, 7) for k in later]


def test_the_default_is_insertion_order_with_the_plain_queue():
    manager, service, target = make()
    assert manager.tie_order == "insertion"
    assert type(service.event_time_timers_queue) is KeyGroupedPriorityQueueSet
    assert type(service.processing_time_timers_queue) is KeyGroupedPriorityQueueSet
    register(manager, service, KEYS, 5)
    manager.advance_watermark(5)
    assert [key for _, key, _ in target.fired] == KEYS
    assert JobSpec([[]], WindowSum).timer_tie_order == "insertion"


@pytest.mark.parametrize("tie_order", ["reversed", "key-group"])
def test_processing_time_ties_keep_one_physical_timer_at_the_head(tie_order):
    clock = ManualProcessingTimeService(0)
    manager, service, target = make(tie_order, clock)
    register(manager, service, ["a"], 20, "processing")
    assert clock.num_pending_timers() == 1
    physical = service.next_timer
    register(manager, service, ["b", "c"], 20, "processing")  # equal: Flink reschedules only for earlier
    assert service.next_timer is physical and clock.num_pending_timers() == 1
    register(manager, service, ["d"], 15, "processing")  # strictly earlier: rescheduled
    assert service.next_timer is not physical and service.next_timer.timestamp == 15
    clock.advance_to(20)
    fired = [key for _, key, _ in target.fired]
    ties = ["c", "b", "a"] if tie_order == "reversed" else by_key_group(["a", "b", "c"])
    assert fired == ["d"] + ties


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(TIE_ORDERS),
       st.lists(st.tuples(st.sampled_from(["add", "remove", "poll"]), st.integers(0, 4), st.sampled_from("abcdef"))))
def test_every_tie_order_is_a_priority_set(tie_order, ops):
    kg_of = lambda e: assign_to_key_group(e[1], MP)  # noqa: E731
    queue = KeyGroupedPriorityQueueSet(KeyGroupRange(0, MP - 1), kg_of) if tie_order == "insertion" \
        else TieOrderedQueueSet(KeyGroupRange(0, MP - 1), kg_of, tie_order)
    live: list = []  # in insertion order
    for op, ts, key in ops:
        element = (ts, key, "n")
        if op == "add":
            earlier = not live or ts < min(e[0] for e in live)
            assert queue.add(element) == (element not in live and earlier)
            if element not in live:
                live.append(element)
        elif op == "remove":
            assert queue.remove(element) == (element in live)
            if element in live:
                live.remove(element)
        else:
            polled = queue.poll()
            if not live:
                assert polled is None
                continue
            first = min(e[0] for e in live)
            ties = [e for e in live if e[0] == first]
            want = {"insertion": ties[0], "reversed": ties[-1],
                    "key-group": min(ties, key=lambda e: (kg_of(e), ties.index(e)))}[tie_order]
            assert polled == want
            live.remove(polled)
        assert set(queue) == set(live) and queue.size() == len(live)


@pytest.mark.parametrize("tie_order", TIE_ORDERS)
def test_snapshot_and_restore_keep_the_timers_and_the_tie_order(tie_order):
    manager, service, _ = make(tie_order)
    register(manager, service, KEYS, 5)
    register(manager, service, KEYS[:3], 9, "processing")
    snapshot = manager.start_snapshot()
    register(manager, service, ["late"], 5)  # after the snapshot started: copy-on-write, not in it
    manager.key_context.set_current_key(KEYS[0])
    service.delete_event_time_timer("n", 5)  # nor is this deletion
    data = snapshot.finish()
    restored = InternalTimeServiceManager(KeyContext(MP), KeyGroupRange(0, MP - 1), ManualProcessingTimeService(0))
    restored.set_tie_order(tie_order)
    restore_from_snapshots(restored, [data])
    target = Recorder()
    again = restored.get_internal_timer_service("t", target)
    assert again.num_event_time_timers() == len(KEYS) and again.num_processing_time_timers() == 3
    restored.advance_watermark(5)
    keys = [key for _, key, _ in target.fired]
    assert sorted(keys) == sorted(KEYS)
    restore_order = by_key_group(KEYS)  # a restore adds the timers key group by key group
    assert keys == {"insertion": restore_order, "reversed": restore_order[::-1], "key-group": restore_order}[tie_order]
    # the live service goes on as before
    manager.advance_watermark(5)
    assert manager.num_event_time_timers() == 0


def test_the_tie_order_is_configuration():
    manager, _, _ = make()
    with pytest.raises(ValueError, match="after timer services were created"):
        manager.set_tie_order("reversed")
    manager.set_tie_order("insertion")  # unchanged: fine
    with pytest.raises(ValueError, match="tie order must be one of insertion, reversed, key-group"):
        InternalTimeServiceManager(KeyContext(MP), KeyGroupRange(0, 1), ManualProcessingTimeService()).set_tie_order("x")
    with pytest.raises(ValueError, match="timer_tie_order must be one of"):
        JobSpec([[]], WindowSum, timer_tie_order="random")


# -- the knob in a job ---------------------------------------------------------------------------
def one_window():
    records = [StreamRecord(k, 1, 1) for k in KEYS[:6]]
    return [records + [Watermark(9)]]


def test_a_job_fires_its_ties_in_the_chosen_order():
    outputs = {}
    for tie_order in TIE_ORDERS:
        spec = JobSpec(one_window(), lambda: WindowSum(10), parallelism=1, timer_tie_order=tie_order)
        run = simulate(spec, 0)
        outputs[tie_order] = [e[1][0] for _, _, log in run.output_logs for e in log if e[0] == "record"]
        job = GraphJob(graph_spec_of(spec))
        assert isinstance(job.tasks[0].keyed[0].operator.time_service_manager.services["user-timers"].event_time_timers_queue,
                          TieOrderedQueueSet) == (tie_order != "insertion")
    assert outputs["insertion"] == KEYS[:6]
    assert outputs["reversed"] == KEYS[:6][::-1]
    assert outputs["key-group"] == by_key_group(KEYS[:6], 16) != KEYS[:6]  # the job's max parallelism


def sources():
    a = [StreamRecord(k, v, t) for k, v, t in [("a", 1, 1), ("b", 2, 3), ("a", 3, 12), ("c", 1, 15)]]
    b = [StreamRecord(k, v, t) for k, v, t in [("b", 5, 2), ("c", 1, 9), ("a", 1, 21)]]
    return [a[:2] + [Watermark(3)] + a[2:] + [Watermark(20)], b[:2] + [Watermark(9)] + b[2:]]


@pytest.mark.parametrize("tie_order", TIE_ORDERS)
@pytest.mark.parametrize("faults", [(Fault("fail", at=15),), (Fault("rescale", at=20, parallelism=3),),
                                    (Fault("fail_in_interrupted_firing", nth=1), Fault("fail", at=30))])
def test_faults_lose_and_duplicate_nothing_in_every_tie_order(tie_order, faults):
    for function in (lambda: WindowSum(10), lambda: TimerChain(delay=2, hops=3)):
        spec = JobSpec(sources(), function, parallelism=2, checkpoint_interval=4, timer_tie_order=tie_order,
                       config=TaskConfig(interruptible_timers=True, unaligned_checkpoints=True))
        reference = Counter(simulate(JobSpec(sources(), function, parallelism=2), 0).committed)
        for seed in range(5):
            assert Counter(simulate(spec, seed, faults).committed) == reference


def test_the_default_job_is_unchanged():
    default = simulate(JobSpec(sources(), lambda: WindowSum(10), checkpoint_interval=5), 3, (Fault("fail", at=15),))
    explicit = simulate(JobSpec(sources(), lambda: WindowSum(10), checkpoint_interval=5, timer_tie_order="insertion"),
                        3, (Fault("fail", at=15),))
    assert default.committed == explicit.committed and default.events == explicit.events
    assert default.output_logs == explicit.output_logs

"""FLIP-269 termination actions on the timer service (impl/timers/internal_timer_service.py): per-timer actions, the
per-service override, actions in snapshots (format 2) and on restore (format 1 gives CANCEL)."""

import random

import pytest

from streamproof.impl.state.key_groups import KeyGroupRange
from streamproof.impl.timers.snapshot_format import decode_snapshot
from streamproof.impl.timers.snapshots import restore_from_snapshots
from streamproof.impl.timers.termination import TimerTerminationAction as A
from streamproof.impl.timers.internal_timer_service import InternalTimer, KeyContext
from streamproof.impl.timers.internal_time_service_manager import InternalTimeServiceManager
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService

from tests.recorders import Fired

MP = 16


def setup(name="timers"):
    context = KeyContext(MP)
    m = InternalTimeServiceManager(context, KeyGroupRange(0, MP - 1), ManualProcessingTimeService(start=0))
    target = Fired()
    return m, context, m.get_internal_timer_service(name, target), target


def register(context, s, key, ts, action=None, namespace="w"):
    context.set_current_key(key)
    s.register_processing_time_timer(namespace, ts, action)


def actions_in(data):
    return {timer: action for _, domain, timer, action in decode_snapshot(data).entries() if domain == "processing"}


def test_default_is_cancel_and_registered_actions_are_kept_per_timer():
    m, context, s, _ = setup()
    register(context, s, "a", 5)
    register(context, s, "b", 6, A.TRIGGER)
    register(context, s, "c", 7, A.WAIT)
    assert s.termination_action_of(InternalTimer(5, "a", "w")) == A.CANCEL
    assert s.termination_action_of(InternalTimer(6, "b", "w")) == A.TRIGGER
    assert s.termination_action_of(InternalTimer(7, "c", "w")) == A.WAIT
    assert actions_in(m.start_snapshot().finish()) == {
        InternalTimer(5, "a", "w"): A.CANCEL, InternalTimer(6, "b", "w"): A.TRIGGER, InternalTimer(7, "c", "w"): A.WAIT}


def test_re_registration_replaces_the_action_and_a_running_snapshot_keeps_the_old_one():
    m, context, s, _ = setup()
    register(context, s, "a", 5, A.TRIGGER)
    before = m.start_snapshot()
    register(context, s, "a", 5, A.WAIT)
    after = m.start_snapshot()
    register(context, s, "a", 5)  # back to CANCEL
    assert s.num_processing_time_timers() == 1
    assert s.termination_action_of(InternalTimer(5, "a", "w")) == A.CANCEL
    assert actions_in(before.finish()) == {InternalTimer(5, "a", "w"): A.TRIGGER}
    assert actions_in(after.finish()) == {InternalTimer(5, "a", "w"): A.WAIT}
    assert s.termination_actions == {}


def test_first_action_registered_while_a_snapshot_runs_is_not_lost_by_later_snapshots():
    m, context, s, _ = setup()
    register(context, s, "a", 5)
    first = m.start_snapshot()  # begins while every action is CANCEL
    register(context, s, "b", 6, A.TRIGGER)
    second = m.start_snapshot()
    assert actions_in(first.finish()) == {InternalTimer(5, "a", "w"): A.CANCEL}
    assert actions_in(second.finish()) == {InternalTimer(5, "a", "w"): A.CANCEL, InternalTimer(6, "b", "w"): A.TRIGGER}


def test_actions_go_when_timers_fire_or_are_deleted():
    m, context, s, target = setup()
    register(context, s, "a", 5, A.TRIGGER)
    register(context, s, "b", 9, A.WAIT)
    context.set_current_key("a")
    s.register_event_time_timer("w", 9)  # same (ts, key, namespace) in the other domain
    context.set_current_key("b")
    s.delete_processing_time_timer("w", 9)
    m.processing_time_service.advance_to(5)
    m.advance_watermark(100)
    assert s.termination_actions == {}
    assert len(target.timers) == 2


def test_override_wins_over_registrations_and_none_removes_it():
    m, context, s, _ = setup()
    register(context, s, "a", 5, A.TRIGGER)
    register(context, s, "b", 6)
    s.set_timer_termination_action(A.WAIT)
    assert {s.termination_action_of(t) for t in s.processing_time_timers_queue} == {A.WAIT}
    assert set(actions_in(m.start_snapshot().finish()).values()) == {A.WAIT}
    s.set_timer_termination_action(None)
    assert s.termination_action_of(InternalTimer(5, "a", "w")) == A.TRIGGER
    assert s.termination_action_of(InternalTimer(6, "b", "w")) == A.CANCEL


@pytest.mark.parametrize("created_before", [True, False])
def test_restore_installs_actions_and_format_1_gives_cancel(created_before):
    rng = random.Random(7)
    m, context, s, _ = setup()
    expected = {}
    for i in range(40):
        action = rng.choice([None, A.CANCEL, A.TRIGGER, A.WAIT])
        register(context, s, f"k{i % 7}", i, action)
        expected[InternalTimer(i, f"k{i % 7}", "w")] = A.CANCEL if action is None else action
    for version, want in ((2, expected), (1, {t: A.CANCEL for t in expected})):
        data = m.start_snapshot(format_version=version).finish()
        context2 = KeyContext(MP)
        m2 = InternalTimeServiceManager(context2, KeyGroupRange(0, MP - 1), ManualProcessingTimeService(start=0))
        target2 = Fired()
        if created_before:
            m2.get_internal_timer_service("timers", target2)
        result = restore_from_snapshots(m2, [data])
        s2 = m2.get_internal_timer_service("timers", target2)
        assert {t: s2.termination_action_of(t) for t in s2.processing_time_timers_queue} == want
        assert result.actions == {("timers", t): a for t, a in want.items() if a != A.CANCEL}
        assert actions_in(m2.start_snapshot().finish()) == want


def test_firing_is_unchanged_by_actions():
    fired = []
    for with_actions in (False, True):
        m, context, s, target = setup()
        rng = random.Random(3)
        for i in range(50):
            key, ts, action = f"k{rng.randrange(5)}", rng.randrange(30), rng.choice(list(A))
            register(context, s, key, ts, action if with_actions else None)
        for t in range(0, 35, 3):
            m.processing_time_service.advance_to(t)
        fired.append(target.timers)
    assert fired[0] == fired[1]


# -- the end-of-input flush (InternalTimerService.flush_processing_time_timers) ----------------
MAX = 2**63 - 1


class Recording:
    """Fires record (timer, what current_processing_time() reads); ``then`` maps a timer to
    registrations ``(key, ts, action)`` its callback makes."""

    def __init__(self, then=None):
        self.service = None
        self.fired = []
        self.then = then or {}

    def on_event_time(self, timer):
        pass

    def on_processing_time(self, timer):
        self.fired.append((timer, self.service.current_processing_time()))
        for key, ts, action in self.then.get(timer, ()):
            self.service.key_context.set_current_key(key)
            self.service.register_processing_time_timer("w", ts, action)


def flush_setup(then=None, start=0):
    context = KeyContext(MP)
    m = InternalTimeServiceManager(context, KeyGroupRange(0, MP - 1), ManualProcessingTimeService(start=start))
    target = Recording(then)
    s = m.get_internal_timer_service("timers", target)
    target.service = s
    return m, context, s, target


def test_flush_cancel_drops_trigger_reads_max_wait_moves_the_clock_in_timestamp_order():
    m, context, s, target = flush_setup()
    register(context, s, "a", 30, A.WAIT)
    register(context, s, "b", 10, A.TRIGGER)
    register(context, s, "c", 20)  # CANCEL, between them
    register(context, s, "d", 40, A.TRIGGER)
    result = s.flush_processing_time_timers()
    assert target.fired == [(InternalTimer(10, "b", "w"), MAX), (InternalTimer(30, "a", "w"), 30),
                            (InternalTimer(40, "d", "w"), MAX)]
    assert result.cancelled == [InternalTimer(20, "c", "w")] and result.horizon == 40
    assert m.processing_time_service.get_current_processing_time() == 30
    assert s.current_processing_time() == 30 and s.num_processing_time_timers() == 0
    assert s.processing_time_state == "FLUSHED" and m.processing_time_service.num_pending_timers() == 0


def test_flush_handles_registrations_up_to_the_horizon_and_drops_later_ones():
    then = {InternalTimer(10, "a", "w"): [("x", 15, A.TRIGGER), ("y", 5, A.WAIT), ("z", 51, A.TRIGGER)],
            InternalTimer(15, "x", "w"): [("q", 50, None)]}
    m, context, s, target = flush_setup(then)
    register(context, s, "a", 10, A.TRIGGER)
    register(context, s, "b", 50, A.WAIT)
    result = s.flush_processing_time_timers()
    assert [t for t, _ in target.fired] == [InternalTimer(10, "a", "w"), InternalTimer(5, "y", "w"),
                                            InternalTimer(15, "x", "w"), InternalTimer(50, "b", "w")]
    assert result.cancelled == [InternalTimer(50, "q", "w")]
    assert result.dropped_after_horizon == 1


def test_flush_budget_names_the_service_and_nothing_fires_after_the_flush():
    class Runaway(Recording):
        def on_processing_time(self, timer):
            super().on_processing_time(timer)
            self.service.key_context.set_current_key(timer.key)
            self.service.register_processing_time_timer("w" + "+", timer.timestamp, A.TRIGGER)

    context = KeyContext(MP)
    m = InternalTimeServiceManager(context, KeyGroupRange(0, MP - 1), ManualProcessingTimeService(start=0))
    target = Runaway()
    s = m.get_internal_timer_service("runaway", target)
    target.service = s
    register(context, s, "a", 10, A.TRIGGER)
    with pytest.raises(Exception, match="'runaway'.*flushing"):
        s.flush_processing_time_timers(budget=50)
    m2, context2, s2, target2 = flush_setup()
    s2.flush_processing_time_timers()
    register(context2, s2, "a", 10, A.TRIGGER)
    m2.processing_time_service.advance_to(MAX)
    assert target2.fired == [] and s2.dropped_after_flush == 1


def reference_flush(pending, then, clock=0):
    """The specification, stated directly: (ts, key) -> action for the pending timers, in
    registration order (equal timestamps are handled in registration order). Timers due at
    ``clock`` fire first whatever their action; the horizon is fixed after them."""
    import heapq
    from itertools import count
    seq = count()
    heap = [(ts, next(seq), key) for ts, key in pending]
    heapq.heapify(heap)
    actions = dict(pending)
    fired, dropped = [], 0
    horizon = None
    due_part = True
    while heap:
        if due_part and heap[0][0] > clock:
            due_part = False
            horizon = max(ts for ts, _, _ in heap)
        ts, _, key = heapq.heappop(heap)
        action = actions.pop((ts, key))
        if due_part:
            action = A.TRIGGER  # fires as usual
        elif ts > horizon:
            dropped += 1
            continue
        if action == A.CANCEL:
            continue
        fired.append((ts, key))
        for k, t, a in then.get((ts, key), ()):
            if (t, k) not in actions:
                heapq.heappush(heap, (t, next(seq), k))
            actions[(t, k)] = A.CANCEL if a is None else a
    return fired, dropped


@pytest.mark.parametrize("seed", range(60))
def test_flush_matches_the_reference_on_random_cases(seed):
    rng = random.Random(seed)
    keys = [f"k{i}" for i in range(4)]
    pending = {}
    for _ in range(rng.randrange(0, 12)):
        pending[(rng.randrange(0, 40), rng.choice(keys))] = rng.choice([None, A.CANCEL, A.TRIGGER, A.WAIT])
    then = {}
    for _ in range(rng.randrange(0, 6)):
        then[(rng.randrange(0, 40), rng.choice(keys))] = [
            (rng.choice(keys), rng.randrange(0, 50), rng.choice([None, A.TRIGGER, A.WAIT])) for _ in range(2)]
    m, context, s, target = flush_setup({InternalTimer(ts, k, "w"): v for (ts, k), v in then.items()})
    for (ts, key), action in pending.items():
        register(context, s, key, ts, action)
    override = rng.choice([None, None, A.CANCEL, A.TRIGGER, A.WAIT])
    s.set_timer_termination_action(override)
    spec_pending = {(ts, k): (override if override is not None else (a or A.CANCEL)) for (ts, k), a in pending.items()}
    spec_then = {t: [(k, ts, override if override is not None else a) for k, ts, a in regs] for t, regs in then.items()}
    try:
        result = s.flush_processing_time_timers(budget=200)
    except Exception as error:  # a cycle of callbacks: the reference must loop too
        assert "flushing" in str(error)
        return
    fired, dropped = reference_flush(spec_pending, spec_then)
    assert [(t.timestamp, t.key) for t, _ in target.fired] == fired
    assert result.dropped_after_horizon == dropped
    # every TRIGGER/WAIT timer pending at the start fired exactly once; no CANCEL one fired
    for (ts, key), action in spec_pending.items():
        assert fired.count((ts, key)) >= (1 if action != A.CANCEL else 0)


# -- the task: flush at end of input with drain, before finish() ---------------------------------
from streamproof.impl.operators.keyed_process_operator import KeyedProcessFunction, StreamRecord  # noqa: E402
from streamproof.impl.operators.two_phase_commit_sink import ExternalSystem  # noqa: E402
from streamproof.impl.tasks.stream_task import EndOfData, OperatorTask, TaskConfig, Watermark  # noqa: E402
from streamproof.impl.timers.internal_timer_service import TimerFiringBudgetExceeded  # noqa: E402


class ProcessingTimers(KeyedProcessFunction):
    """Each record ``(ts, action)`` registers a processing-time timer and an event-time timer."""

    def __init__(self, late=None, runaway=False):
        self.late = late  # a timestamp a firing registers (once), with TRIGGER
        self.runaway = runaway

    def process_element(self, value, ctx, out):
        ts, action = value
        ctx.timer_service().register_processing_time_timer(ts, action)
        ctx.timer_service().register_event_time_timer(ts)

    def on_timer(self, timestamp, ctx, out):
        now = ctx.timer_service().current_processing_time()
        out.collect((ctx.time_domain, timestamp, now))
        if ctx.time_domain == "processing" and (self.runaway or self.late is not None):
            ctx.timer_service().register_processing_time_timer(
                timestamp if self.runaway else self.late, A.TRIGGER)
            self.late = None

    def finish(self, out):
        out.collect("finish")


def make_task(function, drain=True, start=0):
    return OperatorTask("op", 0, 1, 0, 128, KeyGroupRange(0, 127), function, 1,
                        ManualProcessingTimeService(start=start), ExternalSystem(),
                        TaskConfig(drain=drain, firing_budget=100), lambda c, s: None)


def run(task, elements):
    task.open()
    for element in elements:
        task.receive(0, element)
    for _ in range(10_000):
        if not task.is_runnable():
            return [e[1] if e[0] == "record" else e[0] for e in task.output_log]
        task.run_step()
    raise AssertionError("not idle")


def records(*pairs):
    return [StreamRecord(f"k{pair[0]}", pair, 0) for pair in pairs]


def test_task_flushes_after_max_watermark_and_before_finish():
    task = make_task(ProcessingTimers(late=10**6))
    out = run(task, records((30, A.WAIT), (10, A.TRIGGER), (20, None)) + [Watermark(MAX), EndOfData()])
    assert out == [("event", 10, 0), ("event", 20, 0), ("event", 30, 0), "watermark",
                   ("processing", 10, MAX), ("processing", 30, 30), "finish", "end_of_data"]
    assert task.dropped_after_horizon == 1
    task.operator.time_service_manager.processing_time_service.advance_to(MAX)  # nothing fires after finish()
    assert task.output_log[-1] == ("end_of_data",)


def test_task_flush_budget_names_the_operator():
    task = make_task(ProcessingTimers(runaway=True))
    with pytest.raises(TimerFiringBudgetExceeded, match=r"operator op\[0\].*flush"):
        run(task, records((10, A.TRIGGER)) + [Watermark(MAX), EndOfData()])


def test_operator_override_and_cancel_default_fire_nothing():
    task = make_task(ProcessingTimers())
    task.operator.set_timer_termination_action(A.CANCEL)
    out = run(task, records((30, A.WAIT), (10, A.TRIGGER)) + [Watermark(MAX), EndOfData()])
    assert [o for o in out if isinstance(o, tuple) and o[0] == "processing"] == []
    task = make_task(ProcessingTimers())
    task.operator.set_timer_termination_action(A.TRIGGER)
    out = run(task, records((30, None), (10, None)) + [Watermark(MAX), EndOfData()])
    assert [o for o in out if isinstance(o, tuple) and o[0] == "processing"] == [
        ("processing", 10, MAX), ("processing", 30, MAX)]


def test_stop_without_drain_fires_nothing_and_keeps_actions_in_the_snapshot():
    task = make_task(ProcessingTimers(), drain=False)
    out = run(task, records((30, A.WAIT), (10, A.TRIGGER), (20, None)))
    assert out == []
    data = task.operator.time_service_manager.start_snapshot().finish()
    assert {t.timestamp: a for t, a in actions_in(data).items()} == {10: A.TRIGGER, 20: A.CANCEL, 30: A.WAIT}


# -- impl against the specification (model/termination.py) --------------------------------------
from hypothesis import given, settings, strategies as st  # noqa: E402

from streamproof.model import termination as spec  # noqa: E402

ACTIONS = st.sampled_from([None, A.CANCEL, A.TRIGGER, A.WAIT])
KEYS = st.sampled_from(["a", "b", "c"])


class Checked(Recording):
    """Drives the spec alongside the impl: every firing is handled by the spec first."""

    def __init__(self, model, then):
        super().__init__(then)
        self.model = model

    def on_processing_time(self, timer):
        # the impl handled the timers before this one: the spec drops the same CANCEL / late ones
        while True:
            candidates = self.model.candidates()
            assert candidates, f"the impl fired {timer}, the spec has nothing pending"
            if timer in candidates:
                break
            first = candidates[0]
            assert self.model.handle(first) is None, f"the spec fires {first}, the impl fired {timer}"
        action, now = self.model.handle(tuple(timer))
        assert self.service.current_processing_time() == now
        super().on_processing_time(timer)
        for key, ts, a in self.then.get(timer, ()):
            self.model.register((ts, key, "w"), None if a is None else int(a))


@settings(max_examples=150, deadline=None)
@given(pending=st.lists(st.tuples(st.integers(0, 30), KEYS, ACTIONS), max_size=10),
       then=st.dictionaries(st.tuples(st.integers(0, 30), KEYS),
                            st.lists(st.tuples(KEYS, st.integers(0, 45), ACTIONS), max_size=3), max_size=5),
       override=st.sampled_from([None, None, A.CANCEL, A.TRIGGER, A.WAIT]))
def test_flush_refines_the_specification(pending, then, override):
    model = spec.FlushSpec(budget=100)
    context = KeyContext(MP)
    m = InternalTimeServiceManager(context, KeyGroupRange(0, MP - 1), ManualProcessingTimeService(start=0))
    target = Checked(model, {InternalTimer(ts, k, "w"): regs for (ts, k), regs in then.items()})
    s = m.get_internal_timer_service("timers", target)
    target.service = s
    for ts, key, action in pending:
        register(context, s, key, ts, action)
        model.register((ts, key, "w"), None if action is None else int(action))
    s.set_timer_termination_action(override)
    model.override = None if override is None else int(override)
    before = {t: model.effective(t) for t in model.actions}
    model.start_flush()
    try:
        result = s.flush_processing_time_timers(budget=100)
    except TimerFiringBudgetExceeded:
        with pytest.raises(spec.Rejected, match="budget"):
            while model.candidates():
                model.handle(model.candidates()[0])
        return
    while model.candidates():  # what the impl handled after the last firing
        assert model.handle(model.candidates()[0]) is None
    model.end_flush()
    model.check()
    assert result.dropped_after_horizon == model.dropped_after_horizon
    assert result.horizon == model.horizon
    fired = [t for t, _, _ in model.fired]
    for timer, action in before.items():  # due ones and TRIGGER / WAIT fire; CANCEL never
        assert (timer in fired) == (action != spec.CANCEL or timer[0] <= 0) or timer in {(ts, k, "w") for regs in then.values()
                                                                          for k, ts, _ in regs}


# -- timers already due at flush start; the operator-level processing-time service ----------------
def test_flush_fires_timers_already_due_as_usual_whatever_their_action():
    m, context, s, target = flush_setup(start=20)
    register(context, s, "a", 10)  # CANCEL, but due: its mail is in the mailbox in Flink
    register(context, s, "b", 20, A.WAIT)
    register(context, s, "c", 30)  # CANCEL, not due: dropped
    register(context, s, "d", 40, A.TRIGGER)
    result = s.flush_processing_time_timers()
    assert target.fired == [(InternalTimer(10, "a", "w"), 20), (InternalTimer(20, "b", "w"), 20),
                            (InternalTimer(40, "d", "w"), MAX)]
    assert result.due == [InternalTimer(10, "a", "w"), InternalTimer(20, "b", "w")]
    assert result.horizon == 40 and result.cancelled == [InternalTimer(30, "c", "w")]


def test_operator_level_service_flushes_by_action_and_drops_after_quiesce():
    from streamproof.impl.timers.operator_timers import OperatorProcessingTimeService

    clock = ManualProcessingTimeService(start=5)
    override = [None]
    service = OperatorProcessingTimeService(clock, lambda: override[0])
    seen = []

    def callback(ts):
        seen.append((ts, service.current_processing_time()))
        if ts == 30:
            service.register_timer(35, callback, A.WAIT)  # <= horizon: handled
            service.register_timer(99, callback, A.TRIGGER)  # after the horizon: dropped

    service.register_timer(3, callback)  # due
    service.register_timer(10, callback, A.TRIGGER)
    service.register_timer(20, callback)  # CANCEL
    cancelled = service.register_timer(25, callback, A.TRIGGER)
    cancelled.cancel()
    service.register_timer(40, callback, A.WAIT)
    service.register_timer(30, callback, A.WAIT)
    clock.advance_to(7)  # fires the due one as usual
    assert seen == [(3, 7)]
    result = service.flush(budget=100)
    assert seen == [(3, 7), (10, MAX), (30, 30), (35, 35), (40, 40)]
    assert result.cancelled == [20] and result.dropped_after_horizon == 1 and result.horizon == 40
    late = service.register_timer(50, callback, A.TRIGGER)
    clock.advance_to(100)
    assert late.cancelled and service.dropped_after_flush == 1 and seen[-1] == (40, 40)


def test_operator_level_override_wins_over_registrations():
    task = make_task(ProcessingTimers())
    task.operator.set_timer_termination_action(A.TRIGGER)
    seen = []
    task.operator.processing_time_service.register_timer(50, seen.append)  # CANCEL, overridden
    run(task, [Watermark(MAX), EndOfData()])
    assert seen == [50]


# -- Flink's StreamOperatorWrapperTest#testFinish, ported ------------------------------------------
class WrapperTestOperator(KeyedProcessFunction):
    """Flink's TestOneInputStreamOperator: a never-due timer at open, a due timer in endInput, a
    timer and a mail in finish."""

    def __init__(self, name="Operator1"):
        self.name = name

    def open(self, ctx):
        self.timers = ctx.get_processing_time_service()
        self.mailbox = ctx.get_mailbox_executor()
        self.timers.register_timer(MAX, lambda t: self.out.collect(f"[{self.name}]: Timer not triggered"))

    def process_element(self, value, ctx, out):
        pass

    def end_input(self, out):
        self.out = out
        out.collect(f"[{self.name}]: End of input")
        self.timers.register_timer(0, lambda t: out.collect(
            f"[{self.name}]: Timer that was in mailbox before closing operator"))

    def finish(self, out):
        self.timers.register_timer(0, lambda t: out.collect(
            f"[{self.name}]: Timer to put in mailbox when finishing operator"))
        self.mailbox.execute(lambda: out.collect(f"[{self.name}]: Mail to put in mailbox when finishing operator"),
                             "finish mail")
        out.collect(f"[{self.name}]: Bye")


def test_stream_operator_wrapper_finish_order():
    """The order of Flink's testFinish for a non-head operator: end of input, the timer already in
    the mailbox, finish, then its mail; the timer registered in finish() and the one at
    Long.MAX_VALUE never fire (our task runs one operator, whose end_input the task calls, so
    the head's case, where the task calls it before the wrapper, gives the same order)."""
    task = make_task(WrapperTestOperator(), start=10)
    out = run(task, [Watermark(MAX), EndOfData()])
    assert out == ["watermark", "[Operator1]: End of input",
                   "[Operator1]: Timer that was in mailbox before closing operator",
                   "[Operator1]: Bye", "[Operator1]: Mail to put in mailbox when finishing operator", "end_of_data"]
    assert task.operator.processing_time_service.dropped_after_flush == 1
    assert task.flush.start == 2 and task.flush.end == 3  # the due timer fired inside the flush


# -- the termination family: examples replay, and each bites a bug-zoo variant ---------------------
import pathlib  # noqa: E402

from streamproof.properties import registry  # noqa: E402
from streamproof.properties.bugzoo import get_variant  # noqa: E402
from streamproof.properties.scenario import load_scenario_file  # noqa: E402

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples" / "termination"


@pytest.mark.parametrize("name", ["cancel", "trigger", "wait", "no-drain", "override-with-failure",
                                  "override-after-restore", "restore-final-checkpoint-format-1",
                                  "restore-final-checkpoint-format-2"])
def test_termination_examples_hold_on_every_property(name):
    scenario = load_scenario_file(EXAMPLES / f"{name}.json")
    assert scenario.family == "termination" and scenario.description
    for prop in registry.for_family("termination"):
        verdict = prop.check(scenario)
        assert verdict.holds, (prop.name, verdict.invariant, verdict.message)


@pytest.mark.parametrize("name, bug", [
    ("trigger", "flush-handles-head-only"), ("trigger", "trigger-reads-real-clock"), ("trigger", "flush-without-horizon"),
    ("wait", "wait-fires-early"), ("cancel", "flush-after-finish"), ("override-with-failure", "override-ignored"),
    ("override-after-restore", "override-applies-only-to-later-timers"), ("override-after-restore", "override-ignored"),
])
def test_termination_examples_catch_their_bug(name, bug):
    scenario = load_scenario_file(EXAMPLES / f"{name}.json")
    variant = get_variant(bug)
    props = registry.for_family("termination")
    with variant.patch():
        assert any(not p.check(scenario).holds for p in props)
    assert all(p.check(scenario).holds for p in props)


from hypothesis import settings as current_settings  # noqa: E402

from streamproof.properties.explore import explore  # noqa: E402


@pytest.mark.parametrize("name", [p.name for p in registry.for_family("termination")])
def test_termination_property_holds_and_reaches_its_cases(name):
    """Each property holds on the profile's budget, and the cases it is about happen: flushes
    firing TRIGGER and WAIT timers, stops without drain, overrides, faults, interrupted firings."""
    prop = registry.get(name)
    result = explore(prop, examples=current_settings().max_examples, seed=0)
    assert result.holds, f"{result.invariant}: {result.message}"
    print(f"\n{name} reachability over {result.examples} examples:", dict(sorted(result.reach.items())))
    for label in prop.reachability:
        assert result.reach.get(label, 0) > 0, f"never reached: {label}"


@pytest.mark.parametrize("change, message", [
    (lambda d: d["steps"].append(dict(d["steps"][0])), "step 3 (timer): field 'pts': expected a timer not registered before"),
    (lambda d: d["steps"][0].update(then=0), "step 0 (timer): field 'then'"),
    (lambda d: d["steps"][0].update(action="LATER"), "step 0 (timer): field 'action': expected one of CANCEL, TRIGGER, WAIT"),
    (lambda d: d["steps"][0].update(source=5), "step 0 (timer): field 'source'"),
    (lambda d: d["params"].update(override="NEVER"), "override: null or one of CANCEL, TRIGGER, WAIT"),
    (lambda d: d["params"].update(snapshot_format=3), "snapshot_format: 1 or 2"),
    (lambda d: d["steps"].append({"op": "override", "action": "LATER"}),
     "step 3 (override): field 'action': expected one of CANCEL, TRIGGER, WAIT"),
    (lambda d: d["steps"].append({"op": "override", "action": "WAIT", "at": -1}), "step 3 (override): field 'at'"),
    (lambda d: d["steps"].append({"op": "override"}), "step 3 (override): field 'action'"),
    (lambda d: d["params"].update(operator="window_sum"), "params"),
])
def test_bad_termination_scenarios_are_one_line_errors(change, message):
    import json

    from streamproof.properties.scenario import ScenarioError, load_scenario

    doc = json.loads((EXAMPLES / "wait.json").read_text())
    change(doc)
    with pytest.raises(ScenarioError) as error:
        load_scenario(json.dumps(doc))
    assert message in str(error.value) and "\n" not in str(error.value)


def test_an_end_of_input_that_drops_the_continuation_is_caught():
    """FLINK-39481 (the job zoo's variant) seen from the termination family: a continuation pending
    at end of input must complete before the flush and EndOfData."""
    with get_variant("finish-drops-deferrable-mail").patch():
        result = explore(registry.get("termination.finish-is-last"), examples=300, seed=0, shrink=False)
    assert not result.holds, "survived"
    assert result.invariant in ("event-timers-fire-once", "event-timers-before-flush"), result.message


# -- the three blind spots (issue 17): flush order, the WAIT clock, an override set at any time --------------

def _scenario(steps, **params):
    from streamproof.properties.scenario import Scenario
    base = {"sources": 1, "parallelism": 1, "max_parallelism": 4, "checkpoint_interval": 3, "seed": 0, "drain": True}
    return Scenario(family="termination", steps=tuple(steps), params={**base, **params})


def test_the_specification_applies_a_late_override_to_earlier_timers():
    from streamproof.model.termination import CANCEL, MAX_TIME, TRIGGER, FlushSpec
    spec = FlushSpec(clock=10)
    spec.register((200, "a", None), CANCEL)  # registered (or restored from format 1) before the override
    spec.set_override(TRIGGER)
    spec.register((100, "b", None), CANCEL)
    spec.start_flush()
    assert [spec.outcome(t) for t in spec.candidates()] == [TRIGGER]
    assert spec.handle((100, "b", None)) == (TRIGGER, MAX_TIME)
    assert spec.handle((200, "a", None)) == (TRIGGER, MAX_TIME)
    spec.end_flush()
    spec.check()


def test_override_steps_round_trip_and_reach_the_operator():
    from streamproof.properties.scenario import dump_scenario, load_scenario
    from streamproof.properties.termination.steps import Override, ProcessingTimer
    scenario = _scenario([ProcessingTimer(0, "a", 200, None), Override("WAIT"), Override("TRIGGER", 5)])
    assert load_scenario(dump_scenario(scenario)) == scenario
    for prop in registry.for_family("termination"):
        assert prop.check(scenario).holds


@pytest.mark.parametrize("bug, steps, params, invariant", [
    ("flush-handles-in-registration-order",  # registered 300 before 200: the flush must fire 200 first
     [("timer", "b", 300, "TRIGGER", None), ("timer", "a", 200, "TRIGGER", None)], {}, "flush-in-timestamp-order"),
    ("wait-reads-its-own-time",  # the child at 199 is handled after the clock reached 200: it reads 200
     [("timer", "a", 200, "WAIT", -1)], {}, "flush-reads-the-specified-clock"),
    ("override-applies-only-to-later-timers",  # restored from format 1 (CANCEL), then the override from open()
     [("timer", "a", 200, None, None), ("timer", "c", 8, "WAIT", None), ("override", "TRIGGER"), ("fail", 12)],
     {"snapshot_format": 1}, "flush-applies-the-effective-action"),
])
def test_the_new_claims_catch_their_variant(bug, steps, params, invariant):
    from streamproof.properties.job.steps import Fail
    from streamproof.properties.termination.steps import Override, ProcessingTimer
    built = [ProcessingTimer(0, s[1], s[2], s[3], s[4]) if s[0] == "timer" else Override(s[1]) if s[0] == "override"
             else Fail(s[1], None) for s in steps]
    scenario = _scenario(built, **params)
    prop = registry.get("termination.actions-obeyed")
    assert prop.check(scenario).holds
    with get_variant(bug).patch():
        verdict = prop.check(scenario)
    assert not verdict.holds and verdict.invariant == invariant, (verdict.invariant, verdict.message)


def test_the_family_watches_the_new_situations():
    """The reachability test above fails when any of these is never reached at the profile's budget."""
    from streamproof.properties.termination.catalogue import REACHABILITY
    assert {"override set after timers exist", "override set after a restore", "format-1 restore under an override",
            "flush handled timers out of registration order",
            "WAIT timer read a flush clock later than its time"} <= set(REACHABILITY)
    for prop in registry.for_family("termination"):
        assert set(REACHABILITY) <= set(prop.reachability)

"""User code reads the simulated clock: ``time.sleep`` in a callback never sleeps, ``time.time()``,
``time.monotonic()``, ``datetime.now()``... are the operator's processing time (impl/operators/user_clock.py,
docs/decisions.md "Wall-clock calls in user code")."""

from __future__ import annotations

import datetime
import sys
import time
import types

import pytest

from streamproof.flink import adapt
from streamproof.impl import operators as impl
from streamproof.impl.operators import user_clock
from streamproof.impl.state.key_groups import KeyGroupRange
from streamproof.impl.operators.keyed_process_operator import KeyedProcessOperator, StreamRecord
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService
from streamproof.properties.certify import certify

OPS = "tests.certify_clock_ops"

USER_MODULE = '''
import time, datetime
import time as t
from time import sleep, time as now, monotonic_ns
from datetime import datetime as DateTime, date
from streamproof.flink.datastream import KeyedProcessFunction

class Clocked(KeyedProcessFunction):
    def process_element(self, value, ctx):
        started = t.perf_counter()
        time.sleep(3600)
        sleep(3600)
        yield ("time", time.time(), now(), time.time_ns(), monotonic_ns(), t.perf_counter() - started)
        yield ("datetime", DateTime.now(), datetime.datetime.now(datetime.timezone.utc), DateTime.utcnow(),
               date.today(), isinstance(DateTime(2024, 1, 1), DateTime), type(DateTime.fromtimestamp(0)))
        yield ("struct", time.gmtime()[:6], time.strftime("%Y-%m-%d %H:%M"))
        ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 500)

    def on_timer(self, timestamp, ctx):
        sleep(3600)
        yield ("timer", timestamp, now())
'''


@pytest.fixture
def user_module():
    module = types.ModuleType("streamproof_test_clocked_user_module")
    sys.modules[module.__name__] = module
    exec(compile(USER_MODULE, "<user module>", "exec"), module.__dict__)
    yield module
    del sys.modules[module.__name__]


def run_by_hand(function, start=90_061_250):
    out = []
    clock = ManualProcessingTimeService(start=start)
    op = KeyedProcessOperator(adapt(function), max_parallelism=128, key_group_range=KeyGroupRange(0, 127),
                              processing_time_service=clock, emit=lambda v, ts: out.append(v),
                              max_seconds_per_callback=5.0)
    op.open()
    op.process_element(StreamRecord("k", 1, 0))
    return op, out, clock


def test_sleep_never_sleeps_and_the_clock_is_the_processing_time(user_module):
    skipped = user_clock.skipped_sleeps()
    op, out, clock = run_by_hand(user_module.Clocked())
    pt = 90_061_250  # 1970-01-02 01:01:01.250 UTC
    assert out[0] == ("time", pt / 1000, pt / 1000, pt * 1_000_000, pt * 1_000_000, 0.0)
    _, naive, aware, utc_naive, today, isinstance_ok, built = out[1]
    assert aware == datetime.datetime(1970, 1, 2, 1, 1, 1, 250_000, tzinfo=datetime.timezone.utc)
    assert naive == datetime.datetime.fromtimestamp(pt / 1000) and utc_naive == aware.replace(tzinfo=None)
    assert today == datetime.date.fromtimestamp(pt / 1000)
    assert isinstance_ok and built is datetime.datetime  # real datetime objects, recognised
    assert out[2] == ("struct", (1970, 1, 2, 1, 1, 1), time.strftime("%Y-%m-%d %H:%M", time.localtime(pt / 1000)))
    clock.advance_to(pt + 2000)  # the processing-time timer fires at the clock's time
    assert out[3] == ("timer", pt + 500, (pt + 2000) / 1000)
    assert user_clock.skipped_sleeps() - skipped == 3  # three sleeps of an hour, each returned at once


def test_the_user_module_gets_its_real_clock_back_after_each_callback(user_module):
    run_by_hand(user_module.Clocked())
    assert user_module.time is time and user_module.t is time and user_module.sleep is time.sleep
    assert user_module.now is time.time and user_module.DateTime is datetime.datetime
    assert user_module.date is datetime.date and user_module.datetime is datetime
    assert user_clock.simulated_now_ms() is None and not user_clock._undo


def test_only_the_user_modules_are_substituted(user_module):
    """The modules of the operator's class and its bases see the simulated clock; streamproof's own
    (the callback watchdog's perf_counter) and the ``time`` module itself keep the real one."""
    seen = []

    class Spy(user_module.Clocked):  # defined here: this module is a user module too
        def process_element(self, value, ctx):
            real = sys.modules["time"]
            seen.append((sys.modules["streamproof.impl.operators.keyed_process_operator"].time is real, real.time.__module__,
                         time is real, user_module.time is real, user_clock.simulated_now_ms()))
            yield from ()

    run_by_hand(Spy(), start=5000)
    assert seen == [(True, "time", False, False, 5000)]
    assert time is sys.modules["time"]


def test_an_exception_in_the_callback_restores_the_clock(user_module):
    class Boom(user_module.Clocked):
        def process_element(self, value, ctx):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        run_by_hand(Boom())
    assert user_module.time is time and user_clock.simulated_now_ms() is None and not user_clock._undo


def test_nested_clocks_of_one_module_restore_when_the_outermost_ends(user_module):
    outer = user_clock.user_clock_for(user_module.Clocked(), lambda: 1000)
    inner = user_clock.user_clock_for(user_module.Clocked(), lambda: 2000)
    with outer:
        with inner:
            assert user_module.now() == 2.0
        assert user_module.time is not time and user_module.now() == 1.0
    assert user_module.time is time


def test_outside_callbacks_the_substitutes_are_the_real_clock():
    before = time.time()
    assert abs(user_clock._TIME_FAKES["time"]() - before) < 5
    assert abs(user_clock._SimDatetime.now() - datetime.datetime.now()) < datetime.timedelta(seconds=5)


def test_an_operator_module_without_clock_calls_costs_nothing():
    plain = types.ModuleType("streamproof_test_plain_user_module")
    exec("from streamproof.impl.operators.keyed_process_operator import KeyedProcessFunction\n"
         "class Plain(KeyedProcessFunction):\n    pass\n", plain.__dict__)
    sys.modules[plain.__name__] = plain
    try:
        assert user_clock.user_clock_for(plain.Plain(), lambda: 0) is None  # no per-callback work
    finally:
        del sys.modules[plain.__name__]
    from streamproof.properties.job.functions import FUNCTIONS

    assert user_clock.user_clock_for(FUNCTIONS["window_sum"](), lambda: 0) is None  # streamproof's own


@pytest.mark.parametrize("name", ["ThrottledCounter", "SleepyImpl"])
def test_an_operator_that_sleeps_in_its_callbacks_certifies_quickly(name):
    """A second of sleep per record and per timer: real sleeps would take minutes (and the 5-second
    callback limit stops none of them). Every sleep the operator asked for returned at once
    (counted on both sides, no timing: a busy machine changes nothing); the operator also fails
    if its clock reads are not the processing time."""
    ops = sys.modules.get(OPS) or __import__(OPS, fromlist=["SLEEPS"])
    asked, skipped = ops.SLEEPS[0], user_clock.skipped_sleeps()
    c = certify(f"{OPS}:{name}", examples=5)
    asked, skipped = ops.SLEEPS[0] - asked, user_clock.skipped_sleeps() - skipped
    verdicts = {r["property"]: r["verdict"] for r in c.results}
    assert "failed" not in verdicts.values(), c.markdown()  # no clock check failed, no callback ran 5 s
    assert asked > 100 and skipped == asked, f"{skipped} of {asked} sleeps returned at once"
    assert all(r["coverage"]["non-empty output"] > 0 for r in c.results), c.markdown()  # timers fired (and slept)


def test_the_verdict_does_not_depend_on_the_wall_clock():
    """Two certifications seconds apart give the same verdicts, coverage and examples."""
    def verdicts():
        c = certify(f"{OPS}:ThrottledCounter", examples=5)
        return [(r["property"], r["verdict"], r["examples"], r["coverage"]) for r in c.results]

    first = verdicts()
    time.sleep(1.1)
    assert verdicts() == first



def _split_verdict(name: str):
    """certify.interruptible-timers of ``name`` (its split search, then 1 example; no shrinking):
    (the verdict's exploration, the search's)."""
    from streamproof.properties import certify as cert

    subject = cert.load(f"{OPS}:{name}")
    prop = next(p for p in cert.properties_for(subject) if p.name == "certify.interruptible-timers")
    return cert.explore_certification(subject, prop, 1, seed=0, shrink=False)


def test_a_wall_clock_stamp_alone_is_a_finding_not_a_split_refusal():
    """A split firing (FLIP-443) ends later in processing time, so an output stamped with
    datetime.now() differs from the unsplit run's. With processing time standing still they
    agree: the property holds, with the finding (before, it refused this safe operator at seeds 0
    and 1)."""
    from streamproof.properties.certify_checks import FINDING_PROCESSING_TIME

    found, search = _split_verdict("StampedWindowSum")
    assert found.holds and search.holds, (found, search)
    assert found.reach_examples.get(FINDING_PROCESSING_TIME, 0) + search.reach_examples.get(FINDING_PROCESSING_TIME, 0)


def test_a_wall_clock_stamp_does_not_hide_a_split_refusal():
    """The same stamp on a count read when the timer fires: still refused, for the count."""
    found, _ = _split_verdict("StampedCountNow")
    assert not found.holds and found.invariant == "same-output-with-split-firings", found


RANDOM_MODULE = '''
import random, uuid
from random import randint
from uuid import uuid4
from streamproof.flink.datastream import KeyedProcessFunction

class Drawing(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield (random.random(), randint(0, 10**9), str(uuid4()), str(uuid.uuid1()), random.choice("abcdefgh"))
'''


def test_random_values_are_pinned_to_the_callback():
    """random's functions and uuid4/uuid1 in a callback draw from a generator seeded by the callback
    (kind, key, timestamp, record): the same values in a second run, other values for another
    record; the module gets the real ones back after each callback."""
    import random as real_random
    import uuid as real_uuid

    module = types.ModuleType("streamproof_test_drawing_user_module")
    sys.modules[module.__name__] = module
    try:
        exec(compile(RANDOM_MODULE, "<user module>", "exec"), module.__dict__)

        def outputs(values):
            out = []
            op = KeyedProcessOperator(adapt(module.Drawing()), max_parallelism=128, key_group_range=KeyGroupRange(0, 127),
                                      processing_time_service=ManualProcessingTimeService(start=0),
                                      emit=lambda v, ts: out.append(v), max_seconds_per_callback=5.0)
            op.open()
            for value in values:
                op.process_element(StreamRecord("k", value, 5))
            return out

        first, again = outputs(["a", "b"]), outputs(["a", "b"])
        assert first == again and first[0] != first[1]
        assert len(set(first[0])) == 5
        assert module.random is real_random and module.uuid is real_uuid and module.uuid4 is real_uuid.uuid4
        assert module.randint is real_random.randint
    finally:
        del sys.modules[module.__name__]


def test_an_operator_with_random_ids_in_its_output_is_certified():
    """uuid4() ids and random() weights in each result: both comparisons hold (before, same-output
    and interruptible-timers refused it on the ids alone)."""
    for name in ("certify.same-output", "certify.interruptible-timers"):
        from streamproof.properties import certify as cert

        subject = cert.load(f"{OPS}:IdentifiedWindowCount")
        prop = next(p for p in cert.properties_for(subject) if p.name == name)
        found, search = cert.explore_certification(subject, prop, 1, seed=0, shrink=False)
        assert found.holds and search.holds, (name, found, search)


def test_a_frozen_wall_clock_is_what_callbacks_read_and_timers_still_follow_processing_time(user_module):
    """certify's rerun with the wall clock frozen: time.time()/datetime.now() read the frozen instant,
    processing-time timers still fire at the operator's processing time."""
    with user_clock.wall_clock_frozen(0):
        assert user_clock.wall_clock_is_frozen()
        op, out, clock = run_by_hand(user_module.Clocked())
        assert out[0][:3] == ("time", 0.0, 0.0)
        clock.advance_to(90_061_250 + 2000)
        assert out[3] == ("timer", 90_061_250 + 500, 0.0)
    assert not user_clock.wall_clock_is_frozen()

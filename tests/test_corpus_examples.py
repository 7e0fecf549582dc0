"""Example-based tests of every operator of the real corpus (examples/operators/real/), written as
their authors would with Flink's operator test harness (``streamproof.testing``).

For every operator of corpus.json:

* a functional example: a few hand-written records, watermarks and processing times, and the
  output its documentation promises (the module's docstring, the source it cites, README.md's
  table). Where the operator disagrees with its documented intent the test still asserts the
  intent and is ``xfail(strict=True)`` with the defect as its reason;
* a snapshot/restore example: the same input with a snapshot in the middle, restored into a fresh
  operator instance, must give the output of the uninterrupted run (where it does not, for an
  operator that reads the watermark Flink does not checkpoint, the test shows the difference);
* with event-time timers, an interrupted firing (FLIP-443): three keys due at one watermark, the
  firing stopped after one timer and after a second (Flink's mailbox lets input in from the third
  part on), a record of the key whose timer is still due, then the rest of the firing. For the operators README.md ("Interruptible timers (FLIP-443)") and corpus.json list
  as refused by ``certify.interruptible-timers`` the output differs from the run without the
  split; for the others it is the same (compared as a multiset, as certify compares outputs);
* with processing-time timers, the clock is moved explicitly with ``set_processing_time``.

One rescale example at the end snapshots two operators at parallelism 2 and merges them into 1.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from examples.operators.real import (
    car_event_sort,
    count_news_clicks,
    count_with_timeout_function,
    event_time_timer_sum,
    fraud_detector,
    latest_transaction_function,
    long_rides_alert_function,
    long_rides_alert_function_2021,
    long_rides_match_function,
    long_rides_match_function_2020,
    payment_watermark_timer_function,
    pseudo_window,
    rocksdb_tuning_job1,
    self_cleaning_temperature_alert_function,
    sensor_aggregation_processing,
    sorting_job_coalesced_timer,
    start_end_duration,
    temp_increase_alert_function,
    top_n_hot_pages,
    usage_alerting_function,
)
from streamproof import testing
from streamproof.flink.common import Row
from streamproof.testing import Timer

REPO = Path(__file__).resolve().parent.parent
CORPUS = json.loads((REPO / "examples" / "operators" / "real" / "corpus.json").read_text())

SECOND, MINUTE, HOUR = 1000, 60_000, 3_600_000
MIN_WATERMARK = -(2 ** 63)


# -- helpers ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class WM:
    """A watermark in an input list."""
    timestamp: int


@dataclass(frozen=True)
class PT:
    """Processing time moves to ``time`` (its due timers fire)."""
    time: int


class _EndOfInput:
    def __repr__(self) -> str:
        return "END"


END = _EndOfInput()


def harness(module, function, **options):
    """A harness of ``function`` keyed and timestamped as the module's job does."""
    return testing.for_keyed_process_function(function, key_selector=module.key, timestamp=module.timestamp,
                                              **options)


def feed(h, steps):
    """Records, ``WM(t)``, ``PT(t)`` and ``END`` in order."""
    for step in steps:
        if isinstance(step, WM):
            h.process_watermark(step.timestamp)
        elif isinstance(step, PT):
            h.set_processing_time(step.time)
        elif step is END:
            h.end_input()
        else:
            h.process_element(step)
    return h


def uninterrupted(make, first, second):
    return feed(make(), list(first) + list(second)).extract_output_values()


def restored(make, first, second):
    """``first``, a snapshot, a fresh operator restored from it (the clock goes on), ``second``:
    the output of both parts."""
    before = feed(make(), first)
    snapshot = before.snapshot()
    after = make(processing_time=before.get_processing_time())
    after.restore(snapshot)
    feed(after, second)
    return before.extract_output_values() + after.extract_output_values()


def split_and_unsplit(make, records, watermark, record_of, finish=()):
    """The interrupted-firing shape: ``records`` leave three or more keys with a timer due at
    ``watermark``; the firing stops after one timer and again after a second (Flink's mailbox runs
    input between the parts of a split firing from the third part on: README.md, docs/certify.md);
    then a record (``record_of(key)``) of a key whose timer is due and not fired yet, the rest of the
    firing, and ``finish``. The same input unsplit: the record after the whole firing.
    Returns (that key, the keys whose timers fired first in firing order, split output, unsplit output)."""
    h = feed(make(interruptible_timers=True), records)

    def due():
        return [t for t in h.pending_timers() if t.domain == "event" and t.timestamp <= watermark]

    before = due()
    assert len({t.key for t in before}) >= 3, f"three keys must be due at {watermark}: {h.pending_timers()}"
    h.process_watermark(watermark, stop_after=1)
    assert h.firing_interrupted
    after_one = due()
    h.continue_firing(stop_after=1)
    assert h.firing_interrupted
    after_two = due()
    fired = [t.key for t in before if t not in after_one] + [t.key for t in after_one if t not in after_two]
    assert len(fired) == 2
    key = after_two[0].key
    h.process_element(record_of(key))
    h.continue_firing()
    assert not h.firing_interrupted
    feed(h, finish)
    unsplit = feed(make(), list(records) + [WM(watermark), record_of(key)] + list(finish))
    return key, fired, h.extract_output_values(), unsplit.extract_output_values()


def multiset(values) -> Counter:
    return Counter(repr(v) for v in values)


def test_every_corpus_operator_has_a_section_here():
    tested = {m.__name__.rsplit(".", 1)[-1] for m in (
        car_event_sort, count_news_clicks, count_with_timeout_function, event_time_timer_sum, fraud_detector,
        latest_transaction_function, long_rides_alert_function, long_rides_alert_function_2021,
        long_rides_match_function, long_rides_match_function_2020, payment_watermark_timer_function, pseudo_window,
        rocksdb_tuning_job1, self_cleaning_temperature_alert_function, sensor_aggregation_processing,
        sorting_job_coalesced_timer, start_end_duration, temp_increase_alert_function, top_n_hot_pages,
        usage_alerting_function)}
    assert tested == {entry["file"][:-3] for entry in CORPUS}


# == long_rides_alert_function: AlertFunction (apache/flink-training, 2022) ====================
# Intent (docstring, README): emits the rideId of every ride longer than two hours, once; START
# registers a timer at start + 2 h, END deletes it; "TaxiRide events can be lost, but there are no
# duplicates".

def lra_make(**options):
    return harness(long_rides_alert_function, long_rides_alert_function.AlertFunction, **options)


def lra_start(ride_id, t):
    return Row(rideId=ride_id, isStart=True, eventTime=t)


def lra_end(ride_id, t):
    return Row(rideId=ride_id, isStart=False, eventTime=t)


LRA_FIRST = [lra_start(1, 0), lra_start(2, 0), lra_start(3, 0), lra_end(1, 30 * MINUTE)]
LRA_SECOND = [lra_end(3, 3 * HOUR),  # ride 3 took 3 h, its END came before the timer: alert on END
              WM(2 * HOUR),  # ride 2 has no END after 2 h: the timer alerts
              lra_end(4, 20 * MINUTE), lra_start(4, 0)]  # a 20-minute ride, END first: no alert


def test_long_rides_alert_function_alerts_rides_over_two_hours():
    h = feed(lra_make(), LRA_FIRST + LRA_SECOND)
    h.assert_output([3, 2])
    assert h.pending_timers() == [] and h.num_keyed_state_entries() == 0


@pytest.mark.xfail(strict=True, raises=AttributeError, reason=(
    "a duplicate START clears the state but keeps the first START's timer; onTimer dereferences the "
    "cleared state (Java: NullPointerException)"))
def test_long_rides_alert_function_duplicate_start_alerts_once():
    # outside the exercise's "no duplicates" contract, but what an at-least-once source delivers
    h = feed(lra_make(), [lra_start(5, 0), lra_start(5, 0), WM(2 * HOUR)])
    h.assert_output([5])


def test_long_rides_alert_function_snapshot_restore():
    assert restored(lra_make, LRA_FIRST, LRA_SECOND) == uninterrupted(lra_make, LRA_FIRST, LRA_SECOND) == [3, 2]


def test_long_rides_alert_function_interrupted_firing_is_safe():
    # rides 1-3 started at 0: their timers are due at 2 h; the END (2.5 h) of a ride still due
    # runs between the parts: it deletes the timer and alerts itself, where unsplit the timer alerts
    key, fired, split, unsplit = split_and_unsplit(lra_make, [lra_start(1, 0), lra_start(2, 0), lra_start(3, 0)],
                                                   2 * HOUR, lambda k: lra_end(k, 2 * HOUR + 30 * MINUTE))
    assert split == fired + [key]
    assert multiset(split) == multiset(unsplit) == multiset([1, 2, 3])


# == long_rides_alert_function_2021: AlertFunction (apache/flink-training @bbb051a) ==============
# Intent: the END carries startTime and endTime; rides longer than 2 h are alerted (once): by the
# START's timer, or by an END that arrives first.

def lra21_make(**options):
    return harness(long_rides_alert_function_2021, long_rides_alert_function_2021.AlertFunction, **options)


def lra21_start(ride_id, start):
    return Row(rideId=ride_id, isStart=True, startTime=start, endTime=0)


def lra21_end(ride_id, start, end):
    return Row(rideId=ride_id, isStart=False, startTime=start, endTime=end)


LRA21_FIRST = [lra21_start(1, 0), lra21_end(1, 0, 30 * MINUTE), lra21_start(2, 0)]
LRA21_SECOND = [lra21_end(3, 0, 3 * HOUR),  # END first, a 3 h ride: alerts by itself
                lra21_start(3, 0),  # its START only clears the state
                WM(2 * HOUR)]  # ride 2 has no END after 2 h: the timer alerts


def test_long_rides_alert_function_2021_alerts_rides_over_two_hours():
    h = feed(lra21_make(), LRA21_FIRST + LRA21_SECOND)
    h.assert_output([3, 2])


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "the START's timer alerts and clears the state, so the END that arrives afterwards finds no state"
    " and alerts the same ride again"))
def test_long_rides_alert_function_2021_a_long_ride_is_alerted_once():
    h = feed(lra21_make(), [lra21_start(2, 0), WM(2 * HOUR), lra21_end(2, 0, 3 * HOUR)])
    h.assert_output([2])


@pytest.mark.xfail(strict=True, raises=AttributeError, reason=(
    "a duplicate START clears the state but keeps the timer; onTimer dereferences the cleared state"))
def test_long_rides_alert_function_2021_duplicate_start_alerts_once():
    h = feed(lra21_make(), [lra21_start(5, 0), lra21_start(5, 0), WM(2 * HOUR)])
    h.assert_output([5])


def test_long_rides_alert_function_2021_snapshot_restore():
    assert restored(lra21_make, LRA21_FIRST, LRA21_SECOND) == uninterrupted(lra21_make, LRA21_FIRST,
                                                                            LRA21_SECOND) == [3, 2]


def test_long_rides_alert_function_2021_interrupted_firing_changes_the_output():
    # refused by certify.interruptible-timers: split, the END runs before its ride's due timer,
    # deletes it and alerts once; unsplit the timer alerts, then the END alerts again
    key, fired, split, unsplit = split_and_unsplit(
        lra21_make, [lra21_start(1, 0), lra21_start(2, 0), lra21_start(3, 0)], 2 * HOUR,
        lambda k: lra21_end(k, 0, 2 * HOUR + 30 * MINUTE))
    assert split == fired + [key]
    assert multiset(unsplit) == multiset(fired + [key, key])


# == long_rides_match_function_2020: MatchFunction (apache/flink-training @ea4a66e) ===============
# Intent: emits the START event of every ride with no END two hours after its start.

def lrm20_make(**options):
    return harness(long_rides_match_function_2020, long_rides_match_function_2020.MatchFunction, **options)


lrm20_start, lrm20_end = lra21_start, lra21_end  # the same TaxiRide shape (startTime, endTime)

LRM20_FIRST = [lrm20_start(1, 0), lrm20_end(1, 0, 30 * MINUTE), lrm20_start(2, 0)]
LRM20_SECOND = [lrm20_end(3, 0, 20 * MINUTE), lrm20_start(3, 0),  # END first: matched, nothing
                WM(2 * HOUR)]  # ride 2 unmatched after 2 h: its START is emitted


def test_long_rides_match_function_2020_emits_unmatched_starts():
    h = feed(lrm20_make(), LRM20_FIRST + LRM20_SECOND)
    h.assert_output([lrm20_start(2, 0)])
    assert h.num_keyed_state_entries() == 0


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "a duplicate START clears the state but keeps the timer, which then emits null (None) instead of "
    "the START"))
def test_long_rides_match_function_2020_duplicate_start_emits_the_start():
    h = feed(lrm20_make(), [lrm20_start(5, 0), lrm20_start(5, 0), WM(2 * HOUR)])
    h.assert_output([lrm20_start(5, 0)])


def test_long_rides_match_function_2020_snapshot_restore():
    assert restored(lrm20_make, LRM20_FIRST, LRM20_SECOND) == uninterrupted(lrm20_make, LRM20_FIRST, LRM20_SECOND)


def test_long_rides_match_function_2020_interrupted_firing_changes_the_output():
    # refused: the END (2.5 h) of the still-due ride clears its state and deletes its timer, so
    # its START, unmatched at 2 h, is never emitted; unsplit the timer emitted it first
    key, fired, split, unsplit = split_and_unsplit(
        lrm20_make, [lrm20_start(1, 0), lrm20_start(2, 0), lrm20_start(3, 0)], 2 * HOUR,
        lambda k: lrm20_end(k, 0, 2 * HOUR + 30 * MINUTE))
    assert split == [lrm20_start(f, 0) for f in fired]
    assert multiset(unsplit) == multiset([lrm20_start(1, 0), lrm20_start(2, 0), lrm20_start(3, 0)])


# == long_rides_match_function: MatchFunction (ververica/flink-training-exercises, 2019) =========
# Intent: every event registers a timer at its event time + 2 h; a timer emits the saved START if
# no END replaced it (README: "Correct"; a START after its END is ignored).

def lrm_make(**options):
    return harness(long_rides_match_function, long_rides_match_function.MatchFunction, **options)


lrm_start, lrm_end = lra21_start, lra21_end

LRM_FIRST = [lrm_start(1, 0), lrm_end(1, 0, 30 * MINUTE), lrm_start(2, 0)]
LRM_SECOND = [lrm_end(3, 0, 20 * MINUTE), lrm_start(3, 0), WM(3 * HOUR)]


def test_long_rides_match_function_emits_unmatched_starts():
    h = feed(lrm_make(), LRM_FIRST + LRM_SECOND)
    h.assert_output([lrm_start(2, 0)])
    assert h.pending_timers() == [] and h.num_keyed_state_entries() == 0


def test_long_rides_match_function_duplicate_start_is_harmless():
    # README: Flink deduplicates a key's timers at one timestamp; the START is emitted once
    h = feed(lrm_make(), [lrm_start(5, 0), lrm_start(5, 0), WM(2 * HOUR)])
    h.assert_output([lrm_start(5, 0)])


def test_long_rides_match_function_snapshot_restore():
    assert restored(lrm_make, LRM_FIRST, LRM_SECOND) == uninterrupted(lrm_make, LRM_FIRST, LRM_SECOND) \
        == [lrm_start(2, 0)]


def test_long_rides_match_function_interrupted_firing_changes_the_output():
    # refused: the END replaces the still-due ride's START before its timer fires
    key, fired, split, unsplit = split_and_unsplit(lrm_make, [lrm_start(1, 0), lrm_start(2, 0), lrm_start(3, 0)],
                                                   2 * HOUR, lambda k: lrm_end(k, 0, 2 * HOUR + 30 * MINUTE))
    assert split == [lrm_start(f, 0) for f in fired]
    assert multiset(unsplit) == multiset([lrm_start(1, 0), lrm_start(2, 0), lrm_start(3, 0)])


# == pseudo_window: PseudoWindow (apache/flink docs, learn-flink/event_driven.md) ================
# Intent: hourly tip sums per driver, (driverId, window end, sum) when the watermark passes the
# window's end (end = start + 1 h - 1); late fares (at or below the watermark) to "lateFares".

def pw_make(**options):
    return harness(pseudo_window, pseudo_window.PseudoWindow(pseudo_window.ONE_HOUR_MS), **options)


def fare(driver, t, tip):
    return Row(rideId=1, taxiId=driver, driverId=driver, startTime=t, paymentType="CASH", tip=tip, tolls=0.0,
               totalFare=10.0 + tip)


PW_FIRST = [fare(1, 10 * MINUTE, 5.0), fare(1, 20 * MINUTE, 3.0), fare(2, 30 * MINUTE, 4.0),
            fare(1, 70 * MINUTE, 2.0)]
PW_SECOND = [WM(HOUR - 1),  # the first hour closes for both drivers
             fare(1, 50 * MINUTE, 9.0),  # late: to the side output
             WM(2 * HOUR - 1)]  # the second hour closes for driver 1


def test_pseudo_window_hourly_tip_sums():
    h = feed(pw_make(), PW_FIRST + PW_SECOND)
    h.assert_output([(1, HOUR - 1, 8.0), (2, HOUR - 1, 4.0), (1, 2 * HOUR - 1, 2.0)])
    h.assert_side_output(pseudo_window.LATE_FARES, [fare(1, 50 * MINUTE, 9.0)])


def test_pseudo_window_snapshot_restore():
    assert restored(pw_make, PW_FIRST, PW_SECOND) == uninterrupted(pw_make, PW_FIRST, PW_SECOND)


def test_pseudo_window_interrupted_firing_is_safe():
    # a fare of the still-due driver in the next hour goes to the next window, not the due one
    tips = {1: 5.0, 2: 4.0, 3: 3.0}
    key, fired, split, unsplit = split_and_unsplit(pw_make, [fare(d, 10 * MINUTE, tip) for d, tip in tips.items()],
                                                   HOUR - 1, lambda k: fare(k, HOUR + 5 * MINUTE, 1.0), finish=[END])
    assert split[:2] == [(f, HOUR - 1, tips[f]) for f in fired]
    assert multiset(split) == multiset(unsplit) == multiset(
        [(d, HOUR - 1, tip) for d, tip in tips.items()] + [(key, 2 * HOUR - 1, 1.0)])


# == count_with_timeout_function: CountWithTimeoutFunction (apache/flink docs, process_function.md) =
# Intent: "maintains counts per key, and emits a key/count pair whenever a minute passes (in event
# time) without an update for that key".

def cwt_make(**options):
    return harness(count_with_timeout_function, count_with_timeout_function.CountWithTimeoutFunction, **options)


def cwt(key, t):
    return Row(f0=t, f1=key, f2="x")


CWT_FIRST = [cwt("a", 0), cwt("a", 10 * SECOND), cwt("b", 5 * SECOND), cwt("a", 20 * SECOND)]
CWT_SECOND = [WM(65 * SECOND),  # b: a minute without update since 5 s
              WM(80 * SECOND),  # a: a minute without update since 20 s
              cwt("a", 90 * SECOND), WM(150 * SECOND)]  # a again, a minute later: count 4


def test_count_with_timeout_function_emits_after_a_quiet_minute():
    h = feed(cwt_make(), CWT_FIRST + CWT_SECOND)
    h.assert_output([("b", 1), ("a", 3), ("a", 4)])


def test_count_with_timeout_function_snapshot_restore():
    assert restored(cwt_make, CWT_FIRST, CWT_SECOND) == uninterrupted(cwt_make, CWT_FIRST, CWT_SECOND)


def test_count_with_timeout_function_interrupted_firing_changes_the_output():
    # refused: the still-due key's record (60.001 s) moves lastModified on before its due timer
    # fires, which then finds itself outdated: the (key, 1) of the quiet minute 0-60 s is lost
    key, fired, split, unsplit = split_and_unsplit(cwt_make, [cwt("a", 0), cwt("b", 0), cwt("c", 0)], MINUTE,
                                                   lambda k: cwt(k, MINUTE + 1), finish=[END])
    assert split == [(f, 1) for f in fired] + [(key, 2)]
    assert unsplit == [(f, 1) for f in fired] + [(key, 1), (key, 2)]


# == event_time_timer_sum: Sum (apache/flink, pyflink/examples/datastream/event_time_timer.py) =====
# Intent: sums value[2] per key; each record registers a timer 2 s after its timestamp, and every
# timer emits (key, current sum).

def ets_make(**options):
    return harness(event_time_timer_sum, event_time_timer_sum.Sum, **options)


ETS_FIRST = [(1000, "Alice", 10.0), (1500, "Bob", 5.0)]
ETS_SECOND = [(2000, "Alice", 20.0),
              WM(3000),  # Alice's timer at 3 s: her sum so far
              WM(4000)]  # Bob's at 3.5 s, Alice's at 4 s


def test_event_time_timer_sum_emits_the_current_sum():
    h = feed(ets_make(), ETS_FIRST + ETS_SECOND)
    h.assert_output([("Alice", 30.0), ("Bob", 5.0), ("Alice", 30.0)])


def test_event_time_timer_sum_snapshot_restore():
    assert restored(ets_make, ETS_FIRST, ETS_SECOND) == uninterrupted(ets_make, ETS_FIRST, ETS_SECOND)


def test_event_time_timer_sum_interrupted_firing_changes_the_output():
    # refused: the still-due key's record (3.5 s) is added before its timer emits "the sum now"
    sums = {"Alice": 10.0, "Bob": 5.0, "Carol": 2.0}
    key, fired, split, unsplit = split_and_unsplit(ets_make, [(1000, name, v) for name, v in sums.items()], 3000,
                                                   lambda k: (3500, k, 7.0))
    assert split == [(f, sums[f]) for f in fired] + [(key, sums[key] + 7.0)]
    assert unsplit == [(f, sums[f]) for f in fired] + [(key, sums[key])]


# == payment_watermark_timer_function: MyProcessFunction (apache/flink e2e data_stream_job.py) ====
# Intent: echoes every payment; registers a timer at the current watermark + 1500 ms; every timer
# emits "On timer timestamp: <t>".

def pay_make(**options):
    return harness(payment_watermark_timer_function, payment_watermark_timer_function.MyProcessFunction,
                   **options)


def payment(order_id, t, amount):
    return Row(createTime=t, orderId=order_id, payAmount=amount, payPlatform=0, provinceId=1)


def echo(order_id, t, amount):
    return f"Current key: {order_id}, orderId: {order_id}, payAmount: {amount}, timestamp: {t}"


PAY_FIRST = [WM(1000), payment(1, 2000, 9.5)]  # timer at 1000 + 1500
PAY_SECOND = [payment(2, 2200, 20.0),  # timer at 1000 + 1500
              WM(3000)]


def test_payment_watermark_timer_function_echoes_and_fires_at_watermark_plus_1500():
    h = feed(pay_make(), PAY_FIRST + PAY_SECOND)
    h.assert_output([echo(1, 2000, 9.5), echo(2, 2200, 20.0), "On timer timestamp: 2500", "On timer timestamp: 2500"])


def test_payment_watermark_timer_function_restore_is_not_exactly_once():
    # refused by certify.same-output: the watermark is not checkpointed, so the payment after the
    # restore sees Long.MIN_VALUE and registers a timer at MIN_VALUE + 1500 instead of 2500
    whole = uninterrupted(pay_make, PAY_FIRST, PAY_SECOND)
    after_restore = restored(pay_make, PAY_FIRST, PAY_SECOND)
    assert whole == [echo(1, 2000, 9.5), echo(2, 2200, 20.0), "On timer timestamp: 2500", "On timer timestamp: 2500"]
    assert multiset(after_restore) == multiset([echo(1, 2000, 9.5), echo(2, 2200, 20.0), "On timer timestamp: 2500",
                                                f"On timer timestamp: {MIN_WATERMARK + 1500}"])
    assert multiset(after_restore) != multiset(whole)


def test_payment_watermark_timer_function_restore_before_a_watermark_is_exactly_once():
    first, second = [WM(1000), payment(1, 2000, 9.5), payment(2, 2200, 20.0)], [WM(3000)]
    assert restored(pay_make, first, second) == uninterrupted(pay_make, first, second)


def test_payment_watermark_timer_function_interrupted_firing():
    # not refused by certify.interruptible-timers: the payment echoed between the parts registers
    # its timer from the same watermark (3000 + 1500) either way; only the order of the echo and
    # the due timer's line differs, and certify compares outputs as multisets
    payments = [payment(1, 2000, 9.5), payment(2, 2200, 20.0), payment(3, 2300, 1.5)]
    key, fired, split, unsplit = split_and_unsplit(pay_make, [WM(1000)] + payments, 3000,
                                                   lambda k: payment(k, 3100, 1.0), finish=[END])
    echoes = [echo(1, 2000, 9.5), echo(2, 2200, 20.0), echo(3, 2300, 1.5)]
    assert unsplit == echoes + ["On timer timestamp: 2500"] * 3 + [echo(key, 3100, 1.0), "On timer timestamp: 4500"]
    assert split == echoes + ["On timer timestamp: 2500"] * 2 + [echo(key, 3100, 1.0), "On timer timestamp: 2500",
                                                                 "On timer timestamp: 4500"]
    assert multiset(split) == multiset(unsplit)


# == car_event_sort: SortFunction (ververica/flink-training-exercises, CarEventSort.java) =========
# Intent: emits each car's events once, in timestamp order, as the watermark passes them; late
# events are dropped.

def ces_make(**options):
    return harness(car_event_sort, car_event_sort.SortFunction, **options)


def car(car_id, n, t):
    return Row(id=f"{car_id}-{n}", carId=car_id, timestamp=t, longitude=0.0, latitude=0.0, consumption=0.0,
               speed=0.0, throttle=0.0, engineload=0.0)


CES_FIRST = [car("a", 1, 1000), car("a", 3, 3000), car("a", 2, 2000), car("b", 1, 1500)]
CES_SECOND = [WM(2500), car("a", 0, 500),  # late: dropped
              WM(4000)]


def per_car(events):
    cars = {}
    for event in events:
        cars.setdefault(event.carId, []).append(event.id)
    return cars


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "onTimer removes the emitted events from the queue it read but never calls update(): the car's "
    "next timer emits them again"))
def test_car_event_sort_emits_each_event_once_in_order():
    h = feed(ces_make(), CES_FIRST + CES_SECOND)
    assert per_car(h.extract_output_values()) == {"a": ["a-1", "a-2", "a-3"], "b": ["b-1"]}


def test_car_event_sort_snapshot_restore():
    # the queue's mutations outside update() are lost in both runs alike (the harness's state
    # hands out copies, as RocksDB does), so restoring changes nothing
    assert restored(ces_make, CES_FIRST, CES_SECOND) == uninterrupted(ces_make, CES_FIRST, CES_SECOND)


def test_car_event_sort_interrupted_firing():
    # a record between the parts: its event (1.5 s) is above the watermark, so the still-due
    # car's timer emits the same events either way
    key, fired, split, unsplit = split_and_unsplit(ces_make, [car("a", 1, 1000), car("b", 1, 1000),
                                                              car("c", 1, 1000)], 1000,
                                                   lambda k: car(k, 2, 1500), finish=[END])
    assert multiset(split) == multiset(unsplit)
    # refused by certify.interruptible-timers for the end of input arriving between the second and
    # third parts (README, docs/certify.md): the rest of the timers then fire at Long.MAX_VALUE
    # and emit, from state never written back, events again
    records = [car(c, n, n * 1000) for c in "abc" for n in (1, 2)]
    split_at_end = feed(ces_make(interruptible_timers=True), records)
    split_at_end.process_watermark(1000, stop_after=1).continue_firing(stop_after=1)
    split_at_end.end_input()
    unsplit_at_end = feed(ces_make(), records + [WM(1000), END])
    # the car whose 1 s timer was left for the end emits its 2 s event twice, not once
    assert len(split_at_end.extract_output_values()) == len(unsplit_at_end.extract_output_values()) + 1
    assert multiset(split_at_end.extract_output_values()) != multiset(unsplit_at_end.extract_output_values())


# == self_cleaning_temperature_alert_function (streaming-with-flink, chapter 7) ==================
# Intent: "emits an alert if the temperature measurement of a sensor changed by more than a
# configured threshold [1.5] compared to the last reading. The function removes the state of a
# sensor if it did not receive an update within 1 hour." The module's docstring: an empty state
# reads as 0.0 (Scala unboxing), "so the first reading of a sensor is compared with 0.0".

def scta_make(**options):
    cls = self_cleaning_temperature_alert_function.SelfCleaningTemperatureAlertFunction
    return harness(self_cleaning_temperature_alert_function, cls(*self_cleaning_temperature_alert_function.ARGS),
                   **options)


def reading(sensor, t, temperature):
    return Row(id=sensor, timestamp=t, temperature=temperature)


SCTA_FIRST = [reading("s1", 0, 1.0), reading("s1", SECOND, 2.0), reading("s2", 0, 1.2)]
SCTA_SECOND = [reading("s1", 2 * SECOND, 4.0),  # changed by 2.0 > 1.5: alert
               WM(HOUR + 2 * SECOND),  # an hour without update: both sensors' state removed
               reading("s1", 2 * HOUR, 1.0)]  # a fresh start: compared with 0.0, no alert


def test_self_cleaning_temperature_alert_function_alerts_and_cleans_up():
    h = feed(scta_make(), SCTA_FIRST + SCTA_SECOND[:2])
    h.assert_output([("s1", 4.0, 2.0)])
    assert h.num_keyed_state_entries() == 0 and h.pending_timers() == []
    feed(h, SCTA_SECOND[2:])
    h.assert_output([("s1", 4.0, 2.0)])  # 1.0 vs the cleared state's 0.0; vs the old 4.0 it would alert


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "an empty ValueState[Double] reads as 0.0 (Scala unboxing): a sensor's first reading is compared "
    "with 0.0 and alerts"))
def test_self_cleaning_temperature_alert_function_first_reading_raises_no_alert():
    h = feed(scta_make(), [reading("s1", 0, 20.0), reading("s1", SECOND, 20.5)])
    h.assert_output([])  # no last reading to compare 20.0 with; 20.5 is within 1.5 of it


def test_self_cleaning_temperature_alert_function_snapshot_restore():
    assert restored(scta_make, SCTA_FIRST, SCTA_SECOND) == uninterrupted(scta_make, SCTA_FIRST, SCTA_SECOND)


def test_self_cleaning_temperature_alert_function_interrupted_firing_changes_the_output():
    # refused: the still-due sensor's reading (1 h + 1 ms) is compared with its old temperature
    # (1.0, no alert) and deletes the due cleanup timer; unsplit the state is cleared first and
    # 2.0 is compared with 0.0 (alert)
    key, fired, split, unsplit = split_and_unsplit(scta_make, [reading(s, 0, 1.0) for s in ("s1", "s2", "s3")],
                                                   HOUR, lambda k: reading(k, HOUR + 1, 2.0))
    assert split == []
    assert unsplit == [(key, 2.0, 2.0)]


# == fraud_detector: FraudDetector (apache/flink docs, try-flink/datastream.md) ==================
# Intent: an alert when a transaction under $1 is followed within one minute (processing time) by
# one over $500 on the same account.

def fd_make(**options):
    return harness(fraud_detector, fraud_detector.FraudDetector, **options)


def tx(account, amount):
    return Row(accountId=account, timestamp=0, amount=amount)


def alert(account):
    a = fraud_detector.Alert()
    a.set_id(account)
    return a


FD_FIRST = [PT(0), tx(1, 0.5), PT(30 * SECOND), tx(2, 0.5)]
FD_SECOND = [tx(1, 600.0),  # 30 s after the small one: alert
             PT(90 * SECOND),  # account 2's flag expired at 90 s
             tx(2, 600.0),  # no alert
             tx(3, 0.5), tx(3, 100.0), tx(3, 600.0)]  # a normal transaction between: no alert


def test_fraud_detector_small_then_large_within_a_minute():
    h = feed(fd_make(), FD_FIRST + FD_SECOND)
    h.assert_output([alert(1)])
    assert h.pending_timers() == [] and h.num_keyed_state_entries() == 0


def test_fraud_detector_flag_timer_is_a_processing_time_timer():
    h = feed(fd_make(), [PT(1000), tx(7, 0.2)])
    assert h.pending_timers() == [Timer(1000 + MINUTE, 7, "processing")]
    h.set_processing_time(1000 + MINUTE)
    assert h.pending_timers() == [] and h.state(7) == {}


def test_fraud_detector_snapshot_restore():
    assert restored(fd_make, FD_FIRST, FD_SECOND) == uninterrupted(fd_make, FD_FIRST, FD_SECOND) == [alert(1)]


def test_fraud_detector_restored_timer_fires_when_the_clock_has_passed_it():
    # README: "Restored processing-time timers fire immediately after recovery"
    h = feed(fd_make(), [PT(0), tx(1, 0.5)])
    snapshot = h.snapshot()
    late = fd_make(processing_time=2 * MINUTE)
    late.restore(snapshot)
    # a restored timer that is already due fires at once, as a task's clock fires it
    assert late.pending_timers() == [] and late.state(1) == {}
    late.process_element(tx(1, 600.0))
    late.assert_output([])


def test_harness_fires_every_due_processing_time_timer_in_one_advance():
    h = feed(fd_make(), [PT(0), tx(1, 0.5), PT(30 * SECOND), tx(2, 0.5)])  # timers at 60 s and 90 s
    h.set_processing_time(90 * SECOND)  # fires 60 s, whose mail then registers 90 s with the clock
    assert h.pending_timers() == []  # Flink's harness fires both in one setProcessingTime


# == temp_increase_alert_function: TempIncreaseAlertFunction (streaming-with-flink, chapter 6) ====
# Intent: "Emits a warning if the temperature of a sensor monotonically increases for 1 second (in
# processing time)."

def tia_make(**options):
    return harness(temp_increase_alert_function, temp_increase_alert_function.TempIncreaseAlertFunction, **options)


def warning(sensor):
    return f"Temperature of sensor '{sensor}' monotonically increased for 1 second."


TIA_FIRST = [PT(0), reading("s1", 0, 20.0), reading("s2", 0, 20.0),
             PT(100), reading("s1", 0, 21.0), reading("s2", 0, 21.0)]  # both rise: timers at 1100
TIA_SECOND = [PT(200), reading("s1", 0, 22.0),  # s1 still rising
              PT(500), reading("s2", 0, 19.0),  # s2 fell: its timer is deleted
              PT(1100)]


def test_temp_increase_alert_function_warns_after_a_second_of_rising():
    h = feed(tia_make(), TIA_FIRST + TIA_SECOND)
    h.assert_output([warning("s1")])


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "0.0 is the 'no previous reading' sentinel (Scala unboxing): a rise from a reading of exactly 0.0"
    " starts no timer"))
def test_temp_increase_alert_function_rise_from_zero_degrees_warns():
    h = feed(tia_make(), [PT(0), reading("s3", 0, 0.0), PT(100), reading("s3", 0, 1.0), PT(1100)])
    h.assert_output([warning("s3")])


def test_temp_increase_alert_function_snapshot_restore():
    assert restored(tia_make, TIA_FIRST, TIA_SECOND) == uninterrupted(tia_make, TIA_FIRST, TIA_SECOND) \
        == [warning("s1")]


# == sensor_aggregation_processing: SensorAggregationProcessing (ververica/flink-training) =======
# Intent: counts each sensor's measurements; a timer at the start of the measurement's minute
# (registered only if that is after the watermark) reports the count so far; late measurements go
# to the side output "late-data".

def sap_make(**options):
    return harness(sensor_aggregation_processing, sensor_aggregation_processing.SensorAggregationProcessing,
                   **options)


def measurement(sensor, t):
    return Row(sensorId=sensor, value=1.0, location="les Escaldes", measurementInformation="x", timestamp=t)


def report(sensor, count, minute):
    return Row(sensorId=sensor, count=count, average=0.0, latestUpdate=minute)


SAP_FIRST = [measurement(1, 61_000), measurement(1, 62_000), measurement(2, 65_000)]
SAP_SECOND = [WM(60_000),  # the minute-60 s timers report
              measurement(1, 59_000),  # late
              measurement(1, 125_000), WM(120_000)]


def test_sensor_aggregation_processing_reports_counts_per_minute():
    h = feed(sap_make(), SAP_FIRST + SAP_SECOND)
    h.assert_output([report(1, 2, 60_000), report(2, 1, 60_000), report(1, 3, 120_000)])
    h.assert_side_output(sensor_aggregation_processing.LATE_DATA_TAG, [measurement(1, 59_000)])


def test_sensor_aggregation_processing_snapshot_before_a_watermark_restores_exactly():
    assert restored(sap_make, SAP_FIRST, SAP_SECOND) == uninterrupted(sap_make, SAP_FIRST, SAP_SECOND)


def test_sensor_aggregation_processing_restore_is_not_exactly_once():
    # verdicts_written_first.json: after a restore the watermark is Long.MIN_VALUE, so the
    # on-time record at 61.5 s registers the minute-60 s timer again: an extra report
    first = [measurement(1, 61_000), WM(60_750)]
    second = [measurement(1, 61_500), WM(61_250)]
    assert uninterrupted(sap_make, first, second) == [report(1, 1, 60_000)]
    assert restored(sap_make, first, second) == [report(1, 1, 60_000), report(1, 2, 60_000)]


def test_sensor_aggregation_processing_interrupted_firing_changes_the_output():
    # refused: the still-due sensor's measurement (60.5 s) is counted before its timer reports
    key, fired, split, unsplit = split_and_unsplit(sap_make, [measurement(s, 60_000 + s) for s in (1, 2, 3)],
                                                   60_000, lambda k: measurement(k, 60_500))
    assert split == [report(f, 1, 60_000) for f in fired] + [report(key, 2, 60_000)]
    assert unsplit == [report(f, 1, 60_000) for f in fired] + [report(key, 1, 60_000)]


# == start_end_duration: StartEndDuration (apache/flink-web, flink-applications.md) ===============
# Intent: "When a START event is received, the function remembers its timestamp in state and
# registers a timer in four hours. If an END event is received before the timer fires, the
# function computes the duration between END and START event, clears the state, and returns the
# value. Otherwise, the timer just fires and clears the state."

def sed_make(**options):
    return harness(start_end_duration, start_end_duration.StartEndDuration, **options)


def se(key, kind, t):
    return Row(f0=key, f1=kind, ts=t)


H4 = start_end_duration.FOUR_HOURS_MS
SED_FIRST = [se("a", "START", 0), se("b", "START", 0), se("a", "END", HOUR)]
SED_SECOND = [WM(H4),  # b's timer: b's START forgotten
              se("b", "END", H4 + 1),  # no START any more: nothing
              se("c", "END", H4 + 2)]  # never started: nothing


def test_start_end_duration_matches_start_and_end():
    h = feed(sed_make(), SED_FIRST + SED_SECOND)
    h.assert_output([("a", HOUR)])
    assert h.num_keyed_state_entries() == 0


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "a START's timer is never deleted: the first START's timer clears a later START of the same key "
    "before its END"))
def test_start_end_duration_second_start_of_a_key_is_matched():
    h = feed(sed_make(), [se("a", "START", 0), se("a", "END", HOUR), se("a", "START", 3 * HOUR),
                          WM(H4), se("a", "END", 5 * HOUR)])
    h.assert_output([("a", HOUR), ("a", 2 * HOUR)])


def test_start_end_duration_snapshot_restore():
    assert restored(sed_make, SED_FIRST, SED_SECOND) == uninterrupted(sed_make, SED_FIRST, SED_SECOND)


def test_start_end_duration_interrupted_firing_changes_the_output():
    # refused: the still-due key's END runs before its 4 h timer and still finds the START
    key, fired, split, unsplit = split_and_unsplit(sed_make, [se(k, "START", 0) for k in "abc"], H4,
                                                   lambda k: se(k, "END", H4 + 1))
    assert split == [(key, H4 + 1)]
    assert unsplit == []


# == count_news_clicks: CountNewsClicksProcessFunction (apache/flink dsv2 CountNewsClicks.java) ===
# Intent: "count the number of clicks on each news at 1 hour after news publication"; clicks that
# arrive before their PUBLISH wait in a list; a click-timer (click + 1 h) clears a news whose
# PUBLISH never came; "there is only one event of type PUBLISH for each news".

def cnc_make(**options):
    return harness(count_news_clicks, count_news_clicks.CountNewsClicksProcessFunction, **options)


B = count_news_clicks.BEGINNING


def news(news_id, t, kind):
    return Row(newsId=news_id, timestamp=B + t, type=kind)


def clicks(news_id, n):
    return Row(newsId=news_id, clicks=n)


PUB, CLK = count_news_clicks.PUBLISH, count_news_clicks.CLICK
CNC_FIRST = [news(1, 0, PUB), news(1, 10 * MINUTE, CLK), news(3, 5 * MINUTE, CLK),  # news 3: click before PUBLISH
             news(1, 50 * MINUTE, CLK), news(2, 5 * MINUTE, CLK)]  # news 2: never published
CNC_SECOND = [news(3, 0, PUB),  # the pending click (5 min) is within its hour
              news(1, 70 * MINUTE, CLK),  # after news 1's hour: not counted
              WM(B + 2 * HOUR)]


def test_count_news_clicks_counts_clicks_in_the_hour_after_publication():
    h = feed(cnc_make(), CNC_FIRST + CNC_SECOND)
    h.assert_output([clicks(1, 2), clicks(3, 1)])  # both at B + 1 h (news 2 is cleared without output)
    assert h.num_keyed_state_entries() == 0


def test_count_news_clicks_snapshot_restore():
    assert restored(cnc_make, CNC_FIRST, CNC_SECOND) == uninterrupted(cnc_make, CNC_FIRST, CNC_SECOND)


def test_count_news_clicks_interrupted_firing_changes_the_output():
    # refused (verdicts_written_first.json): the PUBLISH of the still-due news runs before its
    # pending click's timer, which then reports the click; unsplit the timer clears the click first
    key, fired, split, unsplit = split_and_unsplit(cnc_make, [news(n, 0, CLK) for n in (1, 2, 3)], B + HOUR,
                                                   lambda k: news(k, HOUR + 1, PUB), finish=[END])
    assert split == [clicks(key, 1)]
    assert unsplit == [clicks(key, 0)]


# == sorting_job_coalesced_timer: SortFunction (ververica/lab-flink-latency) =====================
# Intent: buffers each sensor's non-late events, timers coalesced to the next 100 ms; a timer emits
# the buffered events at or below the watermark, in timestamp order.

def sjc_make(**options):
    return harness(sorting_job_coalesced_timer, sorting_job_coalesced_timer.SortFunction(100), **options)


def sm(sensor, t):
    return (Row(sensorId=sensor, value=float(t), location="Berlin", measurementInformation=""), t)


SJC_FIRST = [sm(0, 250), sm(0, 180), sm(0, 120), sm(1, 130)]
SJC_SECOND = [WM(200),  # the 200 ms timers: 120, 180 of sensor 0 and 130 of sensor 1
              sm(0, 150),  # late: dropped
              WM(300)]  # 250


def test_sorting_job_coalesced_timer_emits_in_timestamp_order():
    h = feed(sjc_make(), SJC_FIRST + SJC_SECOND)
    h.assert_output([sm(0, 120), sm(0, 180), sm(1, 130), sm(0, 250)])  # the 200 ms timers' order across sensors is free
    assert [e for e in h.extract_output_values() if e[0].sensorId == 0] == [sm(0, 120), sm(0, 180), sm(0, 250)]


def test_sorting_job_coalesced_timer_snapshot_restore():
    # the same multiset, each sensor in the same order (the restored timer heap fires the two
    # sensors' 200 ms timers in another order, which Flink leaves open too)
    after_restore = restored(sjc_make, SJC_FIRST, SJC_SECOND)
    whole = uninterrupted(sjc_make, SJC_FIRST, SJC_SECOND)
    assert multiset(after_restore) == multiset(whole)
    for sensor in (0, 1):
        assert [e for e in after_restore if e[0].sensorId == sensor] == [e for e in whole if e[0].sensorId == sensor]


def test_sorting_job_coalesced_timer_interrupted_firing_is_safe():
    key, fired, split, unsplit = split_and_unsplit(sjc_make, [sm(s, 150) for s in (0, 1, 2)], 200,
                                                   lambda k: sm(k, 250), finish=[END])
    assert multiset(split) == multiset(unsplit) == multiset([sm(0, 150), sm(1, 150), sm(2, 150), sm(key, 250)])


# == rocksdb_tuning_job1: MyProcessFunction1 (ververica/flink-training, RocksDBTuningJob1.java) ====
# Intent: "calculates the aggregated value with a decaying factor of 0.5 for events in the last N
# [5] timestamps": at each event's timestamp it emits the event with value v(t) + 0.5 v(t-1) +
# 0.25 v(t-2) + ... + 0.5^5 v(t-5); an entry is removed 5 ms after its timestamp.

def rdb_make(**options):
    return harness(rocksdb_tuning_job1, rocksdb_tuning_job1.MyProcessFunction1(5), **options)


def rm(sensor, t, value):
    return (Row(sensorId=sensor, value=value, location="les Escaldes", measurementInformation=""), t)


RDB_FIRST = [rm(0, 10, 8.0), rm(0, 12, 4.0)]
RDB_SECOND = [rm(0, 20, 2.0), rm(1, 11, 1.0), WM(25)]


def test_rocksdb_tuning_job1_decaying_aggregate():
    h = feed(rdb_make(), RDB_FIRST + RDB_SECOND)
    h.assert_output([rm(0, 10, 8.0),
                     rm(1, 11, 1.0),
                     rm(0, 12, 4.0 + 0.25 * 8.0),  # 10 is 2 ms before 12
                     rm(0, 20, 2.0)])  # nothing in 15-19
    assert h.pending_timers() == [] and h.num_keyed_state_entries() == 0


def test_rocksdb_tuning_job1_snapshot_restore():
    assert restored(rdb_make, RDB_FIRST, RDB_SECOND) == uninterrupted(rdb_make, RDB_FIRST, RDB_SECOND)


def test_rocksdb_tuning_job1_interrupted_firing_is_safe():
    values = {0: 8.0, 1: 4.0, 2: 16.0}
    key, fired, split, unsplit = split_and_unsplit(rdb_make, [rm(s, 10, v) for s, v in values.items()], 10,
                                                   lambda k: rm(k, 12, 2.0), finish=[END])
    assert multiset(split) == multiset(unsplit) == multiset(
        [rm(s, 10, v) for s, v in values.items()] + [rm(key, 12, 2.0 + 0.25 * values[key])])


# == top_n_hot_pages: TopNProcessFunction (zhisheng17/flink-learning) ===========================
# Intent: keyed by window end; collects that window's (page|count) results and, at window end + 1,
# emits the top 10 pages by count (descending; equal counts keep arrival order) and clears them.

def tn_make(**options):
    return harness(top_n_hot_pages, top_n_hot_pages.TopNProcessFunction, **options)


W1, W2, W3 = 5 * MINUTE, 6 * MINUTE, 7 * MINUTE  # window ends, a slide apart


def top(window_end, *ranked):
    return Row(rankName="热门页面 Top 10", windowEnd=window_end,
               items=[Row(rank=i + 1, name=name, count=count) for i, (name, count) in enumerate(ranked)])


TN_FIRST = [("/a|5", W1), ("/b|9", W1)] + [(f"/p{i}|{i}", W2) for i in range(1, 13)]
TN_SECOND = [("/c|7", W1), WM(W1 + 1), ("/a|30", W2), WM(W2 + 1)]


def test_top_n_hot_pages_ranks_each_window():
    h = feed(tn_make(), TN_FIRST + TN_SECOND)
    h.assert_output([top(W1, ("/b", 9), ("/c", 7), ("/a", 5)),
                     top(W2, ("/a", 30), *[(f"/p{i}", i) for i in range(12, 3, -1)])])  # the top 10 of 13
    assert h.num_keyed_state_entries() == 0


def test_top_n_hot_pages_snapshot_restore():
    assert restored(tn_make, TN_FIRST, TN_SECOND) == uninterrupted(tn_make, TN_FIRST, TN_SECOND)


def test_top_n_hot_pages_interrupted_firing_is_safe_for_its_input():
    # its input is a window operator's results, never behind the watermark (LATE = False): between
    # the parts of the firing at W3 + 1 only a later window's result can come, a key not due
    records = [("/a|1", W1), ("/b|2", W2), ("/c|3", W3)]
    h = feed(tn_make(interruptible_timers=True), records)
    h.process_watermark(W3 + 1, stop_after=1).continue_firing(stop_after=1)
    assert [t.key for t in h.pending_timers()] == [W3]  # the window ends' timers fire in time order
    h.process_element(("/d|4", W3 + MINUTE))
    h.continue_firing().end_input()
    unsplit = feed(tn_make(), records + [WM(W3 + 1), ("/d|4", W3 + MINUTE), END])
    assert h.extract_output_values() == unsplit.extract_output_values() == [
        top(W1, ("/a", 1)), top(W2, ("/b", 2)), top(W3, ("/c", 3)), top(W3 + MINUTE, ("/d", 4))]


def test_top_n_hot_pages_late_result_depends_on_the_split():
    # the README's late-records finding (input this operator never gets from its window): a late
    # result of the still-due window joins that window's ranking when the firing is split; unsplit
    # it registers a timer behind the watermark and gets a ranking of its own at the next one
    key, fired, split, unsplit = split_and_unsplit(tn_make, [("/a|1", W1), ("/b|2", W2), ("/c|3", W3)], W3 + 1,
                                                   lambda k: ("/late|9", k), finish=[END])
    assert (fired, key) == ([W1, W2], W3)  # window ends' timers fire in time order
    assert split == [top(W1, ("/a", 1)), top(W2, ("/b", 2)), top(W3, ("/late", 9), ("/c", 3))]
    assert unsplit == [top(W1, ("/a", 1)), top(W2, ("/b", 2)), top(W3, ("/c", 3)), top(W3, ("/late", 9))]


# == latest_transaction_function: LatestTransactionFunction (confluentinc/flink-cookbook) ========
# Intent: forwards a customer's transaction when it is the customer's first or later than the one
# remembered; older (or equally old) ones are dropped. No timers.

def lt_make(**options):
    return harness(latest_transaction_function, latest_transaction_function.LatestTransactionFunction, **options)


def transaction(customer, hours, t_id):
    return Row(t_time=latest_transaction_function.BEGINNING + hours * HOUR, t_id=t_id, t_customer_id=customer,
               t_amount=1)


LT_FIRST = [transaction(0, 1, 1), transaction(1, 2, 2), transaction(0, 3, 3)]
LT_SECOND = [transaction(0, 2, 4),  # older than 3 h: dropped
             transaction(0, 3, 5),  # as old as 3 h: dropped
             transaction(1, 5, 6)]


def test_latest_transaction_function_forwards_only_newer_transactions():
    h = feed(lt_make(), LT_FIRST + LT_SECOND)
    h.assert_output([transaction(0, 1, 1), transaction(1, 2, 2), transaction(0, 3, 3), transaction(1, 5, 6)])
    assert h.state(0) == {"latest transaction": transaction(0, 3, 3)}


def test_latest_transaction_function_snapshot_restore():
    assert restored(lt_make, LT_FIRST, LT_SECOND) == uninterrupted(lt_make, LT_FIRST, LT_SECOND)


# == usage_alerting_function: UsageAlertingFunction (alpinegizmo/flink-mobile-data-usage) ========
# Intent: sums the bytes of each account and month; the first record that takes the sum above 90 %
# of the quota emits one warning ("WARNING: as of <ts> account <a> has used <total> out of <quota>
# bytes"); later records of that account-month emit nothing.

def ua_make(**options):
    return harness(usage_alerting_function, usage_alerting_function.UsageAlertingFunction, **options)


OCT_31 = usage_alerting_function.BEGINNING + 30 * usage_alerting_function.MILLISECONDS_PER_DAY  # 2021-10-31


def usage(account, ts, used, quota=1000):
    month = 10 if ts < OCT_31 + usage_alerting_function.MILLISECONDS_PER_DAY else 11
    return Row(ts=ts, account=account, bytesUsed=used, quota=quota, billingYear=2021, billingMonth=month)


UA_FIRST = [usage("000001", OCT_31, 300), usage("000001", OCT_31 + MINUTE, 400)]
UA_SECOND = [usage("000001", OCT_31 + 2 * MINUTE, 300),  # 1000 > 900: the warning
             usage("000001", OCT_31 + 3 * MINUTE, 100),  # already warned
             usage("000001", OCT_31 + 25 * HOUR, 500),  # November: a new sum
             usage("000002", OCT_31, 950)]  # another account, over at once


def test_usage_alerting_function_warns_once_at_90_percent():
    h = feed(ua_make(), UA_FIRST + UA_SECOND)
    h.assert_output(["WARNING: as of 2021-10-31T00:02:00Z account 000001 has used 1000 out of 1000 bytes",
                     "WARNING: as of 2021-10-31T00:00:00Z account 000002 has used 950 out of 1000 bytes"])


def test_usage_alerting_function_snapshot_restore():
    assert restored(ua_make, UA_FIRST, UA_SECOND) == uninterrupted(ua_make, UA_FIRST, UA_SECOND)


# == rescale: parallelism 2 -> 1 ================================================================

def test_rescale_pseudo_window_and_start_end_duration_from_two_subtasks_to_one():
    # pseudo_window: drivers on subtask 0 and 1 of 2
    drivers = {testing.subtask_for_key(d, 2): d for d in range(2013000000, 2013000010)}
    d0, d1 = drivers[0], drivers[1]
    snapshots = []
    for subtask, driver in ((0, d0), (1, d1)):
        h = pw_make(parallelism=2, subtask=subtask)
        feed(h, [fare(driver, 10 * MINUTE, 5.0), fare(driver, 70 * MINUTE, 1.0)])
        assert h.extract_output_values() == []
        snapshots.append(h.snapshot())
    merged = pw_make()
    merged.restore(snapshots, parallelism=1)
    assert multiset(merged.pending_timers()) == multiset(
        [Timer(HOUR - 1, d, "event") for d in (d0, d1)] + [Timer(2 * HOUR - 1, d, "event") for d in (d0, d1)])
    assert merged.state(d0) == merged.state(d1) == {"sumOfTips": {HOUR - 1: 5.0, 2 * HOUR - 1: 1.0}}
    feed(merged, [fare(d0, 20 * MINUTE, 2.0), WM(HOUR - 1), WM(2 * HOUR - 1)])
    merged.assert_output([(d0, HOUR - 1, 7.0), (d1, HOUR - 1, 5.0), (d0, 2 * HOUR - 1, 1.0), (d1, 2 * HOUR - 1, 1.0)])

    # start_end_duration: a START on each subtask, matched or timed out after the merge
    keys = {testing.subtask_for_key(k, 2): k for k in "abcdef"}
    k0, k1 = keys[0], keys[1]
    snapshots = []
    for subtask, key in ((0, k0), (1, k1)):
        h = sed_make(parallelism=2, subtask=subtask)
        with pytest.raises(testing.HarnessError, match="subtask"):
            h.process_element(se(keys[1 - subtask], "START", 0))  # a key of the other subtask
        snapshots.append(feed(h, [se(key, "START", 0)]).snapshot())
    merged = sed_make()
    merged.restore(snapshots, parallelism=1)
    assert multiset(merged.pending_timers()) == multiset([Timer(H4, k0, "event"), Timer(H4, k1, "event")])
    assert merged.state(k0) == merged.state(k1) == {"startTime": 0}
    feed(merged, [se(k0, "END", HOUR), WM(H4), se(k1, "END", H4 + 1)])
    merged.assert_output([(k0, HOUR)])
    assert merged.num_keyed_state_entries() == 0 and merged.pending_timers() == []

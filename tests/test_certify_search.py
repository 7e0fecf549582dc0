"""Where certify's burst search looks (properties/certify_burst.py, certify_probes.py): watermarks
at due timers' times, the operator-alone probe with a record or the end of input inside a split
firing, and corpus verdicts that do not depend on the seed."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from streamproof.properties import certify as cert
from streamproof.properties import certify_burst as burst
from streamproof.properties import certify_input as ci
from streamproof.properties import certify_probes as probes
from streamproof.properties.explore import explore

REPO = Path(__file__).resolve().parent.parent
OPS = "tests.certify_user_ops"
REAL = "examples.operators.real."
CORPUS = json.loads((REPO / "examples" / "operators" / "real" / "corpus.json").read_text())
FOUR_HOURS = 4 * 3_600_000


def test_watermarks_at_due_timers_times_besides_the_drawn_bounds():
    timers = [(10, "a"), (20, "b"), (30, "c"), (40, "a"), (50, "b")]
    marks = burst._watermarks(timers, 0, 100, 0)
    assert marks[0] == 99  # the drawn bound's watermark first
    assert 30 in marks and 50 in marks  # the third timer's time (three due), the last's
    assert all(sum(1 for ts, _ in timers if ts <= m) >= 3 for m in marks[1:])
    assert burst._watermarks(timers, 35, 100, 0) == [99, 50]  # not before the first record: 40 (two due), 50
    assert burst._watermarks(timers, 60, 100, 0) == [99]
    assert burst._watermarks([(-(2 ** 63) + 1500, "a")] * 3, 0, 100, 0) == [99]


def test_watermark_fitted_to_a_later_record_of_a_due_key():
    timers = [(10 * i, repr(k)) for i, k in enumerate("abcefg", 1)] + [(200, "'d'")]
    assert burst._watermarks(timers, 0, 100, 90) == [9, 30, 40, 60]  # the bound's, the third, middle, last
    # f's timer (50) fires fifth: a watermark there has f's record at 95 on time right after it
    assert burst._watermarks(timers, 0, 100, 90, [(None, "f", 95)]) == [9, 30, 40, 60, 50]
    assert burst._watermarks(timers, 0, 100, 90, [(None, "a", 96), (None, "f", 40)]) == [9, 30, 40, 60]  # none fits


def _drawn_spread_and_plain(strategy, examples=300):
    """Values drawn by ``strategy`` as it is and within :func:`ci._spread_draws` (derandomized)."""
    from hypothesis import HealthCheck, given, settings, strategies as st

    drawn = {"plain": [], "spread": []}

    @st.composite
    def both(draw):
        plain = draw(strategy)
        with ci._spread_draws(draw):
            return plain, draw(strategy)

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(both())
    def run(pair):
        drawn["plain"].append(pair[0])
        drawn["spread"].append(pair[1])
    run()
    return drawn


def test_spread_draws_keep_values_in_the_strategys_range_and_spread_them():
    from hypothesis import strategies as st

    hour = 3_600_000
    drawn = _drawn_spread_and_plain(st.tuples(st.integers(0, 3 * hour), st.integers(1, 3), st.booleans(),
                                              st.lists(st.integers(0, 9), max_size=30)))
    for kind in ("plain", "spread"):
        assert all(0 <= ts <= 3 * hour and 1 <= k <= 3 and len(xs) <= 30 for ts, k, _, xs in drawn[kind])
    late = {kind: sum(ts > hour for ts, *_ in drawn[kind]) / len(drawn[kind]) for kind in drawn}
    # uniform would be 2/3; Hypothesis also replays the simplest choices (part 0) in many examples
    assert late["spread"] > 0.25 and late["spread"] > 3 * late["plain"], late
    size = {kind: sum(len(xs) for *_, xs in drawn[kind]) / len(drawn[kind]) for kind in drawn}
    assert size["spread"] > 1.5 * size["plain"], size
    # narrow integers and booleans are drawn as Hypothesis draws them
    assert {k for _, k, _, _ in drawn["spread"]} == {1, 2, 3} and {b for *_, b, _ in drawn["spread"]} == {True, False}


def _start_end():
    from examples.operators.real.start_end_duration import Row
    subject = cert.load(REAL + "start_end_duration:StartEndDuration")
    event = lambda key, kind, ts: (Row(f0=key, f1=kind, ts=ts), key, ts)  # noqa: E731
    ordered = [event("a", "START", 0), event("b", "START", 1), event("c", "START", 2)]
    return subject.name, ordered, event


def test_a_record_of_the_key_whose_timer_fires_third_changes_a_split_firing():
    operator, ordered, event = _start_end()
    watermark = 2 + FOUR_HOURS
    assert probes.splits_change_output(operator, ordered, watermark, 2, [event("c", "END", watermark + 1)])
    # a's timer fires first, before any record can run: no difference
    assert not probes.splits_change_output(operator, ordered, watermark, 2, [event("a", "END", watermark + 1)])
    # behind the watermark: a late record's difference is a finding, never a refusal
    assert not probes.splits_change_output(operator, ordered, watermark, 2, [event("c", "END", watermark)])


def test_a_watermark_at_a_timers_time_reaches_the_shape_small_timestamps_miss():
    """Records a few ms apart and a four-hour timer: no bound the scenario draws makes the timers
    due while a record of their key is still on time; a watermark at the third timer's time does
    (the bound it implies is what the scenario's generator then uses)."""
    operator, ordered, event = _start_end()
    ordered = ordered + [event("b", "START", FOUR_HOURS + 10)]
    pool = [event("c", "END", FOUR_HOURS + 5)]
    hit, _, planned, _, choices, _ = burst._burst_plan(operator, ordered, 0, False, pool)
    assert hit
    point, watermark, first = choices[0]
    assert watermark == 2 + FOUR_HOURS and first is not None
    assert ci._bound(planned, point, watermark) == FOUR_HOURS + 10 - watermark - 1


def test_the_end_of_input_inside_a_split_firing():
    """CarEventSort never writes back what on_timer emits: the end of input's watermark arriving
    between two parts fires the rest with its own time and emits those events again."""
    from examples.operators.real.car_event_sort import Row
    subject = cert.load(REAL + "car_event_sort:SortFunction")

    def event(car, ts):
        row = Row(id=f"{car}-{ts}", carId=car, timestamp=ts, longitude=-122.1, latitude=37.5, consumption=1.0,
                  speed=1.0, throttle=1.0, engineload=1.0)
        return row, car, ts
    ordered = [event("car-a", 10), event("car-b", 20), event("car-a", 25), event("car-c", 30), event("car-c", 40)]
    assert probes.splits_change_output(subject.name, ordered, 30, 4, [], end=True)
    assert not probes.splits_change_output(subject.name, ordered, 30, 4, [])  # no record after it: the same output
    # a safe operator: the same shape changes nothing
    pseudo = cert.load(REAL + "pseudo_window:PseudoWindow")
    from examples.operators.real.pseudo_window import ONE_HOUR_MS
    from examples.operators.real.pseudo_window import Row as Fare

    def fare(driver, ts):
        return Fare(rideId=1, taxiId=driver, driverId=driver, startTime=ts, paymentType="CASH", tip=1.0, tolls=0.0,
                    totalFare=11.0), driver, ts
    fares = [fare(1, 10), fare(2, 20), fare(3, 30), fare(1, ONE_HOUR_MS + 5)]
    assert not probes.splits_change_output(pseudo.name, fares, ONE_HOUR_MS - 1, 3, [], end=True)


SPLIT_REFUSED = [e for e in CORPUS if not e.get("known_miss")
                 and "certify.interruptible-timers" in ([e["refused_by"]] if isinstance(e.get("refused_by"), str)
                                                        else e.get("refused_by") or [])]


@pytest.mark.parametrize("entry", SPLIT_REFUSED, ids=lambda e: e["file"][:-3])
def test_interruptible_timer_refusals_do_not_depend_on_the_seed(entry, monkeypatch):
    """Seeds 1-4 at the corpus's example counts (test_corpus.py asserts seed 0): refused at each."""
    monkeypatch.chdir(REPO)
    subject = cert.load(entry["operator"], stream=entry["stream"]) if entry.get("stream") else cert.load(entry["operator"])
    prop = next(p for p in cert.properties_for(subject) if p.name == "certify.interruptible-timers")
    found = {seed: explore(prop, entry["examples"], seed=seed, shrink=False) for seed in range(1, 5)}
    assert all(not x.holds for x in found.values()), {s: x.examples for s, x in found.items() if x.holds}


RESTORE_REFUSED = [e for e in CORPUS if "certify.same-output" in ([e["refused_by"]] if isinstance(e.get("refused_by"), str)
                                                                 else e.get("refused_by") or [])]
SEARCH_REFUSALS = [(e, "certify.interruptible-timers", "same-output-with-split-firings") for e in SPLIT_REFUSED] + \
                  [(e, "certify.same-output", "same-output-as-a-failure-free-run") for e in RESTORE_REFUSED]


@pytest.mark.parametrize("entry, prop_name, invariant", SEARCH_REFUSALS,
                         ids=[f"{e['file'][:-3]}-{p.split('.')[1]}" for e, p, _ in SEARCH_REFUSALS])
def test_planned_search_refusals_do_not_depend_on_the_example_count(entry, prop_name, invariant, monkeypatch):
    """The planned searches run SEARCH_EXAMPLES scenarios whatever ``--examples``: each
    interruptible-timers refusal of the corpus is the split search's, each same-output refusal the
    restore search's, at the same example with 1 or 60 random examples asked for (before them,
    count_news_clicks was certified at 10, 20 and 60 examples, sensor_aggregation_processing's
    same-output held at 10, 40 and 60)."""
    monkeypatch.chdir(REPO)
    subject = cert.load(entry["operator"], stream=entry["stream"]) if entry.get("stream") else cert.load(entry["operator"])
    prop = next(p for p in cert.properties_for(subject) if p.name == prop_name)
    found = [cert.explore_certification(subject, prop, examples, seed=0, shrink=False) for examples in (1, 60)]
    for verdict, search in found:
        assert search is not None and verdict is search and not verdict.holds, verdict
        assert verdict.invariant == invariant
    assert found[0][0].examples == found[1][0].examples <= cert.SEARCH_EXAMPLES


def test_split_search_is_what_refuses_count_news_clicks_at_few_examples(monkeypatch):
    """Bite: without the split search, 10 random examples certify CountNewsClicks (unsafe with
    interruptible timers: a PUBLISH run before its news' due click-timer turns it into a report of
    the pending clicks); with it, the certificate refuses, and says the split search found it."""
    monkeypatch.chdir(REPO)
    entry = next(e for e in CORPUS if e["file"] == "count_news_clicks.py")
    subject = cert.load(entry["operator"], stream=entry["stream"])
    refused = cert.certify(subject, 10, 0, None)
    row = next(r for r in refused.results if r["property"] == "certify.interruptible-timers")
    assert row["verdict"] == "failed" and row["search"]["refused"], row
    assert row["examples"] == row["search"]["examples"] <= cert.SEARCH_EXAMPLES
    monkeypatch.setattr(cert, "planned_property", lambda subject, prop: None)
    without = cert.certify(subject, 10, 0, None)
    row = next(r for r in without.results if r["property"] == "certify.interruptible-timers")
    assert row["verdict"] == "held" and "search" not in row, row


@pytest.mark.parametrize("seed", [0, 1, 4, 7])
def test_split_search_finds_sparse_timers_by_screening_its_inputs_together(seed):
    """StuckOrderAlert (tests/certify_user_ops.py) is unsafe with interruptible timers, but few of
    its records create an order: a burst of three due orders with an on-time update of the third
    is in about one input in forty. Each screened input alone missed it in all 20 split-search
    scenarios at seeds 1, 4 and 7 (so the verdict depended on --examples); with no hit, the
    search screens the inputs it drew together, and refuses at every seed within a few examples."""
    subject = cert.load(OPS + ":StuckOrderAlert", records=OPS + ":order_events", key="order", timestamp="ts")
    prop = next(p for p in cert.properties_for(subject) if p.name == "certify.interruptible-timers")
    found = cert.explore_search(subject, prop, seed, shrink=False)
    assert not found.holds and found.invariant == "same-output-with-split-firings", found
    assert found.examples <= 10


def test_split_search_reaches_the_split_case_on_a_safe_operator(monkeypatch):
    """PseudoWindow is safe to split: the split search holds, and most of its scenarios ran a record
    of a key whose timer was due inside a split firing (1 of 20 random scenarios did), which the
    certificate counts apart from the random examples."""
    monkeypatch.chdir(REPO)
    subject = cert.load(REAL + "pseudo_window:PseudoWindow")
    prop = next(p for p in cert.properties_for(subject) if p.name == "certify.interruptible-timers")
    verdict, search = cert.explore_certification(subject, prop, 5, seed=0, shrink=False)
    assert verdict.holds and search.holds and verdict is not search
    assert search.examples == cert.SEARCH_EXAMPLES and verdict.examples == 5
    assert search.reach_examples.get("record of a due key inside a split firing", 0) * 2 > search.examples, search.reach_examples



def test_restore_search_scenarios_fail_after_the_watermark():
    """Each restore-search scenario: the burst's one watermark, checkpoints every 2-4 steps, and
    one failure at a step no earlier than the watermark's element (about four steps each)."""
    from hypothesis import given, settings, HealthCheck

    from streamproof.properties.job.steps import Fail, SourceWatermark

    subject = cert.load(REAL + "payment_watermark_timer_function:MyProcessFunction")
    seen = []

    @settings(max_examples=15, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(subject.planned_scenarios("restore"))
    def check(scenario):
        marks = [i for i, s in enumerate(scenario.steps) if isinstance(s, SourceWatermark)]
        fails = [s for s in scenario.steps if isinstance(s, Fail)]
        assert len(marks) == 1 and len(fails) == 1 and fails[0].checkpoints is None
        assert fails[0].at >= ci.STEPS_PER_ELEMENT * marks[0]
        assert 2 <= scenario.params["checkpoint_interval"] <= ci.RESTORE_INTERVAL
        assert scenario.params["parallelism"] == 1 and scenario.params["sources"] == 1
        seen.append(scenario)

    check()
    assert len(seen) >= 10


def test_a_search_on_scenarios_already_drawn_reports_what_its_own_search_would():
    """certify checks watermarks and end-of-input on the scenarios the same-output restore search
    drew (the same strategy and seed draw the same ones): the same verdict, examples and coverage
    as their own search, which draws them again."""
    subject = cert.load(REAL + "pseudo_window:PseudoWindow")
    props = {p.name: p for p in cert.properties_for(subject)}
    drawn: list = []
    same_output = cert.explore_search(subject, props["certify.same-output"], 0, drawn=drawn)
    assert same_output.holds and len(drawn) == same_output.examples == cert.SEARCH_EXAMPLES
    for name in ("certify.watermarks", "certify.end-of-input"):
        own = cert.explore_search(subject, props[name], 0)
        reused = cert.check_drawn(props[name], drawn)
        assert (reused.holds, reused.examples, reused.steps) == (own.holds, own.examples, own.steps)
        assert reused.reach_examples == own.reach_examples and reused.reach_examples


def test_a_failure_on_scenarios_already_drawn_is_explored_again():
    """check_drawn gives up on a failing scenario (None): the property's own search then finds and
    minimises it."""
    subject = cert.load(REAL + "pseudo_window:PseudoWindow")
    prop = next(p for p in cert.properties_for(subject) if p.name == "certify.watermarks")
    drawn: list = []
    cert.explore_search(subject, next(p for p in cert.properties_for(subject) if p.name == "certify.same-output"), 0,
                        drawn=drawn)
    from streamproof.properties.verdict import Verdict
    failing = dataclasses.replace(prop, check=lambda scenario: Verdict(prop.name, False, [], "made-up", "no"))
    assert cert.check_drawn(failing, drawn) is None


def test_session_ends_are_refused_with_four_users_and_not_exercised_with_three():
    """SessionEnd (tests/certify_user_ops.py) loses a session's end when a click runs inside a
    split firing before that session's due timer. The split needs three sessions due at once and
    a fourth user's click to raise the watermark: with four users the split search refuses it;
    with three, every watermark that makes three sessions due was raised by a click of one of
    them, which moved its own end, so no scenario can split such a firing and certify must say
    'not exercised', neither certified nor refused (an outside session detector, session 18)."""
    four = cert.load(OPS + ":SessionEnd", records=OPS + ":clicks", key="user", timestamp="ts")
    prop = next(p for p in cert.properties_for(four) if p.name == "certify.interruptible-timers")
    found = cert.explore_search(four, prop, 0, shrink=False)
    assert not found.holds and found.invariant == "same-output-with-split-firings", found
    three = cert.load(OPS + ":SessionEnd", records=OPS + ":clicks_of_three", key="user", timestamp="ts")
    prop = next(p for p in cert.properties_for(three) if p.name == "certify.interruptible-timers")
    search = cert.explore_search(three, prop, 0, shrink=False)
    assert search.holds and not search.reach_examples.get("record of a due key inside a split firing"), search

"""Each variant of certification's own bug zoo (properties/certify_bugzoo.py) is caught: the check
below holds on the real checker and fails with the variant applied."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamproof.properties import certify as cert
from streamproof.properties import certify_bugzoo as zoo
from streamproof.properties import certify_checks as checks
from streamproof.properties.job.steps import Rescale
from streamproof.properties.reach import counting
from streamproof.properties.scenario import Scenario
from tests.test_certify_split_shapes import REAL, count_with_timeout, scenario

REPO = Path(__file__).resolve().parent.parent
COUNT = f"{REAL}count_with_timeout_function:CountWithTimeoutFunction"


@pytest.fixture(autouse=True)
def _operator(monkeypatch):
    monkeypatch.chdir(REPO)
    cert.load(COUNT)


def _named(s: Scenario) -> Scenario:
    return Scenario(family="job", steps=s.steps, params={**s.params, "operator": f"user:{COUNT}"})


def empty_splits_are_not_coverage() -> bool:
    """Three timers due at one watermark and nothing after it: the firing is split (every timer a
    part of its own) but no record runs between the parts, so nothing the split did can change an
    output; the case must not be counted."""
    items = [i for i in count_with_timeout() if not (i is not None and getattr(i, "f1", None) == "c"
                                                      and getattr(i, "f0", 0) > 60_002)]
    shape = _named(scenario("count_with_timeout_function", items))
    with counting() as reach:
        verdict = checks.check("certify.interruptible-timers", shape)
    split = next(iter(checks.runs(shape).splits()))
    assert verdict.holds and split.interrupted_firings_seen > 0 and split.split_records == 0
    return checks.SPLIT_CASE not in reach


def unsafe_shape_refused_at_every_seed() -> bool:
    base = _named(scenario("count_with_timeout_function", count_with_timeout()))
    return all(not checks.check("certify.interruptible-timers",
                                Scenario(family="job", steps=base.steps, params={**base.params, "seed": seed})).holds
               for seed in range(8))


def lineage_after_early_rescale_is_replayed() -> bool:
    """Two subtasks, a rescale to one before any checkpoint completed: the job restarts from
    scratch with one subtask, whose lineage the reference must replay with one subtask."""
    base = scenario("count_with_timeout_function", count_with_timeout())
    shape = Scenario(family="job", steps=base.steps + (Rescale(3, 1),),
                     params={**base.params, "operator": f"user:{COUNT}", "parallelism": 2,
                             "checkpoint_interval": 1000})
    r = checks.runs(shape)
    assert not isinstance(r.faulty, str) and len(r.faulty.lineage) == 1, r.faulty
    replay = r.lineage(False)
    return replay is not None and replay.lineage == r.faulty.lineage and checks.check(
        "certify.same-output", shape).holds


CATCHES = {
    "coverage-counts-empty-splits": empty_splits_are_not_coverage,
    "split-schedule-seeded-only": unsafe_shape_refused_at_every_seed,
    "lineage-replayed-at-scenario-parallelism": lineage_after_early_rescale_is_replayed,
}


@pytest.mark.parametrize("name", sorted(CATCHES))
def test_the_variant_is_caught(name):
    check = CATCHES[name]
    assert check(), f"{name}: the real checker fails its own check"
    with zoo.applied(name):
        assert not check(), f"bug variant {name} survived"


def test_every_variant_has_a_catching_test():
    untested = set(zoo.VARIANTS) - set(CATCHES)
    assert not untested, untested

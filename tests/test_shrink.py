"""The domain-aware reduction of job counterexamples (properties/shrink.py): it keeps the failure
(same property, same invariant), never grows a scenario, is deterministic, and brings the bug
zoo's job counterexamples down to a readable length."""

import pytest

from streamproof.properties import registry, shrink
from streamproof.properties.bugzoo import get_variant, hunt
from streamproof.properties.explore import reduce_scenario
from streamproof.properties.scenario import dump_scenario, load_scenario

# job bug-zoo variants whose first (unshrunk) counterexamples at seed 0 run to 50-90 steps (with one
# draw per input record, issue 30, finish-drops-deferrable-mail's and continuation-not-deferrable's
# first counterexamples have 11 steps: nothing left to show)
VARIANTS = ["snapshot-before-fired-effects", "side-outputs-outside-the-transaction",
            "final-committables-on-checkpoint-completion"]
_found: dict = {}


def first_counterexample(name: str):
    """The variant's first failing scenario, as Hypothesis generated it (not shrunk)."""
    if name not in _found:
        bug = get_variant(name)
        result = hunt(bug, examples=400, seed=0, shrink=False)
        assert not result.holds and result.scenario is not None, name
        _found[name] = (bug, registry.get(bug.caught_by), result.scenario, result.invariant)
    return _found[name]


def reduced(name: str, seconds: float = 20.0):
    bug, prop, scenario, invariant = first_counterexample(name)
    with bug.patch():
        return reduce_scenario(prop, scenario, invariant, seconds=seconds)


@pytest.mark.parametrize("name", VARIANTS)
def test_job_counterexamples_shrink_to_at_most_12_steps_and_still_fail(name):
    bug, prop, scenario, invariant = first_counterexample(name)
    small = load_scenario(dump_scenario(reduced(name)))  # a file a user can replay
    assert small.family == "job" and len(small.steps) <= 12 < len(scenario.steps)
    assert shrink.measure(small.to_dict()) <= shrink.measure(scenario.to_dict())  # never grows
    with bug.patch():
        verdict = prop.check(small)
    assert not verdict.holds and verdict.invariant == invariant  # the same failure
    assert prop.check(small).holds  # and it is the bug's: without it the scenario holds


def test_the_reduction_is_deterministic():
    assert reduced("continuation-not-deferrable", 3).to_dict() == reduced("continuation-not-deferrable", 3).to_dict()


def test_a_scenario_that_cannot_shrink_comes_back_unchanged():
    bug, prop, scenario, invariant = first_counterexample("continuation-not-deferrable")
    smallest = reduced("continuation-not-deferrable")
    with bug.patch():
        again = reduce_scenario(prop, smallest, invariant, seconds=2)
    assert shrink.measure(again.to_dict()) <= shrink.measure(smallest.to_dict())
    assert len(again.steps) == len(smallest.steps)


def test_invalid_or_passing_candidates_are_never_taken():
    _, prop, scenario, invariant = first_counterexample("finish-drops-deferrable-mail")
    # without the bug nothing fails: every candidate is refused and the scenario stays as it was
    assert reduce_scenario(prop, scenario, invariant, seconds=1).to_dict() == scenario.to_dict()
    shrinker = shrink.Shrinker(lambda s: True, budget=50)
    doc = scenario.to_dict()
    invalid = {**doc, "params": {**doc["params"], "sources": 0}}
    assert not shrinker.test(invalid) and shrinker.checks == 0  # refused by the loader, not checked

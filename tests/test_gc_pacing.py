"""properties/gc_pacing.py: explorations collect the young generation less often, and leave the
caller's thresholds as they were."""

import dataclasses
import gc

import pytest

from streamproof.properties import registry
from streamproof.properties.explore import explore
from streamproof.properties.gc_pacing import YOUNG_THRESHOLD, paced_collections


@pytest.fixture
def thresholds():
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def test_paced_within_the_block_and_restored_after(thresholds):
    gc.set_threshold(700, 11, 12)
    with paced_collections():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 11, 12)
    assert gc.get_threshold() == (700, 11, 12)


def test_a_callers_rarer_collections_are_kept_and_restored_on_error(thresholds):
    gc.set_threshold(10 * YOUNG_THRESHOLD, 10, 10)
    with pytest.raises(ValueError), paced_collections():
        assert gc.get_threshold()[0] == 10 * YOUNG_THRESHOLD
        raise ValueError
    assert gc.get_threshold() == (10 * YOUNG_THRESHOLD, 10, 10)


def test_an_exploration_runs_paced(thresholds):
    gc.set_threshold(700, 10, 10)
    seen = []
    prop = registry.get("job.exactly-once")

    def check(scenario):
        seen.append(gc.get_threshold())
        return prop.check(scenario)
    explore(dataclasses.replace(prop, check=check), 3, seed=0, shrink=False)
    assert seen and all(t[0] == YOUNG_THRESHOLD for t in seen)
    assert gc.get_threshold() == (700, 10, 10)

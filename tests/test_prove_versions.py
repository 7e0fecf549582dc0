"""The z3 model ``versions`` (properties/snapshots/z3_versions.py): FLINK-9182's copy-on-write snapshot
versions as the implementation builds them are proved by k-induction; each known-bug variant of
the model is refuted by a short counterexample, which becomes a ``snapshots`` scenario that fails
``snapshots.point-in-time`` under the bug zoo's patch and holds on the implementation."""

from contextlib import contextmanager

import pytest

from streamproof.impl.timers.snapshots import BASE_VERSION, VersionedTimerQueue
from streamproof.properties import registry
from streamproof.properties.scenario import scenario_from_dict
from streamproof.properties.snapshots.z3_versions import REVIVE, to_scenario, versions_system
from streamproof.properties.timers.bugzoo import patched
from streamproof.properties.z3kit import bmc
from streamproof.properties.z3models import (
    check_model, counterexample_scenario, models, replay_counterexample,
)

MODEL = models()["versions"]
LENGTHS = {  # the shortest counterexample (BMC deepens one step at a time)
    "single-create-delete-pair": 4,             # start, delete, register, serialize it
    "snapshot-sees-newer-timers": 3,            # start, change a timer, finish
    "physical-delete-while-snapshot-runs": 3,   # start, delete, finish
    "tombstones-never-purged": 3,               # start, change a timer, release
}


def test_the_versions_model_is_proved():
    outcomes = check_model(MODEL)
    assert [o.verdict for o in outcomes] == ["proved"] * len(outcomes), [(o.invariant, o.verdict) for o in outcomes]
    assert {"point-in-time", "no-leftovers"} <= {o.invariant for o in outcomes}
    assert MODEL.family == "snapshots" and MODEL.size_name == "timers" and MODEL.k == 1


@pytest.fixture(scope="module")
def counterexamples():
    out = {}
    for name, variant in MODEL.variants.items():
        out[name] = bmc(MODEL.build(name, MODEL.size), variant.refutes, MODEL.depth)
    return out


@pytest.mark.parametrize("variant", sorted(LENGTHS))
def test_each_variant_is_refuted(variant, counterexamples):
    assert set(MODEL.variants) == set(LENGTHS)
    outcome = counterexamples[variant]
    assert outcome.verdict == "counterexample" and outcome.invariant == MODEL.variants[variant].refutes
    assert outcome.depth == LENGTHS[variant] == len(outcome.trace) - 1
    assert outcome.trace[0][0] == "init" and "start" in [a for a, _, _ in outcome.trace]


@pytest.mark.parametrize("variant", sorted(LENGTHS))
def test_each_counterexample_replays_on_the_implementation(variant, counterexamples):
    scenario = counterexample_scenario(MODEL, variant, counterexamples[variant])
    parsed = scenario_from_dict(scenario)
    assert parsed.family == "snapshots" and parsed.property == "snapshots.point-in-time"
    trip = replay_counterexample(MODEL, variant, scenario)
    assert trip.ok, trip  # fails under the bug zoo's patch, holds on the implementation
    assert trip.detail


def test_check_model_refutes_a_variant_first_on_its_invariant():
    outcomes = check_model(MODEL, "single-create-delete-pair")
    assert outcomes[0].invariant == "point-in-time" and outcomes[0].verdict == "counterexample"
    assert outcomes[0].depth == LENGTHS["single-create-delete-pair"]
    with pytest.raises(ValueError, match="unknown variant"):
        versions_system("nope")


@contextmanager
def revive_on_register():
    """The seed's other reading, test-only: registering a tombstoned timer clears its delete version."""
    def record(self, key_group, element, before, after):
        version = self.versions.state_version
        per_key_group = self.history.setdefault(key_group, {})
        history = per_key_group.get(element)
        if after is None:
            per_key_group[element] = (history or ((BASE_VERSION, before),)) + ((version, None),)
        elif history is not None and history[-1][1] is None:
            history = history[:-1]
            if len(history) == 1:
                del per_key_group[element]
            else:
                per_key_group[element] = history
        else:
            per_key_group[element] = ((BASE_VERSION, None), (version, after))

    with patched(VersionedTimerQueue, record=record):
        yield


def test_the_revive_reading_needs_two_snapshots_and_replays():
    outcome = bmc(versions_system(REVIVE[0]), "point-in-time", 5)
    assert outcome.verdict == "counterexample" and outcome.depth == 5
    assert [a for a, _, _ in outcome.trace].count("start") == 2
    parsed = scenario_from_dict(to_scenario(outcome.trace, REVIVE[0]))
    prop = registry.get("snapshots.point-in-time")
    assert prop.check(parsed).holds
    with revive_on_register():
        assert not prop.check(parsed).holds


def test_three_timers_are_proved_too():
    outcomes = check_model(MODEL, size=3, depth=1)
    assert all(o.verdict == "proved" for o in outcomes), [(o.invariant, o.verdict) for o in outcomes]

"""The valve state machines: the streamproof protocol holds every invariant of every valve
property at once (and the model agrees with the implementation), every interesting case is
reached; the registry knows the four properties."""

import json

import pytest
from hypothesis import HealthCheck, seed, settings
from hypothesis.stateful import get_state_machine_test

from streamproof.properties import registry
from streamproof.properties.reach import counting
from streamproof.properties.scenario import dump_scenario
from streamproof.properties.valve.machine import REACHABILITY, machine_for

NAMES = ("valve.consistent-checkpoints", "valve.differential", "valve.exactly-once", "valve.liveness")


def test_properties_are_registered():
    props = registry.for_family("valve")
    assert [p.name for p in props] == list(NAMES)
    for prop in props:
        drained = prop.name in ("valve.exactly-once", "valve.liveness")
        assert prop.machine is not None and prop.summary
        assert set(prop.reachability) == set(REACHABILITY) - (set() if drained else {"drain checkpoint completed"})
        assert prop.machine().PROTOCOL == (None if prop.name == "valve.differential" else "streamproof")


@pytest.mark.parametrize("protocol", ["streamproof"])
def test_streamproof_holds_every_invariant_and_reaches_every_case(protocol):
    """One exploration checks the invariants of all four properties together (ci: 300 examples)."""
    test = get_state_machine_test(machine_for(None, protocol), settings=settings(
        settings(), deadline=None, database=None, suppress_health_check=list(HealthCheck)))
    with counting() as reach:
        try:
            seed(2026)(test)()
        except Exception as e:
            scenario = getattr(e, "streamproof_scenario", None)
            if scenario is None:
                raise
            pytest.fail(f"{e}\nscenario: {dump_scenario(scenario)}")
    print(f"\nvalve reachability over {settings().max_examples} examples:", json.dumps(dict(sorted(reach.items()))))
    for label in REACHABILITY:
        assert reach.get(label, 0) > 0, f"never reached: {label}"

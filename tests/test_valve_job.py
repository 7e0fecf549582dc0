"""The ``valve_job`` family: coordinator events in a whole job under global and region failovers
(impl/coordination/valve_pipeline.py). streamproof holds; legacy duplicates (FLINK-26029); Flink 2.3 loses an
in-flight event when the JobManager triggers the next checkpoint before an aborted one's holder
future completed (finding 4 in docs/valve.md)."""

import json

import pytest

from streamproof.properties import registry
from streamproof.properties.explore import explore
from streamproof.properties.registry import Property
from streamproof.properties.scenario import ScenarioError, load_scenario
from streamproof.properties.valve.job import REACHABILITY, check_valve_job, valve_job_scenarios
from streamproof.replayer import replay


def _prop(protocol):
    base = registry.get("valve.job-exactly-once")
    return Property(base.name, base.family, base.summary, base.check,
                    strategy=lambda: valve_job_scenarios(protocol), reachability=base.reachability)


def test_streamproof_holds_and_reaches_every_case():
    result = explore(registry.get("valve.job-exactly-once"), examples=200, seed=1)
    assert result.holds, (result.invariant, result.message, result.scenario)
    for label in REACHABILITY:
        assert result.reach.get(label, 0) > 0, label


@pytest.mark.parametrize("protocol,invariant", [("legacy", "consistent-checkpoints"), ("flink-2.3", "consistent-checkpoints")])
def test_legacy_and_flink_23_fail(protocol, invariant):
    result = explore(_prop(protocol), examples=1000, seed=0, shrink=False)
    assert not result.holds and result.invariant == invariant
    assert not replay(result.scenario).holds


def test_legacy_duplicates_after_a_region_failover():
    doc = {"family": "valve_job", "params": {"protocol": "legacy", "events": [60], "seed": 3},
           "steps": [{"op": "fail_recipient", "operator": 0, "subtask": 0, "after": 11}]}
    verdict = check_valve_job(load_scenario(json.dumps(doc)))
    assert not verdict.holds
    assert check_valve_job(load_scenario(json.dumps({**doc, "params": {**doc["params"], "protocol": "streamproof"}}))).holds


@pytest.mark.parametrize("doc,message", [
    ({"family": "valve_job", "params": {"events": [5]}, "steps": [{"op": "fail_job", "operator": 1, "after": 1}]},
     "step 0 (fail_job): field 'operator': expected an operator below 1"),
    ({"family": "valve_job", "params": {"parallelism": 2},
      "steps": [{"op": "fail_recipient", "operator": 0, "subtask": 2, "after": 1}]},
     "field 'subtask': expected a subtask below params.parallelism (2)"),
    ({"family": "valve_job", "params": {"nodes": 2}, "steps": []}, "field 'params': expected only protocol"),
    ({"family": "valve_job", "params": {"events": []}, "steps": []}, "events: a list of 1 to 4 integers"),
])
def test_bad_scenarios_name_the_field(doc, message):
    with pytest.raises(ScenarioError) as e:
        load_scenario(json.dumps(doc))
    assert message in str(e.value) and e.value.kind == "semantic"

"""The snapshot state machine (every invariant of both ``snapshots`` properties at once) under the
active profile, its reachability counts, the scenario family and the example files."""

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, seed, settings
from hypothesis.stateful import get_state_machine_test

from streamproof.properties import registry
from streamproof.properties.bugzoo import all_variants
from streamproof.properties.reach import counting
from streamproof.properties.scenario import ScenarioError, dump_scenario, load_scenario, load_scenario_file
from streamproof.properties.snapshots.machine import REACHABILITY, SnapshotMachine
from streamproof.replayer import replay

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO / "examples" / "snapshots").glob("*.json"))
PROPERTIES = ("snapshots.point-in-time", "snapshots.restore-equivalence")


class _ValidatedMachine(SnapshotMachine):
    def teardown(self):
        """Every recorded run is a valid scenario (what a counterexample file must be), also
        around rejected restores, which the scenario rules cannot tell from accepted ones."""
        load_scenario(dump_scenario(self.scenario()))


def test_both_properties_hold_and_every_interesting_case_is_reached():
    """One exploration checks the invariants of snapshots.point-in-time and
    snapshots.restore-equivalence together (ci: 300 examples; campaign: 20,000)."""
    test = get_state_machine_test(_ValidatedMachine, settings=settings(
        settings(), deadline=None, database=None, suppress_health_check=list(HealthCheck)))
    with counting() as reach:
        try:
            seed(20260)(test)()
        except Exception as e:
            steps = getattr(e, "streamproof_steps", None)
            if steps is None:
                raise
            from streamproof.properties.scenario import Scenario
            scenario = Scenario(family="snapshots", steps=tuple(steps))
            pytest.fail(f"{e}\nscenario: {dump_scenario(scenario)}")
    print(f"\nreachability over {settings().max_examples} examples:",
          json.dumps(dict(sorted(reach.items())), ensure_ascii=False))
    # every count the snapshots properties report (streamproof check, campaigns) is above zero
    labels = {label for name in PROPERTIES for label in registry.get(name).reachability}
    assert labels >= {"one section corrupted with the file checksum recomputed",
                      "section corruption rejected naming its key group"}
    for label in sorted(labels | set(REACHABILITY)):
        assert reach.get(label, 0) > 0, f"never reached: {label}"


def test_properties_and_variants_are_registered():
    for name in ("snapshots.point-in-time", "snapshots.restore-equivalence"):
        prop = registry.get(name)
        assert prop.family == "snapshots" and prop.machine is not None and prop.reachability == REACHABILITY
    ours = {v.name: v.caught_by for v in all_variants() if v.caught_by.startswith("snapshots.")}
    assert set(ours) == {"seed-single-create-delete-pair", "physical-delete-while-snapshot-runs",
                         "snapshot-sees-newer-timers", "tombstones-never-purged", "crc-not-checked",
                         "format-1-restores-trigger", "section-crc-skips-payload",
                         "compaction-shows-the-newest-snapshot-the-live-value"}


def test_examples_replay_and_hold():
    assert len(EXAMPLES) >= 2
    for path in EXAMPLES:
        scenario = load_scenario_file(path)
        assert scenario.family == "snapshots" and scenario.name and scenario.description
        result = replay(scenario)
        assert result.holds, (path.name, result.failure())
        assert len(result.verdicts) == (1 if scenario.property else 2)


@pytest.mark.parametrize("steps,message", [
    ([{"op": "set_key", "key": "a"}], "step 0 (set_key): field 'op': expected new_job as the first step"),
    ([{"op": "new_job", "max_parallelism": 4, "parallelism": 5}],
     "field 'parallelism': expected a parallelism <= max_parallelism (4), got 5"),
    ([{"op": "new_job", "max_parallelism": 4, "parallelism": 1},
      {"op": "register", "domain": "event", "namespace": "w", "ts": 1}],
     "step 1 (register): field 'op': expected set_key before the first register or delete"),
    ([{"op": "new_job", "max_parallelism": 4, "parallelism": 1}, {"op": "finish_snapshot", "id": "c"}],
     "step 1 (finish_snapshot): field 'id': expected a running snapshot (), got \"c\""),
    ([{"op": "new_job", "max_parallelism": 4, "parallelism": 1}, {"op": "start_snapshot", "id": "c"},
      {"op": "restore", "id": "c", "parallelism": 1}],
     "step 2 (restore): field 'id': expected a finished snapshot (), got \"c\""),
    ([{"op": "new_job", "max_parallelism": 4, "parallelism": 2}, {"op": "start_snapshot", "id": "c"},
      {"op": "finish_snapshot", "id": "c"}, {"op": "corrupt", "id": "c", "subtask": 2, "offset": 0, "xor": 1}],
     "field 'subtask': expected a subtask below 2, got 2"),
    ([{"op": "new_job", "max_parallelism": 4, "parallelism": 1}, {"op": "start_snapshot", "id": "c", "format": 3}],
     "field 'format': expected an integer in [1, 2], got 3"),
    ([{"op": "new_job", "max_parallelism": 4, "parallelism": 2}, {"op": "start_snapshot", "id": "c"},
      {"op": "finish_snapshot", "id": "c"},
      {"op": "corrupt_section", "id": "c", "subtask": 1, "key_group": 1, "offset": 0, "xor": 1}],
     "step 3 (corrupt_section): field 'key_group': expected a key group of subtask 1's range [2, 3], got 1"),
    ([{"op": "new_job", "max_parallelism": 4, "parallelism": 2}, {"op": "start_snapshot", "id": "c"},
      {"op": "finish_snapshot", "id": "c"},
      {"op": "corrupt_section", "id": "c", "subtask": 2, "key_group": 3, "offset": 0, "xor": 1}],
     "step 3 (corrupt_section): field 'subtask': expected a subtask below 2, got 2"),
    ([{"op": "new_job", "max_parallelism": 4, "parallelism": 1}, {"op": "start_snapshot", "id": "c"},
      {"op": "corrupt_section", "id": "c", "subtask": 0, "key_group": 0, "offset": 0, "xor": 1}],
     "step 2 (corrupt_section): field 'id': expected a finished snapshot (), got \"c\""),
    ([{"op": "new_job", "max_parallelism": 4, "parallelism": 1}, {"op": "start_snapshot", "id": "c"},
      {"op": "finish_snapshot", "id": "c"},
      {"op": "corrupt_section", "id": "c", "subtask": 0, "key_group": 0, "offset": 0, "xor": 0}],
     "step 3 (corrupt_section): field 'xor': expected an integer in [1, 255], got 0"),
    ([{"op": "new_job", "max_parallelism": 4, "parallelism": 1}, {"op": "start_snapshot", "id": "c"},
      {"op": "finish_snapshot", "id": "c"}, {"op": "corrupt_section", "id": "c", "subtask": 0, "offset": 0, "xor": 1}],
     "step 3 (corrupt_section): field 'key_group': missing"),
    ([{"op": "new_job", "max_parallelism": 4, "parallelism": 1}, {"op": "start_snapshot", "id": "c"},
      {"op": "finish_snapshot", "id": "c"},
      {"op": "corrupt", "id": "c", "subtask": 0, "offset": 0, "xor": 1, "recompute": True}],
     "step 3 (corrupt): field 'recompute': unknown field"),
])
def test_family_errors_name_step_and_field(steps, message):
    with pytest.raises(ScenarioError) as e:
        load_scenario(json.dumps({"family": "snapshots", "steps": steps}))
    assert message in str(e.value)


def test_restore_abandons_running_snapshots_in_validation():
    doc = {"family": "snapshots", "steps": [
        {"op": "new_job", "max_parallelism": 4, "parallelism": 1},
        {"op": "start_snapshot", "id": "a"}, {"op": "finish_snapshot", "id": "a"},
        {"op": "start_snapshot", "id": "b"}, {"op": "restore", "id": "a", "parallelism": 2},
        {"op": "finish_snapshot", "id": "b"}]}
    with pytest.raises(ScenarioError, match="expected a running snapshot"):
        load_scenario(json.dumps(doc))


BITES = {
    "delete-and-register-again.json": ["seed-single-create-delete-pair", "physical-delete-while-snapshot-runs",
                                       "snapshot-sees-newer-timers", "tombstones-never-purged"],
    "corrupted-and-format-1.json": ["crc-not-checked", "format-1-restores-trigger"],
    "rescale-2-to-3.json": ["physical-delete-while-snapshot-runs"],
    "section-corrupted.json": ["section-crc-skips-payload", "crc-not-checked"],
}


@pytest.mark.parametrize("name", sorted(BITES))
def test_examples_fail_with_the_bugs_they_describe(name):
    from streamproof.properties.bugzoo import get_variant
    scenario = load_scenario_file(REPO / "examples" / "snapshots" / name)
    for bug in BITES[name]:
        with get_variant(bug).patch():
            assert not replay(scenario).holds, f"{name} holds with {bug}"


def test_section_corruption_must_be_rejected_naming_its_key_group():
    """restore-equivalence fails a reader that rejects a section-corrupted file without naming the
    section (here: a correct reader whose message names no key group), and one that restores it."""
    from streamproof.impl.timers import snapshot_format
    from streamproof.properties.timers.bugzoo import patched

    scenario = load_scenario_file(REPO / "examples" / "snapshots" / "section-corrupted.json")
    prop = registry.get("snapshots.restore-equivalence")
    original = snapshot_format._check_crc

    def vague(expected, actual, offset, what):
        try:
            original(expected, actual, offset, "some")
        except snapshot_format.SnapshotFormatError as e:
            raise snapshot_format.SnapshotFormatError(0, e.problem) from None

    with patched(snapshot_format, _check_crc=vague):
        verdict = prop.check(scenario)
    assert not verdict.holds and verdict.invariant == "corruption-rejected"
    assert "does not name that section" in verdict.message and "key group 2" in verdict.message
    assert prop.check(scenario).holds

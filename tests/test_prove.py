"""The z3 models (properties/z3kit.py, properties/termination/z3_flush.py): the flush's invariants are proved
by k-induction; each known-bug variant of the model is refuted with a counterexample; the
head-only counterexample replays on the implementation, where the bug zoo's patch loses the same
timer; and ``streamproof prove`` reports it all."""

import json

import pytest
from click.testing import CliRunner

from pathlib import Path

from streamproof.properties.bugzoo import all_variants, get_variant
from streamproof.properties.scenario import scenario_from_dict
from streamproof.properties.z3models import check_model, counterexample_scenario, models, replay_counterexample
from streamproof.properties.termination.z3_flush import VARIANTS, flush_system, replay_on_impl
from streamproof.properties.z3kit import bmc, prove
from streamproof.cli import cli


def test_the_flush_is_proved():
    outcomes = prove(flush_system(), 1, depth=6)
    assert [o.verdict for o in outcomes] == ["proved"] * len(outcomes), [(o.invariant, o.verdict) for o in outcomes]
    assert "trigger-and-wait-fire-once" in {o.invariant for o in outcomes}


@pytest.mark.parametrize("variant, invariant", [
    ("no-horizon", "nothing-fires-after-the-horizon"), ("head-only", "trigger-and-wait-fire-once"),
    ("cancel-fires", "trigger-and-wait-fire-once"), ("ends-with-timers-pending", "nothing-pending-once-flushed"),
])
def test_each_model_variant_is_refuted(variant, invariant):
    assert variant in VARIANTS
    outcome = bmc(flush_system(variant), invariant, 8)
    assert outcome.verdict == "counterexample" and outcome.trace[0][0] == "init"
    assert outcome.trace[-1][2]  # the last state is there to read


def test_the_head_only_counterexample_replays_on_the_implementation():
    trace = bmc(flush_system("head-only"), "trigger-and-wait-fire-once", 8).trace
    wanted, fired = replay_on_impl(trace)
    assert wanted and fired == wanted  # the implementation fires every TRIGGER / WAIT timer
    with get_variant("flush-handles-head-only").patch():
        wanted, fired = replay_on_impl(trace)
    assert wanted - fired  # the zoo's patch loses one, as the model's variant does


@pytest.mark.parametrize("variant", ["head-only", "cancel-fires"])
def test_flush_counterexamples_round_trip_through_termination_scenarios(variant):
    model = models()["flush"]
    scenario = counterexample_scenario(model, variant, check_model(model, variant)[0])
    assert scenario_from_dict(scenario).family == "termination"
    assert replay_counterexample(model, variant, scenario).ok


def test_every_variant_with_a_counterpart_names_a_registered_bug_or_protocol():
    known = {v.name for v in all_variants()}
    for model in models().values():
        for variant in model.variants.values():
            if variant.reproduced_by is None:
                continue
            kind, _, name = variant.reproduced_by.partition(":")
            assert (kind == "bugzoo" and name in known) or (kind == "protocol" and name in ("legacy", "flink-2.3")), \
                (model.name, variant.name)


def test_prove_command_proves_every_model_and_writes_each_counterexample_as_a_scenario(tmp_path):
    runner = CliRunner()
    ok = runner.invoke(cli, ["prove"])
    assert ok.exit_code == 0, ok.output
    assert "every invariant proved" in ok.output and "COUNTEREXAMPLE" not in ok.output
    assert {"flush", "lifecycle", "valve", "versions"} <= {line.split()[0] for line in ok.output.splitlines()
                                                          if line.startswith(("flush ", "lifecycle ", "valve ", "versions "))}
    out = tmp_path / "cex"
    bad = runner.invoke(cli, ["prove", "valve", "--variant", "legacy", "--out", str(out), "--json"])
    assert bad.exit_code == 0, bad.output  # a variant asked for and refuted is what was expected
    rows = [json.loads(line) for line in bad.stdout.splitlines()]
    refuted = [r for r in rows if r["variant"] == "legacy"]
    assert refuted[0]["verdict"] == "counterexample" and refuted[0]["trace"][0]["action"] == "init"
    written = Path(refuted[0]["scenario"])
    assert written.parent == out and written.exists()
    replayed = runner.invoke(cli, ["replay", str(written)])
    assert replayed.exit_code == 1  # legacy protocol: the checkpoint is inconsistent
    assert runner.invoke(cli, ["prove", "nope"]).exit_code == 2
    assert runner.invoke(cli, ["prove", "flush", "--variant", "legacy"]).exit_code == 2


def test_replay_inject_reproduces_a_written_counterexample_and_rejects_an_unknown_variant(tmp_path):
    """The user's path for a bug-zoo counterpart: prove writes the scenario, replay holds on the
    implementation and fails with the variant injected; an unknown variant is one line, exit 2."""
    runner = CliRunner()
    out = tmp_path / "cex"
    assert runner.invoke(cli, ["prove", "flush", "--variant", "head-only", "--out", str(out)]).exit_code == 0
    written = str(out / "z3-flush-handles-head-only.json")
    by_bugzoo_name = runner.invoke(cli, ["prove", "flush", "--variant", "flush-handles-head-only", "--out", str(out)])
    assert by_bugzoo_name.exit_code == 0, by_bugzoo_name.output
    assert f"streamproof replay --inject flush-handles-head-only {written}" in by_bugzoo_name.output
    assert runner.invoke(cli, ["replay", written]).exit_code == 0
    injected = runner.invoke(cli, ["replay", "--inject", "flush-handles-head-only", written])
    assert injected.exit_code == 1 and "trigger-and-wait-fire-once" in injected.output
    unknown = runner.invoke(cli, ["replay", "--inject", "no-such-bug", written])
    assert unknown.exit_code == 2 and "unknown bug variant" in unknown.output

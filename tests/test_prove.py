"""The z3 models (properties/z3kit.py, properties/termination/z3_flush.py): the flush's invariants are proved
by k-induction; each known-bug variant of the model is refuted with a counterexample; the
head-only counterexample replays on the implementation, where the bug zoo's patch loses the same
timer; and ``streamproof prove`` reports it all."""

import json

import pytest
from click.testing import CliRunner

from streamproof.properties.bugzoo import get_variant
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


def test_prove_command_exit_codes_and_json():
    runner = CliRunner()
    ok = runner.invoke(cli, ["prove", "--depth", "4"])
    assert ok.exit_code == 0 and "all 7 invariants proved" in ok.output
    bad = runner.invoke(cli, ["prove", "flush", "--variant", "cancel-fires", "--depth", "6", "--json"])
    assert bad.exit_code == 1
    rows = [json.loads(line) for line in bad.output.splitlines()]
    refuted = [r for r in rows if r["verdict"] == "counterexample"]
    assert refuted and all(r["trace"][0]["action"] == "init" for r in refuted)
    unknown = runner.invoke(cli, ["prove", "nope"])
    assert unknown.exit_code == 2

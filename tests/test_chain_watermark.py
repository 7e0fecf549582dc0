"""The ``chain_watermark`` family: MailboxWatermarkProcessor in a chain A -> B (docs/chain-watermark.md).

The implementation (impl/tasks/stream_task.py) agrees with the model step by step in both modes, Flink 2.3's
duplicate watermark is reproduced (and gone in corrected mode); Flink 2.3's own classes agree with
the implementation and the model on 300 generated scenarios in tests/test_conformance_cli.py."""

from __future__ import annotations

import json
from pathlib import Path

from streamproof.properties import registry
from streamproof.properties.chain_watermark.runner import run_impl, run_model, same_trace
from streamproof.properties.explore import explore
from streamproof.properties.scenario import load_scenario_file, scenario_from_dict

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "conformance" / "chain-watermark-duplicate.json"
PROPERTY = "chain_watermark.differential"


def _b_watermarks(trace: list[dict]) -> list[int]:
    return [e["watermark"] for e in trace if e["event"] == "emit" and e["operator"] == "B"]


def test_differential_property_holds():
    result = explore(registry.get(PROPERTY), 200, seed=0)
    assert result.holds, (result.invariant, result.message, result.scenario and result.scenario.to_dict())
    for label in registry.get(PROPERTY).reachability:
        assert result.reach.get(label, 0) > 0, f"never reached: {label} ({result.reach})"


def test_duplicate_watermark_in_flink_mode_once_in_corrected_mode():
    scenario = load_scenario_file(EXAMPLE)
    flink = run_impl(scenario.steps, "flink-2.3")
    assert _b_watermarks(flink) == [20, 20]
    assert same_trace(flink, list(scenario.flink_observed))
    assert same_trace(run_model(scenario.steps, "flink-2.3"), flink)
    corrected = run_impl(scenario.steps, "corrected")
    assert _b_watermarks(corrected) == [20]
    assert same_trace(run_model(scenario.steps, "corrected"), corrected)
    # the differential property holds in both modes (the model says the same as the implementation)
    for mode in ("flink-2.3", "corrected"):
        doc = {**scenario.to_dict(), "params": {"mode": mode}}
        assert registry.get(PROPERTY).check(scenario_from_dict(doc)).holds


def test_corrected_mode_emits_the_reached_watermark_at_the_continuation():
    """A's advance to 30 is interrupted after its timer at 10 (which put a mail); corrected mode
    emits 19 (below the next timer, 20) when the continuation runs; Flink 2.3 emits nothing until
    the advance completes."""
    doc = {"family": "chain_watermark", "steps": [
        {"op": "new_chain"},
        {"op": "register", "operator": "A", "key": "a", "ts": 10},
        {"op": "register", "operator": "A", "key": "b", "ts": 20},
        {"op": "timer_puts_mail", "operator": "A", "key": "a", "ts": 10},
        {"op": "timer_puts_mail", "operator": "A", "key": "b", "ts": 20},
        {"op": "watermark", "ts": 30},
        {"op": "run_mail"}, {"op": "run_mail"}, {"op": "drain"}]}
    steps = scenario_from_dict(doc).steps
    a = lambda trace: [e["watermark"] for e in trace if e["event"] == "emit" and e["operator"] == "A"]  # noqa: E731
    assert a(run_impl(steps, "flink-2.3")) == [30]
    assert a(run_impl(steps, "corrected")) == [19, 30]
    for mode in ("flink-2.3", "corrected"):
        assert same_trace(run_model(steps, mode), run_impl(steps, mode))


def test_the_example_is_a_valid_scenario_with_flinks_trace():
    doc = json.loads(EXAMPLE.read_text())
    assert doc["family"] == "chain_watermark" and doc["flink_observed"]
    assert scenario_from_dict(doc).params == {"mode": "flink-2.3"}


# The 300-scenario comparison with Flink of every family: tests/test_conformance_cli.py.

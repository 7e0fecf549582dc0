"""Conformance kit, family ``valve``: Apache Flink 2.3's own ``OperatorCoordinatorHolder`` (with
its ``SubtaskGatewayImpl``s), driven by the Java harness (``ValveHarness``) through the 18 recorded
scenarios, gives back exactly the recorded ``flink_observed`` (errors compared by type only, as the
vectors and ``properties/valve/runner.py`` say). Also: the harness refuses the other protocols, and
agrees with the Python port on the worked examples, the JVM-killing one included (finding 3 of
docs/valve.md: ``FatalExitExceptionHandler`` is kept from exiting and reported as a fatal error).

Skipped only when ``java`` / ``javac`` are missing. One JVM for the module (a few seconds).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from streamproof.properties.scenario import scenario_from_dict
from streamproof.properties.valve.runner import difference, run_impl, same_trace
from tests.vectors import load

CASES = load("flink_valve_traces.json")["cases"]
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "valve"

pytestmark = pytest.mark.skipif(
    shutil.which("java") is None or shutil.which("javac") is None,
    reason="the conformance kit needs a JDK (java and javac on PATH) to run Flink's own classes")


def _flink_examples() -> list[dict]:
    """The worked examples of docs/valve.md that run under Flink 2.3's protocol."""
    out = []
    for path in sorted(EXAMPLES.rglob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("family") == "valve" and (data.get("params") or {}).get("protocol", "flink-2.3") == "flink-2.3":
            out.append({**data, "name": path.name})
    return out


EXTRA = [
    {"name": "legacy protocol", "family": "valve", "params": {"protocol": "legacy"},
     "steps": [{"op": "new_holder", "parallelism": 1}]},
    {"name": "streamproof protocol", "family": "valve", "params": {"protocol": "streamproof"},
     "steps": [{"op": "new_holder", "parallelism": 1}]},
    {"name": "explicit flink-2.3", "family": "valve", "params": {"protocol": "flink-2.3"},
     "steps": [{"op": "new_holder", "parallelism": 1}, {"op": "send", "subtask": 0, "event": 4}]},
]


@pytest.fixture(scope="module")
def answers() -> dict[str, dict]:
    """Every scenario of this module, answered by one harness JVM, by name."""
    from streamproof.conformance import harness

    scenarios = CASES + _flink_examples() + EXTRA
    results = harness.run("2.3.0", "valve", scenarios)
    assert len(results) == len(scenarios)
    return {s["name"]: r for s, r in zip(scenarios, results)}


def test_there_are_18_recorded_cases():
    assert len(CASES) == 18 and {c["family"] for c in CASES} == {"valve"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_flink_holder_reproduces_the_recorded_trace(answers, case):
    answer = answers[case["name"]]
    assert "error" not in answer, answer["error"]
    observed = answer["observed"]
    assert same_trace(observed, case["flink_observed"]), difference(observed, case["flink_observed"])


def test_only_flink_protocol_is_driven(answers):
    for name in ("legacy protocol", "streamproof protocol"):
        error = answers[name].get("error", "")
        assert "flink-2.3" in error and "protocol" in error, answers[name]
    assert answers["explicit flink-2.3"] == {
        "observed": [{"event": "deliver", "subtask": 0, "attempt": 0, "value": 4}]}


def test_worked_examples_agree_with_the_python_port(answers):
    examples = _flink_examples()
    assert examples, f"no flink-2.3 valve examples under {EXAMPLES}"
    for example in examples:
        answer = answers[example["name"]]
        assert "error" not in answer, (example["name"], answer["error"])
        python = run_impl(scenario_from_dict(example).steps, "flink-2.3")
        assert same_trace(answer["observed"], python), (example["name"], difference(answer["observed"], python))


def test_fatal_error_is_reported_not_exited(answers):
    """Finding 3 on Flink's classes: the late coordinator future makes closeGateways throw inside
    assertNoException; the JVM survives and the trace says so, once."""
    answer = answers["flink-2.3-partial-close-after-region-failover.json"]
    fatal = [e for e in answer["observed"] if e["event"] == "error" and e.get("fatal")]
    assert [e["text"] for e in fatal] == ["IllegalStateException"], answer

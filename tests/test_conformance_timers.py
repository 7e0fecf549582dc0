"""Conformance of the ``timers`` family with Apache Flink 2.3 (``streamproof conform timers``).

* The regression scenarios ``examples/conformance/timers-*.json`` carry Flink's own trace
  (``flink_observed``, recorded with the harness): the implementation replays each exactly, and
  the model, following Flink's tie choices, too. With a JDK, Flink reproduces the recorded traces.
* The order of named services is Java's ``HashMap`` iteration order (impl/state/java_hashmap.py, and the
  model's own statement of it in model/timers.py), checked against orders printed by a JVM.
* With a JDK: 300 generated scenarios (seed 0) run on Flink, the implementation and the model:
  no harness error, and no divergence other than a choice among equal-timestamp timers that the
  model accepts on both sides (see ``_tie_choice`` below).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from streamproof.impl.state.java_hashmap import hash_map_capacity, hash_map_order
from streamproof.model.timers import map_order
from streamproof.properties.scenario import load_scenario_file, scenario_from_dict
from streamproof.properties.timers.runner import run_impl, run_model, same_trace
from streamproof.replayer import replay

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "conformance"
FILES = sorted(EXAMPLES.glob("timers-*.json"))
HAVE_JDK = shutil.which("java") is not None and shutil.which("javac") is not None
needs_jdk = pytest.mark.skipif(not HAVE_JDK, reason="no JDK: java and javac are needed to run the Flink harness")


def test_regression_files_exist():
    assert {p.stem for p in FILES} >= {"timers-service-hashmap-order", "timers-mixed-keys-snapshot"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_regression_scenario_replays(path):
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["family"] == "timers" and doc["name"] == path.stem and doc["description"]
    result = replay(load_scenario_file(path))
    assert result.matches_expected is True, result.mismatch
    steps = load_scenario_file(path).steps
    assert same_trace(run_model(steps, reference=doc["flink_observed"]), doc["flink_observed"])


@needs_jdk
def test_regression_scenarios_on_flink():
    from streamproof.conformance import harness
    docs = [json.loads(p.read_text(encoding="utf-8")) for p in FILES]
    answers = harness.run("2.3.0", "timers", docs)
    for doc, answer in zip(docs, answers):
        assert "error" not in answer, (doc["name"], answer)
        assert answer["observed"] == doc["flink_observed"], doc["name"]


# orders printed by `for (String k : map.keySet())` after putting the names in this order (JDK 17)
JAVA_ORDERS = [
    (["timers", "a", "other", "b", "svc"], ["a", "svc", "timers", "other", "b"]),
    (["user-timers", "window-timers", "timers", "other", "cep", "session"],
     ["timers", "other", "session", "window-timers", "user-timers", "cep"]),
    ([f"n{i}" for i in range(14)],  # the 13th name doubles the table to 32
     ["n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "n10", "n12", "n11", "n13"]),
]


@pytest.mark.parametrize("names, java", JAVA_ORDERS)
def test_service_order_is_java_hashmap_order(names, java):
    assert hash_map_order(names) == java
    assert map_order(list(names)) == java


def test_hashmap_capacity_and_collisions():
    assert hash_map_capacity(f"n{i}" for i in range(12)) == 16
    assert hash_map_capacity(f"n{i}" for i in range(13)) == 32
    # "timers" and "other" share bucket 2: the generator's two names keep creation order
    assert hash_map_order(["timers", "other"]) == ["timers", "other"]
    assert hash_map_order(["other", "timers"]) == ["other", "timers"]


def test_manager_advances_services_in_hashmap_order():
    from streamproof.impl.state.key_groups import KeyGroupRange
    from streamproof.impl.timers.internal_time_service_manager import InternalTimeServiceManager
    from streamproof.impl.timers.internal_timer_service import KeyContext
    from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService

    fired = []

    class Target:
        def __init__(self, name):
            self.name = name

        def on_event_time(self, timer):
            fired.append(self.name)

        def on_processing_time(self, timer):
            fired.append(self.name)

    context = KeyContext(128)
    manager = InternalTimeServiceManager(context, KeyGroupRange(0, 127), ManualProcessingTimeService())
    context.set_current_key("k")
    for name in ["timers", "a", "other", "b", "svc"]:
        manager.get_internal_timer_service(name, Target(name)).register_event_time_timer("w", 1)
    manager.advance_watermark(5)
    assert fired == ["a", "svc", "timers", "other", "b"]
    assert list(manager.snapshot_state_for_key_group(0)) == fired


def _tie_choice(divergence) -> bool:
    """Both traces are behaviours the model allows: the model reproduces Flink's trace when it
    follows Flink's choices among equal-timestamp timers, and the implementation's when it follows
    the implementation's. Such a divergence is a choice Flink leaves open (which timers of a tie
    an interrupted advance fires, which key a tie leaves in the key context), not a conformance
    failure; ``conform`` still reports it (it compares ties as sets and runs the model without
    Flink's trace as reference)."""
    steps = scenario_from_dict(divergence.scenario).steps
    flink = divergence.flink
    impl = run_impl(steps)
    return (same_trace(run_model(steps, reference=flink), flink)
            and same_trace(run_model(steps, reference=impl), impl))


# The 300-scenario comparison with Flink of every family: tests/test_conformance_cli.py.

"""The Java conformance harness on Apache Flink 2.3's own classes reproduces the recorded vectors:
every timers case (ties compared as sets, as ``properties/timers/runner.py`` does) and every
mailbox case (exactly), each family in one JVM batch. Skipped only when no JDK (java and javac)
is on PATH; Flink's jars are downloaded into the cache on first use if missing."""

from __future__ import annotations

import shutil

import pytest

from streamproof.conformance import harness
from streamproof.conformance.flink_env import harness_classpath
from streamproof.properties.timers.runner import difference, normalize
from tests.vectors import load

pytestmark = pytest.mark.skipif(
    shutil.which("java") is None or shutil.which("javac") is None,
    reason="no JDK: java and javac are needed to run the Flink conformance harness",
)

VERSION = "2.3.0"
TIMER_CASES = load("flink_timer_traces.json")["cases"]
MAILBOX_CASES = load("flink_mailbox_traces.json")["cases"]


@pytest.fixture(scope="module")
def timer_results():
    return harness.run(VERSION, "timers", TIMER_CASES)


@pytest.fixture(scope="module")
def mailbox_results():
    return harness.run(VERSION, "mailbox", MAILBOX_CASES)


def test_vector_counts():
    assert (len(TIMER_CASES), len(MAILBOX_CASES)) == (25, 12)


def test_classpath_is_cached():
    first = harness_classpath(VERSION)
    assert harness_classpath(VERSION) == first  # same sources: same compiled classes


@pytest.mark.parametrize("index", range(len(TIMER_CASES)), ids=[c["name"] for c in TIMER_CASES])
def test_flink_timers_reproduce_vector(timer_results, index):
    case, result = TIMER_CASES[index], timer_results[index]
    assert "error" not in result, result["error"]
    observed = result["observed"]
    assert normalize(observed) == normalize(case["flink_observed"]), difference(observed, case["flink_observed"])


@pytest.mark.parametrize("index", range(len(MAILBOX_CASES)), ids=[c["name"] for c in MAILBOX_CASES])
def test_flink_mailbox_reproduces_vector(mailbox_results, index):
    case, result = MAILBOX_CASES[index], mailbox_results[index]
    assert "error" not in result, result["error"]
    assert result["observed"] == case["flink_observed"]


def test_one_bad_scenario_does_not_cost_the_batch():
    new = {"op": "new_instance", "max_parallelism": 128, "key_group_range": [0, 63]}
    scenarios = [
        {"steps": [new, {"op": "frobnicate"}]},  # the harness cannot drive it
        {"steps": [new, {"op": "set_key", "key": "a"},  # key group 81: Flink rejects the step
                   {"op": "register", "domain": "event", "namespace": "n", "ts": 1}, {"op": "count"}]},
    ]
    bad, rejected = harness.run(VERSION, "timers", scenarios)
    assert "frobnicate" in bad["error"] and "\n" not in bad["error"]
    assert [e["event"] for e in rejected["observed"]] == ["instance", "error", "count"]
    assert rejected["observed"][1]["text"] == "IllegalArgumentException"


def test_unknown_family_is_an_error_per_scenario():
    assert "no harness for family" in harness.run(VERSION, "no_such_family", [{"steps": []}])[0]["error"]


def test_runaway_callback_ends_the_run_with_a_fatal_error():
    steps = [{"op": "new_instance", "max_parallelism": 128, "key_group_range": [0, 127]},
             {"op": "set_key", "key": "a"},
             {"op": "on_fire", "domain": "event", "key": "a", "namespace": "n", "ts": 1,
              "then": [{"op": "delete", "domain": "event", "namespace": "n", "ts": 1},
                       {"op": "register", "domain": "event", "namespace": "n", "ts": 1}]},
             {"op": "register", "domain": "event", "namespace": "n", "ts": 1},
             {"op": "advance_watermark", "to": 1},
             {"op": "count"}]
    [result] = harness.run(VERSION, "timers", [{"params": {"budget": 5}, "steps": steps}])
    events = result["observed"]
    assert [e["event"] for e in events].count("fire") == 5
    assert events[-1]["event"] == "error" and events[-1]["fatal"] is True


def test_jars_are_extracted_from_a_wheel(tmp_path):
    import zipfile

    from streamproof.conformance.flink_env import _extract_jars

    wheel = tmp_path / "apache_flink_libraries-2.3.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("pyflink/lib/flink-dist-2.3.0.jar", b"jar")
        z.writestr("pyflink/lib/log4j-api.jar", b"jar")
        z.writestr("pyflink/opt/other.jar", b"not lib")
    out = tmp_path / "lib"
    out.mkdir()
    assert _extract_jars(wheel, out) == 2
    assert sorted(p.name for p in out.iterdir()) == ["flink-dist-2.3.0.jar", "log4j-api.jar"]

"""Scenarios at the edges of their documented ranges run or are refused with one line; scenarios
too large to replay are refused with one line; `streamproof snapshot inspect` reads and validates
timer snapshot files (issue 18, items 7-9)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

from streamproof.impl.state.key_groups import KeyGroupRange
from streamproof.impl.timers.snapshot_format import encode_snapshot
from streamproof.impl.timers.internal_time_service_manager import InternalTimeServiceManager
from streamproof.impl.timers.internal_timer_service import KeyContext, TimestampOutOfRangeError
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService
from streamproof.properties import registry
from streamproof.properties.scenario import ScenarioError, load_scenario
from streamproof.properties.snapshots.fuzz import random_contents

MAX, MIN = 2**63 - 1, -(2**63)
ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def _job(operator: str, steps: list, **params) -> str:
    return json.dumps({"family": "job", "params": {"operator": operator, "sources": 1, "parallelism": 1,
                                                    "max_parallelism": 4, "checkpoint_interval": 2, **params},
                       "steps": steps})


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "streamproof", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)


@pytest.mark.parametrize("operator", ["window_sum", "timer_chain", "yielding_window_sum", "async_window_sum",
                                      "mailing_window_sum"])
def test_a_job_at_the_ends_of_the_timestamp_range_runs_and_holds(operator):
    """A record at 2^63-1 crashed the snapshot writer (a window timer past the end of time)."""
    steps = [{"op": "record", "source": 0, "key": "a", "value": 1, "ts": MAX},
             {"op": "record", "source": 0, "key": "a", "value": MAX, "ts": 1},
             {"op": "record", "source": 0, "key": "b", "value": 1, "ts": MIN + 1},
             {"op": "fail", "at": 3}]
    scenario = load_scenario(_job(operator, steps))
    for prop in registry.for_family("job"):
        verdict = prop.check(scenario)
        assert verdict.holds, (prop.name, verdict.invariant, verdict.message)


def test_a_graph_with_flink_windows_at_the_end_of_time_runs_and_holds():
    graph = {"operators": [{"name": "src", "kind": "source"},
                           {"name": "w", "kind": "keyed_process", "function": "tumbling_window_sum"},
                           {"name": "b", "kind": "keyed_process", "function": "processing_buffer"},
                           {"name": "s", "kind": "sink"}],
             "edges": [{"from": "src", "to": "w", "partitioning": "keyed"}, {"from": "w", "to": "b", "partitioning": "keyed"},
                       {"from": "b", "to": "s"}]}
    steps = [{"op": "record", "source": 0, "key": "a", "value": 1, "ts": MAX},
             {"op": "processing_time", "source": 0, "ts": MAX}]
    scenario = load_scenario(_job("window_sum", steps, graph=graph))
    for prop in registry.for_family("job"):
        verdict = prop.check(scenario)
        assert verdict.holds, (prop.name, verdict.invariant, verdict.message)


def test_a_record_without_a_timestamp_is_refused_by_the_loader():
    """Long.MIN_VALUE is Flink's "no timestamp" marker: event-time windows refuse it mid-run."""
    with pytest.raises(ScenarioError, match=r"step 0 \(record\): field 'ts': expected an integer in \[-2\^63\+1, 2\^63-1\]"):
        load_scenario(_job("window_sum", [{"op": "record", "source": 0, "key": "a", "value": 1, "ts": MIN}]))


@pytest.mark.parametrize("operator", ["processing_buffer", "keyed_identity", "eos_window_sum", "tumbling_window_sum"])
def test_operators_without_a_one_stage_reference_are_refused_outside_a_graph(operator):
    """They crashed the checker with KeyError (no reference output in model/job.py)."""
    with pytest.raises(ScenarioError, match="runs in a params.graph"):
        load_scenario(_job(operator, [{"op": "record", "source": 0, "key": "a", "value": 1, "ts": 1}]))


def test_a_timer_outside_javas_long_range_is_refused_where_it_is_registered():
    class Target:
        def on_event_time(self, timer): ...
        def on_processing_time(self, timer): ...

    context = KeyContext(4)
    manager = InternalTimeServiceManager(context, KeyGroupRange(0, 3), ManualProcessingTimeService())
    service = manager.get_internal_timer_service("t", Target())
    context.set_current_key("a")
    for register in (service.register_event_time_timer, service.register_processing_time_timer):
        with pytest.raises(TimestampOutOfRangeError, match=r"timer timestamp 9223372036854775808 is outside Java's long range"):
            register(None, MAX + 1)
    service.register_event_time_timer(None, MAX)
    service.register_processing_time_timer(None, MIN)


# -- limits ------------------------------------------------------------------------------------
def test_a_scenario_with_too_many_steps_is_one_line_exit_2(tmp_path):
    path = tmp_path / "long.json"
    steps = [{"op": "record", "source": 0, "key": "a", "value": 1, "ts": i} for i in range(31)]
    path.write_text(_job("window_sum", steps))
    done = _cli("replay", str(path), env={"STREAMPROOF_MAX_STEPS": "30"})
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"streamproof: error: {path}: field 'steps': 31 steps, over the limit of 30 (STREAMPROOF_MAX_STEPS raises it)"]
    assert _cli("replay", str(path), env={"STREAMPROOF_MAX_STEPS": "31"}).returncode == 0


def test_a_scenario_file_too_large_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "huge.json"
    path.write_text(json.dumps({"family": "job", "description": "x" * 5000, "steps": []}))
    done = _cli("replay", str(path), env={"STREAMPROOF_MAX_SCENARIO_BYTES": "4096"})
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert "over the limit of 0.0 MB (STREAMPROOF_MAX_SCENARIO_BYTES raises it)" in done.stderr
    assert str(path) in done.stderr


def test_the_default_limits_allow_what_the_suite_and_campaigns_write():
    from streamproof.properties.scenario import MAX_SCENARIO_BYTES, MAX_STEPS
    assert MAX_STEPS == 10_000 and MAX_SCENARIO_BYTES == 4 * 2**20
    load_scenario(_job("window_sum", [{"op": "record", "source": 0, "key": "a", "value": 1, "ts": i}
                                      for i in range(MAX_STEPS)]))


# -- streamproof snapshot inspect --------------------------------------------------------------
@pytest.fixture(scope="module")
def snapshot_bytes() -> bytes:
    return encode_snapshot(random_contents(random.Random(1), 128, KeyGroupRange(0, 63), 12, 2))


def test_inspect_lists_sections_counts_and_says_valid(tmp_path, snapshot_bytes):
    path = tmp_path / "t.snap"
    path.write_bytes(snapshot_bytes)
    done = _cli("snapshot", "inspect", str(path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith("format 2, max parallelism 128, key groups 0..63")
    assert lines[-1] == "valid: 3 section(s), 7 timer(s), every CRC checked"
    assert sum(" ok " in line for line in lines) == 3
    report = json.loads(_cli("snapshot", "inspect", "--json", "--timers", str(path)).stdout)
    assert report["valid"] and report["timers"] == len(report["timer_list"]) == 7
    assert sum(c["event"] + c["processing"] for s in report["sections"] for c in s["timers"].values()) == 7


def test_inspect_names_the_damaged_section_and_its_offset(tmp_path, snapshot_bytes):
    damaged = bytearray(snapshot_bytes)
    damaged[len(damaged) // 2] ^= 0x10
    path = tmp_path / "bad.snap"
    path.write_bytes(bytes(damaged))
    done = _cli("snapshot", "inspect", str(path))
    assert done.returncode == 1
    assert done.stdout.splitlines()[-1].startswith("INVALID: offset 51: section of key group 18: CRC mismatch")
    assert [line.split()[3] for line in done.stdout.splitlines() if line.strip()[:2] in ("18", "40", "54")] == ["bad", "ok", "ok"]
    path.write_bytes(snapshot_bytes[:100])
    assert _cli("snapshot", "inspect", str(path)).stdout.splitlines()[-1].startswith("INVALID: offset")


def test_inspect_of_a_missing_file_is_one_line_exit_2(tmp_path):
    done = _cli("snapshot", "inspect", str(tmp_path / "nope.snap"))
    assert done.returncode == 2 and done.stderr.splitlines() == [f"streamproof: error: {tmp_path / 'nope.snap'}: file not found"]


def test_a_snapshot_step_of_2_to_the_31_steps_ends_with_the_snapshot():
    """`snapshot_step.steps` allows up to 2^31-1: the steps past the last key group did nothing
    but loop for hours."""
    doc = json.loads((ROOT / "examples" / "snapshots" / "delete-and-register-again.json").read_text())
    step = next(s for s in doc["steps"] if s["op"] == "snapshot_step")
    step["steps"] = 2**31 - 1
    scenario = load_scenario(json.dumps(doc))
    for prop in registry.for_family("snapshots"):
        assert prop.check(scenario).holds


@pytest.mark.parametrize("step", [0, 13, 14])
def test_using_an_instance_whose_restore_was_rejected_is_an_error_event_not_a_crash(step):
    """A restore with another max parallelism is rejected (an error event on both sides); a later
    `use_instance` of the instance it would have made raised IndexError in the checker."""
    doc = json.loads((ROOT / "examples" / "timers" / "rescale-restore-split.json").read_text())
    doc["steps"][step]["max_parallelism"] = 32768
    scenario = load_scenario(json.dumps(doc))
    verdict = registry.get("timers.differential").check(scenario)
    assert verdict.holds, verdict.message

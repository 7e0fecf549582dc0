"""Whole-job vectors: the outputs Apache Flink 2.3 committed in failure-free runs of every corpus job
(tests/data/flink_job_outputs.json, recorded by ``python examples/jobs/flink_check.py --record``),
each one the simulator must produce failure-free on the same input. Runs without Flink.

Each of the three divergences the recording found (docs/decisions.md, "Apache Flink as the second
oracle") makes one of these fail when its modelling is taken out: the watermark generators at the
default parallelism (late_data_handling.py's paced run), unread side-output pairs as values and
PyFlink's reduce (sideoutput_word_count.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamproof.on_flink.oracle import FIDELITY_SCHEDULES, simulator_outputs, sink_names
from streamproof.properties.certify_job_runs import load_job

REPO = Path(__file__).resolve().parents[1]
RECORDED = json.loads((REPO / "tests" / "data" / "flink_job_outputs.json").read_text())
JOBS = REPO / "examples" / "jobs" / "real"


def _wanted(subject, runs: list) -> dict:
    names = sink_names(subject)
    return {tuple(tuple(sorted((value, count) for value, count in run["sinks"].get(name, []))) for name in names):
            run["run"] for run in runs}


def test_the_recording_covers_every_corpus_job_certify_runs():
    expected = json.loads((JOBS / "flink_expected.json").read_text())["jobs"]
    ran = {job for job, e in expected.items() if e["flink"] != "not run"}
    assert set(RECORDED["jobs"]) == ran
    assert RECORDED["flink"].startswith("2.3")


@pytest.mark.parametrize("job", sorted(RECORDED["jobs"]))
def test_the_simulator_gives_every_output_flink_committed(job):
    subject = load_job(str(JOBS / job))
    wanted = _wanted(subject, RECORDED["jobs"][job])
    _, found = simulator_outputs(subject, 2, sink_names(subject), set(wanted), FIDELITY_SCHEDULES)
    missing = [wanted[w] for w in wanted if w not in found]
    assert not missing, f"{job}: Flink's {missing} run output is none the simulator gives"


def test_a_collection_read_before_the_first_watermark_is_a_schedule_of_the_simulator():
    """Issue 26's case: from_collection emits a small collection before its periodic generator
    ticks, so every event-time timer fires at the end of input; the simulator gives that output
    with no watermark before the end of input."""
    subject = load_job(str(JOBS / "event_time_timer.py"))
    wanted = _wanted(subject, [r for r in RECORDED["jobs"]["event_time_timer.py"] if r["run"] == "as written"])
    _, found = simulator_outputs(subject, 2, sink_names(subject), set(wanted), FIDELITY_SCHEDULES)
    (output,) = wanted
    assert "no watermark before the end of input" in found[output]
    sums = dict(json.loads(value)["$tuple"] for value, _ in output[0])
    assert sums == {"Alice": 163.29999999999998, "Bob": 102.5}  # each timer emits the key's final sum

"""Whole-job vectors: the outputs Apache Flink 2.3 committed in failure-free runs of every corpus job
(tests/data/flink_job_outputs.json, recorded by ``python examples/jobs/flink_check.py --record``),
each one the simulator must produce failure-free on the same input. Runs without Flink.

Two of the divergences the recording found (docs/decisions.md, "Apache Flink as the second
oracle") make one of these fail when their modelling is taken out: the watermark generators at the
default parallelism (late_data_handling.py's paced run) and unread side-output pairs as values
(sideoutput_word_count.py). The third, PyFlink's reduce losing its state on a restore, shows only
under a failure: tests/test_job_corpus.py asserts sideoutput_word_count.py's refusal."""

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


# Known fidelity gaps, each with Flink's evidence (examples/jobs/real/flink_expected.json)
NOT_PRODUCED_YET: dict[str, str] = {}


@pytest.mark.parametrize("job", [pytest.param(j, marks=pytest.mark.xfail(strict=True, reason=NOT_PRODUCED_YET[j]))
                                 if j in NOT_PRODUCED_YET else j for j in sorted(RECORDED["jobs"])])
def test_the_simulator_gives_every_output_flink_committed(job):
    subject = load_job(str(JOBS / job))
    wanted = _wanted(subject, RECORDED["jobs"][job])
    _, found = simulator_outputs(subject, 2, sink_names(subject), set(wanted), FIDELITY_SCHEDULES)
    missing = [wanted[w] for w in wanted if w not in found]
    assert not missing, f"{job}: Flink's {missing} run output is none the simulator gives"


def test_a_collection_read_before_the_first_watermark_is_a_schedule_of_the_simulator():
    """Issue 26's case: from_collection emits a small collection before its periodic generator
    ticks, so every event-time timer fires at the end of input, each with its key's final sum; the
    simulator's run with no watermark before the end of input gives exactly Flink's output."""
    from collections import Counter

    from streamproof.properties.certify_job_checks import by_sink
    from streamproof.properties.certify_job_runs import JobScenario, simulate

    subject = load_job(str(JOBS / "event_time_timer.py"))
    (flink,) = [r for r in RECORDED["jobs"]["event_time_timer.py"] if r["run"] == "as written"]
    sums = Counter({tuple(json.loads(value)["$tuple"]): count for value, count in flink["sinks"]["Sink: print"]})
    assert sums == Counter({("Alice", 163.29999999999998): 4, ("Bob", 102.5): 4})
    none = tuple(() for _ in subject.source_records)
    run = simulate(subject, JobScenario(none, 2), faults=(), checkpoints=False)
    assert sorted(by_sink(run)["Sink: print"].items()) == [tuple(pair) for pair in flink["sinks"]["Sink: print"]]

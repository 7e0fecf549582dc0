"""Conformance of the ``mailbox`` family with Apache Flink 2.3 (``streamproof conform mailbox``).

* The regression scenarios ``examples/conformance/mailbox-*.json`` carry Flink's own trace
  (``flink_observed``, recorded with the harness), one per divergence cause found by ``conform``:
  urgent mail waiting in the queue latest first (``close`` order), queued urgent mail not joining a
  batch that starts with urgent mail, and ``create_batch`` leaving the queue alone while the batch
  holds mail. The implementation and the model replay each exactly; with a JDK, Flink reproduces
  the recorded traces.
* With a JDK: 300 generated scenarios (seed 0) run on Flink, the implementation and the model, with
  no harness error and no divergence.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from streamproof.properties.mailbox.runner import run_impl, run_model, same_trace
from streamproof.properties.scenario import load_scenario_file
from streamproof.replayer import replay

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "conformance"
FILES = sorted(EXAMPLES.glob("mailbox-*.json"))
HAVE_JDK = shutil.which("java") is not None and shutil.which("javac") is not None
needs_jdk = pytest.mark.skipif(not HAVE_JDK, reason="no JDK: java and javac are needed to run the Flink harness")


def test_regression_files_exist():
    assert {p.stem for p in FILES} >= {"mailbox-urgent-close-order", "mailbox-urgent-behind-urgent-batch-head",
                                       "mailbox-create-batch-keeps-queue"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_regression_scenario_replays(path):
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["family"] == "mailbox" and doc["name"] == path.stem and doc["description"]
    result = replay(load_scenario_file(path))
    assert result.matches_expected is True, result.mismatch
    steps = load_scenario_file(path).steps
    assert same_trace(run_impl(steps), doc["flink_observed"])
    assert same_trace(run_model(steps), doc["flink_observed"])


@needs_jdk
def test_regression_scenarios_on_flink():
    from streamproof.conformance import harness
    docs = [json.loads(p.read_text(encoding="utf-8")) for p in FILES]
    answers = harness.run("2.3.0", "mailbox", docs)
    for doc, answer in zip(docs, answers):
        assert "error" not in answer, (doc["name"], answer)
        assert answer["observed"] == doc["flink_observed"], doc["name"]


# The 300-scenario comparison with Flink of every family: tests/test_conformance_cli.py.

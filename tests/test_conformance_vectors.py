"""The Flink vectors the tests use are the project's own (streamproof/conformance/vectors/, written
by ``make vectors`` from Flink's classes, with the Flink version in each file): they equal the
public vectors of ../shared/vectors case by case, and recording them again on Flink 2.3 changes
nothing."""

import json
import shutil

import pytest

from streamproof.conformance.vectors import FILES, regenerate
from tests.vectors import PROJECT, load_shared

JAVA = shutil.which("java") and shutil.which("javac")


@pytest.mark.parametrize("family", sorted(FILES))
def test_the_projects_vectors_equal_the_public_ones(family):
    ours = json.loads((PROJECT / FILES[family]).read_text(encoding="utf-8"))
    public = load_shared(FILES[family])
    assert ours["flink_version"] == "2.3.0" and "Apache Flink 2.3.0" in ours["source"]
    assert [c["name"] for c in ours["cases"]] == [c["name"] for c in public["cases"]]
    for mine, theirs in zip(ours["cases"], public["cases"]):
        assert mine["steps"] == theirs["steps"], mine["name"]
        assert mine["flink_observed"] == theirs["flink_observed"], mine["name"]


@pytest.mark.skipif(not JAVA, reason="java/javac not installed: the Flink harness cannot be built")
@pytest.mark.parametrize("family", sorted(FILES))
def test_recording_the_vectors_again_on_flink_changes_nothing(family):
    doc, changed = regenerate("2.3.0", family)
    assert changed == [], f"{family}: cases whose Flink observations changed: {changed}"
    assert len(doc["cases"]) == {"timers": 25, "mailbox": 12, "valve": 18}[family]

"""The corpus of real operators (examples/operators/real/, from public Flink sources, in PyFlink
form): each verdict is asserted, every refusal names the property and invariant its analysis
explains (README.md there, docs/certify.md), and every certification exercised the operator's
timers before end of input and produced output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamproof.properties import certify as cert

REPO = Path(__file__).resolve().parent.parent
CORPUS = json.loads((REPO / "examples" / "operators" / "real" / "corpus.json").read_text())


def test_the_corpus_has_at_least_ten_operators_from_named_public_sources():
    assert len(CORPUS) >= 10
    for entry in CORPUS:
        module = (REPO / "examples" / "operators" / "real" / entry["file"]).read_text()
        assert entry["source"].startswith("https://github.com/") and "Source" in module.split('"""')[1]


@pytest.mark.parametrize("entry", CORPUS, ids=lambda e: e["operator"].split(":")[0].rsplit(".", 1)[-1])
def test_verdict(entry, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    subject = cert.load(entry["operator"], entry.get("args") or None)
    certificate = cert.certify(subject, entry["examples"], 0, tmp_path)
    by_property = {r["property"]: r for r in certificate.results}
    if entry["expected"] == "certified":
        assert certificate.status == "certified", certificate.markdown()
        coverage = by_property["certify.same-output"]["coverage"]
        assert coverage["timer fired before end of input"] > 0 and coverage["non-empty output"] > 0
    else:
        assert certificate.status == "not certified", certificate.markdown()
        refused = by_property[entry["refused_by"]]
        assert refused["verdict"] == "failed" and refused["invariant"] == entry["invariant"], refused
        failed = {r["property"] for r in certificate.results if r["verdict"] == "failed"}
        assert failed == {entry["refused_by"]}, f"refused by more than the explained property: {failed}"

"""``streamproof certify``: a correct operator is certified, classic mistakes are not (with a
counterexample that replays), bad input is one line and exit 2."""

import json

import pytest
from click.testing import CliRunner

from streamproof.properties import certify as cert
from streamproof.cli import cli

OPS = "tests.certify_operators"


def run(*args):
    return CliRunner().invoke(cli, ["certify", *args])


def test_a_correct_operator_is_certified(tmp_path):
    result = run(f"{OPS}:GoodSum", "--examples", "60", "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "certificate.json").read_text())
    assert doc["certified"] and [r["property"] for r in doc["results"]] == list(cert.CHECKS)
    assert all(r["verdict"] == "held" and r["examples"] == 60 for r in doc["results"])
    assert "**certified**" in (tmp_path / "certificate.md").read_text()


def test_state_outside_keyed_state_is_not_certified_and_its_counterexample_replays(tmp_path):
    result = run(f"{OPS}:InstanceCounter", "--examples", "60", "--out", str(tmp_path))
    assert result.exit_code == 1, result.output
    doc = json.loads((tmp_path / "certificate.json").read_text())
    failed = [r for r in doc["results"] if r["verdict"] == "failed"]
    assert [r["property"] for r in failed] == ["certify.same-output"]
    path = failed[0]["scenario_file"]
    assert run(f"{OPS}:InstanceCounter", "--replay", path).exit_code == 1
    assert run(f"{OPS}:GoodSum", "--replay", path).exit_code == 0  # the same scenario, a correct operator


def test_an_operator_that_raises_is_not_certified(tmp_path):
    c = cert.certify(f"{OPS}:Raises", 30, 0, tmp_path)
    assert not c.holds and c.results[0]["invariant"] in ("failure-free-run-finishes", "job-finishes")
    assert "boom in on_timer" in c.results[0]["message"]


@pytest.mark.parametrize("spec, message", [
    ("no_such_module:X", "cannot import no_such_module"),
    (f"{OPS}:NotAnOperator", "is not a KeyedProcessFunction subclass"),
    (f"{OPS}:Missing", "is not a KeyedProcessFunction subclass"),
    (f"{OPS}:NeedsArguments", "cannot be built without arguments"),
    ("nocolon", "expected module:Class"),
    (f"{OPS}:main", "main builds and runs a job (it calls get_execution_environment() at line"),
])
def test_bad_operators_are_one_line_errors(spec, message):
    result = CliRunner().invoke(cli, ["certify", spec], catch_exceptions=False)
    assert result.exit_code == 2 and message in result.output and len(result.output.strip().splitlines()) == 1


def test_the_pytest_fixture_certifies(streamproof_certify):
    certificate = streamproof_certify(f"{OPS}:GoodSum", examples=30)
    assert certificate.holds and len(certificate.results) == len(cert.CHECKS)


@pytest.mark.parametrize("bug, prop", [
    ("watermark-emitted-when-interrupted", "certify.watermarks"),
    ("interrupt-checked-before-first-timer", "certify.end-of-input"),
    ("sink-commits-on-snapshot", "certify.same-output"),
])
def test_each_certification_property_catches_a_runtime_bug(bug, prop):
    """A correct operator on a broken runtime is not certified: each property bites."""
    from streamproof.properties.bugzoo import get_variant
    from streamproof.properties.explore import explore

    props = {p.name: p for p in cert.properties_for(cert.load(f"{OPS}:GoodSum"))}
    with get_variant(bug).patch():
        result = explore(props[prop], 300, seed=0, shrink=False)
    assert not result.holds, f"{prop} survived {bug}"


def test_an_operator_whose_output_changes_when_firings_split_is_not_certified():
    from streamproof.properties.explore import explore

    props = {p.name: p for p in cert.properties_for(cert.load(f"{OPS}:CountAtFiring"))}
    result = explore(props["certify.interruptible-timers"], 100, seed=0, shrink=False)
    assert not result.holds and result.invariant == "same-output-with-split-firings", result
    assert "splitting timer firings" in result.message and result.reach.get("timer firing interrupted", 0) > 0
    good = {p.name: p for p in cert.properties_for(cert.load(f"{OPS}:GoodSum"))}
    assert explore(good["certify.interruptible-timers"], 100, seed=0).holds  # the window sum does not care


def test_a_job_entry_point_is_refused_without_being_called():
    from tests import certify_operators

    with pytest.raises(cert.CertifyError, match="certify never runs it"):
        cert.load(f"{OPS}:main")
    assert certify_operators.RAN == []


def _certificate(verdict: str, message: str | None = None) -> cert.Certificate:
    """A certificate whose first property has ``verdict`` (and ``message``), the others held."""
    def result(prop: str, verdict: str, message: str | None) -> dict:
        failed = {"invariant": "same-output", "scenario_file": "out/x.json",
                  "replay": "streamproof certify m:C --replay out/x.json",
                  "trace": ["steps:", '    0  {"op":"record","key":"a|b","value":1}']} if message else {}
        return {"property": prop, "verdict": verdict, "examples": 7, "seconds": 0.5, "message": message,
                "invariant": None, "scenario_file": None, "replay": None, "trace": None,
                "coverage": {c: 1 for c in cert.checks.COVERAGE}, **failed}

    results = [result(p, verdict, message) if i == 0 else result(p, "held", None) for i, p in enumerate(cert.CHECKS)]
    return cert.Certificate("pkg.ops:My_Op", 60, 0, results, versions={"streamproof": "t"},
                            source={"file": "ops.py", "sha256": "ab"}, command="streamproof certify pkg.ops:My_Op",
                            date="today", input={"records": "built-in"},
                            findings=[{"finding": "output depends on arrival order", "scenarios": 2, "hint": "**h**"}])


def test_the_certificate_page_renders_its_markdown_and_highlights_failures(tmp_path):
    from tests.pages import highlighted, packaged, raw_markdown

    assert packaged("streamproof.properties", "certificate.html.j2", "base.html.j2", "style.css") == []
    failed = _certificate("failed", "extra [('a', 1)] <lambda> **not bold** | a pipe")
    failed.write(tmp_path)
    page = (tmp_path / "certificate.html").read_text()
    assert raw_markdown(page) == [] and highlighted(page)
    assert '<p class="banner fail">not certified</p>' in page
    assert "<h1>Certificate: <code>pkg.ops:My_Op</code></h1>" in page
    assert "<h2>Coverage" in page and "<pre><code>" in page and "<strong>not certified</strong>" in page
    assert page.count('<tr class="fail">') == 1 and "<td>failed</td>" in page
    assert "&lt;lambda&gt;" in page and "<lambda>" not in page  # a message is text, never markup
    assert ".page{max-width:" in page and "white-space:pre-wrap" in page and "overflow-wrap:anywhere" in page
    assert "**certified**" not in (tmp_path / "certificate.md").read_text()  # the Markdown is kept as it was
    assert "| `certify.same-output` | failed |" in (tmp_path / "certificate.md").read_text()
    held = _certificate("held").html()
    assert raw_markdown(held) == [] and not highlighted(held) and '<p class="banner ok">certified</p>' in held
    unexercised = _certificate("not exercised", "no scenario had a late record").html()
    assert '<p class="banner warn">not exercised</p>' in unexercised and '<tr class="warn">' in unexercised


def test_the_replay_command_of_an_operator_certified_with_objects_needs_no_input(tmp_path, monkeypatch):
    """An operator certified with its records as a strategy (the pytest fixture, streamproof.certify)
    prints `streamproof certify module:Class --replay FILE`: the file has the records, so the
    command must not ask for --records."""
    (tmp_path / "attribute_ops.py").write_text(
        "from streamproof.flink.datastream import KeyedProcessFunction\n"
        "class Counts(KeyedProcessFunction):\n"
        "    seen = 0\n"
        "    def process_element(self, value, ctx):\n"
        "        ctx.timer_service().register_event_time_timer(ctx.timestamp())\n"
        "    def on_timer(self, timestamp, ctx):\n"
        "        self.seen += 1\n"
        "        yield ctx.get_current_key(), self.seen\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from hypothesis import strategies as st

    import attribute_ops
    import streamproof

    certificate = streamproof.certify(attribute_ops.Counts, 15, records=st.tuples(st.sampled_from("ab"), st.integers(0, 50)),
                                      key=lambda r: r[0], timestamp=lambda r: r[1], out=str(tmp_path / "out"))
    assert not certificate.holds
    failed = next(r["property"] for r in certificate.results if r["verdict"] == "failed")
    counterexample = tmp_path / "out" / f"{failed}.json"
    result = run("attribute_ops:Counts", "--replay", str(counterexample))
    assert result.exit_code == 1, result.output
    assert f"{failed}: FAILED" in result.output and "give its input" not in result.output

"""``streamproof explain``: a scenario's run as a timeline, one lane per subtask plus the job
manager, the row where the invariant broke marked, the family's reference; text and HTML; exit
codes as ``replay`` (0 held, 1 failed, 2 bad input with one line on stderr)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from streamproof.cli import cli
from streamproof.explain import timeline_html
from streamproof.explain.build import build_timeline, explain
from streamproof.explain.render import render_html, render_text
from streamproof.properties.bugzoo import get_variant
from streamproof.properties.scenario import load_scenario, load_scenario_file

from tests.pages import highlighted, packaged, raw_markdown

REPO = Path(__file__).resolve().parents[1]
TRIGGER = REPO / "examples" / "termination" / "trigger.json"
GRAPH_DUPLICATE = REPO / "examples" / "job" / "graph" / "chain-duplicate-watermark.json"
RESCALE = REPO / "examples" / "job" / "rescale-then-fail-after-final-checkpoint.json"
VALVE_DUPLICATE = REPO / "examples" / "valve" / "legacy-flink-26029-duplicate.json"
VALVE_JOB = {"format": "streamproof.scenario/1", "family": "valve_job",
             "params": {"protocol": "legacy", "events": [60], "seed": 3},
             "steps": [{"op": "fail_recipient", "operator": 0, "subtask": 0, "after": 11}]}


def run(*args: str):
    try:
        runner = CliRunner(mix_stderr=False)  # click < 8.2
    except TypeError:
        runner = CliRunner()
    return runner.invoke(cli, [str(a) for a in args], catch_exceptions=False)


def lane_texts(timeline, lane: str) -> list[str]:
    return [r.text for r in timeline.rows if r.lane == lane]


def test_termination_lanes_and_events_in_their_lane():
    timeline = explain(load_scenario_file(TRIGGER), str(TRIGGER))
    assert timeline.holds and timeline.marked is None
    assert timeline.lanes == ["JM", "subtask 0"]
    jm, task = lane_texts(timeline, "JM"), lane_texts(timeline, "subtask 0")
    assert "trigger checkpoint 1 (step 5)" in jm and "complete checkpoint 1" in jm
    assert "register proc timer 'b'@2999 (in a callback)" in task
    assert "fire(proc) 'b'@2999 TRIGGER reads MAX" in task
    assert "fire(event) 'a'@2000" in task and "wm in MAX" in task and "wm out MAX" in task
    assert any(t.startswith("in 'a'") for t in task) and any(t.startswith("snapshot checkpoint") for t in task)
    assert any(t.startswith("commit ('sink', 0, ") for t in task)  # the one-operator graph's sink (issue 32)
    # as it ran: the flush between end of input and finish(), EndOfData after finish()
    order = [t.split(" (")[0] for t in task]
    assert order.index("end of input") < order.index("flush begins") < order.index("flush ends") \
        < order.index("finish()") < order.index("EndOfData")
    text = render_text(timeline, 100)
    assert ">>" not in text and "verdict: held" in text and "reference (the scenario's certain timers" in text
    assert "not recorded" in text and "mail and its priority" in text


def test_bug_variant_marks_the_broken_invariant_and_prints_the_reference():
    scenario = load_scenario_file(TRIGGER)
    with get_variant("flush-handles-head-only").patch():
        timeline = explain(scenario, str(TRIGGER))
    assert not timeline.holds
    marked = timeline.marked
    assert marked is not None and marked.note.startswith("trigger-and-wait-fire-once:")
    # the checker gives no position: the end of the (only) attempt is marked
    assert marked is timeline.rows[-1]
    task = lane_texts(timeline, "subtask 0")
    assert "fire(proc) 'a'@2000 TRIGGER reads MAX" in task and "fire(proc) 'b'@3000 TRIGGER reads MAX" not in task
    text = render_text(timeline, 100)
    assert text.count("\n>> ") == 1 and "broke here: trigger-and-wait-fire-once" in text
    assert "this run: never committed 'b'@3000, 'b'@5000" in text


def test_graph_marks_the_watermark_that_broke_in_its_operator_lane():
    timeline = explain(load_scenario_file(GRAPH_DUPLICATE))
    assert timeline.lanes == ["JM", "A[0]", "B[0]", "sink[0]"]
    marked = timeline.marked
    assert (marked.lane, marked.text, marked.attempt) == ("B[0]", "wm out 30", 0)
    before = [r.text for r in timeline.rows[:timeline.rows.index(marked)] if r.lane == "B[0]"]
    assert before[-1] == "wm out 30"  # the first of the two
    assert "watermarks-strictly-increase" in marked.note
    assert any(t.startswith("in 'a'") for t in lane_texts(timeline, "A[0]"))
    assert any(title.startswith("reference (failure-free run") for title, _ in timeline.sections)


def test_attempt_boundaries_and_lanes_of_a_rescaled_job():
    timeline = explain(load_scenario_file(RESCALE))
    assert timeline.holds
    assert timeline.lanes == ["JM", "subtask 0", "subtask 1", "subtask 2"]
    failovers = [r for r in timeline.rows if r.text.startswith("FAILOVER")]
    assert [r.lane for r in failovers] == ["JM", "JM"] and "restore checkpoint 15, parallelism 2" in failovers[0].text
    assert {r.attempt for r in timeline.rows} == {0, 1, 2}
    assert "---- attempt 1 " in render_text(timeline, 120)


def test_step_families_draw_their_steps_in_one_lane():
    timeline = explain(load_scenario_file(VALVE_DUPLICATE))
    assert timeline.lanes == ["steps"] and not timeline.holds
    assert timeline.marked.text.startswith("7: send") and "applied-once" in timeline.marked.note
    assert any(title.startswith("observed") for title, _ in timeline.sections)
    held = explain(load_scenario_file(REPO / "examples" / "timers" / "one-physical-timer.json"))
    assert held.holds and held.marked is None
    assert any(title == "reference (expected)" or title.startswith("reference (") for title, _ in held.sections)


def test_valve_job_has_a_coordinator_lane_and_a_lane_per_recipient():
    timeline = explain(load_scenario(json.dumps(VALVE_JOB)))
    assert timeline.lanes == ["JM", "op0[0]"] and not timeline.holds
    assert any(t.startswith("FAILOVER region") for t in lane_texts(timeline, "JM"))
    assert timeline.marked is not None and timeline.marked.note.startswith(timeline.failure.split(":")[0])


def test_html_of_a_plain_result_and_of_a_failure():
    from streamproof.properties.job.check import runs
    scenario = load_scenario_file(GRAPH_DUPLICATE)
    result, _ = runs(scenario)
    page = timeline_html(scenario, result)
    assert page.startswith("<!DOCTYPE html>") and "<th>B[0]</th>" in page and "<th>JM</th>" in page
    assert page.count('class="broken"') == 1 and "no order across lanes" in page
    assert "<h3>legend</h3>" in page and "watermarks-strictly-increase" in page
    timeline = build_timeline(scenario, result)
    assert timeline.marked.lane == "B[0]" and render_html(timeline) == page


def test_cli_exit_codes_text_and_html(tmp_path):
    held = run("explain", TRIGGER, "--width", "90")
    assert held.exit_code == 0, held.stderr
    assert "| JM" in held.stdout and "| subtask 0" in held.stdout and "verdict: held" in held.stdout
    assert max(len(line) for line in held.stdout.splitlines() if line.startswith("   ")) <= 90
    out = tmp_path / "t.html"
    failed = run("explain", GRAPH_DUPLICATE, "--html", out)
    assert failed.exit_code == 1
    assert "\n>> " in failed.stdout and f"html: {out}" in failed.stdout
    page = out.read_text(encoding="utf-8")
    assert 'id="broken"' in page and "</html>" in page
    injected_page = tmp_path / "injected.html"
    injected = run("explain", TRIGGER, "--inject", "flush-handles-head-only", "--html", injected_page)
    assert injected.exit_code == 1 and "broke here: trigger-and-wait-fire-once" in injected.stdout
    assert "BUG INJECTED: flush-handles-head-only" in injected.stdout  # the page says it is not the runtime as it is
    assert 'class="banner warn injected"' in injected_page.read_text(encoding="utf-8")
    assert "BUG INJECTED" not in failed.stdout and "injected" not in page


def test_cli_bad_input_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    for args in (("explain", tmp_path / "missing.json"), ("explain", bad), ("explain", TRIGGER, "--width", "5"),
                 ("explain", TRIGGER, "--inject", "no-such-variant")):
        result = run(*args)
        assert result.exit_code == 2, (args, result.stdout, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("streamproof: error: "), result.stderr
        assert result.stdout == ""


def test_the_page_comes_from_the_packaged_templates_with_a_verdict_banner():
    from importlib import resources

    from streamproof.properties import html_pages

    assert packaged("streamproof", "explain.html.j2", "timeline.html.j2") == []
    template = html_pages.environment("streamproof").get_template("timeline.html.j2")
    assert Path(template.filename) == Path(str(resources.files("streamproof"))) / "templates" / "timeline.html.j2"
    failed = render_html(explain(load_scenario_file(GRAPH_DUPLICATE)))
    held = render_html(explain(load_scenario_file(TRIGGER)))
    for page in (failed, held):
        assert raw_markdown(page) == [] and page.count("<style>") == 1
        assert ".page{max-width:" in page and "white-space:pre-wrap" in page and "overflow-wrap:anywhere" in page
    assert highlighted(failed) and '<p class="banner fail verdict-failed">verdict: FAILED (watermarks' in failed
    assert not highlighted(held) and '<p class="banner ok verdict-held">verdict: held</p>' in held
    # autoescaped: a value with markup in it is text
    timeline = explain(load_scenario_file(TRIGGER))
    timeline.rows[0].text = "<script>x</script>"
    assert "<script>" not in render_html(timeline) and "&lt;script&gt;x&lt;/script&gt;" in render_html(timeline)


def test_the_fragment_of_a_campaign_failure_applies_the_bug():
    from streamproof.explain import failure_fragment

    text = TRIGGER.read_text(encoding="utf-8")
    fragment = failure_fragment(text, "flush-handles-head-only")
    assert fragment.startswith('<section class="streamproof-timeline">') and "<html" not in fragment
    assert fragment.count('<tr class="broken">') == 1 and 'id="broken"' not in fragment  # one of several on a page
    assert "broke here: trigger-and-wait-fire-once" in fragment and highlighted(fragment)
    assert 'class="broken"' not in failure_fragment(text) and not highlighted(failure_fragment(text))


def test_json_is_the_timeline(tmp_path):
    result = run("explain", GRAPH_DUPLICATE, "--json", "--html", tmp_path / "t.html")
    assert result.exit_code == 1
    (line,) = result.stdout.splitlines()  # one JSON document; "html: ..." went to stderr
    timeline = json.loads(line)
    assert timeline["holds"] is False and timeline["lanes"][0] == "JM"
    assert sum(row["mark"] for row in timeline["rows"]) == 1 and timeline["failure"]

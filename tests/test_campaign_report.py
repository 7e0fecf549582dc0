"""The campaign report (no JVM): only the current campaign's runs (a rerun without --resume starts
afresh), killed runs shown as such, a stale report replaced by an in-progress note while a run
goes, a readable time-per-seed plot with many properties (failing seeds apart from held ones),
failures linked to their scenario files with replay commands a user can type and their timeline,
one signature per bug, tables without empty headers or long cut-off messages, and the HTML from
the packaged templates (no raw Markdown, failures highlighted)."""

from __future__ import annotations

import functools
import json
import re
import shlex
from pathlib import Path

from streamproof.spark_harness import campaign as camp
from streamproof.spark_harness import executor, report
from streamproof.spark_harness import spec as specs

from tests.pages import highlighted, packaged, raw_markdown
from tests.test_spark_unit import BUG, _write_results, config

TIMER = "timers.differential"


def _add_run(root: Path, name: str, run_id: str, started: float, **fields) -> None:
    record = camp.RunRecord(run_id, "local[2]", "classic", started, 10.0, 5.0, 0.1, 5, 2, 0, 1, 2, True)
    record.__dict__.update(fields)
    d = root / "_campaigns" / name / "runs" / run_id
    d.mkdir(parents=True)
    (d / "part-00000.txt").write_text(json.dumps(record.__dict__) + "\n")


@functools.cache
def _bug_rows() -> tuple[dict, ...]:
    return tuple(executor.run_seeds_locally(config(examples=10, inject=BUG, chunk=4), range(1, 6)))


def _bug_campaign(root: Path, created: float = 0.0) -> specs.CampaignSpec:
    spec = specs.CampaignSpec(name="rep", properties=[TIMER], seed_start=1, seed_end=6, examples=10, inject=BUG,
                              version="t", chunk_seeds={TIMER: 4}, created=created)
    _write_results(root, [dict(r) for r in _bug_rows()], spec)  # and a run "r1" started at 1.0
    return spec


def test_runs_of_an_earlier_campaign_of_the_same_name_are_not_listed(tmp_path):
    _bug_campaign(tmp_path, created=100.0)  # r1 (started 1.0) ran the campaign before it started again
    _add_run(tmp_path, "rep", "r2", 100.0, seeds_run=5)
    _, (r,) = report.write_report(tmp_path)
    assert [run["run_id"] for run in r.runs] == ["r2"]
    text = (tmp_path / "_report" / "report.md").read_text()
    assert "| r2 |" in text and "| r1 |" not in text


def test_a_rerun_without_resume_sets_the_old_results_aside(tmp_path):
    (tmp_path / "campaign=rep" / "property=p" / "chunk=0").mkdir(parents=True)
    (tmp_path / "_campaigns" / "rep" / "runs").mkdir(parents=True)
    (tmp_path / "campaign=other").mkdir()
    where = camp.set_aside(str(tmp_path), "rep")
    assert where == str(tmp_path / "_previous" / "rep")
    assert not (tmp_path / "campaign=rep").exists() and not (tmp_path / "_campaigns" / "rep").exists()
    assert (Path(where) / "campaign=rep" / "property=p" / "chunk=0").is_dir()
    assert (Path(where) / "rep" / "runs").is_dir() and (tmp_path / "campaign=other").is_dir()
    assert camp.set_aside("hdfs://nn/results", "rep") is None  # not local: the rows are reset instead


def test_a_killed_run_is_shown_as_such(tmp_path):
    _bug_campaign(tmp_path)
    _add_run(tmp_path, "rep", "r2", 2.0, status="running", completed=False)
    md, (r,) = report.write_report(tmp_path)
    text = md.read_text()
    assert "did not finish (killed, or still running)" in text
    assert "its last run, r2, did not finish" in text


def test_a_stale_report_is_replaced_while_a_run_goes(tmp_path):
    _bug_campaign(tmp_path)
    report.write_report(tmp_path)
    assert "Every seed exactly once: yes." in (tmp_path / "_report" / "report.md").read_text()
    report.mark_in_progress(tmp_path, "rep", "r9")
    for name in ("report.md", "report.html"):
        text = (tmp_path / "_report" / name).read_text()
        assert "exactly once: yes" not in text and "IN PROGRESS" in text and "r9" in text
    assert not [p for p in (tmp_path / "_report").iterdir() if ".tmp-" in p.name]  # written whole


def test_the_time_plot_stays_readable_with_many_properties(tmp_path):
    import matplotlib.image

    names = [f"family{i:02d}.property" for i in range(18)]
    base = executor.run_seed(config(examples=1), 0)
    rows = [{**base, "property": p, "chunk": 0, "seed": s, "duration": 0.01 * (i + 1) * (s + 1)}
            for i, p in enumerate(names) for s in range(3)]
    spec = specs.CampaignSpec(name="many", properties=names, seed_start=0, seed_end=3, examples=1, version="t",
                              chunk_seeds={p: 3 for p in names})
    _write_results(tmp_path, rows, spec)
    _, (r,) = report.write_report(tmp_path)
    image = matplotlib.image.imread(tmp_path / "_report" / r.plots["seed_time"])
    assert image.shape[0] >= 18 * 25  # a row per property (a box each), not one legend over the plot


def test_the_html_links_failures_to_their_scenarios_and_replay_commands(tmp_path):
    _bug_campaign(tmp_path)
    _, (r,) = report.write_report(tmp_path)
    page = (tmp_path / "_report" / "report.html").read_text()
    assert r.failures
    for f in r.failures:
        rel = f"failures/rep/{TIMER}-{f['seed']}.json"
        assert f'<a href="{rel}">' in page
        assert (tmp_path / "_report" / rel).is_file()
        assert f"streamproof replay {f['file']} --inject {BUG}" in page


def test_tables_have_headers_and_short_cells(tmp_path):
    _bug_campaign(tmp_path)
    md, _ = report.write_report(tmp_path)
    page = (tmp_path / "_report" / "report.html").read_text()
    assert "<th></th>" not in page
    for line in md.read_text().splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            assert all(cells[:1]), line  # no empty header or first cell
            assert all(len(c) <= 160 for c in cells), line  # messages go in full below the tables


def _held_campaign(root: Path) -> None:
    spec = specs.CampaignSpec(name="ok", properties=[TIMER], seed_start=0, seed_end=3, examples=2, version="t",
                              chunk_seeds={TIMER: 3})
    _write_results(root, executor.run_seeds_locally(config(examples=2, chunk=3), range(3)), spec)


def test_the_page_checks_bite():
    found = raw_markdown("<p>**x**</p>\n|---|---|\n<p>`code`</p>\n## heading\n<pre># a comment</pre>")
    assert {f.split(":")[0] for f in found} == {"bold", "table separator", "code span", "heading"}
    assert len([f for f in found if f.startswith("heading")]) == 1  # a shell comment in <pre> is no heading
    assert raw_markdown("<p><strong>x</strong> <code>code</code></p>") == []
    assert highlighted('<tr class="fail">') and highlighted('<p class="banner fail">')
    assert not highlighted('<p class="banner ok">') and not highlighted('<tr class="failure-free">')
    assert packaged("streamproof.spark_harness", "no-such.html.j2") == ["no-such.html.j2"]


def test_the_templates_are_package_data():
    from streamproof.properties import html_pages

    assert packaged("streamproof.spark_harness", "report.html.j2") == []
    assert packaged("streamproof.properties", "base.html.j2", "style.css", "certificate.html.j2") == []
    template = html_pages.environment("streamproof.spark_harness").get_template("report.html.j2")
    from importlib import resources
    assert Path(template.filename) == Path(str(resources.files("streamproof.spark_harness"))) / "templates" / \
        "report.html.j2"


def test_the_html_renders_no_markdown_and_highlights_failures(tmp_path):
    _bug_campaign(tmp_path / "bug")
    _held_campaign(tmp_path / "held")
    report.write_report(tmp_path / "bug")
    report.write_report(tmp_path / "held")
    failed = (tmp_path / "bug" / "_report" / "report.html").read_text()
    held = (tmp_path / "held" / "_report" / "report.html").read_text()
    for page in (failed, held):
        assert raw_markdown(page) == []
        assert page.startswith("<!DOCTYPE html>") and "<table>" in page and "<h3>Results per property</h3>" in page
        assert ".page{max-width:" in page and "white-space:pre-wrap" in page and "overflow-wrap:anywhere" in page
    assert highlighted(failed) and '<p class="banner fail">Status: complete: seeds failed.</p>' in failed
    assert '<tr class="fail"><td>timers.differential</td>' in failed
    assert not highlighted(held) and '<p class="banner ok">Status: complete: every seed held.</p>' in held
    assert "```" in (tmp_path / "bug" / "_report" / "report.md").read_text()  # the Markdown stays Markdown


def test_one_injected_bug_is_one_signature(tmp_path):
    _bug_campaign(tmp_path)  # 5 seeds, each failing at its own step with its own timestamps
    _, (r,) = report.write_report(tmp_path)
    assert [(f["signature"], f["seeds"]) for f in r.failures] == [(r.failures[0]["signature"], 5)]
    assert r.per_property[0]["signatures"] == 1


def test_signatures_are_a_failures_shape_not_its_keys_and_values():
    fire = ("same-observations: step {step}: register: implementation [{fires}] but model []")
    one = "{'event': 'fire', 'key': %r, 'ts': %d, 'watermark': %d}"
    a = specs.signature(TIMER, "failed", "same-observations",
                        fire.format(step=3, fires=one % ("a", -9223372036854775808, -9223372036854775808)))
    b = specs.signature(TIMER, "failed", "same-observations",
                        fire.format(step=7, fires=", ".join([one % ("user-42", 0, 0), one % ("user-42", 5, 5)])))
    assert a == b and "'a'" not in a[1] and "user" not in a[1] and "9223" not in a[1]
    other = specs.signature(TIMER, "failed", "same-pending-timers",
                            fire.format(step=3, fires=one % ("a", -9223372036854775808, -9223372036854775808)))
    assert other[0] != a[0]
    # another shape of message for the same invariant stays apart; an apostrophe is no quote
    shape = specs.signature(TIMER, "failed", "same-observations", "same-observations: step 3: model fired 'a'@5")
    assert shape[0] != a[0]
    assert specs.normalize_message("the flush's clock 'k' at 5") == "the flush's clock S at N"
    assert specs.normalize_message("key 'x': [[1, 2], [3, 4, 5]] None") == "key S: [[N]] V"


def test_rerun_hints_are_streamproof_commands():
    from streamproof.cli import cli

    for inject, step_count, caught_by in ((None, 40, None), (BUG, 40, TIMER), (BUG, 60, "mailbox.differential"),
                                          (None, 17, None)):
        command = specs.reproduce_command(TIMER, 3, 10, step_count, inject, caught_by)
        words = shlex.split(command)
        words = words[1:] if words[0].startswith("HYPOTHESIS_PROFILE=") else words
        assert words[0] == "streamproof" and "python" not in command and len(command) < 200, command
        cli.commands[words[1]].make_context(words[1], words[2:])  # options it accepts (click raises otherwise)
        assert ("3" in words or "3:4" in words) and "10" in words
    assert specs.reproduce_command(TIMER, 3, 10, 17, BUG, "mailbox.differential") == (
        f"streamproof campaign {TIMER} --seeds 3:4 --examples 10 --step-count 17 --inject {BUG} "
        "--master 'local[1]' --out streamproof-out/rerun")


def test_each_failure_is_drawn_as_its_timeline(tmp_path):
    from streamproof.explain import failure_fragment

    _bug_campaign(tmp_path)
    calls = []

    def explain(scenario: str, inject: str | None) -> str:
        calls.append(inject)
        return failure_fragment(scenario, inject)

    _, (r,) = report.write_report(tmp_path, explain=explain)
    page = (tmp_path / "_report" / "report.html").read_text()
    assert calls == [BUG] * len(r.failures)
    assert page.count('<section class="streamproof-timeline">') == len(r.failures)
    assert page.count('<tr class="broken">') == len(r.failures)  # the bug applied: the row where it broke
    assert raw_markdown(page) == []

    def broken(scenario: str, inject: str | None) -> str:
        raise RuntimeError("no timeline today")

    report.write_report(tmp_path, explain=broken)
    page = (tmp_path / "_report" / "report.html").read_text()
    assert "timeline not drawn: RuntimeError: no timeline today" in page and "streamproof-timeline" not in page
    report.write_report(tmp_path)  # no hook: no timeline
    assert "streamproof-timeline" not in (tmp_path / "_report" / "report.html").read_text()


def _red_pixels(path: Path) -> int:
    import matplotlib.colors
    import matplotlib.image
    import numpy as np

    image = matplotlib.image.imread(path)[..., :3]
    red = np.array(matplotlib.colors.to_rgb("tab:red"))
    return int((np.abs(image - red).max(axis=-1) < 0.12).sum())


def test_the_time_plot_sets_failing_seeds_apart(tmp_path):
    _bug_campaign(tmp_path / "bug")
    _held_campaign(tmp_path / "held")
    _, (failed,) = report.write_report(tmp_path / "bug")
    _, (held,) = report.write_report(tmp_path / "held")
    assert _red_pixels(tmp_path / "bug" / "_report" / failed.plots["seed_time"]) > 50  # the failing seeds' dots
    assert _red_pixels(tmp_path / "held" / "_report" / held.plots["seed_time"]) == 0


def test_report_json_is_one_object_per_campaign_then_the_paths(tmp_path):
    from click.testing import CliRunner

    from streamproof.cli import cli

    _bug_campaign(tmp_path / "bug")
    result = CliRunner().invoke(cli, ["report", str(tmp_path / "bug"), "--json"])
    assert result.exit_code == 1, result.output
    campaign, paths = [json.loads(line) for line in result.stdout.splitlines()]
    assert campaign["campaign"] == "rep" and campaign["runs"] == 5 and campaign["failed"] == 5
    assert campaign["signatures"] == 1 and campaign["exactly_once"]
    assert Path(paths["html"]).is_file() and Path(paths["report"]).is_file()

"""The campaign report (no JVM): only the current campaign's runs (a rerun without --resume starts
afresh), killed runs shown as such, a stale report replaced by an in-progress note while a run
goes, a readable time-per-seed plot with many properties, failures linked to their scenario
files with replay commands, and tables without empty headers or long cut-off messages."""

from __future__ import annotations

import json
import re
from pathlib import Path

from streamproof.spark_harness import campaign as camp
from streamproof.spark_harness import executor, report
from streamproof.spark_harness import spec as specs

from tests.test_spark_unit import BUG, _write_results, config

TIMER = "timers.differential"


def _add_run(root: Path, name: str, run_id: str, started: float, **fields) -> None:
    record = camp.RunRecord(run_id, "local[2]", "classic", started, 10.0, 5.0, 0.1, 5, 2, 0, 1, 2, True)
    record.__dict__.update(fields)
    d = root / "_campaigns" / name / "runs" / run_id
    d.mkdir(parents=True)
    (d / "part-00000.txt").write_text(json.dumps(record.__dict__) + "\n")


def _bug_campaign(root: Path, created: float = 0.0) -> specs.CampaignSpec:
    spec = specs.CampaignSpec(name="rep", properties=[TIMER], seed_start=1, seed_end=6, examples=10, inject=BUG,
                              version="t", chunk_seeds={TIMER: 4}, created=created)
    rows = executor.run_seeds_locally(config(examples=10, inject=BUG, chunk=4), range(1, 6))
    _write_results(root, rows, spec)  # and a run "r1" started at 1.0
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
        assert f"<a href='{rel}'>" in page
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

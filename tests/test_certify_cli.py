"""``streamproof certify`` input checks: ``--out`` checked before any work, ``--replay`` of a
file that is not a certification counterexample, errors naming the file in one line, the
certificate's example counts, and ``streamproof replay`` of a certify counterexample."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamproof.cli import cli
from streamproof.properties import certify as cert

REPO = Path(__file__).resolve().parents[1]
OPS = "tests.certify_operators"
TIMERS_EXAMPLE = sorted((REPO / "examples" / "timers").glob("*.json"))[0]


def run(*args: str):
    try:
        runner = CliRunner(mix_stderr=False)  # click < 8.2
    except TypeError:
        runner = CliRunner()
    return runner.invoke(cli, [str(a) for a in args], catch_exceptions=False)


def assert_input_error(result, *fragments: str) -> str:
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("streamproof: error: ") and "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def no_work(monkeypatch):
    """Fails the test if certification starts (the operator is loaded or explored)."""
    def refuse(*args, **kwargs):
        raise AssertionError("work started before --out was checked")

    monkeypatch.setattr(cert, "load", refuse)
    monkeypatch.setattr(cert, "preflight", refuse)
    monkeypatch.setattr(cert, "explore", refuse)


# ------------------------------------------------------------------------------------- --out

def test_out_whose_parent_does_not_exist_is_refused_before_any_work(tmp_path, no_work):
    out = tmp_path / "nonexistent" / "deep" / "dir"
    line = assert_input_error(run("certify", f"{OPS}:GoodSum", "--examples", "5", "--out", out),
                              f"--out {out}", "does not exist")
    assert str(tmp_path / "nonexistent" / "deep") in line
    assert not (tmp_path / "nonexistent").exists()  # nothing created on the way


def test_out_inside_a_file_or_being_a_file_is_refused(tmp_path, no_work):
    file = tmp_path / "a-file"
    file.write_text("x")
    assert_input_error(run("certify", f"{OPS}:GoodSum", "--out", file / "dir"), "is not a directory")
    assert_input_error(run("certify", f"{OPS}:GoodSum", "--out", file), "not a directory")


def test_out_in_a_directory_that_is_not_writable_is_refused(tmp_path, monkeypatch, no_work):
    parent = tmp_path / "read-only"
    parent.mkdir()
    real_access = os.access
    # chmod does not stop root (this suite may run as root): the check's verdict is what is tested
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: Path(p) != parent and real_access(p, mode, **kw))
    assert_input_error(run("certify", f"{OPS}:GoodSum", "--out", parent / "cert"), "not writable")
    assert_input_error(run("certify", f"{OPS}:GoodSum", "--out", parent), "not writable")


def test_out_whose_parent_exists_is_created(tmp_path):
    out = tmp_path / "new"
    result = run("certify", f"{OPS}:GoodSum", "--examples", "5", "--out", out)
    assert result.exit_code in (0, 1), result.output
    assert (out / "certificate.json").is_file()
    assert not list(out.glob(".*.tmp"))  # written through temporary files, none left


def test_json_is_one_document_on_stdout_and_the_text_on_stderr(tmp_path):
    out = tmp_path / "cert"
    result = run("certify", f"{OPS}:GoodSum", "--examples", "5", "--out", out, "--json")
    document = json.loads(result.stdout)  # the whole of stdout: one JSON document
    assert document["certificate"] == str(out / "certificate.json")
    assert document == {**json.loads((out / "certificate.json").read_text()), "certificate": str(out / "certificate.json"),
                        "exit_code": result.exit_code}
    assert "certificate:" in result.stderr  # the human lines moved to stderr


# ----------------------------------------------------------------------------------- --replay

def test_replay_of_another_familys_scenario_is_bad_input():
    line = assert_input_error(run("certify", f"{OPS}:GoodSum", "--replay", TIMERS_EXAMPLE),
                              str(TIMERS_EXAMPLE), "'timers' scenario", "not a certification counterexample")
    assert "streamproof replay" in line


@pytest.mark.parametrize("content, fragment", [
    (None, "file not found"),
    ("{not json", ""),
    ("[1, 2]", ""),
    (json.dumps({"format": "streamproof.scenario/1", "family": "job", "params": {"operator": "x"},
                 "steps": [{"op": "nonesuch"}]}), "step 0"),
])
def test_replay_errors_name_the_file_and_show_no_python_text(tmp_path, content, fragment):
    path = tmp_path / "cex.json"
    if content is not None:
        path.write_text(content)
    line = assert_input_error(run("certify", f"{OPS}:GoodSum", "--replay", path), f"{path}: ", fragment)
    for python in ("Errno", "Traceback", "Error:", "Error(", "<", "\\n"):
        assert python not in line, line


def test_replay_command_of_a_certify_counterexample_says_use_certify_replay(tmp_path):
    job = json.loads(sorted((REPO / "examples" / "job").glob("*.json"))[0].read_text())
    job["params"] = {**job.get("params", {}), "operator": f"user:{OPS}:InstanceCounter"}
    job["property"] = "certify.same-output"
    path = tmp_path / "certify.same-output.json"
    path.write_text(json.dumps(job))
    for command in ("replay", "explain"):
        assert_input_error(run(command, path), str(path), "'streamproof certify'",
                           f"streamproof certify {OPS}:InstanceCounter --replay {path}")


# ---------------------------------------------------------------------------- example counts

def test_certificate_header_and_table_count_the_same_examples(tmp_path):
    """A property that held ran the examples asked for; one that failed, at most that many (the
    re-runs of shrinking are not examples); coverage counts examples, so never more."""
    for op in ("GoodSum", "Raises"):
        out = tmp_path / op
        c = cert.certify(f"{OPS}:{op}", 30, 0, out)
        for r in c.results:
            assert (r["examples"] == 30) if r["verdict"] != "failed" else (1 <= r["examples"] <= 30), r
            assert all(n <= r["examples"] for n in r["coverage"].values()), r
        markdown = (out / "certificate.md").read_text()
        assert "30 job scenarios asked for per property" in markdown
        assert "*examples* is the number of job scenarios each property ran" in markdown

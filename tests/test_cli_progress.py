"""Progress of long commands on stderr (stdout and ``--json`` stay clean): on a terminal a status
line with what runs, examples done and elapsed time; elsewhere a line per finished property or
variant and a final summary line."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamproof.cli import cli
from streamproof.cli_common import Status

REPO = Path(__file__).resolve().parents[1]
JOB_EXAMPLE = REPO / "examples" / "job" / "rescale-then-fail-after-final-checkpoint.json"


def run(*args: str):
    try:
        runner = CliRunner(mix_stderr=False)  # click < 8.2
    except TypeError:
        runner = CliRunner()
    return runner.invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_check_not_on_a_terminal_prints_a_line_per_property_and_a_summary_on_stderr(tmp_path):
    result = run("check", "timers.differential", "mailbox.differential", "--examples", "15", "--json",
                 "--out", tmp_path)
    assert result.exit_code == 0, result.output
    assert [json.loads(ln)["property"] for ln in result.stdout.splitlines()] == [
        "timers.differential", "mailbox.differential"]  # stdout: JSON Lines only
    lines = result.stderr.splitlines()
    assert len(lines) == 3 and "\x1b" not in result.stderr, lines
    assert lines[0].startswith("[1/2] timers.differential: held, 15 examples, ")
    assert lines[1].startswith("[2/2] mailbox.differential: held, 15 examples, ")
    assert lines[2].startswith("check: 2 of 2 properties held in ")


def test_bugzoo_not_on_a_terminal_prints_a_line_per_variant_and_a_summary():
    result = run("bugzoo", "key-context-set-after-poll", "--examples", "300")
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 2, lines
    assert re.match(r"\[1/1\] key-context-set-after-poll: caught after \d+ examples? \(", lines[0]), lines[0]
    assert lines[1].startswith("bugzoo: 1 of 1 bug variants caught in ")
    assert result.stdout.splitlines()[-1] == "1 of 1 bug variants caught"


def test_replay_of_several_files_not_on_a_terminal_ends_with_a_summary():
    result = run("replay", JOB_EXAMPLE, JOB_EXAMPLE, "--json")
    assert result.exit_code == 0, result.output
    assert len([json.loads(ln) for ln in result.stdout.splitlines()]) == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("replay: 2 files, 2 held, 0 failed in ")


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_status_line_on_a_terminal_is_redrawn_and_erased_before_other_lines():
    stream = FakeTerminal()
    with Status("check", 2, stream=stream) as status:
        status.begin(0, "job.exactly-once")
        status.examples(120, 500)  # drawn at most 5 times a second (and every second by a ticker)
        status.draw()
        drawn = stream.getvalue().split("\r\x1b[K")[-1]
        assert re.fullmatch(r"check \[1/2\] job\.exactly-once: 120/500 examples, \d+\.\d s \(total \d+\.\d s\)",
                            drawn), drawn
        status.item("job.exactly-once: held")
        assert "\r\x1b[K[1/2] job.exactly-once: held\n" in stream.getvalue()
        status.begin(1, "job.watermarks")
        status.examples(37, 500, shrinking=True)
        status.draw()
        assert "job.watermarks: failure found after 37 examples, shrinking it," in stream.getvalue()
    assert stream.getvalue().endswith("\r\x1b[K")  # nothing left of the status line


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_check_on_a_terminal_draws_progress_on_stderr_only():
    master, slave = os.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "streamproof", "check", "timers.differential",
                             "--examples", "60", "--json"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=slave, text=True,
                            env={**os.environ, "COLUMNS": "200"})
    os.close(slave)
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # the other end closed
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        stdout, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(timeout=30)
    os.close(master)
    assert proc.returncode == 0
    assert json.loads(stdout)["examples"] == 60 and "\x1b" not in stdout  # stdout: clean JSON
    terminal = b"".join(chunks).decode()
    assert "\r\x1b[Kcheck [1/1] timers.differential: " in terminal
    assert re.search(r"timers\.differential: \d+/60 examples, ", terminal), terminal
    assert "[1/1] timers.differential: held, 60 examples" in terminal
    assert terminal.endswith("\r\x1b[K")  # the status line erased at the end

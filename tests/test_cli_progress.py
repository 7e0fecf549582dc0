"""Progress of long commands on stderr (stdout and ``--json`` stay clean), one display for check,
certify, bugzoo, replay and campaign (``properties/progress_display.py``, on rich).

On a terminal a live status (what runs, examples done or what shrinks, elapsed) erased before any
other line and at the end, leaving nothing of a longer line; elsewhere plain lines only (no escape
codes, no carriage returns): a line per finished property or variant, a summary, a heartbeat. The
campaign counts runs (one property on one seed), says what happens during Spark's start-up and which
seed shrinks. Time comes from fake clocks: nothing here depends on how fast the machine is."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from rich.console import Console

from streamproof.cli import cli
from streamproof.cli.common import Status
from streamproof.properties import progress_display
from streamproof.spark_harness import progress

REPO = Path(__file__).resolve().parents[1]
JOB_EXAMPLE = REPO / "examples" / "job" / "rescale-then-fail-after-final-checkpoint.json"


def run(*args: str):
    try:
        runner = CliRunner(mix_stderr=False)  # click < 8.2
    except TypeError:
        runner = CliRunner()
    return runner.invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def no_heartbeat(monkeypatch):
    """The commands below take a second or two; a slow machine must not add a heartbeat line."""
    monkeypatch.setattr(progress_display, "HEARTBEAT", 1e9)


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def plain_console() -> Console:
    return Console(file=io.StringIO(), force_terminal=False, width=40)  # narrower than the lines


def terminal(width: int = 100) -> Console:
    return Console(file=io.StringIO(), force_terminal=True, width=width, color_system="standard")


# ------------------------------------------------------------------------ what a terminal shows

CONTROL = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])|\r|\n|[^\x1b\r\n]+")


def screen(output: str) -> list[str]:
    """The lines a terminal shows after ``output``: text overwrites at the cursor; \\r, \\n, cursor
    up (CSI n A) and erase line (CSI 2K, CSI K) move and erase; colours and cursor visibility are
    ignored. Trailing blank lines are dropped."""
    rows: list[list[str]] = [[]]
    row = col = 0
    for m in CONTROL.finditer(output):
        token = m.group(0)
        if token == "\r":
            col = 0
        elif token == "\n":
            row, col = row + 1, 0
            rows.extend([] for _ in range(row + 1 - len(rows)))
        elif m.group(2) == "A":
            row = max(0, row - int(m.group(1) or 1))
        elif m.group(2) == "K":
            mode = m.group(1) or "0"
            rows[row] = [] if mode == "2" else rows[row][:col]
        elif m.group(2) is None:  # text
            line = rows[row] + [" "] * max(0, col - len(rows[row]))
            line[col:col + len(token)] = token
            rows[row], col = line, col + len(token)
    lines = ["".join(r).rstrip() for r in rows]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def test_the_screen_shows_what_a_carriage_return_leaves_of_a_longer_line():
    # what the hand-written campaign bar did: a shorter line over a longer one, without erasing it
    assert screen("\rcampaign 96/96 seeds  132 s\rcampaign 96/96 seeds  32 s") == ["campaign 96/96 seeds  32 ss"]
    assert screen("\rlonger line\r\x1b[2Kshort") == ["short"]
    assert screen("a\nb\n\x1b[1A\x1b[2Kc\n") == ["a", "c"]


# ----------------------------------------------------------------- commands not on a terminal

def test_check_not_on_a_terminal_prints_a_line_per_property_and_a_summary_on_stderr(tmp_path, no_heartbeat):
    result = run("check", "timers.differential", "mailbox.differential", "--examples", "15", "--json",
                 "--out", tmp_path)
    assert result.exit_code == 0, result.output
    assert [json.loads(ln)["property"] for ln in result.stdout.splitlines()] == [
        "timers.differential", "mailbox.differential"]  # stdout: JSON Lines only
    lines = result.stderr.splitlines()
    assert len(lines) == 3 and "\x1b" not in result.stderr and "\r" not in result.stderr, lines
    assert lines[0].startswith("[1/2] timers.differential: held, 15 examples, ")
    assert lines[1].startswith("[2/2] mailbox.differential: held, 15 examples, ")
    assert lines[2].startswith("check: 2 of 2 properties held in ")


def test_bugzoo_not_on_a_terminal_prints_a_line_per_variant_and_a_summary(no_heartbeat):
    result = run("bugzoo", "key-context-set-after-poll", "--examples", "300")
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stderr and "\r" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 2, lines
    assert re.match(r"\[1/1\] key-context-set-after-poll: caught after \d+ examples? \(", lines[0]), lines[0]
    assert lines[1].startswith("bugzoo: 1 of 1 bug variants caught in ")
    assert result.stdout.splitlines()[-1] == "1 of 1 bug variants caught"


def test_replay_of_several_files_not_on_a_terminal_ends_with_a_summary(no_heartbeat):
    result = run("replay", JOB_EXAMPLE, JOB_EXAMPLE, "--json")
    assert result.exit_code == 0, result.output
    assert len([json.loads(ln) for ln in result.stdout.splitlines()]) == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("replay: 2 files, 2 held, 0 failed in ")


def test_not_on_a_terminal_a_heartbeat_comes_at_most_every_n_seconds_and_says_what_shrinks():
    clock, console = Clock(), plain_console()
    with Status("check", 2, console=console, clock=clock, heartbeat=10) as status:
        assert not status.tty
        status.begin(0, "job.exactly-once")
        status.examples(120, 500)
        clock.now += 9
        status.display.tick()  # 9 s without a line: nothing yet
        assert console.file.getvalue() == ""
        clock.now += 2
        status.display.tick()
        status.display.tick()  # the heartbeat just came: not again
        status.item("job.exactly-once: held")
        status.begin(1, "job.watermarks")
        status.examples(37, 500, shrinking=True)
        clock.now += 45
        status.examples(37, 500, shrinking=True)  # shrinking goes on: it started 45 s ago
        status.display.tick()
        status.summary("1 of 2 properties held")
    out = console.file.getvalue()
    assert "\r" not in out and "\x1b" not in out
    assert out.splitlines() == [
        "check [1/2] job.exactly-once: 120/500 examples, 11 s (total 11 s)",  # one line, not wrapped at 40
        "[1/2] job.exactly-once: held",
        "check [2/2] job.watermarks: failure found after 37 examples, shrinking it (45 s), 45 s (total 56 s)",
        "check: 1 of 2 properties held in 56 s",
    ]


# ------------------------------------------------------------------------- on a terminal

def test_on_a_terminal_the_status_is_redrawn_and_leaves_nothing_behind():
    clock, console = Clock(), terminal(width=160)
    with Status("check", 2, console=console, clock=clock) as status:
        assert status.tty
        status.begin(0, "job.exactly-once-with-a-rather-long-property-name")
        status.examples(120, 500)
        status.display.refresh()
        [drawn] = screen(console.file.getvalue())
        assert drawn.endswith("check [1/2] job.exactly-once-with-a-rather-long-property-name: 120/500 examples, "
                              "0.0 s (total 0.0 s)"), drawn
        status.item("job.exactly-once-with-a-rather-long-property-name: held")
        status.begin(1, "w")
        clock.now += 3
        status.examples(37, 500, shrinking=True)
        clock.now += 12
        status.display.refresh()
        above, drawn = screen(console.file.getvalue())
        assert above == "[1/2] job.exactly-once-with-a-rather-long-property-name: held"
        # a shorter line over the longer one: nothing of the longer one is left
        assert re.fullmatch(r"\S+\s+check \[2/2\] w: failure found after 37 examples, shrinking it \(12 s\), "
                            r"15 s \(total 15 s\)", drawn), drawn
        with status.paused():  # stdout's lines on the same terminal: the status is erased meanwhile
            assert screen(console.file.getvalue()) == [above]
        assert len(screen(console.file.getvalue())) == 2
    assert screen(console.file.getvalue()) == [above]  # the status erased at the end


def test_on_a_narrow_terminal_the_status_is_cut_not_wrapped():
    clock, console = Clock(), terminal(width=50)
    with Status("bugzoo", 40, console=console, clock=clock) as status:
        status.begin(12, "a-variant-with-a-name-longer-than-the-terminal-is-wide")
        status.display.refresh()
        lines = screen(console.file.getvalue())
        assert len(lines) == 1 and len(lines[0]) <= 50 and lines[0].endswith("…"), lines


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_check_on_a_terminal_draws_progress_on_stderr_only():
    master, slave = os.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "streamproof", "check", "timers.differential",
                             "--examples", "60", "--json"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=slave, text=True,
                            env={**os.environ, "COLUMNS": "200", "TERM": "xterm"})
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
    terminal_output = b"".join(chunks).decode().replace("\r\n", "\n")  # the pty turns \n into \r\n
    assert "check [1/1] timers.differential: " in terminal_output
    assert "\x1b[2K" in terminal_output  # drawn in place
    assert screen(terminal_output) == [next(ln for ln in screen(terminal_output) if ln.startswith("[1/1] "))]
    assert screen(terminal_output)[0].startswith("[1/1] timers.differential: held, 60 examples")


# ----------------------------------------------------------------------------------- campaign

def spec(seeds: int = 4, properties: int = 24, mode: str = "random", timeout: float = 300.0):
    return SimpleNamespace(seeds=seeds, properties=[f"p{i}" for i in range(properties)], mode=mode,
                           timeout=timeout)


def test_the_campaign_counts_runs_of_seeds_times_properties_not_seeds():
    clock, console = Clock(), plain_console()
    display = progress.CampaignDisplay("nightly", console=console, clock=clock, heartbeat=10)
    with display:
        display.step("starting Spark (local[2])")
        clock.now += 12
        display.display.tick()  # start-up is said, with its time
        display.step("measuring the cost of a seed: p0 (1/24)")
        clock.now += 3
        display.begin(spec(), kept=0, waves=2)
        display.started(48)
        display.started(48)  # two waves in flight, 48 runs each
        display.tasks(7, 96)  # 7 of the 96 tasks (one seed each) finished
        clock.now += 10
        display.display.tick()
        display.ended(48, True, 1)
        display.tasks(2, 48)
        clock.now += 10
        display.display.tick()
        display.ended(48, False, 2)  # failed: runs again
        display.started(48)
        display.ended(48, True, 2)
    lines = console.file.getvalue().splitlines()
    assert lines == [
        "nightly: starting Spark (local[2]) ... 12 s",
        "nightly: 4 seeds x 24 properties: 96 runs, about 2 waves",
        "nightly: 4 seeds x 24 properties: 7/96 runs done, 89 queued or running, 0/2 waves committed, 10 s",
        "nightly: wave 1 committed: 48/96 runs done, 48 queued or running, 1/2 waves committed, 10 s",
        "nightly: 4 seeds x 24 properties: 50/96 runs done, 46 queued or running, 1/2 waves committed, 20 s",
        "nightly: wave 2 failed; running it again",
        "nightly: wave 2 committed: 96/96 runs done, 0 queued or running, 2/2 waves committed, 20 s",
    ]


def test_the_campaign_counts_runs_kept_from_earlier_runs_and_says_scenarios_in_exhaustive_mode():
    clock, console = Clock(), plain_console()
    display = progress.CampaignDisplay("ex", console=console, clock=clock)
    display.begin(spec(seeds=50, properties=1, mode="exhaustive"), kept=20, waves=1)
    display.started(30)
    display.tasks(1, 3)
    assert display.lines() == ["ex: 50 scenarios x 1 property: 30/50 runs done, 20 queued or running, "
                               "0/1 waves committed, 0.0 s"]
    assert console.file.getvalue() == "ex: 50 scenarios x 1 property: 50 runs, 20 kept from earlier runs, about 1 wave\n"


def test_the_campaign_on_a_terminal_shows_start_up_runs_and_shrinking_without_leftovers(tmp_path):
    clock, console = Clock(), terminal(width=120)
    display = progress.CampaignDisplay("nightly", console=console, clock=clock, local=True)
    channel = display.channel
    with display:
        display.step("starting Spark (local[2])")
        clock.now += 17
        display.display.refresh()
        assert screen(console.file.getvalue())[-1] == "nightly: starting Spark (local[2]) ... 17 s"
        display.begin(spec(), kept=0, waves=1)
        display.started(96)
        display.tasks(7, 96)
        progress._write_json(os.path.join(channel, "1.json"), {  # as an executor writes it
            "property": "timers.differential", "seed": 3, "since": clock.now - 45, "pid": os.getpid()})
        progress._write_json(os.path.join(channel, "2.json"), {  # older than the per-seed limit: cut, left out
            "property": "mailbox.differential", "seed": 5, "since": clock.now - 400, "pid": os.getpid()})
        display.display.tick()  # reads the executors' reports
        display.display.refresh()
        shown = screen(console.file.getvalue())
        assert shown[0] == "nightly: 4 seeds x 24 properties: 96 runs, about 1 wave"
        assert shown[1].endswith("nightly: 4 seeds x 24 properties: 7/96 runs done, 89 queued or running, "
                                 "0/1 waves committed, 0.0 s"), shown
        assert shown[2:] == ["shrinking timers.differential seed 3 (45 s)"]
        os.remove(os.path.join(channel, "1.json"))  # the seed ended
        display.display.tick()
        display.display.refresh()
        assert len(screen(console.file.getvalue())) == 2  # the shrinking line is gone, nothing left of it
    assert screen(console.file.getvalue()) == ["nightly: 4 seeds x 24 properties: 96 runs, about 1 wave"]
    assert not os.path.exists(channel)


def test_an_executor_reports_a_shrinking_seed_while_it_shrinks(tmp_path):
    path = str(tmp_path / "77.json")
    seen = []

    def explore(prop, examples, seed=None, progress=None):
        progress(10, False)
        seen.append(os.path.exists(path))
        progress(11, True)  # a failure found: shrinking
        progress(11, True)
        seen.append(json.loads(open(path).read()))
        return "exploration"

    reporting = progress.reporting_explore(explore, path)
    assert reporting(SimpleNamespace(name="timers.differential"), 20, seed=3) == "exploration"
    assert seen[0] is False
    assert (seen[1]["property"], seen[1]["seed"], seen[1]["pid"]) == ("timers.differential", 3, os.getpid())
    assert not os.path.exists(path)  # the seed ended
    found = progress.read_shrinking(str(tmp_path), seen[1]["since"] + 5, limit=300)
    assert found == []
    progress._write_json(path, {**seen[1], "pid": 2 ** 22 + 12345})  # a process that is gone
    assert progress.read_shrinking(str(tmp_path), seen[1]["since"] + 5, limit=300) == []


def test_a_campaign_that_cannot_start_spark_prints_the_error_alone(monkeypatch, tmp_path, no_heartbeat):
    from streamproof.spark_harness import session

    def no_java(*args, **kwargs):
        raise session.SparkSetupError("java not found: install a JDK")

    monkeypatch.setattr(session, "start_session", no_java)
    result = run("campaign", "timers.differential", "--seeds", "2", "--out", tmp_path, "--no-report")
    assert result.exit_code == 2
    assert result.stderr == "streamproof: error: java not found: install a JDK\n"

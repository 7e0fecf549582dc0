"""print() in user callbacks: kept, not shown (Flink writes a task's stdout to the TaskManager's
.out file). certify runs each callback thousands of times: before, a debugging print flooded its
report with every line (13,649 lines for 20 examples of one operator)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamproof.cli import cli
from streamproof.flink import adapt
from streamproof.impl.operators import user_clock
from streamproof.impl.operators.keyed_process_operator import KeyedProcessOperator, StreamRecord
from streamproof.impl.state.key_groups import KeyGroupRange
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService
from streamproof.properties import certify_job as cj

JOBS = Path(__file__).parent / "jobs"

USER_MODULE = '''
import sys
from streamproof.flink.datastream import KeyedProcessFunction

def helper(value):
    print("helper saw", value)

class Printing(KeyedProcessFunction):
    def process_element(self, value, ctx):
        print("got", value, sep="=", end="!\\n")
        print("line one\\nline two")
        print("to stderr", file=sys.stderr)
        helper(value)
        yield value
'''


@pytest.fixture
def user_module():
    module = types.ModuleType("streamproof_test_printing_user_module")
    sys.modules[module.__name__] = module
    exec(compile(USER_MODULE, "<user module>", "exec"), module.__dict__)
    user_clock.forget_printed()
    yield module
    user_clock.forget_printed()
    del sys.modules[module.__name__]


def test_a_callback_s_prints_are_kept_not_shown_and_stderr_is_printed(user_module, capsys):
    out = []
    op = KeyedProcessOperator(adapt(user_module.Printing()), max_parallelism=128, key_group_range=KeyGroupRange(0, 127),
                              processing_time_service=ManualProcessingTimeService(start=0),
                              emit=lambda v, ts: out.append(v))
    op.open()
    op.process_element(StreamRecord("k", 1, 0))
    assert out == [1]
    count, kept = user_clock.printed()
    assert (count, kept) == (4, ["got=1!", "line one", "line two", "helper saw 1"])
    seen = capsys.readouterr()
    assert seen.out == "" and seen.err == "to stderr\n"
    assert "print" not in vars(user_module)  # the builtin again once the callback ended
    print("outside callbacks")  # this test's own print: not kept
    assert user_clock.printed()[0] == 4 and capsys.readouterr().out == "outside callbacks\n"


def test_only_the_first_lines_are_kept_all_are_counted(user_module, monkeypatch):
    monkeypatch.setattr(user_clock, "KEEP_PRINTED", 3)
    op = KeyedProcessOperator(adapt(user_module.Printing()), max_parallelism=128, key_group_range=KeyGroupRange(0, 127),
                              processing_time_service=ManualProcessingTimeService(start=0), emit=lambda v, ts: None)
    op.open()
    for value in range(5):
        op.process_element(StreamRecord("k", value, 0))
    count, kept = user_clock.printed()
    assert count == 20 and kept == ["got=0!", "line one", "line two"]


def test_certify_keeps_an_operator_s_prints_in_a_file(tmp_path):
    result = CliRunner().invoke(cli, ["certify", "tests.certify_clock_ops:PrintingWindowSum", "--examples", "5",
                                      "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "got (" not in result.stdout and "window " not in result.stdout
    [line] = [ln for ln in result.stdout.splitlines() if ln.startswith("your code printed")]
    count = int(line.split()[3])
    kept = (tmp_path / "user-output.txt").read_text().splitlines()
    assert count > 100 and kept[0].startswith(("got (", "window ")), (line, kept[:3])
    assert len(kept) == min(count, user_clock.KEEP_PRINTED) + (count > user_clock.KEEP_PRINTED)
    assert "certified" in result.stdout


def test_a_replay_shows_what_the_operator_printed(tmp_path):
    refused = CliRunner().invoke(cli, ["certify", "tests.certify_clock_ops:PrintingCountNow", "--examples", "10",
                                       "--out", str(tmp_path)])
    assert refused.exit_code == 1, refused.output
    scenario = tmp_path / "certify.interruptible-timers.json"
    result = CliRunner().invoke(cli, ["certify", "tests.certify_clock_ops:PrintingCountNow", "--replay", str(scenario)])
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    start = lines.index(next(ln for ln in lines if ln.startswith("what your code printed (")))
    assert lines[start + 1].startswith("  count now "), lines[start:start + 3]
    assert all(not ln.startswith("count now") for ln in lines)  # none printed as it ran


def test_a_job_s_prints_are_kept_not_shown(capsys):
    user_clock.forget_printed()
    subject = cj.load_job(str(JOBS / "map_printing.py"))
    cert = cj.certify_job(subject, 3, 0)
    assert cert.status == "certified", cert.results
    count, kept = user_clock.printed()
    assert count > 0 and all(line.startswith("window sum (") for line in kept), kept[:3]
    assert "window sum" not in capsys.readouterr().out
    user_clock.forget_printed()

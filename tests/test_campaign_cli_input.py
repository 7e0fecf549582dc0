"""``streamproof campaign`` without a JVM: bad bounds and a resume of an unknown campaign are one
line (exit 2) before Spark starts; the interruption message says what finished; the printed
replay command of an injected campaign carries ``--inject``; waves are cut by measured work (the
campaign's progress display: tests/test_cli_progress.py)."""

from __future__ import annotations

import time

import pytest
from click.testing import CliRunner

from streamproof.cli import cli
from streamproof.properties.scenario import dump_scenario, load_scenario
from streamproof.spark_harness import campaign as camp
from streamproof.spark_harness import executor, session
from streamproof.spark_harness import spec as specs

from tests.test_spark_unit import BUG, config

TIMER = "timers.differential"


def invoke(*args):
    try:
        runner = CliRunner(mix_stderr=False)  # click < 8.2
    except TypeError:
        runner = CliRunner()
    return runner.invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def no_spark(monkeypatch):
    """Spark must not start: the input is refused before."""
    def refuse(*args, **kwargs):
        raise AssertionError("Spark was started for bad input")
    monkeypatch.setattr(session, "start_session", refuse)


@pytest.mark.parametrize("family, bound, fragment", [
    ("timers", "keys=[", "keys='[': expected a non-empty JSON list"),
    ("timers", "keys=abc", "keys='abc': expected a non-empty JSON list"),
    ("timers", "keys=[]", "keys='[]': expected a non-empty JSON list"),
    ("timers", "timestamps=5", "timestamps='5': expected a non-empty JSON list of distinct integers"),
    ("timers", "colour=1", "unknown bound 'colour' for family timers"),
    ("timers", "subtasks=3", "unknown bound 'subtasks' for family timers (a bound of valve)"),
    ("valve", "protocol=nope", "protocol='nope': expected one of"),
    ("valve", "subtasks=0", "subtasks='0': expected an integer"),
    ("mailbox", "keys=[\"a\"]", "unknown bound 'keys' for family mailbox (a bound of timers)"),
])
def test_a_bad_bound_is_one_line_before_spark_starts(no_spark, tmp_path, family, bound, fragment):
    result = invoke("campaign", family, "--exhaustive", "--bound", bound, "--out", tmp_path)
    assert result.exit_code == 2, result.stdout
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("streamproof: error: ")
    assert fragment in result.stderr, result.stderr


def test_resuming_an_unknown_campaign_is_an_error_not_a_new_campaign(no_spark, tmp_path):
    result = invoke("campaign", "timers", "--campaign", "never-ran", "--resume", "--out", tmp_path)
    assert result.exit_code == 2, result.stdout
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("streamproof: error: nothing to resume: no campaign 'never-ran'")
    assert not list(tmp_path.iterdir())  # nothing started


def test_an_interruption_says_what_finished_and_exits_130(monkeypatch, tmp_path):
    from streamproof.spark_harness import ship

    monkeypatch.setattr(session, "start_session", lambda *a, **k: object())
    monkeypatch.setattr(session, "stop_session", lambda spark: None)
    monkeypatch.setattr(session, "cluster_cores", lambda spark, target: 2)
    monkeypatch.setattr(ship, "ship", lambda spark: None)
    monkeypatch.setattr(camp, "warm_up", lambda spark, cores: None)
    monkeypatch.setattr(camp, "load_spec", lambda spark, out, name: None)

    def interrupted(spark, spec, out, run, **kw):
        run.seeds_total, run.seeds_kept, run.seeds_run, run.waves, run.seeds_dropped = 200, 0, 40, 2, 20
        raise KeyboardInterrupt

    monkeypatch.setattr(camp, "run_campaign", interrupted)
    result = invoke("campaign", TIMER, "--seeds", "100", "--chunk-seeds", "5", "--campaign", "ctrl-c",
                    "--out", tmp_path, "--inject", BUG)
    assert result.exit_code == 130
    assert result.stderr.count("\n") == 1
    line = result.stderr
    assert "40 of 200 runs (property x seed) are committed (40 this run, 2 waves) and kept" in line
    assert "the 20 runs of the waves in flight were dropped" in line
    assert "--resume" in line


def test_the_replay_command_of_an_injected_campaign_reproduces(tmp_path, capsys):
    from streamproof.cli.campaign_summary import print_summary

    row = next(r for r in executor.run_seeds_locally(config(examples=10, inject=BUG), range(1, 6))
               if r["verdict"] == "failed")
    path = tmp_path / "failure.json"
    path.write_text(dump_scenario(load_scenario(row["scenario"]), indent=2))
    spec = specs.CampaignSpec(name="inj", properties=[TIMER], seed_start=1, seed_end=6, examples=10, inject=BUG,
                              version="t", chunk_seeds={TIMER: 5})
    failure = {"property": TIMER, "verdict": "failed", "signature": row["signature"], "seeds": 1,
               "seed": row["seed"], "message": row["message"], "scenario": row["scenario"],
               "reproduce": row["reproduce"], "file": str(path)}
    per = [{"property": TIMER, "rows": 5, "held": 4, "failed": 1, "timeout": 0, "error": 0, "signatures": 1,
            "examples": 50, "steps": 500, "seconds": 1.0}]
    result = camp.CampaignResult(spec, "out", camp.new_run("local[2]", "classic"), per, [failure], True, [])
    print_summary(result, [], session.parse_master("local[2]"), None)
    replay = next(line.split("replay:", 1)[1].strip() for line in capsys.readouterr().out.splitlines()
                  if line.strip().startswith("replay:"))
    assert replay == f"streamproof replay {path} --inject {BUG}"
    args = replay.split()[1:]
    assert invoke(*args).exit_code == 1  # the failure reproduces: with the variant, the property fails


def test_waves_are_cut_by_measured_work_and_shrink_when_seeds_are_slower():
    spec = specs.CampaignSpec(name="w", properties=[TIMER], seed_start=0, seed_end=100, examples=1, version="t",
                              chunk_seeds={TIMER: 5}, seed_seconds={TIMER: 2.0})  # 10 s per chunk
    todo = [(TIMER, c) for c in range(spec.chunks(TIMER))]
    planner = camp.WavePlanner(spec, todo, cores=2, wave_seconds=30)
    first = planner.next_wave()
    assert len(first) == 6  # 2 cores x 30 s / 10 s per chunk
    planner.started = time.perf_counter() - 600  # the wave took ten times its estimate
    planner.committed(first)
    assert planner.factor >= 10
    second = planner.next_wave()
    assert len(second) == 2  # one chunk per core: the least a wave can be
    assert sorted(first + second + planner.todo) == sorted(todo)  # nothing lost, nothing twice


def test_unmeasured_chunks_count_as_chunk_seconds():
    spec = specs.CampaignSpec(name="w", properties=[TIMER], seed_start=0, seed_end=40, examples=1, version="t",
                              chunk_seeds={TIMER: 1})
    planner = camp.WavePlanner(spec, [(TIMER, c) for c in range(40)], cores=2, wave_seconds=10)
    assert len(planner.next_wave()) == round(2 * 10 / camp.CHUNK_SECONDS)


def test_calibration_applies_the_injected_variant_and_stops_at_its_limit(monkeypatch):
    from streamproof.properties import explore as explore_mod
    from streamproof.spark_harness import seedrun

    entered = []
    real = seedrun.injected

    def spy(variant):
        entered.append(variant)
        return real(variant)

    def slow(prop, examples, seed=None, step_count=40, shrink=True):
        if entered and seed is not None and examples > 1:
            time.sleep(30)  # a probe that shrinks a found bug: cut by the limit
        return explore_mod.Exploration(prop.name, True, examples, examples, 0.0)

    monkeypatch.setattr(seedrun, "injected", spy)
    monkeypatch.setattr(explore_mod, "explore", slow)
    cost = camp.calibrate(TIMER, 20, 40, 0, inject=BUG, limit=0.5)
    assert entered == [BUG]
    assert cost >= 0.5  # at least the limit: a chunk of such seeds is one seed
    assert camp.chunk_size(cost, 1000, 2) <= 4


def test_the_defaults_in_the_help_are_the_ones_in_docs_spark_md():
    """Every default in the options table of docs/spark.md is what ``campaign --help`` shows."""
    import re
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[1] / "docs" / "spark.md").read_text()
    help_text = " ".join(invoke("campaign", "--help").stdout.split())
    checked = 0
    for option, default in re.findall(r"^\| `(--[a-z-]+)[^`]*`[^|]*\|[^|]*\| ([^|]+?) \|$", docs, re.M):
        default = default.split(" (")[0].strip().strip("`")  # "40 (the `ci` profile's)" -> "40"
        shown = re.search(re.escape(option) + r" (?:(?! --[a-z]).)*?\[default: ((?:[^\[\]]|\[[^\]]*\])+)\]",
                          help_text)
        if not default or default.startswith(("every", "none", "a hash")):
            continue
        assert shown, f"{option}: no default in --help, docs say {default!r}"
        value = shown.group(1).split(";")[0].strip()
        if default.startswith("measured"):  # --chunk-seeds: "measured: ~2 s of work"
            assert default.split(": ", 1)[1] in value, (option, default, value)
        else:
            try:
                assert float(value) == float(default), (option, default, value)
            except ValueError:
                assert value == default, (option, default, value)
        checked += 1
    assert checked >= 7

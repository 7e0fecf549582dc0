"""A scenario family defined outside streamproof (examples/extending/counter_family, the one
docs/extending.md walks through) joins the suite with one registration: its steps load, its
property is checked by replay, the CLI, pytest and the bug zoo, and its bug variant is caught.
Each case runs in a fresh interpreter, so the suite's own registry never sees the toy family."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "extending"
STREAMPROOF = Path(sys.executable).parent / "streamproof"


def run(args, cwd, env_extra=None, timeout=240):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "STREAMPROOF_FAMILIES")}
    env.update(env_extra or {})
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def project(tmp_path):
    """A directory holding the toy family package and its scenario file, as a user's repo would."""
    shutil.copytree(EXAMPLE / "counter_family", tmp_path / "counter_family")
    shutil.copy(EXAMPLE / "counter.json", tmp_path / "counter.json")
    return tmp_path


def test_register_family_package_brings_steps_property_and_variant(project):
    code = """
import json, streamproof
assert "counter.matches-spec" not in [p.name for p in streamproof.all_properties()]
streamproof.register_family_package("counter_family")
result = streamproof.replay(streamproof.load_scenario_file("counter.json"))
prop = streamproof.get_property("counter.matches-spec")
held = streamproof.explore(prop, 200, seed=0)
caught = streamproof.hunt(streamproof.get_variant("counter-restore-keeps-replayed-adds"), 300, seed=0)
try:
    streamproof.load_scenario('{"format": "streamproof.scenario/1", "family": "counter", "steps": [{"op": "add", "n": -1}]}')
    bad = None
except streamproof.ScenarioError as e:
    bad = str(e)
print(json.dumps({"replay": result.holds, "observed": result.observed, "held": held.holds,
                  "caught": not caught.holds, "counterexample": len(caught.scenario.steps), "bad": bad,
                  "families": sorted({p.family for p in streamproof.all_properties()})}))
"""
    proc = run([sys.executable, "-c", code], cwd=project)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["replay"] is True and out["observed"] == [{"event": "read", "value": 12}, {"event": "read", "value": 5}]
    assert out["held"] is True
    assert out["caught"] is True and out["counterexample"] <= 4  # add, checkpoint?, add, restore: shrunk
    assert "step 0 (add): field 'n'" in out["bad"]
    assert "counter" in out["families"] and "timers" in out["families"]


def make_entry_point(site: Path, package: str = "counter_family") -> None:
    """An installed distribution declaring the family in the entry-point group (what
    ``[project.entry-points."streamproof.families"]`` in the user's pyproject.toml installs)."""
    dist = site / "counter_family-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: counter-family\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[streamproof.families]\ncounter = {package}\n")


def test_an_entry_point_makes_the_family_visible_to_the_cli(project):
    make_entry_point(project)
    env = {"PYTHONPATH": str(project)}
    replay = run([str(STREAMPROOF), "replay", "counter.json"], project, env)
    assert replay.returncode == 0 and "verdict: held" in replay.stdout, replay.stdout + replay.stderr
    check = run([str(STREAMPROOF), "check", "counter", "--examples", "100"], project, env)
    assert check.returncode == 0 and "counter.matches-spec" in check.stdout, check.stdout + check.stderr
    zoo = run([str(STREAMPROOF), "bugzoo", "counter-restore-keeps-replayed-adds"], project, env)
    assert zoo.returncode == 0 and "1 of 1 bug variants caught" in zoo.stdout, zoo.stdout + zoo.stderr


def test_the_variant_surviving_would_fail_the_bug_zoo(project):
    # the property really bites: with the check replaced by one that never fails, the variant survives
    (project / "counter_family" / "catalogue.py").write_text(
        (project / "counter_family" / "catalogue.py").read_text().replace(
            "        if counter.read() != spec.read():", "        if False:"))
    zoo = run([str(STREAMPROOF), "bugzoo", "counter-restore-keeps-replayed-adds", "--examples", "100"], project,
              {"PYTHONPATH": str(project), "STREAMPROOF_FAMILIES": "counter_family"})
    assert zoo.returncode == 1 and "1 of 1 bug variants survived" in zoo.stdout, zoo.stdout + zoo.stderr


def test_pytest_with_a_conftest_registration(project):
    (project / "conftest.py").write_text("import streamproof\nstreamproof.register_family_package('counter_family')\n")
    (project / "test_counter.py").write_text(
        "import pytest\n"
        "@pytest.mark.streamproof(property='counter.matches-spec')\n"
        "def test_counter(streamproof_check):\n"
        "    assert streamproof_check(examples=100).holds\n"
        "def test_example(streamproof_replay):\n"
        "    import streamproof\n"
        "    assert streamproof_replay(streamproof.load_scenario_file('counter.json')).holds\n")
    proc = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(project),
                str(project)], project, {"PYTHONPATH": str(project)})
    assert proc.returncode == 0 and "2 passed" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("breakage, message", [
    ("missing", "family package 'no_such_family' cannot be imported (named by $STREAMPROOF_FAMILIES)"),
    ("no-steps", "family package 'counter_family' has no 'steps' module"),
    ("raises", "family package 'counter_family': its 'steps' module cannot be imported: ZeroDivisionError"),
])
def test_a_broken_family_package_is_one_line_and_exit_2(project, breakage, message):
    family = "counter_family"
    if breakage == "missing":
        family = "no_such_family"
    elif breakage == "no-steps":
        (project / "counter_family" / "steps.py").unlink()
    else:
        (project / "counter_family" / "steps.py").write_text("1 / 0\n")
    proc = run([str(STREAMPROOF), "check", "timers.differential", "--examples", "5"], project,
               {"PYTHONPATH": str(project), "STREAMPROOF_FAMILIES": family})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr


def test_register_family_package_refuses_a_package_without_steps(project):
    (project / "counter_family" / "steps.py").unlink()
    code = ("import streamproof\ntry:\n    streamproof.register_family_package('counter_family')\n"
            "except streamproof.FamilyPackageError as e:\n    print(e)\n")
    proc = run([sys.executable, "-c", code], cwd=project)
    assert proc.stdout.strip() == "family package 'counter_family' has no 'steps' module", proc.stderr


def test_the_environment_variable_finds_a_family_in_the_current_directory(project):
    """docs/extending.md's command, as typed in the project's directory: no PYTHONPATH needed."""
    result = run([str(STREAMPROOF), "check", "counter", "--examples", "20"], project,
                 {"STREAMPROOF_FAMILIES": "counter_family"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "counter.matches-spec" in result.stdout

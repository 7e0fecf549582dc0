"""The Spark harness without a JVM: master URLs, the code zip, chunking, the per-seed function
(verdicts, timeout, errors, injected bugs), failure signatures, exhaustive enumeration, the report
from Parquet, and the CLI's one-line errors (java missing included)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamproof.properties import registry
from streamproof.properties.bugzoo import get_variant
from streamproof.properties.scenario import load_scenario, load_scenario_file
from streamproof.spark_harness import campaign as camp
from streamproof.spark_harness import exhaustive, executor, report, ship
from streamproof.spark_harness import spec as specs
from streamproof.spark_harness.session import SparkSetupError, parse_master
from streamproof.cli import cli

REPO = Path(__file__).resolve().parents[1]
BUG = "register-at-watermark-fires-at-once"


def run_cli(*args: str):
    try:
        runner = CliRunner(mix_stderr=False)  # click < 8.2
    except TypeError:
        runner = CliRunner()
    return runner.invoke(cli, [str(a) for a in args], catch_exceptions=False)


def config(prop="timers.differential", examples=3, inject=None, timeout=600.0, chunk=4, start=0):
    """A generous per-seed limit: a loaded machine must not turn these seeds into timeouts."""
    spec = specs.CampaignSpec(name="unit", properties=[prop], seed_start=start, seed_end=start + 100,
                              examples=examples, timeout=timeout, inject=inject, version="test",
                              chunk_seeds={prop: chunk})
    return spec.executor_config(prop)


# ----------------------------------------------------------------------------------- masters

@pytest.mark.parametrize("master, kind, loopback, cores", [
    ("local", "local", True, 1), ("local[3]", "local", True, 3), ("local[*]", "local", True, os.cpu_count()),
    ("local[2,4]", "local", True, 2), ("spark://127.0.0.1:7077", "standalone", True, None),
    ("spark://node1:7077,node2:7077", "standalone", False, None), ("yarn", "yarn", False, None),
    ("k8s://https://kube:6443", "k8s", False, None), ("sc://127.0.0.1:15002", "connect", True, None),
    ("sc://spark.example.com:443/;use_ssl=true", "connect", False, None),
])
def test_master_urls(master, kind, loopback, cores):
    t = parse_master(master)
    assert (t.kind, t.loopback, t.cores) == (kind, loopback, cores)
    assert t.needs_jvm == (kind != "connect")


@pytest.mark.parametrize("master", ["", "mesos://x:5050", "local[0]", "spark://nohost", "sc://", "k8s://"])
def test_bad_master_urls_are_one_line(master):
    with pytest.raises(SparkSetupError) as e:
        parse_master(master)
    assert "\n" not in str(e.value)


# ----------------------------------------------------------------------------------- the zip

def test_code_zip_is_named_by_content_and_reproducible(tmp_path):
    a = ship.build_zip(directory=tmp_path / "a")
    b = ship.build_zip(directory=tmp_path / "b")
    assert a.name == b.name and a.read_bytes() == b.read_bytes()
    assert a.name == f"streamproof-code-{ship.content_hash()[:16]}.zip"
    names = zipfile.ZipFile(a).namelist()
    for target in ship.PACKAGES.values():
        assert f"{target}/__init__.py" in names
    assert "streamproof/spark_harness/conf/log4j2.properties" in names
    assert "streamproof/properties/schemas/scenario.schema.json" in names
    assert all(n.startswith("streamproof/") for n in names)  # one top-level import name
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_an_installed_package_is_shipped_as_it_is(tmp_path):
    """From a wheel, ship.py sits in site-packages/streamproof/spark_harness/: the zip is that tree
    (it used to look for site-packages/streamproof/streamproof and refuse to ship, issue 27)."""
    zipped = ship.build_zip(directory=tmp_path / "checkout")
    installed = tmp_path / "site-packages" / "streamproof"
    with zipfile.ZipFile(zipped) as zf:
        zf.extractall(tmp_path / "site-packages")  # the same tree a wheel installs
    again = ship.build_zip(root=installed, directory=tmp_path / "wheel")
    assert zipfile.ZipFile(again).namelist() == zipfile.ZipFile(zipped).namelist()
    assert again.read_bytes() == zipped.read_bytes()


def test_a_changed_file_changes_the_name(tmp_path):
    root = tmp_path / "root"
    for package in ship.PACKAGES:
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text("")
    first = ship.build_zip(root, tmp_path / "zips")
    (root / "impl" / "__init__.py").write_text("X = 1\n")
    second = ship.build_zip(root, tmp_path / "zips")
    assert first.name != second.name and first.exists() and second.exists()


def test_the_zip_imports_on_its_own(tmp_path):
    """What an executor without the project installed sees: the zip alone on sys.path."""
    z = ship.build_zip(directory=tmp_path)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import streamproof.spark_harness.executor as e; "
            "from streamproof import properties; "
            "assert '.zip' in e.__file__ and '.zip' in properties.__file__, e.__file__; "
            "row = e.run_seed(" + repr(config(examples=1)) + ", 3); print(row['verdict'])")
    out = subprocess.run([sys.executable, "-S", "-c", code, str(z)], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(
                             p for p in sys.path if p and "site-packages" in p)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "held"


# --------------------------------------------------------------------------------- chunking

def test_chunks_cover_every_seed_exactly_once():
    spec = camp.plan("x", ["timers.differential", "mailbox.differential"], 5, 105, 3, 40, 60, None, "t", 2,
                     chunk_seeds=7)
    seen = {}
    for prop in spec.properties:
        for c in range(spec.chunks(prop)):
            lo, hi = spec.chunk_range(prop, c)
            for seed in range(lo, hi):
                assert spec.chunk_of(prop, seed) == c
                seen[(prop, seed)] = seen.get((prop, seed), 0) + 1
    assert seen == {(p, s): 1 for p in spec.properties for s in range(5, 105)}
    todo = camp.interleave(spec, [(p, c) for p in spec.properties for c in range(spec.chunks(p))])
    waves = camp.waves_of(todo, 5)
    assert sorted(pc for w in waves for pc in w) == sorted(todo)
    for wave in waves:
        segs = camp.segments(spec, wave)
        assert sum(hi - lo for _, lo, hi, _ in segs) == sum(
            spec.chunk_range(p, c)[1] - spec.chunk_range(p, c)[0] for p, c in wave)
        assert sum(parts for *_, parts in segs) == len(wave)  # one partition per chunk


def test_chunk_size_targets_seconds_but_keeps_four_partitions_per_core():
    assert camp.chunk_size(0.01, 10_000, 2) == 200          # ~2 s of 10 ms seeds
    assert camp.chunk_size(0.01, 400, 2) == 50              # at least 4 x cores chunks
    assert camp.chunk_size(5.0, 10_000, 2) == 1             # a slow seed is a chunk
    spec = camp.plan("x", ["timers.differential"], 0, 1000, 2, 40, 60, None, "t", 2)
    assert 1 <= spec.chunk_seeds["timers.differential"] <= 125


def test_spec_round_trips_and_names_differences():
    spec = camp.plan("x", ["timers.differential"], 0, 10, 2, 40, 60, BUG, "t", 2, chunk_seeds=3)
    again = specs.CampaignSpec.from_json(spec.to_json())
    assert again == spec and not spec.differences(again)
    again.examples = 9
    assert spec.differences(again) == ["examples 9 (stored: 2)"]
    assert specs.default_name(["a"], 0, 10, 2, 40, None) == specs.default_name(["a"], 0, 10, 2, 40, None)
    assert specs.default_name(["a"], 0, 10, 2, 40, None) != specs.default_name(["a"], 0, 11, 2, 40, None)


# ---------------------------------------------------------------------------- the seed runner

def test_a_seed_row_has_every_column_and_is_deterministic():
    a = executor.run_seed(config(), 11)
    b = executor.run_seed(config(), 11)
    assert set(a) == set(specs.COLUMN_NAMES)
    assert a["verdict"] == "held" and a["examples"] >= 3 and a["steps"] > 0 and a["signature"] is None
    assert [a[c] for c in specs.DETERMINISTIC_COLUMNS] == [b[c] for c in specs.DETERMINISTIC_COLUMNS]
    assert a["chunk"] == 11 // 4 and a["version"] == "test" and a["reproduce_blob"] is None
    assert a["reproduce"] == "streamproof check timers.differential --seed 11 --examples 3"
    batch = executor.rows_to_batch([a, b])
    assert batch.num_rows == 2 and batch.schema.names == list(specs.COLUMN_NAMES)


@pytest.fixture(scope="module")
def bug_rows():
    """Seeds 1..5 of timers.differential with the bug injected (each fails quickly)."""
    return executor.run_seeds_locally(config(examples=10, inject=BUG, chunk=4), range(1, 6))


def test_an_injected_bug_fails_with_a_replayable_minimal_scenario(bug_rows):
    variant = get_variant(BUG)
    row = next(r for r in bug_rows if r["verdict"] == "failed")
    assert row["inject"] == BUG and row["signature"] and row["scenario"]
    assert row["reproduce"].startswith(f"streamproof bugzoo {BUG} --seed {row['seed']} --examples 10")
    scenario = load_scenario(row["scenario"])
    prop = registry.get(variant.caught_by)
    with variant.patch():
        assert not prop.check(scenario).holds
    assert prop.check(scenario).holds
    # the patch is undone after the seed: the same seed holds without it
    assert executor.run_seed(config(examples=10), row["seed"])["verdict"] == "held"


def test_the_reproduce_command_reruns_the_seed(bug_rows):
    row = next(r for r in bug_rows if r["verdict"] == "failed")
    args = row["reproduce"].split()[1:]  # streamproof bugzoo VARIANT --seed S --examples N
    result = run_cli(*args, "--json")
    assert result.exit_code == 0
    out = json.loads(result.stdout.splitlines()[0])
    assert out["caught"] and out["invariant"] == row["invariant"] and out["message"] == row["message"]


def test_a_slow_seed_is_a_timeout_verdict_and_leaves_no_patch_behind():
    from streamproof.impl.timers.internal_timer_service import InternalTimerService

    before = dict(vars(InternalTimerService))
    # the timer bug applied around a mailbox seed: it never fails, so it runs into the timeout
    row = executor.run_seed(config(prop="mailbox.differential", examples=100_000, inject=BUG, timeout=0.3), 1)
    # 100 000 examples would run for many minutes: a timeout verdict shows the limit cut it (no
    # wall-clock bound here, a loaded machine may take a while to deliver the alarm)
    assert row["verdict"] == "timeout" and row["invariant"] == "timeout"
    assert row["signature"] and "timeout" in row["signature_text"]
    assert dict(vars(InternalTimerService)) == before


def test_an_error_is_a_verdict_not_an_exception():
    row = executor.run_seed(config(prop="no.such.property"), 0)
    assert row["verdict"] == "error" and row["invariant"] == "UnknownProperty"
    assert "no.such.property" in row["message"] and row["signature"]


def test_run_partition_maps_arrow_batches():
    import pyarrow as pa

    batches = [pa.RecordBatch.from_pydict({"id": pa.array([3, 4], pa.int64())})]
    out = list(executor.run_partition(config(examples=1), batches))
    assert [b.num_rows for b in out] == [2]
    assert out[0].column(out[0].schema.get_field_index("seed")).to_pylist() == [3, 4]


# ------------------------------------------------------------------------------- signatures

def test_signatures_ignore_numbers_but_not_invariants():
    a = specs.signature("p", "failed", "same-observations", "same-observations: step 7: ts 12 but model []")
    b = specs.signature("p", "failed", "same-observations", "same-observations: step 3: ts 99 but model []")
    c = specs.signature("p", "failed", "same-pending-timers", "same-observations: step 3: ts 99 but model []")
    d = specs.signature("q", "failed", "same-observations", "same-observations: step 3: ts 99 but model []")
    assert a == b and a[0] != c[0] and a[0] != d[0] and len(a[0]) == 16
    assert a[1] == "failed | same-observations | same-observations: step N: ts N but model []"


# ------------------------------------------------------------------------------- exhaustive

def test_exhaustive_indices_spell_every_sequence_once():
    scope = exhaustive.build("timers", 3)
    size = len(scope.alphabet)
    assert scope.total == size ** 3 and scope.nodes == 1 + size + size ** 2 + size ** 3
    seen = {json.dumps(scope.steps(i)) for i in range(scope.total)}
    assert len(seen) == scope.total
    assert scope.steps(0) == [scope.alphabet[0]] * 3 and scope.steps(scope.total - 1) == [scope.alphabet[-1]] * 3
    with pytest.raises(IndexError):
        scope.steps(scope.total)


def test_exhaustive_finds_a_zoo_bug_within_depth_3_and_its_scenario_replays():
    scope = exhaustive.build("timers", 3)
    cfg = {**config(), "mode": "exhaustive", "scope": specs.plain(scope.describe()), "examples": 1, "step_count": 3}
    variant = get_variant(BUG)
    with variant.patch():
        rows = [exhaustive.run_index(cfg, i)[0] for i in range(scope.total)]
    failed = [r for r in rows if r["verdict"] == "failed"]
    assert failed and all(r["verdict"] in ("held", "failed") for r in rows)
    scenario = load_scenario(failed[0]["scenario"])
    assert len(scenario.steps) <= 1 + 3
    prop = registry.get("timers.differential")
    with variant.patch():
        assert not prop.check(scenario).holds
    assert prop.check(scenario).holds
    held = [r for r in rows if r["verdict"] == "held"]
    assert all(r["steps"] == 3 and len(r["states"]) == 1 + 3 for r in held)  # after the prefix, each step


def test_every_scope_family_exists_and_its_scenarios_load():
    for family in exhaustive.SCOPES:
        scope = exhaustive.build(family, 2)
        assert registry.for_family(family), family
        for i in (0, scope.total // 2, scope.total - 1):
            assert scope.scenario(i).family == family


# ----------------------------------------------------------------------------------- report

def _write_results(root: Path, rows: list[dict], spec: specs.CampaignSpec) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    for (prop, chunk) in {(r["property"], r["chunk"]) for r in rows}:
        part = [r for r in rows if r["property"] == prop and r["chunk"] == chunk]
        d = root / f"campaign={spec.name}" / f"property={prop}" / f"chunk={chunk}"
        d.mkdir(parents=True)
        table = pa.Table.from_batches([executor.rows_to_batch(part)]).drop(["campaign", "property", "chunk"])
        pq.write_table(table, d / "part-0.parquet")
    meta = root / "_campaigns" / spec.name / "spec"
    meta.mkdir(parents=True)
    (meta / "part-00000.txt").write_text(spec.to_json() + "\n")
    run = root / "_campaigns" / spec.name / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "part-00000.txt").write_text(json.dumps(camp.RunRecord("r1", "local[2]", "classic", 1.0, 10.0, 5.0, 0.1,
                                                                   len(rows), 2, 0, 1, 2, True).__dict__) + "\n")


def test_report_counts_dedups_by_signature_and_writes_scenarios(tmp_path, bug_rows):
    spec = specs.CampaignSpec(name="rep", properties=["timers.differential"], seed_start=1, seed_end=6,
                              examples=10, inject=BUG, version="t", chunk_seeds={"timers.differential": 4})
    held = executor.run_seeds_locally({**spec.executor_config("timers.differential"), "inject": None}, range(6, 8))
    spec.seed_end = 8
    rows = bug_rows + held
    _write_results(tmp_path, rows, spec)
    md, reports = report.write_report(tmp_path)
    (r,) = reports
    failed = sorted(x["seed"] for x in rows if x["verdict"] == "failed")
    assert failed and len(failed) < len(rows)
    assert r.exactly_once and r.per_property[0]["failed"] == len(failed) and r.per_property[0]["rows"] == 7
    assert sum(f["seeds"] for f in r.failures) == len(failed)
    assert min(f["seed"] for f in r.failures) == failed[0]
    for f in r.failures:  # the representative is the smallest seed of its signature
        assert f["seed"] == min(x["seed"] for x in rows if x["signature"] == f["signature"])
        assert load_scenario_file(f["file"]).family == "timers"
    text = md.read_text()
    assert "Results per property" in text and "Time per seed" in text and "Throughput" in text
    assert (tmp_path / "_report" / "report.html").exists()
    assert (tmp_path / "_report" / "seed-time-rep.png").stat().st_size > 1000
    result = run_cli("report", tmp_path)
    assert result.exit_code == 1 and f"{len(r.failures)} failure signatures" in result.stdout


def test_report_of_an_empty_directory_is_bad_input(tmp_path):
    result = run_cli("report", tmp_path)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith("streamproof: error: ")


def test_report_notices_a_missing_seed(tmp_path):
    spec = specs.CampaignSpec(name="gap", properties=["timers.differential"], seed_start=0, seed_end=6,
                              examples=1, version="t", chunk_seeds={"timers.differential": 3})
    rows = executor.run_seeds_locally(spec.executor_config("timers.differential"), range(6))
    _write_results(tmp_path, [r for r in rows if r["seed"] != 4], spec)
    _, (r,) = report.write_report(tmp_path)
    assert not r.exactly_once and "5 of 6 seeds" in r.problems[0]


# ------------------------------------------------------------------------------------- CLI

@pytest.mark.parametrize("args, fragment", [
    (["--master", "mesos://x"], "unknown master URL"),
    (["--seeds", "5:2"], "bad --seeds"),
    (["--inject", "no-such-bug"], "unknown bug variant"),
    (["no.such.property"], "unknown property"),
    (["--exhaustive"], "--exhaustive needs a family"),
    (["--depth", "2"], "--exhaustive only"),
    (["--campaign", "bad/name"], "bad campaign name"),
    (["--conf", "novalue"], "KEY=VALUE"),
])
def test_campaign_bad_input_is_exit_2_with_one_line(args, fragment):
    result = run_cli("campaign", *args)
    assert result.exit_code == 2, result.stdout
    assert result.stderr.count("\n") == 1 and fragment in result.stderr


def test_java_missing_is_one_clear_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)  # no java here
    out = subprocess.run([sys.executable, "-m", "streamproof", "campaign", "--seeds", "2", "--out", str(tmp_path / "r")],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1
    assert out.stderr.startswith("streamproof: error: java not found")

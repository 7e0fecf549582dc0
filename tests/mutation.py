"""Mutation testing of impl/ and model/ (issue 17), module by module, each against the tests that
cover it, so that a run fits a 2-core machine. Not a test module (no ``test_`` prefix): a developer
command.

    python -m tests.mutation impl/tasks/mailbox.py            # one module
    python -m tests.mutation --all                      # every mapped module (hours)
    python -m tests.mutation impl/timers/internal_timer_service.py --max-mutants 120 --json /tmp/timers.json
    python -m tests.mutation impl/tasks/mailbox.py --workdir /tmp/sp-mutation/repo

mutmut (2.5) mutates files in place, so the run happens in a clone of HEAD with its own virtual
environment (``--workdir``, default ``/tmp/streamproof-mutation/repo``); the working tree is never
touched, and uncommitted changes (tests included) are not measured. Covering tests missing from
HEAD are left out (and said so).

The covering tests run under the suite's own Hypothesis profile (``--profile``, default ``ci``). A
faster first pass is possible (``--profile dev --recheck-profile ci``): each survivor is then run
again under the recheck profile, so that a survivor is one the ordinary test run does not kill (if
the tests fail under the fast profile without mutations, the run falls back to the recheck
profile; on a loaded 2-core machine the recheck costs more than it saves). Any failing
pytest exit counts as killed (mutmut 2 itself counts only exit code 1, so a mutant that breaks
collection would "survive"). ``--max-mutants N`` tests a reproducible random sample of N mutants
(``--seed``); the others are reported as skipped. Prints killed / survived / suspicious / timeout /
skipped per module and the score (killed, suspicious included, over all checked mutants; mutmut
calls a mutant suspicious when the tests failed but slowly); ``--json`` also writes each
survivor's diff. Survivors can be shown with ``mutmut show ID`` in the work directory until the
next module's run replaces its ``.mutmut-cache`` (a copy stays as ``.mutmut-cache.<module>``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# module -> the tests that cover it (what a mutant must fail)
MAP = {
    "impl/tasks/mailbox.py": ["tests/test_mailbox.py", "tests/test_mailbox_vectors.py", "tests/test_conformance_mailbox.py",
                        "tests/test_mutation_gaps.py"],
    "model/mailbox.py": ["tests/test_mailbox.py", "tests/test_mailbox_vectors.py", "tests/test_mutation_gaps.py"],
    "impl/timers/internal_timer_service.py": ["tests/test_timers_impl.py", "tests/test_timer_vectors.py", "tests/test_timers_machine.py",
                       "tests/test_termination.py", "tests/test_snapshots.py", "tests/test_tie_order.py",
                       "tests/test_mutation_gaps.py"],
    "model/timers.py": ["tests/test_timer_vectors.py", "tests/test_conformance_timers.py", "tests/test_timers_machine.py",
                        "tests/test_mutation_gaps.py"],
    "impl/state/key_groups.py": ["tests/test_keygroups.py",
                          "tests/test_certify_input.py::test_composite_key_groups_follow_java_hash_codes",
                          "tests/test_mutation_gaps.py"],
    "model/keygroups.py": ["tests/test_keygroups.py", "tests/test_mutation_gaps.py"],
    "impl/timers/heap_priority_queue_set.py": ["tests/test_timers_impl.py", "tests/test_snapshots.py", "tests/test_mutation_gaps.py"],
    "impl/timers/snapshot_format.py": ["tests/test_snapshot_format.py", "tests/test_mutation_gaps.py"],
    "impl/timers/snapshots.py": ["tests/test_snapshots.py", "tests/test_snapshot_machine.py", "tests/test_mutation_gaps.py"],
    "model/snapshot.py": ["tests/test_snapshot_machine.py", "tests/test_mutation_gaps.py"],
    "impl/timers/termination.py": ["tests/test_termination.py", "tests/test_mutation_gaps.py"],
    "model/termination.py": ["tests/test_termination.py", "tests/test_mutation_gaps.py"],
    "impl/coordination/flink_protocol.py": ["tests/test_valve.py", "tests/test_valve_vectors.py", "tests/test_mutation_gaps.py"],
    "model/valve.py": ["tests/test_valve_machine.py", "tests/test_valve_vectors.py"],
    # issue 31: the modules not measured before; each list is fast tests first (-x stops at the first failure)
    "model/eos.py": ["tests/test_eos.py", "tests/test_job.py", "tests/test_mutation_gaps.py"],
    "model/chain_watermark.py": ["tests/test_chain_watermark.py", "tests/test_mutation_gaps.py"],
    "model/job.py": ["tests/test_edges_and_limits.py", "tests/test_job.py", "tests/test_graph.py",
                     "tests/test_mutation_gaps.py"],
    "impl/operators/windows.py": ["tests/test_windows.py", "tests/test_graph_ported.py", "tests/test_mutation_gaps.py"],
    "impl/graph/job_graph.py": ["tests/test_graph_ported.py", "tests/test_two_inputs.py", "tests/test_one_operator_job.py",
                      "tests/test_eos.py", "tests/test_broadcast.py", "tests/test_graph.py",
                      "tests/test_mutation_gaps.py"],
    "impl/graph/job_runtime.py": ["tests/test_graph_ported.py", "tests/test_two_inputs.py", "tests/test_one_operator_job.py",
                          "tests/test_eos.py", "tests/test_broadcast.py", "tests/test_graph.py",
                          "tests/test_mutation_gaps.py"],
    "impl/tasks/operator_chain.py": ["tests/test_graph_ported.py", "tests/test_conformance_broadcast.py", "tests/test_broadcast.py",
                      "tests/test_graph.py", "tests/test_mutation_gaps.py"],
    "impl/operators/user_code.py": ["tests/test_flink_api.py"],
    "impl/operators/keyed_process_operator.py": ["tests/test_task.py", "tests/test_windows.py", "tests/test_graph_ported.py",
                          "tests/test_tie_order.py", "tests/test_restore_watermarks.py", "tests/test_two_inputs.py",
                          "tests/test_one_operator_job.py", "tests/test_termination.py", "tests/test_user_clock.py",
                          "tests/test_flink_api.py", "tests/test_mutation_gaps.py"],
    "impl/tasks/stream_task.py": ["tests/test_task.py", "tests/test_tie_order.py", "tests/test_restore_watermarks.py",
                     "tests/test_graph_ported.py", "tests/test_conformance_two_input.py",
                     "tests/test_chain_watermark.py", "tests/test_one_operator_job.py", "tests/test_termination.py",
                     "tests/test_mutation_gaps.py"],
    "impl/coordination/runtime.py": ["tests/test_valve_vectors.py", "tests/test_valve.py",
                                    "tests/test_mutation_gaps.py"],
    # session 15: the other two valve protocols
    "impl/coordination/legacy_protocol.py": ["tests/test_valve.py", "tests/test_valve_itcases.py",
                                             "tests/test_valve_machine.py", "tests/test_mutation_gaps.py"],
    "impl/coordination/streamproof_protocol.py": ["tests/test_valve.py", "tests/test_valve_itcases.py",
                                                  "tests/test_valve_machine.py", "tests/test_mutation_gaps.py"],
    # issue 30: the deferred timer file (measured in session 15)
    "impl/timers/deferred_snapshot.py": ["tests/test_deferred_snapshot.py", "tests/test_snapshots.py",
                                         "tests/test_mutation_gaps.py"],
}
# issue 32: the modules split out of a mapped module are covered by its tests
for _whole, _parts in {
    "impl/operators/keyed_process_operator.py": ["impl/state/keyed_state_backend.py", "impl/operators/user_code.py"],
    "impl/tasks/stream_task.py": ["impl/tasks/stream_elements.py", "impl/tasks/watermarks.py", "impl/tasks/task_state.py"],
    "impl/tasks/operator_chain.py": ["impl/tasks/chained_operators.py"],
    "impl/operators/windows.py": ["impl/operators/operator_attributes.py", "impl/operators/end_of_stream.py"],
    "impl/timers/internal_timer_service.py": ["impl/timers/processing_time_service.py",
                                              "impl/timers/internal_time_service_manager.py", "impl/state/key_context.py"],
    "impl/graph/job_runtime.py": ["impl/graph/checkpoint_coordinator.py", "impl/graph/sources.py",
                                  "impl/graph/task_wiring.py", "impl/graph/job.py", "impl/graph/sim.py"],
}.items():
    for _part in _parts:
        MAP[_part] = MAP[_whole] + (["tests/test_job.py", "tests/test_restore_watermarks.py"]
                                    if _whole == "impl/graph/job_runtime.py" else [])
MAP["impl/state/keyed_state_backend.py"].append("tests/test_state_snapshot_copy.py")  # session 15

# mutmut imports ``mutmut_config`` from its working directory; this one skips mutants outside the
# sample named by $STREAMPROOF_MUTATION_SAMPLE (a JSON list of [line_number, index]).
MUTMUT_CONFIG = '''\
import json
import os

_SAMPLE = os.environ.get("STREAMPROOF_MUTATION_SAMPLE")
_KEEP = {tuple(k) for k in json.load(open(_SAMPLE))} if _SAMPLE else None


def pre_mutation(context):
    if _KEEP is not None and (context.mutation_id.line_number, context.mutation_id.index) not in _KEEP:
        context.skip = True
'''

STATUSES = ("killed", "survived", "suspicious", "timeout", "skipped", "untested")


def _run(cmd: list[str], cwd: Path, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, text=True, capture_output=True, **kw)


def _git(cwd: Path, *args: str) -> str:
    return _run(["git", *args], cwd=cwd, check=True).stdout.strip()


def prepare(workdir: Path) -> Path:
    """A clone of HEAD with its own venv (reused when present); returns its python."""
    if not (workdir / ".git").is_dir():
        _run(["git", "clone", "-q", str(REPO), str(workdir)], cwd=REPO, check=True)
    else:
        # the clone is ours: no mutant left applied, at the repository's HEAD (amended or not)
        _run(["git", "fetch", "-q", "origin", "HEAD"], cwd=workdir, check=True)
        _run(["git", "reset", "-q", "--hard", "FETCH_HEAD"], cwd=workdir, check=True)
    head, clone = _git(REPO, "rev-parse", "HEAD"), _git(workdir, "rev-parse", "HEAD")
    if head != clone:
        raise SystemExit(f"the clone {workdir} is at {clone[:12]}, HEAD of {REPO} is {head[:12]}")
    exclude = workdir / ".git" / "info" / "exclude"
    if "mutmut_config.py" not in exclude.read_text():
        with exclude.open("a") as f:
            f.write("mutmut_config.py\n.mutmut-cache*\n.mutation-sample.json\n")
    (workdir / "mutmut_config.py").write_text(MUTMUT_CONFIG)
    shared = workdir.parent / "shared"
    if not shared.exists() and (REPO.parent / "shared").is_dir():
        shared.symlink_to(REPO.parent / "shared")
    python = workdir / ".venv" / "bin" / "python"
    if not python.exists():
        _run([sys.executable, "-m", "venv", str(workdir / ".venv")], cwd=workdir, check=True)
        _run([str(python), "-m", "pip", "install", "-q", "-e", ".[dev]", "mutmut==2.5.1"], cwd=workdir, check=True)
    return python


def runner(python: Path, tests: list[str], profile: str) -> str:
    """The test command for mutmut: exit 1 on any failure (collection errors included), else 0."""
    code = "import sys, pytest; sys.exit(int(pytest.main(sys.argv[1:]) != 0))"
    return (f"{python} -c '{code}' -x -q -p no:cacheprovider --hypothesis-profile={profile} "
            + " ".join(tests))


def all_mutants(module: str, workdir: Path, python: Path) -> list[list[int]]:
    """[line_number, index] of every mutant mutmut makes of ``module``."""
    code = ("import json, sys; from mutmut import Context, list_mutations; "
            "c = Context(source=open(sys.argv[1]).read(), filename=sys.argv[1], dict_synonyms=['']); "
            "print(json.dumps([[m.line_number, m.index] for m in list_mutations(c)]))")
    return json.loads(_run([str(python), "-c", code, module], cwd=workdir, check=True).stdout)


def mutate(module: str, workdir: Path, python: Path, *, profile: str, recheck_profile: str | None,
           max_mutants: int | None, seed: int) -> dict:
    tests = [t for t in MAP[module] if (workdir / t.split("::")[0]).exists()]  # a file or a test id
    missing = [t for t in MAP[module] if t not in tests]
    env = dict(os.environ)
    env.pop("STREAMPROOF_MUTATION_SAMPLE", None)
    mutants = all_mutants(module, workdir, python)
    sample_file = workdir / ".mutation-sample.json"
    if max_mutants is not None and max_mutants < len(mutants):
        sample = sorted(random.Random(seed).sample(mutants, max_mutants))
        sample_file.write_text(json.dumps(sample))
        env["STREAMPROOF_MUTATION_SAMPLE"] = str(sample_file)
    cache = workdir / ".mutmut-cache"
    cache.unlink(missing_ok=True)
    mutmut = [str(python), "-m", "mutmut"]
    attempts = [profile] + ([recheck_profile] if recheck_profile and recheck_profile != profile else [])
    for attempt in attempts:
        first = _run(mutmut + ["run", "--paths-to-mutate", module, "--runner", runner(python, tests, attempt),
                               "--no-progress"], cwd=workdir, env=env)
        _run(["git", "checkout", "-q", "--", module], cwd=workdir)  # never leave a mutant applied
        if "Tests don't run cleanly" not in first.stdout + first.stderr:
            break
        if attempt == attempts[-1]:
            raise SystemExit(f"{module}: the covering tests fail without mutations\n{first.stdout[-3000:]}")
        # some tests need the full profile (reachability of their cases): one pass under it
        print(f"{module}: the covering tests fail under profile {attempt}; one pass under {attempts[-1]}",
              flush=True)
        cache.unlink(missing_ok=True)
    profile = attempt

    def ids(status: str) -> list[int]:
        return [int(i) for i in _run(mutmut + ["result-ids", status], cwd=workdir).stdout.split()]

    rechecked = 0
    if recheck_profile and recheck_profile != profile:
        for mutant in ids("survived"):  # a single id is always run again, whatever the cache says
            _run(mutmut + ["run", str(mutant), "--paths-to-mutate", module, "--runner",
                           runner(python, tests, recheck_profile), "--no-progress"], cwd=workdir)
            _run(["git", "checkout", "-q", "--", module], cwd=workdir)
            rechecked += 1
    counts = {status: ids(status) for status in STATUSES}
    with sqlite3.connect(cache) as db:  # mutmut's cache: Mutant.line -> Line.line_number (0-based)
        line_of = dict(db.execute("SELECT m.id, l.line_number + 1 FROM Mutant m JOIN Line l ON m.line = l.id"))
    survivors = [{"id": i, "line": line_of.get(i), "diff": _run(mutmut + ["show", str(i)], cwd=workdir).stdout}
                 for i in counts["survived"] + counts["timeout"]]
    shutil.copy(cache, workdir / f".mutmut-cache.{module.replace('/', '_')}")
    sample_file.unlink(missing_ok=True)
    n = {status: len(v) for status, v in counts.items()}
    checked = n["killed"] + n["survived"] + n["suspicious"] + n["timeout"]
    return {
        "module": module, "date": date.today().isoformat(), "commit": _git(workdir, "rev-parse", "HEAD"),
        "tests": tests, "missing_tests": missing, "profile": profile, "recheck_profile": recheck_profile,
        "mutants": len(mutants), "sampled": max_mutants if max_mutants and max_mutants < len(mutants) else None,
        "seed": seed, "checked": checked, **n, "rechecked": rechecked,
        "score": (n["killed"] + n["suspicious"]) / checked if checked else 0.0,
        "survivor_ids": counts["survived"], "timeout_ids": counts["timeout"], "survivors": survivors,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help=f"modules to mutate (mapped: {', '.join(MAP)})")
    parser.add_argument("--all", action="store_true", help="every mapped module")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/streamproof-mutation/repo"))
    parser.add_argument("--profile", default="ci", help="Hypothesis profile of the covering tests (default ci)")
    parser.add_argument("--recheck-profile", default="none",
                        help="profile survivors are run again under (default none: no second pass)")
    parser.add_argument("--max-mutants", type=int, help="test a random sample of at most N mutants per module")
    parser.add_argument("--seed", type=int, default=0, help="seed of the --max-mutants sample (default 0)")
    parser.add_argument("--json", type=Path, help="write the results (survivors' diffs included) to this file")
    args = parser.parse_args(argv)
    modules = list(MAP) if args.all else args.modules
    unknown = [m for m in modules if m not in MAP]
    if not modules or unknown:
        parser.error(f"name mapped modules ({', '.join(MAP)})" + (f"; unknown: {', '.join(unknown)}" if unknown else ""))
    recheck = None if args.recheck_profile == "none" else args.recheck_profile
    args.workdir.parent.mkdir(parents=True, exist_ok=True)
    python = prepare(args.workdir)
    print(f"clone {args.workdir} at {_git(args.workdir, 'rev-parse', '--short', 'HEAD')}", flush=True)
    print(f"{'module':28} {'mutants':>7} {'checked':>7} {'killed':>6} {'survived':>8} {'suspicious':>10} "
          f"{'timeout':>7} {'skipped':>7} {'score':>6}", flush=True)
    results = []
    for module in modules:
        c = mutate(module, args.workdir, python, profile=args.profile, recheck_profile=recheck,
                   max_mutants=args.max_mutants, seed=args.seed)
        results.append(c)
        print(f"{module:28} {c['mutants']:>7} {c['checked']:>7} {c['killed']:>6} {c['survived']:>8} "
              f"{c['suspicious']:>10} {c['timeout']:>7} {c['skipped']:>7} {c['score']:>6.0%}"
              + (f"  (without {', '.join(c['missing_tests'])}: not at HEAD)" if c["missing_tests"] else ""),
              flush=True)
        if args.json:
            args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

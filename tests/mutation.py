"""Mutation testing of impl/ and model/ (issue 17), module by module, each against the tests that
cover it, so that a run fits a 2-core machine. Not a test module (no ``test_`` prefix): a developer
command.

    python -m tests.mutation impl/mailbox.py            # one module
    python -m tests.mutation --all                      # every mapped module (hours)
    python -m tests.mutation impl/mailbox.py --workdir /tmp/sp-mutation

mutmut (2.5) mutates files in place, so the run happens in a clone of HEAD with its own virtual
environment (``--workdir``, default ``/tmp/streamproof-mutation``); the working tree is never
touched. Prints killed / survived / suspicious / timeout per module and the score (killed over
all checked mutants); survivors are listed with ``mutmut show ID`` in the work directory.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# module -> the tests that cover it (what a mutant must fail)
MAP = {
    "impl/mailbox.py": ["tests/test_mailbox.py", "tests/test_mailbox_vectors.py", "tests/test_conformance_mailbox.py"],
    "model/mailbox.py": ["tests/test_mailbox.py", "tests/test_mailbox_vectors.py"],
    "impl/timers.py": ["tests/test_timers_impl.py", "tests/test_timer_vectors.py", "tests/test_timers_machine.py"],
    "model/timers.py": ["tests/test_timer_vectors.py", "tests/test_timers_machine.py"],
    "impl/keygroups.py": ["tests/test_keygroups.py"],
    "model/keygroups.py": ["tests/test_keygroups.py"],
    "impl/queues.py": ["tests/test_timers_impl.py", "tests/test_snapshots.py"],
    "impl/snapshot_format.py": ["tests/test_snapshot_format.py"],
    "impl/snapshots.py": ["tests/test_snapshots.py", "tests/test_snapshot_machine.py"],
    "model/snapshot.py": ["tests/test_snapshot_machine.py"],
    "impl/termination.py": ["tests/test_termination.py"],
    "model/termination.py": ["tests/test_termination.py"],
    "impl/coordinator_flink.py": ["tests/test_valve.py", "tests/test_valve_vectors.py"],
    "model/valve.py": ["tests/test_valve_machine.py", "tests/test_valve_vectors.py"],
}


def _run(cmd: list[str], cwd: Path, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, text=True, capture_output=True, **kw)


def prepare(workdir: Path) -> Path:
    """A clone of HEAD with its own venv (reused when present); returns its python."""
    if not (workdir / ".git").is_dir():
        _run(["git", "clone", "-q", str(REPO), str(workdir)], cwd=REPO, check=True)
    else:
        _run(["git", "pull", "-q"], cwd=workdir, check=True)
    shared = workdir.parent / "shared"
    if not shared.exists() and (REPO.parent / "shared").is_dir():
        shared.symlink_to(REPO.parent / "shared")
    python = workdir / ".venv" / "bin" / "python"
    if not python.exists():
        _run([sys.executable, "-m", "venv", str(workdir / ".venv")], cwd=workdir, check=True)
        _run([str(python), "-m", "pip", "install", "-q", "-e", ".[test]", "mutmut==2.5.1"], cwd=workdir, check=True)
    return python


def mutate(module: str, workdir: Path, python: Path) -> dict:
    tests = " ".join(MAP[module])
    runner = f"{python} -m pytest -x -q -p no:cacheprovider --hypothesis-profile=ci {tests}"
    (workdir / ".mutmut-cache").unlink(missing_ok=True)
    _run([str(python), "-m", "mutmut", "run", "--paths-to-mutate", module, "--runner", runner, "--no-progress"],
         cwd=workdir)
    _run(["git", "checkout", "-q", "--", module], cwd=workdir)  # never leave a mutant applied
    results = _run([str(python), "-m", "mutmut", "results"], cwd=workdir).stdout
    counts = {k: 0 for k in ("killed", "survived", "suspicious", "timeout", "untested")}
    for label, key in (("Survived", "survived"), ("Suspicious", "suspicious"), ("Timed out", "timeout"),
                       ("Untested/skipped", "untested")):
        m = re.search(rf"{label} \S+ \((\d+)\)", results)
        counts[key] = int(m.group(1)) if m else 0
    killed_ids = _run([str(python), "-m", "mutmut", "result-ids", "killed"], cwd=workdir).stdout.split()
    counts["killed"] = len(killed_ids)
    checked = counts["killed"] + counts["survived"] + counts["suspicious"] + counts["timeout"]
    counts["score"] = counts["killed"] / checked if checked else 0.0
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help=f"modules to mutate (mapped: {', '.join(MAP)})")
    parser.add_argument("--all", action="store_true", help="every mapped module")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/streamproof-mutation/repo"))
    args = parser.parse_args(argv)
    modules = list(MAP) if args.all else args.modules
    unknown = [m for m in modules if m not in MAP]
    if not modules or unknown:
        parser.error(f"name mapped modules ({', '.join(MAP)})" + (f"; unknown: {', '.join(unknown)}" if unknown else ""))
    args.workdir.parent.mkdir(parents=True, exist_ok=True)
    python = prepare(args.workdir)
    print(f"{'module':28} {'killed':>6} {'survived':>8} {'suspicious':>10} {'timeout':>7} {'score':>6}")
    for module in modules:
        c = mutate(module, args.workdir, python)
        print(f"{module:28} {c['killed']:>6} {c['survived']:>8} {c['suspicious']:>10} {c['timeout']:>7} "
              f"{c['score']:>6.0%}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

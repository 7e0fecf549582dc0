"""What a run on Apache Flink costs (``certify --on-flink``): start-up (JVM, PyFlink, MiniCluster)
against work, per run in PyFlink's thread and process modes, as written and paced, against the
simulator's failure-free run of the same job, measured in one process and printed as ratios to the
simulator; runs per minute on one machine.

    python -m benchmarks.flink_runs                  # examples/jobs/real/event_time_timer.py
    python -m benchmarks.flink_runs --job JOB.py --runs 3 --json

Needs .venv-flink (``make flink-venv``) or STREAMPROOF_FLINK_PYTHON, and Java.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.common import format_table

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Row:
    what: str
    runs: int
    seconds: float
    per_run: float
    per_minute: float
    ratio: float = 1.0


def _simulator(job: str, runs: int) -> Row:
    from streamproof.properties.certify_job_runs import JobScenario, load_job, simulate

    subject = load_job(job)
    none = tuple(() for _ in subject.source_records)
    started = time.perf_counter()
    for seed in range(runs):
        run = simulate(subject, JobScenario(none, 2, seed=seed), faults=(), checkpoints=False)
        assert not isinstance(run, str), run
    seconds = time.perf_counter() - started
    return Row("simulator, failure-free", runs, seconds, seconds / runs, 60 * runs / seconds)


def _flink(job: str, runs: int, mode: str, paced: bool, fault: bool) -> tuple[Row, float]:
    """A client's first run (JVM, PyFlink, the first MiniCluster and the run), then ``runs`` more in
    that client: (the row of those, the first run's seconds)."""
    from streamproof.on_flink.runner import FlinkClient, RunSpec

    started = time.perf_counter()
    with FlinkClient(str(Path(job).parent), 900) as client:
        probe = client.run(job, [RunSpec(None, 2, paced=paced, execution_mode=mode)])[0]
        first = time.perf_counter() - started
        specs = [RunSpec((0, "element", 2) if fault else None, 2, paced=paced, execution_mode=mode)] * runs
        t = time.perf_counter()
        done = client.run(job, specs)
        seconds = time.perf_counter() - t
    bad = [r.error for r in [probe, *done] if r.error]
    if bad:
        raise SystemExit(f"flink_runs: a run failed on Flink: {bad[0]}")
    what = f"Flink {mode} mode, {'paced' if paced else 'as written'}" + (", a failure injected" if fault else "")
    return Row(what, runs, seconds, seconds / runs, 60 * runs / seconds), first


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--job", default=str(REPO / "examples" / "jobs" / "real" / "event_time_timer.py"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from streamproof.on_flink.runner import check_available

    version = check_available()
    base = _simulator(args.job, max(20, args.runs))
    rows, startups = [base], []
    for mode, paced, fault in (("thread", False, False), ("thread", True, False), ("thread", True, True),
                               ("process", False, False), ("process", True, False), ("process", True, True)):
        row, startup = _flink(args.job, args.runs, mode, paced, fault)
        row.ratio = row.per_run / base.per_run
        rows.append(row)
        startups.append((row.what, startup))
    if args.json:
        print(json.dumps({"flink": version, "job": args.job, "rows": [r.__dict__ for r in rows],
                          "first_run_seconds": dict(startups)}))
        return 0
    print(f"{Path(args.job).name} on Apache Flink {version} (parallelism 2) against the simulator, same input\n")
    print(format_table(rows, [("what", "what", "{}"), ("runs", "runs", "{}"), ("s", "seconds", "{:.1f}"),
                              ("s/run", "per_run", "{:.3f}"), ("runs/min", "per_minute", "{:.1f}"),
                              ("x simulator", "ratio", "{:.0f}")]))
    print("\na client's first run (starting the JVM, PyFlink and the first MiniCluster, then the run): "
          + ", ".join(f"{s:.1f} s" for _, s in startups))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""``make flink-check``: every job of this corpus on Apache Flink (``certify --on-flink``'s runs),
each result against ``flink_expected.json`` (written before the runs). Prints a table, writes
``results/flink-check.json``; exit 1 when a result differs from what the file asserts (what was
written first, or, after a disagreement checked by hand on Flink, its ``observed``).

    python examples/jobs/flink_check.py [JOB.py ...] [--faults N]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent / "real"


def observed(report) -> tuple[str, str]:
    """(flink, fidelity) as flink_expected.json writes them."""
    verdicts = [f.verdict for f in report.faults]
    flink = "failed" if "failed" in verdicts else "differs" if "differs" in verdicts else "agrees"
    fidelity = "produced" if report.faithful else "not produced"
    return flink, fidelity


def main(argv: list[str]) -> int:
    from streamproof.on_flink.oracle import run_on_flink, sink_names
    from streamproof.on_flink.runner import FlinkUnavailable
    from streamproof.properties.certify_job_runs import JobCertifyError, load_job

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("jobs", nargs="*")
    parser.add_argument("--faults", type=int, default=6)
    parser.add_argument("--mode", choices=("process", "thread"), default="process",
                        help="PyFlink's python.execution-mode [default: process, PyFlink's own default]")
    parser.add_argument("--out", default="results/flink-check.json")
    parser.add_argument("--record", default=None, metavar="FILE",
                        help="also write every failure-free output Flink committed (tests/data/flink_job_outputs.json)")
    args = parser.parse_args(argv)
    expected = json.loads((HERE / "flink_expected.json").read_text())["jobs"]
    jobs = args.jobs or list(expected)
    rows, disagreements, recorded, version = [], 0, {}, None
    for job in jobs:
        name = Path(job).name
        want = expected.get(name, {})
        started = time.monotonic()
        try:
            subject = load_job(str(HERE / name) if not Path(job).exists() else job)
        except JobCertifyError as e:
            got = ("not run", "-")
            detail = str(e)
        else:
            try:
                report = run_on_flink(subject, subject.pipeline.file, faults=args.faults, mode=args.mode)
            except FlinkUnavailable as e:
                print(f"flink-check: error: {e}", file=sys.stderr)
                return 2
            got, version = observed(report), report.version
            names = sink_names(subject)
            recorded[name] = [{"run": "paced" if run.spec.paced else "as written", "mode": run.spec.execution_mode,
                               "sinks": {names[i]: sorted(o.items()) for i, o in enumerate(run.outputs[:len(names)])}}
                              for run in report.failure_free]
            detail = "; ".join(f"{f.function} {f.fault[1:] if f.fault else ''}: {f.verdict} {f.detail}"
                               for f in report.faults if f.verdict != "agrees")
            detail += "".join(f"; NOT produced: {how}" for ok, how in report.fidelity if not ok)
        first = (want.get("flink", "?"), want.get("fidelity", "-"))
        asserted = tuple(want["observed"]) if "observed" in want else first  # after a disagreement checked by hand
        agrees = got == asserted
        disagreements += not agrees
        rows.append({"job": name, "written_first": first, "asserted": asserted, "observed": got,
                     "as_asserted": agrees, "seconds": round(time.monotonic() - started, 1), "detail": detail})
        note = "ok" if agrees else "DIFFERS from " + "/".join(asserted)
        if asserted != first:
            note += f" (written first: {'/'.join(first)}; see flink_expected.json)"
        print(f"{name:52} {got[0]:9} {got[1]:13} {note}  {rows[-1]['seconds']:.0f} s  {detail[:160]}", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")
    if args.record:
        Path(args.record).write_text(json.dumps({
            "flink": version,
            "how": "python examples/jobs/flink_check.py --record FILE: each job's failure-free runs on Apache "
                   "Flink's MiniCluster (parallelism 2), as written and paced; values in canonical form",
            "jobs": recorded}, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(rows) - disagreements} of {len(rows)} as asserted; {args.out}")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

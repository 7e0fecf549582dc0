"""Certification throughput on the real-operator corpus: scenarios per second of each property
(explored, not shrunk), for this tree and for a baseline streamproof (another commit, installed in
its own Python), measured in the same run, and their ratio. The corpus operators are loaded from
this tree's ``examples/operators/real`` by both (the baseline runs with its working directory here).

    python -m benchmarks.certify_speed                       # this tree only
    python -m benchmarks.certify_speed --baseline /tmp/old/bin/python --examples 60
    python -m benchmarks.certify_speed --operators pseudo_window,fraud_detector --json

A baseline Python: ``git worktree add /tmp/oldtree COMMIT && python3 -m venv /tmp/old &&
/tmp/old/bin/pip install /tmp/oldtree`` (a wheel of that commit with its dependencies).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from types import SimpleNamespace

from benchmarks.common import format_table

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "examples" / "operators" / "real" / "corpus.json"

# run in a subprocess (this tree or the baseline): one operator, every property, no shrinking
_PROBE = r"""
import json, sys, time
from streamproof.properties import certify as cert
from streamproof.properties.explore import explore
spec, examples, seed, stream = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] or None
subject = cert.load(spec, stream=stream) if stream else cert.load(spec)
rows = []
for prop in cert.properties_for(subject):
    started = time.perf_counter()
    e = explore(prop, examples, seed=seed, shrink=False)
    rows.append({"property": prop.name, "held": e.holds, "examples": e.examples,
                 "seconds": time.perf_counter() - started})
try:  # the per-callback watchdog's SIGALRM must not outlive the run (it would end the process)
    from streamproof.impl.operators.keyed_process_operator import release_callback_watchdog
    release_callback_watchdog()
except ImportError:
    pass
print(json.dumps(rows))
"""


def measure(python: str, spec: str, examples: int, seed: int, stream: str | None) -> list[dict]:
    proc = subprocess.run([python, "-I", "-c", _PROBE, spec, str(examples), str(seed), stream or ""], cwd=ROOT,
                          capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"certify_speed: {python} failed on {spec}: {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--baseline", default=None, help="a Python with the baseline streamproof installed")
    parser.add_argument("--operators", default=None, help="comma-separated corpus file stems (default: all)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    entries = json.loads(CORPUS.read_text())
    if args.operators:
        wanted = set(args.operators.split(","))
        entries = [e for e in entries if e["file"].removesuffix(".py") in wanted]
    rows = []
    for entry in entries:
        stream = entry.get("stream")
        now = measure(sys.executable, entry["operator"], args.examples, args.seed, stream)
        before = measure(args.baseline, entry["operator"], args.examples, args.seed, stream) if args.baseline else None
        for i, r in enumerate(now):
            row = {"operator": entry["file"].removesuffix(".py"), "property": r["property"].split(".", 1)[1],
                   "held": r["held"], "examples": r["examples"], "per_second": r["examples"] / r["seconds"]}
            if before is not None and i < len(before):
                b = before[i]
                row["baseline_per_second"] = b["examples"] / b["seconds"]
                row["baseline_held"] = b["held"]
                row["slowdown"] = row["baseline_per_second"] / row["per_second"]
            rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    columns = [("operator", "operator", "{}"), ("property", "property", "{}"), ("held", "held", "{}"),
               ("examples", "examples", "{}"), ("scenarios/s", "per_second", "{:.1f}")]
    if args.baseline:
        columns += [("baseline held", "baseline_held", "{}"), ("baseline scenarios/s", "baseline_per_second", "{:.1f}"),
                    ("slowdown", "slowdown", "{:.2f}x")]
    print(format_table([SimpleNamespace(**{"baseline_held": "-", "baseline_per_second": 0.0, "slowdown": 0.0, **r})
                        for r in rows], columns))
    held = [r for r in rows if r["held"] and r.get("baseline_held") and "slowdown" in r]
    if held:
        slow = sorted(r["slowdown"] for r in held)
        print(f"\nheld in both: {len(held)} property runs; slowdown (baseline scenarios/s / now) "
              f"median {slow[len(slow) // 2]:.2f}x, max {slow[-1]:.2f}x")
    # a held certificate: every property held in both runs; its time is the sum of its properties'
    whole = {}
    for r in rows:
        whole.setdefault(r["operator"], []).append(r)
    certificates = [(name, sum(r["examples"] / r["per_second"] for r in rs),
                     sum(r["examples"] / r["baseline_per_second"] for r in rs))
                    for name, rs in whole.items()
                    if all(r["held"] and r.get("baseline_held") is True and r.get("baseline_per_second") for r in rs)]
    for name, now, before in certificates:
        print(f"held certificate {name}: {now:.1f} s now, {before:.1f} s baseline, {now / before:.2f}x")
    if certificates:
        ratios = sorted(now / before for _, now, before in certificates)
        print(f"held certificates: {len(ratios)}; slowdown median {ratios[len(ratios) // 2]:.2f}x, "
              f"max {ratios[-1]:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

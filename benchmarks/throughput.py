"""Exploration throughput before and after (issue 30), both measured in one run.

*before* is a git revision (default ``f10a46d``, the last commit before issue 30's changes)
extracted with ``git archive`` into a temporary folder; *after* is this checkout (or ``--after``
REV, e.g. to compare the same scenario generator on both sides). Every
measurement runs in a fresh Python process that imports ``streamproof`` from its side's folder,
the sides alternating (before, after, before, after ...); the best of ``--repeats`` is kept.

1. Examples per second of each property (``--seeds``, default 0, summed; ``--examples``, no
   shrinking, as one ``streamproof check PROPERTY`` explores), per family (its examples over its seconds), and the
   ratio after / before. Both sides must give every property the same verdict and example count:
   a difference is printed under the table (the benchmark exits 1).
2. A long job (``benchmarks.jobs``' input: 2 sources, 50 keys, window sums, a checkpoint every 50
   steps, parallelism 2) at ``--sizes`` records, on the one-stage runtime and as a job graph:
   microseconds per simulation step and the memory the run added (peak RSS during the run minus
   RSS before it) per input record, and per record added since the size before (the slope: what
   grows with the input, without the first run's one-time allocations).

It asserts nothing about time.

    python -m benchmarks.throughput [--before f10a46d] [--examples 300] [--families job] [--seeds 0,1,2]
                                    [--sizes 1000,5000,10000,20000] [--repeats 2] [--skip-long]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import format_table, sizes_parser  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEFORE = "f10a46d"  # the last commit before issue 30's changes
# pyproject's package map: the import name streamproof.X lives in folder Y
PACKAGES = {"impl": "impl", "model": "model", "properties": "properties", "spark_harness": "spark_harness",
            "examples": "examples"}

EXPLORE = """
import json, sys, time
from streamproof.properties import registry
from streamproof.properties.explore import explore
prop, examples, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
started = time.perf_counter()
result = explore(registry.get(prop), examples, seed=seed, shrink=False)
print(json.dumps({"seconds": time.perf_counter() - started, "holds": result.holds, "examples": result.examples}))
"""

LONG_JOB = """
import json, os, resource, sys, time
from benchmarks.jobs import CONFIG, make_sources
try:
    from streamproof.impl.graph.job import GraphJobSpec, JobSpec
    from streamproof.impl.graph.job_graph import one_stage_graph
    from streamproof.impl.graph.sim import simulate
    simulate_graph = simulate
except ImportError:  # a revision before issue 32's layout
    from streamproof.impl.graph import one_stage_graph
    from streamproof.impl.graph_job import GraphJobSpec
    from streamproof.impl.job import JobSpec
    from streamproof.impl.sim import simulate, simulate_graph
from streamproof.properties.job.functions import FUNCTIONS, STATELESS_FUNCTIONS
records, shape = int(sys.argv[1]), sys.argv[2]
sources = make_sources(records // 2, 0)
def rss_kb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
before = rss_kb()
started = time.perf_counter()
if shape == "graph":
    spec = GraphJobSpec(one_stage_graph("window_sum", 2, 2), sources, {**FUNCTIONS, **STATELESS_FUNCTIONS},
                        config=CONFIG, checkpoint_interval=50)
    result = simulate_graph(spec, 0, max_steps=10**7)
else:
    result = simulate(JobSpec(sources, FUNCTIONS["window_sum"], parallelism=2, config=CONFIG,
                              checkpoint_interval=50), 0, max_steps=10**7)
seconds = time.perf_counter() - started
added = max(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
print(json.dumps({"seconds": seconds, "steps": result.steps, "added_kb": added, "committed": len(result.committed)}))
"""


def side_folder(tree: str, into: str) -> str:
    """A folder to put first on ``sys.path`` so that ``streamproof`` (and ``benchmarks``) import
    from ``tree``: a ``streamproof`` package of symlinks laid out as pyproject maps it."""
    site = os.path.join(into, "site")
    package = os.path.join(site, "streamproof")
    os.makedirs(package)
    for entry in os.listdir(os.path.join(tree, "streamproof")):
        if entry in PACKAGES:
            raise SystemExit(f"{tree}/streamproof/{entry} exists: cannot lay out the package")
        os.symlink(os.path.join(tree, "streamproof", entry), os.path.join(package, entry))
    for name, folder in PACKAGES.items():
        os.symlink(os.path.join(tree, folder), os.path.join(package, name))
    os.symlink(os.path.join(tree, "benchmarks"), os.path.join(site, "benchmarks"))
    return site


def extract(revision: str, into: str) -> str:
    tree = os.path.join(into, "tree")
    os.makedirs(tree)
    archive = subprocess.run(["git", "-C", ROOT, "archive", revision], capture_output=True)
    if archive.returncode != 0:
        raise SystemExit(f"cannot read revision {revision!r}: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", tree], input=archive.stdout, check=True)
    return tree


def run_in(site: str, code: str, *args) -> dict:
    """Runs ``code`` in a fresh interpreter importing from ``site`` first; its last line is JSON."""
    env = {**os.environ, "PYTHONPATH": site, "PYTHONDONTWRITEBYTECODE": "1"}
    # -I would drop PYTHONPATH; -c keeps the site folder ahead of the editable install's finder
    done = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {site!r})\n" + code, *map(str, args)],
                          capture_output=True, text=True, env=env, cwd=site)
    if done.returncode != 0:
        raise SystemExit(f"a measurement failed ({' '.join(map(str, args))}): {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


@dataclass
class PropertyRow:
    prop: str
    examples: int
    before_s: float
    after_s: float

    @property
    def before_rate(self) -> float:
        return self.examples / self.before_s

    @property
    def after_rate(self) -> float:
        return self.examples / self.after_s

    @property
    def ratio(self) -> float:
        return self.before_s / self.after_s


@dataclass
class LongRow:
    shape: str
    records: int
    before_us: float
    after_us: float
    before_bytes: float
    after_bytes: float
    before_slope: str = "-"
    after_slope: str = "-"

    @property
    def ratio(self) -> float:
        return self.before_us / self.after_us


def measure_properties(sides: dict, names: list[str], examples: int, repeats: int,
                       seeds: tuple[int, ...] = (0,)) -> tuple[list, list]:
    """Per property, the best of ``repeats`` per seed, summed over ``seeds`` (a generator change
    changes which scenarios a seed draws, and one seed's may be cheaper or dearer by chance)."""
    rows, differ = [], []
    for name in names:
        row = PropertyRow(name, 0, 0.0, 0.0)
        for seed in seeds:
            best: dict = {}
            for _ in range(repeats):
                for side, site in sides.items():
                    got = run_in(site, EXPLORE, name, examples, seed)
                    if side not in best or got["seconds"] < best[side]["seconds"]:
                        best[side] = got
            b, a = best["before"], best["after"]
            if (b["holds"], b["examples"]) != (a["holds"], a["examples"]):
                differ.append(f"{name} seed {seed}: before {b['holds']} after {b['examples']} examples, "
                              f"after {a['holds']} after {a['examples']}")
            row.examples += a["examples"]
            row.before_s += b["seconds"]
            row.after_s += a["seconds"]
        rows.append(row)
        print(f"  {name}: {rows[-1].before_rate:.1f} -> {rows[-1].after_rate:.1f} examples/s", file=sys.stderr)
    return rows, differ


def family_rows(rows: list[PropertyRow]) -> list[PropertyRow]:
    families: dict[str, PropertyRow] = {}
    for row in rows:
        family = row.prop.split(".")[0]
        total = families.setdefault(family, PropertyRow(family, 0, 0.0, 0.0))
        total.examples += row.examples
        total.before_s += row.before_s
        total.after_s += row.after_s
    return list(families.values())


def measure_long(sides: dict, sizes: list[int], repeats: int) -> list[LongRow]:
    rows = []
    for shape in ("one-stage", "graph"):
        previous = None
        for records in sizes:
            best: dict = {}
            for _ in range(repeats):
                for side, site in sides.items():
                    got = run_in(site, LONG_JOB, records, shape)
                    if side not in best or got["seconds"] < best[side]["seconds"]:
                        best[side] = got
            b, a = best["before"], best["after"]
            if (b["steps"], b["committed"]) != (a["steps"], a["committed"]):
                raise SystemExit(f"{shape} {records}: the runs differ (steps, committed) {b} {a}")
            rows.append(LongRow(shape, records, 1e6 * b["seconds"] / b["steps"], 1e6 * a["seconds"] / a["steps"],
                                1024 * b["added_kb"] / records, 1024 * a["added_kb"] / records))
            if previous is not None:
                grown = records - previous[0]
                rows[-1].before_slope = f"{1024 * (b['added_kb'] - previous[1]) / grown:.0f}"
                rows[-1].after_slope = f"{1024 * (a['added_kb'] - previous[2]) / grown:.0f}"
            previous = (records, b["added_kb"], a["added_kb"])
            print(f"  {shape} {records}: {rows[-1].before_us:.1f} -> {rows[-1].after_us:.1f} us/step", file=sys.stderr)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE, help=f"git revision of the before side [default: {BEFORE}]")
    parser.add_argument("--after", default=None, help="git revision of the after side [default: this checkout]")
    parser.add_argument("--examples", type=int, default=300)
    parser.add_argument("--families", default="job", help="comma-separated families, or 'all' [default: job]")
    parser.add_argument("--properties", default="", help="comma-separated properties instead of families")
    parser.add_argument("--sizes", type=sizes_parser(100), default=[1000, 5000, 10000, 20000])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--seeds", default="0", help="comma-separated Hypothesis seeds, summed [default: 0]")
    parser.add_argument("--skip-long", action="store_true", help="only the examples/s tables")
    args = parser.parse_args(argv)

    sys.path.insert(0, ROOT)
    from streamproof.properties import registry
    every = [p.name for p in registry.all_properties()]
    if args.properties:
        names = [n.strip() for n in args.properties.split(",") if n.strip()]
    else:
        families = None if args.families == "all" else {f.strip() for f in args.families.split(",")}
        names = [n for n in every if families is None or n.split(".")[0] in families]
    unknown = [n for n in names if n not in every]
    if unknown or not names:
        raise SystemExit(f"no such property: {', '.join(unknown) or '(none selected)'}")

    with tempfile.TemporaryDirectory(prefix="streamproof-throughput-") as tmp:
        os.makedirs(os.path.join(tmp, "before"))
        os.makedirs(os.path.join(tmp, "after"))
        after = ROOT if args.after is None else extract(args.after, os.path.join(tmp, "after"))
        sides = {"before": side_folder(extract(args.before, os.path.join(tmp, "before")), os.path.join(tmp, "before")),
                 "after": side_folder(after, os.path.join(tmp, "after"))}
        seeds = tuple(int(x) for x in args.seeds.split(","))
        rows, differ = measure_properties(sides, names, args.examples, args.repeats, seeds)
        long_rows = [] if args.skip_long else measure_long(sides, args.sizes, args.repeats)

    rate = [("property", "prop", "{}"), ("examples", "examples", "{}"),
            (f"before ({args.before}) ex/s", "before_rate", "{:.1f}"), ("after ex/s", "after_rate", "{:.1f}"),
            ("after/before", "ratio", "{:.2f}x")]
    print(f"Examples per second, seeds {args.seeds}, {args.examples} examples each, no shrinking "
          f"(best of {args.repeats} per seed)")
    print(format_table(rows, rate))
    print()
    print("Per family")
    print(format_table(family_rows(rows), [("family", "prop", "{}")] + rate[1:]))
    if long_rows:
        print()
        print("A long job: cost per step and memory per record")
        print(format_table(long_rows, [
            ("runtime", "shape", "{}"), ("records", "records", "{}"),
            ("before us/step", "before_us", "{:.1f}"), ("after us/step", "after_us", "{:.1f}"),
            ("after/before", "ratio", "{:.2f}x"),
            ("before B/record", "before_bytes", "{:.0f}"), ("after B/record", "after_bytes", "{:.0f}"),
            ("before B/record since", "before_slope", "{}"), ("after B/record since", "after_slope", "{}")]))
    for line in differ:
        print(f"DIFFERENT VERDICT {line}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())

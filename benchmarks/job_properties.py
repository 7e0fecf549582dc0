"""Examples per second of each ``job.*`` property, with and without the failure-free reference run.

Issue 30: every job example simulated the failure-free reference, although only
``job.exactly-once`` and ``job.timer-effects-once`` read it (``properties.job.check.READS_REFERENCE``).
Both sides run in this process, alternating: *every* (the reference simulated for every property,
as before) and *read* (only where a property reads it); each explores the same seeded examples
(the run cache cleared before each exploration), and both must give the same verdicts.

A second table explores the four properties one after another, as ``streamproof check job`` does,
sharing the run cache: with 256 entries (before) and ``RUN_CACHE_SIZE`` (now), alternating. It
asserts nothing about time.

    python -m benchmarks.job_properties [--examples 60] [--seeds 0,1] [--repeats 2]
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from dataclasses import dataclass
from unittest import mock

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import format_table  # noqa: E402
from streamproof.properties import registry  # noqa: E402
from streamproof.properties.explore import explore  # noqa: E402
from streamproof.properties.job import check  # noqa: E402

PROPERTIES = ("job.exactly-once", "job.timer-effects-once", "job.watermarks", "job.end-of-input")


@dataclass
class Row:
    prop: str
    examples: int
    every_s: float
    read_s: float

    @property
    def every_rate(self) -> float:
        return self.examples / self.every_s

    @property
    def read_rate(self) -> float:
        return self.examples / self.read_s

    @property
    def speedup(self) -> float:
        return self.every_s / self.read_s


@dataclass
class FamilyRow:
    size: int
    examples: int
    seconds: float
    speedup: float

    @property
    def rate(self) -> float:
        return self.examples / self.seconds


def _explore(prop: str, examples: int, seed: int, every: bool):
    check._run.cache_clear()
    reads = frozenset(PROPERTIES) if every else check.READS_REFERENCE
    with mock.patch.object(check, "READS_REFERENCE", reads):
        start = time.perf_counter()
        result = explore(registry.get(prop), examples, seed=seed, shrink=False)
        return time.perf_counter() - start, (result.holds, result.examples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=60)
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    rows = []
    for prop in PROPERTIES:
        best = {True: float("inf"), False: float("inf")}
        for _ in range(args.repeats):
            for every in (True, False):  # alternating, so load falls on both sides alike
                total, verdicts = 0.0, []
                for seed in seeds:
                    seconds, verdict = _explore(prop, args.examples, seed, every)
                    total += seconds
                    verdicts.append(verdict)
                if every:
                    wanted = verdicts
                elif verdicts != wanted:
                    raise SystemExit(f"{prop}: verdicts differ with the reference read only where needed: "
                                     f"{wanted} vs {verdicts}")
                best[every] = min(best[every], total)
        rows.append(Row(prop, args.examples * len(seeds), best[True], best[False]))
    inner = check._run.__wrapped__
    best = {}
    for _ in range(args.repeats):
        for size in (256, check.RUN_CACHE_SIZE):
            cached = functools.lru_cache(maxsize=size)(inner)
            with mock.patch.object(check, "_run", cached):
                start = time.perf_counter()
                for seed in seeds:
                    for prop in PROPERTIES:
                        explore(registry.get(prop), args.examples, seed=seed, shrink=False)
                best[size] = min(best.get(size, float("inf")), time.perf_counter() - start)
    examples = args.examples * len(seeds) * len(PROPERTIES)
    family_rows = [FamilyRow(size, examples, best[size], best[256] / best[size]) for size in (256, check.RUN_CACHE_SIZE)]
    print(format_table(rows, [("property", "prop", "{}"), ("examples", "examples", "{}"),
                              ("every s", "every_s", "{:.2f}"), ("every ex/s", "every_rate", "{:.1f}"),
                              ("read s", "read_s", "{:.2f}"), ("read ex/s", "read_rate", "{:.1f}"),
                              ("speed-up", "speedup", "{:.2f}x")]))
    print()
    print(format_table(family_rows, [("run cache", "size", "{}"), ("examples", "examples", "{}"),
                                     ("seconds", "seconds", "{:.2f}"), ("ex/s", "rate", "{:.1f}"),
                                     ("speed-up", "speedup", "{:.2f}x")]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

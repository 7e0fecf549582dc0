"""Copy-on-write timer snapshots: the synchronous pause against a full copy, and the async part.

For each N, one timer service holds N timers (half event time, half processing time) over K
keys in 128 key groups. Measured on the same state:

  * sync COW: ``manager.start_snapshot()``, the synchronous part of a copy-on-write snapshot
    (bump a version, route the queues), best of R;
  * sync full copy: what a synchronous point-in-time snapshot must copy at least; Flink's heap
    backend copies each queue's array (``HeapPriorityQueueSnapshotRestoreWrapper``): here
    ``tuple(queue._heap)`` of both queues, best of R (a C-level copy, the cheapest O(N) copy);
  * async: ``snapshot.finish()`` (every key group filtered at the snapshot's version and written),
    its MB/s and bytes per timer;
  * peak memory during a snapshot (tracemalloc, traced only while the snapshot runs), first alone,
    then with 10% of the timers deleted and registered again while it runs (tombstones and
    histories), and the cost of those mutations against the same ones with no snapshot running.

Prints a table and the ratios; asserts nothing about time.

    python3 -m benchmarks.snapshots [--sizes 1000,10000,100000,1000000] [--keys K] [--repeat R]
                                    [--no-memory] [--json]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
import time
import tracemalloc
from dataclasses import asdict, dataclass

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import sizes_parser  # noqa: E402
from streamproof.impl.state.key_groups import KeyGroupRange  # noqa: E402
from streamproof.impl.timers.snapshot_format import decode_snapshot  # noqa: E402
from streamproof.impl.timers.internal_time_service_manager import InternalTimeServiceManager
from streamproof.impl.timers.internal_timer_service import KeyContext
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService

MAX_PARALLELISM = 128
TARGET_RATIO_AT_1M = 1000


class Nothing:
    def on_event_time(self, timer) -> None:
        pass

    on_processing_time = on_event_time


@dataclass
class Row:
    n: int
    sync_cow_us: float
    sync_copy_ms: float
    ratio: float
    async_s: float
    mb_per_s: float
    bytes_per_timer: float
    peak_mb: float
    peak_churn_mb: float
    churn_cost_ratio: float


def build(n: int, keys: int, seed: int):
    rng = random.Random(seed)
    context = KeyContext(MAX_PARALLELISM)
    manager = InternalTimeServiceManager(context, KeyGroupRange(0, MAX_PARALLELISM - 1), ManualProcessingTimeService(),
                                         firing_budget=n + 1)
    service = manager.get_internal_timer_service("bench", Nothing())
    names = [f"key-{i}" for i in range(keys)]
    timers = []
    for i in range(n):
        key, ts = names[rng.randrange(keys)], rng.randrange(1, 2 * n)
        context.set_current_key(key)
        if i % 2:
            service.register_event_time_timer("w", ts)
        else:
            service.register_processing_time_timer("w", ts)
        timers.append((i % 2, key, ts))
    return manager, service, context, timers


def best_of(repeat: int, run) -> float:
    """The fastest of ``repeat`` runs (after one warm-up run), the collector paused."""
    gc.collect()
    gc.disable()
    try:
        run()
        return min(run() for _ in range(repeat))
    finally:
        gc.enable()


def sync_cow(manager) -> float:
    started = time.perf_counter()
    snapshot = manager.start_snapshot()
    elapsed = time.perf_counter() - started
    snapshot.cancel()
    return elapsed


def sync_copy(service) -> float:
    started = time.perf_counter()
    copies = (tuple(service.event_time_timers_queue._heap), tuple(service.processing_time_timers_queue._heap))
    elapsed = time.perf_counter() - started
    del copies
    return elapsed


def churn(service, context, timers, rng) -> float:
    """Deletes and registers again 10% of the timers; returns the time it took."""
    sample = rng.sample(timers, max(1, len(timers) // 10))
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        started = time.perf_counter()
        for event, key, ts in sample:
            context.set_current_key(key)
            if event:
                service.delete_event_time_timer("w", ts)
                service.register_event_time_timer("w", ts)
            else:
                service.delete_processing_time_timer("w", ts)
                service.register_processing_time_timer("w", ts)
        return time.perf_counter() - started
    finally:
        if gc_was_enabled:
            gc.enable()


def peak_during_snapshot(manager, service=None, context=None, timers=None, seed=0) -> tuple[float, float]:
    """Peak traced bytes while a snapshot runs (optionally with churn inside it); churn time."""
    gc.collect()
    tracemalloc.start()
    try:
        snapshot = manager.start_snapshot()
        churned = churn(service, context, timers, random.Random(seed)) if service is not None else 0.0
        data = snapshot.finish()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del data
    return peak / 1e6, churned


def measure(n: int, keys: int, seed: int, repeat: int, memory: bool) -> Row:
    manager, service, context, timers = build(n, keys, seed)
    cow = best_of(repeat, lambda: sync_cow(manager))
    copy = best_of(repeat, lambda: sync_copy(service))
    gc.collect()
    snapshot = manager.start_snapshot()
    started = time.perf_counter()
    data = snapshot.finish()
    async_s = time.perf_counter() - started
    if decode_snapshot(data).timer_count() != n - _duplicates(timers):
        raise AssertionError("the snapshot does not hold every timer")
    peak = peak_churn = 0.0
    churn_ratio = float("nan")
    if memory:
        peak, _ = peak_during_snapshot(manager)
        peak_churn, _ = peak_during_snapshot(manager, service, context, timers, seed)
    plain = churn(service, context, timers, random.Random(seed + 1))
    snapshot = manager.start_snapshot()
    during = churn(service, context, timers, random.Random(seed + 1))
    snapshot.finish()
    churn_ratio = during / plain
    return Row(n, cow * 1e6, copy * 1e3, copy / cow, async_s, len(data) / async_s / 1e6, len(data) / n,
               peak, peak_churn, churn_ratio)


def _duplicates(timers) -> int:
    return len(timers) - len(set(timers))


COLUMNS = [
    ("N", "n", "{}"), ("sync COW us", "sync_cow_us", "{:.1f}"), ("sync full copy ms", "sync_copy_ms", "{:.3f}"),
    ("copy/COW", "ratio", "{:.0f}x"), ("async s", "async_s", "{:.3f}"), ("async MB/s", "mb_per_s", "{:.1f}"),
    ("bytes/timer", "bytes_per_timer", "{:.1f}"), ("peak MB", "peak_mb", "{:.1f}"),
    ("peak MB, 10% churn", "peak_churn_mb", "{:.1f}"), ("churn cost during/idle", "churn_cost_ratio", "{:.2f}x"),
]


def format_table(rows: list[Row]) -> str:
    cells = [[fmt.format(getattr(r, attr)) for _, attr, fmt in COLUMNS] for r in rows]
    widths = [max(len(t), *(len(c[i]) for c in cells)) for i, (t, _, _) in enumerate(COLUMNS)]
    lines = ["  ".join(t.rjust(w) for (t, _, _), w in zip(COLUMNS, widths)), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.rjust(w) for c, w in zip(cell, widths)) for cell in cells]
    return "\n".join(lines)


def summary(rows: list[Row]) -> list[str]:
    lines = []
    first, last = rows[0], rows[-1]
    lines.append(f"sync COW pause from N={first.n} to N={last.n}: {first.sync_cow_us:.1f} -> {last.sync_cow_us:.1f} us "
                 f"({last.sync_cow_us / first.sync_cow_us:.2f}x for {last.n / first.n:.0f}x the timers)")
    for row in rows:
        if row.n >= 1_000_000:
            verdict = "met" if row.ratio >= TARGET_RATIO_AT_1M else "not met"
            lines.append(f"N={row.n}: full copy / COW = {row.ratio:.0f}x (goal >= {TARGET_RATIO_AT_1M}x): {verdict}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m benchmarks.snapshots", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=sizes_parser(), default=[1_000, 10_000, 100_000, 1_000_000])
    parser.add_argument("--keys", type=int, default=10_000, help="distinct keys (default 10000)")
    parser.add_argument("--repeat", type=int, default=20, help="repetitions of the sync parts (default 20)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-memory", action="store_true", help="skip the tracemalloc runs")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = []
    for n in args.sizes:
        rows.append(measure(n, args.keys, args.seed, args.repeat, not args.no_memory))
        print(f"  measured N={n}", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
    else:
        print(format_table(rows))
        print()
        print("\n".join(summary(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

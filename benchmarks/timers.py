"""Timer-service throughput: ``streamproof.impl.timers.internal_timer_service`` against a bare ``heapq`` + ``dict`` baseline.

Registers N timers over K keys, then fires them all with one advance, on both sides in the same
run, and prints a table of wall-clock (or CPU) times and ratios (impl / baseline), one row per
size, key count and domain: event time (one ``advance_watermark``) and processing time (one
``ManualProcessingTimeService.advance_to``). Both sides must fire the same timers (count and
checksum): the benchmark fails loudly otherwise. It asserts nothing about time.

    python3 -m benchmarks.timers [--sizes 10000,100000,1000000] [--keys 1000,100000] [--repeat R]
                                 [--seed S] [--cold-key-groups] [--cpu-time] [--json]
"""

from __future__ import annotations

import argparse
import gc
import heapq
import json
import os
import random
import sys
import time
from dataclasses import asdict, dataclass
from itertools import count
from typing import Callable

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import format_table as common_format_table, sizes_parser  # noqa: E402
from streamproof.impl.state.key_groups import KeyGroupRange, forget_key_groups  # noqa: E402
from streamproof.impl.timers.internal_time_service_manager import InternalTimeServiceManager
from streamproof.impl.timers.internal_timer_service import KeyContext
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService

TARGET_RATIO = 1.5
NAMESPACE = "w"
MAX_PARALLELISM = 128
DOMAINS = ("event", "processing")


# -- workload ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Workload:
    keys: list[str]  # the key of each timer, in registration order
    timestamps: list[int]  # the timestamp of each timer
    max_timestamp: int


def make_workload(n: int, k: int, seed: int) -> Workload:
    """N timers, keys drawn uniformly from K keys ``key-0..key-{K-1}``, timestamps from [0, N)."""
    rng = random.Random(seed)
    names = [f"key-{i}" for i in range(k)]
    keys = [names[rng.randrange(k)] for _ in range(n)]
    timestamps = [rng.randrange(n) for _ in range(n)]
    return Workload(keys, timestamps, max(timestamps))


class Counter:
    """The firing callback of both sides: counts firings and sums timestamps (the checksum)."""

    __slots__ = ("fired", "checksum")

    def __init__(self) -> None:
        self.fired = 0
        self.checksum = 0

    def __call__(self, timer: tuple) -> None:
        self.fired += 1
        self.checksum += timer[0]

    # the Triggerable protocol of impl.timers
    on_event_time = __call__
    on_processing_time = __call__


# -- the two sides -----------------------------------------------------------------------------
# Each side is a function (workload, domain) -> (register, fire) where both are zero-argument
# callables run back to back on fresh state; `fire` returns the Counter.
Phases = tuple[Callable[[], None], Callable[[], Counter]]


def impl_phases(w: Workload, domain: str) -> Phases:
    counter = Counter()
    key_context = KeyContext(MAX_PARALLELISM)
    clock = ManualProcessingTimeService()
    manager = InternalTimeServiceManager(
        key_context, KeyGroupRange(0, MAX_PARALLELISM - 1), clock, firing_budget=len(w.timestamps) + 1
    )
    service = manager.get_internal_timer_service("bench", counter)
    register_timer = service.register_event_time_timer if domain == "event" else service.register_processing_time_timer

    def register() -> None:
        set_current_key = key_context.set_current_key
        for key, ts in zip(w.keys, w.timestamps):
            set_current_key(key)
            register_timer(NAMESPACE, ts)

    def fire() -> Counter:
        if domain == "event":
            manager.advance_watermark(w.max_timestamp)
        else:
            clock.advance_to(w.max_timestamp)
        return counter

    return register, fire


def cold_impl_phases(w: Workload, domain: str) -> Phases:
    """``impl_phases`` with no key group remembered: each distinct key's is computed while timed."""
    forget_key_groups()
    return impl_phases(w, domain)


def baseline_phases(w: Workload, domain: str) -> Phases:
    """The least code doing the same logical work: set semantics, time order, a current key.

    ``pending`` maps each timer ``(ts, key, namespace)`` to its sequence number (dedup); the heap
    holds ``(ts, seq, key, namespace)``; firing pops, skips entries no longer pending, forgets
    the timer and calls the callback. Processing time also keeps the next wake-up time, moved
    only by a strictly earlier new timer (what the impl's single physical timer tracks).
    """
    counter = Counter()
    pending: dict[tuple, int] = {}
    heap: list[tuple] = []
    seq = count()
    state = {"current_key": None, "next_wakeup": None}

    def register() -> None:
        current_key = None
        next_wakeup = None
        heappush = heapq.heappush
        for key, ts in zip(w.keys, w.timestamps):
            current_key = key  # the key context: just a variable
            timer = (ts, current_key, NAMESPACE)
            if timer in pending:
                continue
            s = next(seq)
            pending[timer] = s
            heappush(heap, (ts, s, current_key, NAMESPACE))
            if domain == "processing" and (next_wakeup is None or ts < next_wakeup):
                next_wakeup = ts
        state["current_key"], state["next_wakeup"] = current_key, next_wakeup

    def fire() -> Counter:
        limit = w.max_timestamp
        heappop = heapq.heappop
        current_key = state["current_key"]
        while heap and heap[0][0] <= limit:
            ts, s, current_key, namespace = heappop(heap)
            timer = (ts, current_key, namespace)
            if pending.get(timer) != s:
                continue  # stale entry
            del pending[timer]
            counter(timer)
        state["current_key"] = current_key
        return counter

    return register, fire


SIDES: dict[str, Callable[[Workload, str], Phases]] = {"baseline": baseline_phases, "impl": impl_phases}


# -- timing ------------------------------------------------------------------------------------
@dataclass
class Timing:
    register: float
    fire: float
    total: float
    fired: int
    checksum: int


# What the timed phases read: wall-clock time, or this process's CPU time (--cpu-time), which does
# not charge a side for the time another process had the core.
clock = time.perf_counter


def time_once(side: Callable[[Workload, str], Phases], w: Workload, domain: str) -> Timing:
    register, fire = side(w, domain)  # setup is not timed
    gc.collect()
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = clock()
        register()
        t1 = clock()
        counter = fire()
        t2 = clock()
    finally:
        if gc_was_enabled:
            gc.enable()
    return Timing(t1 - t0, t2 - t1, t2 - t0, counter.fired, counter.checksum)


def best_of(runs: list[Timing], what: str) -> Timing:
    """Per phase, the fastest of the runs (total: the fastest total run)."""
    outcomes = {(r.fired, r.checksum) for r in runs}
    if len(outcomes) != 1:
        raise AssertionError(f"{what} is not deterministic: {sorted(outcomes)}")
    return Timing(
        min(r.register for r in runs), min(r.fire for r in runs), min(r.total for r in runs),
        runs[0].fired, runs[0].checksum,
    )


@dataclass
class Row:
    domain: str
    n: int
    k: int
    key_groups: str  # "remembered" (from earlier runs of the process) or "cold"
    repeat: int
    fired: int
    checksum: int
    baseline_s: float
    impl_s: float
    ratio: float
    baseline_register_s: float
    impl_register_s: float
    register_ratio: float
    baseline_fire_s: float
    impl_fire_s: float
    fire_ratio: float


def measure(domain: str, n: int, k: int, seed: int, repeat: int, cold_key_groups: bool = False) -> Row:
    w = make_workload(n, k, seed)
    impl_side = cold_impl_phases if cold_key_groups else impl_phases
    # Alternate the sides so that a slow spell of the machine hits both alike.
    base_runs, impl_runs = [], []
    for _ in range(repeat):
        base_runs.append(time_once(baseline_phases, w, domain))
        impl_runs.append(time_once(impl_side, w, domain))
    base, impl = best_of(base_runs, "baseline"), best_of(impl_runs, "impl")
    if (impl.fired, impl.checksum) != (base.fired, base.checksum):
        raise AssertionError(
            f"{domain} N={n} K={k}: impl fired {impl.fired} timers (checksum {impl.checksum}), "
            f"baseline fired {base.fired} (checksum {base.checksum})"
        )
    return Row(
        domain, n, k, "cold" if cold_key_groups else "remembered", repeat, impl.fired, impl.checksum,
        base.total, impl.total, impl.total / base.total,
        base.register, impl.register, impl.register / base.register,
        base.fire, impl.fire, impl.fire / base.fire,
    )


# -- output ------------------------------------------------------------------------------------
COLUMNS = [
    ("domain", "domain", "{}"),
    ("N", "n", "{}"),
    ("K", "k", "{}"),
    ("key groups", "key_groups", "{}"),
    ("fired", "fired", "{}"),
    ("baseline s", "baseline_s", "{:.4f}"),
    ("impl s", "impl_s", "{:.4f}"),
    ("ratio", "ratio", "{:.2f}x"),
    ("register ratio", "register_ratio", "{:.2f}x"),
    ("fire ratio", "fire_ratio", "{:.2f}x"),
]


def format_table(rows: list[Row]) -> str:
    return common_format_table(rows, COLUMNS)


def target_lines(rows: list[Row]) -> list[str]:
    lines = []
    for row in rows:
        verdict = "met" if row.ratio <= TARGET_RATIO else "not met"
        lines.append(f"{row.domain} N={row.n} K={row.k} ({row.key_groups} key groups): "
                     f"target <= {TARGET_RATIO}x: {verdict} ({row.ratio:.2f}x)")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m benchmarks.timers",
        description="Register and fire N timers over K keys: impl.timers vs a heapq+dict baseline.",
    )
    parser.add_argument("--sizes", type=sizes_parser(), default=[10_000, 100_000, 1_000_000],
                        help="comma-separated N values (default: 10000,100000,1000000)")
    parser.add_argument("--keys", type=sizes_parser(), default=[1_000, 100_000],
                        help="comma-separated numbers of distinct keys K (default: 1000,100000)")
    parser.add_argument("--repeat", type=int, default=None,
                        help="repetitions per side, best taken (default: 3 for N <= 10^5, else 1)")
    parser.add_argument("--seed", type=int, default=0, help="workload seed (default: 0)")
    parser.add_argument("--domains", default=",".join(DOMAINS),
                        help=f"comma-separated time domains (default: {','.join(DOMAINS)})")
    parser.add_argument("--cold-key-groups", action="store_true",
                        help="forget the remembered key groups before each impl run (untimed), so the "
                             "impl computes every distinct key's key group while timed")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time with this process's CPU time instead of wall-clock time (a shared machine)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    args = parser.parse_args(argv)
    if args.repeat is not None and args.repeat <= 0:
        parser.error("--repeat must be positive")
    global clock
    clock = time.process_time if args.cpu_time else time.perf_counter
    domains = [d.strip() for d in args.domains.split(",") if d.strip()]
    if not domains or any(d not in DOMAINS for d in domains):
        parser.error(f"--domains must be a subset of {','.join(DOMAINS)}")

    rows = []
    for n in args.sizes:
        repeat = args.repeat if args.repeat is not None else (3 if n <= 100_000 else 1)
        for k in args.keys:
            for domain in domains:
                rows.append(measure(domain, n, k, args.seed, repeat, args.cold_key_groups))
                if not args.json:
                    print(f"  measured {domain} N={n} K={k} (best of {repeat})", file=sys.stderr, flush=True)

    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
    else:
        print(format_table(rows))
        print()
        print("\n".join(target_lines(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

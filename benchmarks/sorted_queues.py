"""Timer queues: ``streamproof.impl.timers.heap_priority_queue_set`` (a heap with lazy deletion) against a ``SortedList`` queue.

Should streamproof use ``sortedcontainers`` for its timer queues? For each N, the same seeded
timers (K keys, 128 key groups, timestamps in [0, N)) go through both queue sets, and every
operation that the timer service performs on its queues is timed on both sides in the same run:

  * ``register``: add N timers (set semantics: duplicates are one timer);
  * ``delete half``: remove a random half of them;
  * ``fire all``: peek and poll every timer in order (what ``advance_watermark`` and
    ``on_processing_time`` do), right after registering;
  * ``fire after deletes``: the same after ``delete half`` (the heap skips stale entries);
  * ``horizon``: the largest pending timestamp (the end-of-input flush asks it once);
  * ``in-order scan``: every pending timer in firing order, without removing any (what a
    snapshot writer would need to write timers sorted; the current writer does not sort);
  * end to end through ``InternalTimerService`` with its two queues swapped for the candidate's:
    ``e2e event`` registers N event-time timers and advances the watermark past them all;
    ``e2e flush`` registers N processing-time timers with ``TRIGGER`` and runs the end-of-input
    flush (``flush_processing_time_timers``) that fires them in timestamp order.

Both sides must produce the same timers in the same order, equal timestamps included (the order
the Flink vectors and the model's tie check see): the benchmark raises otherwise. The table gives
the best time of R runs per side (runs alternate) and ``ratio`` = SortedList / heap; below 1 the
SortedList queue is faster. Nothing is asserted about time.

    python3 -m benchmarks.sorted_queues [--sizes 100,10000,100000] [--keys 1000] [--repeat R]
                                        [--seed S] [--json]
"""

from __future__ import annotations

import argparse
import gc
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

try:
    from sortedcontainers import SortedList
except ImportError:  # not a dependency of the project any more: needed for this benchmark only
    SortedList = None

from benchmarks.common import format_table as common_format_table, sizes_parser  # noqa: E402
from streamproof.impl.state.key_groups import KeyGroupRange, assign_to_key_group  # noqa: E402
from streamproof.impl.timers.heap_priority_queue_set import KeyGroupedPriorityQueueSet, KeyGroupOutOfRangeError  # noqa: E402
from streamproof.impl.timers.termination import TimerTerminationAction  # noqa: E402
from streamproof.impl.timers.internal_time_service_manager import InternalTimeServiceManager
from streamproof.impl.timers.internal_timer_service import KeyContext
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService

MAX_PARALLELISM = 128
NAMESPACE = "w"


# -- the candidate -----------------------------------------------------------------------------
class SortedListQueueSet:
    """``KeyGroupedPriorityQueueSet``'s interface and order over one ``SortedList``.

    Entries are ``(timestamp, sequence, element)``: equal timestamps leave in insertion order, as
    in the heap. A removal deletes the entry at once (no stale entries, no compaction).
    """

    def __init__(self, key_group_range: KeyGroupRange, key_group_of: Callable[[tuple], int]):
        self._range = key_group_range
        self._first = key_group_range.start_key_group
        self._key_group_of = key_group_of
        self._maps: list[dict] = [{} for _ in range(key_group_range.get_number_of_key_groups())]
        self._sorted = SortedList()
        self._seq = count()

    mutation_router = None  # no copy-on-write snapshot in this benchmark

    def _local_index(self, key_group: int) -> int:
        index = key_group - self._first
        if index < 0 or index >= len(self._maps):
            raise KeyGroupOutOfRangeError(key_group, self._range)
        return index

    def key_group_of(self, element) -> int:
        return self._key_group_of(element)

    def get_subset_for_key_group(self, key_group: int):
        return self._maps[self._local_index(key_group)].keys()

    def add(self, element, key_group: int | None = None) -> bool:
        if key_group is None:
            key_group = self._key_group_of(element)
        subset = self._maps[self._local_index(key_group)]
        if element in subset:
            return False
        entry = subset[element] = (element[0], next(self._seq), element)
        self._sorted.add(entry)
        return self._sorted[0] is entry

    def remove(self, element, key_group: int | None = None) -> bool:
        if key_group is None:
            key_group = self._key_group_of(element)
        entry = self._maps[self._local_index(key_group)].pop(element, None)
        if entry is None:
            return False
        self._sorted.remove(entry)
        return True

    def contains(self, element, key_group: int | None = None) -> bool:
        if key_group is None:
            key_group = self._key_group_of(element)
        return element in self._maps[self._local_index(key_group)]

    def peek(self):
        return self._sorted[0][2] if self._sorted else None

    def poll(self, key_group: int | None = None):
        if not self._sorted:
            return None
        element = self._sorted.pop(0)[2]
        index = self._local_index(self._key_group_of(element) if key_group is None else key_group)
        self._maps[index].pop(element, None)
        return element

    def size(self) -> int:
        return len(self._sorted)

    __len__ = size

    def __iter__(self):
        for subset in self._maps:
            yield from subset

    # what the candidate adds: order without polling
    def max_priority(self):
        return self._sorted[-1][0] if self._sorted else None

    def in_order(self) -> list:
        return [entry[2] for entry in self._sorted]


# -- the operations, each on both sides ----------------------------------------------------------
@dataclass(frozen=True)
class Workload:
    timers: list  # (timestamp, key, namespace), in registration order (duplicates possible)
    deletes: list  # a random half of the timers
    max_timestamp: int


def make_workload(n: int, k: int, seed: int) -> Workload:
    rng = random.Random(seed)
    names = [f"key-{i}" for i in range(k)]
    timers = [(rng.randrange(n), names[rng.randrange(k)], NAMESPACE) for _ in range(n)]
    return Workload(timers, rng.sample(timers, n // 2), max(t[0] for t in timers))


def key_group_of(timer: tuple) -> int:
    return assign_to_key_group(timer[1], MAX_PARALLELISM)


def new_queue(side: str):
    cls = KeyGroupedPriorityQueueSet if side == "heap" else SortedListQueueSet
    return cls(KeyGroupRange(0, MAX_PARALLELISM - 1), key_group_of)


def filled(side: str, w: Workload):
    queue = new_queue(side)
    for timer in w.timers:
        queue.add(timer, key_group_of(timer))
    return queue


def drain(queue) -> list:
    out = []
    while (timer := queue.peek()) is not None:
        queue.poll(key_group_of(timer))
        out.append(timer)
    return out


# Each operation: (side, workload) -> (untimed setup, timed run returning a result to compare)
def op_register(side, w):
    queue = new_queue(side)

    def run():
        for timer in w.timers:
            queue.add(timer, key_group_of(timer))
        return queue.size()
    return run


def op_delete_half(side, w):
    queue = filled(side, w)

    def run():
        for timer in w.deletes:
            queue.remove(timer, key_group_of(timer))
        return queue.size()
    return run


def op_fire_all(side, w):
    queue = filled(side, w)
    return lambda: drain(queue)


def op_fire_after_deletes(side, w):
    queue = filled(side, w)
    for timer in w.deletes:
        queue.remove(timer, key_group_of(timer))
    return lambda: drain(queue)


def op_horizon(side, w):
    queue = filled(side, w)
    if side == "heap":  # what InternalTimerService._flush_horizon does today
        return lambda: max((t[0] for t in queue), default=None)
    return queue.max_priority


def op_in_order_scan(side, w):
    queue = filled(side, w)
    if side == "heap":  # the heap has no order to read: sort the live entries
        def run():
            live = [e for e in queue._heap if queue._maps[e[3]].get(e[2]) == e[1]]
            live.sort()
            return [e[2] for e in live]
        return run
    return queue.in_order


class Recorder:
    """The triggerable of the end-to-end rows: records every fired timer in order."""

    def __init__(self) -> None:
        self.fired: list = []

    def on_event_time(self, timer) -> None:
        self.fired.append(timer)

    on_processing_time = on_event_time


def service_for(side: str, n: int):
    context = KeyContext(MAX_PARALLELISM)
    manager = InternalTimeServiceManager(context, KeyGroupRange(0, MAX_PARALLELISM - 1),
                                         ManualProcessingTimeService(), firing_budget=n + 1)
    recorder = Recorder()
    service = manager.get_internal_timer_service("bench", recorder)
    if side == "sorted":  # the same service over the candidate's queues
        service.event_time_timers_queue = new_queue(side)
        service.processing_time_timers_queue = new_queue(side)
    return context, service, recorder


def op_e2e_event(side, w):
    context, service, recorder = service_for(side, len(w.timers))

    def run():
        for ts, key, namespace in w.timers:
            context.set_current_key(key)
            service.register_event_time_timer(namespace, ts)
        service.advance_watermark(w.max_timestamp)
        return recorder.fired
    return run


def op_e2e_flush(side, w):
    context, service, recorder = service_for(side, len(w.timers))
    trigger = TimerTerminationAction.TRIGGER

    def run():
        for ts, key, namespace in w.timers:
            context.set_current_key(key)
            service.register_processing_time_timer(namespace, ts, trigger)
        service.flush_processing_time_timers()
        return recorder.fired
    return run


OPERATIONS: dict[str, Callable] = {
    "register": op_register,
    "delete half": op_delete_half,
    "fire all": op_fire_all,
    "fire after deletes": op_fire_after_deletes,
    "horizon": op_horizon,
    "in-order scan": op_in_order_scan,
    "e2e event": op_e2e_event,
    "e2e flush": op_e2e_flush,
}
SIDES = ("heap", "sorted")


# -- timing ------------------------------------------------------------------------------------
def time_once(operation: Callable, side: str, w: Workload) -> tuple[float, object]:
    run = operation(side, w)  # setup is not timed
    gc.collect()
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        started = time.perf_counter()
        result = run()
        elapsed = time.perf_counter() - started
    finally:
        if gc_was_enabled:
            gc.enable()
    return elapsed, result


@dataclass
class Row:
    operation: str
    n: int
    k: int
    repeat: int
    heap_s: float
    sorted_s: float
    ratio: float


def measure(name: str, n: int, k: int, seed: int, repeat: int) -> Row:
    w = make_workload(n, k, seed)
    best = {side: float("inf") for side in SIDES}
    results = {}
    for _ in range(repeat):  # alternate the sides: a slow spell of the machine hits both alike
        for side in SIDES:
            elapsed, result = time_once(OPERATIONS[name], side, w)
            best[side] = min(best[side], elapsed)
            if results.setdefault(side, result) != result:
                raise AssertionError(f"{name} N={n}: the {side} side is not deterministic")
    if results["heap"] != results["sorted"]:
        raise AssertionError(f"{name} N={n}: the SortedList queue disagrees with impl.queues "
                             f"(order of equal timestamps or set semantics)")
    return Row(name, n, k, repeat, best["heap"], best["sorted"], best["sorted"] / best["heap"])


def default_repeat(n: int) -> int:
    return 50 if n <= 1_000 else 5 if n <= 10_000 else 3


# -- output ------------------------------------------------------------------------------------
COLUMNS = [
    ("operation", "operation", "{}"),
    ("N", "n", "{}"),
    ("heap s", "heap_s", "{:.6f}"),
    ("SortedList s", "sorted_s", "{:.6f}"),
    ("ratio", "ratio", "{:.2f}x"),
]


def format_table(rows: list[Row]) -> str:
    return common_format_table(rows, COLUMNS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m benchmarks.sorted_queues",
        description="Timer queue operations: impl.queues (heap) vs a sortedcontainers.SortedList queue.",
    )
    parser.add_argument("--sizes", type=sizes_parser(2), default=[100, 10_000, 100_000],
                        help="comma-separated N values (default: 100,10000,100000)")
    parser.add_argument("--keys", type=int, default=1000, help="number of distinct keys K (default: 1000)")
    parser.add_argument("--repeat", type=int, default=None,
                        help="runs per side, best taken (default: 50 for N <= 1000, 5 for N <= 10^4, else 3)")
    parser.add_argument("--seed", type=int, default=0, help="workload seed (default: 0)")
    parser.add_argument("--operations", default=",".join(OPERATIONS),
                        help=f"comma-separated subset of: {', '.join(OPERATIONS)}")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    args = parser.parse_args(argv)
    if SortedList is None:
        print("this benchmark needs sortedcontainers: pip install 'streamproof[bench]' (or sortedcontainers)", file=sys.stderr)
        return 2
    if args.keys <= 0:
        parser.error("--keys must be positive")
    if args.repeat is not None and args.repeat <= 0:
        parser.error("--repeat must be positive")
    operations = [o.strip() for o in args.operations.split(",") if o.strip()]
    if not operations or any(o not in OPERATIONS for o in operations):
        parser.error(f"--operations must be a subset of: {', '.join(OPERATIONS)}")

    rows = []
    for name in operations:
        for n in args.sizes:
            repeat = args.repeat or default_repeat(n)
            rows.append(measure(name, n, args.keys, args.seed, repeat))
            if not args.json:
                print(f"  measured {name} N={n} (best of {repeat})", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
    else:
        print(format_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""FLIP-331's end-of-stream workloads: the streaming window operator against the sorted fast path.

Two workloads, scaled down from the FLIP's benchmark (8*10^7 records there):

- ``co_group``: two inputs of N records each, ``(key = i, value = i)``, co-grouped over
  ``GlobalWindows.create_with_end_of_stream_trigger()``; the co-group function emits 1 per key.
- ``aggregate``: N records over N/100 keys (``key = i % (N/100)``, ``value = i``), summed over the
  same window.

*streaming*: what Flink runs without the optimisation: each record goes through
``KeyedProcessOperator(WindowOperator(...))`` (co_group: tagged by ``tag_left``/``tag_right`` and
unioned, as DataStream.coGroup does), then the watermark advances to MAX_WATERMARK and every key's
timer fires. *sorted*: ``sorted_co_group`` / ``sorted_window_aggregate`` (sort by key, one pass).
Both must give the same output multiset or the benchmark raises. Records/s = input records / best
wall seconds (setup untimed, ``gc`` off while timed); ratio = sorted / streaming records/s.
It asserts nothing about time.

    python -m benchmarks.eos [--records 200000] [--repeats 3] [--workloads co_group,aggregate]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass
from typing import Callable

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import format_table  # noqa: E402
from streamproof.impl.state.key_groups import KeyGroupRange  # noqa: E402
from streamproof.impl.operators.keyed_process_operator import KeyedProcessOperator, StreamRecord  # noqa: E402
from streamproof.impl.timers.internal_timer_service import MAX_WATERMARK
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService
from streamproof.impl.operators.end_of_stream import (  # noqa: E402
    CoGroupWindowFunction, sorted_co_group, sorted_window_aggregate, tag_left, tag_right,
)
from streamproof.impl.operators.windows import GlobalWindows, SumAggregate, WindowOperator  # noqa: E402

MAX_PARALLELISM = 128
TARGET_RATIO = 5.0
FLINK_RATIOS = {"co_group": 22.81, "aggregate": 10.63}  # FLIP-331's optimized / streaming throughput
WORKLOADS = ("co_group", "aggregate")


def emit_one(key, lefts, rights, out) -> None:
    """FLIP-331's CustomCoGroupFunction: one output per key."""
    out.collect(1)


def run_streaming(window_operator: WindowOperator, records: list[StreamRecord]) -> list:
    """The records through a fresh window operator, then the end of input; returns its outputs."""
    outputs: list = []
    op = KeyedProcessOperator(window_operator, MAX_PARALLELISM, KeyGroupRange(0, MAX_PARALLELISM - 1),
                              ManualProcessingTimeService(), lambda value, ts: outputs.append(value),
                              firing_budget=len(records) + 1)
    op.open()
    process = op.process_element
    for record in records:
        process(record)
    op.time_service_manager.advance_watermark(MAX_WATERMARK)
    return outputs


def co_group_workload(n: int) -> tuple[int, Callable[[], list], Callable[[], list]]:
    lefts = [(i, float(i), i) for i in range(1, n + 1)]
    rights = [(i, float(i), i) for i in range(1, n + 1)]
    left_records = [StreamRecord(k, v, ts) for k, v, ts in lefts]
    right_records = [StreamRecord(k, v, ts) for k, v, ts in rights]

    def streaming() -> list:
        union = []  # the tagging map is part of the streaming co-group (Flink's TaggedUnion)
        for left, right in zip(left_records, right_records):
            union += [StreamRecord(k, v, left.timestamp) for k, v in tag_left(left.key, left.value)]
            union += [StreamRecord(k, v, right.timestamp) for k, v in tag_right(right.key, right.value)]
        return run_streaming(WindowOperator(GlobalWindows.create_with_end_of_stream_trigger(),
                                            CoGroupWindowFunction(emit_one), "process"), union)

    return 2 * n, streaming, lambda: sorted_co_group(lefts, rights, emit_one)


def aggregate_workload(n: int) -> tuple[int, Callable[[], list], Callable[[], list]]:
    keys = max(1, n // 100)
    records = [(i % keys, float(i), i) for i in range(n)]
    stream = [StreamRecord(k, v, ts) for k, v, ts in records]

    def streaming() -> list:
        return run_streaming(WindowOperator(GlobalWindows.create_with_end_of_stream_trigger(), SumAggregate(),
                                            "aggregate"), stream)

    return n, streaming, lambda: sorted_window_aggregate(records, SumAggregate())


@dataclass
class Row:
    workload: str
    records: int
    streaming_s: float
    sorted_s: float
    streaming_rps: float = 0.0
    sorted_rps: float = 0.0
    ratio: float = 0.0
    flink: str = "-"
    outputs: int = 0


def timed(run: Callable[[], list]) -> tuple[float, list]:
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        started = time.perf_counter()
        result = run()
        return time.perf_counter() - started, result
    finally:
        if enabled:
            gc.enable()


def measure(workload: str, n: int, repeats: int) -> Row:
    records, streaming, sorted_path = {"co_group": co_group_workload, "aggregate": aggregate_workload}[workload](n)
    best = {"streaming": float("inf"), "sorted": float("inf")}
    expected = None
    for _ in range(repeats):  # the sides alternate run by run
        for side, run in (("streaming", streaming), ("sorted", sorted_path)):
            seconds, output = timed(run)
            best[side] = min(best[side], seconds)
            if expected is None:
                expected = Counter(output)
            elif Counter(output) != expected:
                raise RuntimeError(f"{workload}: the {side} path's output differs from the streaming path's")
    row = Row(workload, records, best["streaming"], best["sorted"], outputs=sum(expected.values()))
    row.streaming_rps, row.sorted_rps = records / row.streaming_s, records / row.sorted_s
    row.ratio = row.sorted_rps / row.streaming_rps
    row.flink = f"{FLINK_RATIOS[workload]:.1f}x"
    return row


COLUMNS = [
    ("workload", "workload", "{}"),
    ("input records", "records", "{:,}"),
    ("streaming rec/s", "streaming_rps", "{:,.0f}"),
    ("sorted rec/s", "sorted_rps", "{:,.0f}"),
    ("ratio", "ratio", "{:.1f}x"),
    ("Flink (FLIP-331)", "flink", "{}"),
    ("outputs", "outputs", "{:,}"),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.eos", description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000,
                        help="N: records per input for co_group (2 inputs), records for aggregate (default 200000)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per side, best taken (default 3)")
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated subset of "
                        + ", ".join(WORKLOADS))
    args = parser.parse_args(argv)
    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    if min(args.records, args.repeats) < 1 or not workloads or set(workloads) - set(WORKLOADS):
        parser.error(f"--records and --repeats must be positive; --workloads a subset of {', '.join(WORKLOADS)}")
    rows = [measure(w, args.records, args.repeats) for w in workloads]
    print(format_table(rows, COLUMNS))
    print(f"\nN = {args.records}, best of {args.repeats}; ratio = sorted / streaming records per second; "
          "both paths gave the same output multiset.")
    for row in rows:
        verdict = "met" if row.ratio >= TARGET_RATIO else "NOT met"
        print(f"{row.workload}: target ratio >= {TARGET_RATIO:g}x {verdict} ({row.ratio:.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

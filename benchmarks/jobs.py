"""Job simulator throughput: job graphs of 1, 2 and 4 keyed stages against the one-stage runtime.

Every row runs the same seeded input and seed (records per second = input records / wall seconds
of one ``simulate*`` call, best of R). The baseline is ``simulate(JobSpec(...window_sum...))``,
the one-stage runtime; ``graph 1x1`` is the same job on the graph runtime (``one_stage_graph``).
Each stage is a keyed ``window_sum``; a chain of 3 adds two chained stateless maps
(``identity``, ``double``). Every run must commit output, and the 1x1 graph the baseline's
multiset (the benchmark raises otherwise). It asserts nothing about time.

    python -m benchmarks.jobs [--records 400] [--repeats 3] [--parallelism 2] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import format_table  # noqa: E402
from streamproof.impl.graph.job_graph import Edge, JobGraph, OperatorNode, one_stage_graph  # noqa: E402
from streamproof.impl.graph.job import GraphJobSpec, JobSpec  # noqa: E402
from streamproof.impl.operators.keyed_process_operator import StreamRecord  # noqa: E402
from streamproof.impl.graph.sim import simulate  # noqa: E402
from streamproof.impl.tasks.stream_task import TaskConfig, Watermark  # noqa: E402
from streamproof.properties.job.functions import FUNCTIONS, STATELESS_FUNCTIONS  # noqa: E402

SOURCES = 2
KEYS = 50
STAGES = (1, 2, 4)
CHAINS = (1, 3)
CONFIG = TaskConfig(interruptible_timers=True)


def make_sources(records: int, seed: int) -> list[list]:
    """Per source, ``records`` records over KEYS keys with non-decreasing timestamps and a
    watermark (one below the last timestamp) every 50 records: no record is ever late."""
    rng = random.Random(seed)
    sources = []
    for _ in range(SOURCES):
        ts, elements = 0, []
        for i in range(records):
            ts += rng.randint(0, 2)
            elements.append(StreamRecord(f"k{rng.randrange(KEYS)}", rng.randint(1, 9), ts))
            if i % 50 == 49:
                elements.append(Watermark(ts - 1))
        sources.append(elements)
    return sources


def stages_graph(stages: int, chain: int, parallelism: int) -> JobGraph:
    """source -keyed-> [window_sum (-> identity -> double)] -keyed-> ... -> sink (forward)."""
    ops, edges, previous = [OperatorNode("source", "source", SOURCES)], [], "source"
    for s in range(stages):
        head = f"window{s}"
        ops.append(OperatorNode(head, "keyed_process", parallelism, "window_sum"))
        edges.append(Edge(previous, head, "keyed"))
        previous = head
        for name in ("identity", "double")[:chain - 1]:
            ops.append(OperatorNode(f"{name}{s}", "map", parallelism, name))
            edges.append(Edge(previous, f"{name}{s}", "forward"))
            previous = f"{name}{s}"
    ops.append(OperatorNode("sink", "sink", parallelism))
    edges.append(Edge(previous, "sink", "forward"))
    return JobGraph(ops, edges)


@dataclass
class Row:
    shape: str
    stages: int
    chain: int
    seconds: float
    records_per_s: float = 0.0
    ratio: float = 0.0
    vs_one: str = "-"
    per_extra: str = "-"
    committed: int = 0


def best_of(repeats: int, run) -> tuple[float, Counter]:
    """The fastest wall time of ``repeats`` runs and the committed output (the same every run)."""
    best, committed = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - started)
        if not result.committed or (committed is not None and Counter(result.committed) != committed):
            raise RuntimeError("a run committed nothing, or not the same output as the run before")
        committed = Counter(result.committed)
    return best, committed


def measure(records: int, repeats: int, parallelism: int, seed: int) -> list[Row]:
    sources = make_sources(records, seed)
    max_steps = max(200_000, 50 * records * SOURCES * parallelism)  # only a guard against livelock
    functions = {**FUNCTIONS, **STATELESS_FUNCTIONS}

    def graph_run(graph: JobGraph):
        spec = GraphJobSpec(graph, sources, functions, config=CONFIG)
        return lambda: simulate(spec, seed, max_steps=max_steps)

    job = JobSpec(sources, FUNCTIONS["window_sum"], parallelism=parallelism, config=CONFIG)
    seconds, baseline = best_of(repeats, lambda: simulate(job, seed, max_steps=max_steps))
    rows = [Row("one-stage runtime", 1, 1, seconds, committed=sum(baseline.values()))]
    for chain in CHAINS:
        for stages in STAGES:
            plain = (stages, chain) == (1, 1)  # stages_graph(1, 1) is this shape: the graph runtime's own cost
            graph = one_stage_graph("window_sum", SOURCES, parallelism) if plain else stages_graph(stages, chain, parallelism)
            seconds, committed = best_of(repeats, graph_run(graph))
            if plain and committed != baseline:
                raise RuntimeError("one_stage_graph does not commit the one-stage runtime's multiset")
            shape = f"graph {stages}x{chain}" + (" (one_stage_graph)" if plain else "")
            rows.append(Row(shape, stages, chain, seconds, committed=sum(committed.values())))
    for row in rows:
        row.records_per_s = records * SOURCES / row.seconds
        row.ratio = row.records_per_s / rows[0].records_per_s
    for row in rows[1:]:
        one = next(r for r in rows[1:] if r.stages == 1 and r.chain == row.chain)
        row.vs_one = f"{row.seconds / one.seconds:.2f}x"
        if row.stages > 1:
            row.per_extra = f"{(row.seconds / one.seconds - 1) / (row.stages - 1):.2f}x"
    return rows


COLUMNS = [
    ("shape (stages x chain)", "shape", "{}"),
    ("records/s", "records_per_s", "{:,.0f}"),
    ("vs baseline", "ratio", "{:.2f}x"),
    ("time vs 1 stage", "vs_one", "{}"),
    ("cost per extra stage", "per_extra", "{}"),
    ("committed", "committed", "{}"),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.jobs", description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=400, help="records per source (2 sources; default 400)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per row, best taken (default 3)")
    parser.add_argument("--parallelism", type=int, default=2, help="parallelism of every stage (default 2)")
    parser.add_argument("--seed", type=int, default=0, help="input and schedule seed (default 0)")
    args = parser.parse_args(argv)
    if min(args.records, args.repeats, args.parallelism) < 1:
        parser.error("--records, --repeats and --parallelism must be positive")
    rows = measure(args.records, args.repeats, args.parallelism, args.seed)
    print(format_table(rows, COLUMNS))
    print(f"\n{args.records * SOURCES} input records, parallelism {args.parallelism}, best of {args.repeats}; "
          "time vs 1 stage: time per record / that of 1 stage with the same chain;\n"
          "cost per extra stage: (time vs 1 stage - 1) / (stages - 1); 1.00x = each stage costs as much as the first")
    return 0


if __name__ == "__main__":
    sys.exit(main())

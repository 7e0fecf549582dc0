"""Campaign throughput: Spark against a ``multiprocessing.Pool`` baseline, and scaling.

One property, N seeds (default 10^4 seeds of ``timers.differential`` with 1 example each), run
in the same process, one after the other:

* *pool*: ``multiprocessing.Pool(2)`` maps the same per-seed function
  (``streamproof.spark_harness.executor.run_seed``) over the same chunks and writes the rows to Parquet with
  pyarrow: the least machinery doing the same work on this machine;
* *Spark local[2]*: ``streamproof.spark_harness.campaign.run_campaign`` on an embedded session (waves of
  ``mapInArrow`` written as partitioned Parquet, read back and verified);
* *standalone, 1 executor* and *2 executors*: the same campaign on a real standalone cluster
  started here (2 workers x 1 core on 127.0.0.1), with ``spark.cores.max`` 1 and 2.

Startup (session start, shipping the code and warming the Python workers; pool creation) is
timed apart from the campaign. Every Spark run must give the pool's rows seed for seed
(deterministic columns), or the benchmark fails. Goals: Spark local[2] throughput >= 0.9 x the
pool's; 2 executors ~2 x 1.

``--repeats N`` alternates the pool and Spark local[2] N times (one pool, one Spark session; run i
on the seeds i*N..(i+1)*N-1, the same for both), so that each ratio compares two runs next to
each other on a machine whose load changes: the goal is judged on the median pair. ``--one-core``
adds ``Pool(1)`` and ``Spark local[1]`` (1 -> 2 cores without a cluster).

    python -m benchmarks.campaign [--seeds 10000] [--property timers.differential]
                                  [--examples 1] [--repeats 1] [--one-core] [--no-standalone]
                                  [--connect] [--json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import time

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from streamproof.spark_harness import campaign as camp  # noqa: E402
from streamproof.spark_harness import executor, session, ship  # noqa: E402
from streamproof.spark_harness.spec import DETERMINISTIC_COLUMNS  # noqa: E402

GOAL = 0.9


def _pool_chunk(args):
    config, lo, hi = args
    return executor.run_seeds_locally(config, range(lo, hi))


def start_pool(workers: int):
    """(the pool, seconds to create it): forked before any JVM starts in this process."""
    started = time.perf_counter()
    pool = multiprocessing.get_context("fork").Pool(workers)
    return pool, time.perf_counter() - started


def run_pool(spec, workers: int, out: str, pool=None, startup: float = 0.0) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    prop = spec.properties[0]
    config = spec.executor_config(prop)
    chunks = [(config, *spec.chunk_range(prop, c)) for c in range(spec.chunks(prop))]
    own = pool is None
    if own:
        pool, startup = start_pool(workers)
    try:
        started = time.perf_counter()
        rows = [row for part in pool.imap_unordered(_pool_chunk, chunks, chunksize=1) for row in part]
        pq.write_table(pa.Table.from_batches([executor.rows_to_batch(rows)]), os.path.join(out, "pool-results.parquet"))
        seconds = time.perf_counter() - started
    finally:
        if own:
            pool.close()
            pool.join()
    result = {"what": f"multiprocessing.Pool({workers})", "startup": startup, "seconds": seconds,
              "seeds": len(rows), "rows": rows}
    _note(result)
    return result


def _note(r: dict) -> None:
    print(f"  done: {r['what']}: startup {r['startup']:.1f} s, campaign {r['seconds']:.1f} s, {r['seeds']} seeds",
          file=sys.stderr, flush=True)


def run_spark(label: str, master: str, spec, out: str, conf: dict | None = None, api: str = "classic",
              cores: int = 2) -> dict:
    return run_spark_many(label, master, [spec], out, conf, api, cores)[0]


def run_spark_many(label: str, master: str, specs: list, out: str, conf: dict | None = None, api: str = "classic",
                   cores: int = 2, before=None) -> list[dict]:
    """One session (startup timed once), one campaign per spec; ``before(i)`` runs before the i-th."""
    started = time.perf_counter()
    spark = session.start_session(master, api=api, app_name=f"benchmark {label}", conf=conf,
                                  log_path=os.path.join(out, "_logs", f"{specs[0].name}.log"))
    ship.ship(spark)
    camp.warm_up(spark, cores)
    startup = time.perf_counter() - started
    results = []
    try:
        for i, spec in enumerate(specs):
            if before is not None:
                before(i)
            run = camp.new_run(master, api)
            result = camp.run_campaign(spark, spec, out, run, resume=False, cores=cores)
            if not result.verified:
                raise SystemExit(f"{label}: results not exactly once: {result.verification}")
            cols = list(DETERMINISTIC_COLUMNS)
            rows = [r.asDict() for r in camp.read_results(spark, out, spec.name).select(*cols).collect()]
            results.append({"what": label, "startup": startup, "seconds": run.seconds, "seeds": run.seeds_run,
                            "rows": rows, "waves": run.waves})
            _note(results[-1])
    finally:
        session.stop_session(spark)
    return results


def median(values: list[float]) -> float:
    values = sorted(values)
    n = len(values)
    return values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2


def typical(runs: list[dict]) -> dict:
    """One row for repeated runs: the median campaign time, every run's rows checked apart."""
    return dict(runs[0], seconds=median([r["seconds"] for r in runs]), runs=len(runs))


def same_rows(a: list[dict], b: list[dict]) -> bool:
    key = lambda r: (r["property"], r["seed"])  # noqa: E731
    strip = lambda rows: {key(r): tuple(r[c] for c in DETERMINISTIC_COLUMNS) for r in rows}  # noqa: E731
    return strip(a) == strip(b) and len(a) == len(b)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10_000)
    ap.add_argument("--property", default="timers.differential")
    ap.add_argument("--examples", type=int, default=1)
    ap.add_argument("--step-count", type=int, default=40)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=1, help="alternate pool and Spark local runs N times")
    ap.add_argument("--one-core", action="store_true", help="add Pool(1) and Spark local[1] rows")
    ap.add_argument("--no-standalone", action="store_true", help="skip the standalone cluster rows")
    ap.add_argument("--connect", action="store_true", help="add a local Spark Connect row")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    base = tempfile.mkdtemp(prefix="streamproof-bench-")
    out = os.path.join(base, "results")  # Spark's results directory: nothing else in it
    os.makedirs(out)
    cost = camp.calibrate(args.property, args.examples, args.step_count, 0)
    chunk = camp.chunk_size(cost, args.seeds, args.workers)

    def spec(name, i=0):
        return camp.plan(name, [args.property], i * args.seeds, (i + 1) * args.seeds, args.examples,
                         args.step_count, 600.0, None, "bench", args.workers, chunk_seeds=chunk)

    repeats = max(1, args.repeats)
    results, pairs = [], []
    try:
        workers, pool_startup = start_pool(args.workers)  # before the JVM: forking beside its threads is unsafe
        one_pool = start_pool(1) if args.one_core else None
        pool_runs = []
        try:
            def pool_run(i):
                pool_runs.append(run_pool(spec(f"pool{i}", i), args.workers, base, workers, pool_startup))

            local_runs = run_spark_many(f"Spark local[{args.workers}] (classic)", f"local[{args.workers}]",
                                        [spec(f"local{i}", i) for i in range(repeats)], out, cores=args.workers,
                                        before=pool_run)
            pool_1 = run_pool(spec("pool-1"), 1, base, *one_pool) if one_pool else None
        finally:
            for p in filter(None, [workers, one_pool and one_pool[0]]):
                p.close()
                p.join()
        for p, s in zip(pool_runs, local_runs):
            s["same_as_pool"] = same_rows(p["rows"], s["rows"])
            pairs.append(p["seconds"] / s["seconds"])
        pool, local = typical(pool_runs), typical(local_runs)
        local["same_as_pool"] = all(s["same_as_pool"] for s in local_runs)
        results += [pool, local]
        if pool_1 is not None:
            results.append(pool_1)
            one_spark = run_spark("Spark local[1] (classic)", "local[1]", spec("local-1"), out, cores=1)
            one_spark["same_as_pool"] = same_rows(pool_runs[0]["rows"], one_spark["rows"])
            results.append(one_spark)
        if args.connect:
            results.append(run_spark(f"Spark local[{args.workers}] (Connect)", f"local[{args.workers}]",
                                     spec("connect"), out, api="connect", cores=args.workers))
        if not args.no_standalone:
            from streamproof.spark_harness.cluster import LocalStandalone

            cluster = LocalStandalone(workers=2, cores=1, work_dir=os.path.join(base, "cluster"))
            started = time.perf_counter()
            cluster.start()
            cluster_startup = time.perf_counter() - started
            try:
                for n in (1, 2):
                    r = run_spark(f"standalone, {n} executor{'s' if n > 1 else ''} x 1 core", cluster.master_url,
                                  spec(f"standalone{n}"), out,
                                  conf={"spark.cores.max": str(n), "spark.executor.cores": "1",
                                        "spark.executor.memory": "1g"}, cores=n)
                    r["cluster_startup"] = cluster_startup
                    results.append(r)
            finally:
                cluster.stop()
        for r in results[1:]:
            if "same_as_pool" not in r:
                r["same_as_pool"] = same_rows(pool_runs[0]["rows"], r["rows"])
    finally:
        shutil.rmtree(base, ignore_errors=True)

    base = pool["seeds"] / pool["seconds"]
    ratio = round(median(pairs), 2)  # the median pair: pool and Spark run next to each other
    table = []
    for r in results:
        rate = r["seeds"] / r["seconds"]
        table.append({"what": r["what"], "runs": r.get("runs", 1), "startup_s": round(r["startup"], 1),
                      "campaign_s": round(r["seconds"], 1), "seeds": r["seeds"], "seeds_per_s": round(rate, 1),
                      "vs_pool": ratio if r is local else round(rate / base, 2),
                      "same_rows_as_pool": r.get("same_as_pool", True)})
    one = next((r for r in results if r["what"].startswith("standalone, 1")), None)
    two = next((r for r in results if r["what"].startswith("standalone, 2")), None)
    scaling = (one["seconds"] / two["seconds"]) if one and two else None
    by_what = {r["what"]: r for r in results}
    cores_scaling = {}
    for what, one_core, two_cores in (("pool", "multiprocessing.Pool(1)", pool["what"]),
                                      ("spark_local", "Spark local[1] (classic)", local["what"])):
        if one_core in by_what:
            cores_scaling[what] = round(by_what[one_core]["seconds"] / by_what[two_cores]["seconds"], 2)
    summary = {"load_average": [round(x, 2) for x in os.getloadavg()], "property": args.property, "seeds": args.seeds, "examples": args.examples,
               "seconds_per_seed_estimate": round(cost, 4), "chunk_seeds": chunk, "rows": table,
               "spark_local_vs_pool": ratio, "pairs": [round(x, 2) for x in pairs], "goal": GOAL,
               "goal_met": ratio >= GOAL, "scaling_1_to_2_cores": cores_scaling or None,
               "scaling_2_vs_1_executors": round(scaling, 2) if scaling else None,
               "cluster_startup_s": round(one["cluster_startup"], 1) if one else None}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
        print(f"{args.seeds} seeds of {args.property}, {args.examples} example(s) x {args.step_count} steps per seed "
              f"(~{cost * 1000:.1f} ms/seed), {chunk} seeds per chunk")
        head = ("what", "runs", "startup s", "campaign s", "seeds/s", "vs pool", "same rows")
        rows = [(t["what"], t["runs"], t["startup_s"], t["campaign_s"], t["seeds_per_s"], f"{t['vs_pool']:.2f}x",
                 "yes" if t["same_rows_as_pool"] else "NO") for t in table]
        widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
        for line in [head, *rows]:
            print("  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(line, widths))))
        print(f"Spark local[{args.workers}] vs pool: {ratio:.2f}x (goal >= {GOAL}x: {'met' if ratio >= GOAL else 'NOT met'})"
              + (f"; pairs {', '.join(f'{x:.2f}' for x in pairs)} (min {min(pairs):.2f}x)" if len(pairs) > 1 else ""))
        if cores_scaling:
            print("1 -> 2 cores: " + ", ".join(f"{k.replace('_', ' ')} {v:.2f}x" for k, v in cores_scaling.items()))
        if scaling:
            print(f"standalone scaling, 2 vs 1 executors: {scaling:.2f}x (cluster start {one['cluster_startup']:.1f} s)")
    return 0 if all(t["same_rows_as_pool"] for t in table) else 1


if __name__ == "__main__":
    sys.exit(main())

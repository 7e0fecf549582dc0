"""The campaign driver: plan, run in waves, resume, verify, summarize (DataFrame API only).

Layout of ``OUT`` (any path the cluster can write: a local directory for local runs)::

    OUT/campaign=NAME/property=P/chunk=C/part-*.parquet   result rows (spec.COLUMNS)
    OUT/_campaigns/NAME/spec/                              the campaign description (JSON text)
    OUT/_campaigns/NAME/runs/RUN/                          one record per run (timings, target)

Each wave is one Spark job: for every property a ``spark.range(lo, hi, 1, K)`` over its seeds
whose partitions are chunks (``mapInArrow`` of ``executor.run_partition``), the frames unioned
and written with dynamic partition overwrite, partitioned by campaign, property and chunk. A
chunk directory therefore appears only when its wave's job commits, and rewriting it replaces
it: ``--resume`` reads which chunks are complete and runs the others, so every seed ends up in
the results exactly once, however the earlier runs ended. The driver verifies that on the
read-back and deduplicates failures there by signature (the smallest seed represents each).
"""

from __future__ import annotations

import functools
import json
import math
import time
import uuid
from dataclasses import dataclass, field
from typing import Callable, Iterable

from streamproof.spark_harness import executor, spec as specs
from streamproof.spark_harness.spec import CampaignSpec

CHUNK_SECONDS = 2.0      # a partition's work: ~2 s (each partition costs ~30-150 ms here)
WAVE_SECONDS = 30.0      # a wave's wall time: what an interruption can cost
MAX_WAVE_ATTEMPTS = 3    # a failed wave (lost executor, crashed worker) runs again
PIPELINE = 2             # waves in flight at once


class CampaignError(RuntimeError):
    """The campaign cannot run or complete (one line)."""


@dataclass
class RunRecord:
    run_id: str
    master: str
    api: str
    started: float
    seconds: float = 0.0            # waves and read-back summary (startup and planning apart)
    startup_seconds: float = 0.0    # session start + shipping the code
    plan_seconds: float = 0.0       # measuring the cost per seed (chunk sizes)
    seeds_run: int = 0
    chunks_run: int = 0
    chunks_resumed: int = 0         # complete chunks found and kept
    waves: int = 0
    cores: int = 0
    completed: bool = False
    coverage: dict | None = None    # exhaustive mode: what the bound covered


@dataclass
class CampaignResult:
    spec: CampaignSpec
    out: str
    run: RunRecord
    per_property: list[dict]
    failures: list[dict]
    verified: bool
    verification: list[str]
    skipped: list[str] = field(default_factory=list)
    exhaustive: dict | None = None

    @property
    def holds(self) -> bool:
        return self.verified and all(p["held"] == p["rows"] for p in self.per_property)


# ------------------------------------------------------------------------------- planning

def explorable(names: list[str] | None) -> tuple[list[str], list[str]]:
    """(properties a campaign can explore: a state machine or a scenario strategy, the others)."""
    from streamproof.properties import registry

    props = registry.select(names)
    can = [p for p in props if p.machine is not None or p.strategy is not None]
    return [p.name for p in can], [p.name for p in props if p not in can]


def calibrate(prop_name: str, examples: int, step_count: int, seed: int, probes: int = 3) -> float:
    """Estimated seconds per seed of ``prop_name`` with this budget, measured here on a few
    seeds with a small budget (per example, times the budget)."""
    from streamproof.properties import registry
    from streamproof.properties.explore import explore

    prop = registry.get(prop_name)
    explore(prop, 1, seed=seed, step_count=step_count)  # warm up (imports, caches)
    budget = max(1, min(examples, 3))
    ran, started = 0, time.perf_counter()
    for s in range(seed, seed + probes):
        ran += max(1, explore(prop, budget, seed=s, step_count=step_count).examples)
    per_example = (time.perf_counter() - started) / ran
    return max(1e-4, per_example * examples)


def chunk_size(seconds_per_seed: float, seeds: int, cores: int, chunk_seconds: float = CHUNK_SECONDS) -> int:
    """Seeds per chunk: ~``chunk_seconds`` of work, but at least 4 x cores chunks in all."""
    by_time = max(1, round(chunk_seconds / seconds_per_seed))
    by_cores = max(1, math.ceil(seeds / (4 * cores)))
    return max(1, min(by_time, by_cores))


def plan(name: str, properties: list[str], seed_start: int, seed_end: int, examples: int, step_count: int,
         timeout: float, inject: str | None, version: str, cores: int,
         chunk_seeds: int | None = None, costs: dict[str, float] | None = None) -> CampaignSpec:
    spec = CampaignSpec(name=name, properties=list(properties), seed_start=seed_start, seed_end=seed_end,
                        examples=examples, step_count=step_count, timeout=timeout, inject=inject,
                        version=version)
    for prop in properties:
        if chunk_seeds:
            spec.chunk_seeds[prop] = chunk_seeds
        else:
            cost = (costs or {}).get(prop) or calibrate(prop, examples, step_count, seed_start)
            spec.chunk_seeds[prop] = chunk_size(cost, spec.seeds, cores)
    return spec


def plan_exhaustive(name: str, properties: list[str], family: str, depth: int, bound: dict, timeout: float,
                    version: str, cores: int, chunk_seeds: int | None = None) -> CampaignSpec:
    from streamproof.spark_harness import exhaustive

    scope = exhaustive.build(family, depth, bound)
    spec = CampaignSpec(name=name, properties=list(properties), seed_start=0, seed_end=scope.total, examples=1,
                        step_count=depth, timeout=timeout, inject=None, version=version, mode="exhaustive",
                        scope=specs.plain(scope.describe()))
    for prop in properties:
        spec.chunk_seeds[prop] = 1
        cost = exhaustive.calibrate(spec.executor_config(prop))
        spec.chunk_seeds[prop] = chunk_seeds or chunk_size(cost, spec.seeds, cores)
    return spec


def waves_of(todo: list[tuple[str, int]], wave_chunks: int) -> list[list[tuple[str, int]]]:
    return [todo[i:i + wave_chunks] for i in range(0, len(todo), wave_chunks)]


def segments(spec: CampaignSpec, wave: list[tuple[str, int]]) -> list[tuple[str, int, int, int]]:
    """(property, lo, hi, partitions): maximal runs of consecutive chunks, one partition each."""
    out: list[list] = []
    for prop, chunk in sorted(wave):
        lo, hi = spec.chunk_range(prop, chunk)
        if out and out[-1][0] == prop and out[-1][2] == lo:
            out[-1][2] = hi
            out[-1][3] += 1
        else:
            out.append([prop, lo, hi, 1])
    return [tuple(s) for s in out]


def interleave(spec: CampaignSpec, todo: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """Chunks in an order that advances every property at the same pace."""
    return sorted(todo, key=lambda pc: (pc[1] / spec.chunks(pc[0]), pc[0], pc[1]))


# ----------------------------------------------------------------------------- Spark side

def _functions():
    from pyspark.sql import functions as F
    return F


def read_results(spark, out: str, name: str | None = None):
    """The result rows of campaign ``name`` (of every campaign when None) in ``out``; reading only
    ``campaign=NAME`` (with ``out`` as the base path) leaves other files in ``out`` alone."""
    reader = spark.read.schema(specs.spark_ddl())
    if name is None:
        return reader.parquet(out)
    return (reader.option("basePath", out).parquet(f"{out.rstrip('/')}/campaign={name}")
            .where(_functions().col("campaign") == name))


def _is_missing_path(e: Exception) -> bool:
    text = str(e)
    return "PATH_NOT_FOUND" in text or "Path does not exist" in text or "UNABLE_TO_INFER_SCHEMA" in text


def _meta(out: str, name: str, *parts: str) -> str:
    return "/".join([out.rstrip("/"), "_campaigns", name, *parts])


def write_text(spark, path: str, text: str) -> None:
    spark.createDataFrame([(text,)], "value string").coalesce(1).write.mode("overwrite").text(path)


def read_texts(spark, path: str) -> list[str]:
    try:
        return [r[0] for r in spark.read.text(path).collect()]
    except Exception as e:  # noqa: BLE001
        if _is_missing_path(e):
            return []
        raise


def load_spec(spark, out: str, name: str) -> CampaignSpec | None:
    texts = read_texts(spark, _meta(out, name, "spec"))
    return CampaignSpec.from_json(texts[0]) if texts else None


def save_spec(spark, out: str, spec: CampaignSpec) -> None:
    write_text(spark, _meta(out, spec.name, "spec"), spec.to_json())


def save_run(spark, out: str, spec: CampaignSpec, run: RunRecord) -> None:
    write_text(spark, _meta(out, spec.name, "runs", run.run_id), json.dumps(run.__dict__))


def reset(spark, out: str, name: str) -> None:
    """Deletes a campaign's results (a static overwrite of its directory with nothing)."""
    columns = [(n, t) for n, t, _ in specs.COLUMNS if n != "campaign"]
    empty = spark.createDataFrame([], ", ".join(f"`{n}` {t}" for n, t in columns))
    (empty.write.mode("overwrite").option("partitionOverwriteMode", "static")
     .partitionBy("property", "chunk").parquet(f"{out.rstrip('/')}/campaign={name}"))


def complete_chunks(spark, out: str, spec: CampaignSpec) -> set[tuple[str, int]]:
    """Chunks whose rows are all there: exactly the chunk's seeds, each once."""
    F = _functions()
    try:
        rows = (read_results(spark, out, spec.name).groupBy("property", "chunk")
                .agg(F.count("*").alias("n"), F.countDistinct("seed").alias("d"),
                     F.min("seed").alias("lo"), F.max("seed").alias("hi")).collect())
    except Exception as e:  # noqa: BLE001
        if _is_missing_path(e):
            return set()
        raise
    done = set()
    for r in rows:
        if r["property"] not in spec.chunk_seeds or r["chunk"] is None:
            continue
        lo, hi = spec.chunk_range(r["property"], r["chunk"])
        if r["n"] == r["d"] == hi - lo and r["lo"] == lo and r["hi"] == hi - 1:
            done.add((r["property"], r["chunk"]))
    return done


def wave_frame(spark, spec: CampaignSpec, wave: list[tuple[str, int]]):
    frames = []
    for prop, lo, hi, parts in segments(spec, wave):
        fn = functools.partial(executor.run_partition, spec.executor_config(prop))
        frames.append(spark.range(lo, hi, 1, parts).mapInArrow(fn, specs.spark_ddl()))
    frame = frames[0]
    for other in frames[1:]:
        frame = frame.union(other)
    return frame


def write_wave(spark, spec: CampaignSpec, out: str, wave: list[tuple[str, int]]) -> None:
    (wave_frame(spark, spec, wave).write.mode("overwrite")
     .option("partitionOverwriteMode", "dynamic")
     .partitionBy(*specs.PARTITION_COLUMNS).parquet(out))


def summarize(spark, out: str, spec: CampaignSpec) -> tuple[list[dict], list[dict], bool, list[str]]:
    """Per-property counts, failures deduplicated by signature, and the exactly-once check, all
    from the read-back."""
    F = _functions()
    df = read_results(spark, out, spec.name)
    verdict = F.col("verdict")
    aggs = [F.count("*").alias("rows"), F.countDistinct("seed").alias("distinct_seeds"),
            F.min("seed").alias("min_seed"), F.max("seed").alias("max_seed"),
            *[F.sum(F.when(verdict == v, 1).otherwise(0)).alias(v) for v in specs.VERDICTS],
            F.countDistinct("signature").alias("signatures"), F.sum("examples").alias("examples"),
            F.sum("steps").alias("steps"), F.sum("duration").alias("seconds"),
            F.max("duration").alias("max_seconds")]
    found = {r["property"]: r.asDict() for r in df.groupBy("property").agg(*aggs).collect()}
    per_property, problems = [], []
    for prop in spec.properties:
        row = found.pop(prop, None) or {"rows": 0, "distinct_seeds": 0, "min_seed": None, "max_seed": None,
                                        **{v: 0 for v in specs.VERDICTS}, "signatures": 0, "examples": 0,
                                        "steps": 0, "seconds": 0.0, "max_seconds": 0.0}
        row["property"] = prop
        expected = spec.seeds
        if not (row["rows"] == row["distinct_seeds"] == expected
                and row["min_seed"] == spec.seed_start and row["max_seed"] == spec.seed_end - 1):
            problems.append(f"{prop}: {row['rows']} rows, {row['distinct_seeds']} distinct seeds, "
                            f"expected each of the {expected} seeds {spec.seed_start}..{spec.seed_end - 1} once")
        per_property.append({k: (v or 0) if k not in ("min_seed", "max_seed") else v for k, v in row.items()})
    for prop in found:
        problems.append(f"{prop}: results of a property outside the campaign")
    first = lambda c: F.min_by(c, "seed").alias(c)  # noqa: E731 - the smallest seed represents
    failures = (df.where(verdict != "held").groupBy("property", "verdict", "signature")
                .agg(F.count("*").alias("seeds"), F.min("seed").alias("seed"),
                     *[first(c) for c in ("signature_text", "invariant", "message", "scenario", "reproduce")])
                .orderBy("property", "seed").collect())
    return per_property, [r.asDict() for r in failures], not problems, problems


# ---------------------------------------------------------------------------------- driver

def cancel_all(spark) -> None:
    """Cancels every running job of the session (either API)."""
    from streamproof.spark_harness.session import is_connect

    try:
        if is_connect(spark):
            spark.interruptAll()
        else:
            spark.sparkContext.cancelAllJobs()
    except Exception:  # noqa: BLE001 - the session may be gone already
        pass


def warm_up(spark, cores: int) -> None:
    """Starts the Python workers and imports the properties there (part of startup)."""
    n = max(2, 2 * cores)
    try:
        spark.range(0, n, 1, n).mapInArrow(executor.warm_up, executor.DESCRIBE_DDL).collect()
    except Exception:  # noqa: BLE001 - only an optimisation: the first wave imports instead
        pass


def run_campaign(spark, spec: CampaignSpec, out: str, run: RunRecord, *, resume: bool,
                 cores: int, wave_seconds: float = WAVE_SECONDS, bar=None,
                 max_waves: int | None = None, stored: CampaignSpec | None = None,
                 on_wave: Callable[[int, int], None] | None = None,
                 pipeline: int = PIPELINE) -> CampaignResult | None:
    """Runs the chunks of ``spec`` not yet complete in ``out``; returns the verified summary, or
    None when ``max_waves`` stopped it early (a test hook for interrupted campaigns).

    Up to ``pipeline`` waves are in flight at once (each a job submitted from its own thread), so
    the cluster never idles between waves; each wave still commits on its own."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    from streamproof.spark_harness import progress as progress_mod

    if resume and stored is not None:
        done = complete_chunks(spark, out, spec)
    else:
        if stored is not None:
            reset(spark, out, spec.name)
        done = set()
    save_spec(spark, out, spec)
    todo = interleave(spec, [(p, c) for p in spec.properties for c in range(spec.chunks(p))
                             if (p, c) not in done])
    run.chunks_resumed = len(done)
    run.cores = cores
    wave_chunks = max(4 * cores, math.ceil(cores * wave_seconds / CHUNK_SECONDS))
    waves = waves_of(todo, wave_chunks)
    if max_waves is not None:
        waves = waves[:max_waves]
    seeds_of = lambda wave: sum(hi - lo for p, c in wave for lo, hi in [spec.chunk_range(p, c)])  # noqa: E731
    handle = None
    if bar is not None:
        bar.begin(sum(seeds_of([pc]) for pc in done), len(waves))
        handle = progress_mod.attach(spark, progress_mod.TaskProgress(bar.tasks))
    started = time.perf_counter()
    executor_pool = ThreadPoolExecutor(max_workers=max(1, pipeline), thread_name_prefix="streamproof-wave")
    in_flight: dict = {}
    queue = list(enumerate(waves, 1))

    def submit(number: int, wave: list, attempt: int) -> None:
        future = executor_pool.submit(write_wave, spark, spec, out, wave)
        in_flight[future] = (number, wave, attempt)
        if bar is not None:
            bar.started(seeds_of(wave))

    try:
        while queue and len(in_flight) < max(1, pipeline):
            submit(*queue.pop(0), 1)
        while in_flight:
            finished, _ = wait(list(in_flight), return_when=FIRST_COMPLETED)
            for future in finished:
                number, wave, attempt = in_flight.pop(future)
                error = future.exception()
                if bar is not None:
                    bar.ended(seeds_of(wave), error is None, number)
                if error is not None:  # a lost executor, a crashed worker: run the wave again
                    if attempt >= MAX_WAVE_ATTEMPTS:
                        raise CampaignError(f"wave {number} failed {attempt} times: {_first_line(error)}")
                    submit(number, wave, attempt + 1)
                    continue
                run.waves += 1
                run.chunks_run += len(wave)
                run.seeds_run += seeds_of(wave)
                if on_wave is not None:
                    on_wave(number, len(waves))
                if queue:
                    submit(*queue.pop(0), 1)
    except BaseException:
        cancel_all(spark)
        executor_pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        run.seconds += time.perf_counter() - started
        if handle is not None:
            handle.close()
        if bar is not None:
            bar.close()
    executor_pool.shutdown(wait=True)
    if max_waves is not None and run.chunks_run < len(todo):
        return None
    started = time.perf_counter()
    per_property, failures, verified, problems = summarize(spark, out, spec)
    run.completed = verified
    if spec.mode == "exhaustive":
        from streamproof.spark_harness import exhaustive
        run.coverage = exhaustive.coverage(read_results(spark, out, spec.name), spec)
    run.seconds += time.perf_counter() - started
    save_run(spark, out, spec, run)
    return CampaignResult(spec, out, run, per_property, failures, verified, problems, exhaustive=run.coverage)


def new_run(master: str, api: str) -> RunRecord:
    return RunRecord(run_id=time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6],
                     master=master, api=api, started=time.time())


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__)[:300]


def results_equal(a: list[dict], b: list[dict]) -> bool:
    key = lambda r: (r["property"], r["seed"])  # noqa: E731
    cols = specs.DETERMINISTIC_COLUMNS
    return sorted(([r[c] for c in cols] for r in a), key=repr) == sorted(([r[c] for c in cols] for r in b), key=repr) \
        and len({key(r) for r in a}) == len(a)


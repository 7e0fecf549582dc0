"""The campaign driver: plan, run in waves, resume, verify, summarize (DataFrame API only).

Layout of ``OUT`` (any path the cluster can write: a local directory for local runs)::

    OUT/campaign=NAME/property=P/chunk=C/part-*.parquet   result rows (spec.COLUMNS)
    OUT/_campaigns/NAME/spec/                              the campaign description (JSON text)
    OUT/_campaigns/NAME/runs/RUN/                          one record per run (timings, target)

Each wave is one Spark job: its seeds cut into partitions of any size (:func:`partition_spans`:
a few large ones while more waves follow, shrinking ones in the last), ``mapInArrow`` of
``executor.run_spans`` over one id per partition, written with dynamic partition overwrite,
partitioned by campaign, property and chunk. A chunk directory therefore appears only when its
wave's job commits, and rewriting it replaces it: ``--resume`` reads which chunks are complete
and runs the others, so every seed ends up in the results exactly once, however the earlier runs
ended. The driver verifies that on the read-back and deduplicates failures there by signature
(the smallest seed represents each).

Size: one campaign run, planning to verified read-back, on the layout above; planning is what to move out next.
"""

from __future__ import annotations

import functools
import json
import math
import time
import uuid
from dataclasses import dataclass, field
from typing import Callable, Iterable

from streamproof.spark_harness import executor, progress, spec as specs
from streamproof.spark_harness.spec import CampaignSpec, result_status, split_by_verdict  # noqa: F401

CHUNK_SECONDS = 2.0      # a chunk's work: ~2 s (the unit of the results layout and of resume)
WAVE_SECONDS = 30.0      # a wave's wall time: what an interruption can cost
PARTITIONS_PER_CORE = 2  # a wave's partitions per core while more waves follow (a task costs ~0.1-0.2 s here)
TAIL_SECONDS = 1.0       # the smallest partition of the last wave: about what a core may idle at the end
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
    status: str = ""                # running (a killed driver leaves it so) | interrupted | failed | completed | incomplete
    seeds_kept: int = 0             # seeds of the complete chunks kept from earlier runs
    seeds_total: int = 0            # the campaign's seeds, all properties
    seeds_dropped: int = 0          # interrupted: seeds of the waves in flight (they run again on --resume)
    previous: str | None = None     # a fresh start: where the earlier results of the name were moved


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
    timeouts: list[dict] = field(default_factory=list)   # per signature, like failures: not failures
    errors: list[dict] = field(default_factory=list)     # per signature: the harness or a crash, no scenario

    @property
    def holds(self) -> bool:
        return self.verified and all(p["held"] == p["rows"] for p in self.per_property)

    @property
    def status(self) -> str:
        return result_status(self.per_property, self.verified)


# ------------------------------------------------------------------------------- planning

def explorable(names: list[str] | None) -> tuple[list[str], list[str]]:
    """(properties a campaign can explore: a state machine or a scenario strategy, the others)."""
    from streamproof.properties import registry

    props = registry.select(names)
    can = [p for p in props if p.machine is not None or p.strategy is not None]
    return [p.name for p in can], [p.name for p in props if p not in can]


CALIBRATE_SECONDS = 6.0  # at most this long measuring one property (a slower probe is cut)


def calibrate(prop_name: str, examples: int, step_count: int, seed: int, probes: int = 3,
              inject: str | None = None, limit: float = CALIBRATE_SECONDS) -> float:
    """Estimated seconds per seed of ``prop_name`` with this budget, measured here on a few seeds
    with a small budget, the bug-zoo variant ``inject`` applied as on the executors (a seed that
    finds the bug shrinks it, which can cost far more than the budget's examples). The estimate is
    the larger of the time per example times the budget and the time per probe; probing stops
    after ``limit`` seconds (a probe cut there counts as at least ``limit``)."""
    from streamproof.properties import registry
    from streamproof.properties.explore import explore
    from streamproof.spark_harness.seedrun import SeedTimeout, deadline, injected

    prop = registry.get(prop_name)
    budget = max(1, min(examples, 3))
    ran = done = 0
    started = time.perf_counter()
    try:
        with injected(inject), deadline(limit):
            explore(prop, 1, seed=seed, step_count=step_count, shrink=False)  # warm up (imports, caches)
            started = time.perf_counter()
            for s in range(seed, seed + probes):
                ran += max(1, explore(prop, budget, seed=s, step_count=step_count).examples)
                done += 1
                if time.perf_counter() - started > limit / 2:
                    break
    except SeedTimeout:
        pass
    elapsed = time.perf_counter() - started
    if done == 0:  # the first probe alone ran out of the limit
        return max(limit, elapsed)
    return max(1e-4, elapsed / ran * examples, elapsed / done)


def chunk_size(seconds_per_seed: float, seeds: int, cores: int, chunk_seconds: float = CHUNK_SECONDS) -> int:
    """Seeds per chunk: ~``chunk_seconds`` of work, but at least 4 x cores chunks in all."""
    by_time = max(1, round(chunk_seconds / seconds_per_seed))
    by_cores = max(1, math.ceil(seeds / (4 * cores)))
    return max(1, min(by_time, by_cores))


def plan(name: str, properties: list[str], seed_start: int, seed_end: int, examples: int, step_count: int,
         timeout: float, inject: str | None, version: str, cores: int,
         chunk_seeds: int | None = None, costs: dict[str, float] | None = None,
         note: Callable[[str], None] | None = None) -> CampaignSpec:
    """The campaign with its chunking: the cost per seed of each property is measured here (the
    injected variant applied) unless ``chunk_seeds`` fixes the chunks; ``note`` hears about each
    measurement (progress while planning)."""
    spec = CampaignSpec(name=name, properties=list(properties), seed_start=seed_start, seed_end=seed_end,
                        examples=examples, step_count=step_count, timeout=timeout, inject=inject,
                        version=version)
    for index, prop in enumerate(properties, 1):
        if chunk_seeds:
            spec.chunk_seeds[prop] = chunk_seeds
        else:
            if note is not None:
                note(f"measuring the cost of a seed: {prop} ({index}/{len(properties)})")
            cost = (costs or {}).get(prop) or calibrate(prop, examples, step_count, seed_start, inject=inject)
            cost = min(cost, timeout)  # no seed runs longer than the per-seed limit
            spec.seed_seconds[prop] = cost
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
        spec.seed_seconds[prop] = cost
        spec.chunk_seeds[prop] = chunk_seeds or chunk_size(cost, spec.seeds, cores)
    return spec


def waves_of(todo: list[tuple[str, int]], wave_chunks: int) -> list[list[tuple[str, int]]]:
    return [todo[i:i + wave_chunks] for i in range(0, len(todo), wave_chunks)]


def chunk_cost(spec: CampaignSpec, prop: str, chunk: int) -> float:
    """Estimated seconds of work of a chunk: its seeds times the measured cost per seed (a chunk
    of an unmeasured property, chunked by --chunk-seeds, counts as CHUNK_SECONDS)."""
    lo, hi = spec.chunk_range(prop, chunk)
    per_seed = spec.seed_seconds.get(prop)
    return CHUNK_SECONDS if per_seed is None else (hi - lo) * per_seed


class WavePlanner:
    """Cuts the next wave off the chunks to do: about ``cores * wave_seconds`` of estimated work,
    at least one chunk per core. The estimate is corrected by what the committed waves took (the
    estimated work committed per wall second against ``cores``), so a campaign whose seeds are
    slower than measured (an injected bug that shrinks, a loaded machine) gets smaller waves
    instead of waves far longer than ``--wave-seconds``."""

    def __init__(self, spec: CampaignSpec, todo: list[tuple[str, int]], cores: int, wave_seconds: float):
        self.spec, self.todo, self.cores, self.wave_seconds = spec, list(todo), max(1, cores), wave_seconds
        self.factor = 1.0          # measured wall time / estimated work, per core
        self.started = time.perf_counter()
        self.committed_work = 0.0

    def next_wave(self) -> list[tuple[str, int]]:
        budget = self.cores * self.wave_seconds / self.factor
        wave, work = [], 0.0
        while self.todo and (len(wave) < self.cores or work + chunk_cost(self.spec, *self.todo[0]) <= budget):
            pc = self.todo.pop(0)
            wave.append(pc)
            work += chunk_cost(self.spec, *pc)
        return wave

    def committed(self, wave: list[tuple[str, int]]) -> None:
        self.committed_work += sum(chunk_cost(self.spec, *pc) for pc in wave)
        elapsed = time.perf_counter() - self.started
        if self.committed_work > 0 and elapsed > 0:
            # estimated work done per wall second on all cores; 1.0 when the estimate is right
            self.factor = max(0.05, min(1000.0, self.cores * elapsed / self.committed_work))

    def work_left(self) -> float:
        """Estimated seconds of work of the chunks not yet in a wave."""
        return sum(chunk_cost(self.spec, *pc) for pc in self.todo)

    def estimate_waves(self) -> int:
        """How many waves the rest would take at the current estimate (for the display)."""
        budget = self.cores * self.wave_seconds / self.factor
        work = sum(chunk_cost(self.spec, *pc) for pc in self.todo)
        return math.ceil(work / budget) if self.todo else 0


def segments(spec: CampaignSpec, wave: list[tuple[str, int]]) -> list[tuple[str, int, int, int]]:
    """(property, lo, hi, chunks): maximal runs of consecutive chunks."""
    out: list[list] = []
    for prop, chunk in sorted(wave):
        lo, hi = spec.chunk_range(prop, chunk)
        if out and out[-1][0] == prop and out[-1][2] == lo:
            out[-1][2] = hi
            out[-1][3] += 1
        else:
            out.append([prop, lo, hi, 1])
    return [tuple(s) for s in out]


def seed_cost(spec: CampaignSpec, prop: str) -> float:
    """Estimated seconds per seed of ``prop`` (an unmeasured property's chunk counts as CHUNK_SECONDS)."""
    per_seed = spec.seed_seconds.get(prop)
    return max(1e-6, per_seed if per_seed is not None else CHUNK_SECONDS / spec.chunk_seeds[prop])


def partition_spans(spec: CampaignSpec, wave: list[tuple[str, int]], cores: int,
                    later: float = 0.0) -> list[tuple[str, int, int]]:
    """The wave's Spark partitions, ``(property, lo, hi)``, largest first (Spark starts a stage's
    tasks in partition order). Each is cut to 1/(PARTITIONS_PER_CORE x cores) of the estimated work
    still to do, this wave's and the ``later`` waves' (seconds), but at most that share of this wave
    and at least TAIL_SECONDS: a wave with more to come gets a few large partitions (each task costs
    ~0.1-0.2 s of a core here, so ~2 s chunks cost ~8%), the last wave shrinking ones (guided
    self-scheduling), so that the cores finish together instead of one idling through a last chunk.
    A partition may span several chunks or part of one: the wave's job commits its chunks together."""
    share = PARTITIONS_PER_CORE * max(1, cores)
    segs = [(prop, lo, hi) for prop, lo, hi, _ in segments(spec, wave)]
    work = sum((hi - lo) * seed_cost(spec, prop) for prop, lo, hi in segs)
    remaining = work + later
    spans = []
    for prop, lo, hi in segs:
        cost = seed_cost(spec, prop)
        while lo < hi:
            n = min(hi - lo, max(1, round(max(TAIL_SECONDS, min(work, remaining) / share) / cost)))
            spans.append((prop, lo, lo + n))
            lo += n
            remaining -= n * cost
    return sorted(spans, key=lambda s: -(s[2] - s[1]) * seed_cost(spec, s[0]))  # stable: seed order on ties


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


PREVIOUS = "_previous"


def set_aside(out: str, name: str) -> str | None:
    """Moves the results and records of campaign ``name`` to ``OUT/_previous/NAME/`` (replacing
    what an earlier rerun put there), so that a run without ``--resume`` starts the campaign again
    from nothing; returns that directory, or None when ``out`` is not a local path (then the rows
    are deleted and the older run records are told apart by the campaign's ``created`` time)."""
    import shutil
    from pathlib import Path

    from streamproof.spark_harness.spec import is_local_path, local_path

    if not is_local_path(out):
        return None
    root = Path(local_path(out))
    target = root / PREVIOUS / name
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for source in (root / f"campaign={name}", root / "_campaigns" / name):
        if source.exists():
            shutil.move(str(source), str(target / source.name))
    return str(target)


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


def wave_frame(spark, spec: CampaignSpec, spans: list[tuple[str, int, int]], channel: str | None = None):
    """The rows of a wave cut into ``spans`` (:func:`partition_spans`), one partition each;
    ``channel``: a directory where the executors say which seed is shrinking."""
    fns = {prop: (functools.partial(progress.reporting_partition, channel, spec.executor_config(prop)) if channel
                  else functools.partial(executor.run_partition, spec.executor_config(prop)))
           for prop in {prop for prop, _, _ in spans}}
    runs = [(fns[prop], lo, hi) for prop, lo, hi in spans]
    n = len(runs)
    return spark.range(0, n, 1, n).mapInArrow(functools.partial(executor.run_spans, runs), specs.spark_ddl())


def write_wave(spark, spec: CampaignSpec, out: str, spans: list[tuple[str, int, int]],
               channel: str | None = None) -> None:
    write_rows(wave_frame(spark, spec, spans, channel), out)


def write_rows(frame, out: str) -> None:
    frame.write.mode("overwrite").option("partitionOverwriteMode", "dynamic") \
        .partitionBy(*specs.PARTITION_COLUMNS).parquet(out)


def summarize(spark, out: str, spec: CampaignSpec) -> tuple[list[dict], list[dict], bool, list[str]]:
    """Per-property counts, non-held rows deduplicated by signature (failures, timeouts and errors
    alike: :func:`split_by_verdict` tells them apart), and the exactly-once check, all from the
    read-back."""
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
    not_held = sum((r["rows"] or 0) - (r["held"] or 0) for r in found.values())
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
    failures = [] if not not_held else (  # every row held: no second pass over the results
        df.where(verdict != "held").groupBy("property", "verdict", "signature")
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
    """Starts the Python workers and imports the properties there (part of startup). On a local
    master it also writes a dummy wave to a temporary directory and verifies it as a campaign
    does: the JVM compiles a query shape the first time it runs it (code generation, class loading),
    ~2-4 s here that would otherwise stall the first wave and the read-back."""
    n = max(2, 2 * cores)
    try:
        spark.range(0, n, 1, n).mapInArrow(executor.warm_up, executor.DESCRIBE_DDL).collect()
        if _master(spark).startswith("local"):
            import tempfile

            prop = executor.WARM_UP_CONFIG["property"]
            spec = CampaignSpec(name=executor.WARM_UP_CONFIG["campaign"], properties=[prop], seed_start=0,
                                seed_end=n, examples=1, chunk_seeds={prop: 1})
            with tempfile.TemporaryDirectory(prefix="streamproof-warm-up-") as out:
                write_rows(spark.range(0, n, 1, n).mapInArrow(executor.warm_up_rows, specs.spark_ddl()), out)
                summarize(spark, out, spec)
    except Exception:  # noqa: BLE001 - only an optimisation: the first wave imports and compiles instead
        pass


def _master(spark) -> str:
    from streamproof.spark_harness.session import is_connect

    try:
        return spark.conf.get("spark.master") if is_connect(spark) else spark.sparkContext.master
    except Exception:  # noqa: BLE001
        return ""


def run_campaign(spark, spec: CampaignSpec, out: str, run: RunRecord, *, resume: bool,
                 cores: int, wave_seconds: float = WAVE_SECONDS, bar=None,
                 max_waves: int | None = None, stored: CampaignSpec | None = None,
                 on_wave: Callable[[int, int], None] | None = None,
                 pipeline: int = PIPELINE) -> CampaignResult | None:
    """Runs the chunks of ``spec`` not yet complete in ``out``; returns the verified summary, or
    None when ``max_waves`` stopped it early (a test hook for interrupted campaigns).

    Up to ``pipeline`` waves are in flight at once (each a job submitted from its own thread), so
    the cluster never idles between waves; each wave still commits on its own. Waves are cut as
    they are submitted (:class:`WavePlanner`: ~``wave_seconds`` of measured work). The run is
    recorded (``_campaigns/NAME/runs/RUN``) when it starts (status ``running``: a killed driver
    leaves it so), when it is interrupted (``interrupted``) and when it ends (``completed``, or
    ``incomplete`` when the read-back misses seeds)."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    if resume and stored is not None:
        done = complete_chunks(spark, out, spec)
    else:  # a fresh start: the earlier results of this name are moved aside (local) or deleted
        if stored is not None:
            run.previous = set_aside(out, spec.name)
            if run.previous is None:
                reset(spark, out, spec.name)
        spec.created = run.started
        done = set()
    save_spec(spark, out, spec)
    todo = interleave(spec, [(p, c) for p in spec.properties for c in range(spec.chunks(p))
                             if (p, c) not in done])
    seeds_of = lambda wave: sum(hi - lo for p, c in wave for lo, hi in [spec.chunk_range(p, c)])  # noqa: E731
    run.chunks_resumed = len(done)
    run.seeds_kept = seeds_of(done)
    run.seeds_total = spec.seeds * len(spec.properties)
    run.cores = cores
    run.status = "running"
    save_run(spark, out, spec, run)
    planner = WavePlanner(spec, todo, cores, wave_seconds)
    handle = None
    if bar is not None:  # a progress.CampaignDisplay
        bar.begin(spec, run.seeds_kept, planner.estimate_waves())
        handle = progress.attach(spark, progress.TaskProgress(bar.tasks))
    started = time.perf_counter()
    executor_pool = ThreadPoolExecutor(max_workers=max(1, pipeline), thread_name_prefix="streamproof-wave")
    in_flight: dict = {}
    submitted = 0

    def submit_next() -> bool:
        nonlocal submitted
        if max_waves is not None and submitted >= max_waves:
            return False
        wave = planner.next_wave()
        if not wave:
            return False
        submitted += 1
        submit(submitted, wave, partition_spans(spec, wave, cores, planner.work_left()), 1)
        return True

    def submit(number: int, wave: list, spans: list, attempt: int) -> None:
        future = executor_pool.submit(write_wave, spark, spec, out, spans, getattr(bar, "channel", None))
        in_flight[future] = (number, wave, spans, attempt)
        if bar is not None:
            bar.started(seeds_of(wave))

    try:
        while len(in_flight) < max(1, pipeline) and submit_next():
            pass
        while in_flight:
            finished, _ = wait(list(in_flight), return_when=FIRST_COMPLETED)
            for future in finished:
                number, wave, spans, attempt = in_flight.pop(future)
                error = future.exception()
                if bar is not None:
                    bar.ended(seeds_of(wave), error is None, number)
                if error is not None:  # a lost executor, a crashed worker: run the wave again
                    if attempt >= MAX_WAVE_ATTEMPTS:
                        raise CampaignError(f"wave {number} failed {attempt} times: {_first_line(error)}")
                    submit(number, wave, spans, attempt + 1)
                    continue
                run.waves += 1
                run.chunks_run += len(wave)
                run.seeds_run += seeds_of(wave)
                planner.committed(wave)
                if bar is not None:
                    bar.waves = run.waves + len(in_flight) + planner.estimate_waves()
                if on_wave is not None:
                    on_wave(number, run.waves + len(in_flight) + planner.estimate_waves())
                submit_next()
    except BaseException as e:
        cancel_all(spark)
        executor_pool.shutdown(wait=False, cancel_futures=True)
        run.seconds += time.perf_counter() - started
        started = time.perf_counter()
        run.seeds_dropped = sum(seeds_of(w) for _, w, _, _ in in_flight.values())
        run.status = "interrupted" if isinstance(e, KeyboardInterrupt) else "failed"
        try:
            save_run(spark, out, spec, run)  # best effort: the record says how the run ended
        except BaseException:  # noqa: BLE001 - a second Ctrl-C, or the session is gone
            pass
        raise
    finally:
        run.seconds += time.perf_counter() - started
        if handle is not None:
            handle.close()
    executor_pool.shutdown(wait=True)
    if max_waves is not None and planner.todo:
        return None
    if bar is not None:
        bar.step("reading the results back and verifying them")
    started = time.perf_counter()
    per_property, failures, verified, problems = summarize(spark, out, spec)
    run.completed = verified
    run.status = "completed" if verified else "incomplete"
    if spec.mode == "exhaustive":
        from streamproof.spark_harness import exhaustive
        run.coverage = exhaustive.coverage(read_results(spark, out, spec.name), spec)
    run.seconds += time.perf_counter() - started
    save_run(spark, out, spec, run)
    failed, timeouts, errors = split_by_verdict(failures)
    return CampaignResult(spec, out, run, per_property, failed, verified, problems, exhaustive=run.coverage,
                          timeouts=timeouts, errors=errors)


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


"""What runs on the executors: plain module-level functions, shipped in the code zip.

``run_partition(config, batches)`` is the ``mapInArrow`` function of a campaign (bound to its
per-property config with ``functools.partial``, which pickles by reference): for every seed of
the partition it runs the registered property with Hypothesis seeded from it, the bug-zoo variant
``config["inject"]`` applied around the run, and returns one result row (``spec.COLUMNS``).
Every exception and the per-seed timeout become verdicts: a task never fails because of a seed
(``local[n]`` would not retry it, and one bad seed must not cost the partition).

Nothing here imports pyspark: the function sees Arrow record batches only.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Iterable, Iterator

from streamproof.spark_harness import spec
from streamproof.spark_harness.seedrun import (  # noqa: F401 - SeedTimeout, deadline, injected: executor's API
    EXECUTOR,
    SeedTimeout,
    base_row,
    deadline,
    injected,
    one_line,
)


def run_seed(config: dict, seed: int) -> dict[str, Any]:
    """One seed of one property: a result row, whatever happens."""
    row = base_row(config, seed)
    started = time.perf_counter()
    try:
        from streamproof.properties import registry
        from streamproof.properties.explore import explore
        from streamproof.properties.scenario import dump_scenario

        prop = registry.get(config["property"])
        limit = deadline(config.get("timeout"))
        try:
            with injected(config.get("inject")):
                with limit:
                    e = explore(prop, config["examples"], seed=seed, step_count=config["step_count"])
        finally:
            limit.disarm()
        if limit.expired:
            raise SeedTimeout()
        row.update(verdict=e.verdict, examples=e.examples, steps=e.steps,
                   invariant=e.invariant, message=one_line(e.message) or None)
        if e.scenario is not None:
            import dataclasses
            scenario = dataclasses.replace(
                e.scenario, name=f"{prop.name}-{seed}",
                description=one_line(f"Minimal counterexample of campaign {config['campaign']!r}, seed "
                                      f"{seed} ({config['examples']} examples): {e.message}", 1000))
            row["scenario"] = dump_scenario(scenario)
        elif e.verdict == "failed":  # a failure row always carries its scenario: without one it is an error
            row.update(verdict="error", invariant="no-scenario",
                       message=one_line(f"the property failed ({e.invariant}: {e.message}) but recorded no "
                                        f"scenario to replay"))
    except SeedTimeout:
        row.update(verdict="timeout", invariant="timeout",
                   message=f"seed {seed} exceeded the per-seed timeout of {config.get('timeout')} s")
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # noqa: BLE001 - every error is a verdict
        row.update(verdict="error", invariant=type(err).__name__,
                   message=one_line(f"{type(err).__name__}: {err}") or type(err).__name__)
    row["duration"] = time.perf_counter() - started
    row["finished"] = time.time()
    if row["verdict"] != "held":
        row["signature"], row["signature_text"] = spec.signature(
            row["property"], row["verdict"], row["invariant"], row["message"])
    return row


def arrow_schema():
    import pyarrow as pa

    types = {"string": pa.string(), "int32": pa.int32(), "int64": pa.int64(),
             "float64": pa.float64(), "list<string>": pa.list_(pa.string())}
    return pa.schema([(name, types[arrow]) for name, _, arrow in spec.COLUMNS])


def rows_to_batch(rows: list[dict]):
    import pyarrow as pa

    return pa.RecordBatch.from_pylist(rows, schema=arrow_schema())


def run_partition(config: dict, batches: Iterable) -> Iterator:
    """The ``mapInArrow`` function: Arrow batches of seeds (column ``id``) in, result rows out."""
    for batch in batches:
        ids = batch.column(0).to_pylist()
        if config.get("mode") == "exhaustive":
            from streamproof.spark_harness import exhaustive
            rows = [row for index in ids for row in exhaustive.run_index(config, index)]
        else:
            rows = [run_seed(config, seed) for seed in ids]
        yield rows_to_batch(rows)


BATCH_SEEDS = 10_000  # seeds per Arrow batch of a span (Spark's default maxRecordsPerBatch)


def run_spans(spans: list, batches: Iterable) -> Iterator:
    """The ``mapInArrow`` function of a wave, over ``spark.range(0, len(spans), 1, len(spans))``:
    partition ``i`` holds the one id ``i`` and runs ``spans[i] = (fn, lo, hi)``, ``fn`` being
    :func:`run_partition` bound to a property's config (or ``progress.reporting_partition``), on the
    seeds ``lo..hi-1``. So a wave's partitions can have any sizes (``campaign.partition_spans``)."""
    import pyarrow as pa

    for batch in batches:
        for i in batch.column(0).to_pylist():
            fn, lo, hi = spans[i]
            yield from fn(pa.RecordBatch.from_arrays([pa.array(range(s, min(hi, s + BATCH_SEEDS)), pa.int64())],
                                                     ["id"]) for s in range(lo, hi, BATCH_SEEDS))


def run_seeds_locally(config: dict, seeds: Iterable[int]) -> list[dict]:
    """The same rows without Spark (the benchmark's baseline, the tests' reference)."""
    return [run_seed(config, seed) for seed in seeds]


def describe_worker(batches: Iterable) -> Iterator:
    """``mapInArrow`` probe (tests, diagnostics): where the shipped code is imported from, whether
    the function runs in the worker's main thread (the per-seed alarm needs it), and the process."""
    import pyarrow as pa

    import streamproof.properties as properties

    for batch in batches:
        n = batch.num_rows
        yield pa.RecordBatch.from_pydict({
            "id": batch.column(0),
            "spark_harness": [__file__] * n,
            "properties": [properties.__file__] * n,
            "main_thread": [threading.current_thread() is threading.main_thread()] * n,
            "executor": [EXECUTOR] * n,
        })


def warm_up(batches: Iterable) -> Iterator:
    """``mapInArrow`` warm-up: imports every registered property's state machine or strategy in the worker
    (so that the first wave measures seeds, not imports); returns what :func:`describe_worker` does."""
    try:
        from streamproof.properties import registry

        for prop in registry.all_properties():
            if prop.machine is not None:
                prop.machine()
            elif prop.strategy is not None:
                prop.strategy()
    except Exception:  # noqa: BLE001 - a broken property shows up as its seeds' verdicts
        pass
    yield from describe_worker(batches)


DESCRIBE_DDL = "id bigint, spark_harness string, properties string, main_thread boolean, executor string"

WARM_UP_CONFIG = {"campaign": "warm-up", "property": "warm-up", "seed_start": 0, "chunk_seeds": 1, "examples": 1,
                  "step_count": spec.DEFAULT_STEP_COUNT}


def warm_up_rows(batches: Iterable) -> Iterator:
    """``mapInArrow`` warm-up: a result row (``spec.COLUMNS``, verdict ``error``) per id, no property
    run, for a dummy wave written and read back like a campaign's (``campaign.warm_up``)."""
    for batch in batches:
        yield rows_to_batch([base_row(WARM_UP_CONFIG, seed) for seed in batch.column(0).to_pylist()])

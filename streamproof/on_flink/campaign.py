"""Campaigns on Apache Flink (``streamproof campaign --on-flink JOB...``): each job's runs on Flink
(:func:`streamproof.on_flink.oracle.run_on_flink`: failure-free, paced, failures injected, the
simulator's fidelity) in one Spark task, one Flink MiniCluster per task, a result row per job.

The job's file travels in the task (its text; a job importing sibling modules needs them on the
executors' ``PYTHONPATH``). The executors find PyFlink's runtime through ``STREAMPROOF_FLINK_PYTHON``
(the driver passes the one it found; on a cluster set it with ``spark.executorEnv``).
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
import time
from typing import Iterable, Iterator

COLUMNS = [("job", "string"), ("verdict", "string"), ("faithful", "boolean"), ("runs", "int32"),
           ("faults", "int32"), ("differs", "int32"), ("seconds", "float64"), ("seconds_per_run", "float64"),
           ("executor", "string"), ("message", "string"), ("report", "string")]


def ddl() -> str:
    types = {"string": "string", "boolean": "boolean", "int32": "int", "float64": "double"}
    return ", ".join(f"{name} {types[kind]}" for name, kind in COLUMNS)


def run_one(config: dict, index: int) -> dict:
    """Job ``index`` of ``config["jobs"]`` on Flink: its row, whatever happens."""
    from streamproof.spark_harness.seedrun import EXECUTOR, one_line

    name, text = config["jobs"][index]
    row = {"job": name, "verdict": "error", "faithful": False, "runs": 0, "faults": 0, "differs": 0, "seconds": 0.0,
           "seconds_per_run": 0.0, "executor": EXECUTOR, "message": None, "report": None}
    started = time.perf_counter()
    if config.get("flink_python"):
        os.environ.setdefault("STREAMPROOF_FLINK_PYTHON", config["flink_python"])
    try:
        from streamproof.on_flink.oracle import run_on_flink
        from streamproof.properties.certify_job_runs import load_job

        with tempfile.TemporaryDirectory(prefix="streamproof-flink-job-") as folder:
            path = os.path.join(folder, name)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            subject = load_job(path)
            report = run_on_flink(subject, path, faults=config["faults"], time_limit=config["time_limit"],
                                  mode=config.get("mode", "process"))
        verdicts = [f.verdict for f in report.faults]
        row.update(verdict="failed" if "failed" in verdicts else "differs" if "differs" in verdicts else "agrees",
                   faithful=report.faithful, runs=len(report.run_seconds),
                   faults=sum(f.injected for f in report.faults), differs=verdicts.count("differs"),
                   seconds_per_run=sum(report.run_seconds) / max(1, len(report.run_seconds)),
                   message=one_line("; ".join(f"{f.function}: {f.verdict} {f.detail}" for f in report.faults
                                              if not f.verdict.startswith("agrees"))) or None,
                   report=json.dumps(report.to_json()))
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # noqa: BLE001 - every error is a row
        row["message"] = one_line(f"{type(err).__name__}: {err}")
    row["seconds"] = time.perf_counter() - started
    return row


def partition(config: dict, batches: Iterable) -> Iterator:
    """The ``mapInArrow`` function: job indexes (column ``id``) in, rows out."""
    import pyarrow as pa

    types = {"string": pa.string(), "boolean": pa.bool_(), "int32": pa.int32(), "float64": pa.float64()}
    schema = pa.schema([(name, types[kind]) for name, kind in COLUMNS])
    for batch in batches:
        rows = [run_one(config, index) for index in batch.column(0).to_pylist()]
        yield pa.RecordBatch.from_pylist(rows, schema=schema)


def run_jobs(spark, jobs: list[str], faults: int, time_limit: float, out: str, name: str) -> list[dict]:
    """Every job on Flink, one Spark task each; rows written as Parquet to ``out/_flink/name``."""
    from streamproof.on_flink.runner import flink_python

    config = {"jobs": [(os.path.basename(job), open(job, encoding="utf-8").read()) for job in jobs],
              "faults": faults, "time_limit": time_limit, "flink_python": flink_python()}
    frame = spark.range(0, len(jobs), 1, len(jobs)).mapInArrow(functools.partial(partition, config), ddl())
    rows = [row.asDict() for row in frame.collect()]
    spark.createDataFrame(rows, ddl()).write.mode("overwrite").parquet(os.path.join(out, "_flink", name))
    return sorted(rows, key=lambda r: r["job"])

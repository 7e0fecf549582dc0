"""Runs of a job on Apache Flink's local MiniCluster: one client process
(:mod:`streamproof.on_flink.driver`) per batch of runs, a time limit, outputs read back from the
exactly-once file sinks' finished part files.

Bad set-up is one line (:class:`FlinkUnavailable`, exit 2): PyFlink's runtime not installed (the
``flink`` extra), no Java, Flink that fails to start, a batch over its time limit. Runs finished
before a failure are kept (each run writes its result as it ends).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field

from streamproof.on_flink.instrument import calls, injected

INSTALL_HINT = ("make flink-venv (a .venv-flink beside .venv), or pip install 'streamproof[flink]' in a virtual "
                "environment without the spark extra and STREAMPROOF_FLINK_PYTHON=its python")


class FlinkUnavailable(RuntimeError):
    """Flink cannot run here, or a run did not end: one line; the CLI exits 2. ``partial``: what was
    measured before (a :class:`~streamproof.on_flink.oracle.FlinkReport`, or None), kept by the CLI."""

    partial = None


@dataclass(frozen=True)
class RunSpec:
    """One run: ``fault`` ``(function id, kind, n)`` or None (failure-free)."""

    fault: tuple | None = None
    parallelism: int = 2
    checkpoint_interval: int = 200
    paced: bool = False  # the job's collections emit one record per completed checkpoint
    execution_mode: str = "process"  # PyFlink's python.execution-mode: process (Beam workers) or thread


@dataclass
class FlinkRun:
    """What one run on Flink committed: per sink (in the order the job makes them) the multiset of
    canonical values; ``error`` a failure Flink did not recover from (one line)."""

    spec: RunSpec
    sinks: list = field(default_factory=list)
    outputs: list = field(default_factory=list)  # per sink: Counter of canonical values
    functions: list = field(default_factory=list)
    calls: dict = field(default_factory=dict)    # (function id, kind) -> calls, all attempts
    injected: bool = False
    executed: bool = False
    error: str | None = None
    seconds: float = 0.0
    job_seconds: float | None = None


_PROBE = ("import importlib.metadata as m, os, pyflink, apache_beam, pemja, streamproof.on_flink.instrument\n"
          "lib = os.path.join(os.path.dirname(pyflink.__file__), 'lib')\n"
          "assert any(n.startswith('flink-dist') for n in os.listdir(lib)), 'no flink-dist jar in pyflink/lib'\n"
          "print(m.version('apache-flink'))")
_FOUND: dict = {}


def _candidates() -> list[str]:
    """Pythons that may hold PyFlink's runtime: ``STREAMPROOF_FLINK_PYTHON`` alone when set, else
    this one, then ``.venv-flink`` of the current folder and of streamproof's checkout."""
    given = os.environ.get("STREAMPROOF_FLINK_PYTHON")
    if given:
        return [given]
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    venvs = [os.path.join(os.getcwd(), ".venv-flink", "bin", "python"), os.path.join(here, ".venv-flink", "bin", "python")]
    return [sys.executable] + [v for v in dict.fromkeys(venvs) if os.path.exists(v)]


def flink_python() -> str:
    """The Python that runs Flink's client and its Python workers (:func:`check_available` finds it)."""
    return _FOUND.get("python") or check_available() and _FOUND["python"]


def check_available() -> str:
    """Apache Flink's version, or :class:`FlinkUnavailable` saying what is missing."""
    if "version" in _FOUND:
        return _FOUND["version"]
    java = shutil.which("java") or (os.path.join(os.environ["JAVA_HOME"], "bin", "java")
                                    if os.environ.get("JAVA_HOME") else None)
    if not java or not os.path.exists(java):
        raise FlinkUnavailable("no Java runtime: running on Apache Flink needs Java 11 or 17 (java on PATH or "
                               "JAVA_HOME; make flink-check installs openjdk-17 as root)")
    last = "?"
    for python in _candidates():
        try:
            done = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            last = f"{python}: {type(e).__name__}: {e}"
            continue
        if done.returncode == 0:
            _FOUND.update(python=python, version=done.stdout.strip())
            return _FOUND["version"]
        last = f"{python}: " + (done.stderr.strip().splitlines() or ["?"])[-1]
    raise FlinkUnavailable(f"PyFlink's runtime is not installed ({last}): {INSTALL_HINT}")


def _read_sink(folder: str) -> Counter:
    values: Counter = Counter()
    for path in glob.glob(os.path.join(folder, "**", "*"), recursive=True):
        if os.path.isfile(path) and not os.path.basename(path).startswith("."):
            with open(path, encoding="utf-8") as f:
                values.update(line.rstrip("\n") for line in f if line.strip())
    return values


def _last_error_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        if "Exception" in line or "Error" in line:
            return " ".join(line.split())[:300]
    return (lines[-1][:300] if lines else "no output")


class FlinkClient:
    """One Flink client process (one JVM, PyFlink imported once) serving batches of runs:
    ``with FlinkClient(job_dir) as client: client.run(job, specs)``. ``time_limit`` bounds each
    batch; over it, the client is killed and :class:`FlinkUnavailable` says how many runs ended."""

    def __init__(self, job_dir: str, time_limit: float = 300.0, keep: str | None = None):
        self.job_dir, self.time_limit, self.keep = os.path.abspath(job_dir), time_limit, keep
        self.process: subprocess.Popen | None = None
        self.batches = 0

    def __enter__(self) -> "FlinkClient":
        python = flink_python()
        self.work = self.keep or tempfile.mkdtemp(prefix="streamproof-flink-")
        os.makedirs(self.work, exist_ok=True)
        env = dict(os.environ)
        env["PATH"] = os.path.dirname(python) + os.pathsep + env.get("PATH", "")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (self.job_dir, env.get("PYTHONPATH")) if p)
        self.log_path = os.path.join(self.work, "client.log")
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen([python, "-m", "streamproof.on_flink.driver", "--serve"],
                                        stdin=subprocess.PIPE, stdout=self.log, stderr=subprocess.STDOUT, text=True,
                                        env=env, cwd=self.job_dir, start_new_session=True)
        return self

    def __exit__(self, *exc) -> None:
        self._stop(kill=exc[0] is not None)
        if self.keep is None:
            shutil.rmtree(self.work, ignore_errors=True)

    def _stop(self, kill: bool) -> int | None:
        if self.process is None:
            return None
        process, self.process = self.process, None
        if not kill:
            try:
                process.stdin.close()
                return process.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                pass
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        code = process.wait()
        self.log.close()
        return code

    def run(self, job: str, specs: list[RunSpec]) -> list[FlinkRun]:
        """Runs ``job`` once per spec; every run's result, or :class:`FlinkUnavailable`."""
        if self.process is None:
            raise FlinkUnavailable("the Flink client has stopped")
        base = os.path.join(self.work, f"batch-{self.batches}")
        self.batches += 1
        shutil.rmtree(base, ignore_errors=True)  # a kept folder used before
        os.makedirs(base)
        runs = []
        for k, spec in enumerate(specs):
            os.makedirs(os.path.join(base, f"run-{k}", "counts"))
            runs.append({"out": os.path.join(base, f"run-{k}", "out"),
                         "count_dir": os.path.join(base, f"run-{k}", "counts"),
                         "fault": list(spec.fault) if spec.fault else None, "parallelism": spec.parallelism,
                         "checkpoint_interval": spec.checkpoint_interval, "execution_mode": spec.execution_mode,
                         "paced": spec.paced})
        document = os.path.join(base, "runs.json")
        with open(document, "w") as f:
            json.dump({"job": os.path.abspath(job), "results": base, "runs": runs}, f)
        deadline = time.monotonic() + self.time_limit
        try:
            self.process.stdin.write(document + "\n")
            self.process.stdin.flush()
        except OSError:
            pass
        while not os.path.exists(document + ".done"):
            if self.process.poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        results = [_result(spec, runs[k], base, k) for k, spec in enumerate(specs)]
        done = [r for r in results if r is not None]
        if os.path.exists(document + ".done"):
            return done
        over = self.process.poll() is None
        code = self._stop(kill=True)
        if over:
            raise FlinkUnavailable(f"{os.path.basename(job)}: did not finish on Flink within {self.time_limit:.0f} s "
                                   f"({len(done)} of {len(specs)} runs done; raise --flink-time-limit)")
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            tail = _last_error_line(f.read())
        raise FlinkUnavailable(f"{os.path.basename(job)}: Flink failed to run the job (exit {code}): {tail}")


def run_job(job: str, specs: list[RunSpec], time_limit: float = 300.0, keep: str | None = None) -> list[FlinkRun]:
    """Run ``job`` (a PyFlink job file) once per spec in a client of its own (:class:`FlinkClient`)."""
    with FlinkClient(os.path.dirname(os.path.abspath(job)), time_limit, keep) as client:
        return client.run(job, specs)


def _result(spec: RunSpec, run: dict, work: str, k: int) -> FlinkRun | None:
    path = os.path.join(work, f"result-{k}.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        result = json.load(f)
    outputs = [_read_sink(os.path.join(run["out"], f"sink-{i}")) for i in range(len(result["sinks"]))]
    return FlinkRun(spec, result["sinks"], outputs, result["functions"], calls(run["count_dir"]),
                    injected(run["count_dir"]), result["executed"], result["error"], result["seconds"],
                    result.get("job_seconds"))

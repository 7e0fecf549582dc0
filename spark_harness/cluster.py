"""A real Spark standalone cluster on this machine, bound to 127.0.0.1 (tests, benchmark).

``LocalStandalone(workers=2).start()`` runs ``spark-class org.apache.spark.deploy.master.Master``
and ``...deploy.worker.Worker`` processes from the pip-installed pyspark (each ``spark-class``
execs its JVM, so the process we start is the daemon), waits until every worker has registered,
and ``stop()`` ends exactly those processes by their PIDs (TERM, then KILL after a grace time).
Logs go to ``work_dir``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from streamproof.spark_harness.session import CONF_DIR, JVM_OPTIONS, LOOPBACK, check_java


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def spark_home() -> Path:
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    if not (home / "bin" / "spark-class").exists():
        raise FileNotFoundError(f"no bin/spark-class in {home}")
    return home


class LocalStandalone:
    def __init__(self, workers: int = 2, cores: int = 1, memory: str = "2g", work_dir: str | None = None):
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.work_dir = Path(work_dir or tempfile.mkdtemp(prefix="streamproof-standalone-"))
        self.port = free_port()
        self.ui_port = free_port()
        self.processes: list[subprocess.Popen] = []

    @property
    def master_url(self) -> str:
        return f"spark://{LOOPBACK}:{self.port}"

    def _env(self) -> dict:
        env = dict(os.environ)
        env.update({
            "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": LOOPBACK, "SPARK_MASTER_HOST": LOOPBACK,
            "SPARK_CONF_DIR": os.environ.get("SPARK_CONF_DIR", str(CONF_DIR)),
            "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
            "SPARK_WORKER_DIR": str(self.work_dir / "work"), "SPARK_LOG_DIR": str(self.work_dir / "logs"),
            "SPARK_NO_DAEMONIZE": "1",
            "SPARK_DAEMON_JAVA_OPTS": (os.environ.get("SPARK_DAEMON_JAVA_OPTS", "") + " " + JVM_OPTIONS).strip(),
            "SPARK_MASTER_OPTS": (os.environ.get("SPARK_MASTER_OPTS", "") + " -Dspark.master.rest.enabled=false").strip(),
        })
        return env

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen:
        log = open(self.work_dir / f"{name}.log", "ab")
        proc = subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], env=self._env(),
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        log.close()
        self.processes.append(proc)
        return proc

    def start(self, timeout: float = 120.0) -> LocalStandalone:
        check_java()
        (self.work_dir / "work").mkdir(parents=True, exist_ok=True)
        self._spawn("master", ["org.apache.spark.deploy.master.Master", "--host", LOOPBACK,
                               "--port", str(self.port), "--webui-port", str(self.ui_port)])
        for i in range(self.workers):
            self._spawn(f"worker-{i}", ["org.apache.spark.deploy.worker.Worker", "--host", LOOPBACK,
                                        "--cores", str(self.cores), "--memory", self.memory,
                                        "--webui-port", str(free_port()),
                                        "--work-dir", str(self.work_dir / "work"), self.master_url])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for proc in self.processes:
                if proc.poll() is not None:
                    self.stop()
                    raise RuntimeError(f"a standalone daemon exited with {proc.returncode}; logs in {self.work_dir}")
            if self.alive_workers() >= self.workers:
                return self
            time.sleep(0.5)
        self.stop()
        raise TimeoutError(f"{self.workers} workers did not register within {timeout:.0f} s; logs in {self.work_dir}")

    def state(self) -> dict:
        with urllib.request.urlopen(f"http://{LOOPBACK}:{self.ui_port}/json/", timeout=5) as r:
            return json.loads(r.read().decode())

    def alive_workers(self) -> int:
        try:
            return int(self.state().get("aliveworkers", 0))
        except Exception:  # noqa: BLE001 - not up yet
            return 0

    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    def stop(self, grace: float = 15.0) -> None:
        """Stops the daemons this object started, by PID (workers first)."""
        for proc in reversed(self.processes):
            if proc.poll() is None:
                try:
                    os.kill(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for proc in reversed(self.processes):
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(5)
        self.processes.clear()

    def __enter__(self) -> LocalStandalone:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class LocalConnectServer:
    """A Spark Connect server on 127.0.0.1 (``spark-submit --class ...SparkConnectServer``),
    running its work on ``master`` (e.g. a :class:`LocalStandalone`); ``url`` is its ``sc://``."""

    CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"

    def __init__(self, master: str = "local[2]", work_dir: str | None = None):
        self.master = master
        self.work_dir = Path(work_dir or tempfile.mkdtemp(prefix="streamproof-connect-"))
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"sc://{LOOPBACK}:{self.port}"

    def start(self, timeout: float = 180.0) -> LocalConnectServer:
        check_java()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        python = os.environ.get("PYSPARK_PYTHON", sys.executable)
        conf = {
            "spark.connect.grpc.binding.address": LOOPBACK, "spark.connect.grpc.binding.port": str(self.port),
            "spark.ui.enabled": "false", "spark.driver.bindAddress": LOOPBACK, "spark.driver.host": LOOPBACK,
            "spark.pyspark.python": python, "spark.sql.shuffle.partitions": "8",
            "spark.driver.extraJavaOptions": JVM_OPTIONS, "spark.executor.extraJavaOptions": JVM_OPTIONS,
        }
        args = [str(spark_home() / "bin" / "spark-submit"), "--class", self.CLASS, "--master", self.master,
                "--name", "streamproof-connect"]
        for key, value in conf.items():
            args += ["--conf", f"{key}={value}"]
        env = dict(os.environ, SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP=LOOPBACK, PYSPARK_PYTHON=python,
                   SPARK_CONF_DIR=os.environ.get("SPARK_CONF_DIR", str(CONF_DIR)))
        log = open(self.work_dir / "connect-server.log", "ab")
        self.process = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the Connect server exited with {self.process.returncode}; "
                                   f"log: {self.work_dir / 'connect-server.log'}")
            with socket.socket() as s:
                s.settimeout(1)
                if s.connect_ex((LOOPBACK, self.port)) == 0:
                    return self
            time.sleep(0.5)
        self.stop()
        raise TimeoutError(f"the Connect server did not listen within {timeout:.0f} s")

    def stop(self, grace: float = 20.0) -> None:
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(5)

    def __enter__(self) -> LocalConnectServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

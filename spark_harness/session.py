"""Spark sessions for campaigns: one ``--master`` argument picks the target.

=======================  ==================================================================
``local[*]``, ``local[n]``  embedded Spark in this process (the default); ``--api connect``
                            runs it behind an in-process Spark Connect server instead
``spark://host:port``       a standalone cluster
``yarn``, ``k8s://…``       YARN or Kubernetes (the usual Spark configuration applies)
``sc://host:port``          a Spark Connect server (no JVM here)
=======================  ==================================================================

Local runs (``local``, and clusters or Connect servers on a loopback address) bind to 127.0.0.1
only: ``SPARK_LOCAL_IP``, ``spark.driver.bindAddress``, ``spark.driver.host`` and the Connect
binding address are set, and the UI is off everywhere. They are quiet: ``SPARK_CONF_DIR`` points
at the shipped ``conf/`` (log4j2 at error) unless set, console progress is off, and the JVM's own
output goes to a log file when one is given.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

LOOPBACK = "127.0.0.1"
CONF_DIR = Path(__file__).resolve().parent / "conf"
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}
# The JVMs of a campaign only orchestrate (the work is Python): C1 only and the serial collector
# halve the CPU they take from the Python workers on a small machine (measured: startup 13 -> 7
# CPU seconds, a steady wave of 15 tasks 2.0 -> 0.9).
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
MASTER_FORMS = "local[*], local[N], spark://HOST:PORT, yarn, k8s://HOST:PORT or sc://HOST:PORT"


class SparkSetupError(RuntimeError):
    """Spark cannot start here (no Java, a malformed master URL, ...): a one-line message."""


@dataclass(frozen=True)
class Target:
    master: str
    kind: str            # local | standalone | yarn | k8s | connect
    loopback: bool       # everything runs on this machine: bind to 127.0.0.1
    cores: int | None    # known cores (local[n]), else None

    @property
    def needs_jvm(self) -> bool:
        return self.kind != "connect"


_LOCAL = re.compile(r"^local(?:\[(\*|\d+)(?:\s*,\s*(\d+))?\])?$")


def parse_master(master: str) -> Target:
    master = (master or "").strip()
    m = _LOCAL.match(master)
    if m:
        n = m.group(1)
        cores = 1 if n is None else (os.cpu_count() or 1) if n == "*" else int(n)
        if cores < 1:
            raise SparkSetupError(f"bad master URL {master!r}: local needs at least one core")
        return Target(master, "local", True, cores)
    if master.startswith("spark://"):
        hosts = [h.rsplit(":", 1)[0] for h in master[len("spark://"):].split(",")]
        if not all(hosts) or not all(":" in h for h in master[len("spark://"):].split(",")):
            raise SparkSetupError(f"bad master URL {master!r}: expected spark://HOST:PORT")
        return Target(master, "standalone", all(h in LOOPBACK_HOSTS for h in hosts), None)
    if master == "yarn":
        return Target(master, "yarn", False, None)
    if master.startswith("k8s://") and len(master) > len("k8s://"):
        return Target(master, "k8s", False, None)
    if master.startswith("sc://") and len(master) > len("sc://"):
        host = re.split(r"[:/]", master[len("sc://"):], maxsplit=1)[0]
        return Target(master, "connect", host in LOOPBACK_HOSTS, None)
    raise SparkSetupError(f"unknown master URL {master!r}; expected {MASTER_FORMS}")


# ------------------------------------------------------------------------------------- Java

def find_java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    return shutil.which("java")


def check_java() -> str:
    """The java executable (17 or newer), or SparkSetupError with one clear line."""
    java = find_java()
    if java is None:
        raise SparkSetupError(
            "java not found: Spark needs a Java 17+ runtime (apt-get install -y "
            "openjdk-17-jre-headless, or set JAVA_HOME); `make run` installs it when run as root")
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SparkSetupError(f"java at {java} does not run: {e}") from None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if m:
        major = int(m.group(1)) if m.group(1) != "1" else int(m.group(2) or 0)
        if major < 17:
            raise SparkSetupError(f"java at {java} is version {major}: Spark 4 needs Java 17 or newer")
    return java


# ------------------------------------------------------------------------------ environment

def prepare_environment(target: Target) -> None:
    """Environment variables read when the JVM and the Python workers start (before any
    session exists in this process)."""
    os.environ.setdefault("SPARK_CONF_DIR", str(CONF_DIR))
    if target.loopback:
        os.environ["SPARK_LOCAL_IP"] = LOOPBACK
        # the executors of a loopback cluster run on this machine: same interpreter and packages
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")


def session_conf(target: Target, app_name: str, shuffle_partitions: int, extra: dict | None = None) -> dict:
    conf = {
        "spark.app.name": app_name,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
    }
    if target.loopback and target.kind != "connect":
        conf.update({
            "spark.driver.bindAddress": LOOPBACK,
            "spark.driver.host": LOOPBACK,
            "spark.connect.grpc.binding.address": LOOPBACK,
            "spark.pyspark.python": os.environ.get("PYSPARK_PYTHON", sys.executable),
        })
    if target.kind == "local":
        # list a campaign's chunk directories in the driver: above 32 paths Spark lists them with a
        # job of one task per path, ~0.3 s of the read-back at 50 chunks on 2 cores
        conf["spark.sql.sources.parallelPartitionDiscovery.threshold"] = "100000"
    extra = dict(extra or {})
    for side in ("driver", "executor"):  # ours first, so that the user's flags win
        key = f"spark.{side}.extraJavaOptions"
        conf[key] = " ".join(filter(None, [JVM_OPTIONS, extra.pop(key, "")]))
    conf.update(extra)
    return conf


@contextlib.contextmanager
def _stderr_to(path: str | os.PathLike | None):
    """Sends this process's fds 1 and 2 to ``path`` while the JVM starts, so that the JVM (which
    keeps the descriptors) writes its own output there; this process's are restored after."""
    if path is None:
        yield
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for d in saved:
            os.close(d)


def start_session(master: str = "local[*]", api: str = "classic", app_name: str = "streamproof",
                  conf: dict | None = None, log_path: str | os.PathLike | None = None,
                  shuffle_partitions: int | None = None):
    """A SparkSession for ``master``; ``api`` ``connect`` runs local and standalone masters behind
    an in-process Spark Connect server (``sc://`` is always Connect)."""
    target = parse_master(master)
    if api not in ("classic", "connect"):
        raise SparkSetupError(f"unknown API {api!r}; expected classic or connect")
    if target.needs_jvm:
        check_java()
    prepare_environment(target)
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        raise SparkSetupError(f"pyspark is not installed ({e}): pip install 'streamproof[spark]'") from None
    options = session_conf(target, app_name, shuffle_partitions or max(4, 2 * (target.cores or 4)), conf)
    builder = SparkSession.builder
    if target.kind == "connect":
        builder = builder.remote(master)
        options = {k: v for k, v in options.items() if k.startswith("spark.sql.")}
    else:
        builder = builder.master(master)
    for key, value in options.items():
        builder = builder.config(key, value)
    with warnings.catch_warnings(), _stderr_to(log_path if target.needs_jvm else None):
        # Connect re-applies every option on its session and warns about the static ones
        warnings.simplefilter("ignore")
        try:
            spark = _embedded_connect(master, options) if api == "connect" and target.kind != "connect" \
                else builder.getOrCreate()
        except Exception as e:  # noqa: BLE001 - one line for the CLI
            where = f" (JVM output: {log_path})" if log_path and target.needs_jvm else ""
            raise SparkSetupError(f"cannot start Spark for {master}: {_first_line(e)}{where}") from None
    return spark


def _embedded_connect(master: str, options: dict):
    """A Spark Connect session on a server started in this process on a free loopback port.
    PySpark's own ``spark.api.mode=connect`` binds and dials the fixed port 15002, so two
    campaigns on one machine collide (the second one's client talks to the first's server)."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession
    from pyspark.sql.session import SparkSession

    opts = dict(options, **{"spark.connect.grpc.binding.port": "0"})
    os.environ["SPARK_LOCAL_REMOTE"] = "1"  # stop() then stops the server's session too
    ConnectSession._start_connect_server(master, opts)
    jvm = SparkSession._instantiatedSession._jvm
    service = getattr(getattr(jvm, "org.apache.spark.sql.connect.service.SparkConnectService$"), "MODULE$")
    port = service.localPort()
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    # sc://localhost: PySpark sends the session token without TLS to localhost only
    return ConnectSession.builder.remote(f"sc://localhost:{port}").config(map=opts).getOrCreate()


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__)[:300]


def is_connect(spark) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")


def stop_session(spark) -> None:
    with contextlib.suppress(Exception):
        spark.stop()


def cluster_cores(spark, target: Target) -> int:
    """Cores the campaign can use: local[n] -> n; classic clusters -> the default parallelism
    (the registered executors' cores); otherwise ``spark.default.parallelism`` or 4."""
    if target.cores:
        return target.cores
    if not is_connect(spark):
        with contextlib.suppress(Exception):
            return max(1, int(spark.sparkContext.defaultParallelism))
    with contextlib.suppress(Exception):
        return max(1, int(spark.conf.get("spark.default.parallelism")))
    return 4

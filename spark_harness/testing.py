"""Helpers for the Spark tests (tests/test_spark_*.py): Java present, processes and the sockets
they listen on, and running the ``streamproof campaign`` command in a subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from streamproof.spark_harness.session import SparkSetupError, check_java


def java_problem() -> str | None:
    """None when a Java 17+ runtime is here, else the one-line reason (tests fail with it)."""
    try:
        check_java()
    except SparkSetupError as e:
        return f"{e} (the Spark tests need it: `make test` installs it when run as root)"
    return None


def children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        for child in children(todo.pop()):
            found.append(child)
            todo.append(child)
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        pass
    return inodes


def _address(hex_addr: str) -> str:
    ip, port = hex_addr.split(":")
    raw = bytes.fromhex(ip)
    if len(raw) == 4:
        return f"{'.'.join(str(b) for b in raw[::-1])}:{int(port, 16)}"
    words = [raw[i:i + 4][::-1] for i in range(0, 16, 4)]
    data = b"".join(words)
    if data[:12] == b"\0" * 10 + b"\xff\xff":
        return f"{'.'.join(str(b) for b in data[12:])}:{int(port, 16)}"
    return f"[{data.hex()}]:{int(port, 16)}"


def listening(pids: list[int]) -> list[str]:
    """``ip:port`` of every TCP socket in LISTEN state owned by one of ``pids``."""
    inodes = set().union(*(_socket_inodes(p) for p in pids)) if pids else set()
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if parts[3] == "0A" and parts[9] in inodes:  # 0A = LISTEN
                out.append(_address(parts[1]))
    return sorted(out)


def streamproof(*args: str, cwd: str | os.PathLike | None = None, timeout: float = 1800,
                env: dict | None = None) -> subprocess.CompletedProcess:
    """Runs ``python -m streamproof ARGS`` with this interpreter."""
    return subprocess.run([sys.executable, "-m", "streamproof", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout, env=env)


def start_streamproof(*args: str, cwd=None, log=None) -> subprocess.Popen:
    """The same in the background, in its own process group (so it can be killed with its JVM)."""
    return subprocess.Popen([sys.executable, "-m", "streamproof", *map(str, args)], cwd=cwd,
                            stdout=log or subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL to the process group of a process started by :func:`start_streamproof`."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(30)


def summary(result: subprocess.CompletedProcess) -> dict:
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise AssertionError(f"no JSON summary (exit {result.returncode}):\n{result.stdout}\n{result.stderr}")
    return json.loads(lines[-1])


def deterministic_rows(results_dir: str | os.PathLike, campaign: str) -> dict:
    """(property, seed) -> the deterministic columns, read back with pyarrow."""
    from streamproof.spark_harness.report import read_rows
    from streamproof.spark_harness.spec import DETERMINISTIC_COLUMNS

    df = read_rows(results_dir, campaign)
    rows = {}
    for record in df[list(DETERMINISTIC_COLUMNS)].to_dict("records"):
        key = (record["property"], int(record["seed"]))
        if key in rows:
            raise AssertionError(f"seed {key} twice in {results_dir}")
        rows[key] = tuple(None if v != v else v for v in record.values())  # NaN -> None
    return rows


def committed_chunks(results_dir: str | os.PathLike, campaign: str) -> int:
    """How many chunks of ``campaign`` are committed in ``results_dir``."""
    return len(list(Path(results_dir, f"campaign={campaign}").glob("property=*/chunk=*")))


def wait_for(predicate, timeout: float, what: str) -> None:
    """Polls ``predicate`` every 0.2 s until it holds; AssertionError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")

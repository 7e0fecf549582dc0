"""The same ``streamproof campaign`` command against every target this machine can run, on
loopback only: embedded classic (local[2]), embedded Spark Connect (``--api connect``), a real
standalone cluster started here (a master and two workers on 127.0.0.1, stopped by PID), and a
Spark Connect server (``sc://``) running on that cluster. The results match seed for seed."""

from __future__ import annotations

import contextlib
import socket

import pytest

from streamproof.spark_harness import testing
from streamproof.spark_harness.cluster import LocalConnectServer, LocalStandalone

pytestmark = pytest.mark.timeout(1200)
COMMAND = ["campaign", "timers", "mailbox", "--seeds", "0:6", "--examples", "3", "--campaign", "same",
           "--json", "--no-report"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    problem = testing.java_problem()
    if problem:
        pytest.fail(problem)
    c = LocalStandalone(workers=2, cores=1, memory="1g", work_dir=str(tmp_path_factory.mktemp("standalone")))
    c.start()
    pids = c.pids()
    yield c
    c.stop()
    assert not [p for p in pids if testing.cmdline(p)], "a standalone daemon outlived stop()"


@pytest.fixture(scope="module")
def outputs():
    return {}


def campaign(master: str, out, outputs: dict, *extra: str) -> dict:
    result = testing.streamproof(*COMMAND, "--master", master, "--out", out, *extra, cwd=out)
    assert result.returncode == 0, f"{master}: exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    lines = result.stderr.strip().splitlines()
    assert any("waves committed" in line for line in lines), result.stderr
    assert all(line.startswith("same: ") for line in lines), result.stderr  # quiet: progress lines and nothing else
    assert any(line.startswith("same: 6 seeds x 2 properties: 12 runs") for line in lines), result.stderr
    summary = testing.summary(result)
    assert summary["holds"] and summary["verified"]
    rows = testing.deterministic_rows(out, "same")
    assert len(rows) == 12
    outputs[master + " ".join(extra)] = rows
    return summary


def test_embedded_classic(tmp_path, outputs):
    problem = testing.java_problem()
    if problem:
        pytest.fail(problem)
    summary = campaign("local[2]", tmp_path, outputs)
    assert summary["run"]["api"] == "classic" and summary["run"]["cores"] == 2


def test_embedded_connect(tmp_path, outputs):
    # another campaign's server on PySpark's fixed port 15002 (a second ``make test`` beside this
    # one): the embedded server takes a free port and the client dials that one
    with socket.socket() as other:
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        with contextlib.suppress(OSError):  # already taken: by another run, which is the point
            other.bind(("127.0.0.1", 15002))
            other.listen()
        summary = campaign("local[2]", tmp_path, outputs, "--api", "connect")
    assert summary["run"]["api"] == "connect"


def test_standalone_cluster_with_two_workers(cluster, tmp_path, outputs):
    assert cluster.alive_workers() == 2
    summary = campaign(cluster.master_url, tmp_path, outputs)
    assert summary["run"]["master"].startswith("spark://127.0.0.1:")
    listening = testing.listening([p for pid in cluster.pids() for p in (pid, *testing.descendants(pid))])
    assert listening and all(s.startswith("127.0.0.1:") for s in listening), listening


def test_spark_connect_server_on_the_cluster(cluster, tmp_path, outputs):
    server_dir, results = tmp_path / "server", tmp_path / "results"
    results.mkdir()
    server = LocalConnectServer(cluster.master_url, work_dir=str(server_dir))
    server.start()
    try:
        summary = campaign(server.url, results, outputs)  # results apart from the server's files
        assert summary["run"]["api"] == "connect"
        listening = testing.listening([server.process.pid, *testing.descendants(server.process.pid)])
        assert all(s.startswith("127.0.0.1:") for s in listening), listening
    finally:
        server.stop()


def test_every_target_gave_the_same_rows(outputs):
    assert len(outputs) == 4, f"targets run: {sorted(outputs)}"
    reference = outputs["local[2]"]
    for target, rows in outputs.items():
        assert rows == reference, f"{target} differs from local[2]"

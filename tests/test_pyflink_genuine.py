"""A genuine PyFlink operator (it imports ``pyflink``, unmodified) is certified as it is, when
apache-flink is installed (``make test`` installs its Python API: ``pip install --no-deps
apache-flink``)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent / "pyflink_genuine"
STREAMPROOF = Path(sys.executable).parent / "streamproof"


@pytest.fixture(scope="module", autouse=True)
def pyflink_installed():
    if importlib.util.find_spec("pyflink") is None:
        pytest.fail("apache-flink is not installed: `make test` installs it (pip install --no-deps "
                    "'apache-flink==2.3.0'); this test certifies an unmodified PyFlink operator")


def test_an_unmodified_pyflink_operator_is_certified(tmp_path):
    proc = subprocess.run([str(STREAMPROOF), "certify", "genuine_ops:CountWithTimeoutFunction", "--examples", "60",
                           "--out", str(tmp_path / "cert")], cwd=HERE, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "certified" in proc.stdout
    from pyflink.datastream import KeyedProcessFunction  # the class really is pyflink's

    sys.path.insert(0, str(HERE))
    try:
        import genuine_ops
        assert issubclass(genuine_ops.CountWithTimeoutFunction, KeyedProcessFunction)
    finally:
        sys.path.remove(str(HERE))


def test_the_same_operator_with_only_its_imports_changed_gives_the_same_verdicts(tmp_path):
    source = (HERE / "genuine_ops.py").read_text().replace("from pyflink.", "from streamproof.flink.")
    (tmp_path / "ported_ops.py").write_text(source)
    proc = subprocess.run([str(STREAMPROOF), "certify", "ported_ops:CountWithTimeoutFunction", "--examples", "60",
                           "--out", str(tmp_path / "cert")], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "certified" in proc.stdout, proc.stdout + proc.stderr

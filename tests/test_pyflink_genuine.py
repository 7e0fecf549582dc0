"""A genuine PyFlink operator (it imports ``pyflink``, unmodified) is certified as it is, when
apache-flink is installed (``make test`` installs its Python API: ``pip install --no-deps
apache-flink``)."""

from __future__ import annotations

import importlib.util
import json
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


def _verdicts(cert_dir: Path) -> dict:
    doc = json.loads((cert_dir / "certificate.json").read_text())
    return {r["property"]: (r["verdict"], r["invariant"]) for r in doc["results"]}


def test_an_unmodified_pyflink_operator_is_certified(tmp_path):
    """The docs' CountWithTimeoutFunction, genuine pyflink imports: exactly-once under faults, and
    refused for interruptible timers (a record of a key processed between the parts of a split
    firing makes that key's due timer outdated: its (key, count) is never emitted)."""
    proc = subprocess.run([str(STREAMPROOF), "certify", "genuine_ops:CountWithTimeoutFunction", "--examples", "60",
                           "--out", str(tmp_path / "cert")], cwd=HERE, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert _verdicts(tmp_path / "cert") == {
        "certify.same-output": ("held", None), "certify.interruptible-timers": ("failed", "same-output-with-split-firings"),
        "certify.watermarks": ("held", None), "certify.end-of-input": ("held", None)}, proc.stdout
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
    runs = {}
    for name, module, cwd in (("genuine", "genuine_ops", HERE), ("ported", "ported_ops", tmp_path)):
        proc = subprocess.run([str(STREAMPROOF), "certify", f"{module}:CountWithTimeoutFunction", "--examples", "60",
                               "--out", str(tmp_path / name)], cwd=cwd, capture_output=True, text=True, timeout=300)
        assert proc.returncode in (0, 1), proc.stdout + proc.stderr
        runs[name] = _verdicts(tmp_path / name)
    assert runs["genuine"] == runs["ported"]

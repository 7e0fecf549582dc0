"""Without the Spark extra, ``streamproof report`` and ``streamproof campaign`` say which extra to
install in one line (exit 2), never a ModuleNotFoundError traceback. The missing module is
simulated in a subprocess (``sys.modules[name] = None`` makes its import fail)."""

from __future__ import annotations

import subprocess
import sys

import pytest

CODE = ("import sys; sys.modules[sys.argv[1]] = None; from streamproof.cli import main; "
        "sys.argv = ['streamproof', *sys.argv[2:]]; main()")


def streamproof_without(module: str, *args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CODE, module, *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


@pytest.mark.parametrize("module", ["pyarrow", "pandas", "matplotlib"])
def test_report_without_the_spark_extra_names_it(tmp_path, module):
    (tmp_path / "results").mkdir()
    out = streamproof_without(module, "report", tmp_path / "results", cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith(f"streamproof: error: streamproof report needs the Spark extra: {module} ")
    assert "pip install 'streamproof[spark]'" in out.stderr


def test_campaign_without_pyarrow_names_the_extra(tmp_path):
    out = streamproof_without("pyarrow", "campaign", "timers", "--seeds", "2", "--out", tmp_path / "r", cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1, out.stderr
    assert "needs the Spark extra: pyarrow" in out.stderr and "streamproof[spark]" in out.stderr


def test_prove_without_z3_names_the_extra(tmp_path):
    out = streamproof_without("z3", "prove", "flush", cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith("streamproof: error: streamproof prove needs the z3 extra: z3 ")
    assert "pip install 'streamproof[prove]'" in out.stderr

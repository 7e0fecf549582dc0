"""CI guards: a hanging test fails instead of stalling `make test` (issue 18, item 1)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_test_runs_under_a_per_test_timeout():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert 60 <= int(options["timeout"]) <= 600  # long enough for a loaded machine, short of CI's budget
    assert options["timeout_method"] == "thread"  # SIGALRM stays free for the callback time limit under test


def test_a_test_that_spins_forever_fails_with_a_timeout(tmp_path):
    (tmp_path / "test_spin.py").write_text("def test_spins():\n    while True:\n        pass\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\ntimeout = 2\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 1 and "Timeout" in done.stdout and "1 failed" in done.stdout

"""The README's quick tour, run as a user runs it (the `streamproof` command in a shell, from the
repository root; here in a scratch directory with the paths resolved from the root): the quick lines (replay, prove, certify) must exit 0; the long explorations are
covered by the property tests."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
QUICK = ("streamproof replay", "streamproof prove", "streamproof certify")


def tour_lines() -> list[str]:
    block = re.search(r"## A quick tour\n\n```bash\n(.*?)```", (REPO / "README.md").read_text(), re.S).group(1)
    lines = [" ".join(shlex.split(line, comments=True)) for line in block.splitlines()]
    return [line for line in lines if line.startswith(QUICK)]


def test_the_tour_has_its_quick_lines():
    assert {line.split()[1] for line in tour_lines()} == {"replay", "prove", "certify"}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("line", tour_lines(), ids=lambda line: " ".join(line.split()[:3]))
def test_tour_line(line, tmp_path):
    command = Path(sys.executable).parent / "streamproof"
    args = shlex.split(line)[1:]
    # paths as from the repository root; run in a scratch directory (certify writes its certificate there)
    args = [str(p) for a in args for p in (sorted(REPO.glob(a)) if "*" in a else [REPO / a] if (REPO / a).exists()
                                           else [a])]
    result = subprocess.run([str(command), *args], cwd=tmp_path, capture_output=True, text=True, timeout=280,
                            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert result.returncode == 0, f"{line}: exit {result.returncode}\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"

"""Where every command writes by default: one folder, ``streamproof-out/``, a sub-folder per
command (``--out`` chooses another). ``.gitignore`` one line covers them all."""

from __future__ import annotations

from pathlib import Path

ROOT = Path("streamproof-out")


def default(command: str) -> Path:
    """``streamproof-out/COMMAND``: check (failing scenarios), certify (the certificate and its
    counterexamples), prove and conform (counterexamples), campaign (results; the report in its
    ``_report/``)."""
    return ROOT / command


def prepare(out: str | Path) -> None:
    """Creates ``streamproof-out/`` when ``out`` is inside it (any other ``--out`` is the user's
    to make: its parent must exist)."""
    path = Path(out)
    if path.parent == ROOT and not ROOT.exists():
        ROOT.mkdir(exist_ok=True)

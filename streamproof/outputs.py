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

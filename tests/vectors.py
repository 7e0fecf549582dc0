"""Where the Flink ground-truth vectors live. The traces (timers, mailbox, valve) are the project's
own, regenerated from Flink's classes by ``make vectors`` (streamproof/conformance/vectors/);
``$STREAMPROOF_VECTORS`` overrides that. The key-group vectors and the public originals of the
traces are read from ``../shared/vectors`` beside the repository (tests/test_conformance_vectors.py
checks the project's traces against them). Missing vectors fail the tests that need them (never a
skip)."""

from __future__ import annotations

import json
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "vectors"
PROJECT = REPO / "streamproof" / "conformance" / "vectors"
VECTORS = Path(os.environ.get("STREAMPROOF_VECTORS", PROJECT))


def load(name: str) -> dict:
    path = VECTORS / name if (VECTORS / name).is_file() else SHARED / name
    if not path.is_file():
        raise FileNotFoundError(f"Flink vectors not found at {path}: set STREAMPROOF_VECTORS")
    return json.loads(path.read_text(encoding="utf-8"))


def load_shared(name: str) -> dict:
    path = SHARED / name
    if not path.is_file():
        raise FileNotFoundError(f"public Flink vectors not found at {path}")
    return json.loads(path.read_text(encoding="utf-8"))

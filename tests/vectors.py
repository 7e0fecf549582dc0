"""Where the Flink ground-truth vectors live: ``$STREAMPROOF_VECTORS``, else ``../shared/vectors``
beside the repository. Missing vectors fail the tests that need them (never a skip)."""

from __future__ import annotations

import json
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VECTORS = Path(os.environ.get("STREAMPROOF_VECTORS", REPO.parent / "shared" / "vectors"))


def load(name: str) -> dict:
    path = VECTORS / name
    if not path.is_file():
        raise FileNotFoundError(f"Flink vectors not found at {path}: set STREAMPROOF_VECTORS")
    return json.loads(path.read_text(encoding="utf-8"))

"""Writing result files whole or not at all: certificates, counterexamples and reports are read
by people and CI after runs that may be killed, so each is written to a temporary file in the
same directory and renamed over its path."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: Path, data: str | bytes) -> None:
    """Writes ``data`` (text as UTF-8) to ``path``: an interrupted run leaves the old file or the
    new one, never half of one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if isinstance(data, bytes):
            tmp.write_bytes(data)
        else:
            tmp.write_text(data, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()

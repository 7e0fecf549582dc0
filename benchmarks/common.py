"""What the benchmarks' command lines share."""

from __future__ import annotations

import argparse


def sizes_parser(minimum: int = 1):
    """An argparse ``type`` for ``--sizes``: comma-separated integers (``_`` allowed), each at least ``minimum``."""
    def parse(text: str) -> list[int]:
        try:
            sizes = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"--sizes needs comma-separated integers, got {text!r}") from None
        if not sizes or any(s < minimum for s in sizes):
            raise argparse.ArgumentTypeError(f"--sizes needs integers >= {minimum}, got {text!r}")
        return sizes
    return parse

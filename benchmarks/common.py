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


def format_table(rows: list, columns: list[tuple[str, str, str]]) -> str:
    """Rows (objects) as a right-aligned text table; ``columns``: (title, attribute, format)."""
    cells = [[fmt.format(getattr(row, attr)) for _, attr, fmt in columns] for row in rows]
    widths = [max(len(title), *(len(c[i]) for c in cells)) for i, (title, _, _) in enumerate(columns)]
    lines = ["  ".join(title.rjust(wd) for (title, _, _), wd in zip(columns, widths))]
    lines.append("  ".join("-" * wd for wd in widths))
    lines += ["  ".join(c.rjust(wd) for c, wd in zip(cell, widths)) for cell in cells]
    return "\n".join(lines)

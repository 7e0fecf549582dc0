"""The specification: the counter's value is the sum of the adds since the start, minus those
after the last checkpoint that a restore rolled back. Written as a history, not as a counter."""

from __future__ import annotations


class CounterSpec:
    def __init__(self) -> None:
        self.committed: list[int] = []   # adds covered by the last checkpoint
        self.pending: list[int] = []     # adds since the last checkpoint

    def add(self, n: int) -> None:
        self.pending.append(n)

    def checkpoint(self) -> None:
        self.committed += self.pending
        self.pending = []

    def restore(self) -> None:
        self.pending = []

    def read(self) -> int:
        return sum(self.committed) + sum(self.pending)

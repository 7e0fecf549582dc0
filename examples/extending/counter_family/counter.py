"""The component under test: a counter that checkpoints its value and is restored after a failure."""

from __future__ import annotations


class CheckpointedCounter:
    def __init__(self) -> None:
        self.value = 0
        self._checkpoint = 0

    def add(self, n: int) -> None:
        self.value += n

    def checkpoint(self) -> None:
        self._checkpoint = self.value

    def restore(self) -> None:
        """After a failure: back to the last checkpoint (the source replays what came after it)."""
        self.value = self._checkpoint

    def read(self) -> int:
        return self.value

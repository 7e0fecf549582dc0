"""Specification of broadcast state (Flink's ``BroadcastState``: operator state in BROADCAST mode)
across checkpoints, restores and rescales, for one broadcast-state operator.

State: per subtask its own copy, a map. Actions:
  R1 ``put(key, value)`` of a broadcast element: every subtask applies it to its copy (a broadcast
     element reaches every subtask); ``put(key, value, subtask)``: only that subtask's copy (what a
     function that writes subtask-specific data does: the copies then differ);
  R2 ``checkpoint(id)``: every subtask's copy is written, each its own;
  R3 ``restore(id, parallelism)``: new subtask i reads old subtask ``i % old parallelism``'s copy
     (``RoundRobinOperatorStateRepartitioner.repartitionBroadcastState``: its own at the same or a
     lower parallelism, old copies round robin beyond the old parallelism).
"""

from __future__ import annotations


class BroadcastStateSpec:
    def __init__(self, parallelism: int):
        self.copies: list[dict] = [{} for _ in range(parallelism)]
        self.checkpoints: dict[str, list[dict]] = {}

    def put(self, key, value, subtask: int | None = None) -> None:
        for i, copy in enumerate(self.copies):
            if subtask is None or subtask == i:
                copy[key] = value

    def checkpoint(self, checkpoint_id: str) -> None:
        self.checkpoints[checkpoint_id] = [dict(copy) for copy in self.copies]

    def restore(self, checkpoint_id: str, parallelism: int) -> None:
        old = self.checkpoints[checkpoint_id]
        self.copies = [dict(old[i % len(old)]) for i in range(parallelism)]

"""A two-phase-commit sink (Flink's ``TwoPhaseCommitSinkFunction``) and its external system.

Records go into the current transaction; a checkpoint pre-commits it (kept in the checkpoint);
the checkpoint's completion commits it. On restore the pre-committed transactions of the
restored checkpoint are committed (they belong to a completed checkpoint) and everything else
is aborted. The external system makes commits idempotent by transaction id, as Kafka does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ExternalSystem:
    """Committed transactions, by id; what a consumer reading committed data sees."""

    committed: dict = field(default_factory=dict)  # txn id -> tuple of records
    commit_order: list = field(default_factory=list)

    def commit(self, txn_id: tuple, records: tuple) -> None:
        if txn_id not in self.committed:
            self.committed[txn_id] = records
            self.commit_order.append(txn_id)

    def output(self) -> list:
        return [r for txn_id in self.commit_order for r in self.committed[txn_id]]


class TwoPhaseCommitSink:
    """One sink subtask. Transaction ids are ``(sink name, subtask index, checkpoint id)``."""

    def __init__(self, name: str, subtask_index: int, external: ExternalSystem):
        self.name, self.subtask_index, self.external = name, subtask_index, external
        self.current: list = []
        self.pending: dict[int, tuple] = {}  # checkpoint id -> pre-committed records
        self.final_id = 0

    def invoke(self, record: Any) -> None:
        self.current.append(record)

    def snapshot_state(self, checkpoint_id: int) -> dict:
        """Pre-commit: the current transaction becomes pending under this checkpoint."""
        self.pending[checkpoint_id] = tuple(self.current)
        self.current = []
        return {"pending": {self._txn(c): records for c, records in self.pending.items()}}

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        for c in sorted(c for c in self.pending if c <= checkpoint_id):
            self.external.commit(self._txn(c), self.pending.pop(c))

    def initialize_state(self, states: list[dict]) -> None:
        """Recover-and-commit the pending transactions of the restored checkpoint."""
        for state in states:
            for txn_id, records in sorted(state["pending"].items()):
                self.external.commit(txn_id, records)

    def abort(self) -> None:
        self.current = []
        self.pending.clear()

    def _txn(self, checkpoint_id: int) -> tuple:
        return (self.name, self.subtask_index, checkpoint_id)

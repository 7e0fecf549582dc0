"""An example of a user coordinator: a FLIP-27 style split enumerator and its events."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from streamproof.impl.coordination.api import OperatorCoordinator, SubtaskGateway
from streamproof.impl.coordination.runtime import CompletableFuture


@dataclass(frozen=True)
class AddSplitEvent:
    split: str


@dataclass(frozen=True)
class RequestSplitEvent:
    pass


@dataclass(frozen=True)
class NoMoreSplitsEvent:
    pass


class SplitAssigningSourceCoordinator(OperatorCoordinator):
    """An example coordinator: a FLIP-27 style split enumerator. Readers ask for splits
    (``RequestSplitEvent``); it answers with ``AddSplitEvent`` or ``NoMoreSplitsEvent``.

    Its checkpoint is the unassigned splits plus, per checkpoint, the splits assigned since the
    previous one (Flink's ``SplitAssignmentTracker``). After ``subtask_reset(i, c)`` the splits
    assigned to reader ``i`` after ``c`` go back to the unassigned pool: the reader restored from
    ``c`` never saw them. With a consistent valve every split is read exactly once.
    """

    def __init__(self, splits: Iterable[str]) -> None:
        self.unassigned: list[str] = list(splits)
        self.assigned_since_checkpoint: dict[int, list[str]] = {}  # subtask -> splits (current epoch)
        self.uncheckpointed: dict[int, dict[int, list[str]]] = {}  # checkpoint -> subtask -> splits
        self.gateways: dict[int, SubtaskGateway] = {}
        self.waiting: list[int] = []  # readers that asked while nothing was left... (kept for order)
        self.no_more_sent: set[int] = set()

    # -- events --------------------------------------------------------------------------------
    def execution_attempt_ready(self, subtask: int, attempt: int, gateway: SubtaskGateway) -> None:
        self.gateways[subtask] = gateway

    def handle_event_from_operator(self, subtask: int, attempt: int, event: Any) -> None:
        if isinstance(event, RequestSplitEvent):
            self.assign(subtask)

    def assign(self, subtask: int) -> None:
        gateway = self.gateways[subtask]
        if self.unassigned:
            split = self.unassigned.pop(0)
            self.assigned_since_checkpoint.setdefault(subtask, []).append(split)
            gateway.send_event(AddSplitEvent(split))
        else:
            gateway.send_event(NoMoreSplitsEvent())

    # -- checkpoints ---------------------------------------------------------------------------
    def checkpoint_coordinator(self, checkpoint_id: int, result: CompletableFuture) -> None:
        self.uncheckpointed[checkpoint_id] = {s: list(v) for s, v in self.assigned_since_checkpoint.items()}
        self.assigned_since_checkpoint = {}
        result.complete((tuple(self.unassigned), self._pending_assignments()))

    def _pending_assignments(self) -> tuple:
        return tuple(sorted((c, s, tuple(v)) for c, m in self.uncheckpointed.items() for s, v in m.items()))

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        for c in [c for c in self.uncheckpointed if c <= checkpoint_id]:
            del self.uncheckpointed[c]

    def subtask_reset(self, subtask: int, checkpoint_id: int) -> None:
        back: list[str] = []
        for c in sorted(self.uncheckpointed):
            if c > checkpoint_id:
                back += self.uncheckpointed[c].pop(subtask, [])
        back += self.assigned_since_checkpoint.pop(subtask, [])
        self.unassigned = back + self.unassigned

    def reset_to_checkpoint(self, checkpoint_id: int, checkpoint_data: Any) -> None:
        unassigned, pending = checkpoint_data if checkpoint_data is not None else ((), ())
        self.unassigned = list(unassigned)
        self.uncheckpointed = {}
        for c, s, splits in pending:
            self.uncheckpointed.setdefault(c, {})[s] = list(splits)
        self.assigned_since_checkpoint = {}

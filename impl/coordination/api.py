"""The operator-coordinator API: what a coordinator implements and what it and its holder see.

:class:`OperatorCoordinator` (users implement it), :class:`SubtaskGateway` (what it sends
through), :class:`SubtaskAccess` (the holder's view of one execution attempt) and
:class:`AcknowledgeCheckpointEvent` (FLINK-26029: a subtask took its snapshot). Every protocol
shares them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from streamproof.impl.coordination.runtime import CompletableFuture


@dataclass(frozen=True)
class AcknowledgeCheckpointEvent:
    """Sent by a subtask to its coordinator once its synchronous snapshot for ``checkpoint_id`` is
    taken (FLINK-26029); it reopens that subtask's gateway."""

    checkpoint_id: int


class SubtaskGateway:
    """What a coordinator sends through: ``send_event(event)`` returns a future completed when
    the subtask acknowledged the RPC (failed when it was lost)."""

    def send_event(self, event: Any) -> CompletableFuture:  # pragma: no cover - interface
        raise NotImplementedError

    def get_subtask(self) -> int:  # pragma: no cover - interface
        raise NotImplementedError

    def get_attempt_number(self) -> int:  # pragma: no cover - interface
        raise NotImplementedError


class OperatorCoordinator:
    """The coordinator API users implement (Flink's ``OperatorCoordinator``). Every method is
    called on the JobManager's main thread.

    The contract that makes checkpoints consistent (Flink's javadoc of ``checkpointCoordinator``):
    the state a coordinator puts into ``result`` must reflect exactly the events it sent before it
    completes ``result``; events sent afterwards belong to the next epoch. After
    ``subtask_reset(i, c)`` it must treat every event it sent to subtask ``i`` after checkpoint
    ``c`` as lost (and send it again if it still matters); after ``reset_to_checkpoint`` it
    restores its own state.
    """

    def start(self) -> None:
        pass

    def close(self) -> None:
        pass

    def handle_event_from_operator(self, subtask: int, attempt: int, event: Any) -> None:
        pass

    def execution_attempt_failed(self, subtask: int, attempt: int, reason: BaseException | None) -> None:
        pass

    def execution_attempt_ready(self, subtask: int, attempt: int, gateway: SubtaskGateway) -> None:
        pass

    def subtask_reset(self, subtask: int, checkpoint_id: int) -> None:
        pass

    def checkpoint_coordinator(self, checkpoint_id: int, result: CompletableFuture) -> None:
        result.complete(b"")

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        pass

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        pass

    def reset_to_checkpoint(self, checkpoint_id: int, checkpoint_data: Any) -> None:
        pass


class SubtaskAccess:
    """The holder's view of one execution attempt of a subtask (Flink's ``SubtaskAccess``)."""

    subtask_index: int
    attempt_number: int

    def create_event_send_action(self, event: Any) -> Callable[[], CompletableFuture]:  # pragma: no cover
        """An RPC to *this attempt*, issued when the action is called."""
        raise NotImplementedError

    def has_switched_to_running(self) -> CompletableFuture:  # pragma: no cover
        raise NotImplementedError

    def is_still_running(self) -> bool:  # pragma: no cover
        raise NotImplementedError

    def trigger_task_failover(self, cause: BaseException) -> None:  # pragma: no cover
        raise NotImplementedError

    def subtask_name(self) -> str:
        return f"subtask {self.subtask_index} (attempt #{self.attempt_number})"

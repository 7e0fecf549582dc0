"""The ``valve`` scenario family's steps: an operator-coordinator holder and its subtask gateways
(FLINK-26029's event valve; shared/vectors/flink_valve_traces.json uses it)."""

from __future__ import annotations

from typing import ClassVar

from streamproof.properties.scenario import (
    require_first_step, EnumKind, INT32, INT64_MAX, IntKind, Scenario, Step, UPPER_BOUND_MAX_PARALLELISM, arg, register_family, step, step_error,
)


SUBTASK = IntKind(0, UPPER_BOUND_MAX_PARALLELISM - 1)
EVENT = INT32  # the int payload of the test operator event
CHECKPOINT = IntKind(0, INT64_MAX)
RESTORED_CHECKPOINT = IntKind(-1, INT64_MAX)  # -1 = no checkpoint (restore to the initial state)


@step
class NewHolder(Step):
    op: ClassVar[str] = "new_holder"
    parallelism: int = arg(IntKind(1, UPPER_BOUND_MAX_PARALLELISM))


@step
class Send(Step):
    """Coordinator → subtask, through the subtask's gateway."""

    op: ClassVar[str] = "send"
    subtask: int = arg(SUBTASK)
    event: int = arg(EVENT)


@step
class FromSubtask(Step):
    op: ClassVar[str] = "from_subtask"
    subtask: int = arg(SUBTASK)
    event: int = arg(EVENT)


@step
class Trigger(Step):
    op: ClassVar[str] = "trigger"
    checkpoint: int = arg(CHECKPOINT)


@step
class Complete(Step):
    op: ClassVar[str] = "complete"
    checkpoint: int = arg(CHECKPOINT)


@step
class Result(Step):
    op: ClassVar[str] = "result"
    checkpoint: int = arg(CHECKPOINT)


@step
class Ack(Step):
    op: ClassVar[str] = "ack"
    subtask: int = arg(SUBTASK)
    checkpoint: int = arg(CHECKPOINT)


@step
class NotifyComplete(Step):
    op: ClassVar[str] = "notify_complete"
    checkpoint: int = arg(CHECKPOINT)


@step
class NotifyAborted(Step):
    op: ClassVar[str] = "notify_aborted"
    checkpoint: int = arg(CHECKPOINT)


@step
class AbortTriggering(Step):
    op: ClassVar[str] = "abort_triggering"


@step
class Reset(Step):
    """Global failover: reset the coordinator to ``checkpoint`` (-1: none)."""

    op: ClassVar[str] = "reset"
    checkpoint: int = arg(RESTORED_CHECKPOINT)


@step
class FailSubtask(Step):
    op: ClassVar[str] = "fail_subtask"
    subtask: int = arg(SUBTASK)


@step
class RestartSubtask(Step):
    """Region failover: a new attempt of ``subtask`` restored to ``checkpoint`` (-1: none)."""

    op: ClassVar[str] = "restart_subtask"
    subtask: int = arg(SUBTASK)
    checkpoint: int = arg(RESTORED_CHECKPOINT)


@step
class Rpc(Step):
    """How the RPCs of the following sends to ``subtask`` complete."""

    op: ClassVar[str] = "rpc"
    subtask: int = arg(SUBTASK)
    mode: str = arg(EnumKind(("ack", "pending", "lost")))


@step
class RpcAckAll(Step):
    op: ClassVar[str] = "rpc_ack_all"


@step
class RpcFailAll(Step):
    op: ClassVar[str] = "rpc_fail_all"


def validate_valve(scenario: Scenario) -> None:
    """The first step is ``new_holder``; every subtask is below the current parallelism."""
    require_first_step(scenario, "new_holder")
    parallelism = 0
    for i, s in enumerate(scenario.steps):
        if isinstance(s, NewHolder):
            parallelism = s.parallelism
        subtask = getattr(s, "subtask", None)
        if subtask is not None and subtask >= parallelism:
            what = f"a subtask below the parallelism {parallelism}"
            raise step_error(i, s, "subtask", what, subtask)


VALVE_STEPS = [
    NewHolder, Send, FromSubtask, Trigger, Complete, Result, Ack, NotifyComplete, NotifyAborted,
    AbortTriggering, Reset, FailSubtask, RestartSubtask, Rpc, RpcAckAll, RpcFailAll,
]
register_family("valve", VALVE_STEPS, validate_valve)


# The valve_job family (a job around the valve) registers with the valve family's steps.
from streamproof.properties.valve import job as _valve_job  # noqa: E402,F401

"""The operator-coordinator event valve (Flink's ``org.apache.flink.runtime.operators.coordination``):
``OperatorCoordinatorHolder`` and its gateways.

An ``OperatorCoordinator`` runs on the JobManager and talks to the subtasks of its operator through
one ``SubtaskGateway`` per subtask. Its checkpoint must line up with the subtasks' snapshots: the
events it sent before it completed checkpoint c are exactly the events whose effect is in the
subtasks' snapshots for c. Three protocols are implemented behind one switch (:data:`PROTOCOLS`,
:func:`create_holder`):

``flink-2.3``
    What Flink ships since FLINK-26029 (1.16), flaws included: a ``SubtaskGatewayImpl`` per subtask
    is marked when the checkpoint is triggered, closed when the coordinator completes its
    checkpoint future (all or none), buffers what is sent while closed per checkpoint in order, and
    reopens when that subtask's ``AcknowledgeCheckpointEvent`` (sent after its synchronous
    snapshot) arrives, or on checkpoint complete / abort, abort of triggering, or reset. The
    coordinator checkpoint completes only when every event sent before the close is acknowledged
    (FLINK-21996). Reproduces ``shared/vectors/flink_valve_traces.json``.
``legacy``
    The 1.11-1.15 ``OperatorEventValve`` (FLINK-16986): one valve for all subtasks, shut at the
    coordinator's future completion, reopened after the barriers were injected at the sources.
    Right for sources, wrong for any other operator (FLINK-26029's duplicate).
``streamproof``
    ``flink-2.3`` with the flaws the checker found fixed (docs/valve.md): a gateway asked to open
    for a checkpoint it never saw does nothing (instead of throwing and skipping the other
    gateways); a failover aborts the in-flight checkpoint on every gateway and fails the events
    buffered on a replaced gateway (instead of leaving them in the unconfirmed set forever); a
    global reset fails buffered events instead of releasing them to the old attempts; gateways
    close all or none, checked before any closes; a checkpoint waits for every unacknowledged
    event sent before its close, not only those no earlier checkpoint waited for.

Where each part lives (this module re-exports every name, so callers import from here):

* :mod:`streamproof.impl.coordination.runtime`: what all protocols run on: Flink's exceptions, futures,
  the JobManager's main thread (:class:`MainThreadExecutor`, one FIFO queue), the tracker of
  unconfirmed events, how a gateway sends one event;
* :mod:`streamproof.impl.coordination.api`: the coordinator API (:class:`OperatorCoordinator`,
  :class:`SubtaskGateway`, :class:`SubtaskAccess`, :class:`AcknowledgeCheckpointEvent`);
* :mod:`streamproof.impl.coordination.flink_protocol`: ``flink-2.3``, Flink's holder and gateway, the base the other two
  extend; :mod:`streamproof.impl.coordination.streamproof_protocol` and :mod:`streamproof.impl.coordination.legacy_protocol`: only their
  differences from it;
* :mod:`streamproof.impl.coordination.protocols`: :data:`PROTOCOLS` and :func:`create_holder`;
* :mod:`streamproof.impl.coordination.harness`: the holder-level harness with scripted tasks and RPCs
  (:class:`ValveHarness`) that drives the ``valve`` scenario family;
* :mod:`streamproof.impl.coordination.example`: :class:`SplitAssigningSourceCoordinator`, a user coordinator.

RPCs to a task are FIFO and may fail with or without the task failing (:class:`SubtaskAccess`).

Left out: several coordinators per job, concurrent checkpoints, speculative execution, savepoints
and the content of events (the same abstractions as ``model/valve.py``). No other impl package
imports this one: the valve runs on its own harness and pipeline (:mod:`.valve_pipeline`).
"""

from __future__ import annotations

from streamproof.impl.coordination.api import (
    AcknowledgeCheckpointEvent, OperatorCoordinator, SubtaskAccess, SubtaskGateway,
)
from streamproof.impl.coordination.example import (
    AddSplitEvent, NoMoreSplitsEvent, RequestSplitEvent, SplitAssigningSourceCoordinator,
)

# private helpers, importable from here as before (the valve bug zoo imports _call_send_action)
from streamproof.impl.coordination.flink_protocol import (
    OperatorCoordinatorHolder,
    SubtaskGatewayImpl,
    _raise,  # noqa: F401
)
from streamproof.impl.coordination.harness import (
    RecordingCoordinator, ScriptedSubtaskAccess, ScriptedTasks, ValveHarness,
)
from streamproof.impl.coordination.legacy_protocol import (
    LegacyOperatorCoordinatorHolder, LegacySubtaskGateway, OperatorEventValve,
)
from streamproof.impl.coordination.protocols import HOLDERS, PROTOCOLS, create_holder
from streamproof.impl.coordination.runtime import (
    EVENT_LOSS_ERROR_MESSAGE,
    NO_CHECKPOINT,
    BlockedEvent,
    CompletableFuture,
    FlinkException,
    FlinkRuntimeException,
    IllegalStateException,
    IncompleteFuturesTracker,
    MainThreadExecutor,
    TaskNotRunningException,
    _call_send_action,  # noqa: F401
    assert_no_exception,
    forward,
    wait_for_all,
)
from streamproof.impl.coordination.streamproof_protocol import (
    StreamproofOperatorCoordinatorHolder, StreamproofSubtaskGateway,
)

__all__ = [
    # protocols
    "PROTOCOLS", "HOLDERS", "create_holder",
    "OperatorCoordinatorHolder", "SubtaskGatewayImpl",
    "StreamproofOperatorCoordinatorHolder", "StreamproofSubtaskGateway",
    "LegacyOperatorCoordinatorHolder", "LegacySubtaskGateway", "OperatorEventValve",
    # coordinator API
    "OperatorCoordinator", "SubtaskGateway", "SubtaskAccess", "AcknowledgeCheckpointEvent",
    # runtime
    "NO_CHECKPOINT", "EVENT_LOSS_ERROR_MESSAGE", "FlinkException", "FlinkRuntimeException", "IllegalStateException",
    "TaskNotRunningException", "CompletableFuture", "forward", "wait_for_all", "assert_no_exception",
    "MainThreadExecutor", "IncompleteFuturesTracker", "BlockedEvent",
    # harness and example
    "ValveHarness", "ScriptedTasks", "ScriptedSubtaskAccess", "RecordingCoordinator",
    "SplitAssigningSourceCoordinator", "AddSplitEvent", "RequestSplitEvent", "NoMoreSplitsEvent",
]

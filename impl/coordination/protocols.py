"""The switch between the three valve protocols: :data:`PROTOCOLS` and :func:`create_holder`."""

from __future__ import annotations

from streamproof.impl.coordination.api import OperatorCoordinator
from streamproof.impl.coordination.flink_protocol import OperatorCoordinatorHolder
from streamproof.impl.coordination.legacy_protocol import (
    LegacyOperatorCoordinatorHolder,
)
from streamproof.impl.coordination.runtime import MainThreadExecutor
from streamproof.impl.coordination.streamproof_protocol import (
    StreamproofOperatorCoordinatorHolder,
)

PROTOCOLS = ("flink-2.3", "legacy", "streamproof")
HOLDERS = {
    "flink-2.3": OperatorCoordinatorHolder,
    "legacy": LegacyOperatorCoordinatorHolder,
    "streamproof": StreamproofOperatorCoordinatorHolder,
}


def create_holder(protocol: str, coordinator: OperatorCoordinator, task_accesses, parallelism: int,
                  main_thread: MainThreadExecutor, **handlers) -> OperatorCoordinatorHolder:
    """A holder of ``protocol`` (one of :data:`PROTOCOLS`); call ``lazy_initialize`` and
    ``start`` next, as the scheduler does."""
    if protocol not in HOLDERS:
        raise ValueError(f"unknown valve protocol {protocol!r}; known: {', '.join(PROTOCOLS)}")
    return HOLDERS[protocol](coordinator, task_accesses, parallelism, main_thread, **handlers)

"""The switch between the three valve protocols: :data:`PROTOCOLS` and :func:`create_holder`."""

from __future__ import annotations

from streamproof.impl.coordinator_api import OperatorCoordinator
from streamproof.impl.coordinator_flink import OperatorCoordinatorHolder
from streamproof.impl.coordinator_legacy import LegacyOperatorCoordinatorHolder
from streamproof.impl.coordinator_runtime import MainThreadExecutor
from streamproof.impl.coordinator_streamproof import StreamproofOperatorCoordinatorHolder

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

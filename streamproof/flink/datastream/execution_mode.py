"""``pyflink.datastream.execution_mode``: :class:`RuntimeExecutionMode`."""

from __future__ import annotations

from enum import Enum

__all__ = ["RuntimeExecutionMode"]


class RuntimeExecutionMode(Enum):
    """``env.set_runtime_mode(...)``: recorded as its name in ``Pipeline.runtime_mode``."""

    STREAMING = 0
    BATCH = 1
    AUTOMATIC = 2

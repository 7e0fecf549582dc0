"""``pyflink.datastream.checkpointing_mode``: :class:`CheckpointingMode`."""

from __future__ import annotations

from enum import Enum

__all__ = ["CheckpointingMode"]


class CheckpointingMode(Enum):
    """``enable_checkpointing(interval, mode)``: recorded as its name in
    ``Pipeline.checkpointing_mode``."""

    EXACTLY_ONCE = 0
    AT_LEAST_ONCE = 1

"""``pyflink.datastream.time_characteristic`` (PyFlink 1.x; removed in 2.x):
:class:`TimeCharacteristic`. ``env.set_stream_time_characteristic`` accepts it and records
nothing (event time is always available, as in Flink since 1.12)."""

from __future__ import annotations

from enum import Enum

__all__ = ["TimeCharacteristic"]


class TimeCharacteristic(Enum):
    ProcessingTime = 0
    IngestionTime = 1
    EventTime = 2

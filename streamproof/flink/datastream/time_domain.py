"""``pyflink.datastream.time_domain``."""

from enum import Enum

__all__ = ["TimeDomain"]


class TimeDomain(Enum):
    """Whether a firing timer is based on event time or processing time."""

    EVENT_TIME = 0
    PROCESSING_TIME = 1

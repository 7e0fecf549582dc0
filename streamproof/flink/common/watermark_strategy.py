"""``pyflink.common.watermark_strategy``: :class:`WatermarkStrategy` and :class:`TimestampAssigner`,
recorded (never called) by ``assign_timestamps_and_watermarks`` / ``from_source``; see
:meth:`WatermarkStrategy.to_spec`."""

from __future__ import annotations

import abc
from typing import Any

from streamproof.flink.pipeline import WatermarkSpec

__all__ = ["WatermarkStrategy", "TimestampAssigner"]


def _millis(amount) -> int:
    """``Duration``/``Time`` (``to_milliseconds()``) or an int of milliseconds."""
    if hasattr(amount, "to_milliseconds"):
        return int(amount.to_milliseconds())
    if isinstance(amount, int) and not isinstance(amount, bool):
        return amount
    raise TypeError(f"expected a Duration, got {type(amount).__name__}")


class TimestampAssigner(abc.ABC):
    """Extracts a record's event timestamp (ms): ``extract_timestamp(value, record_timestamp)``."""

    @abc.abstractmethod
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        pass


class WatermarkStrategy:
    """How a stream's timestamps and watermarks are made. As PyFlink 2.3:
    ``with_timestamp_assigner`` sets the assigner on this strategy and returns it, while
    ``with_idleness`` / ``with_watermark_alignment`` return a new strategy *without* the Python
    timestamp assigner (PyFlink keeps it on the Python object only)."""

    def __init__(self, kind: str, bound: int = 0, idleness: int | None = None):
        self._kind = kind
        self._bound = bound
        self._idleness = idleness
        self._timestamp_assigner = None

    @staticmethod
    def for_monotonous_timestamps() -> "WatermarkStrategy":
        return WatermarkStrategy("monotonous")

    @staticmethod
    def for_bounded_out_of_orderness(max_out_of_orderness) -> "WatermarkStrategy":
        return WatermarkStrategy("bounded", _millis(max_out_of_orderness))

    @staticmethod
    def no_watermarks() -> "WatermarkStrategy":
        return WatermarkStrategy("none")

    @staticmethod
    def for_generator(*args, **kwargs) -> "WatermarkStrategy":
        from streamproof.flink.capture import refuse
        refuse("WatermarkStrategy.for_generator", "custom watermark generators are not modelled")

    def with_timestamp_assigner(self, timestamp_assigner) -> "WatermarkStrategy":
        self._timestamp_assigner = timestamp_assigner
        return self

    def with_idleness(self, idle_timeout) -> "WatermarkStrategy":
        return WatermarkStrategy(self._kind, self._bound, _millis(idle_timeout))

    def with_watermark_alignment(self, watermark_group: str, max_allowed_watermark_drift,
                                 update_interval=None) -> "WatermarkStrategy":
        """Accepted, recorded nowhere (alignment only slows sources down)."""
        return WatermarkStrategy(self._kind, self._bound, self._idleness)

    def to_spec(self) -> WatermarkSpec:
        """What the pipeline records: kind, bound (ms), assigner (not called), idleness (ms)."""
        return WatermarkSpec(self._kind, self._bound, self._timestamp_assigner, self._idleness)

    def __repr__(self):
        return f"WatermarkStrategy({self.to_spec()!r})"

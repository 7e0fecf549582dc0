"""``pyflink.common.time``: :class:`Time`, :class:`Duration`, :class:`Instant` (pure Python)."""

from __future__ import annotations

__all__ = ["Duration", "Instant", "Time"]


class Duration:
    """A time-based amount of time (PyFlink wraps ``java.time.Duration``; here: nanoseconds)."""

    def __init__(self, nanos: int):
        self._nanos = int(nanos)

    @staticmethod
    def of_days(days: int) -> "Duration":
        return Duration(days * 86_400_000_000_000)

    @staticmethod
    def of_hours(hours: int) -> "Duration":
        return Duration(hours * 3_600_000_000_000)

    @staticmethod
    def of_minutes(minutes: int) -> "Duration":
        return Duration(minutes * 60_000_000_000)

    @staticmethod
    def of_seconds(seconds: int) -> "Duration":
        return Duration(seconds * 1_000_000_000)

    @staticmethod
    def of_millis(millis: int) -> "Duration":
        return Duration(millis * 1_000_000)

    @staticmethod
    def of_nanos(nanos: int) -> "Duration":
        return Duration(nanos)

    def to_milliseconds(self) -> int:
        return self._nanos // 1_000_000

    def __eq__(self, other) -> bool:
        return isinstance(other, Duration) and self._nanos == other._nanos

    def __hash__(self) -> int:
        return hash(self._nanos)

    def __repr__(self) -> str:
        return f"Duration({self._nanos} ns)"


class Instant:
    """An instantaneous point on the time-line (as ``java.time.Instant``)."""

    def __init__(self, seconds, nanos):
        self.seconds = seconds
        self.nanos = nanos

    def to_epoch_milli(self):
        return self.seconds * 1000 + self.nanos // 1_000_000

    @staticmethod
    def of_epoch_milli(epoch_milli: int) -> "Instant":
        return Instant(epoch_milli // 1000, (epoch_milli % 1000) * 1_000_000)

    def __eq__(self, other):
        return self.__class__ == other.__class__ and self.seconds == other.seconds and self.nanos == other.nanos

    def __hash__(self):
        return hash((self.seconds, self.nanos))

    def __repr__(self):
        return f"Instant<{self.seconds}, {self.nanos}>"


class Time:
    """A time interval, PyFlink's ``Time``: ``Time.seconds(5).to_milliseconds() == 5000``."""

    def __init__(self, milliseconds: int):
        self._milliseconds = milliseconds

    def to_milliseconds(self) -> int:
        return self._milliseconds

    @staticmethod
    def milliseconds(milliseconds: int) -> "Time":
        return Time(milliseconds)

    @staticmethod
    def seconds(seconds: int) -> "Time":
        return Time.milliseconds(seconds * 1000)

    @staticmethod
    def minutes(minutes: int) -> "Time":
        return Time.seconds(minutes * 60)

    @staticmethod
    def hours(hours: int) -> "Time":
        return Time.minutes(hours * 60)

    @staticmethod
    def days(days: int) -> "Time":
        return Time.hours(days * 24)

    def __eq__(self, other):
        return self.__class__ == other.__class__ and self._milliseconds == other._milliseconds

    def __hash__(self):
        return hash(self._milliseconds)

    def __str__(self):
        return f"{self._milliseconds} ms"

    def __repr__(self):
        return f"Time({self._milliseconds} ms)"

"""``pyflink.metrics`` for operators: an in-memory :class:`MetricGroup` (metrics never change an
operator's output; they are kept so that ``get_metrics_group()`` works and tests can read them)."""

from __future__ import annotations

from typing import Callable

__all__ = ["MetricGroup", "Metric", "Counter", "Meter", "Distribution"]


class Metric:
    pass


class Counter(Metric):
    def __init__(self):
        self._count = 0

    def inc(self, n: int = 1):
        self._count += n

    def dec(self, n: int = 1):
        self._count -= n

    def get_count(self) -> int:
        return self._count


class Meter(Metric):
    def __init__(self, time_span_in_seconds: int = 60):
        self.time_span_in_seconds = time_span_in_seconds
        self._count = 0

    def mark_event(self, value: int = 1):
        self._count += value

    def get_count(self) -> int:
        return self._count


class Distribution(Metric):
    def __init__(self):
        self.values: list = []

    def update(self, value):
        self.values.append(value)


class MetricGroup:
    """Counters, gauges, meters and distributions by name, in nested groups."""

    def __init__(self, name: str = ""):
        self.name = name
        self.groups: dict[str, "MetricGroup"] = {}
        self.metrics: dict[str, object] = {}

    def add_group(self, name: str, extra: str = None) -> "MetricGroup":
        key = name if extra is None else f"{name}.{extra}"
        return self.groups.setdefault(key, MetricGroup(key))

    def counter(self, name: str) -> Counter:
        return self.metrics.setdefault(name, Counter())

    def gauge(self, name: str, obj: Callable[[], int]) -> None:
        self.metrics[name] = obj

    def meter(self, name: str, time_span_in_seconds: int = 60) -> Meter:
        return self.metrics.setdefault(name, Meter(time_span_in_seconds))

    def distribution(self, name: str) -> Distribution:
        return self.metrics.setdefault(name, Distribution())

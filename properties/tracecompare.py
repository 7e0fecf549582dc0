"""Comparing observation traces: the one helper every runner uses to run a scenario into a trace
and to compare the implementation's trace with the model's or with Flink's recorded one.

A trace is a list of events (dicts with an ``event`` field). A family says how its traces compare
with a :class:`TraceComparison`:

- ``ignore``: fields that never count (a step index, an explanatory message);
- ``error_key``: what of an ``error`` event counts besides its type (the vectors compare errors by
  type only, since exception texts differ between Flink and Python);
- ``tie_key``: consecutive events with the same non-None key form a *tie group*, compared as a
  multiset (timers firing at the same timestamp come out in an order Flink does not promise).

``difference(a, b)`` names, in one line, where trace ``a`` (the implementation's) departs from
``b`` (the reference): what a failing replay or differential check prints.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterable


@dataclass(frozen=True)
class TraceComparison:
    """How a family's traces are compared (see the module docstring)."""

    ignore: frozenset = frozenset()
    error_key: Callable[[dict], tuple] = lambda event: ()
    tie_key: Callable[[dict], Hashable | None] | None = None

    def comparable(self, event: dict) -> Any:
        """One event as it is compared: hashable, ignored fields dropped, errors by type."""
        if event.get("event") == "error":
            return ("error", *self.error_key(event))
        return _freeze({k: v for k, v in event.items() if k not in self.ignore})

    def groups(self, trace: list[dict]) -> list[list[dict]]:
        """The trace cut into tie groups (one event each when the family has no ties)."""
        out: list[list[dict]] = []
        last = None
        for event in trace:
            key = self.tie_key(event) if self.tie_key is not None else None
            if key is not None and key == last:
                out[-1].append(event)
            else:
                out.append([event])
            last = key
        return out

    def normalize(self, trace: list[dict]) -> list:
        """The trace in comparable form: one item per tie group, a group as a sorted multiset."""
        return [self.comparable(g[0]) if len(g) == 1 else ("ties", tuple(sorted(map(self.comparable, g), key=repr)))
                for g in self.groups(trace)]

    def same(self, a: list[dict], b: list[dict]) -> bool:
        return self.normalize(a) == self.normalize(b)

    def same_up_to_interleaving(self, a: list[dict], b: list[dict], lane: str) -> bool:
        """The same events, in the same order within each ``lane`` (e.g. per subtask), in any
        interleaving across lanes."""
        na, nb = [self.comparable(e) for e in a], [self.comparable(e) for e in b]
        if Counter(na) != Counter(nb):
            return False
        lanes = {e.get(lane) for e in a}
        return all([self.comparable(e) for e in a if e.get(lane) == x] == [self.comparable(e) for e in b if e.get(lane) == x]
                   for x in lanes)

    def difference(self, a: list[dict], b: list[dict]) -> str:
        """Where trace ``a`` (the implementation's) departs from ``b`` (a reference), in one line."""
        ga, gb, offset = self.groups(a), self.groups(b), 0
        for x, y in zip(ga, gb):
            if self.normalize(x) != self.normalize(y):
                return f"event {offset}: {events_text(x)} instead of {events_text(y)}"
            offset += len(x)
        if len(ga) == len(gb):
            return "the traces differ" if not self.same(a, b) else "the traces are the same"
        extra, which = (ga, "implementation") if len(ga) > len(gb) else (gb, "reference")
        rest = [e for g in extra[min(len(ga), len(gb)):] for e in g]
        return f"event {offset}: the {which} trace goes on with {events_text(rest)}"


def run_trace(apply: Callable[[Any, int], list[dict]], steps: Iterable,
              ended: Callable[[], bool] = lambda: False) -> list[dict]:
    """The whole trace of a scenario: ``apply(step, index)`` returns each step's observations;
    the run stops early once ``ended()`` says so (a fatal error)."""
    trace: list[dict] = []
    for index, step in enumerate(steps):
        trace.extend(apply(step, index))
        if ended():
            break
    return trace


def events_text(events: list, limit: int = 3) -> str:
    """Up to ``limit`` events as compact JSON, and how many more there are."""
    text = ", ".join(json.dumps(e, separators=(",", ":")) for e in events[:limit])
    return text + (f" (+{len(events) - limit} more)" if len(events) > limit else "")


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value

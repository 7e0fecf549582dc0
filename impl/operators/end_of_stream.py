"""FLIP-331's end-of-stream workloads beside the window operator: ``coGroup`` as a union of two
tagged streams into one :class:`~streamproof.impl.operators.windows.WindowOperator`, and the sorted
fast path (FLIP-331's internal sorter) that computes what global windows with the end-of-stream
trigger emit in one pass over the records sorted by key."""

from __future__ import annotations

from itertools import groupby
from operator import itemgetter
from typing import Any, Callable, Iterable

from streamproof.impl.operators.windows import AggregateFunction, ProcessWindowFunction

# -- co-group (a union of two tagged streams into one window operator) -------------------------
LEFT, RIGHT = "L", "R"


def tag_left(key: Any, value: Any) -> list:
    """A stateless flat-map function: the left input's record tagged for :class:`CoGroupWindowFunction`."""
    return [(key, (LEFT, value))]


def tag_right(key: Any, value: Any) -> list:
    """A stateless flat-map function: the right input's record tagged for :class:`CoGroupWindowFunction`."""
    return [(key, (RIGHT, value))]


def split_tagged(elements: Iterable) -> tuple[list, list]:
    """The tagged elements' left and right values, each side in arrival order."""
    lefts, rights = [], []
    for tag, value in elements:
        (lefts if tag == LEFT else rights).append(value)
    return lefts, rights


class CoGroupWindowFunction(ProcessWindowFunction):
    """Flink's ``CoGroupWindowFunction``: splits a window's tagged elements into the two sides and
    calls ``co_group_fn(key, lefts, rights, out)``."""

    def __init__(self, co_group_fn: Callable[[Any, list, list, Any], None]):
        self.co_group_fn = co_group_fn

    def process(self, key, window, elements, out) -> None:
        lefts, rights = split_tagged(elements)
        self.co_group_fn(key, lefts, rights, out)


# -- the sorted fast path (FLIP-331's internal sorter) -----------------------------------------
def sort_key(record) -> tuple:
    """Records ``(key, value, timestamp)`` sort by ``(type name, key)``: str and int keys mix."""
    key = record[0]
    return (type(key).__name__, key)


_key_of = itemgetter(0)


def sort_by_key(records: Iterable) -> list:
    """The records stably sorted by :func:`sort_key` (each key's records stay in arrival order).
    One key type (the common case) sorts on the key alone; mixed types sort per type name."""
    records = records if isinstance(records, list) else list(records)
    types = set(map(type, map(_key_of, records)))
    if len(types) <= 1:
        return sorted(records, key=_key_of)
    by_type: dict[str, list] = {}
    for record in records:
        by_type.setdefault(type(record[0]).__name__, []).append(record)
    return [record for name in sorted(by_type) for record in sorted(by_type[name], key=_key_of)]


class _ListCollector:
    __slots__ = ("results", "key")

    def __init__(self, results: list):
        self.results, self.key = results, None

    def collect(self, value: Any) -> None:
        self.results.append((self.key, value))


def sorted_window_aggregate(records: Iterable, aggregate: AggregateFunction) -> list:
    """``(key, result)`` per key: what :class:`WindowOperator` emits for ``aggregate`` over global
    windows with the end-of-stream trigger, from one pass over the records sorted by key (stable:
    each key's records in arrival order); no window assignment, trigger or timer."""
    results = []
    create, add, get_result = aggregate.create_accumulator, aggregate.add, aggregate.get_result
    for key, group in groupby(sort_by_key(records), key=_key_of):
        accumulator = create()
        for _, value, _ in group:
            accumulator = add(value, accumulator)
        results.append((key, get_result(accumulator)))
    return results


def _groups(records: Iterable):
    """``(sort key, key, values)`` per key of the records sorted by key, values in arrival order."""
    for key, group in groupby(sort_by_key(records), key=_key_of):
        yield (type(key).__name__, key), key, [record[1] for record in group]


def sorted_co_group(lefts: Iterable, rights: Iterable, co_group_fn: Callable) -> list:
    """What the window operator emits for ``co_group`` over global windows with the end-of-stream
    trigger: each input sorted by key on its own (no tagging), then one merge pass calling
    ``co_group_fn(key, lefts, rights, out)`` per key present on either side; outputs ``(key, value)``."""
    results: list = []
    out = _ListCollector(results)
    left_groups, right_groups = _groups(lefts), _groups(rights)
    left, right = next(left_groups, None), next(right_groups, None)
    while left is not None or right is not None:
        if right is None or (left is not None and left[0] < right[0]):
            out.key = left[1]
            co_group_fn(left[1], left[2], [], out)
            left = next(left_groups, None)
        elif left is None or right[0] < left[0]:
            out.key = right[1]
            co_group_fn(right[1], [], right[2], out)
            right = next(right_groups, None)
        else:
            out.key = left[1]
            co_group_fn(left[1], left[2], right[2], out)
            left, right = next(left_groups, None), next(right_groups, None)
    return results


__all__ = [
    "tag_left", "tag_right", "split_tagged", "CoGroupWindowFunction", "sort_key", "sort_by_key",
    "sorted_window_aggregate", "sorted_co_group", "LEFT", "RIGHT",
]

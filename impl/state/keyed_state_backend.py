"""Keyed state: the state descriptors, the state kinds (value, list, map, reducing, aggregating) and
the heap keyed state backend that holds them per key group (Flink's ``HeapKeyedStateBackend``).

Partitioned by key group like the timers, so a checkpoint is per key group and a restore can take
any key-group range (rescaling)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Iterable

from streamproof.impl.state.key_context import (
    KeyContext,
)
from streamproof.impl.state.key_groups import KeyGroupRange


# -- keyed state -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ValueStateDescriptor:
    name: str
    default: Any = None


@dataclass(frozen=True)
class ListStateDescriptor:
    name: str


@dataclass(frozen=True)
class MapStateDescriptor:
    name: str


@dataclass(frozen=True)
class ReducingStateDescriptor:
    """``reduce_function``: a callable ``(a, b) -> c`` or an object with ``reduce(a, b)``."""
    name: str
    reduce_function: Any


@dataclass(frozen=True)
class AggregatingStateDescriptor:
    """``agg_function``: an object with ``create_accumulator()``, ``add(value, acc)``,
    ``get_result(acc)`` (and ``merge``), as Flink's ``AggregateFunction``."""
    name: str
    agg_function: Any


class KeyedStateBackend:
    """Keyed state per key group: ``{key_group: {state name: {key: value}}}``."""

    def __init__(self, key_context: KeyContext, key_group_range: KeyGroupRange):
        self.key_context = key_context
        self.key_group_range = key_group_range
        self._tables: dict[int, dict[str, dict]] = {kg: {} for kg in key_group_range}

    def _table(self, name: str) -> dict:
        kg = self.key_context.current_key_group_index
        if kg not in self._tables:
            raise ValueError(f"key {self.key_context.current_key!r} (key group {kg}) is not in {self.key_group_range}")
        return self._tables[kg].setdefault(name, {})

    def get(self, name: str, default: Any = None) -> Any:
        return self._table(name).get(self.key_context.current_key, default)

    def put(self, name: str, value: Any) -> None:
        self._table(name)[self.key_context.current_key] = value

    def clear(self, name: str) -> None:
        self._table(name).pop(self.key_context.current_key, None)

    def snapshot(self) -> dict[int, dict[str, dict]]:
        """A deep, point-in-time copy of every local key group (taken synchronously)."""
        return {kg: _deep_copy_tables(tables) for kg, tables in self._tables.items() if any(tables.values())}

    def restore(self, snapshot: dict[int, dict[str, dict]]) -> None:
        """Takes the snapshot's key groups that are in the local range."""
        for kg, tables in snapshot.items():
            if self.key_group_range.contains(kg):
                self._tables[kg] = _deep_copy_tables(tables)

    def keys(self, name: str) -> list:
        return [k for tables in self._tables.values() for k in tables.get(name, {})]


_ATOMIC = frozenset({int, str, float, bool, type(None), bytes})  # what copy.deepcopy returns as is


def _deep_copy_tables(tables: dict[str, dict]) -> dict[str, dict]:
    """``copy.deepcopy(tables)`` without its per-object dispatch when every key is an atomic
    value and every value is atomic or a dict or list of atomic values, none of them shared (the
    common case, issue 30); else deepcopy itself, which keeps shared values shared."""
    atomic, seen, copied = _ATOMIC, set(), {}
    for name, table in tables.items():
        copied[name] = out = {}
        for key, value in table.items():
            kind = type(value)
            if type(key) not in atomic:
                return copy.deepcopy(tables)
            if kind in atomic:
                out[key] = value
            elif kind is dict and id(value) not in seen and all(
                    type(k) in atomic and type(v) in atomic for k, v in value.items()):
                seen.add(id(value))
                out[key] = dict(value)
            elif kind is list and id(value) not in seen and all(type(v) in atomic for v in value):
                seen.add(id(value))
                out[key] = list(value)
            else:
                return copy.deepcopy(tables)
    return copied


class ValueState:
    def __init__(self, backend: KeyedStateBackend, descriptor: ValueStateDescriptor):
        self._backend, self._name, self._default = backend, descriptor.name, descriptor.default

    def value(self) -> Any:
        return self._backend.get(self._name, self._default)

    def update(self, value: Any) -> None:
        self._backend.put(self._name, value)

    def clear(self) -> None:
        self._backend.clear(self._name)


class ListState:
    def __init__(self, backend: KeyedStateBackend, descriptor: ListStateDescriptor):
        self._backend, self._name = backend, descriptor.name

    def get(self) -> list:
        return list(self._backend.get(self._name, []))

    def add(self, value: Any) -> None:
        self._backend.put(self._name, self.get() + [value])

    def add_all(self, values: Iterable) -> None:
        self._backend.put(self._name, self.get() + list(values))

    def update(self, values: Iterable) -> None:
        self._backend.put(self._name, list(values))

    def clear(self) -> None:
        self._backend.clear(self._name)

    def __iter__(self):
        return iter(self.get())


class MapState:
    def __init__(self, backend: KeyedStateBackend, descriptor: MapStateDescriptor):
        self._backend, self._name = backend, descriptor.name

    def _map(self) -> dict:
        return dict(self._backend.get(self._name, {}))

    def get(self, key: Any, default: Any = None) -> Any:
        return self._map().get(key, default)

    def put(self, key: Any, value: Any) -> None:
        updated = self._map()
        updated[key] = value
        self._backend.put(self._name, updated)

    def put_all(self, mapping) -> None:
        """A mapping, or an iterable of (key, value) pairs."""
        updated = self._map()
        updated.update(mapping)
        self._backend.put(self._name, updated)

    def contains(self, key: Any) -> bool:
        return key in self._map()

    def remove(self, key: Any) -> None:
        updated = self._map()
        updated.pop(key, None)
        self._backend.put(self._name, updated)

    def items(self) -> list:
        return sorted(self._map().items(), key=repr)

    def keys(self) -> list:
        return [k for k, _ in self.items()]

    def values(self) -> list:
        return [v for _, v in self.items()]

    def is_empty(self) -> bool:
        return not self._map()

    def clear(self) -> None:
        self._backend.clear(self._name)

    def __iter__(self):
        return iter(self.keys())

    def __contains__(self, key: Any) -> bool:
        return self.contains(key)


class ReducingState:
    """One value per key, combined with the descriptor's reduce function on ``add``."""

    def __init__(self, backend: KeyedStateBackend, descriptor: ReducingStateDescriptor):
        self._backend, self._name = backend, descriptor.name
        function = descriptor.reduce_function
        self._reduce = function.reduce if hasattr(function, "reduce") else function

    def get(self) -> Any:
        return self._backend.get(self._name)

    def add(self, value: Any) -> None:
        current = self._backend.get(self._name)
        self._backend.put(self._name, value if current is None else self._reduce(current, value))

    def clear(self) -> None:
        self._backend.clear(self._name)


class AggregatingState:
    """An accumulator per key (``create_accumulator``/``add``); ``get`` is ``get_result`` of it."""

    def __init__(self, backend: KeyedStateBackend, descriptor: AggregatingStateDescriptor):
        self._backend, self._name, self._function = backend, descriptor.name, descriptor.agg_function

    def get(self) -> Any:
        accumulator = self._backend.get(self._name)
        return None if accumulator is None else self._function.get_result(accumulator)

    def add(self, value: Any) -> None:
        accumulator = self._backend.get(self._name)
        if accumulator is None:
            accumulator = self._function.create_accumulator()
        self._backend.put(self._name, self._function.add(value, accumulator))

    def clear(self) -> None:
        self._backend.clear(self._name)

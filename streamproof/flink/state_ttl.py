"""State time-to-live (``StateTtlConfig``) on streamproof's runtime, as Flink's TTL state decorators
(``org.apache.flink.runtime.state.ttl``: ``TtlValueState``, ``TtlListState``, ``TtlMapState``,
``TtlReducingState``, ``TtlAggregatingState``) behave under PyFlink.

Every stored value carries its last-access timestamp (Flink's ``TtlValue``): a value state, a
reducing or aggregating state stores one :class:`TtlValue`, a list state one per element, a map
state one per entry. The clock is the operator's processing time (Flink: the TaskManager's wall
clock; in a simulation the processing time *is* the wall clock, docs/flink-api.md). A value is
expired when ``last_access + ttl <= now`` (``TtlUtils.expired``, with its overflow guard).

- Writes (``update``, ``add``, ``put``) stamp the written value with ``now`` (both update types).
- Reads go through Flink's ``getWrappedWithTtlCheckAndUpdate``: an expired value is removed from
  state and reads as absent (``NeverReturnExpired``) or is returned this once
  (``ReturnExpiredIfNotCleanedUp``); an unexpired one is re-stamped under ``OnReadAndWrite``.
- A list read (``TtlListState.get``) returns the unexpired elements (all under
  ``ReturnExpiredIfNotCleanedUp``); it clears the list when none is unexpired; under
  ``OnReadAndWrite`` it rewrites the list with its unexpired elements re-stamped.
- Map iteration applies the read rule entry by entry; ``is_empty`` looks at what is stored
  (``TtlMapState.isEmpty`` delegates to the stored map: expired entries not yet removed count).
- Reducing and aggregating ``add`` read the current value with the read rule, then write the
  result stamped ``now`` (PyFlink reads then writes; Java's ``TtlReduceFunction`` agrees).
- ``cleanup_full_snapshot``: a snapshot of the keyed state leaves out the entries (list elements,
  map entries) expired at snapshot time; the running state keeps them.
- Background cleanup (default, ``cleanup_incrementally``, ``cleanup_in_rocksdb_compact_filter``)
  removes nothing here: from the function's view Flink's cleanup only removes what a read would
  hide, except under ``ReturnExpiredIfNotCleanedUp``, where Flink leaves "if not cleaned up" open
  and streamproof picks "not cleaned up yet" (docs/decisions.md "State TTL").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

from streamproof.flink.common.typeinfo import check_value
from streamproof.flink.datastream import state as st
from streamproof.flink.errors import UnsupportedFeature

__all__ = ["TtlValue", "TtlConfig", "expired", "expiration_timestamp", "ttl_state", "cleanup_snapshot"]

INT64_MAX = 2**63 - 1
KINDS = {"ValueStateDescriptor": "value", "ListStateDescriptor": "list", "MapStateDescriptor": "map",
         "ReducingStateDescriptor": "reducing", "AggregatingStateDescriptor": "aggregating"}


class TtlValue(NamedTuple):
    """A stored user value and the processing time of its last access (Flink's ``TtlValue``)."""

    user_value: Any
    last_access_timestamp: int


@dataclass(frozen=True)
class TtlConfig:
    """What the runtime needs of a ``StateTtlConfig`` (streamproof's or PyFlink's own)."""

    ttl: int  # milliseconds, > 0
    update_on_read: bool  # UpdateType.OnReadAndWrite
    return_expired: bool  # StateVisibility.ReturnExpiredIfNotCleanedUp
    cleanup_full_snapshot: bool

    @staticmethod
    def of(config: Any, where: str) -> "TtlConfig | None":
        """None when TTL is disabled (``UpdateType.Disabled``); a one-line
        :class:`UnsupportedFeature` for what Flink itself rejects."""
        if config is None:
            return None
        update = getattr(config.get_update_type(), "name", str(config.get_update_type()))
        if update == "Disabled":
            return None
        ttl = config.get_ttl()
        millis = ttl.to_milliseconds() if hasattr(ttl, "to_milliseconds") else ttl
        if isinstance(millis, bool) or not isinstance(millis, int) or millis <= 0:
            raise UnsupportedFeature(f"{where}: TTL is expected to be positive, got {ttl!r}")
        characteristic = getattr(config.get_ttl_time_characteristic(), "name", "")
        if characteristic != "ProcessingTime":
            raise UnsupportedFeature(f"{where}: only processing-time TTL exists in Flink, got {characteristic!r}")
        visibility = getattr(config.get_state_visibility(), "name", "")
        strategies = config.get_cleanup_strategies()
        return TtlConfig(millis, update == "OnReadAndWrite", visibility == "ReturnExpiredIfNotCleanedUp",
                         bool(strategies is not None and strategies.in_full_snapshot()))


def expiration_timestamp(timestamp: int, ttl: int) -> int:
    """``TtlUtils.getExpirationTimestamp``: ``timestamp + ttl`` without overflowing a Java long."""
    return timestamp + (min(INT64_MAX - timestamp, ttl) if timestamp > 0 else ttl)


def expired(timestamp: int, ttl: int, now: int) -> bool:
    """``TtlUtils.expired``."""
    return expiration_timestamp(timestamp, ttl) <= now


# -- the handles -----------------------------------------------------------------------------------
def _identity(value: Any) -> Any:
    return value


class _TtlHandle:
    """``copy``: what a serialize/deserialize round trip gives (the adapter's, PyFlink's copies)."""

    def __init__(self, backend, descriptor, where, config: TtlConfig, clock: Callable[[], int],
                 copy: Callable[[Any], Any] = _identity):
        self._backend, self._name, self._where = backend, descriptor.name, where
        self._type_info = getattr(descriptor, "type_info", None)
        self._config, self._clock, self._copy = config, clock, copy

    def clear(self) -> None:
        self._backend.clear(self._name)

    def _expired(self, value: TtlValue, now: int) -> bool:
        return expired(value.last_access_timestamp, self._config.ttl, now)

    def _refreshes_on_read(self) -> bool:
        return self._config.update_on_read

    def _stamp(self, previous: TtlValue | None, now: int) -> int:
        """The timestamp a write gives (``previous``: what the write replaces, if anything)."""
        return now

    def _stored(self, default=None):
        stored = self._backend.get(self._name)
        if stored is None:
            return default
        if not isinstance(stored, (TtlValue, list, dict)):
            raise UnsupportedFeature(f"{self._where} holds a value written without TTL: Flink cannot restore "
                                     f"state into a descriptor that enables TTL (StateMigrationException)")
        return stored

    def _read(self, value: TtlValue | None, write: Callable[[TtlValue], None],
              remove: Callable[[], None], now: int) -> TtlValue | None:
        """Flink's ``AbstractTtlDecorator.getWrappedWithTtlCheckAndUpdate``."""
        if value is None:
            return None
        if self._expired(value, now):
            remove()
            return value if self._config.return_expired else None
        if self._refreshes_on_read():
            write(TtlValue(value.user_value, now))
        return value


class TtlValueState(_TtlHandle, st.ValueState):
    def _current(self) -> TtlValue | None:
        return self._read(self._stored(), lambda v: self._backend.put(self._name, v),
                          lambda: self._backend.clear(self._name), self._clock())

    def value(self):
        current = self._current()
        return None if current is None else self._copy(current.user_value)

    def update(self, value) -> None:
        if value is None:
            self._backend.clear(self._name)  # Flink: updating with null removes the value
            return
        value = check_value(self._type_info, self._copy(value), self._where)
        self._backend.put(self._name, TtlValue(value, self._stamp(self._stored(), self._clock())))


class TtlListState(_TtlHandle, st.ListState):
    def __init__(self, backend, descriptor, where, config, clock, copy=_identity):
        super().__init__(backend, descriptor, where, config, clock, copy)
        self._type_info = getattr(descriptor, "elem_type_info", None)

    def get(self):
        """``TtlListState.get`` read to its end (PyFlink reads the whole list)."""
        stored = self._stored([])
        now = self._clock()
        unexpired = [v for v in stored if not self._expired(v, now)]
        if self._refreshes_on_read() and unexpired:
            self._backend.put(self._name, [TtlValue(v.user_value, now) for v in unexpired])
        result = stored if self._config.return_expired else unexpired
        if stored and not unexpired:
            self._backend.clear(self._name)
        return [self._copy(v.user_value) for v in result]

    def add(self, value) -> None:
        self.add_all([value])

    def add_all(self, values) -> None:
        now = self._clock()
        new = [TtlValue(check_value(self._type_info, self._copy(v), self._where), self._stamp(None, now))
               for v in values]
        if new:
            self._backend.put(self._name, list(self._stored([])) + new)

    def update(self, values) -> None:
        now = self._clock()
        new = [TtlValue(check_value(self._type_info, self._copy(v), self._where), self._stamp(None, now))
               for v in values]
        if new:
            self._backend.put(self._name, new)
        else:
            self._backend.clear(self._name)


class TtlMapState(_TtlHandle, st.MapState):
    def __init__(self, backend, descriptor, where, config, clock, copy=_identity):
        super().__init__(backend, descriptor, where, config, clock, copy)
        self._key_type = getattr(descriptor, "key_type_info", None)
        self._value_type = getattr(descriptor, "value_type_info", None)

    def _put_entry(self, key, value: TtlValue) -> None:
        updated = dict(self._stored({}))
        updated[key] = value
        self._backend.put(self._name, updated)

    def _remove_entry(self, key) -> None:
        stored = self._stored({})
        if key in stored:
            updated = dict(stored)
            del updated[key]
            if updated:
                self._backend.put(self._name, updated)
            else:
                self._backend.clear(self._name)

    def _entry(self, key, now: int) -> TtlValue | None:
        return self._read(self._stored({}).get(key), lambda v: self._put_entry(key, v),
                          lambda: self._remove_entry(key), now)

    def get(self, key):
        entry = self._entry(key, self._clock())
        return None if entry is None else self._copy(entry.user_value)

    def put(self, key, value) -> None:
        self.put_all([(key, value)])

    def put_all(self, dict_value) -> None:
        pairs = dict_value.items() if hasattr(dict_value, "items") else dict_value
        now = self._clock()
        stored = self._stored({})
        updated = dict(stored)
        for key, value in pairs:
            key = check_value(self._key_type, self._copy(key), self._where)
            value = check_value(self._value_type, self._copy(value), self._where)
            updated[key] = TtlValue(value, self._stamp(stored.get(key), now))
        self._backend.put(self._name, updated)

    def remove(self, key) -> None:
        self._remove_entry(key)

    def contains(self, key) -> bool:
        return self._entry(key, self._clock()) is not None  # TtlMapState.contains: get(key) != null

    def _entries(self) -> list:
        """``TtlMapState.entries()`` iterated to its end: the read rule entry by entry."""
        now = self._clock()
        out = []
        for key in list(self._stored({})):
            entry = self._entry(key, now)
            if entry is not None:
                out.append((key, entry.user_value))
        return out

    def items(self):
        return [(self._copy(k), self._copy(v)) for k, v in self._entries()]

    def keys(self):
        return [self._copy(k) for k, _ in self._entries()]

    def values(self):
        return [self._copy(v) for _, v in self._entries()]

    def is_empty(self) -> bool:
        return not self._stored({})  # TtlMapState.isEmpty: the stored map's, expired entries included


class TtlReducingState(_TtlHandle, st.ReducingState):
    def __init__(self, backend, descriptor, where, config, clock, copy=_identity):
        super().__init__(backend, descriptor, where, config, clock, copy)
        function = descriptor.get_reduce_function()
        self._reduce = function.reduce if hasattr(function, "reduce") else function

    def _current(self, now: int) -> TtlValue | None:
        return self._read(self._stored(), lambda v: self._backend.put(self._name, v),
                          lambda: self._backend.clear(self._name), now)

    def get(self):
        current = self._current(self._clock())
        return None if current is None else self._copy(current.user_value)

    def add(self, value) -> None:
        now = self._clock()
        current = self._current(now)
        result = value if current is None else self._reduce(self._copy(current.user_value), value)
        result = check_value(self._type_info, self._copy(result), self._where)
        self._backend.put(self._name, TtlValue(result, self._stamp(current, now)))


class TtlAggregatingState(TtlReducingState, st.AggregatingState):
    def __init__(self, backend, descriptor, where, config, clock, copy=_identity):
        _TtlHandle.__init__(self, backend, descriptor, where, config, clock, copy)
        self._function = descriptor.get_agg_function()

    def get(self):
        current = self._current(self._clock())
        return None if current is None else self._function.get_result(self._copy(current.user_value))

    def add(self, value) -> None:
        if value is None:  # PyFlink: adding None clears the state
            self.clear()
            return
        now = self._clock()
        current = self._current(now)
        accumulator = self._function.create_accumulator() if current is None else self._copy(current.user_value)
        accumulator = self._function.add(value, accumulator)
        accumulator = check_value(self._type_info, self._copy(accumulator), self._where)
        self._backend.put(self._name, TtlValue(accumulator, self._stamp(current, now)))


HANDLES = {"value": TtlValueState, "list": TtlListState, "map": TtlMapState, "reducing": TtlReducingState,
           "aggregating": TtlAggregatingState}


def ttl_state(backend: Any, descriptor: Any, kind: str, where: str, config: TtlConfig,
              clock: Callable[[], int], copy: Callable[[Any], Any] = _identity):
    """The TTL handle of ``descriptor`` (``kind``: a descriptor class name) on ``backend``; with
    ``cleanup_full_snapshot``, the backend's snapshots leave out what is expired then."""
    kind = KINDS[kind]
    if config.cleanup_full_snapshot:
        _install_full_snapshot_cleanup(backend, descriptor.name, kind, config, clock)
    return HANDLES[kind](backend, descriptor, where, config, clock, copy)


# -- cleanup in full snapshots ---------------------------------------------------------------------
def _install_full_snapshot_cleanup(backend: Any, name: str, kind: str, config: TtlConfig, clock) -> None:
    """Wraps ``backend.snapshot`` (of this backend object only) so that the keyed-state snapshot
    leaves out the entries of ``name`` expired at snapshot time (Flink's
    ``TtlStateSnapshotTransformer`` of ``cleanupFullSnapshot``). Only a keyed state backend of
    the runtime (``snapshot()``) has snapshots; other stores (window-scoped state) keep theirs."""
    if not callable(getattr(backend, "snapshot", None)):
        return
    registry = backend.__dict__.get("_ttl_full_snapshot_cleanup")
    if registry is None:
        registry = backend.__dict__["_ttl_full_snapshot_cleanup"] = {}
        original = backend.snapshot

        def snapshot():
            return cleanup_snapshot(original(), registry)

        backend.snapshot = snapshot
    registry[name] = (kind, config.ttl, clock)


def _unexpired(kind: str, stored: Any, ttl: int, now: int) -> Any:
    """``stored`` without its expired parts; None when nothing is left."""
    if kind == "list":
        kept = [v for v in stored if not expired(v.last_access_timestamp, ttl, now)]
        return kept or None
    if kind == "map":
        kept = {k: v for k, v in stored.items() if not expired(v.last_access_timestamp, ttl, now)}
        return kept or None
    return None if expired(stored.last_access_timestamp, ttl, now) else stored


def cleanup_snapshot(snapshot: dict, registry: dict) -> dict:
    """A keyed-state snapshot (``{key group: {state name: {key: stored}}}``, a private copy)
    without the entries expired now, for the states registered for full-snapshot cleanup."""
    for key_group in list(snapshot):
        tables = snapshot[key_group]
        for name, (kind, ttl, clock) in registry.items():
            table = tables.get(name)
            if not table:
                continue
            now = clock()
            for key in list(table):
                stored = table[key]
                if not isinstance(stored, (TtlValue, list, dict)):
                    continue
                kept = _unexpired(kind, stored, ttl, now)
                if kept is None:
                    del table[key]
                else:
                    table[key] = kept
        if not any(tables.values()):
            del snapshot[key_group]
    return snapshot

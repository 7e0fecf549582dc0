"""``pyflink.datastream.state``: the keyed state interfaces, their descriptors and
:class:`StateTtlConfig`. The runtime's implementations (:mod:`streamproof.flink.adapter`) keep
PyFlink's serialized semantics: what is stored is a copy, what is read is a fresh copy."""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import Enum
from typing import Dict, Generic, Iterable, Iterator, List, Optional, Tuple, TypeVar

from streamproof.flink.common.time import Duration, Time
from streamproof.flink.common.typeinfo import TypeInformation, Types
from streamproof.flink.datastream._base import AggregateFunction, ReduceFunction, ReduceFunctionWrapper

__all__ = [
    "ValueStateDescriptor", "ValueState", "ListStateDescriptor", "ListState", "MapStateDescriptor", "MapState",
    "ReducingStateDescriptor", "ReducingState", "AggregatingStateDescriptor", "AggregatingState",
    "ReadOnlyBroadcastState", "BroadcastState", "StateTtlConfig", "OperatorStateStore",
]

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")
IN = TypeVar("IN")
OUT = TypeVar("OUT")


class OperatorStateStore(ABC):
    """Operator state (PyFlink: broadcast state only)."""

    @abstractmethod
    def get_broadcast_state(self, state_descriptor: "MapStateDescriptor") -> "BroadcastState":
        pass


class State(ABC):
    @abstractmethod
    def clear(self) -> None:
        pass


class ValueState(State, Generic[T]):
    @abstractmethod
    def value(self) -> T:
        pass

    @abstractmethod
    def update(self, value: T) -> None:
        pass


class AppendingState(State, Generic[IN, OUT]):
    @abstractmethod
    def get(self) -> OUT:
        pass

    @abstractmethod
    def add(self, value: IN) -> None:
        pass


class MergingState(AppendingState[IN, OUT]):
    pass


class ReducingState(MergingState[T, T]):
    pass


class AggregatingState(MergingState[IN, OUT]):
    pass


class ListState(MergingState[T, Iterable[T]]):
    @abstractmethod
    def update(self, values: List[T]) -> None:
        pass

    @abstractmethod
    def add_all(self, values: List[T]) -> None:
        pass

    def __iter__(self) -> Iterator[T]:
        return iter(self.get())


class MapState(State, Generic[K, V]):
    @abstractmethod
    def get(self, key: K) -> V:
        pass

    @abstractmethod
    def put(self, key: K, value: V) -> None:
        pass

    @abstractmethod
    def put_all(self, dict_value: Dict[K, V]) -> None:
        pass

    @abstractmethod
    def remove(self, key: K) -> None:
        pass

    @abstractmethod
    def contains(self, key: K) -> bool:
        pass

    @abstractmethod
    def items(self) -> Iterable[Tuple[K, V]]:
        pass

    @abstractmethod
    def keys(self) -> Iterable[K]:
        pass

    @abstractmethod
    def values(self) -> Iterable[V]:
        pass

    @abstractmethod
    def is_empty(self) -> bool:
        pass

    def __getitem__(self, key: K) -> V:
        return self.get(key)

    def __setitem__(self, key: K, value: V) -> None:
        self.put(key, value)

    def __delitem__(self, key: K) -> None:
        self.remove(key)

    def __contains__(self, key: K) -> bool:
        return self.contains(key)

    def __iter__(self) -> Iterator[K]:
        return iter(self.keys())


class ReadOnlyBroadcastState(State, Generic[K, V]):
    """A read-only view of the :class:`BroadcastState` (``process_element`` of a broadcast
    function, ``on_timer``): reads return copies; it has no ``put``/``put_all``/``remove``."""

    @abstractmethod
    def get(self, key: K) -> V:
        pass

    @abstractmethod
    def contains(self, key: K) -> bool:
        pass

    @abstractmethod
    def items(self) -> Iterable[Tuple[K, V]]:
        pass

    @abstractmethod
    def keys(self) -> Iterable[K]:
        pass

    @abstractmethod
    def values(self) -> Iterable[V]:
        pass

    @abstractmethod
    def is_empty(self) -> bool:
        pass

    def __getitem__(self, key: K) -> V:
        return self.get(key)

    def __contains__(self, key: K) -> bool:
        return self.contains(key)

    def __iter__(self) -> Iterator[K]:
        return iter(self.keys())


class BroadcastState(ReadOnlyBroadcastState[K, V]):
    """The broadcast state of ``process_broadcast_element``: a map each subtask keeps its own copy
    of (operator state); every subtask must store the same elements (Flink restores any copy)."""

    @abstractmethod
    def put(self, key: K, value: V) -> None:
        pass

    @abstractmethod
    def put_all(self, dict_value: Dict[K, V]) -> None:
        pass

    @abstractmethod
    def remove(self, key: K) -> None:
        pass

    def __setitem__(self, key: K, value: V) -> None:
        self.put(key, value)

    def __delitem__(self, key: K) -> None:
        self.remove(key)


class StateDescriptor(ABC):
    """The base of state descriptors: a name and the type information of what is stored."""

    def __init__(self, name: str, type_info: TypeInformation):
        self.name = name
        self.type_info = type_info
        self._ttl_config = None  # type: Optional[StateTtlConfig]

    def get_name(self) -> str:
        return self.name

    def enable_time_to_live(self, ttl_config: "StateTtlConfig"):
        """Configures state time-to-live (TTL): the state's values expire ``ttl`` after their last
        access (:mod:`streamproof.flink.state_ttl` has the semantics, docs/flink-api.md "State TTL")."""
        self._ttl_config = ttl_config


class ValueStateDescriptor(StateDescriptor):
    def __init__(self, name: str, value_type_info: TypeInformation):
        super().__init__(name, value_type_info)


class ListStateDescriptor(StateDescriptor):
    def __init__(self, name: str, elem_type_info: TypeInformation):
        super().__init__(name, Types.LIST(elem_type_info))
        self.elem_type_info = elem_type_info


class MapStateDescriptor(StateDescriptor):
    def __init__(self, name: str, key_type_info: TypeInformation, value_type_info: TypeInformation):
        super().__init__(name, Types.MAP(key_type_info, value_type_info))
        self.key_type_info, self.value_type_info = key_type_info, value_type_info


class ReducingStateDescriptor(StateDescriptor):
    def __init__(self, name: str, reduce_function, type_info: TypeInformation):
        super().__init__(name, type_info)
        if not isinstance(reduce_function, ReduceFunction):
            if callable(reduce_function):
                reduce_function = ReduceFunctionWrapper(reduce_function)
            else:
                raise TypeError("The input must be a ReduceFunction or a callable function!")
        self._reduce_function = reduce_function

    def get_reduce_function(self):
        return self._reduce_function


class AggregatingStateDescriptor(StateDescriptor):
    def __init__(self, name: str, agg_function, state_type_info):
        super().__init__(name, state_type_info)
        if not isinstance(agg_function, AggregateFunction):
            raise TypeError("The input must be a pyflink.datastream.functions.AggregateFunction!")
        self._agg_function = agg_function

    def get_agg_function(self):
        return self._agg_function


class StateTtlConfig:
    """State time-to-live configuration (PyFlink's builder API): the semantics are those of Flink's
    TTL state decorators, run by :mod:`streamproof.flink.state_ttl`."""

    class UpdateType(Enum):
        """When the last-access timestamp is set: ``Disabled`` (no TTL), ``OnCreateAndWrite``
        (default), ``OnReadAndWrite`` (reads too)."""
        Disabled = 0
        OnCreateAndWrite = 1
        OnReadAndWrite = 2

    class StateVisibility(Enum):
        """Whether an expired value not yet cleaned up may be read."""
        ReturnExpiredIfNotCleanedUp = 0
        NeverReturnExpired = 1

    class TtlTimeCharacteristic(Enum):
        """The time scale of TTL: processing time only (Flink has no event-time TTL)."""
        ProcessingTime = 0

    def __init__(self, update_type, state_visibility, ttl_time_characteristic, ttl: Time, cleanup_strategies):
        self._update_type = update_type
        self._state_visibility = state_visibility
        self._ttl_time_characteristic = ttl_time_characteristic
        self._ttl = ttl
        self._cleanup_strategies = cleanup_strategies

    @staticmethod
    def new_builder(ttl: Time) -> "StateTtlConfig.Builder":
        return StateTtlConfig.Builder(ttl)

    def get_update_type(self):
        return self._update_type

    def get_state_visibility(self):
        return self._state_visibility

    def get_ttl(self) -> Time:
        return self._ttl

    def get_ttl_time_characteristic(self):
        return self._ttl_time_characteristic

    def is_enabled(self) -> bool:
        return self._update_type.value != StateTtlConfig.UpdateType.Disabled.value

    def get_cleanup_strategies(self) -> "StateTtlConfig.CleanupStrategies":
        return self._cleanup_strategies

    def __repr__(self):
        return (f"StateTtlConfig<update_type={self._update_type}, state_visibility={self._state_visibility}, "
                f"ttl_time_characteristic={self._ttl_time_characteristic}, ttl={self._ttl}>")

    class Builder:
        def __init__(self, ttl: Time):
            self._ttl = ttl
            self._update_type = StateTtlConfig.UpdateType.OnCreateAndWrite
            self._state_visibility = StateTtlConfig.StateVisibility.NeverReturnExpired
            self._ttl_time_characteristic = StateTtlConfig.TtlTimeCharacteristic.ProcessingTime
            self._is_cleanup_in_background = True
            self._strategies: Dict = {}

        def set_update_type(self, update_type) -> "StateTtlConfig.Builder":
            self._update_type = update_type
            return self

        def update_ttl_on_create_and_write(self) -> "StateTtlConfig.Builder":
            return self.set_update_type(StateTtlConfig.UpdateType.OnCreateAndWrite)

        def update_ttl_on_read_and_write(self) -> "StateTtlConfig.Builder":
            return self.set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)

        def set_state_visibility(self, state_visibility) -> "StateTtlConfig.Builder":
            self._state_visibility = state_visibility
            return self

        def return_expired_if_not_cleaned_up(self) -> "StateTtlConfig.Builder":
            return self.set_state_visibility(StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp)

        def never_return_expired(self) -> "StateTtlConfig.Builder":
            return self.set_state_visibility(StateTtlConfig.StateVisibility.NeverReturnExpired)

        def set_ttl_time_characteristic(self, ttl_time_characteristic) -> "StateTtlConfig.Builder":
            self._ttl_time_characteristic = ttl_time_characteristic
            return self

        def use_processing_time(self) -> "StateTtlConfig.Builder":
            return self.set_ttl_time_characteristic(StateTtlConfig.TtlTimeCharacteristic.ProcessingTime)

        def cleanup_full_snapshot(self) -> "StateTtlConfig.Builder":
            """Expired state is left out of full snapshots (checkpoints and savepoints)."""
            self._strategies[StateTtlConfig.CleanupStrategies.Strategies.FULL_STATE_SCAN_SNAPSHOT] = \
                StateTtlConfig.CleanupStrategies.EMPTY_STRATEGY
            return self

        def cleanup_incrementally(self, cleanup_size: int, run_cleanup_for_every_record) -> "StateTtlConfig.Builder":
            """Flink's heap backend checks ``cleanup_size`` entries per state access (and per
            record) and removes expired ones; accepted, invisible to the function here (expired
            values are removed when read; docs/decisions.md "State TTL")."""
            self._strategies[StateTtlConfig.CleanupStrategies.Strategies.INCREMENTAL_CLEANUP] = \
                StateTtlConfig.CleanupStrategies.IncrementalCleanupStrategy(cleanup_size, run_cleanup_for_every_record)
            return self

        def cleanup_in_rocksdb_compact_filter(self, query_time_after_num_entries,
                                              periodic_compaction_time=None) -> "StateTtlConfig.Builder":
            """RocksDB's compaction filter drops expired entries; accepted, invisible to the
            function here (as :meth:`cleanup_incrementally`)."""
            self._strategies[StateTtlConfig.CleanupStrategies.Strategies.ROCKSDB_COMPACTION_FILTER] = \
                StateTtlConfig.CleanupStrategies.RocksdbCompactFilterCleanupStrategy(
                    query_time_after_num_entries,
                    periodic_compaction_time if periodic_compaction_time else Duration.of_days(30))
            return self

        def disable_cleanup_in_background(self) -> "StateTtlConfig.Builder":
            self._is_cleanup_in_background = False
            return self

        def set_ttl(self, ttl: Time) -> "StateTtlConfig.Builder":
            self._ttl = ttl
            return self

        def build(self) -> "StateTtlConfig":
            return StateTtlConfig(self._update_type, self._state_visibility, self._ttl_time_characteristic,
                                  self._ttl, StateTtlConfig.CleanupStrategies(dict(self._strategies),
                                                                              self._is_cleanup_in_background))

    class CleanupStrategies:
        """When expired state is cleaned up besides reads (PyFlink's names)."""

        class Strategies(Enum):
            FULL_STATE_SCAN_SNAPSHOT = 0
            INCREMENTAL_CLEANUP = 1
            ROCKSDB_COMPACTION_FILTER = 2

        class CleanupStrategy(ABC):
            pass

        class EmptyCleanupStrategy(CleanupStrategy):
            pass

        class IncrementalCleanupStrategy(CleanupStrategy):
            def __init__(self, cleanup_size: int, run_cleanup_for_every_record: bool):
                self._cleanup_size = cleanup_size
                self._run_cleanup_for_every_record = run_cleanup_for_every_record

            def get_cleanup_size(self) -> int:
                return self._cleanup_size

            def run_cleanup_for_every_record(self) -> bool:
                return self._run_cleanup_for_every_record

        class RocksdbCompactFilterCleanupStrategy(CleanupStrategy):
            def __init__(self, query_time_after_num_entries: int, periodic_compaction_time=None):
                self._query_time_after_num_entries = query_time_after_num_entries
                self._periodic_compaction_time = periodic_compaction_time if periodic_compaction_time \
                    else Duration.of_days(30)

            def get_query_time_after_num_entries(self) -> int:
                return self._query_time_after_num_entries

            def get_periodic_compaction_time(self) -> Duration:
                return self._periodic_compaction_time

        EMPTY_STRATEGY = EmptyCleanupStrategy()

        def __init__(self, strategies: Dict, is_cleanup_in_background: bool):
            self._strategies = strategies
            self._is_cleanup_in_background = is_cleanup_in_background

        def is_cleanup_in_background(self) -> bool:
            return self._is_cleanup_in_background

        def in_full_snapshot(self) -> bool:
            return StateTtlConfig.CleanupStrategies.Strategies.FULL_STATE_SCAN_SNAPSHOT in self._strategies

        def get_incremental_cleanup_strategy(self):
            default = StateTtlConfig.CleanupStrategies.IncrementalCleanupStrategy(5, False) \
                if self._is_cleanup_in_background else None
            return self._strategies.get(StateTtlConfig.CleanupStrategies.Strategies.INCREMENTAL_CLEANUP, default)

        def get_rocksdb_compact_filter_cleanup_strategy(self):
            default = StateTtlConfig.CleanupStrategies.RocksdbCompactFilterCleanupStrategy(1000) \
                if self._is_cleanup_in_background else None
            return self._strategies.get(StateTtlConfig.CleanupStrategies.Strategies.ROCKSDB_COMPACTION_FILTER, default)

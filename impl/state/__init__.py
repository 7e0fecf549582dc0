"""Keyed state (Flink's ``org.apache.flink.runtime.state``): key groups as
``KeyGroupRangeAssignment`` and ``KeyGroupRange`` compute them (:mod:`.key_groups`), the current key
of a keyed operator (:mod:`.key_context`, ``InternalKeyContext``), the heap keyed state backend with
its state kinds (:mod:`.keyed_state_backend`, ``HeapKeyedStateBackend``) and the iteration
order of Java's ``HashMap`` that Flink's maps of named state and timer services show
(:mod:`.java_hashmap`).

Left out: RocksDB and the changelog backend, state TTL (``StateTtlConfig`` lives with
``streamproof.flink``'s state handles), state serializers (state is Python values, copied on
snapshot), queryable state and operator (non-keyed) list/union state; broadcast state lives with
the operators that use it (:mod:`streamproof.impl.tasks.chained_operators`).
"""

"""Key groups, exactly as Flink's ``KeyGroupRangeAssignment`` and ``KeyGroupRange``.

A key is hashed the way the JVM hashes it (``String.hashCode`` over UTF-16 code units for ``str``,
``Long.hashCode`` for a plain ``int``, ``Integer.hashCode`` for :class:`Int32`), then scrambled by
``MathUtils.murmurHash`` and reduced modulo the maximum parallelism.
"""

from __future__ import annotations

import struct
import sys
from array import array
from dataclasses import dataclass
from functools import lru_cache
from operator import mul
from typing import Any, Iterator, Union

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
UPPER_BOUND_MAX_PARALLELISM = 1 << 15  # Transformation.UPPER_BOUND_MAX_PARALLELISM
_MASK32 = 0xFFFFFFFF


@dataclass(frozen=True)
class Int32:
    """A key that hashes as a Java ``Integer`` (a plain ``int`` hashes as a Java ``Long``)."""

    value: int

    def __post_init__(self) -> None:
        if isinstance(self.value, bool) or not isinstance(self.value, int):
            raise TypeError(f"Int32 needs an int, got {type(self.value).__name__}")
        if not INT32_MIN <= self.value <= INT32_MAX:
            raise ValueError(f"Int32 value {self.value} is outside [-2^31, 2^31-1]")

    def __repr__(self) -> str:
        return f"Int32({self.value})"


Key = Union[str, int, Int32]


def _to_int32(u: int) -> int:
    u &= _MASK32
    return u - (1 << 32) if u & 0x80000000 else u


@dataclass(frozen=True)
class CompositeKey:
    """A key that is not a String, Long or Integer (a tuple from ``key_by(lambda r: (a, b))``, a
    float, a bool): carried with the JVM ``hashCode()`` its Flink counterpart (TupleN / Row,
    Double, Boolean) would have, so it is assigned to key groups like one. The operator sees
    ``value``."""

    value: Any
    hash_code: int

    @classmethod
    def of(cls, value: Any) -> "CompositeKey":
        return cls(value, _value_hash_code(value))


def _value_hash_code(value: Any) -> int:
    if isinstance(value, bool):
        return 1231 if value else 1237  # Boolean.hashCode
    if isinstance(value, float):
        bits = 0x7FF8000000000000 if value != value else \
            struct.unpack(">q", struct.pack(">d", value))[0] & 0xFFFFFFFFFFFFFFFF  # doubleToLongBits
        return _to_int32(bits ^ (bits >> 32))  # Double.hashCode
    if value is None:
        return 0
    if isinstance(value, tuple):  # TupleN / Row: 31 * h + hashCode(field)
        h = 0
        for field_value in value:
            h = (31 * h + _value_hash_code(field_value)) & _MASK32
        return _to_int32(h)
    if isinstance(value, (str, int, Int32)):
        return java_hash_code(value)
    return _pickled_hash_code(value)


def _pickled_hash_code(value: Any) -> int:
    """Any other key (an object PyFlink keys by its pickled bytes, e.g. an ``OutputTag``): a hash of
    those bytes, the same for equal keys in every process (Python's ``hash`` is salted per process).
    Which subtask such a key lands on is not Flink's; that each key has one is."""
    import pickle
    import zlib

    try:
        data = pickle.dumps(value, protocol=4)
    except Exception as e:  # noqa: BLE001 - an unpicklable key cannot be a PyFlink key either
        raise TypeError(f"unsupported key type {type(value).__name__}: not picklable ({e})") from None
    return _to_int32(zlib.crc32(data))


_UTF16_NATIVE = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"  # what array("H") reads
_powers_of_31 = [1]  # 31**i mod 2**32 for i = 0, 1, ...; replaced by a longer list when needed


def _string_hash_code(key: str) -> int:
    """``String.hashCode``: the sum of the UTF-16 code units times 31**(n-1-i), mod 2**32, summed in C."""
    units = key.encode("ascii") if key.isascii() else array("H", key.encode(_UTF16_NATIVE, "surrogatepass"))
    powers = _powers_of_31
    if len(powers) < len(units):
        powers = _more_powers_of_31(len(units))
    h = sum(map(mul, reversed(units), powers)) & _MASK32
    return h - (1 << 32) if h & 0x80000000 else h  # _to_int32


def _more_powers_of_31(n: int) -> list[int]:
    global _powers_of_31
    powers = list(_powers_of_31)
    while len(powers) < 2 * n:
        powers.append(powers[-1] * 31 & _MASK32)
    _powers_of_31 = powers  # a new list, bound at once: another thread reads the old or the new one
    return powers


def java_hash_code(key: Key) -> int:
    """The key's ``hashCode()`` on the JVM, as a signed 32-bit int."""
    if isinstance(key, CompositeKey):
        return key.hash_code
    if isinstance(key, str):
        return _string_hash_code(key)
    if isinstance(key, Int32):
        return key.value
    if isinstance(key, int) and not isinstance(key, bool):
        if not INT64_MIN <= key <= INT64_MAX:
            raise ValueError(f"int key {key} is outside the Java long range")
        u = key & 0xFFFFFFFFFFFFFFFF
        return _to_int32(u ^ (u >> 32))
    raise TypeError(f"unsupported key type {type(key).__name__}: use str, int or Int32")


def murmur_hash(code: int) -> int:
    """Flink's ``MathUtils.murmurHash(int)``: a non-negative 32-bit scramble (rotations inlined)."""
    # A rotation's bits above 32 are not masked off: the multiplication after it is taken mod 2^32.
    code = (code * 0xCC9E2D51) & _MASK32
    code = (code << 15) | (code >> 17)  # rotl 15
    code = (code * 0x1B873593) & _MASK32
    code = (code << 13) | (code >> 19)  # rotl 13
    code = (code * 5 + 0xE6546B64) & _MASK32
    code ^= 4
    # MathUtils.bitMix
    code ^= code >> 16
    code = (code * 0x85EBCA6B) & _MASK32
    code ^= code >> 13
    code = (code * 0xC2B2AE35) & _MASK32
    code ^= code >> 16
    if code < 0x80000000:
        return code
    signed = code - (1 << 32)
    return -signed if signed != INT32_MIN else 0


def _check_max_parallelism(max_parallelism: int) -> None:
    if not 0 < max_parallelism <= UPPER_BOUND_MAX_PARALLELISM:
        raise ValueError(f"max_parallelism must be in [1, {UPPER_BOUND_MAX_PARALLELISM}], got {max_parallelism}")


def compute_key_group_for_key_hash(key_hash: int, max_parallelism: int) -> int:
    return murmur_hash(key_hash) % max_parallelism


@lru_cache(maxsize=65536, typed=True)
def assign_to_key_group(key: Key, max_parallelism: int) -> int:
    """``KeyGroupRangeAssignment.assignToKeyGroup(key, maxParallelism)``."""
    _check_max_parallelism(max_parallelism)
    return compute_key_group_for_key_hash(java_hash_code(key), max_parallelism)


class KeyGroupMemo:
    """:func:`assign_to_key_group` for one max parallelism, remembering every key's key group.

    ``key_groups`` maps ``str``, :class:`Int32` and :class:`CompositeKey` keys to their key group:
    equal keys of these types are of one type, so a hit is what :func:`assign_to_key_group` returns.
    ``int`` keys are remembered apart, looked up only for keys of exactly type ``int`` (``1 == True
    == 1.0``, and a ``bool`` or ``float`` is no key: :func:`assign_to_key_group` rejects it). Other
    keys are not remembered. Each dict is cleared when it holds ``limit`` keys. Remembered keys
    are hashed here, not through :func:`assign_to_key_group`'s LRU cache (which would hold them twice).
    """

    __slots__ = ("max_parallelism", "key_groups", "int_key_groups", "limit", "_valid")

    def __init__(self, max_parallelism: int, limit: int = 1 << 18):
        self.max_parallelism = max_parallelism
        self.key_groups: dict[Key, int] = {}
        self.int_key_groups: dict[int, int] = {}
        self.limit = limit
        self._valid = max_parallelism.__class__ is int and 0 < max_parallelism <= UPPER_BOUND_MAX_PARALLELISM

    def key_group_of(self, key: Key) -> int:
        """``assign_to_key_group(key, max_parallelism)``, remembered (callers look in
        ``key_groups`` first)."""
        key_type = key.__class__
        if key_type is int:
            memo = self.int_key_groups
            key_group = memo.get(key)
            if key_group is not None:
                return key_group
        elif key_type is str or key_type is Int32 or key_type is CompositeKey:
            memo = self.key_groups
        else:
            return assign_to_key_group(key, self.max_parallelism)
        if not self._valid:  # a max parallelism assign_to_key_group rejects, or not an int
            return assign_to_key_group(key, self.max_parallelism)
        key_hash = _string_hash_code(key) if key_type is str else java_hash_code(key)
        key_group = murmur_hash(key_hash) % self.max_parallelism
        if len(memo) >= self.limit:
            memo.clear()
        memo[key] = key_group
        return key_group

    def forget(self) -> None:
        self.key_groups.clear()
        self.int_key_groups.clear()


_memos: dict[int, KeyGroupMemo] = {}


def key_group_memo(max_parallelism: int) -> KeyGroupMemo:
    """The process-wide :class:`KeyGroupMemo` of ``max_parallelism`` (every key context of an
    operator with that max parallelism shares it, as they shared the cache of
    :func:`assign_to_key_group`)."""
    if max_parallelism.__class__ is not int:  # 128.0 == 128, but its key groups are floats
        return KeyGroupMemo(max_parallelism)
    memo = _memos.get(max_parallelism)
    if memo is None:
        memo = _memos.setdefault(max_parallelism, KeyGroupMemo(max_parallelism))
    return memo


def forget_key_groups() -> None:
    """Empties every remembered key group (the memos and :func:`assign_to_key_group`'s cache):
    the next lookup of each key computes it again (benchmarks measure that cold start)."""
    for memo in list(_memos.values()):
        memo.forget()
    assign_to_key_group.cache_clear()


def compute_key_group_range_for_operator_index(
    max_parallelism: int, parallelism: int, operator_index: int
) -> "KeyGroupRange":
    """The key groups operator ``operator_index`` of ``parallelism`` owns (Flink's argument order)."""
    _check_max_parallelism(max_parallelism)
    if not 0 < parallelism <= max_parallelism:
        raise ValueError(f"parallelism must be in [1, max_parallelism={max_parallelism}], got {parallelism}")
    if not 0 <= operator_index < parallelism:
        raise ValueError(f"operator_index must be in [0, {parallelism - 1}], got {operator_index}")
    start = (operator_index * max_parallelism + parallelism - 1) // parallelism
    end = ((operator_index + 1) * max_parallelism - 1) // parallelism
    return KeyGroupRange(start, end)


def compute_operator_index_for_key_group(max_parallelism: int, parallelism: int, key_group_id: int) -> int:
    """Which of ``parallelism`` operators owns ``key_group_id``."""
    _check_max_parallelism(max_parallelism)
    if not 0 <= key_group_id < max_parallelism:
        raise ValueError(f"key group {key_group_id} is outside [0, {max_parallelism - 1}]")
    return key_group_id * parallelism // max_parallelism


@dataclass(frozen=True)
class KeyGroupRange:
    """An inclusive range of key groups ``[start_key_group, end_key_group]``; empty when end < start."""

    start_key_group: int
    end_key_group: int

    def __post_init__(self) -> None:
        if self.start_key_group < 0:
            raise ValueError(f"start_key_group must be >= 0, got {self.start_key_group}")
        if self.end_key_group < self.start_key_group - 1:
            raise ValueError(f"invalid key group range [{self.start_key_group}, {self.end_key_group}]")

    @classmethod
    def empty(cls) -> "KeyGroupRange":
        return cls(0, -1)

    @classmethod
    def of(cls, start_key_group: int, end_key_group: int) -> "KeyGroupRange":
        return cls(start_key_group, end_key_group)

    def contains(self, key_group: int) -> bool:
        return self.start_key_group <= key_group <= self.end_key_group

    __contains__ = contains

    def get_number_of_key_groups(self) -> int:
        return max(0, self.end_key_group - self.start_key_group + 1)

    def __len__(self) -> int:
        return self.get_number_of_key_groups()

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.start_key_group, self.end_key_group + 1))

    def get_intersection(self, other: "KeyGroupRange") -> "KeyGroupRange":
        start = max(self.start_key_group, other.start_key_group)
        end = min(self.end_key_group, other.end_key_group)
        return KeyGroupRange(start, end) if start <= end else KeyGroupRange.empty()

    def __str__(self) -> str:
        return f"KeyGroupRange{{startKeyGroup={self.start_key_group}, endKeyGroup={self.end_key_group}}}"

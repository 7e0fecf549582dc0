"""Specification of Flink's key-group assignment (``KeyGroupRangeAssignment``).

    key_group(key)   = murmur(java_hash(key)) mod max_parallelism
    operator_range(i) = [ceil(i * M / P), floor(((i + 1) * M - 1) / P)]
    operator_of(kg)   = floor(kg * P / M)

Written independently of ``impl/state/key_groups.py`` (the model may not import the implementation).
A key is a ``str`` (java.lang.String), an ``int`` (java.lang.Long) or ``("int32", n)``
(java.lang.Integer).
"""

from __future__ import annotations


def _int32(x: int) -> int:
    """Two's-complement wrap into [-2^31, 2^31)."""
    return (x + 2**31) % 2**32 - 2**31


def _uint32(x: int) -> int:
    return x % 2**32


def java_hash(key) -> int:
    """``key.hashCode()`` on the JVM."""
    if isinstance(key, str):
        units = key.encode("utf-16-be", "surrogatepass")
        h = 0
        for hi, lo in zip(units[0::2], units[1::2]):
            h = _int32(31 * h + hi * 256 + lo)
        return h
    if isinstance(key, tuple) and len(key) == 2 and key[0] == "int32":
        return _int32(key[1])
    if isinstance(key, int) and not isinstance(key, bool):
        unsigned = key % 2**64
        return _int32(unsigned ^ (unsigned >> 32))
    raise TypeError(f"not a key: {key!r}")


def murmur(code: int) -> int:
    """``MathUtils.murmurHash(int)``."""
    def rotl(x: int, r: int) -> int:
        x = _uint32(x)
        return _uint32(x << r | x >> (32 - r))

    h = rotl(_uint32(code) * 0xCC9E2D51, 15)
    h = _uint32(rotl(h * 0x1B873593, 13) * 5 + 0xE6546B64) ^ 4
    h = _uint32((h ^ (h >> 16)) * 0x85EBCA6B)
    h = _uint32((h ^ (h >> 13)) * 0xC2B2AE35)
    h = _int32(h ^ (h >> 16))
    return abs(h) if h != -(2**31) else 0


def key_group(key, max_parallelism: int) -> int:
    return murmur(java_hash(key)) % max_parallelism


def operator_range(max_parallelism: int, parallelism: int, index: int) -> tuple[int, int]:
    start = -(-(index * max_parallelism) // parallelism)
    end = ((index + 1) * max_parallelism - 1) // parallelism
    return start, end


def operator_of(max_parallelism: int, parallelism: int, kg: int) -> int:
    return kg * parallelism // max_parallelism

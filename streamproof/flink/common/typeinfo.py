"""``pyflink.common.typeinfo``: :class:`Types` and the type-information classes. They describe a
type (for state descriptors and output tags); they are never a value or a default. Keyed state
checks what it stores against them (see :func:`check_value`): a value Flink could not serialize
with that type fails here too, and ``Types.FLOAT()`` keeps single precision, as Java's float.

Size: all of PyFlink's ``pyflink.common.typeinfo`` (a captured job importing it gets this module) and :func:`check_value`.
"""

from __future__ import annotations

import datetime
import decimal
import struct
from contextlib import contextmanager
from enum import Enum
from typing import Any, List

__all__ = ["TypeInformation", "Types"]


class TypeInformation:
    """The base of every type information."""

    def _key(self) -> tuple:
        return (type(self).__name__,)

    def __eq__(self, other) -> bool:
        return isinstance(other, TypeInformation) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return type(self).__name__


class BasicType(Enum):
    STRING = "String"
    BYTE = "Byte"
    BOOLEAN = "Boolean"
    SHORT = "Short"
    INT = "Integer"
    LONG = "Long"
    FLOAT = "Float"
    DOUBLE = "Double"
    CHAR = "Char"
    BIG_INT = "BigInteger"
    BIG_DEC = "BigDecimal"
    INSTANT = "Instant"


class BasicTypeInfo(TypeInformation):
    def __init__(self, basic_type: BasicType):
        self._basic_type = basic_type

    def _key(self):
        return ("basic", self._basic_type)

    def __repr__(self):
        return self._basic_type.value

    @staticmethod
    def STRING_TYPE_INFO():
        return BasicTypeInfo(BasicType.STRING)

    @staticmethod
    def BOOLEAN_TYPE_INFO():
        return BasicTypeInfo(BasicType.BOOLEAN)

    @staticmethod
    def BYTE_TYPE_INFO():
        return BasicTypeInfo(BasicType.BYTE)

    @staticmethod
    def SHORT_TYPE_INFO():
        return BasicTypeInfo(BasicType.SHORT)

    @staticmethod
    def INT_TYPE_INFO():
        return BasicTypeInfo(BasicType.INT)

    @staticmethod
    def LONG_TYPE_INFO():
        return BasicTypeInfo(BasicType.LONG)

    @staticmethod
    def FLOAT_TYPE_INFO():
        return BasicTypeInfo(BasicType.FLOAT)

    @staticmethod
    def DOUBLE_TYPE_INFO():
        return BasicTypeInfo(BasicType.DOUBLE)

    @staticmethod
    def CHAR_TYPE_INFO():
        return BasicTypeInfo(BasicType.CHAR)

    @staticmethod
    def BIG_INT_TYPE_INFO():
        return BasicTypeInfo(BasicType.BIG_INT)

    @staticmethod
    def BIG_DEC_TYPE_INFO():
        return BasicTypeInfo(BasicType.BIG_DEC)

    @staticmethod
    def INSTANT_TYPE_INFO():
        return InstantTypeInfo()


class InstantTypeInfo(BasicTypeInfo):
    def __init__(self):
        super().__init__(BasicType.INSTANT)


class SqlTimeTypeInfo(TypeInformation):
    @staticmethod
    def DATE():
        return DateTypeInfo()

    @staticmethod
    def TIME():
        return TimeTypeInfo()

    @staticmethod
    def TIMESTAMP():
        return TimestampTypeInfo()


class DateTypeInfo(TypeInformation):
    def __repr__(self):
        return "SqlTimeTypeInfo<Date>"


class TimeTypeInfo(TypeInformation):
    def __repr__(self):
        return "SqlTimeTypeInfo<Time>"


class TimestampTypeInfo(TypeInformation):
    def __repr__(self):
        return "SqlTimeTypeInfo<Timestamp>"


class LocalTimeTypeInfo(TypeInformation):
    class TimeType(Enum):
        LOCAL_DATE = 0
        LOCAL_TIME = 1
        LOCAL_DATE_TIME = 2

    def __init__(self, time_type: "LocalTimeTypeInfo.TimeType"):
        self._time_type = time_type

    def _key(self):
        return ("local", self._time_type)

    def __repr__(self):
        return f"LocalTimeTypeInfo<{self._time_type.name}>"


class PickledBytesTypeInfo(TypeInformation):
    """Any picklable Python object."""

    def __repr__(self):
        return "PickledByteArrayTypeInfo"


class _ElementTypeInfo(TypeInformation):
    _label = "Array"

    def __init__(self, element_type: TypeInformation):
        self._element_type = element_type

    def get_element_type(self) -> TypeInformation:
        return self._element_type

    def _key(self):
        return (type(self).__name__, self._element_type)

    def __repr__(self):
        return f"{self._label}<{self._element_type!r}>"


class PrimitiveArrayTypeInfo(_ElementTypeInfo):
    _label = "PrimitiveArrayTypeInfo"


class BasicArrayTypeInfo(_ElementTypeInfo):
    _label = "BasicArrayTypeInfo"


class ObjectArrayTypeInfo(_ElementTypeInfo):
    _label = "ObjectArrayTypeInfo"


class ListTypeInfo(_ElementTypeInfo):
    _label = "ListTypeInfo"


class MapTypeInfo(TypeInformation):
    def __init__(self, key_type_info: TypeInformation, value_type_info: TypeInformation):
        self._key_type_info, self._value_type_info = key_type_info, value_type_info

    def _key(self):
        return ("map", self._key_type_info, self._value_type_info)

    def __repr__(self):
        return f"MapTypeInfo<{self._key_type_info!r}, {self._value_type_info!r}>"


class RowTypeInfo(TypeInformation):
    def __init__(self, field_types: List[TypeInformation], field_names: List[str] = None):
        self._field_types = list(field_types)
        self._field_names = list(field_names) if field_names is not None else [f"f{i}" for i in range(len(field_types))]
        if len(self._field_names) != len(self._field_types):
            raise ValueError("Number of field types and names is different.")
        if len(set(self._field_names)) != len(self._field_names):
            raise ValueError("Field names are not unique.")

    def get_field_names(self) -> List[str]:
        return list(self._field_names)

    def get_field_index(self, field_name: str) -> int:
        return self._field_names.index(field_name) if field_name in self._field_names else -1

    def get_field_types(self) -> List[TypeInformation]:
        return list(self._field_types)

    def get_field_type(self, field_name: str) -> TypeInformation:
        return self._field_types[self.get_field_index(field_name)]

    def get_arity(self) -> int:
        return len(self._field_types)

    def _key(self):
        return ("row", tuple(self._field_names), tuple(self._field_types))

    def __repr__(self):
        return "RowTypeInfo(%s)" % ", ".join(f"{n}: {t!r}" for n, t in zip(self._field_names, self._field_types))


class TupleTypeInfo(TypeInformation):
    def __init__(self, field_types: List[TypeInformation]):
        self._field_types = list(field_types)

    def get_field_types(self) -> List[TypeInformation]:
        return list(self._field_types)

    def get_arity(self) -> int:
        return len(self._field_types)

    def _key(self):
        return ("tuple", tuple(self._field_types))

    def __repr__(self):
        return "TupleTypeInfo(%s)" % ", ".join(repr(t) for t in self._field_types)


class Types:
    """The type-information factory (PyFlink's ``Types``): each method returns a description of a
    type, never a value."""

    @staticmethod
    def STRING() -> TypeInformation:
        return BasicTypeInfo.STRING_TYPE_INFO()

    @staticmethod
    def BYTE() -> TypeInformation:
        return BasicTypeInfo.BYTE_TYPE_INFO()

    @staticmethod
    def BOOLEAN() -> TypeInformation:
        return BasicTypeInfo.BOOLEAN_TYPE_INFO()

    @staticmethod
    def SHORT() -> TypeInformation:
        return BasicTypeInfo.SHORT_TYPE_INFO()

    @staticmethod
    def INT() -> TypeInformation:
        return BasicTypeInfo.INT_TYPE_INFO()

    @staticmethod
    def LONG() -> TypeInformation:
        return BasicTypeInfo.LONG_TYPE_INFO()

    @staticmethod
    def FLOAT() -> TypeInformation:
        return BasicTypeInfo.FLOAT_TYPE_INFO()

    @staticmethod
    def DOUBLE() -> TypeInformation:
        return BasicTypeInfo.DOUBLE_TYPE_INFO()

    @staticmethod
    def CHAR() -> TypeInformation:
        return BasicTypeInfo.CHAR_TYPE_INFO()

    @staticmethod
    def BIG_INT() -> TypeInformation:
        return BasicTypeInfo.BIG_INT_TYPE_INFO()

    @staticmethod
    def BIG_DEC() -> TypeInformation:
        return BasicTypeInfo.BIG_DEC_TYPE_INFO()

    @staticmethod
    def INSTANT() -> TypeInformation:
        return BasicTypeInfo.INSTANT_TYPE_INFO()

    @staticmethod
    def SQL_DATE() -> TypeInformation:
        return SqlTimeTypeInfo.DATE()

    @staticmethod
    def SQL_TIME() -> TypeInformation:
        return SqlTimeTypeInfo.TIME()

    @staticmethod
    def SQL_TIMESTAMP() -> TypeInformation:
        return SqlTimeTypeInfo.TIMESTAMP()

    @staticmethod
    def LOCAL_DATE() -> TypeInformation:
        return LocalTimeTypeInfo(LocalTimeTypeInfo.TimeType.LOCAL_DATE)

    @staticmethod
    def LOCAL_TIME() -> TypeInformation:
        return LocalTimeTypeInfo(LocalTimeTypeInfo.TimeType.LOCAL_TIME)

    @staticmethod
    def LOCAL_DATE_TIME() -> TypeInformation:
        return LocalTimeTypeInfo(LocalTimeTypeInfo.TimeType.LOCAL_DATE_TIME)

    @staticmethod
    def PICKLED_BYTE_ARRAY() -> TypeInformation:
        return PickledBytesTypeInfo()

    @staticmethod
    def ROW(field_types: List[TypeInformation]):
        return RowTypeInfo(field_types)

    @staticmethod
    def ROW_NAMED(field_names: List[str], field_types: List[TypeInformation]):
        return RowTypeInfo(field_types, field_names)

    @staticmethod
    def TUPLE(field_types: List[TypeInformation]):
        return TupleTypeInfo(field_types)

    @staticmethod
    def PRIMITIVE_ARRAY(element_type: TypeInformation):
        return PrimitiveArrayTypeInfo(element_type)

    @staticmethod
    def BASIC_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return BasicArrayTypeInfo(element_type)

    @staticmethod
    def OBJECT_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return ObjectArrayTypeInfo(element_type)

    @staticmethod
    def MAP(key_type_info: TypeInformation, value_type_info: TypeInformation) -> TypeInformation:
        return MapTypeInfo(key_type_info, value_type_info)

    @staticmethod
    def LIST(element_type_info: TypeInformation) -> TypeInformation:
        return ListTypeInfo(element_type_info)


_INT_RANGES = {BasicType.BYTE: 8, BasicType.SHORT: 16, BasicType.INT: 32, BasicType.LONG: 64}


def single_precision(value: float) -> float:
    """Java's float of ``value`` (PyFlink's FloatCoder: 110.1 -> 110.0999984741211)."""
    return struct.unpack("f", struct.pack("f", value))[0]


class WrittenFloat(float):
    """A ``Types.FLOAT()`` state value as the function wrote it (a double). PyFlink's Python state
    cache hands it back as written until it is serialized: a checkpoint (a deep copy here) stores
    it in single precision, and a restore reads that back. The adapter reads it as a plain float."""

    __slots__ = ()

    def __deepcopy__(self, memo: dict) -> float:
        return single_precision(self)

    def __copy__(self) -> "WrittenFloat":
        return self

    def __reduce__(self):
        return float, (single_precision(self),)


_ROUNDED_ON_WRITE = [False]


@contextmanager
def floats_rounded_on_write():
    """While open, ``Types.FLOAT()`` state is single precision as soon as it is written (as if
    PyFlink's state cache were off): certification's counterfactual that tells a difference caused
    only by FLOAT precision across a restore (docs/decisions.md)."""
    _ROUNDED_ON_WRITE.append(True)
    try:
        yield
    finally:
        _ROUNDED_ON_WRITE.pop()


_FLOAT_WRITES = [0]


def float_writes() -> int:
    """How many Types.FLOAT() state values were kept as written (a run that adds none holds none)."""
    return _FLOAT_WRITES[0]


def floats_rounded() -> bool:
    """Whether :func:`floats_rounded_on_write` is open."""
    return _ROUNDED_ON_WRITE[-1]


def check_value(type_info: Any, value: Any, where: str) -> Any:
    """``value`` as Flink would store it with ``type_info`` (a FLOAT as a :class:`WrittenFloat`:
    single precision once checkpointed), or a
    one-line TypeError when Flink's serializer would reject it. None is always accepted (Flink's
    serializers are null-tolerant in PyFlink's wrappers); unknown type infos pass anything."""
    if value is None or not isinstance(type_info, TypeInformation) or isinstance(type_info, PickledBytesTypeInfo):
        return value

    def bad(expected: str):
        return TypeError(f"{where}: {value!r} ({type(value).__name__}) is not a {expected} ({type_info!r})")

    if isinstance(type_info, BasicTypeInfo):
        kind = type_info._basic_type
        if kind is BasicType.BOOLEAN:
            if not isinstance(value, bool):
                raise bad("bool")
        elif kind in _INT_RANGES:
            bits = _INT_RANGES[kind]
            if isinstance(value, bool) or not isinstance(value, int):
                raise bad("int")
            if not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
                raise bad(f"{bits}-bit int")
        elif kind is BasicType.FLOAT:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise bad("float")
            if _ROUNDED_ON_WRITE[-1]:
                return single_precision(value)
            _FLOAT_WRITES[0] += 1
            return WrittenFloat(value)
        elif kind is BasicType.DOUBLE:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise bad("float")
            return float(value)
        elif kind in (BasicType.STRING, BasicType.CHAR):
            if not isinstance(value, str):
                raise bad("str")
        elif kind is BasicType.BIG_INT:
            if isinstance(value, bool) or not isinstance(value, int):
                raise bad("int")
        elif kind is BasicType.BIG_DEC:
            if not isinstance(value, decimal.Decimal):
                raise bad("decimal.Decimal")
        elif kind is BasicType.INSTANT:
            if not (type(value).__name__ == "Instant" and isinstance(getattr(value, "seconds", None), int)
                    and isinstance(getattr(value, "nanos", None), int)):
                raise bad("common.time.Instant")
        return value
    if isinstance(type_info, TimestampTypeInfo) and not isinstance(value, datetime.datetime):
        raise bad("datetime.datetime")
    if isinstance(type_info, DateTypeInfo) and not isinstance(value, datetime.date):
        raise bad("datetime.date")
    if isinstance(type_info, TimeTypeInfo) and not isinstance(value, datetime.time):
        raise bad("datetime.time")
    if isinstance(type_info, LocalTimeTypeInfo):
        expected = {LocalTimeTypeInfo.TimeType.LOCAL_DATE: datetime.date, LocalTimeTypeInfo.TimeType.LOCAL_TIME: datetime.time,
                    LocalTimeTypeInfo.TimeType.LOCAL_DATE_TIME: datetime.datetime}[type_info._time_type]
        if not isinstance(value, expected):
            raise bad(f"datetime.{expected.__name__}")
        return value
    if isinstance(type_info, PrimitiveArrayTypeInfo) and type_info._element_type == Types.BYTE():
        if not isinstance(value, (bytes, bytearray)):  # PyFlink's BinaryCoder: bytes
            raise bad("bytes")
        return bytes(value)
    if isinstance(type_info, (ListTypeInfo, BasicArrayTypeInfo, PrimitiveArrayTypeInfo, ObjectArrayTypeInfo)):
        if isinstance(value, (str, bytes, dict)) or not isinstance(value, (list, tuple)):
            raise bad("list")
        return [check_value(type_info._element_type, v, where) for v in value]
    if isinstance(type_info, MapTypeInfo):
        if not isinstance(value, dict):
            raise bad("dict")
        return {check_value(type_info._key_type_info, k, where): check_value(type_info._value_type_info, v, where)
                for k, v in value.items()}
    if isinstance(type_info, TupleTypeInfo):
        if not isinstance(value, (tuple, list)) or len(value) != type_info.get_arity():
            raise bad(f"tuple of {type_info.get_arity()}")
        return tuple(check_value(t, v, where) for t, v in zip(type_info._field_types, value))
    if isinstance(type_info, RowTypeInfo):
        from_row = type(value).__name__ == "Row"
        if not (from_row or isinstance(value, (tuple, list))) or len(value) != type_info.get_arity():
            raise bad(f"Row of {type_info.get_arity()} fields")
        return value
    return value

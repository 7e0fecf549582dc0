"""``pyflink.common`` for operators: :class:`Types`, :class:`TypeInformation`, :class:`Row`,
:class:`RowKind`, :class:`Time`, :class:`Duration`, :class:`Instant`."""

from streamproof.flink.common.time import Duration, Instant, Time
from streamproof.flink.common.typeinfo import TypeInformation, Types
from streamproof.flink.common.types import Row, RowKind

__all__ = ["TypeInformation", "Types", "Row", "RowKind", "Duration", "Instant", "Time"]

"""``pyflink.datastream.output_tag``: :class:`OutputTag` names a side output."""

from __future__ import annotations

from typing import Optional, Union

from streamproof.flink.common.typeinfo import RowTypeInfo, TypeInformation, Types

__all__ = ["OutputTag"]


class OutputTag:
    """A named, typed tag for a side output: ``yield OutputTag("late"), value`` in a process
    function emits ``value`` to the side output ``late``."""

    def __init__(self, tag_id: str, type_info: Optional[Union[TypeInformation, list]] = None):
        if not tag_id:
            raise ValueError("OutputTag tag_id cannot be None or empty string")
        self.tag_id = tag_id
        if type_info is None:
            self.type_info = Types.PICKLED_BYTE_ARRAY()
        elif isinstance(type_info, list):
            self.type_info = RowTypeInfo(type_info)
        elif not isinstance(type_info, TypeInformation):
            raise TypeError("OutputTag type_info must be None, list or TypeInformation")
        else:
            self.type_info = type_info

    def __eq__(self, other):
        return isinstance(other, OutputTag) and self.tag_id == other.tag_id and self.type_info == other.type_info

    def __hash__(self):
        return hash(self.tag_id)

    def __repr__(self):
        return f"OutputTag({self.tag_id!r}, {self.type_info!r})"

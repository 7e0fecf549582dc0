"""``pyflink.common.types``: :class:`Row` and :class:`RowKind`, with PyFlink's semantics
(named rows sort their keyword fields; equality compares names, kind and values)."""

from __future__ import annotations

from enum import Enum
from typing import List

__all__ = ["Row", "RowKind"]


class RowKind(Enum):
    INSERT = 0
    UPDATE_BEFORE = 1
    UPDATE_AFTER = 2
    DELETE = 3


def _create_row(fields, values, row_kind: RowKind = None):
    row = Row(*values)
    if fields is not None:
        row._fields = fields
    if row_kind is not None:
        row.set_row_kind(row_kind)
    return row


class Row:
    """A row: ``Row(1, 'a')`` (positional), ``Row(name='Alice', age=11)`` (named; fields sorted
    by name, as PyFlink does), ``Row('name', 'age')('Alice', 11)`` (a row "class"). Fields are
    read as ``row.name``, ``row['name']`` or ``row[0]``."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Can not use both args and kwargs to create Row")
        if kwargs:
            names = sorted(kwargs.keys())
            self._fields = names
            self._values = [kwargs[n] for n in names]
            self._from_dict = True
        else:
            self._values = list(args)
        self._row_kind = RowKind.INSERT

    def as_dict(self, recursive=False):
        if not hasattr(self, "_fields"):
            raise TypeError("Cannot convert a Row class into dict")
        if recursive:
            def conv(obj):
                if isinstance(obj, Row):
                    return obj.as_dict(True)
                if isinstance(obj, list):
                    return [conv(o) for o in obj]
                if isinstance(obj, dict):
                    return {k: conv(v) for k, v in obj.items()}
                return obj
            return dict(zip(self._fields, (conv(o) for o in self)))
        return dict(zip(self._fields, self))

    def get_row_kind(self) -> RowKind:
        return self._row_kind

    def set_row_kind(self, row_kind: RowKind):
        self._row_kind = row_kind

    def set_field_names(self, field_names: List):
        self._fields = field_names

    def get_fields_by_names(self, names: List[str]):
        if not hasattr(self, "_fields") or names == self._fields:
            return self._values
        difference = list(set(names).difference(set(self._fields)))
        if difference:
            raise Exception("Field names {0} not exist in {1}.".format(difference, self._fields))
        return [self._values[self._fields.index(name)] for name in names]

    def __contains__(self, item):
        return item in self._values

    def __call__(self, *args):
        if len(args) > len(self):
            raise ValueError("Can not create Row with fields %s, expected %d values but got %s"
                             % (self, len(self), args))
        return _create_row(self._values, args, self._row_kind)

    def __getitem__(self, item):
        if isinstance(item, (int, slice)):
            return self._values[item]
        try:
            idx = self._fields.index(item)
            return self._values[idx]
        except IndexError:
            raise KeyError(item)
        except ValueError:
            raise ValueError(item)
        except AttributeError:
            raise KeyError(item)

    def __setitem__(self, key, value):
        if isinstance(key, (int, slice)):
            self._values[key] = value
            return
        try:
            idx = self._fields.index(key)
            self._values[idx] = value
        except (IndexError, AttributeError):
            raise KeyError(key)
        except ValueError:
            raise ValueError(value)

    def __getattr__(self, item):
        if item.startswith("_"):
            raise AttributeError(item)
        try:
            idx = self._fields.index(item)
            return self[idx]
        except (IndexError, ValueError):
            raise AttributeError(item)

    def __setattr__(self, key, value):
        if key not in ("_fields", "_from_dict", "_row_kind", "_values"):
            raise AttributeError(key)
        self.__dict__[key] = value

    def __reduce__(self):
        if hasattr(self, "_fields"):
            return _create_row, (self._fields, tuple(self), self._row_kind)
        return _create_row, (None, tuple(self), self._row_kind)

    def __repr__(self):
        if hasattr(self, "_fields"):
            return "Row(%s)" % ", ".join("%s=%r" % (k, v) for k, v in zip(self._fields, tuple(self)))
        return "<Row(%s)>" % ", ".join("%r" % field for field in self)

    def __eq__(self, other):
        if not isinstance(other, Row):
            return False
        if hasattr(self, "_fields"):
            if not hasattr(other, "_fields") or self._fields != other._fields:
                return False
        elif hasattr(other, "_fields"):
            return False
        return self.__class__ == other.__class__ and self._row_kind == other._row_kind \
            and self._values == other._values

    def __hash__(self):
        return tuple(self).__hash__()

    def __iter__(self):
        return iter(self._values)

    def __len__(self):
        return len(self._values)

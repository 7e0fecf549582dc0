"""The current key of a keyed operator and its key group (Flink's ``InternalKeyContext``), shared by
its keyed state and its timer services."""

from __future__ import annotations

from streamproof.impl.state.key_groups import Key, key_group_memo


class KeyContext:
    """The current key of a keyed operator and its key group, set together (Flink's
    ``currentKeyGroupIndex``). Key groups come from the process-wide
    :func:`streamproof.impl.state.key_groups.key_group_memo`: a ``str`` key seen before costs one dict
    lookup."""

    __slots__ = ("max_parallelism", "current_key", "current_key_group_index", "_memo", "_remembered")

    def __init__(self, max_parallelism: int):
        self.max_parallelism = max_parallelism
        self.current_key: Key | None = None
        self.current_key_group_index = -1
        self._memo = key_group_memo(max_parallelism)
        self._remembered = self._memo.key_groups

    def set_current_key(self, key: Key) -> None:
        try:  # a subscript is cheaper than .get() in the common case (a remembered key)
            key_group = self._remembered[key]
        except KeyError:
            key_group = self._memo.key_group_of(key)
        self.current_key_group_index = key_group
        self.current_key = key

    def get_current_key(self) -> Key | None:
        return self.current_key

    def get_current_key_group_index(self) -> int:
        return self.current_key_group_index

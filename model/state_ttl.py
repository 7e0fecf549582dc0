"""Specification of keyed state with a time-to-live (Flink's ``StateTtlConfig``), for one key.

State: for each state name, what is stored and when it was last accessed, per stored part:
  * ``value``, ``reducing``, ``aggregating``: one cell ``(value, timestamp)``;
  * ``list``: a list of cells, one per element;
  * ``map``: ``{entry: cell}``, one per entry.
Absent names hold nothing. Time is the operator's processing time, given to every action.

Configuration (:class:`Config`): ``ttl`` (ms, > 0); ``update_on_read`` (``OnReadAndWrite``; else
``OnCreateAndWrite``); ``return_expired`` (``ReturnExpiredIfNotCleanedUp``; else
``NeverReturnExpired``); ``cleanup_full_snapshot``.

Rules:
  R1 a cell is expired at ``now`` when ``timestamp + ttl <= now`` (``TtlUtils.expired``; the sum
     saturates at 2^63-1);
  R2 every write stores its cell with timestamp ``now`` (both update types);
  R3 reading a cell: expired -> removed, and returned only under ``return_expired``; unexpired ->
     returned, and its timestamp becomes ``now`` under ``update_on_read``;
  R4 reading a list: the unexpired elements (all elements under ``return_expired``); when none is
     unexpired the list is removed; under ``update_on_read`` the list becomes its unexpired
     elements stamped ``now``;
  R5 reading a whole map applies R3 to each entry;
  R6 ``reducing`` / ``aggregating`` add: read the cell (R3), fold the value into what was read
     (``reduce(a, b) = a + b``; the accumulator is ``(count, sum)``), write the result (R2);
  R7 a snapshot holds the stored cells; with ``cleanup_full_snapshot`` it leaves out the cells
     expired at the snapshot's time (and lists and maps left empty); the running state keeps them;
  R8 a restore replaces the stored cells by the snapshot's; their timestamps are kept, so expiry
     goes on against the restoring operator's clock.

Each action records what happened (:attr:`KeyState.happened`): ``expired-hidden``,
``expired-returned``, ``refreshed``, ``snapshot-dropped``, ``expired-after-restore`` (a cell
stamped before the last restore found expired).
"""

from __future__ import annotations

from dataclasses import dataclass, field

INT64_MAX = 2**63 - 1
KINDS = ("value", "list", "map", "reducing", "aggregating")


@dataclass(frozen=True)
class Config:
    ttl: int
    update_on_read: bool = False
    return_expired: bool = False
    cleanup_full_snapshot: bool = False


def expired(timestamp: int, ttl: int, now: int) -> bool:
    """R1."""
    return min(timestamp + ttl, INT64_MAX) <= now if timestamp > 0 else timestamp + ttl <= now


@dataclass
class KeyState:
    """The TTL states of one key (state name = state kind)."""

    config: Config
    stored: dict = field(default_factory=dict)  # name -> (value, ts) | [(value, ts)] | {entry: (value, ts)}
    restored_at: int | None = None
    happened: list = field(default_factory=list)

    # -- reading a cell (R3) ------------------------------------------------------------------------
    def _seen_expired(self, cell: tuple) -> None:
        self.happened.append("expired-returned" if self.config.return_expired else "expired-hidden")
        if self.restored_at is not None and cell[1] < self.restored_at:
            self.happened.append("expired-after-restore")

    def _read_cell(self, cell, now: int):
        """(what the read returns or None, the cell kept or None)."""
        if cell is None:
            return None, None
        if expired(cell[1], self.config.ttl, now):
            self._seen_expired(cell)
            return (cell if self.config.return_expired else None), None
        if self.config.update_on_read:
            self.happened.append("refreshed")
            return cell, (cell[0], now)
        return cell, cell

    def _read_single(self, name: str, now: int):
        seen, kept = self._read_cell(self.stored.get(name), now)
        self._set(name, kept)
        return seen

    def _set(self, name: str, stored) -> None:
        if stored is None or stored == [] or stored == {}:
            self.stored.pop(name, None)
        else:
            self.stored[name] = stored

    # -- actions ------------------------------------------------------------------------------------
    def write(self, kind: str, value: int, now: int, entry: str | None = None) -> None:
        if kind == "value":
            self.stored[kind] = (value, now)  # R2
        elif kind == "list":
            self.stored[kind] = [*self.stored.get(kind, []), (value, now)]  # R2, appended
        elif kind == "map":
            self.stored[kind] = {**self.stored.get(kind, {}), entry: (value, now)}  # R2, per entry
        elif kind == "reducing":  # R6
            seen = self._read_single(kind, now)
            self.stored[kind] = (value if seen is None else seen[0] + value, now)
        else:  # aggregating, R6
            seen = self._read_single(kind, now)
            count, total = (0, 0) if seen is None else seen[0]
            self.stored[kind] = ((count + 1, total + value), now)

    def read(self, kind: str, now: int, entry: str | None = None):
        """What the function reads: a value (None when absent), a list, a map's entry or its
        sorted ``[(entry, value)]``."""
        if kind == "list":  # R4
            cells = self.stored.get(kind, [])
            unexpired = [c for c in cells if not expired(c[1], self.config.ttl, now)]
            for cell in cells:
                if cell not in unexpired:
                    self._seen_expired(cell)
            if self.config.update_on_read and unexpired:
                self.happened.append("refreshed")
                self._set(kind, [(v, now) for v, _ in unexpired])
            if cells and not unexpired:
                self._set(kind, None)
            return [v for v, _ in (cells if self.config.return_expired else unexpired)]
        if kind == "map":  # R3 per entry, R5
            entries = dict(self.stored.get(kind, {}))
            out = []
            for key in ([entry] if entry is not None else list(entries)):
                seen, kept = self._read_cell(entries.get(key), now)
                if kept is None:
                    entries.pop(key, None)
                else:
                    entries[key] = kept
                if seen is not None:
                    out.append((key, seen[0]))
            self._set(kind, entries)
            if entry is not None:
                return out[0][1] if out else None
            return sorted(out)
        seen = self._read_single(kind, now)  # R3
        return None if seen is None else seen[0]

    def clear(self, kind: str) -> None:
        self.stored.pop(kind, None)

    def remove(self, entry: str) -> None:
        entries = dict(self.stored.get("map", {}))
        entries.pop(entry, None)
        self._set("map", entries)

    def snapshot(self, now: int) -> dict:
        """R7."""
        if not self.config.cleanup_full_snapshot:
            return {name: _copy(stored) for name, stored in self.stored.items()}
        out = {}
        for name, stored in self.stored.items():
            if isinstance(stored, list):
                kept = [c for c in stored if not expired(c[1], self.config.ttl, now)]
                dropped = len(kept) < len(stored)
            elif isinstance(stored, dict):
                kept = {k: c for k, c in stored.items() if not expired(c[1], self.config.ttl, now)}
                dropped = len(kept) < len(stored)
            else:
                kept = None if expired(stored[1], self.config.ttl, now) else stored
                dropped = kept is None
            if dropped:
                self.happened.append("snapshot-dropped")
            if kept:
                out[name] = _copy(kept)
        return out

    def restore(self, snapshot: dict, now: int) -> None:
        """R8."""
        self.stored = {name: _copy(stored) for name, stored in snapshot.items()}
        self.restored_at = now


def _copy(stored):
    if isinstance(stored, list):
        return list(stored)
    if isinstance(stored, dict):
        return dict(stored)
    return stored

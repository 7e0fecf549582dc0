"""The timer values every timer module shares: Flink's ``InternalTimer`` and ``InternalTimersSnapshot``.

The timer service (:mod:`streamproof.impl.timers.internal_timer_service`), its copy-on-write snapshots (:mod:`streamproof.impl.timers.snapshots`) and
the snapshot file format (:mod:`streamproof.impl.timers.snapshot_format`) all handle these values; none of the three
needs another one for them, so this module imports only :mod:`streamproof.impl.state.key_groups` (for ``Key``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Hashable, NamedTuple

from streamproof.impl.state.key_groups import Key

__all__ = ["InternalTimer", "InternalTimersSnapshot"]


class InternalTimer(NamedTuple):
    """A timer: ``(timestamp, key, namespace)``; equal timers are one timer."""

    timestamp: int
    key: Key
    namespace: Hashable


@dataclass(frozen=True)
class InternalTimersSnapshot:
    """The timers of one service in one key group (Flink's ``InternalTimersSnapshot``).

    As in Flink, :meth:`InternalTimerService.snapshot_timers_for_key_group` fills it with *live
    views* of the key group's sets: it is point-in-time only if read (serialized or
    :meth:`materialize`-d) before the service changes. Checkpoints use copy-on-write snapshots.
    """

    event_time_timers: Collection[InternalTimer] = ()
    processing_time_timers: Collection[InternalTimer] = ()

    def materialize(self) -> "InternalTimersSnapshot":
        """A frozen copy of what the views show now."""
        return InternalTimersSnapshot(tuple(self.event_time_timers), tuple(self.processing_time_timers))

"""Termination actions of processing-time timers (FLIP-269, not in Flink yet; DESIGN.md §3.4).

What happens to a pending processing-time timer when its operator reaches the end of its input:
CANCEL drops it (what Flink does today), TRIGGER fires it once at once, WAIT lets the clock reach
its time and then fires it. Timer snapshots carry one action per processing-time timer (snapshot
format 2); a format-1 snapshot has none, and restoring it gives CANCEL.
"""

from __future__ import annotations

from enum import IntEnum


class TimerTerminationAction(IntEnum):
    """FLIP-269's ``TimerTerminationAction``; the value is its byte in snapshot format 2."""

    CANCEL = 0
    TRIGGER = 1
    WAIT = 2


DEFAULT_TERMINATION_ACTION = TimerTerminationAction.CANCEL

__all__ = ["TimerTerminationAction", "DEFAULT_TERMINATION_ACTION"]

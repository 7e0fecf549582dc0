"""The operator-level processing-time service (Flink's ``ProcessingTimeService`` as an operator
sees it): plain callbacks at a processing time, not keyed and not checkpointed, each with a
FLIP-269 termination action.

At end of input with drain the task flushes it after the keyed timers, by the same rules
(DESIGN.md §3.4, docs/termination.md): timers already due fire as usual; then in timestamp order
CANCEL drops, TRIGGER fires reading MAX, WAIT fires reading its own time; registrations up to
the horizon are handled, later ones dropped; a budget bounds the firings. Afterwards the service
is quiesced: a registration is dropped and counted (Flink: the returned future never completes).
"""

from __future__ import annotations

import heapq
import itertools
from typing import Callable

from streamproof.impl.timers.internal_timer_service import FlushResult
from streamproof.impl.timers.processing_time_service import MAX_WATERMARK, TimerFiringBudgetExceeded
from streamproof.impl.timers.termination import TimerTerminationAction


class OperatorTimer:
    """A registered callback; ``cancel()`` before it fires (or is flushed) prevents it."""

    def __init__(self, timestamp: int, callback: Callable[[int], None], action: TimerTerminationAction):
        self.timestamp, self.callback, self.action = timestamp, callback, action
        self.cancelled = self.done = False
        self._physical = None

    def cancel(self) -> None:
        self.cancelled = True
        if self._physical is not None:
            self._physical.cancel()


class OperatorProcessingTimeService:
    """``register_timer(ts, callback, action=None)`` on top of the task's processing-time service
    (whose physical timers fire as mail in the task's mailbox)."""

    def __init__(self, processing_time_service, override: Callable[[], TimerTerminationAction | None] = lambda: None):
        self.processing_time_service = processing_time_service
        self.override = override  # the operator's FLIP-269 override, read when a timer is handled
        self.state = "RUNNING"
        self.dropped_after_flush = 0
        self._pending: list[tuple[int, int, OperatorTimer]] = []
        self._order = itertools.count()
        self._flush_clock: int | None = None

    def current_processing_time(self) -> int:
        if self._flush_clock is not None:
            return self._flush_clock
        return self.processing_time_service.get_current_processing_time()

    def register_timer(self, timestamp: int, callback: Callable[[int], None], action=None) -> OperatorTimer:
        """``callback(timestamp)`` runs once the processing time reaches ``timestamp`` (as mail),
        or at end of input by ``action`` (None: CANCEL)."""
        action = TimerTerminationAction.CANCEL if action is None else TimerTerminationAction(action)
        timer = OperatorTimer(timestamp, callback, action)
        if self.state == "FLUSHED":
            self.dropped_after_flush += 1
            timer.cancelled = True
            return timer
        heapq.heappush(self._pending, (timestamp, next(self._order), timer))
        if self.state == "RUNNING":
            timer._physical = self.processing_time_service.register_timer(timestamp, lambda now, t=timer: self._fire(t))
        return timer

    def num_pending_timers(self) -> int:
        return sum(1 for _, _, t in self._pending if not (t.cancelled or t.done))

    def _fire(self, timer: OperatorTimer) -> None:
        if timer.cancelled or timer.done or self.state != "RUNNING":
            return  # its mail arrived after a cancel or after the flush handled it
        timer.done = True
        timer.callback(timer.timestamp)

    def _effective(self, timer: OperatorTimer) -> TimerTerminationAction:
        override = self.override()
        return timer.action if override is None else TimerTerminationAction(override)

    def _next(self) -> OperatorTimer | None:
        while self._pending and (self._pending[0][2].cancelled or self._pending[0][2].done):
            heapq.heappop(self._pending)
        return self._pending[0][2] if self._pending else None

    def flush(self, budget: int) -> FlushResult:
        if self.state != "RUNNING":
            raise RuntimeError(f"operator processing-time service is {self.state}: flushed once only")
        result = FlushResult()
        clock = self.processing_time_service.get_current_processing_time()
        self.state = "FLUSHING"
        for _, _, timer in self._pending:
            if timer._physical is not None:
                timer._physical.cancel()

        def fire(timer: OperatorTimer, now: int | None) -> None:
            if len(result.due) + len(result.fired) >= budget:
                raise TimerFiringBudgetExceeded(
                    f"operator processing-time service fired more than {budget} timers while flushing at end "
                    f"of input: a callback keeps registering timers")
            heapq.heappop(self._pending)
            timer.done = True
            self._flush_clock = now
            try:
                timer.callback(timer.timestamp)
            finally:
                self._flush_clock = None

        try:
            while (timer := self._next()) is not None and timer.timestamp <= clock:
                fire(timer, None)
                result.due.append(timer.timestamp)
            result.horizon = max((t.timestamp for _, _, t in self._pending if not (t.cancelled or t.done)), default=None)
            while (timer := self._next()) is not None:
                action = self._effective(timer)
                if result.horizon is None or timer.timestamp > result.horizon:
                    heapq.heappop(self._pending)
                    timer.done = True
                    result.dropped_after_horizon += 1
                elif action == TimerTerminationAction.CANCEL:
                    heapq.heappop(self._pending)
                    timer.done = True
                    result.cancelled.append(timer.timestamp)
                elif action == TimerTerminationAction.WAIT:
                    clock = max(clock, timer.timestamp)
                    result.fired.append((timer.timestamp, action))
                    fire(timer, clock)
                else:
                    result.fired.append((timer.timestamp, action))
                    fire(timer, MAX_WATERMARK)
        finally:
            self.state = "FLUSHED"
        return result

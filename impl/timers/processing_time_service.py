"""Processing time: Flink's ``ProcessingTimeService`` as the timer service uses it (one physical
timer per distinct timestamp) and :class:`ManualProcessingTimeService`, the simulated clock used
everywhere in streamproof (Flink's ``TestProcessingTimeService``)."""

from __future__ import annotations

from heapq import heappop, heappush
from itertools import count
from typing import Callable, Protocol

from streamproof.impl.state.key_groups import INT64_MAX, INT64_MIN

MIN_WATERMARK = INT64_MIN
MAX_WATERMARK = INT64_MAX
DEFAULT_FIRING_BUDGET = 1_000_000


class TimerFiringBudgetExceeded(RuntimeError):
    """One advance fired more timers than the budget: a callback keeps registering due timers."""


# -- processing time ---------------------------------------------------------------------------
class ScheduledTimer:
    """A physical timer handle returned by :meth:`ProcessingTimeService.register_timer`."""

    __slots__ = ("timestamp", "callback", "_service", "pending")

    def __init__(self, timestamp: int, callback: Callable[[int], None], service: "ManualProcessingTimeService"):
        self.timestamp = timestamp
        self.callback = callback
        self._service = service
        self.pending = True

    def cancel(self) -> None:
        if self.pending:
            self.pending = False
            self._service._on_cancel(self)


_new_scheduled = object.__new__


class ProcessingTimeService(Protocol):
    def get_current_processing_time(self) -> int: ...

    def register_timer(self, timestamp: int, callback: Callable[[int], None]) -> ScheduledTimer: ...


class ManualProcessingTimeService:
    """A simulated processing-time clock with physical timers (Flink's TestProcessingTimeService).

    ``advance_to(t)`` sets the clock to ``t`` and then fires every pending physical timer with
    time <= t one by one in time order (equal times: registration order), including the ones
    registered while advancing. Listeners see every register and cancel (what traces record).
    """

    def __init__(self, start: int = MIN_WATERMARK, budget: int = DEFAULT_FIRING_BUDGET):
        self._now = start
        self._queue: list[tuple[int, int, ScheduledTimer]] = []
        self._seq = count()
        self._pending = 0
        self.budget = budget
        # while advance_to runs: its target time and the physical timers it has fired (fire_inline)
        self._target: int | None = None
        self._fired = 0
        self.inline_fired = self.inline_passed_over = 0  # what fire_inline answered, counted
        self.on_register: list[Callable[[int], None]] = []
        self.on_cancel: list[Callable[[int], None]] = []

    def get_current_processing_time(self) -> int:
        return self._now

    def register_timer(self, timestamp: int, callback: Callable[[int], None]) -> ScheduledTimer:
        # ScheduledTimer(timestamp, callback, self) without the __init__ call (the timer service
        # registers one physical timer per distinct head timestamp: this is its hot path)
        timer = _new_scheduled(ScheduledTimer)
        timer.timestamp, timer.callback, timer._service, timer.pending = timestamp, callback, self, True
        heappush(self._queue, (timestamp, next(self._seq), timer))
        self._pending += 1
        if self.on_register:  # usually none
            for listener in self.on_register:
                listener(timestamp)
        return timer

    def _on_cancel(self, timer: ScheduledTimer) -> None:
        self._pending -= 1
        for listener in self.on_cancel:
            listener(timer.timestamp)

    def num_pending_timers(self) -> int:
        return self._pending

    def set_time_without_firing(self, time: int) -> None:
        """Moves the clock forward to ``time`` without firing physical timers (the end-of-input
        flush of WAIT timers: the flush itself fires them, in its order)."""
        self._now = max(self._now, time)

    def advance_to(self, time: int) -> None:
        self._now = time
        outer = self._target, self._fired  # a callback may advance the clock again (nested)
        self._target, self._fired = time, 0
        queue = self._queue
        try:
            while queue and queue[0][0] <= time:
                timer = heappop(queue)[2]
                if not timer.pending:
                    continue
                timer.pending = False
                self._pending -= 1
                self._fired += 1
                if self._fired > self.budget:
                    raise self._over_budget()
                timer.callback(timer.timestamp)
        finally:
            self._target, self._fired = outer

    def _over_budget(self) -> TimerFiringBudgetExceeded:
        return TimerFiringBudgetExceeded(
            f"processing-time service fired more than {self.budget} physical timers while "
            f"advancing to {self._target}: a callback keeps registering due timers"
        )

    def fire_inline(self, timestamp: int) -> bool:
        """True iff a physical timer registered now at ``timestamp`` would be the very next one
        this advance fires: the caller then runs its callback itself, counted as fired, instead of
        registering it (nothing can tell the two apart). Never while a listener watches."""
        if self._target is None or timestamp > self._target or self.on_register:
            return False
        if self._queue and self._queue[0][0] <= timestamp:
            self.inline_passed_over += 1  # another physical timer is due first (or a tie)
            return False
        self._fired += 1
        if self._fired > self.budget:
            raise self._over_budget()
        self.inline_fired += 1
        return True

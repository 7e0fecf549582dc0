"""Watermarks inside a task: Flink's ``StatusWatermarkValve`` (the minimum over input channels) and
``MailboxWatermarkProcessor`` (FLIP-443: a watermark whose timers are interrupted is continued by
deferrable mail)."""

from __future__ import annotations

from typing import Callable

from streamproof.impl.operators.keyed_process_operator import KeyedProcessOperator
from streamproof.impl.tasks.mailbox import MailboxExecutor, MailOptions
from streamproof.impl.timers.internal_timer_service import MAX_WATERMARK, MIN_WATERMARK


class StatusWatermarkValve:
    """Combines the channels' watermarks: the minimum over channels not yet finished."""

    def __init__(self, channels: int):
        self.watermarks = [MIN_WATERMARK] * channels
        self.finished = [False] * channels
        self.last_output = MIN_WATERMARK

    def input_watermark(self, channel: int, timestamp: int) -> int | None:
        if timestamp > self.watermarks[channel]:
            self.watermarks[channel] = timestamp
        return self._combined()

    def channel_finished(self, channel: int) -> int | None:
        self.finished[channel] = True
        return self._combined()

    def _combined(self) -> int | None:
        live = [w for w, done in zip(self.watermarks, self.finished) if not done]
        if not live:
            return None
        combined = min(live)
        if combined > self.last_output:
            self.last_output = combined
            return combined
        return None


class MailboxWatermarkProcessor:
    """Flink's ``MailboxWatermarkProcessor`` (FLIP-443).

    As Flink 2.3 ships it by default: on a completed advance it emits the maximum input watermark,
    whether or not it was emitted before, and an interrupted advance emits nothing. Two
    corrections, off by default: ``intermediate`` (as Flink's fix of FLINK-40101) emits the
    watermark the timers reached when the continuation of an interrupted advance runs, so that
    steady mail cannot freeze the output watermark (at the continuation, not at the interruption:
    the mail a fired timer queued runs first, and its output is not behind the watermark); ``only_increasing`` never emits a watermark at or below the last one (in a
    chain A -> B, B otherwise emits the same watermark twice, see docs/job-graphs.md)."""

    def __init__(self, operator: KeyedProcessOperator, executor: MailboxExecutor, emit_watermark: Callable[[int], None],
                 *, intermediate: bool = False, only_increasing: bool = False):
        self.operator, self.executor, self.emit_watermark = operator, executor, emit_watermark
        self.should_interrupt: Callable[[], bool] = executor.should_interrupt
        self.intermediate, self.only_increasing = intermediate, only_increasing
        self.max_input_watermark = MIN_WATERMARK
        self.last_emitted = MIN_WATERMARK
        self._progress_watermark_scheduled = False  # see the property
        self.scheduled_count: list[int] | None = None  # set by a job that counts (GraphJob)
        self.interruptions = 0
        self.stalled = 0  # interrupted advances that fired no timer (FLIP-443 forbids them)
        self.event_timers_fired = 0  # metric: event-time timers fired by watermarks (MAX_WATERMARK's too)
        self.event_timers_fired_before_end = 0  # ... by watermarks below MAX_WATERMARK

    @property
    def progress_watermark_scheduled(self) -> bool:
        return self._progress_watermark_scheduled

    @progress_watermark_scheduled.setter
    def progress_watermark_scheduled(self, value: bool) -> None:
        # every assignment comes here (the bug zoo's too): ``scheduled_count``, a cell the job
        # shares among one attempt's processors, counts those with a continuation scheduled, so
        # that the simulator needs not ask every task while it is 0 (issue 30)
        if self.scheduled_count is not None and bool(value) != bool(self._progress_watermark_scheduled):
            self.scheduled_count[0] += 1 if value else -1
        self._progress_watermark_scheduled = value

    def emit_watermark_inside_mailbox(self, timestamp: int) -> None:
        self.max_input_watermark = max(self.max_input_watermark, timestamp)
        self._emit_watermark_inside_mailbox()

    def _emit(self, timestamp: int) -> None:
        if self.only_increasing and timestamp <= self.last_emitted:
            return
        self.last_emitted = max(self.last_emitted, timestamp)
        self.emit_watermark(timestamp)

    def _emit_watermark_inside_mailbox(self) -> None:
        manager = self.operator.time_service_manager
        fired_before = self.operator.timers_fired
        # Try to progress the watermark as far as we can.
        completed = manager.try_advance_watermark(self.max_input_watermark, self.should_interrupt)
        self.count_fired(fired_before, self.max_input_watermark)
        if completed:
            # Timers all fired: the watermark may go downstream.
            self._emit(self.max_input_watermark)
            return
        if not self.progress_watermark_scheduled:
            self.interruptions += 1
            self.stalled += self.operator.timers_fired == fired_before
            self.progress_watermark_scheduled = True
            # Let other mail run first; deferrable so that yield() never runs it (FLINK-35528).
            self.executor.execute(self._continue, "emitWatermarkInsideMailbox", MailOptions.DEFERRABLE)
        # else: a continuation is already scheduled; it will pick up the new maximum.

    def count_fired(self, fired_before: int, watermark: int) -> None:
        """Counts the event-time timers a watermark fired (metrics)."""
        fired = self.operator.timers_fired - fired_before
        self.event_timers_fired += fired
        if watermark < MAX_WATERMARK:
            self.event_timers_fired_before_end += fired

    def _continue(self) -> None:
        self.progress_watermark_scheduled = False
        if self.intermediate:
            # The progress made so far (FLINK-40101), once the mail that interrupted the firing
            # (e.g. mail a fired timer queued, which may emit its output) has run before it.
            reached = min(self.max_input_watermark, self.operator.time_service_manager.get_reached_watermark())
            if reached > self.last_emitted:
                self._emit(reached)
        self._emit_watermark_inside_mailbox()

    def reached_watermark(self) -> int:
        """Up to where every timer has fired (the watermark this operator could emit now)."""
        return min(self.max_input_watermark, self.operator.time_service_manager.get_reached_watermark())

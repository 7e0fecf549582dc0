"""Known-bug variants of the end-of-input flush of processing-time timers (FLIP-269), the FLIP's
own pitfalls among them."""

from __future__ import annotations

from contextlib import contextmanager

from streamproof.impl.tasks.stream_task import OperatorTask
from streamproof.impl.timers.internal_timer_service import MAX_WATERMARK, InternalTimerService
from streamproof.impl.tasks.chained_operators import KeyedOperator
from streamproof.impl.tasks.stream_task import flush_processing_time_timers
from streamproof.properties.bugzoo import variant
from streamproof.properties.timers.bugzoo import patched


@variant("flush-handles-head-only", "FLIP-269", "termination.fires-once",
         "At end of input only the head timer (the one with a physical timer) is handled by its action; "
         "the timers behind it were never registered with the processing-time service and are lost, "
         "TRIGGER and WAIT ones included.")
@contextmanager
def flush_handles_head_only():
    original = InternalTimerService.flush_processing_time_timers

    def flush(self, budget=None):
        queue = self.processing_time_timers_queue
        clock = self.processing_time_service.get_current_processing_time()
        behind = sorted((t for t in queue if t[0] > clock), key=lambda t: t[0])[1:]  # BUG: only the first survives
        for timer in behind:
            self.key_context.set_current_key(timer[1])
            queue.remove(timer, self.key_context.current_key_group_index)
            self.termination_actions.pop(timer, None)
        return original(self, budget)

    with patched(InternalTimerService, flush_processing_time_timers=flush):
        yield


@variant("flush-without-horizon", "FLIP-269", "termination.finish-is-last",
         "The flush handles every timer registered while flushing, however late: a callback that keeps "
         "registering later timers never lets it end (caught as the flush's budget error, not a hang).")
@contextmanager
def flush_without_horizon():
    def horizon(self):
        return MAX_WATERMARK if self.processing_time_timers_queue.size() else None  # BUG: no bound

    with patched(InternalTimerService, _flush_horizon=horizon):
        yield


@variant("trigger-reads-real-clock", "FLIP-269", "termination.actions-obeyed",
         "A TRIGGER timer fires at end of input with current_processing_time() reading the real clock "
         "instead of MAX: code comparing deadlines with it (CEP's notFollowedBy) sees them not passed.")
@contextmanager
def trigger_reads_real_clock():
    with patched(InternalTimerService, _trigger_clock=lambda self, clock: clock):  # BUG
        yield


@variant("flush-after-finish", "FLIP-269", "termination.finish-is-last",
         "The task calls finish() before flushing the processing-time timers: timer output leaves the "
         "operator after finish().")
@contextmanager
def flush_after_finish():
    def end_input(self):
        if self.config.drain:
            self.operator.end_input()
        self.operator.finish()  # BUG: before the flush
        if self.config.drain:
            self._flush_processing_time_timers()
        self._drain_operator_mail()
        self.output_log.append(("end_of_data",))
        self.state = self.FINISHED
        if self.on_finished is not None:
            self.on_finished(self)

    def end_input_and_finish(self):  # a keyed operator of a chain task: the same order
        task = self.task
        if self.timers_before_end is None:
            self.timers_before_end = self.operator.timers_fired
        if task.config.drain:
            self.operator.end_input()
        self.operator.finish()  # BUG: before the flush
        if task.config.drain:
            self.flush, dropped = flush_processing_time_timers(self.operator, self.log, task.config.firing_budget,
                                                               f"{self.name}[{task.vertex_subtask}]")
            self.dropped_after_horizon += dropped
        while self.executor.try_yield():
            pass

    with patched(OperatorTask, _end_input=end_input), patched(KeyedOperator, end_input_and_finish=end_input_and_finish):
        yield


@variant("wait-fires-early", "FLIP-269", "termination.actions-obeyed",
         "A WAIT timer fires at end of input without the clock reaching its time: it reads a processing "
         "time before its own.")
@contextmanager
def wait_fires_early():
    with patched(InternalTimerService, _wait_clock=lambda self, clock, timestamp: clock):  # BUG
        yield


@variant("override-ignored", "FLIP-269", "termination.actions-obeyed",
         "The per-operator override is ignored: each timer keeps the action it was registered with, so "
         "an operator set to CANCEL still fires its TRIGGER timers at end of input.")
@contextmanager
def override_ignored():
    from streamproof.impl.timers.termination import TimerTerminationAction

    def action_of(self, timer):
        return self.termination_actions.get(timer, TimerTerminationAction.CANCEL)  # BUG: no override

    with patched(InternalTimerService, termination_action_of=action_of):
        yield


@variant("format-1-restore-keeps-trigger", "FLIP-269", "termination.actions-obeyed",
         "A timer restored from a format-1 snapshot (which has no actions) is given TRIGGER instead of "
         "CANCEL: timers the old runtime would have dropped fire at end of input.")
@contextmanager
def format_1_restore_keeps_trigger():
    from streamproof.impl.timers import snapshot_format
    from streamproof.impl.timers.termination import TimerTerminationAction

    with patched(snapshot_format, FORMAT_1_ACTION=TimerTerminationAction.TRIGGER):  # BUG
        yield


@variant("flush-fires-cancel-timers", "FLIP-269", "termination.actions-obeyed",
         "The flush fires a CANCEL timer like a TRIGGER one: a timer the operator asked to drop at end "
         "of input produces output (the z3 flush model's cancel-fires variant).")
@contextmanager
def flush_fires_cancel_timers():
    from streamproof.impl.timers.termination import TimerTerminationAction
    original = InternalTimerService.termination_action_of

    def action_of(self, timer):
        action = original(self, timer)
        return TimerTerminationAction.TRIGGER if action == TimerTerminationAction.CANCEL else action  # BUG

    with patched(InternalTimerService, termination_action_of=action_of):
        yield


@variant("flush-handles-in-registration-order", "FLIP-269", "termination.actions-obeyed",
         "The flush handles the timers not yet due in the order they were registered (restored ones "
         "first), not in timestamp order: a WAIT timer moves the clock past earlier ones, TRIGGER "
         "output comes out of order.")
@contextmanager
def flush_handles_in_registration_order():
    from itertools import count

    register = InternalTimerService.register_processing_time_timer
    sequence = count()

    def register_counted(self, namespace, time, action=None):
        register(self, namespace, time, action)
        timer = self._current_timer(namespace, time)
        self.__dict__.setdefault("_registered_at", {})[timer] = next(sequence)

    def next_to_flush(self):
        queue = self.processing_time_timers_queue
        if not queue.size():
            return None
        order = self.__dict__.get("_registered_at", {})
        return min(queue, key=lambda t: (order.get(t, -1), t[0]))  # BUG: registration order

    with patched(InternalTimerService, _next_to_flush=next_to_flush,
                 register_processing_time_timer=register_counted):
        yield


@variant("wait-reads-its-own-time", "FLIP-269", "termination.actions-obeyed",
         "A WAIT timer fires in the flush reading its own time even when the flush's clock is already "
         "later (an earlier WAIT timer moved it): the clock goes back.")
@contextmanager
def wait_reads_its_own_time():
    with patched(InternalTimerService, _wait_clock=lambda self, clock, timestamp: timestamp):  # BUG
        yield


@variant("override-applies-only-to-later-timers", "FLIP-269", "termination.actions-obeyed",
         "The operator's termination override applies only to timers registered after it was set: "
         "timers registered or restored before it (a format-1 restore's CANCEL ones included) keep "
         "their own action at end of input.")
@contextmanager
def override_applies_only_to_later_timers():
    from streamproof.impl.timers.termination import TimerTerminationAction
    set_override = InternalTimerService.set_timer_termination_action
    register = InternalTimerService.register_processing_time_timer

    def set_action(self, action):
        set_override(self, action)
        self.__dict__["_before_override"] = set(self.processing_time_timers_queue)  # BUG: remembered

    def register_later(self, namespace, time, action=None):
        register(self, namespace, time, action)
        self.__dict__.get("_before_override", set()).discard(self._current_timer(namespace, time))

    def action_of(self, timer):
        if self.termination_action_override is not None and timer not in self.__dict__.get("_before_override", ()):
            return self.termination_action_override
        return self.termination_actions.get(timer, TimerTerminationAction.CANCEL)

    with patched(InternalTimerService, set_timer_termination_action=set_action,
                 register_processing_time_timer=register_later, termination_action_of=action_of):
        yield

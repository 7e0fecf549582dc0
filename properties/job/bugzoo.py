"""Known-bug variants of interruptible timers, end of input and exactly-once sinks."""

from __future__ import annotations

from contextlib import contextmanager

from streamproof.impl import task as task_module
from streamproof.impl.chain import SinkWriter
from streamproof.impl.mailbox import MailOptions, TaskMailbox
from streamproof.impl.sink import TwoPhaseCommitSink
from streamproof.impl.task import MailboxWatermarkProcessor, OperatorTask
from streamproof.impl.timers import InternalTimerService
from streamproof.properties.bugzoo import variant
from streamproof.properties.timers.bugzoo import patched


@variant("finish-drops-deferrable-mail", "FLINK-39481", "job.exactly-once",
         "At end of input the task finishes without waiting for the deferrable watermark "
         "continuation: the timers it had still to fire never fire and their output is lost.")
@contextmanager
def finish_drops_deferrable():
    original = OperatorTask._process_input
    original_available = OperatorTask._input_available

    def _process_input(self, controller):
        if self.state == self.ENDING:
            # BUG: the end of input drains only non-deferrable mail; the continuation is dropped
            for mail in self.mailbox.drain():
                if mail.options is not MailOptions.DEFERRABLE:
                    self.mailbox.put(mail)
            for processor in _watermark_processors(self):
                processor.progress_watermark_scheduled = False
            self._end_input()
            return
        original(self, controller)

    def _input_available(self):
        return True if self.state == self.ENDING else original_available(self)

    with patched(OperatorTask, _process_input=_process_input, _input_available=_input_available):
        yield


def _watermark_processors(task) -> list:
    """The task's watermark processors: its own, or those of its chained operators."""
    if hasattr(task, "operators"):
        return [op.watermark_processor for op in task.operators if hasattr(op, "watermark_processor")]
    return [task.watermark_processor]


@variant("continuation-not-deferrable", "FLINK-35528", "job.watermarks",
         "The watermark continuation is ordinary mail, so an operator yielding inside a timer "
         "callback runs it nested: later timers and the watermark overtake the callback's output.")
@contextmanager
def continuation_not_deferrable():
    def _emit_watermark_inside_mailbox(self):
        manager = self.operator.time_service_manager
        if manager.try_advance_watermark(self.max_input_watermark, self.should_interrupt):
            self.emit_watermark(self.max_input_watermark)
        elif not self.progress_watermark_scheduled:
            self.interruptions += 1
            self.progress_watermark_scheduled = True
            self.executor.execute(self._continue, "emitWatermarkInsideMailbox", MailOptions.DEFAULT)  # BUG

    with patched(MailboxWatermarkProcessor, _emit_watermark_inside_mailbox=_emit_watermark_inside_mailbox):
        yield


@variant("interrupt-checked-before-first-timer", "FLIP-443", "job.end-of-input",
         "should_stop is asked before the first timer fires, so an advance can be interrupted "
         "without progress (FLIP-443 checks after at least one timer to prevent starvation).")
@contextmanager
def interrupt_before_first_timer():
    def _fire_due(self, queue, time, callback, call, should_stop=lambda: False):
        fired = 0
        while (timer := queue.peek()) is not None and timer[0] <= time:
            if should_stop():  # BUG: asked before any timer fired
                return False, timer
            self.key_context.set_current_key(timer[1])
            queue.poll(self.key_context.current_key_group_index)
            callback(timer)
            fired += 1
            if fired >= self.firing_budget and (head := queue.peek()) is not None and head[0] <= time:
                raise self._over_budget(call, time)
        return True, timer

    with patched(InternalTimerService, _fire_due=_fire_due):
        yield


@variant("watermark-emitted-when-interrupted", "FLIP-443", "job.watermarks",
         "The watermark goes downstream although the advance was interrupted: timer output at or "
         "below it follows it.")
@contextmanager
def watermark_when_interrupted():
    def _emit_watermark_inside_mailbox(self):
        manager = self.operator.time_service_manager
        completed = manager.try_advance_watermark(self.max_input_watermark, self.should_interrupt)
        self.emit_watermark(self.max_input_watermark)  # BUG: also when interrupted
        if not completed and not self.progress_watermark_scheduled:
            self.progress_watermark_scheduled = True
            self.executor.execute(self._continue, "emitWatermarkInsideMailbox", MailOptions.DEFERRABLE)

    with patched(MailboxWatermarkProcessor, _emit_watermark_inside_mailbox=_emit_watermark_inside_mailbox):
        yield


@variant("snapshot-before-fired-effects", "FLIP-443", "job.timer-effects-once",
         "A checkpoint during an interrupted firing takes the timers as they were when the firing "
         "began, although the fired timers' output is already in the checkpoint's transaction: "
         "after a restore those timers fire again.")
@contextmanager
def snapshot_before_effects():
    original_emit = MailboxWatermarkProcessor._emit_watermark_inside_mailbox
    original_snapshot = OperatorTask._snapshot

    def _emit_watermark_inside_mailbox(self):
        if not self.progress_watermark_scheduled and not hasattr(self, "stale_timers"):
            self.stale_timers = self.operator.snapshot_state().timers  # the queue before the firing
        original_emit(self)
        if not self.progress_watermark_scheduled and hasattr(self, "stale_timers"):
            del self.stale_timers

    def _snapshot(self, checkpoint_id):
        snapshot = original_snapshot(self, checkpoint_id)
        stale = getattr(self.watermark_processor, "stale_timers", None)
        if stale is not None:
            snapshot.operator.timers = stale  # BUG: timers from before the fired timers' effects
        return snapshot

    with patched(MailboxWatermarkProcessor, _emit_watermark_inside_mailbox=_emit_watermark_inside_mailbox), \
            patched(OperatorTask, _snapshot=_snapshot):
        yield


@variant("sink-commits-on-snapshot", "streamproof", "job.exactly-once",
         "The two-phase-commit sink commits when the checkpoint is taken instead of when it "
         "completes: a failure before completion replays data that is already committed.")
@contextmanager
def sink_commits_on_snapshot():
    original = TwoPhaseCommitSink.snapshot_state

    def snapshot_state(self, checkpoint_id):
        state = original(self, checkpoint_id)
        self.notify_checkpoint_complete(checkpoint_id)  # BUG: commit before completion
        return state

    with patched(TwoPhaseCommitSink, snapshot_state=snapshot_state):
        yield


_ = task_module  # the task module is what these variants patch


# -- job graphs: liveness and multi-stage sinks -------------------------------------------------
@variant("watermark-only-after-uninterrupted-pass", "FLINK-40101", "job.watermark-liveness",
         "An interrupted advance emits nothing: under steady urgent mail (unaligned barriers every few "
         "steps, mail during firings) each pass is interrupted and the output watermark stays frozen "
         "although the timers below it have fired. Flink's fix emits the reached watermark.")
@contextmanager
def watermark_only_after_uninterrupted_pass():
    original = MailboxWatermarkProcessor.__init__

    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.intermediate = False  # BUG: no intermediate watermark while interrupted

    with patched(MailboxWatermarkProcessor, __init__=__init__):
        yield


@variant("processing-timer-mail-starved-by-urgent-batching", "FLINK-39898", "job.timer-liveness",
         "A processing-time timer's mail joins a batch only along with urgent mail: put while no urgent "
         "mail is queued, it waits for the next checkpoint's urgent mail (for ever in a task that gets none).")
@contextmanager
def timer_mail_starved():
    def create_batch(self):
        if self.has_urgent_mail():
            self._batch.extend(self._queue)
            self._queue.clear()
        else:  # BUG: timer mail is left behind until urgent mail arrives
            keep = [m for m in self._queue if m.description.startswith("processing timer")]
            self._batch.extend(m for m in self._queue if not m.description.startswith("processing timer"))
            self._queue.clear()
            self._queue.extend(keep)
        return bool(self._batch)

    with patched(TaskMailbox, create_batch=create_batch):
        yield


@variant("final-committables-on-checkpoint-completion", "FLINK-38614", "job.exactly-once",
         "The sink writer keeps its final committables at end of input and sends them when its final "
         "checkpoint completes, after EndOfData left: a committer in the next task never reads them "
         "and the last records are never committed.")
@contextmanager
def final_committables_late():
    def end_input_and_finish(self):
        pass  # BUG: the final committables stay in the buffer

    def notify_checkpoint_complete(self, checkpoint_id):
        self.emit_committables()  # BUG: after EndOfData

    with patched(SinkWriter, end_input_and_finish=end_input_and_finish,
                 notify_checkpoint_complete=notify_checkpoint_complete):
        yield

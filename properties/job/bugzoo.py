"""Known-bug variants of interruptible timers, end of input and exactly-once sinks.

Size: a catalogue of independent bug variants, one short patch each; a family's bug zoo is its one ``bugzoo`` module.
"""

from __future__ import annotations

from contextlib import contextmanager

from streamproof.impl.tasks import stream_task as task_module
from streamproof.impl.tasks.chained_operators import SinkWriter
from streamproof.impl.tasks.operator_chain import ChainTask
from streamproof.impl.tasks.mailbox import MailOptions, TaskMailbox
from streamproof.impl.operators.two_phase_commit_sink import TwoPhaseCommitSink
from streamproof.impl.tasks.stream_task import CheckpointBarrier, MailboxWatermarkProcessor, OperatorTask
from streamproof.impl.timers.internal_timer_service import InternalTimerService
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

    original_chain_snapshot = ChainTask._snapshot

    def _snapshot(self, checkpoint_id):
        snapshot = original_snapshot(self, checkpoint_id)
        stale = getattr(self.watermark_processor, "stale_timers", None)
        if stale is not None:
            snapshot.operator.timers = stale  # BUG: timers from before the fired timers' effects
        return snapshot

    def _chain_snapshot(self, checkpoint_id):
        snapshot = original_chain_snapshot(self, checkpoint_id)
        for op in self.keyed:
            stale = getattr(op.watermark_processor, "stale_timers", None)
            if stale is not None:
                snapshot.sink[op.name].timers = stale  # BUG: timers from before the fired timers' effects
        return snapshot

    with patched(MailboxWatermarkProcessor, _emit_watermark_inside_mailbox=_emit_watermark_inside_mailbox), \
            patched(OperatorTask, _snapshot=_snapshot), patched(ChainTask, _snapshot=_chain_snapshot):
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


@variant("continuation-scheduled-twice", "FLIP-443", "job.watermarks",
         "The watermark processor schedules a continuation whenever an advance is interrupted, also when "
         "one is already pending (progressWatermarkScheduled ignored): a watermark arriving during an "
         "interrupted firing adds a second continuation mail. Every output stays the same (the extra "
         "continuation re-fires nothing and its repeated watermark is dropped downstream), but the "
         "scheduled flag no longer says whether a continuation is pending.")
@contextmanager
def continuation_scheduled_twice():
    def _emit_watermark_inside_mailbox(self):
        manager = self.operator.time_service_manager
        fired_before = self.operator.timers_fired
        if manager.try_advance_watermark(self.max_input_watermark, self.should_interrupt):
            self._emit(self.max_input_watermark)
            return
        self.interruptions += 1  # BUG: no check of progress_watermark_scheduled
        self.stalled += self.operator.timers_fired == fired_before
        self.progress_watermark_scheduled = True
        self.executor.execute(self._continue, "emitWatermarkInsideMailbox", MailOptions.DEFERRABLE)

    with patched(MailboxWatermarkProcessor, _emit_watermark_inside_mailbox=_emit_watermark_inside_mailbox):
        yield


def _head_executor(task):
    """The mailbox executor of the task's head operator (the one-stage task's operator)."""
    if hasattr(task, "operators"):
        return getattr(task.operators[0], "executor", task.executor)
    return task.operator_executor


@variant("barrier-taken-inside-a-yield", "Flink mailbox priorities", "job.timer-effects-once",
         "An unaligned barrier's mail is put with the head operator's executor (priority 0) instead of the "
         "task's main executor (MIN_PRIORITY): an operator yielding inside a timer callback (an async "
         "operator waiting for its result) runs the barrier, and the snapshot is taken between the timer's "
         "firing and its output: it holds neither the timer nor its output, so a restore loses the effect.")
@contextmanager
def barrier_taken_inside_a_yield():
    original = OperatorTask.receive

    def receive(self, channel, element):
        if isinstance(element, CheckpointBarrier) and self.config.unaligned_checkpoints and not element.savepoint:
            position = self.dequeued[channel] + len(self.inputs[channel])
            _head_executor(self).execute(  # BUG: the operator's priority, not MIN_PRIORITY
                lambda: self._on_unaligned_barrier(channel, element.checkpoint_id, position),
                f"unaligned barrier {element.checkpoint_id}", self.barrier_mail_options)
            return
        original(self, channel, element)

    with patched(OperatorTask, receive=receive):
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


# -- FLIP-331: end-of-stream operators and blocking scheduling ------------------------------------
@variant("end-of-stream-trigger-fires-on-any-watermark", "FLIP-331", "eos.output-only-after-end",
         "The end-of-stream trigger registers its timer at each element's timestamp and fires on it, "
         "instead of only at MAX_WATERMARK: a global window emits partial results mid-stream. (In "
         "Flink the timer's namespace names its window; here the patched operator asks the trigger "
         "about every window of the key, which is what a namespaced timer amounts to.)")
@contextmanager
def eos_trigger_fires_early():
    from streamproof.impl.operators.windows import EndOfStreamTrigger, TriggerResult, WindowOperator

    def on_element(self, element, timestamp, window, ctx):
        ctx.register_event_time_timer(timestamp)  # BUG: a timer at the element's time
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        return TriggerResult.FIRE  # BUG: any timer fires the window

    def on_timer(self, timestamp, ctx, out):
        self._trigger_context.timer_service = ctx.timer_service()
        for window in list(self.contents.keys()):
            if self.trigger.on_event_time(timestamp, window, self._trigger_context).is_fire:
                self._emit(ctx.get_current_key(), window, out)

    with patched(EndOfStreamTrigger, on_element=on_element, on_event_time=on_event_time), \
            patched(WindowOperator, on_timer=on_timer):
        yield


@variant("blocking-flag-not-propagated-in-chain", "FLIP-331", "eos.no-checkpoint-while-blocking",
         "Only a chain's last operator is asked whether it emits only at the end: a chain whose "
         "flagged operator is followed by a chained map keeps pipelined outputs, so its consumers are "
         "deployed at once and checkpoints run while it runs.")
@contextmanager
def flag_not_propagated():
    from streamproof.impl.graph.job_graph import JobGraph

    def blocking_chains(self):
        return {chain.name for chain in self.chains
                if self.by_name[chain.operators[-1]].output_only_after_end_of_stream}  # BUG: the tail only

    with patched(JobGraph, blocking_chains=blocking_chains):
        yield


@variant("checkpoint-while-blocking-producer-runs", "FLIP-331", "eos.no-checkpoint-while-blocking",
         "The checkpoint coordinator ignores blocking outputs: a checkpoint is triggered while a "
         "blocking-output vertex runs (Flink declines it with BLOCKING_OUTPUT_EXIST).")
@contextmanager
def checkpoint_while_blocking():
    from streamproof.impl.graph.checkpoint_coordinator import GraphCheckpointCoordinator
    from streamproof.impl.graph.checkpoint_coordinator import CheckpointCoordinator

    def maybe_trigger(self, now):
        return CheckpointCoordinator.maybe_trigger(self, now)  # BUG: no BLOCKING_OUTPUT_EXIST check

    with patched(GraphCheckpointCoordinator, maybe_trigger=maybe_trigger):
        yield


@variant("consumer-deployed-before-blocking-producer-finished", "FLIP-331", "eos.no-checkpoint-while-blocking",
         "The scheduler deploys a region as soon as slots are free, without waiting for the chains "
         "feeding it through blocking edges to finish.")
@contextmanager
def deployed_early():
    from streamproof.impl.tasks.operator_chain import ChainTask
    from streamproof.impl.graph.sources import GraphSourceTask
    from streamproof.impl.tasks.stream_task import OperatorTask

    def task_runnable(self):
        return OperatorTask.is_runnable(self)  # BUG: deployed or not

    original = GraphSourceTask.is_runnable

    def source_runnable(self):
        self.deployed = True  # BUG: every source starts at once
        return original(self)

    with patched(ChainTask, is_runnable=task_runnable), patched(GraphSourceTask, is_runnable=source_runnable):
        yield


@variant("sorted-path-drops-last-key", "FLIP-331", "eos.sorted-equals-streaming",
         "The sorted fast path closes each key's group when the next key starts and forgets the last "
         "group: the last key's records are lost.")
@contextmanager
def sorted_drops_last_key():
    from itertools import groupby

    from streamproof.impl.operators import end_of_stream
    def sorted_window_aggregate(records, aggregate):
        groups = [(key, list(group)) for key, group in groupby(end_of_stream.sort_by_key(records),
                                                              key=end_of_stream._key_of)]
        results = []
        for key, group in groups[:-1]:  # BUG: the last key is never emitted
            accumulator = aggregate.create_accumulator()
            for _, value, _ in group:
                accumulator = aggregate.add(value, accumulator)
            results.append((key, aggregate.get_result(accumulator)))
        return results

    with patched(end_of_stream, sorted_window_aggregate=sorted_window_aggregate):
        yield


@variant("combined-watermark-from-first-input-only", "Flink two-input operators", "job.exactly-once",
         "A two-input operator's watermark is its first input's alone (Flink combines min(input 1, input 2)): "
         "windows fire while the second input still sends records of them, which then fire them again.")
@contextmanager
def combined_watermark_from_first_input_only():
    from streamproof.impl.graph.job_runtime import GraphJob

    original = GraphJob._create_task

    def _create_task(self, chain, s):
        task = original(self, chain, s)
        second = {e.source for e in self.graph.inputs(chain.head) if e.input == 2}
        for channel, (upstream, _) in enumerate(task.channel_ids):
            if upstream in second:
                task.valve.finished[channel] = True  # BUG: the second input never holds the watermark back
        return task

    with patched(GraphJob, _create_task=_create_task):
        yield


@variant("side-outputs-outside-the-transaction", "streamproof (certify's runtime)", "job.exactly-once",
         "The sink writes side outputs straight to the external system instead of into the current "
         "transaction: after a failure the replayed input emits them again, and they are committed "
         "twice (issue 31: side outputs kept out of the exactly-once sink's transaction).")
@contextmanager
def side_outputs_outside_the_transaction():
    original = TwoPhaseCommitSink.invoke

    def invoke(self, record):
        if isinstance(record, tuple) and len(record) == 3 and record[0] == "side-output":
            self.external.commit((self.name, self.subtask_index, "side", len(self.external.committed)), (record,))
            return  # BUG: outside the transaction
        original(self, record)

    with patched(TwoPhaseCommitSink, invoke=invoke):
        yield


# -- issue 31: keyed forward edges after a rescale; end of input after a restore -------------------
def _reads_keyed_forward(graph, name: str) -> bool:
    """Whether keyed operator ``name`` reads a keyed stream over a forward edge (reinterpretAsKeyedStream)."""
    return graph.by_name[name].kind == "keyed_process" and any(
        e.partitioning == "forward" and graph.by_name[e.source].kind != "source" for e in graph.inputs(name))


@variant("forward-keyed-state-restored-by-subtask-index", "streamproof (issue 31)", "job.exactly-once",
         "A keyed operator reading a keyed stream over a forward edge restores its keyed state from the "
         "old subtask with its index (modulo the new parallelism), as operator state, instead of from the "
         "old subtasks whose key groups overlap its own; its timers come by key group. After a rescale "
         "the state of key groups that moved is lost (the backend keeps only its own key groups): "
         "windows fire with partial sums.")
@contextmanager
def forward_keyed_state_by_index():
    from streamproof.impl.tasks.operator_chain import ChainTask
    from streamproof.impl.tasks.chained_operators import KeyedOperator
    from streamproof.impl.graph.job_runtime import GraphJob
    from streamproof.impl.timers.snapshots import restore_from_snapshots

    original_job_restore, original_restore = GraphJob._restore, ChainTask.restore_operators

    def _restore(self, checkpoint):
        for task in self.tasks:
            task.forward_keyed = {op.name for op in task.operators if _reads_keyed_forward(self.graph, op.name)}
        original_job_restore(self, checkpoint)

    def restore_operators(self, snapshots):
        wrong = [op for op in self.operators if isinstance(op, KeyedOperator)
                 and op.name in getattr(self, "forward_keyed", ())]
        original_restore(self, snapshots)
        for op in wrong:
            operator = op.operator
            tables = operator.state_backend._tables
            for kg in tables:
                tables[kg] = {}
            for snap in snapshots:  # BUG: by old subtask index, not by key group
                if op.name in snap.sink and snap.vertex_subtask % self.vertex_parallelism == self.vertex_subtask:
                    operator.state_backend.restore(snap.sink[op.name].keyed_state)

    with patched(GraphJob, _restore=_restore), patched(ChainTask, restore_operators=restore_operators):
        yield


@variant("finished-source-restored-without-max-watermark", "FLIP-147", "job.end-of-input",
         "A source that had ended when the restored checkpoint was triggered is restored as finished with "
         "EndOfData alone, without the MAX_WATERMARK Flink's StreamTaskFinishedOnRestoreSourceInput sends "
         "first: when every source had ended, the restored tasks end their input without MAX_WATERMARK.")
@contextmanager
def finished_source_without_max_watermark():
    from streamproof.impl.graph.job_runtime import GraphJob
    from streamproof.impl.tasks.stream_elements import EndOfData

    original = GraphJob._end_finished_sources

    def _end_finished_sources(self, checkpoint):
        sources = self.sources
        for source in sources:
            source.end = (lambda s: lambda: (self.broadcast(s.index, EndOfData()), setattr(s, "ended", True)))(source)
        try:
            original(self, checkpoint)  # BUG: EndOfData without MAX_WATERMARK
        finally:
            for source in sources:
                del source.end

    with patched(GraphJob, _end_finished_sources=_end_finished_sources):
        yield


@variant("finished-source-channel-state-dropped", "FLIP-147", "job.exactly-once",
         "On restore the in-flight data of a channel whose source had ended when the checkpoint was "
         "triggered is not replayed (as if a finished source's channel held nothing more): the records "
         "an unaligned checkpoint captured behind its EndOfData are lost.")
@contextmanager
def finished_source_channel_state_dropped():
    import dataclasses

    from streamproof.impl.graph.job_runtime import GraphJob

    def without_ended(snapshot, ended_channel) -> object:
        kept = [(c, e) for c, e in snapshot.channel_state if not ended_channel(snapshot, c)]  # BUG
        return dataclasses.replace(snapshot, channel_state=kept)

    def ended_of(checkpoint) -> set:
        return {i for i, done in enumerate(checkpoint.sources_ended or ()) if done}

    original_graph, original_restore = GraphJob._replay_channel_state, GraphJob._restore

    def restore_graph(self, checkpoint):
        self.ended_at_restore = {self.graph.source_subtasks()[i] for i in ended_of(checkpoint)}
        original_restore(self, checkpoint)

    def replay_graph(self, snapshot, same_layout):
        ended = getattr(self, "ended_at_restore", set())
        original_graph(self, without_ended(snapshot, lambda s, c: tuple(s.channels[c]) in ended), same_layout)

    with patched(GraphJob, _replay_channel_state=replay_graph, _restore=restore_graph):
        yield

"""Ports of Flink's stream-task tests (FLIP-443 interruptible timers) and end-of-input order."""

from types import SimpleNamespace

from streamproof.impl.state.key_groups import KeyGroupRange
from streamproof.impl.tasks.mailbox import MIN_PRIORITY, Mail, MailboxExecutor, MailOptions, TaskMailbox
from streamproof.impl.operators.keyed_process_operator import KeyedProcessFunction, StreamRecord
from streamproof.impl.operators.two_phase_commit_sink import ExternalSystem
from streamproof.impl.tasks.stream_task import EndOfData, MailboxWatermarkProcessor, OperatorTask, TaskConfig, Watermark
from streamproof.impl.timers.internal_timer_service import MAX_WATERMARK
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService


class NoOpTimeServiceManager:
    """Flink's NoOpInternalTimeServiceManager: progress stops whenever asked to."""

    def try_advance_watermark(self, watermark, should_stop):
        return not should_stop()


def test_emit_watermark_inside_mailbox():
    """MailboxWatermarkProcessorTest#testEmitWatermarkInsideMailbox."""
    priority = 42
    emitted = []
    mailbox = TaskMailbox()
    operator = SimpleNamespace(time_service_manager=NoOpTimeServiceManager(), timers_fired=0)
    processor = MailboxWatermarkProcessor(operator, MailboxExecutor(mailbox, priority), emitted.append)
    for wm in (1, 2, 3):
        processor.emit_watermark_inside_mailbox(wm)
    assert emitted == [1, 2, 3]
    mailbox.put(Mail(lambda: None, "checkpoint mail", MIN_PRIORITY, MailOptions.DEFAULT))
    processor.emit_watermark_inside_mailbox(4)
    processor.emit_watermark_inside_mailbox(5)
    assert emitted == [1, 2, 3]
    # FLINK-35528: the continuation is deferrable, so yielding at the operator's priority never takes it
    assert mailbox.try_take(priority) is None
    while mailbox.has_mail():
        mailbox.take(MIN_PRIORITY).run()
    assert emitted == [1, 2, 3, 5]  # 4 is processed together with 5


class MultipleTimersAtTheSameTimestamp(KeyedProcessFunction):
    """Each record registers its key's timers at both window ends; each firing emits a record
    and puts a mail that emits another."""

    interruptible_timers = True

    def __init__(self, window_ends=(1000, 2000)):
        self.window_ends = window_ends

    def open(self, ctx):
        self.executor = ctx.get_mailbox_executor()

    def process_element(self, value, ctx, out):
        for end in self.window_ends:
            ctx.timer_service().register_event_time_timer(end)

    def on_timer(self, timestamp, ctx, out):
        key = ctx.get_current_key()
        out.collect(f"fired-{key}")
        self.executor.execute(lambda: out.collect(f"mail-{key}"), f"mail {key}")


def make_task(function, interruptible=True, channels=1):
    return OperatorTask("op", 0, 1, 0, 128, KeyGroupRange(0, 127), function, channels,
                        ManualProcessingTimeService(), ExternalSystem(),
                        TaskConfig(interruptible_timers=interruptible), lambda c, s: None)


def run_until_idle(task, limit=10_000):
    for _ in range(limit):
        if not task.is_runnable():
            return
        task.run_step()
    raise AssertionError("task did not become idle")


def output(task):
    return [e[1] if e[0] == "record" else ("wm", e[1]) if e[0] == "watermark" else e[0] for e in task.output_log]


def test_single_watermark_holding_operator_in_the_chain():
    """UnalignedCheckpointsInterruptibleTimersTest#testSingleWatermarkHoldingOperatorInTheChain
    (the chain's second operator passes everything on: its output is the head's)."""
    task = make_task(MultipleTimersAtTheSameTimestamp())
    task.open()
    for key in ("key-0", "key-1"):
        task.receive(0, StreamRecord(key, "register timers", 0))
    run_until_idle(task)
    task.receive(0, Watermark(1000))
    run_until_idle(task)
    task.receive(0, Watermark(2000))
    run_until_idle(task)
    assert output(task) == [
        "fired-key-0", "mail-key-0", "fired-key-1", "mail-key-1", ("wm", 1000),
        "fired-key-0", "mail-key-0", "fired-key-1", "mail-key-1", ("wm", 2000),
    ]
    assert task.watermark_processor.interruptions >= 2


def test_without_interruptible_timers_firing_is_not_split():
    task = make_task(MultipleTimersAtTheSameTimestamp(), interruptible=False)
    task.open()
    for key in ("key-0", "key-1"):
        task.receive(0, StreamRecord(key, "register timers", 0))
    task.receive(0, Watermark(1000))
    run_until_idle(task)
    assert output(task) == ["fired-key-0", "fired-key-1", ("wm", 1000), "mail-key-0", "mail-key-1"]


class NoTimers(KeyedProcessFunction):
    interruptible_timers = True

    def process_element(self, value, ctx, out):
        out.collect(value)


def test_watermark_progress_with_no_timers():
    """UnalignedCheckpointsInterruptibleTimersTest#testWatermarkProgressWithNoTimers."""
    task = make_task(NoTimers())
    task.open()
    task.executor.execute(lambda: None, "a foreign mail")  # even with mail waiting
    task.receive(0, Watermark(1))
    task.receive(0, StreamRecord("k", "x", 2))
    task.receive(0, Watermark(3))
    run_until_idle(task)
    assert output(task) == [("wm", 1), "x", ("wm", 3)]


def test_deferred_continuation_runs_before_end_of_data_and_finish():
    """FLINK-39481: MAX_WATERMARK's interrupted firing completes before EndOfData and finish()."""
    task = make_task(MultipleTimersAtTheSameTimestamp(window_ends=(10,)))
    task.open()
    for i in range(5):
        task.receive(0, StreamRecord(f"key-{i}", "register", 0))
    task.receive(0, Watermark(MAX_WATERMARK))
    task.receive(0, EndOfData())
    run_until_idle(task)
    out = output(task)
    assert out.index(("wm", MAX_WATERMARK)) < out.index("end_of_data") == len(out) - 1
    assert sorted(o for o in out if isinstance(o, str) and o.startswith("fired")) == [f"fired-key-{i}" for i in range(5)]
    assert task.watermark_processor.interruptions >= 1 and task.state == task.FINISHED


def test_interruptible_timers_need_the_config_key_and_the_operator_opt_in():
    from streamproof.impl.tasks.task_state import INTERRUPTIBLE_TIMERS_KEY

    class OptedOut(MultipleTimersAtTheSameTimestamp):
        interruptible_timers = False

    on = TaskConfig.from_configuration({INTERRUPTIBLE_TIMERS_KEY: True})
    assert on.interruptible_timers and not TaskConfig.from_configuration({}).interruptible_timers
    def task_with(function, config):
        return OperatorTask("op", 0, 1, 0, 128, KeyGroupRange(0, 127), function, 1,
                            ManualProcessingTimeService(), ExternalSystem(), config, lambda c, s: None)
    assert task_with(MultipleTimersAtTheSameTimestamp(), on).interruptible
    assert not task_with(OptedOut(), on).interruptible
    assert not task_with(MultipleTimersAtTheSameTimestamp(), TaskConfig()).interruptible
    import pytest
    with pytest.raises(ValueError, match="unknown configuration key"):
        TaskConfig.from_configuration({"execution.checkpointing.interruptible": True})

"""How the job runtime wires a task: an operator's output chained to the next operator, routed by
side-output tag or written to the network; an input-driven processing-time clock; processing-time
timers delivered as mail (Flink's ProcessingTimeServiceImpl running its callbacks through the
mailbox); and asynchronous mail that arrives while a timer fires (FLIP-443's interruption)."""

from __future__ import annotations

import random
from typing import Any

from streamproof.impl.operators.keyed_process_operator import StreamRecord
from streamproof.impl.tasks.operator_chain import ChainTask
from streamproof.impl.tasks.stream_elements import Watermark
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService


def interrupt_check(rng: random.Random, rate: float, task_executor, executor):
    """``should_interrupt`` of a firing. Mail arrives concurrently in Flink (RPCs, timers): while a
    timer fires, a foreign mail may land in the task's mailbox (with probability ``rate``) before
    the operator's ``executor`` is asked whether to interrupt."""
    def should_interrupt() -> bool:
        if rng.random() < rate:
            task_executor.execute(lambda: None, "rpc")
        return executor.should_interrupt()
    return should_interrupt


class MailboxTimers:
    """The task's processing-time service: physical timers fire as mail in the task's mailbox."""

    # a timer registered at or before the clock fires at once (Flink's SystemProcessingTimeService
    # schedules it with no delay): input-driven clocks, which move only with the input, set it
    fire_due_at_once = False

    def __init__(self, clock: ManualProcessingTimeService, job, subtask: int):
        self.clock, self.job, self.subtask = clock, job, subtask

    def get_current_processing_time(self) -> int:
        return self.clock.get_current_processing_time()

    def register_timer(self, timestamp: int, callback):
        task_ref = lambda: self.job.tasks[self.subtask]
        attempt = self.job.attempt

        def defer_to_mailbox(ts: int) -> None:
            task = task_ref()
            if self.job.attempt == attempt and task.state not in (task.FAILED, task.TERMINATED):
                task.executor.execute(self.mail(task, callback, ts), f"processing timer {ts}")

        timer = self.clock.register_timer(timestamp, defer_to_mailbox)
        if self.fire_due_at_once and timestamp <= self.clock.get_current_processing_time():
            self.clock.advance_to(self.clock.get_current_processing_time())  # into the mailbox, as mail
        return timer

    def mail(self, task, callback, timestamp: int):
        """The mail that runs a physical timer's callback."""
        return lambda: callback(timestamp)


def input_clock(clock: ManualProcessingTimeService, task: ChainTask):
    """Input-driven processing time: the task's clock moves to the advance (never back), then the
    advance travels on to the tasks it feeds."""
    from streamproof.impl.tasks.stream_elements import ProcessingTimeAdvance

    def advance(timestamp: int) -> None:
        if timestamp > clock.get_current_processing_time():
            clock.advance_to(timestamp)
        for output in task.network_outputs:
            output(ProcessingTimeAdvance(timestamp))
    return advance


def chained_output(target):
    """Flink's ``ChainingOutput``: the next operator is called directly."""
    def output(element: Any) -> None:
        if isinstance(element, StreamRecord):
            target.process_element(element)
        elif isinstance(element, int):
            target.process_watermark(element)
    return output


def routed_output(output, tag: str | None):
    """PyFlink's side outputs: a tagged edge gets its tag's values (unwrapped), an untagged edge
    the main output only; watermarks and the end of data go to both."""
    def route(element: Any) -> None:
        if isinstance(element, StreamRecord):
            value = element.value
            side = isinstance(value, tuple) and len(value) == 3 and value[0] == "side-output"
            if tag is None and side or tag is not None and not (side and value[1] == tag):
                return
            if tag is not None:
                element = StreamRecord(element.key, value[2], element.timestamp)
        output(element)
    return route


def network_output(job, operator: str, subtask: int, edge):
    """A record writer: the element goes to the tasks of ``edge``'s target."""
    def output(element: Any) -> None:
        if isinstance(element, int):
            element = Watermark(element)
        job.write(operator, subtask, element, [edge])
    return output


class TimedMailboxTimers(MailboxTimers):
    """Processing-time timers as mail, measuring how many mailbox steps each mail waited."""

    def mail(self, task, callback, timestamp: int):
        waiting = self.job.timer_mail_waiting
        token = object()
        waiting[token] = (task, task.steps)

        def run() -> None:
            _, put_at = waiting.pop(token)
            self.job.timer_delays.append(task.steps - put_at)
            callback(timestamp)
        return run

"""The one-input harnesses: a keyed operator (a ``KeyedProcessFunction`` or a window) on the task
runtime the simulator uses, and a non-keyed ``ProcessFunction``.

A keyed harness drives one :class:`streamproof.impl.tasks.stream_task.OperatorTask` (one subtask, one input
channel) the way its mailbox would: a record is the default action, a watermark goes through the
task's :class:`~streamproof.impl.tasks.stream_task.MailboxWatermarkProcessor` (FLIP-443 when the operator uses
interruptible timers), processing-time timers fire as mail, ``end_input()`` is the task's end of a
bounded input with drain. Between two calls no mail is left pending, except the continuation of a
firing the test stopped with ``process_watermark(t, stop_after=k)``: the test then chooses what runs
before ``continue_firing()``.

Size: the harness classes of :mod:`streamproof.testing`, sharing ``_Output``; the two-input one extends the keyed one.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable

from streamproof.impl.state.key_groups import (
    CompositeKey,
    KeyGroupRange,
    assign_to_key_group,
    compute_key_group_range_for_operator_index,
    compute_operator_index_for_key_group,
)
from streamproof.impl.operators.keyed_process_operator import OperatorSnapshot, StreamRecord
from streamproof.impl.operators.two_phase_commit_sink import ExternalSystem
from streamproof.impl.tasks.stream_task import OperatorTask, TaskConfig
from streamproof.impl.timers.internal_timer_service import MAX_WATERMARK, MIN_WATERMARK
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService
from streamproof.testing.output import HarnessError, Record, Timer, Watermark, assert_output

MAIL_LIMIT = 100_000  # mails one harness call may run (an operator that keeps mailing itself)


@dataclass(frozen=True)
class HarnessSnapshot:
    """What ``snapshot()`` returns (Flink's ``OperatorSubtaskState``): the operator's keyed state
    and timers, with what a restore checks (the operator's ``uid``, the max parallelism)."""

    uid: str
    checkpoint_id: int
    max_parallelism: int
    parallelism: int
    subtask: int
    key_group_range: KeyGroupRange | None
    state: OperatorSnapshot | None  # None: a non-keyed function (its attributes are not state)


def _key_selector(key: Any) -> Callable[[Any], Any]:
    if key is None:
        raise HarnessError("a keyed harness needs key=: the key selector (a function of the record, or a "
                           "KeySelector with get_key)")
    if hasattr(key, "get_key") and not isinstance(key, type):
        return key.get_key
    if callable(key):
        return key
    raise HarnessError(f"key={key!r} is neither callable nor a KeySelector")


def timestamp_function(timestamp: Any) -> Callable[[Any], int | None] | None:
    """``timestamp=``: None, a function of the record, or a PyFlink ``TimestampAssigner``."""
    if timestamp is None:
        return None
    if hasattr(timestamp, "extract_timestamp") and not isinstance(timestamp, type):
        return lambda value: timestamp.extract_timestamp(value, MIN_WATERMARK)
    if callable(timestamp):
        return timestamp
    raise HarnessError(f"timestamp={timestamp!r} is neither callable nor a TimestampAssigner")


def _checked_timestamp(timestamp: Any) -> int | None:
    if timestamp is None:
        return None
    if isinstance(timestamp, bool) or not isinstance(timestamp, int):
        raise HarnessError(f"a timestamp is an int (milliseconds), got {timestamp!r}")
    return timestamp


class _Output:
    """Reading what the operator emitted (``log``: the task's output log format), and what every
    harness does with its input."""

    log: list
    _timestamp: Callable[[Any], int | None] | None

    def _event_time(self, value: Any, timestamp: int | None) -> int | None:
        """The record's timestamp: the one given, else the harness's timestamp function's."""
        if timestamp is None and self._timestamp is not None:
            try:
                timestamp = self._timestamp(value)
            except Exception as e:  # noqa: BLE001 - the user's assigner: one line
                raise HarnessError(f"the timestamp assigner raised {type(e).__name__}: {e} on {value!r}") from None
        return _checked_timestamp(timestamp)

    def process_element(self, value: Any, timestamp: int | None = None):
        raise NotImplementedError

    def process_elements(self, values, timestamps=None):
        """Several records in order (``timestamps``: one per record, or the timestamp function)."""
        values = list(values)
        timestamps = None if timestamps is None else list(timestamps)
        for i, value in enumerate(values):
            self.process_element(value, None if timestamps is None else timestamps[i])
        return self

    def get_output(self) -> list:
        """Records (:class:`Record`) and watermarks (:class:`Watermark`) in the order emitted
        (Flink's ``getOutput()``)."""
        return [Record(e[1], e[2]) if e[0] == "record" else Watermark(e[1])
                for e in self.log if e[0] in ("record", "watermark") and not (e[0] == "watermark" and e[1] == MIN_WATERMARK)]

    def extract_output_values(self) -> list:
        """The output values in order (Flink's ``extractOutputValues()``)."""
        return [e[1] for e in self.log if e[0] == "record"]

    def extract_output_stream_records(self) -> list[Record]:
        """The output records with their timestamps, no watermarks."""
        return [Record(e[1], e[2]) for e in self.log if e[0] == "record"]

    def output(self) -> list:
        """Short for :meth:`extract_output_values`."""
        return self.extract_output_values()

    def get_side_output(self, tag: Any) -> list:
        """The values emitted to the side output ``tag`` (an ``OutputTag`` or its name)."""
        name = getattr(tag, "tag_id", tag)
        return [e[1] for e in self.log if e[0] == "side" and e[3] == name]

    side_output = get_side_output

    def _groups(self, kinds: tuple) -> list:
        """Per element of the output: the block of timers it shares (origin and timestamp), or None."""
        return [(e[3], e[2]) if e[0] == "record" and e[3] != "element" else None
                for e in self.log if e[0] in kinds and not (e[0] == "watermark" and e[1] == MIN_WATERMARK)]

    def assert_output(self, expected, *, ordered: bool | None = None) -> None:
        """Compares the output with ``expected``: values, or :class:`Record` and
        :class:`Watermark` elements (then timestamps and watermarks are compared too). In order,
        except the outputs of timers firing at one timestamp (Flink does not order timers of
        different keys at one timestamp); ``ordered=True``: strictly; ``ordered=False``: as a
        multiset between watermarks (``assertOutputEqualsSorted``)."""
        expected = list(expected)
        if any(isinstance(e, (Record, Watermark)) for e in expected):
            actual = self.get_output()
            groups = self._groups(("record", "watermark"))
            if not any(isinstance(e, Watermark) for e in expected):
                actual, groups = self.extract_output_stream_records(), self._groups(("record",))
        else:
            actual, groups = self.extract_output_values(), self._groups(("record",))
        assert_output(expected, actual, groups, ordered=ordered)

    def assert_side_output(self, tag: Any, expected, *, ordered: bool = True) -> None:
        """Compares one side output's values with ``expected`` (``ordered=False``: as a multiset)."""
        actual = self.get_side_output(tag)
        assert_output(list(expected), actual, None, ordered=ordered,
                      what=f"side output {getattr(tag, 'tag_id', tag)!r}")


class _MailboxClock:
    """The task's processing-time service: physical timers fire as mail in its mailbox."""

    def __init__(self, clock: ManualProcessingTimeService, harness: "KeyedOperatorHarness"):
        self.clock, self.harness = clock, harness

    def get_current_processing_time(self) -> int:
        return self.clock.get_current_processing_time()

    def register_timer(self, timestamp: int, callback):
        task = self.harness.task

        def defer_to_mailbox(time: int) -> None:
            if self.harness.task is task:  # not a timer of an operator a restore replaced
                task.executor.execute(lambda: callback(time), f"processing timer {time}")

        return self.clock.register_timer(timestamp, defer_to_mailbox)


class KeyedOperatorHarness(_Output):
    """One subtask of a keyed operator (see :func:`streamproof.testing.for_keyed_process_function`
    and :func:`streamproof.testing.for_window`)."""

    inputs = 1  # input channels (a two-input operator has two, each with its own watermark)

    def __init__(self, build: Callable[[], Any], key: Any, uid: str, *, timestamp: Any = None,
                 max_parallelism: int = 128, parallelism: int = 1, subtask: int = 0,
                 interruptible_timers: bool | None = None, processing_time: int = 0,
                 callback_seconds: float | None = None):
        if not isinstance(max_parallelism, int) or not 0 < max_parallelism <= 32768:
            raise HarnessError(f"max_parallelism must be in [1, 32768], got {max_parallelism!r}")
        self._build, self._key = build, _key_selector(key)
        self._timestamp = timestamp_function(timestamp)
        self.uid, self.max_parallelism = uid, max_parallelism
        self._interruptible, self._callback_seconds = interruptible_timers, callback_seconds
        self._clock = ManualProcessingTimeService(start=processing_time)
        self._checkpoint_id = 0
        self._stop_at: int | None = None
        self._parts = 0  # parts of the current split firing that ran
        self.task: OperatorTask | None = None
        self._deploy(parallelism, subtask, [])

    # -- building ---------------------------------------------------------------------------
    def _deploy(self, parallelism: int, subtask: int, snapshots: list[HarnessSnapshot]) -> None:
        if not isinstance(parallelism, int) or not 0 < parallelism <= self.max_parallelism:
            raise HarnessError(f"parallelism must be in [1, max_parallelism={self.max_parallelism}], got {parallelism!r}")
        if not isinstance(subtask, int) or not 0 <= subtask < parallelism:
            raise HarnessError(f"subtask must be in [0, {parallelism - 1}], got {subtask!r}")
        function = self._build()
        if self._interruptible is not None:
            function.interruptible_timers = self._interruptible
        config = TaskConfig(interruptible_timers=True, callback_seconds=self._callback_seconds)
        kgr = compute_key_group_range_for_operator_index(self.max_parallelism, parallelism, subtask)
        self.parallelism, self.subtask = parallelism, subtask
        self.task = None
        task = OperatorTask(f"harness({self.uid})", subtask, parallelism, 0, self.max_parallelism, kgr, function,
                            self.inputs,
                            _MailboxClock(self._clock, self), ExternalSystem(), config, lambda *_: None)
        self.task = task
        task.watermark_processor.should_interrupt = self._should_interrupt
        from streamproof.impl.tasks.stream_task import TaskSnapshot

        task.restore([TaskSnapshot(s.subtask, s.key_group_range, s.state, {"pending": {}}) for s in snapshots], [])
        self.opened = False

    @property
    def operator(self):
        """The runtime's operator (:class:`streamproof.impl.operators.keyed_process_operator.KeyedProcessOperator`)."""
        return self.task.operator

    @property
    def log(self) -> list:
        return self.task.output_log

    @property
    def key_group_range(self) -> KeyGroupRange:
        return self.task.key_group_range

    def open(self) -> "KeyedOperatorHarness":
        """Opens the operator (its ``open()``; restored timers come back). Every other call opens
        it first if the test did not."""
        if not self.opened:
            self.opened = True
            self.task.open()
            self._settle()
        return self

    # -- input ------------------------------------------------------------------------------
    def _key_of(self, value: Any) -> Any:
        try:
            key = self._key(value)
        except Exception as e:  # noqa: BLE001 - the user's key selector: one line
            raise HarnessError(f"the key selector raised {type(e).__name__}: {e} on {value!r}") from None
        if isinstance(key, bool) or not isinstance(key, (str, int)):
            try:
                key = CompositeKey.of(key)
            except Exception as e:  # noqa: BLE001
                raise HarnessError(f"the key selector returned {key!r} for {value!r}, which cannot be a key: {e}") from None
        key_group = assign_to_key_group(key, self.max_parallelism)
        if not self.key_group_range.contains(key_group):
            owner = compute_operator_index_for_key_group(self.max_parallelism, self.parallelism, key_group)
            raise HarnessError(f"key {getattr(key, 'value', key)!r} is in key group {key_group}, which subtask "
                               f"{owner} of {self.parallelism} owns, not this subtask {self.subtask} "
                               f"(key groups {self.key_group_range.start_key_group}-{self.key_group_range.end_key_group})")
        return key

    def process_element(self, value: Any, timestamp: int | None = None) -> "KeyedOperatorHarness":
        """One record; ``timestamp``: its event time (default: the harness's ``timestamp``
        function of the record, else none)."""
        self.open()
        self._check_running()
        self._check_input_may_run("a record")
        record = StreamRecord(self._key_of(value), value, self._event_time(value, timestamp))
        self.task._process_record(record)
        self._settle()
        return self

    def process_watermark(self, timestamp: int, *, stop_after: int | None = None) -> "KeyedOperatorHarness":
        """A watermark (on every input): fires the event-time timers at or below it, then forwards
        it. With ``stop_after=k`` (an operator with interruptible timers, FLIP-443) the firing stops
        after ``k`` timers as if mail had arrived; :attr:`firing_interrupted` is then True and the
        rest fires with :meth:`continue_firing` (or when the input ends)."""
        return self._watermark(range(self.inputs), timestamp, stop_after)

    def _watermark(self, channels, timestamp: int, stop_after: int | None) -> "KeyedOperatorHarness":
        self.open()
        self._check_running()
        if isinstance(timestamp, bool) or not isinstance(timestamp, int):
            raise HarnessError(f"a watermark is an int (milliseconds), got {timestamp!r}")
        self._check_input_may_run("a watermark")
        self._stop_after(stop_after)
        try:
            for channel in channels:  # the operator's watermark: the minimum over its inputs'
                combined = self.task.valve.input_watermark(channel, timestamp)
                if combined is not None:
                    self.task._process_watermark(combined)
        finally:
            self._stop_at = None
        self._parts = 1
        self._settle()
        return self

    def _check_input_may_run(self, what: str) -> None:
        """Flink's mailbox runs the continuation of a firing interrupted in the input step before
        it takes input again (the continuation is in the batch of mail that runs next): input can
        run between two parts of a split firing only from the second part on."""
        if self.firing_interrupted and self._parts < 2:
            raise HarnessError(f"{what} cannot run between the first and second parts of a split firing: Flink's "
                               "mailbox runs the continuation before it takes input again; call "
                               "continue_firing(stop_after=k) first")

    def _stop_after(self, stop_after: int | None) -> None:
        if stop_after is None:
            return
        if not self.task.interruptible:
            raise HarnessError(f"stop_after={stop_after}: {self.operator.function_name} does not use interruptible "
                               "timers: build the harness with interruptible_timers=True")
        if isinstance(stop_after, bool) or not isinstance(stop_after, int) or stop_after < 1:
            raise HarnessError(f"stop_after must be a positive number of timers, got {stop_after!r}")
        self._stop_at = self.operator.timers_fired + stop_after

    def _should_interrupt(self) -> bool:
        return self._stop_at is not None and self.operator.timers_fired >= self._stop_at

    @property
    def firing_interrupted(self) -> bool:
        """A timer firing stopped by ``stop_after`` waits for its continuation."""
        return self.task.firing_interrupted()

    def continue_firing(self, *, stop_after: int | None = None) -> "KeyedOperatorHarness":
        """Runs the continuation of an interrupted firing (FLIP-443's deferrable mail): the rest of
        the due timers, up to ``stop_after`` more, then the watermark goes downstream."""
        if not self.firing_interrupted:
            raise HarnessError("continue_firing(): no timer firing is interrupted")
        self._stop_after(stop_after)
        try:
            self._run_mail(deferrable=True, until=lambda: not self.firing_interrupted or self._should_interrupt())
        finally:
            self._stop_at = None
        self._parts += 1
        self._settle()
        return self

    def set_processing_time(self, time: int) -> "KeyedOperatorHarness":
        """Moves the processing-time clock to ``time`` (never back): due processing-time timers
        fire, as mail."""
        self.open()
        if isinstance(time, bool) or not isinstance(time, int):
            raise HarnessError(f"a processing time is an int (milliseconds), got {time!r}")
        if time < self._clock.get_current_processing_time():
            raise HarnessError(f"processing time cannot go back from {self._clock.get_current_processing_time()} to {time}")
        self._clock.advance_to(time)
        self._settle()
        return self

    def get_processing_time(self) -> int:
        return self._clock.get_current_processing_time()

    def end_input(self) -> "KeyedOperatorHarness":
        """The end of a bounded input, as a task ends it with drain: ``MAX_WATERMARK`` (every
        event-time timer fires; an interrupted firing completes first), the function's
        ``end_input``, processing-time timers by their termination actions (FLIP-269), ``finish()``."""
        self.open()
        self._check_running()
        for channel in range(self.inputs):
            combined = self.task.valve.input_watermark(channel, MAX_WATERMARK)
            if combined is not None:
                self.task._process_watermark(combined)
        self._run_mail(deferrable=True, until=lambda: not self.firing_interrupted)
        self.task._end_input()
        self._settle()
        return self

    def close(self) -> None:
        """Closes the operator (its ``close()``)."""
        if self.opened and not self.operator.closed:
            self.operator.close()

    def _check_running(self) -> None:
        if self.task.state != OperatorTask.RUNNING:
            raise HarnessError("the input has ended (end_input() was called): restore() a snapshot to go on")

    # -- mail -------------------------------------------------------------------------------
    def _run_mail(self, deferrable: bool, until: Callable[[], bool] = lambda: False) -> int:
        """Runs mail (``deferrable``: continuations too) until ``until()`` or none is left; returns
        how many ran."""
        executor = self.task.executor
        for n in range(MAIL_LIMIT):
            if until():
                return n
            ran = executor.try_yield() if deferrable else executor.try_yield_ignoring_deferrable()
            if not ran:
                return n
        raise HarnessError(f"the operator kept its mailbox busy: more than {MAIL_LIMIT} mails in one harness call")

    def _settle(self) -> None:
        """Runs the mail left by the last call: all of it, except an interrupted firing's
        continuation, which waits for the test; and, as a task's clock does, fires the physical
        processing-time timers due by now (one a fired timer or a restore registered at or before
        the current time fires at once, not at the next clock step)."""
        for _ in range(MAIL_LIMIT):
            ran = self._run_mail(deferrable=False)
            if not self.firing_interrupted:
                ran += self._run_mail(deferrable=True)
            self._clock.advance_to(self._clock.get_current_processing_time())
            if not ran and not self.task.mailbox.has_mail() or self.firing_interrupted and not self._has_other_mail():
                return
        raise HarnessError(f"the operator kept its mailbox busy: more than {MAIL_LIMIT} rounds of mail in one harness call")

    def _has_other_mail(self) -> bool:
        """Mail besides an interrupted firing's continuation."""
        return any(not mail.options.is_deferrable for mail in self.task.mailbox.pending_mails())

    # -- checkpoints ------------------------------------------------------------------------
    def snapshot(self, checkpoint_id: int | None = None) -> HarnessSnapshot:
        """The operator's state now (keyed state and timers, copy-on-write as a checkpoint takes
        them; also between the parts of an interrupted firing)."""
        self.open()
        self._checkpoint_id = checkpoint_id if checkpoint_id is not None else self._checkpoint_id + 1
        state = self.operator.snapshot_state(self.task.config.snapshot_format)
        return HarnessSnapshot(self.uid, self._checkpoint_id, self.max_parallelism, self.parallelism, self.subtask,
                               self.key_group_range, state)

    def restore(self, snapshots, *, parallelism: int | None = None, subtask: int = 0) -> "KeyedOperatorHarness":
        """Replaces the operator by a new instance restored from ``snapshots`` (one or a list: the
        subtasks of an earlier parallelism, merged by key group) as subtask ``subtask`` of
        ``parallelism`` (default: the snapshots' parallelism). The output starts empty; the clock
        goes on; the watermark is not restored (Flink does not checkpoint it)."""
        snapshots = [snapshots] if isinstance(snapshots, HarnessSnapshot) else list(snapshots) \
            if isinstance(snapshots, (list, tuple)) else [snapshots]
        for snapshot in snapshots:
            check_snapshot(snapshot, self.uid, self.max_parallelism)
        if parallelism is None:
            parallelism = snapshots[0].parallelism if snapshots else self.parallelism
        self.close()
        self._deploy(parallelism, subtask, snapshots)
        return self.open()

    initialize_state = restore

    # -- inspection -------------------------------------------------------------------------
    def _services(self):
        return self.operator.time_service_manager.services.values()

    def pending_timers(self) -> list[Timer]:
        """The timers not fired yet, sorted by time (event and processing time, every key)."""
        timers = [Timer(t[0], getattr(t[1], "value", t[1]), domain)
                  for service in self._services()
                  for domain, queue in (("event", service.event_time_timers_queue),
                                        ("processing", service.processing_time_timers_queue))
                  for t in queue]
        return sorted(timers, key=lambda t: (t.timestamp, t.domain, repr(t.key)))

    def num_event_time_timers(self) -> int:
        return self.operator.time_service_manager.num_event_time_timers()

    def num_processing_time_timers(self) -> int:
        return self.operator.time_service_manager.num_processing_time_timers()

    def num_keyed_state_entries(self) -> int:
        """Keyed state entries (one per state and key), as Flink's ``numKeyedStateEntries()``."""
        return sum(len(entries) for tables in self.operator.state_backend._tables.values()
                   for entries in tables.values())

    def state(self, key: Any) -> dict:
        """The keyed state of ``key``: state name -> value (a copy)."""
        wrapped = key if isinstance(key, (str, int)) and not isinstance(key, bool) else CompositeKey.of(key)
        key_group = assign_to_key_group(wrapped, self.max_parallelism)
        tables = self.operator.state_backend._tables.get(key_group, {})
        return {name: copy.deepcopy(entries[wrapped]) for name, entries in tables.items() if wrapped in entries}

    def current_watermark(self) -> int:
        return self.task.valve.last_output

    def __repr__(self) -> str:
        return (f"<harness of {self.uid}: subtask {self.subtask} of {self.parallelism}, "
                f"{len(self.extract_output_values())} outputs, {len(self.pending_timers())} timers pending>")


def check_snapshot(snapshot: Any, uid: str, max_parallelism: int) -> None:
    """A snapshot this harness can restore, or one line saying why not."""
    if not isinstance(snapshot, HarnessSnapshot):
        raise HarnessError(f"restore() takes what snapshot() returned, got {type(snapshot).__name__}")
    if snapshot.uid != uid:
        raise HarnessError(f"a snapshot of operator {snapshot.uid!r} cannot restore operator {uid!r} (Flink maps state "
                           "by operator uid: give both harnesses the same uid= to restore a new version)")
    if snapshot.max_parallelism != max_parallelism:
        raise HarnessError(f"the snapshot's max parallelism {snapshot.max_parallelism} differs from {max_parallelism}: "
                           "Flink cannot restore keyed state with another max parallelism")


class ProcessFunctionHarness(_Output):
    """One subtask of a non-keyed ``ProcessFunction`` (see
    :func:`streamproof.testing.for_process_function`): no keyed state and no timers (PyFlink
    refuses both on a non-keyed stream); the function's own attributes are not checkpointed, so a
    restore starts from a fresh copy of the function, as Flink's does."""

    def __init__(self, build: Callable[[], Any], uid: str, *, timestamp: Any = None, parallelism: int = 1,
                 subtask: int = 0, processing_time: int = 0):
        self._build, self.uid = build, uid
        self._timestamp = timestamp_function(timestamp)
        self._now = processing_time
        self._checkpoint_id = 0
        self._deploy(parallelism, subtask)

    def _deploy(self, parallelism: int, subtask: int) -> None:
        from streamproof.flink.job_functions import NonKeyed

        if not isinstance(parallelism, int) or parallelism < 1 or not isinstance(subtask, int) \
                or not 0 <= subtask < parallelism:
            raise HarnessError(f"subtask {subtask!r} of parallelism {parallelism!r} does not exist")
        self.parallelism, self.subtask = parallelism, subtask
        self.function = NonKeyed("process", self._build(), self.uid)
        self.log: list = []
        self.watermark = MIN_WATERMARK
        self.ended = self.opened = False

    def open(self) -> "ProcessFunctionHarness":
        if not self.opened:
            self.opened = True
            self.function.open(self.subtask, self.parallelism)
        return self

    def process_element(self, value: Any, timestamp: int | None = None) -> "ProcessFunctionHarness":
        self.open()
        if self.ended:
            raise HarnessError("the input has ended (end_input() was called): restore() a snapshot to go on")
        timestamp = self._event_time(value, timestamp)
        for tag, result in self.function.process(value, timestamp, self.watermark, self._now):
            self.log.append(("record", result, timestamp, "element") if tag is None else ("side", result, timestamp, tag))
        return self

    def process_watermark(self, timestamp: int) -> "ProcessFunctionHarness":
        self.open()
        if isinstance(timestamp, bool) or not isinstance(timestamp, int):
            raise HarnessError(f"a watermark is an int (milliseconds), got {timestamp!r}")
        if timestamp > self.watermark:
            self.watermark = timestamp
            self.log.append(("watermark", timestamp))
        return self

    def set_processing_time(self, time: int) -> "ProcessFunctionHarness":
        if isinstance(time, bool) or not isinstance(time, int) or time < self._now:
            raise HarnessError(f"processing time cannot go from {self._now} to {time!r}")
        self._now = time
        return self

    def get_processing_time(self) -> int:
        return self._now

    def end_input(self) -> "ProcessFunctionHarness":
        self.process_watermark(MAX_WATERMARK)
        self.ended = True
        return self

    def close(self) -> None:
        if self.opened:
            self.function.close()

    def snapshot(self, checkpoint_id: int | None = None) -> HarnessSnapshot:
        self._checkpoint_id = checkpoint_id if checkpoint_id is not None else self._checkpoint_id + 1
        return HarnessSnapshot(self.uid, self._checkpoint_id, 0, self.parallelism, self.subtask, None, None)

    def restore(self, snapshots, *, parallelism: int | None = None, subtask: int = 0) -> "ProcessFunctionHarness":
        snapshots = list(snapshots) if isinstance(snapshots, (list, tuple)) else [snapshots]
        for snapshot in snapshots:
            check_snapshot(snapshot, self.uid, 0)
        self.close()
        self._deploy(parallelism or (snapshots[0].parallelism if snapshots else self.parallelism), subtask)
        return self.open()

    initialize_state = restore

    def pending_timers(self) -> list[Timer]:
        return []

    def num_event_time_timers(self) -> int:
        return 0

    def num_processing_time_timers(self) -> int:
        return 0

    def num_keyed_state_entries(self) -> int:
        return 0


class KeyedCoOperatorHarness(KeyedOperatorHarness):
    """One subtask of a keyed two-input operator (see
    :func:`streamproof.testing.for_keyed_co_process_function`): each input its own key selector
    and watermark; one keyed state and one timer service for both, as Flink's
    ``KeyedTwoInputStreamOperatorTestHarness``. ``process_element``/``process_watermark`` are not
    ambiguous only for watermarks (both inputs); records say their input."""

    inputs = 2

    def __init__(self, build: Callable[[], Any], key1: Any, key2: Any, uid: str, **options: Any):
        self._key2 = _key_selector(key2)
        super().__init__(build, key1, uid, **options)

    def process_element(self, value: Any, timestamp: int | None = None):
        raise HarnessError("a two-input harness takes process_element1(value) or process_element2(value)")

    def process_element1(self, value: Any, timestamp: int | None = None) -> "KeyedCoOperatorHarness":
        """A record of the first input (``process_element1``/``map1``/``flat_map1``)."""
        return KeyedOperatorHarness.process_element(self, value, timestamp)

    def process_element2(self, value: Any, timestamp: int | None = None) -> "KeyedCoOperatorHarness":
        """A record of the second input, keyed by the second key selector."""
        from streamproof.impl.tasks.stream_elements import SecondInput

        self.open()
        self._check_running()
        self._check_input_may_run("a record")
        first, self._key = self._key, self._key2
        try:
            key = self._key_of(value)
        finally:
            self._key = first
        self.task._process_record(StreamRecord(key, SecondInput(value), self._event_time(value, timestamp)))
        self._settle()
        return self

    def process_watermark1(self, timestamp: int, *, stop_after: int | None = None) -> "KeyedCoOperatorHarness":
        """A watermark of the first input: the operator's watermark moves to the minimum of both."""
        return self._watermark([0], timestamp, stop_after)

    def process_watermark2(self, timestamp: int, *, stop_after: int | None = None) -> "KeyedCoOperatorHarness":
        """A watermark of the second input."""
        return self._watermark([1], timestamp, stop_after)

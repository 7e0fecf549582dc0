"""Ports of Apache Flink's operator-chain tests to the job-graph runtime (impl/tasks/operator_chain.py).

Each test restates a case of Flink's ``OneInputStreamTaskTest``,
``UnalignedCheckpointsInterruptibleTimersTest``, ``StreamOperatorWrapperTest`` or
``RegularOperatorChain`` (no Flink code is copied) and says what differs. A chain is built as a
small :class:`JobGraph`, deployed by :class:`GraphJob`, and its :class:`ChainTask` is driven
directly (``receive`` + ``run_step``, as ``tests/test_task.py`` drives an ``OperatorTask``), or a
whole job runs under the simulator. Each chained operator's ``log`` is what it emitted, in order.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from streamproof.impl.graph.job_graph import Edge, JobGraph, OperatorNode
from streamproof.impl.graph.job_runtime import GraphJob
from streamproof.impl.graph.job import GraphJobSpec
from streamproof.impl.operators.keyed_process_operator import KeyedProcessFunction, MapStateDescriptor, StreamRecord
from streamproof.impl.graph.sim import Fault, run_schedule, simulate
from streamproof.impl.timers.snapshot_format import decode_snapshot
from streamproof.impl.tasks.stream_task import CheckpointBarrier, EndOfData, TaskConfig, Watermark
from streamproof.impl.timers.internal_timer_service import MAX_WATERMARK, MIN_WATERMARK
from streamproof.properties import registry
from streamproof.properties.job.check import graph_spec
from streamproof.properties.job.functions import FUNCTIONS, STATELESS_FUNCTIONS
from streamproof.properties.job.steps import faults_of, job_params
from streamproof.properties.scenario import load_scenario

SCENARIOS = Path(__file__).resolve().parent.parent / "examples" / "job" / "graph" / "flink-ports"


# -- helpers -------------------------------------------------------------------------------------
def chain_job(operators, edges, functions, *, sources=1, unaligned=False, mode="corrected",
              source_elements=None, channel_capacity=4):
    """A job ``source[sources] --keyBy--> operators... -> sink``: ``operators`` are
    ``(name, kind, function)`` at parallelism 1, ``edges`` the edges between them (forward unless
    given), and the last operator feeds a chained sink."""
    nodes = [OperatorNode("source", "source", sources)]
    nodes += [OperatorNode(name, kind, 1, function) for name, kind, function in operators]
    nodes.append(OperatorNode("sink", "sink", 1))
    head = operators[0][0]
    all_edges = [Edge("source", head, "keyed")]
    all_edges += [Edge(*edge) for edge in edges]
    all_edges.append(Edge(operators[-1][0], "sink"))
    spec = GraphJobSpec(JobGraph(nodes, all_edges), sources=source_elements or [[] for _ in range(sources)],
                        functions={**FUNCTIONS, **STATELESS_FUNCTIONS, **functions},
                        config=TaskConfig(interruptible_timers=True, unaligned_checkpoints=unaligned),
                        async_mail_rate=0.0, watermark_mode=mode, channel_capacity=channel_capacity)
    return GraphJob(spec)


def run_until_idle(task, limit=10_000):
    for _ in range(limit):
        if not task.is_runnable():
            return
        task.run_step()
    raise AssertionError("task did not become idle")


def view(log):
    """An operator's log as values, ("wm", ts) and "end"."""
    return [e[1] if e[0] == "record" else ("wm", e[1]) if e[0] == "watermark" else "end" for e in log]


def logs(task):
    return {op.name: view(op.log) for op in task.operators}


class PassThrough(KeyedProcessFunction):
    """Forwards every record (Flink's ``StreamMap`` with an identity function); no timers."""

    def process_element(self, value, ctx, out):
        out.collect(value)


class InterruptiblePassThrough(PassThrough):
    interruptible_timers = True


class TimersAtWindowEnds(KeyedProcessFunction):
    """Flink's ``MultipleTimersAtTheSameTimestamp``: every record registers its key's timers at
    each window end; each firing emits ``fired-<key>`` and puts a mail that emits ``mail-<key>``.
    (Flink's operator registers timers for keys of its own choosing; a keyed function registers
    them for the record's key, so the test sends one record per key.)"""

    interruptible_timers = True

    def __init__(self, window_ends=(1000, 2000), prefix=""):
        self.window_ends, self.prefix = window_ends, prefix

    def open(self, ctx):
        self.executor = ctx.get_mailbox_executor()

    def process_element(self, value, ctx, out):
        for end in self.window_ends:
            ctx.timer_service().register_event_time_timer(end)

    def on_timer(self, timestamp, ctx, out):
        key = ctx.get_current_key()
        out.collect(f"{self.prefix}fired-{key}")
        self.executor.execute(lambda: out.collect(f"{self.prefix}mail-{key}"), f"mail {key}")


class ChainedTimers(TimersAtWindowEnds):
    """A second watermark-holding operator: forwards what it receives and, for each ``fired-*``
    record, registers a timer of that key at the record's timestamp (the upstream window end)."""

    def __init__(self):
        super().__init__(window_ends=(), prefix="B-")

    def process_element(self, value, ctx, out):
        out.collect(value)
        if value.startswith("fired-"):
            ctx.timer_service().register_event_time_timer(ctx.timestamp())


def register(task, keys=("key-0", "key-1")):
    for key in keys:
        task.receive(0, StreamRecord(key, "register timers", 0))
    run_until_idle(task)


# -- OneInputStreamTaskTest ------------------------------------------------------------------------
def test_watermark_forwarding_through_a_chain_is_the_minimum_over_input_channels():
    """Ports OneInputStreamTaskTest#testWatermarkAndStreamStatusForwarding (the watermark part).

    A watermark leaves the task only once every input channel sent one; then it is the minimum
    over the channels, and records are not held back by watermarks. Differs: Flink's task has
    two gates of two channels and a single StreamMap; here one keyed edge from four source
    subtasks feeds the chain A -> B -> M (two keyed pass-through operators and a map), and every
    operator of the chain must see exactly the same watermark sequence. Idleness (StreamStatus)
    is not ported."""
    job = chain_job([("A", "keyed_process", "pass"), ("B", "keyed_process", "pass"), ("M", "map", "identity")],
                    [("A", "B"), ("B", "M")], {"pass": PassThrough}, sources=4)
    task = job.tasks[0]
    assert [op.name for op in task.operators] == ["A", "B", "M", "sink"]

    for channel in (0, 1, 2):
        task.receive(channel, Watermark(0))
    run_until_idle(task)
    assert logs(task) == {"A": [], "B": [], "M": [], "sink": []}

    task.receive(3, Watermark(0))
    run_until_idle(task)
    expected = [("wm", 0)]
    assert all(logs(task)[op] == expected for op in "ABM")

    task.receive(0, StreamRecord("k", "Hello", 0))
    task.receive(0, StreamRecord("k", "Ciao", 0))
    for channel, ts in ((0, 4), (1, 3), (2, 3), (3, 2)):
        task.receive(channel, Watermark(ts))
    run_until_idle(task)
    expected += ["Hello", "Ciao", ("wm", 2)]  # the minimum, after both records
    assert all(logs(task)[op] == expected for op in "ABM")

    task.receive(3, Watermark(4))
    run_until_idle(task)
    expected.append(("wm", 3))
    assert all(logs(task)[op] == expected for op in "ABM")

    task.receive(1, Watermark(4))
    task.receive(2, Watermark(4))
    run_until_idle(task)
    expected.append(("wm", 4))
    assert all(logs(task)[op] == expected for op in "ABM")
    assert task.valve.last_output == 4


def _gauges(task):
    head, chained = task.operators[0], task.operators[1]
    return (task.valve.last_output, head.watermark_processor.max_input_watermark, head.last_watermark,
            chained.watermark_processor.max_input_watermark, chained.last_watermark)


@pytest.mark.parametrize("function", [PassThrough, InterruptiblePassThrough])
def test_watermark_metrics_of_head_and_chained_operator(function):
    """Ports OneInputStreamTaskTest#testWatermarkMetrics.

    Five gauges -- the task's input watermark, the head's input and output watermarks, the
    chained operator's input and output watermarks -- start at Long.MIN_VALUE and follow each
    watermark. Differs: Flink's test operators double the watermark they emit (so that input
    and output gauges differ: 1 -> 2 -> 4); a KeyedProcessFunction cannot rewrite watermarks, so
    here every gauge equals the input; the next test shows a chained operator's input gauge
    following its upstream's output rather than the task's input. Run with and without the
    operators opting in to interruptible timers (FLIP-443)."""
    job = chain_job([("head", "keyed_process", "f"), ("chained", "keyed_process", "f")], [("head", "chained")],
                    {"f": function})
    task = job.tasks[0]
    assert _gauges(task) == (MIN_WATERMARK,) * 5
    task.receive(0, Watermark(1))
    run_until_idle(task)
    assert _gauges(task) == (1,) * 5
    task.receive(0, Watermark(2))
    run_until_idle(task)
    assert _gauges(task) == (2,) * 5
    assert view(task.operators[1].log) == [("wm", 1), ("wm", 2)]


def test_chained_operator_input_watermark_is_its_upstream_output_watermark():
    """Ports the point of OneInputStreamTaskTest#testWatermarkMetrics: a chained operator's
    input watermark is what the operator before it emitted, not the task's input watermark.

    Differs: where Flink's head doubles the watermark, here the head holds it back -- its
    interruptible timer firing (FLIP-443, Flink 2.3 watermark processor) is interrupted by the
    mail its first timer put, so after one mailbox step the task and the head have seen 1000
    while the head emitted nothing and the chained operator has seen nothing."""
    job = chain_job([("head", "keyed_process", "timers"), ("chained", "keyed_process", "pass")],
                    [("head", "chained")], {"timers": lambda: TimersAtWindowEnds((1000,)), "pass": PassThrough},
                    mode="flink-2.3")
    task = job.tasks[0]
    register(task)
    task.receive(0, Watermark(1000))
    task.run_step()
    assert task.operators[0].interrupted
    assert _gauges(task) == (1000, 1000, MIN_WATERMARK, MIN_WATERMARK, MIN_WATERMARK)
    assert view(task.operators[1].log) == ["fired-key-0"]
    run_until_idle(task)
    assert _gauges(task) == (1000,) * 5
    assert view(task.operators[1].log) == ["fired-key-0", "mail-key-0", "fired-key-1", "mail-key-1", ("wm", 1000)]


class Windows(KeyedProcessFunction):
    """Tumbling event-time windows of ``size``: the sum per key and window, emitted by the
    window's timer as ``(key, end, sum)`` with timestamp ``end``."""

    def __init__(self, size):
        self.size = size

    def open(self, ctx):
        self.sums = ctx.get_map_state(MapStateDescriptor("sums"))

    def process_element(self, value, ctx, out):
        end = (ctx.timestamp() // self.size + 1) * self.size - 1
        self.sums.put(end, self.sums.get(end, 0) + (value[-1] if isinstance(value, tuple) else value))
        ctx.timer_service().register_event_time_timer(end)

    def on_timer(self, timestamp, ctx, out):
        out.collect((ctx.get_current_key(), timestamp, self.sums.get(timestamp)))
        self.sums.remove(timestamp)


def test_chained_operators_receive_records_and_watermarks_in_order():
    """Ports the active phase of OneInputStreamTaskTest#testWatermarksNotForwardedWithinChainWhenIdle:
    in a chain head -> middle -> tail the tail sees, in order, what the middle emitted, records
    and watermarks interleaved as they were produced.

    Differs: Flink's middle operator generates a watermark per record; here the middle operators
    are event-time windows (AbstractStreamOperator#processWatermark: fire the timers, then pass
    the watermark on), so a window's result reaches the next operator before the watermark that
    closed it, and the next operator's timers fire on that watermark. Idleness is not ported."""
    job = chain_job([("w10", "keyed_process", "w10"), ("w100", "keyed_process", "w100"), ("M", "map", "identity")],
                    [("w10", "w100"), ("w100", "M")], {"w10": lambda: Windows(10), "w100": lambda: Windows(100)})
    task = job.tasks[0]
    for value, ts in ((1, 1), (5, 5), (12, 12)):
        task.receive(0, StreamRecord("a", value, ts))
    task.receive(0, Watermark(9))
    task.receive(0, StreamRecord("a", 30, 30))
    task.receive(0, Watermark(99))
    run_until_idle(task)
    assert logs(task)["w10"] == [("a", 9, 6), ("wm", 9), ("a", 19, 12), ("a", 39, 30), ("wm", 99)]
    assert logs(task)["w100"] == [("wm", 9), ("a", 99, 48), ("wm", 99)]
    assert logs(task)["M"] == logs(task)["w100"]


def test_checkpoint_barriers_are_aligned_then_forwarded_once_from_the_chain():
    """Ports OneInputStreamTaskTest#testCheckpointBarriers (aligned).

    A barrier blocks its channel; records of channels without a barrier go on through the whole
    chain; the barrier leaves the chain (on its network output) only once all channels sent it,
    after the snapshot, which holds the state of every chained operator. Differs: Flink has two
    gates of two channels; here four source subtasks, and the chain A -> M feeds a second chain
    over a keyed edge, whose input channel shows what left."""
    nodes = [OperatorNode("source", "source", 4), OperatorNode("A", "keyed_process", 1, "pass"),
             OperatorNode("M", "map", 1, "identity"), OperatorNode("B", "keyed_process", 1, "pass"),
             OperatorNode("sink", "sink", 1)]
    edges = [Edge("source", "A", "keyed"), Edge("A", "M"), Edge("M", "B", "keyed"), Edge("B", "sink")]
    job = GraphJob(GraphJobSpec(JobGraph(nodes, edges), [[] for _ in range(4)],
                                {**STATELESS_FUNCTIONS, "pass": PassThrough}, async_mail_rate=0.0))
    first, second = job.task_of[("A -> M", 0)], job.task_of[("B -> sink", 0)]
    acks = []
    first.acknowledge = lambda checkpoint_id, snapshot: acks.append((checkpoint_id, snapshot))
    downstream = second.inputs[second.channel_index[("M", 0)]]

    first.receive(0, CheckpointBarrier(1))
    first.receive(0, StreamRecord("k", "blocked-0", 0))
    first.receive(3, StreamRecord("k", "Hello-3", 0))
    first.receive(3, StreamRecord("k", "Ciao-3", 0))
    run_until_idle(first)
    assert [e.value for e in downstream] == ["Hello-3", "Ciao-3"]
    assert acks == []

    for channel in (1, 2, 3):
        first.receive(channel, CheckpointBarrier(1))
    run_until_idle(first)
    assert [e.value if isinstance(e, StreamRecord) else e for e in downstream] == \
        ["Hello-3", "Ciao-3", CheckpointBarrier(1), "blocked-0"]
    assert [c for c, _ in acks] == [1]
    assert set(acks[0][1].sink) == {"A", "M"}


def test_snapshotting_and_restoring_every_chained_operator():
    """Ports OneInputStreamTaskTest#testSnapshottingAndRestoring: a checkpoint of a chain holds
    a snapshot of every chained operator, and a restore gives each one its own state back.

    Differs: Flink chains eleven test operators with operator state and counts restore calls;
    here two keyed window operators and a map, with open windows (keyed state and timers) in both
    window operators at the checkpoint; after a failover each window is emitted exactly once."""
    source = [StreamRecord("a", 1, 1), StreamRecord("b", 2, 2), Watermark(9), StreamRecord("a", 3, 11)]
    job = chain_job([("w10", "keyed_process", "w10"), ("w100", "keyed_process", "w100"), ("M", "map", "identity")],
                    [("w10", "w100"), ("w100", "M")], {"w10": lambda: Windows(10), "w100": lambda: Windows(100)},
                    source_elements=[source], channel_capacity=100)
    task = job.tasks[0]
    while job.sources[0].offset < len(source):
        job.sources[0].emit_next()
    run_until_idle(task)
    before = {op.name: op.operator.pending_timers() for op in task.operators[:2]}
    assert before == {"w10": 1, "w100": 2}  # (a, 19) in w10; (a, 99) and (b, 99) in w100
    job.coordinator.trigger(1)
    run_until_idle(task)
    assert [c.checkpoint_id for c in job.coordinator.completed] == [1]
    assert set(job.coordinator.completed[0].task_snapshots[0].sink) == {"w10", "w100", "M", "sink"}

    job.failover(0, "test")
    restored = job.tasks[0]
    assert restored is not task and restored.attempt == 1
    assert {op.name: op.operator.pending_timers() for op in restored.operators[:2]} == before
    run_schedule(job, random.Random(0), (), 10_000)
    assert sorted(job.external.output()) == [("a", 99, 4), ("b", 99, 2)]


# -- UnalignedCheckpointsInterruptibleTimersTest ---------------------------------------------------
FLINK_SINGLE_HOLDER_OUTPUT = [
    "fired-key-0", "mail-key-0", "fired-key-1", "mail-key-1", ("wm", 1000),
    "fired-key-0", "mail-key-0", "fired-key-1", "mail-key-1", ("wm", 2000),
]


def _single_holder_chain(mode):
    job = chain_job([("first", "keyed_process", "timers"), ("M", "map", "identity")], [("first", "M")],
                    {"timers": TimersAtWindowEnds}, unaligned=True, mode=mode)
    task = job.tasks[0]
    register(task)
    for watermark in (1000, 2000):  # Flink's harness processes each element fully (autoProcess)
        task.receive(0, Watermark(watermark))
        run_until_idle(task)
    return task


def test_single_watermark_holding_operator_in_the_chain():
    """Ports UnalignedCheckpointsInterruptibleTimersTest#testSingleWatermarkHoldingOperatorInTheChain
    with Flink 2.3's MailboxWatermarkProcessor (watermark_mode "flink-2.3").

    With unaligned checkpoints and interruptible timers, the firing of the timers at a window
    end stops after each timer (its mail is waiting), the mail runs, and the watermark leaves
    only after every timer at or below it fired and their mail ran. Differs: the chain has a
    map after the holding operator (Flink's test chain is that operator alone); the map's output
    must be exactly the same."""
    task = _single_holder_chain("flink-2.3")
    assert logs(task)["first"] == FLINK_SINGLE_HOLDER_OUTPUT
    assert logs(task)["M"] == FLINK_SINGLE_HOLDER_OUTPUT
    assert task.operators[0].watermark_processor.interruptions >= 2


def test_single_watermark_holding_operator_in_the_chain_corrected_mode():
    """The same case (UnalignedCheckpointsInterruptibleTimersTest#testSingleWatermarkHoldingOperatorInTheChain)
    in the runtime's default watermark mode, whose processor also emits the watermark the timers
    reached when an advance is interrupted. Those intermediate watermarks (below the input
    watermark, here 999 and 1999) are the intended difference and are left out; everything else
    must be in Flink's order: no output of a window end's firing leaves after its watermark."""
    task = _single_holder_chain("corrected")
    inputs = {1000, 2000}
    for name in ("first", "M"):
        assert [e for e in logs(task)[name] if not (isinstance(e, tuple) and e[1] not in inputs)] == \
            FLINK_SINGLE_HOLDER_OUTPUT


@pytest.mark.parametrize("mode", ["flink-2.3", "corrected"])
def test_watermark_progress_with_no_timers_in_the_chain(mode):
    """Ports UnalignedCheckpointsInterruptibleTimersTest#testWatermarkProgressWithNoTimers.

    Operators that opted in to interruptible timers but have no timers let every watermark
    through, even with mail waiting in the mailbox (nothing to interrupt). Differs: a chain of
    two such operators and a map; Flink steps until two watermarks were seen, here the tail's
    exact output is checked."""
    job = chain_job([("first", "keyed_process", "timers"), ("second", "keyed_process", "timers"),
                     ("M", "map", "identity")], [("first", "second"), ("second", "M")],
                    {"timers": lambda: TimersAtWindowEnds(())}, unaligned=True, mode=mode)
    task = job.tasks[0]
    task.receive(0, StreamRecord("key-0", "impulse", 0))
    run_until_idle(task)
    task.executor.execute(lambda: None, "a foreign mail")
    task.receive(0, Watermark(1000))
    task.receive(0, Watermark(2000))
    run_until_idle(task)
    assert logs(task)["M"] == [("wm", 1000), ("wm", 2000)]


def test_two_watermark_holding_operators_in_the_chain():
    """Extends UnalignedCheckpointsInterruptibleTimersTest#testSingleWatermarkHoldingOperatorInTheChain
    to a chain of two holding operators (Flink 2.3 watermark processor).

    The second operator's timers are registered by the first one's timer output; each operator
    has its own mailbox executor and watermark processor. The second operator receives the
    watermark only after the first one's firing completed, then fires its own timers, again
    stopping after each one for its mail, and passes the watermark on last. Every timer fires
    exactly once. Differs: Flink's test has one holding operator; the expected order is the one
    Flink's MailboxWatermarkProcessor and InternalTimerServiceImpl#tryAdvanceWatermark give
    (stop after a timer whenever mail is waiting)."""
    job = chain_job([("A", "keyed_process", "timers"), ("B", "keyed_process", "chained")], [("A", "B")],
                    {"timers": TimersAtWindowEnds, "chained": ChainedTimers}, unaligned=True, mode="flink-2.3")
    task = job.tasks[0]
    register(task)
    for watermark in (1000, 2000):
        task.receive(0, Watermark(watermark))
        run_until_idle(task)
    assert logs(task)["A"] == FLINK_SINGLE_HOLDER_OUTPUT
    per_window = ["fired-key-0", "mail-key-0", "fired-key-1", "mail-key-1",
                  "B-fired-key-0", "B-mail-key-0", "B-fired-key-1", "B-mail-key-1"]
    assert logs(task)["B"] == per_window + [("wm", 1000)] + per_window + [("wm", 2000)]
    assert task.operators[1].watermark_processor.interruptions >= 2


def test_unaligned_barrier_while_a_chained_operator_fires_timers():
    """Ports the FLIP-443 promise behind UnalignedCheckpointsInterruptibleTimersTest: a
    checkpoint barrier arriving while timers fire does not wait for the firing to complete.

    Here the timers firing are those of the chain's second operator. The unaligned barrier is
    handled as mail between two parts of the firing: the next mailbox step snapshots the chain
    and acknowledges the checkpoint while the second operator still has timers at the watermark
    to fire (they are in the snapshot). The checkpoint completes, a failover restores it, and in
    the end every timer's output is committed exactly once. Differs: Flink's test drives one
    task with a harness and checks the output order only; here the whole job runs (coordinator,
    two-phase-commit sink, failover). The barrier is a default mail, as Flink's
    CheckpointedInputGate puts "process priority event": it runs after the mail B's first timer
    queued and before the firing completes."""
    keys = ("key-0", "key-1", "key-2")
    source = [StreamRecord(k, "register timers", 0) for k in keys] + [Watermark(1000)]
    job = chain_job([("A", "keyed_process", "timers"), ("B", "keyed_process", "chained")], [("A", "B")],
                    {"timers": lambda: TimersAtWindowEnds((1000,)), "chained": ChainedTimers},
                    unaligned=True, mode="flink-2.3", source_elements=[source], channel_capacity=100)
    task = job.tasks[0]
    a, b = task.operators[0], task.operators[1]
    while job.sources[0].offset < len(source):
        job.sources[0].emit_next()
    for _ in range(100):
        if b.interrupted and "B-fired-key-0" in view(b.log):
            break
        task.run_step()
    assert b.interrupted and not a.interrupted
    assert view(b.log).count("B-fired-key-0") == 1 and "B-fired-key-2" not in view(b.log)

    job.coordinator.trigger(1)  # the source sends the barrier: mail in the chain's mailbox
    task.run_step()
    assert [c.checkpoint_id for c in job.coordinator.completed] == [1]
    assert b.interrupted and ("wm", 1000) not in view(b.log)  # completed without waiting for the timers
    snapshot = job.coordinator.completed[0].task_snapshots[0]
    pending = sorted(t.key for _, _, t, _ in decode_snapshot(snapshot.sink["B"].timers).entries())
    assert "key-2" in pending and "key-0" not in pending
    assert list(decode_snapshot(snapshot.sink["A"].timers).entries()) == []

    run_until_idle(task)  # the checkpoint's notification commits what was emitted before it
    job.failover(0, "after the checkpoint")
    run_schedule(job, random.Random(0), (), 10_000)
    # Every timer's output exactly once. The mail B's second timer put was still waiting at the
    # checkpoint: mail is not state (in Flink neither), so what it emitted after the checkpoint
    # was aborted with its transaction and nothing emits it again.
    expected = Counter(f"{prefix}{k}" for k in keys for prefix in ("fired-", "mail-", "B-fired-"))
    expected.update(["B-mail-key-0", "B-mail-key-2"])
    assert Counter(job.external.output()) == expected


def test_failure_inside_an_interrupted_chained_firing_fires_each_timer_once():
    """Job-level companion of UnalignedCheckpointsInterruptibleTimersTest: two chained window
    operators whose timers put mail (every firing is interrupted after each timer), unaligned
    checkpoints, and a task failure while a firing is interrupted after a checkpoint completed
    during it. The committed output is each (key, window) of the second operator exactly once,
    as in the failure-free run. Not a Flink unit test: Flink covers this with its ITCases."""
    graph = JobGraph([OperatorNode("source", "source", 2),
                      OperatorNode("windows", "keyed_process", 2, "mailing_window_sum"),
                      OperatorNode("totals", "keyed_process", 2, "mailing_window_sum"),
                      OperatorNode("sink", "sink", 2)],
                     [Edge("source", "windows", "keyed"), Edge("windows", "totals"), Edge("totals", "sink")])
    inputs = [[StreamRecord("a", 1, 1), StreamRecord("b", 2, 2), Watermark(9), StreamRecord("a", 5, 11), Watermark(19)],
              [StreamRecord("c", 3, 3), StreamRecord("d", 4, 4), Watermark(9), StreamRecord("b", 6, 12), Watermark(19)]]
    spec = GraphJobSpec(graph, inputs, {**FUNCTIONS, **STATELESS_FUNCTIONS}, max_parallelism=8,
                        checkpoint_interval=4, config=TaskConfig(interruptible_timers=True, unaligned_checkpoints=True),
                        channel_capacity=2, async_mail_rate=0.0)
    assert [c.name for c in graph.chains] == ["source", "windows -> totals -> sink"]
    expected = [("a", 9, 1), ("a", 19, 5), ("b", 9, 2), ("b", 19, 6), ("c", 9, 3), ("d", 9, 4)]
    assert sorted(simulate(spec, seed=1).committed) == expected
    faulty = simulate(spec, seed=1, faults=(Fault("fail_in_interrupted_firing", nth=1, after_checkpoint=True),))
    assert faulty.faults_applied and faulty.failovers == 1
    assert sorted(faulty.committed) == expected


# -- StreamOperatorWrapperTest / RegularOperatorChain ------------------------------------------------
class Recording(KeyedProcessFunction):
    """Flink's ``TestOneInputStreamOperator`` of StreamOperatorWrapperTest, as a keyed function:
    it records its life cycle in a shared list and emits it, with operator-level
    processing-time timers and mail registered where Flink's test registers them."""

    def __init__(self, name, calls):
        self.name, self.calls = name, calls

    def _say(self, what, out=None):
        self.calls.append(f"[{self.name}]: {what}")
        if out is not None:
            out.collect(f"[{self.name}]: {what}")

    def open(self, ctx):
        self.timers = ctx.get_processing_time_service()
        self.executor = ctx.get_mailbox_executor()
        self._say("open")
        self.timers.register_timer(2**62, lambda t: self._say("Timer not triggered"))

    def process_element(self, value, ctx, out):
        out.collect(value)
        ctx.timer_service().register_event_time_timer(100)

    def on_timer(self, timestamp, ctx, out):
        self._say("event-time timer", out)

    def end_input(self, out):
        self._say("End of input", out)
        self.timers.register_timer(0, lambda t: self._say("Timer that was in mailbox before closing operator"))

    def finish(self, out):
        self.timers.register_timer(0, lambda t: self._say("Timer to put in mailbox when finishing operator"))
        self.executor.execute(lambda: self._say("Mail to put in mailbox when finishing operator"), "mail")
        self._say("Bye", out)

    def close(self):
        self._say("close")


def _recording_chain(calls, n=3):
    names = [f"Operator{i}" for i in range(n)]
    return chain_job([(name, "keyed_process", name) for name in names], list(zip(names, names[1:])),
                     {name: (lambda name=name: Recording(name, calls)) for name in names})


def test_finish_runs_head_to_tail_flushing_each_operators_timers_and_mail():
    """Ports StreamOperatorWrapperTest#testFinish (and the open order of
    RegularOperatorChain#initializeStateAndOpenOperators: tail to head).

    At end of input each operator in turn, head to tail: endInput; the processing-time timer
    it registered there, already due, fires; finish ("Bye"); the mail finish() put runs -- all
    before the next operator's endInput. A timer far in the future (registered in open) and one
    registered in finish() never fire. Event-time timers of every operator fire on
    MAX_WATERMARK, before any endInput. Differs: Flink's test calls finish on the head's wrapper,
    whose endInput the input processor calls, so its expected list starts at the head's "Bye";
    here the task ends its input, and the head's endInput is included."""
    calls = []
    job = _recording_chain(calls)
    task = job.tasks[0]
    task.receive(0, StreamRecord("k", "Hello", 0))
    task.receive(0, Watermark(MAX_WATERMARK))
    task.receive(0, EndOfData())
    run_until_idle(task)
    assert task.state == task.FINISHED
    expected = [f"[Operator{i}]: open" for i in (2, 1, 0)]
    expected += [f"[Operator{i}]: event-time timer" for i in range(3)]
    for i in range(3):
        expected += [f"[Operator{i}]: {what}" for what in (
            "End of input", "Timer that was in mailbox before closing operator", "Bye",
            "Mail to put in mailbox when finishing operator")]
    assert calls == expected


def test_closing_all_operators_on_chain_properly():
    """Ports OneInputStreamTaskTest#testClosingAllOperatorsOnChainProperly.

    What the head emits in endInput and finish passes through the next operator before that one
    ends its input: the tail's output is the record, then per operator, head first, its
    "End of input" and "Bye", then EndOfData. Differs: the chain has three operators (Flink's
    two) and, with drain, MAX_WATERMARK (and the event-time timers it fires, each operator's
    output passing through the next) precedes the end of input, which Flink's harness does not
    send."""
    calls = []
    job = _recording_chain(calls)
    task = job.tasks[0]
    task.receive(0, StreamRecord("k", "Hello", 0))
    task.receive(0, Watermark(MAX_WATERMARK))
    task.receive(0, EndOfData())
    run_until_idle(task)
    assert logs(task)["Operator2"] == (
        ["Hello"] + [f"[Operator{i}]: event-time timer" for i in range(3)] + [("wm", MAX_WATERMARK)]
        + [f"[Operator{i}]: {what}" for i in range(3) for what in ("End of input", "Bye")] + ["end"])


def test_close_runs_tail_to_head_after_the_final_checkpoint():
    """Ports the close order of RegularOperatorChain#closeAllOperators: it walks
    getAllOperators(true), the reverse ReadIterator of StreamOperatorWrapperTest#testReadIterator,
    so after the final checkpoint completes (FLIP-147) the chain's operators are closed tail to
    head, mirroring open. Differs: Flink's wrapper test checks the iterator, not close itself;
    here close() is observed through the recording function of a three-operator chain."""
    calls = []
    job = _recording_chain(calls)
    task = job.tasks[0]
    task.receive(0, StreamRecord("k", "Hello", 0))
    task.receive(0, Watermark(MAX_WATERMARK))
    task.receive(0, EndOfData())
    run_until_idle(task)
    job.coordinator.trigger(1)  # the final checkpoint of a finished task
    run_until_idle(task)
    assert task.state == task.TERMINATED
    assert [c for c in calls if c.endswith("close")] == [f"[Operator{i}]: close" for i in (2, 1, 0)]


def test_a_record_emitted_outside_a_keyed_context_into_a_keyed_stream_is_a_clear_error():
    """OneInputStreamTaskTest#testClosingAllOperatorsOnChainProperly when no record arrives
    before the end of input, with keyed operators: what the head emits in endInput has no key
    (no record set one), and the chained keyed operator reads a keyed stream whose key, here, is
    the record's own (Flink's reinterpretAsKeyedStream would call its key selector on the value).
    The runtime stops with one line naming the operator, not a TypeError from key hashing."""
    from streamproof.impl.tasks.chained_operators import KeylessRecordError
    calls = []
    job = _recording_chain(calls, n=2)
    task = job.tasks[0]
    task.receive(0, Watermark(MAX_WATERMARK))
    task.receive(0, EndOfData())
    with pytest.raises(KeylessRecordError, match="operator Operator1 got a record without key"):
        run_until_idle(task)


# -- scenarios ---------------------------------------------------------------------------------------
def _scenario_paths():
    return sorted(SCENARIOS.glob("*.json"))


@pytest.mark.parametrize("path", _scenario_paths(), ids=lambda p: p.stem)
def test_graph_scenarios_hold_every_job_property(path):
    """The scenarios of examples/job/graph/flink-ports (job-level versions of the cases above:
    chained holding operators, a keyed exchange between chains, unaligned checkpoints, failures
    inside interrupted firings, both watermark modes) fail over as scheduled and satisfy every
    property of the job family."""
    scenario = load_scenario(path.read_text())
    assert json.loads(path.read_text())["params"]["graph"]
    run = simulate(graph_spec(scenario), job_params(scenario)["seed"], faults_of(scenario))
    assert run.faults_applied and run.failovers == 1  # the scenario's failure does happen
    for prop in registry.for_family("job"):
        verdict = prop.check(scenario)
        assert verdict.holds, f"{prop.name}: {verdict.message}"

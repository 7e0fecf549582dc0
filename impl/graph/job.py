"""What a job is: the one-stage :class:`JobSpec` and the :class:`GraphJobSpec` of a job graph.

A :class:`JobSpec` is the one-stage job ``source[s] --keyBy--> keyed operator + 2PC sink [p]``: per
source subtask a bounded list of elements (records and watermarks), the function, parallelism and
configuration. It runs as its one-operator job graph on the one job runtime
(:func:`streamproof.impl.graph.sim.graph_spec_of`, :class:`~streamproof.impl.graph.job_runtime.GraphJob`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from streamproof.impl.graph.job_graph import JobGraph
from streamproof.impl.operators.keyed_process_operator import KeyedProcessFunction, StreamRecord
from streamproof.impl.tasks.chained_operators import WATERMARK_MODES
from streamproof.impl.tasks.stream_elements import (
    Watermark,
)
from streamproof.impl.tasks.task_state import TaskConfig
from streamproof.impl.timers.internal_timer_service import TIE_ORDERS


@dataclass(frozen=True)
class PeriodicWatermark(Watermark):
    """An emission point of a source's bounded-out-of-orderness watermark generator (Flink's
    ``BoundedOutOfOrdernessWatermarks`` behind the source's periodic emitter): here the source
    emits ``max(timestamps of the records it emitted since its (re)start) - bound - 1`` when that
    is above every watermark it emitted since its (re)start, else nothing. A restarted source
    task starts a new generator, so after a restore the watermarks come from the replayed
    records. ``timestamp`` is what the generator emits here in a failure-free run (the value a
    runtime that does not restart generators, the job-graph runtime, and the model use).
    docs/decisions.md, "Watermarks after a restore"."""

    bound: int = 0


@dataclass
class JobSpec:
    """What to run: per source subtask its elements, the function, parallelism and configuration."""

    sources: list[list]                              # per source subtask: StreamRecord / Watermark
    function_factory: Callable[[], KeyedProcessFunction]
    parallelism: int = 2
    max_parallelism: int = 16
    checkpoint_interval: int = 20                     # simulated time between checkpoint triggers
    config: TaskConfig = field(default_factory=TaskConfig)
    channel_capacity: int = 4                          # records in flight per channel (back-pressure)
    failover_strategy: str = "region"                  # "region" or "full"
    async_mail_rate: float = 0.3                       # chance that mail arrives while a timer fires
    name: str = "keyed-process"
    # "steps": processing time is the simulation step (it depends on the schedule); "input": each
    # task's clock moves only with the ProcessingTimeAdvance elements of its input
    processing_time: str = "steps"
    # per subtask, the channels to consume input from, in order (a failure-free replay of a run's
    # committed lineage); None: round robin over the channels with data
    forced_lineage: list | None = None
    # a counterfactual, never Flink: restored tasks resume at the input watermark their snapshots
    # had processed (certification's check that a difference comes only from watermarks not being
    # checkpointed, docs/certify.md)
    restore_watermarks: bool = False
    # the order in which event- and processing-time timers with equal timestamps fire (Flink
    # leaves it open): "insertion" (registration order), "reversed" (the reverse of it) or
    # "key-group" (by key group, then registration order: what a restore gives)
    timer_tie_order: str = "insertion"
    # FLIP-147: a source that had ended when a checkpoint was triggered is restored as finished
    # (its channels end first, before any source emits). None: when a source's watermarks come
    # from a generator (PeriodicWatermark elements, params.watermark_bound); False: it ends again
    # whenever the scheduler picks it (what every run did before; existing scenarios keep it)
    ended_sources_finished_on_restore: bool | None = None
    # the sources run ahead: whenever one can emit, it does before any task step (with unbounded
    # channels the whole input is queued at once, so a record that follows a watermark is there
    # while the watermark's timers fire: a timing every job may have)
    eager_sources: bool = False
    # processing time (ms) that passes while the job restarts: a restored input-driven clock resumes
    # that much after its checkpoint's (wall-clock time goes on during a restart; docs/decisions.md)
    restore_clock_gap: int = 0
    # Flink's state.checkpoints.num-retained: completed checkpoints kept for a restore; an older one
    # is subsumed (dropped) when a newer completes. None keeps them all (certification reads every
    # checkpoint's state for its coverage)
    retained_checkpoints: int | None = 1

    def __post_init__(self) -> None:
        if self.timer_tie_order not in TIE_ORDERS:
            raise ValueError(f"timer_tie_order must be one of {', '.join(TIE_ORDERS)}, got {self.timer_tie_order!r}")


@dataclass
class GraphJobSpec:
    """What to run: the graph, per source subtask its elements, a factory per function name."""

    graph: JobGraph
    sources: list[list]
    functions: dict[str, Callable]  # keyed: () -> KeyedProcessFunction; stateless: (key, value) -> pairs
    max_parallelism: int = 16
    checkpoint_interval: int = 20
    config: TaskConfig = field(default_factory=TaskConfig)
    channel_capacity: int = 4
    async_mail_rate: float = 0.3
    watermark_mode: str = "corrected"  # or "flink-2.3": the watermark processor as Flink 2.3 ships it
    slots: int | None = None  # task slots of the cluster (None: enough for every task at once)
    # per source operator of a captured job, what its task does with each element it reads
    programs: dict[str, "SourceProgram"] = field(default_factory=dict)
    eager_sources: bool = False  # sources run ahead whenever they can (records queued while timers fire)
    # "steps": processing time is the simulation step (it depends on the schedule); "input": each
    # task's clock moves only with the ProcessingTimeAdvance elements of its input (forwarded to the
    # tasks it feeds) and is restored with its checkpoint
    processing_time: str = "steps"
    # input-driven processing time: how much of it passes while the job restarts (a restored task's
    # clock resumes this much after its snapshot's: wall-clock time goes on during a failover)
    restore_clock_gap: int = 0
    # a failure-free replay: per (chain, subtask), the channels its records come from, in order
    forced_lineage: dict | None = None
    # ... or the channels of every input element it consumes, in order (the one-stage lineage)
    forced_elements: dict | None = None
    # what a one-stage JobSpec also sets (sim.graph_spec_of): the order of equal-timestamp timers
    # (TIE_ORDERS), the counterfactual restore of watermarks, per key-group histories of keyed
    # heads, and FLIP-147 sources restored as finished when they had ended at the checkpoint
    timer_tie_order: str = "insertion"
    restore_watermarks: bool = False
    histories: bool = False
    one_stage: str | None = None  # the operator's name when this is a one-stage JobSpec's graph (graph_spec_of)
    ended_sources_finished_on_restore: bool = False
    retained_checkpoints: int | None = 1  # as JobSpec's

    def __post_init__(self) -> None:
        if self.watermark_mode not in WATERMARK_MODES:
            raise ValueError(f"watermark_mode must be one of {', '.join(WATERMARK_MODES)}, got {self.watermark_mode!r}")
        if len(self.sources) != len(self.graph.source_subtasks()):
            raise ValueError(f"{len(self.sources)} source inputs for {len(self.graph.source_subtasks())} source subtasks")


@dataclass
class SourceProgram:
    """What a captured job's source task does with each record it reads (the operators Flink
    chains to the source, run inside its task): ``functions`` (stateless, each ``value -> list of
    values``), then the timestamp assigner (``(value, record timestamp) -> int``; None: records keep
    theirs) and the watermark generator: ``bound`` ms of out-of-orderness (None: no watermarks
    but the end of input's). Watermarks leave at the source's ``PeriodicWatermark`` elements (its
    emission points); the generator restarts with the task, as Flink's."""

    functions: list = field(default_factory=list)
    assigner: Callable | None = None
    bound: int | None = 0

    def records(self, record: StreamRecord) -> list[StreamRecord]:
        values = [record.value]
        for function in self.functions:
            values = [out for value in values for out in function(value)]
        if self.assigner is None:
            return [StreamRecord(None, value, record.timestamp) for value in values]
        return [StreamRecord(None, value, _timestamp(self.assigner(value, record.timestamp))) for value in values]


def _timestamp(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise TypeError(f"the timestamp assigner returned {value!r}, not an integer (ms)")
    return value

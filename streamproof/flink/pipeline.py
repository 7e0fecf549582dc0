"""A captured PyFlink job: what ``StreamExecutionEnvironment`` recorded while the job's file ran
with PyFlink's DataStream API bound to streamproof (:mod:`streamproof.flink.capture`).

Nothing here runs user code. A :class:`Pipeline` is a list of :class:`Node` in the order the job
built them (inputs always before the nodes reading them); certification turns it into a job graph
(:mod:`streamproof.properties.certify_job`). Every node remembers the job's line that built it
(``line``), so an error names it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# node kinds
SOURCE = "source"            # from_collection / from_source / add_source
TIMESTAMPS = "timestamps"    # assign_timestamps_and_watermarks
MAP, FLAT_MAP, FILTER = "map", "flat_map", "filter"
PROCESS = "process"          # process() on a DataStream (ProcessFunction) or KeyedStream (KeyedProcessFunction)
REDUCE = "reduce"            # KeyedStream.reduce / sum / min / max ...: a rolling aggregation
WINDOW = "window"            # KeyedStream.window(...).reduce/aggregate/process/apply
UNION = "union"              # DataStream.union(*others): its inputs, merged
SIDE_OUTPUT = "side_output"  # DataStream.get_side_output(tag): the tagged output of its input
SINK = "sink"                # print / add_sink / sink_to
KINDS = (SOURCE, TIMESTAMPS, MAP, FLAT_MAP, FILTER, PROCESS, REDUCE, WINDOW, UNION, SIDE_OUTPUT, SINK)


class CaptureError(ValueError):
    """The job cannot be captured: an API streamproof does not model (named), a job that fails
    while it is built, no pipeline. One line; ``streamproof certify`` exits 2."""


@dataclass
class SourceSpec:
    """``kind``: ``collection`` (``records`` are the job's own) or ``connector`` (``description``
    names it, e.g. ``KafkaSource``: its data is not in the file)."""

    kind: str
    records: list | None = None
    type_info: Any = None
    description: str = ""


@dataclass
class WatermarkSpec:
    """A ``WatermarkStrategy``: ``kind`` ``monotonous`` (bound 0), ``bounded`` (``bound`` ms of
    out-of-orderness), ``none`` (``no_watermarks()``); ``assigner`` a ``TimestampAssigner`` or a
    callable ``(value, record_timestamp) -> int``, or None (records keep their timestamps);
    ``idleness`` ms or None."""

    kind: str
    bound: int = 0
    assigner: Any = None
    idleness: int | None = None


@dataclass
class WindowSpec:
    """A window on a keyed stream.

    ``assigner``: ``("tumbling", size, offset)``, ``("sliding", size, slide, offset)``,
    ``("session", gap)``, ``("dynamic_session", extractor)``, ``("global",)``, ``("count", size,
    slide or None)`` (``count_window``); all event time except ``global``/``count``, which have no
    time (processing-time assigners are refused when captured). ``trigger``: the user's
    ``Trigger`` object or None (the assigner's default). ``function_kind``: ``reduce``,
    ``aggregate``, ``process`` or ``apply``; ``function`` the ReduceFunction/AggregateFunction
    (or callable), ProcessWindowFunction or WindowFunction; ``window_function`` the
    ProcessWindowFunction/WindowFunction given with a reduce or aggregate, or None.
    ``allowed_lateness`` ms; ``late_tag`` the ``OutputTag`` of ``side_output_late_data``."""

    assigner: tuple
    function_kind: str
    function: Any
    window_function: Any = None
    trigger: Any = None
    evictor: Any = None
    allowed_lateness: int = 0
    late_tag: Any = None


@dataclass
class Node:
    """One operator of the job as written.

    ``inputs``: ids of the nodes it reads (a union has several). ``key_selector``: set when the
    node reads a ``KeyedStream`` (``key_by``: a callable or ``KeySelector``), with ``key_type``.
    ``function``: the user's function object or callable (map/flat_map/filter/process/reduce).
    ``tag``: the ``OutputTag`` of a side_output node. ``chaining``: ``default``, ``disabled``
    (``disable_chaining()``) or ``new_chain`` (``start_new_chain()``). ``parallelism`` None: the
    environment's. ``sink``: how it was written (``print``, ``add_sink(...)``, ``sink_to(...)``).
    ``two_inputs``: a ``connect``-ed operator (``CoMapFunction``, ``CoFlatMapFunction``,
    ``CoProcessFunction``, ``KeyedCoProcessFunction``) reading ``inputs[0]`` and ``inputs[1]``."""

    id: int
    kind: str
    inputs: list[int] = field(default_factory=list)
    line: str = ""                 # "job.py:42", where the job built it
    name: str | None = None
    uid: str | None = None
    parallelism: int | None = None
    max_parallelism: int | None = None
    chaining: str = "default"
    slot_sharing_group: str | None = None
    function: Any = None
    key_selector: Any = None
    key_type: Any = None
    output_type: Any = None
    source: SourceSpec | None = None
    watermarks: WatermarkSpec | None = None
    window: WindowSpec | None = None
    tag: Any = None
    sink: str = ""
    # a two-input operator (``connect``): ``inputs`` are its first and second input; on keyed
    # connected streams ``key_selector`` keys the first and ``key_selector2`` the second
    two_inputs: bool = False
    key_selector2: Any = None
    # a broadcast-state operator (``connect(stream.broadcast(descriptors)).process(...)``): the
    # ``MapStateDescriptor``s of its broadcast state; ``inputs[1]`` is the broadcast side
    broadcast: list | None = None

    @property
    def label(self) -> str:
        """The operator's name as the job gave it, else its kind and id (``map#3``)."""
        return self.name or f"{self.kind}#{self.id}"


@dataclass
class Pipeline:
    """What ``env.execute()`` would have submitted: the nodes, the environment's settings and the
    job's file. ``checkpoint_interval`` ms, or None when checkpointing is not enabled."""

    nodes: list[Node]
    file: str = ""
    job_name: str | None = None
    parallelism: int | None = None
    max_parallelism: int | None = None
    checkpoint_interval: int | None = None
    checkpointing_mode: str = "EXACTLY_ONCE"
    runtime_mode: str = "STREAMING"
    auto_watermark_interval: int = 200
    configuration: dict = field(default_factory=dict)

    def node(self, node_id: int) -> Node:
        return next(n for n in self.nodes if n.id == node_id)

    def readers(self, node_id: int) -> list[Node]:
        return [n for n in self.nodes if node_id in n.inputs]

    @property
    def sinks(self) -> list[Node]:
        return [n for n in self.nodes if n.kind == SINK]

    @property
    def sources(self) -> list[Node]:
        return [n for n in self.nodes if n.kind == SOURCE]

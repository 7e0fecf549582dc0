"""The ``job`` scenario family: the input of each source, the faults, and the job's settings.

Steps are data: ``record`` and ``watermark`` append to a source's input in order; ``fail``,
``fail_in_interrupted_firing`` and ``rescale`` schedule faults. ``params`` holds the job's
settings (see :data:`DEFAULT_PARAMS`); the interleaving of tasks comes from ``params.seed``.
``params.graph`` describes a job graph (:func:`streamproof.impl.graph.job_graph.graph_from_json`); without
it the job is the one-stage graph source --keyBy--> ``params.operator`` -> sink.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, ClassVar

from streamproof.impl.graph.job_graph import GraphError, JobGraph, graph_from_json, one_stage_graph
from streamproof.impl.graph.job import PeriodicWatermark
from streamproof.impl.state.key_groups import CompositeKey
from streamproof.impl.operators.keyed_process_operator import StreamRecord
from streamproof.impl.graph.sim import Fault
from streamproof.impl.tasks.stream_task import ProcessingTimeAdvance, TaskConfig, Watermark
from streamproof.properties.job.values import decode
from streamproof.properties.scenario import (
    BOOL, INT64, JSON, KEY, STR, IntKind, Scenario, Step, TOP, arg, register_family, step, step_error,
)

DEFAULT_PARAMS: dict[str, Any] = {
    "operator": "window_sum",     # a name in streamproof.properties.job.functions.FUNCTIONS
    "sources": 2,                 # source parallelism
    "parallelism": 2,             # operator parallelism
    "max_parallelism": 16,
    "checkpoint_interval": 20,
    "interruptible_timers": True,
    "unaligned": False,
    "channel_capacity": 4,
    "async_mail_rate": 0.3,
    "seed": 0,
    "drain": True,
    "late_records": False,        # records at or below their source's watermark allowed (certify)
    "processing_time": "steps",   # "steps": the simulation step; "input": moved by processing_time steps
    "graph": None,                # a job graph {operators, edges}; None: the one-stage job
    "watermark_mode": "corrected",  # job graphs: "flink-2.3" = Flink's MailboxWatermarkProcessor as shipped
    "slots": None,                # job graphs: the cluster's task slots (FLIP-331 scheduling); None: enough
    # None: watermark steps are the values the source emits, as written. An int (ms), or per source
    # a list of ints or nulls: that source's watermark steps are emission points of a bounded-
    # out-of-orderness generator (highest record ts since the source's (re)start - bound - 1),
    # restarted with the source task, and ended sources restored as finished (FLIP-147); one-stage
    # jobs only (docs/decisions.md, "Watermarks after a restore")
    "watermark_bound": None,
    # processing time (ms) that passes while the job restarts after a failure: restored
    # input-driven clocks resume that much after their checkpoint's (processing_time "input" only)
    "restart_gap": 0,
}
# the processing time certification lets a restart take (ms): Flink 2.3's exponential-delay restart
# backoff grows to one minute, and redeployment comes on top (docs/decisions.md)
RESTART_GAP = 60_000
WATERMARK_MODES = ("corrected", "flink-2.3")
# built-in operators with no one-stage reference in model/job.py: they run in job graphs only
GRAPH_ONLY = ("processing_buffer", "keyed_identity", "eos_window_sum", "tumbling_window_sum", "eos_co_group")
# a record's timestamp: Long.MIN_VALUE is Flink's "no timestamp" marker (event-time windows refuse it)
RECORD_TS = IntKind(-(2**63) + 1, 2**63 - 1)
SOURCE = IntKind(0, 63)
PARALLELISM = IntKind(1, 64)


@step
class Record(Step):
    """A record read by source subtask ``source``."""

    op: ClassVar[str] = "record"
    source: int = arg(SOURCE)
    key: Any = arg(KEY)
    value: int = arg(INT64)
    ts: int = arg(RECORD_TS)


@step
class UserRecord(Step):
    """A record of any JSON-like shape (``data``, encoded by :mod:`streamproof.properties.job.values`)
    read by source subtask ``source``; ``key`` and ``ts`` are what the user's key selector and
    timestamp assigner gave it. Certification writes these."""

    op: ClassVar[str] = "user_record"
    source: int = arg(SOURCE)
    key: Any = arg(JSON)  # encoded like data: a string, an integer, or a composite key {"$tuple": [...]}
    data: Any = arg(JSON)
    ts: int = arg(RECORD_TS)


@step
class SourceWatermark(Step):
    """A watermark emitted by source subtask ``source`` (no later record of it may be at or below it)."""

    op: ClassVar[str] = "watermark"
    source: int = arg(SOURCE)
    ts: int = arg(INT64)


@step
class ProcessingTime(Step):
    """Source subtask ``source`` carries processing time ``ts`` to the tasks it feeds: with
    ``params.processing_time`` = ``input`` their clocks move only with these (in order with the
    records), so processing-time timers fire at reproducible points."""

    op: ClassVar[str] = "processing_time"
    source: int = arg(SOURCE)
    ts: int = arg(INT64)


@step
class Fail(Step):
    """A task fails at simulation step ``at``; the job fails over to the latest checkpoint."""

    op: ClassVar[str] = "fail"
    at: int = arg(IntKind(1, 10**9))
    subtask: int | None = arg(IntKind(0, 63), optional=True)
    # not before this many checkpoints completed (a failure between a checkpoint and what follows it)
    checkpoints: int | None = arg(IntKind(1, 10**6), optional=True)


@step
class FailInInterruptedFiring(Step):
    """A task fails the ``nth`` time a task is between two parts of an interrupted firing."""

    op: ClassVar[str] = "fail_in_interrupted_firing"
    nth: int = arg(IntKind(1, 10**9))
    after_checkpoint: bool | None = arg(BOOL, optional=True)  # only once a checkpoint completed during it


@step
class Rescale(Step):
    """At step ``at`` the job restarts from its latest checkpoint with another parallelism."""

    op: ClassVar[str] = "rescale"
    at: int = arg(IntKind(1, 10**9))
    parallelism: int = arg(PARALLELISM)
    operator: str | None = arg(STR, optional=True)  # job graphs: the operator whose chain rescales (else all)
    checkpoints: int | None = arg(IntKind(1, 10**6), optional=True)  # not before this many checkpoints completed


def validate_job(scenario: Scenario) -> None:
    params = job_params(scenario)
    from streamproof.model.job import REFERENCES
    if params["graph"] is None and params["operator"] in GRAPH_ONLY:
        raise TOP.expected("params", f"operator one of {', '.join(REFERENCES)} for the one-stage job "
                           f"({params['operator']} runs in a params.graph)", params["operator"], "semantic")
    sources = params["sources"]
    bounds = watermark_bounds(params)
    last_watermark: dict[int, int] = {}
    highest: dict[int, int] = {}
    for i, s in enumerate(scenario.steps):
        if isinstance(s, (Record, UserRecord, SourceWatermark, ProcessingTime)) and s.source >= sources:
            raise step_error(i, s, "source", f"a source below params.sources ({sources})", s.source)
        if isinstance(s, SourceWatermark):
            ts = s.ts if bounds[s.source] is None else generated_watermark(highest.get(s.source), bounds[s.source])
            if ts is not None:
                last_watermark[s.source] = max(ts, last_watermark.get(s.source, ts))
        if (isinstance(s, (Record, UserRecord)) and not params["late_records"] and s.source in last_watermark
                and s.ts <= last_watermark[s.source]):
            raise step_error(i, s, "ts", f"a timestamp above the source's last watermark "
                             f"({last_watermark[s.source]}): the record would be late", s.ts)
        if isinstance(s, (Record, UserRecord)):
            highest[s.source] = max(s.ts, highest.get(s.source, s.ts))
        if isinstance(s, Rescale) and s.parallelism > params["max_parallelism"]:
            raise step_error(i, s, "parallelism", f"at most max_parallelism ({params['max_parallelism']})", s.parallelism)
        if isinstance(s, Rescale) and s.operator is not None:
            graph = graph_of(scenario)
            if params["graph"] is None or s.operator not in graph.by_name:
                raise step_error(i, s, "operator", "an operator of params.graph", s.operator)
            try:
                graph.with_parallelism(graph.forward_group(graph.chain_of[s.operator]), s.parallelism)
            except GraphError as error:
                raise step_error(i, s, "operator", f"an operator that can rescale ({error})", s.operator) from None


def job_params(scenario: Scenario) -> dict:
    params = {**DEFAULT_PARAMS, **scenario.params}
    unknown = set(scenario.params) - set(DEFAULT_PARAMS)
    if unknown:
        raise TOP.expected("params", f"only {', '.join(DEFAULT_PARAMS)}", sorted(unknown)[0], "semantic")
    from streamproof.properties.job.functions import FUNCTIONS
    if params["operator"] not in FUNCTIONS:
        raise TOP.expected("params", f"operator one of {', '.join(FUNCTIONS)}", params["operator"], "semantic")
    check_job_settings(params)
    if params["processing_time"] not in ("steps", "input"):
        raise TOP.expected("params", "processing_time one of steps, input", params["processing_time"], "semantic")
    gap = params["restart_gap"]
    if not isinstance(gap, int) or isinstance(gap, bool) or not 0 <= gap <= 2**62:
        raise TOP.expected("params", "restart_gap: an integer >= 0 (ms)", gap, "semantic")
    if params["watermark_mode"] not in WATERMARK_MODES:
        raise TOP.expected("params", f"watermark_mode one of {', '.join(WATERMARK_MODES)}", params["watermark_mode"],
                           "semantic")
    if params["graph"] is not None:
        _check_graph(params)
    _check_watermark_bound(params)
    return params


def _check_watermark_bound(params: dict) -> None:
    bound, sources = params["watermark_bound"], params["sources"]
    if bound is None:
        return
    if params["graph"] is not None:
        raise TOP.expected("params", "watermark_bound null with a params.graph (watermark generators that restart "
                           "with their source task are modelled in the one-stage job only)", bound, "semantic")
    what = (f"watermark_bound: null, an integer in [0, 2^63 - 1] (ms), or a list of {sources} (params.sources) "
            "such integers or nulls")
    if isinstance(bound, list):
        if len(bound) != sources:
            raise TOP.expected("params", what, bound, "semantic")
        entries = [b for b in bound if b is not None]
    else:
        entries = [bound]
    for b in entries:
        if not isinstance(b, int) or isinstance(b, bool) or not 0 <= b <= 2**63 - 1:
            raise TOP.expected("params", what, bound, "semantic")


def watermark_bounds(params: dict) -> list[int | None]:
    """Per source, the bound of its watermark generator (None: its watermark steps are values)."""
    bound = params["watermark_bound"]
    return list(bound) if isinstance(bound, list) else [bound] * params["sources"]


def generated_watermark(highest: int | None, bound: int) -> int | None:
    """What a bounded-out-of-orderness generator that saw records up to ``highest`` emits (None:
    nothing, no record yet or below Long.MIN_VALUE)."""
    if highest is None or highest - bound - 1 <= -(2**63):
        return None
    return highest - bound - 1


def _check_graph(params: dict) -> None:
    from streamproof.properties.job.functions import KEYED_FUNCTIONS, STATELESS_FUNCTIONS
    try:
        graph = _plain_graph(params["graph"], params["sources"])
    except GraphError as error:
        raise TOP.expected("params", "a valid graph", str(error), "semantic") from None
    for op in graph.operators:
        names = KEYED_FUNCTIONS if op.kind == "keyed_process" else STATELESS_FUNCTIONS
        if op.function is not None and op.function not in names:
            raise TOP.expected("params", f"graph operator {op.name!r}: function one of {', '.join(names)}",
                               op.function, "semantic")
        if op.parallelism > params["max_parallelism"]:
            raise TOP.expected("params", f"graph operator {op.name!r}: parallelism <= max_parallelism",
                               op.parallelism, "semantic")
    if params["processing_time"] != "steps":
        raise TOP.expected("params", "processing_time 'steps' in a job graph", params["processing_time"], "semantic")
    slots = params["slots"]
    if slots is not None and (not isinstance(slots, int) or isinstance(slots, bool) or slots < 1):
        raise TOP.expected("params", "slots: a positive integer or null", slots, "semantic")


def graph_of(scenario: Scenario) -> JobGraph:
    """The scenario's job graph (the one-stage graph when ``params.graph`` is absent)."""
    params = job_params(scenario)
    if params["graph"] is None:
        return one_stage_graph(params["operator"], params["sources"], params["parallelism"])
    return _parsed_graph(json.dumps(params["graph"], sort_keys=True), params["sources"])


@lru_cache(maxsize=1024)
def _parsed_graph(text: str, sources: int) -> JobGraph:
    """A graph parsed once per text (a job graph is read, never changed; issue 30: one example
    parsed its graph seven times)."""
    return with_declared_attributes(graph_from_json(json.loads(text), sources))


_PLAIN_GRAPHS: dict[tuple[str, int], JobGraph] = {}  # cleared by a bug patch (properties.job.check)


def _plain_graph(graph: Any, sources: int) -> JobGraph:
    """``graph_from_json(graph, sources)``, remembered per text for the checks of ``job_params``,
    which every run asks several times (issue 30); an invalid graph raises its GraphError each time."""
    key = (json.dumps(graph, sort_keys=True), sources)
    parsed = _PLAIN_GRAPHS.get(key)
    if parsed is None:
        parsed = graph_from_json(graph, sources)
        if len(_PLAIN_GRAPHS) >= 1024:
            _PLAIN_GRAPHS.clear()
        _PLAIN_GRAPHS[key] = parsed
    return parsed


def with_declared_attributes(graph: JobGraph) -> JobGraph:
    """Operators whose function declares FLIP-331 attributes (``get_operator_attributes()``, as the
    window operator of an end-of-stream global window does) carry them in the graph."""
    from dataclasses import replace

    from streamproof.properties.job.functions import KEYED_FUNCTIONS
    operators = []
    for op in graph.operators:
        declared = getattr(KEYED_FUNCTIONS[op.function](), "get_operator_attributes", None) \
            if op.kind == "keyed_process" else None
        if declared is not None:
            attributes = declared()
            op = replace(op, output_only_after_end_of_stream=op.output_only_after_end_of_stream
                         or attributes.output_only_after_end_of_stream,
                         internal_sorter_supported=op.internal_sorter_supported or attributes.internal_sorter_supported)
        operators.append(op)
    return JobGraph(operators, list(graph.edges))


def check_job_settings(params: dict, flags: tuple[str, ...] = ("interruptible_timers", "unaligned", "drain")) -> None:
    """The settings every job-shaped family shares: sizes, ``flags`` (booleans), the mail rate."""
    for name in ("sources", "parallelism", "max_parallelism", "checkpoint_interval", "channel_capacity"):
        if not isinstance(params[name], int) or isinstance(params[name], bool) or params[name] < 1:
            raise TOP.expected("params", f"{name}: a positive integer", params[name], "semantic")
    if params["parallelism"] > params["max_parallelism"]:
        raise TOP.expected("params", "parallelism <= max_parallelism", params["parallelism"], "semantic")
    for name in (*flags, "late_records") if "late_records" in params else flags:
        if not isinstance(params[name], bool):
            raise TOP.expected("params", f"{name}: true or false", params[name], "semantic")
    if not isinstance(params["async_mail_rate"], (int, float)) or not 0 <= params["async_mail_rate"] <= 1:
        raise TOP.expected("params", "async_mail_rate in [0, 1]", params["async_mail_rate"], "semantic")


def sources_of(scenario: Scenario) -> list[list]:
    """Per source subtask its elements. With ``params.watermark_bound`` a watermark step of a
    source with a bound is a :class:`PeriodicWatermark` (an emission point of its generator; its
    ``ts`` is not read: the timestamp is what the generator emits there in a failure-free run)."""
    params = job_params(scenario)
    bounds = watermark_bounds(params)
    sources: list[list] = [[] for _ in range(params["sources"])]
    highest: dict[int, int] = {}
    for s in scenario.steps:
        if isinstance(s, (Record, UserRecord)):
            highest[s.source] = max(s.ts, highest.get(s.source, s.ts))
        if isinstance(s, Record):
            sources[s.source].append(StreamRecord(s.key, s.value, s.ts))
        elif isinstance(s, UserRecord):
            key = decode(JSON.dump(s.key))
            if isinstance(key, bool) or not isinstance(key, (str, int)):
                key = CompositeKey.of(key)  # a tuple, float or bool key: routed as Flink's TupleN/Double/Boolean
            sources[s.source].append(StreamRecord(key, decode(JSON.dump(s.data)), s.ts))
        elif isinstance(s, SourceWatermark) and bounds[s.source] is not None:
            generated = generated_watermark(highest.get(s.source), bounds[s.source])
            timestamp = -(2**63) if generated is None else generated  # Long.MIN_VALUE: nothing emitted yet
            sources[s.source].append(PeriodicWatermark(timestamp, bounds[s.source]))
        elif isinstance(s, SourceWatermark):
            sources[s.source].append(Watermark(s.ts))
        elif isinstance(s, ProcessingTime):
            sources[s.source].append(ProcessingTimeAdvance(s.ts))
    return sources


def faults_of(scenario: Scenario) -> tuple[Fault, ...]:
    faults = []
    for s in scenario.steps:
        if isinstance(s, Fail):
            faults.append(Fault("fail", at=s.at, subtask=s.subtask or 0, checkpoints=s.checkpoints or 0))
        elif isinstance(s, FailInInterruptedFiring):
            faults.append(Fault("fail_in_interrupted_firing", nth=s.nth, after_checkpoint=bool(s.after_checkpoint)))
        elif isinstance(s, Rescale):
            faults.append(Fault("rescale", at=s.at, parallelism=s.parallelism, operator=s.operator,
                                checkpoints=s.checkpoints or 0))
    return tuple(faults)


def task_config(params: dict, interruptible: bool | None = None) -> TaskConfig:
    return TaskConfig(interruptible_timers=params["interruptible_timers"] if interruptible is None else interruptible,
                      unaligned_checkpoints=params["unaligned"], drain=params["drain"])


JOB_STEPS = [Record, UserRecord, SourceWatermark, ProcessingTime, Fail, FailInInterruptedFiring, Rescale]
register_family("job", JOB_STEPS, validate_job)

"""A captured PyFlink job (:class:`streamproof.flink.pipeline.Pipeline`) as a job graph the graph
runtime runs (:mod:`streamproof.impl.graph.job_runtime`).

- A source and the operators up to its ``assign_timestamps_and_watermarks`` (map/filter/flat_map
  in between) run in the source's task: Flink chains them, and the timestamp assigner and the
  watermark generator then see the records in the source's order (:class:`SourceProgram`).
- ``key_by`` is a keyed edge whose key selector runs on every record; a ``union`` is several
  input edges; ``get_side_output`` an edge carrying one tag; different parallelisms without
  ``key_by`` are rebalanced (round robin), as Flink does.
- Keyed operators (``process`` with a ``KeyedProcessFunction``, keyed map/flat_map/filter with
  keyed state, ``reduce``/``sum``..., windows) are keyed processes; non-keyed ones run with a
  fresh copy of the user's function per subtask.
- Every sink is a two-phase-commit sink of its own: it commits ``(sink, value)``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from streamproof.flink import broadcast_functions as bf
from streamproof.flink import job_functions as jf
from streamproof.flink import pipeline as pl
from streamproof.flink.errors import UnsupportedFeature
from streamproof.impl.graph.job_graph import Edge, GraphError, JobGraph, OperatorNode
from streamproof.impl.graph.job import SourceProgram

DEFAULT_MAX_PARALLELISM = 128  # Flink's lower bound for a computed max parallelism


class JobGraphError(ValueError):
    """The captured job cannot run here (one line naming the job's line)."""


@dataclass
class BuiltJob:
    """The graph and what the runtime needs to run it."""

    graph: JobGraph
    functions: dict
    programs: dict[str, SourceProgram]
    collections: dict[str, list]           # source operator -> the job's own records (None: connector)
    labels: dict[str, pl.Node]             # graph operator -> the job's node
    sinks: list[str]                       # sink labels, in the job's order
    keyed: list[str]                       # keyed operators (those with timers or keyed state)
    windows: list[str]
    fixed: set[str] = field(default_factory=set)  # operators whose parallelism the job sets
    max_parallelism: int = DEFAULT_MAX_PARALLELISM
    spread: set[str] = field(default_factory=set)  # collection sources dealt round robin over their subtasks


class _Typed:
    """After an operator with an ``output_type`` PyFlink's coder changes values of (a Row type):
    each value as the next operator receives it."""

    def __init__(self, convert):
        self.convert = convert

    def process(self, value, timestamp, watermark, now) -> list:
        return [(None, self.convert(value))]


class _SinkTag:
    """Before a sink: ``value -> (sink, value)``, so that each sink's committed output is told apart."""

    def __init__(self, sink: str):
        self.sink = sink

    def process(self, value, timestamp, watermark, now) -> list:
        return [(None, (self.sink, value))]


def _fail(node: pl.Node, message: str) -> JobGraphError:
    return JobGraphError(f"{node.line or node.label}: {message}")


def _names(pipeline: pl.Pipeline) -> dict[int, str]:
    names: dict[int, str] = {}
    used: set[str] = set()
    for node in pipeline.nodes:
        base = node.name or {"timestamps": "Timestamps/Watermarks", "sink": "Sink: " + (node.sink or "sink")}.get(
            node.kind, node.kind)
        name = base if base not in used else f"{base}#{node.id}"
        used.add(name)
        names[node.id] = name
    return names


def _source_chains(pipeline: pl.Pipeline) -> dict[int, int]:
    """Node id -> the source whose task runs it: a source's single-reader chain of non-keyed
    map/filter/flat_map ending in ``assign_timestamps_and_watermarks``."""
    fused: dict[int, int] = {}
    for source in pipeline.sources:
        chain, current = [], source
        while True:
            readers = pipeline.readers(current.id)
            if len(readers) != 1 or len(pipeline.readers(current.id)) != 1:
                break
            reader = readers[0]
            if reader.key_selector is not None or len(reader.inputs) != 1 or \
                    reader.kind not in (pl.MAP, pl.FILTER, pl.FLAT_MAP, pl.TIMESTAMPS):
                break
            chain.append(reader)
            current = reader
            if reader.kind == pl.TIMESTAMPS:
                for member in chain:
                    fused[member.id] = source.id
                break
    return fused


def _program(pipeline: pl.Pipeline, source: pl.Node, fused: dict[int, int]) -> SourceProgram | None:
    members = [n for n in pipeline.nodes if fused.get(n.id) == source.id]
    if not members:
        return SourceProgram([], None, None)  # no watermarks; records keep their (absent) timestamps
    functions = [jf.values_of(n.kind, copy.deepcopy(n.function)) for n in members if n.kind != pl.TIMESTAMPS]
    spec = next(n for n in members if n.kind == pl.TIMESTAMPS).watermarks
    assigner = spec.assigner
    if assigner is not None:
        extract = getattr(assigner, "extract_timestamp", None)
        if extract is None:
            node = next(n for n in members if n.kind == pl.TIMESTAMPS)
            raise _fail(node, f"with_timestamp_assigner({type(assigner).__name__}) needs a TimestampAssigner: PyFlink "
                              "calls its extract_timestamp (a lambda or function fails when the job is built)")
        assigner = extract
    bound = None if spec.kind == "none" else spec.bound
    return SourceProgram(functions, assigner, bound)


def build(pipeline: pl.Pipeline, parallelism: int, overrides: dict[str, int] | None = None,
          uniform: bool = False) -> BuiltJob:
    """The job graph of ``pipeline``: operators without a parallelism of their own (nor the
    environment's) run at ``parallelism`` (``uniform``: every operator but the sources, as after
    a rescale); ``overrides`` set some by name."""
    from streamproof.flink.window_operator import window_operator

    overrides = overrides or {}
    names = _names(pipeline)
    fused = _source_chains(pipeline)
    for node in pipeline.nodes:
        if node.kind == pl.TIMESTAMPS and node.id not in fused:
            raise _fail(node, "assign_timestamps_and_watermarks is supported right after a source (or its "
                              "map/filter/flat_map), where Flink chains it")
    operators: list[OperatorNode] = []
    edges: list[Edge] = []
    functions: dict[str, Any] = {}
    programs: dict[str, SourceProgram] = {}
    collections: dict[str, list] = {}
    labels: dict[str, pl.Node] = {}
    keyed, windows, sinks, fixed, spread = [], [], [], set(), set()
    parallelism_of: dict[int, int] = {}

    main_output: dict[int, str] = {}  # node id -> the graph operator its main output leaves from
    # PyFlink routes (OutputTag, value) results to side outputs only in operators a get_side_output reads
    # (has_side_output); elsewhere the pair is an output value like any other
    side_read = {i for n in pipeline.nodes if n.kind == pl.SIDE_OUTPUT for i in n.inputs}

    def resolve(node_id: int) -> list[tuple[int, str | None]]:
        """(graph operator's node id, side-output tag) of what a node reads from ``node_id``."""
        node = pipeline.node(node_id)
        if node.kind == pl.UNION:
            return [r for i in node.inputs for r in resolve(i)]
        if node.kind == pl.SIDE_OUTPUT:
            return [(up, node.tag.tag_id) for up, tag in resolve(node.inputs[0]) if tag is None] or \
                [(up, tag) for up, tag in resolve(node.inputs[0])]
        if node.id in fused:
            return [(fused[node.id], None)]
        return [(node.id, None)]

    for node in pipeline.nodes:
        if node.kind in (pl.UNION, pl.SIDE_OUTPUT) or node.id in fused:
            continue
        name = names[node.id]
        labels[name] = node
        if node.kind == pl.SOURCE:
            # a collection is non-parallel (PyFlink); a connector runs at the job's parallelism, else 1 (its
            # subtasks, and so the scenarios' emission points, are the same in every scenario)
            p = node.parallelism or (1 if node.source.kind == "collection" else pipeline.parallelism or 1)
            chain = _python_chain(pipeline, node, fused)
            if chain is not None and p == 1 and node.source.kind == "collection":
                # PyFlink runs the chain's Python functions (a TimestampAssigner's extraction included) at the
                # default parallelism after a rebalance, the watermark generator with them: each generator
                # subtask sees every p-th record. Modelled as p source subtasks dealt the records round robin.
                own = None if uniform else chain or pipeline.parallelism
                p = overrides.get(name, own or parallelism)
                if p > 1:
                    spread.add(name)
            parallelism_of[node.id] = p
            operators.append(OperatorNode(name, "source", p))
            programs[name] = _program(pipeline, node, fused)
            convert = jf.typed(node.source.type_info) or (lambda value: value)
            collections[name] = [convert(r) for r in node.source.records] if node.source.kind == "collection" else None
            continue
        own = None if uniform else node.parallelism or pipeline.parallelism
        p = overrides.get(name, own or parallelism)
        if own:
            fixed.add(name)
        parallelism_of[node.id] = p
        chaining = node.chaining == "default"
        try:
            if node.kind == pl.SINK:
                tag = f"{name}/tag"
                functions[tag] = (lambda sink: lambda: _SinkTag(sink))(name)
                operators.append(OperatorNode(tag, "process", p, tag, chaining, route_side_outputs=True))
                operators.append(OperatorNode(name, "sink", p))
                edges.append(Edge(tag, name, "forward"))
                sinks.append(name)
                target = tag
            elif node.kind == pl.WINDOW:
                if node.key_selector is None:
                    raise _fail(node, "a window needs a keyed stream (window_all is not supported)")
                spec = node.window
                functions[name] = (lambda s: lambda: window_operator(copy.deepcopy(s)))(spec)
                operators.append(OperatorNode(name, "keyed_process", p, name, chaining, route_side_outputs=True))
                keyed.append(name)
                windows.append(name)
                target = name
            elif node.two_inputs and node.broadcast is not None:  # connect(stream.broadcast(descriptors))
                if node.key_selector is not None:
                    functions[name] = bf.keyed_broadcast_factory(node.function, node.broadcast)
                    operators.append(OperatorNode(name, "keyed_process", p, name, chaining, route_side_outputs=True))
                    keyed.append(name)
                else:
                    functions[name] = bf.broadcast_factory(node.function, name, node.broadcast)
                    operators.append(OperatorNode(name, "process", p, name, chaining, route_side_outputs=True))
                target = name
            elif node.two_inputs:
                co_kind = {pl.PROCESS: "process", pl.MAP: "map", pl.FLAT_MAP: "flat_map"}[node.kind]
                if node.key_selector is not None:
                    functions[name] = jf.keyed_co_factory(co_kind, node.function)
                    operators.append(OperatorNode(name, "keyed_process", p, name, chaining, route_side_outputs=True))
                    keyed.append(name)
                else:
                    functions[name] = (lambda k, f, n: lambda: jf.NonKeyedCo(k, f, n))(co_kind, node.function, name)
                    operators.append(OperatorNode(name, "process", p, name, chaining, route_side_outputs=True))
                target = name
            elif node.key_selector is not None:
                if node.kind not in jf.KEYED_KINDS:
                    raise _fail(node, f"{node.kind} on a keyed stream is not supported")
                functions[name] = jf.keyed_factory(node.kind, node.function)
                operators.append(OperatorNode(name, "keyed_process", p, name, chaining, route_side_outputs=True))
                keyed.append(name)
                target = name
            elif node.kind in (pl.MAP, pl.FLAT_MAP, pl.FILTER, pl.PROCESS):
                if node.kind == pl.PROCESS and jf.adapter.is_pyflink_style(type(node.function)):
                    raise _fail(node, "a KeyedProcessFunction runs on a keyed stream: key_by before process")
                functions[name] = (lambda k, f, n: lambda: jf.NonKeyed(k, f, n))(node.kind, node.function, name)
                operators.append(OperatorNode(name, "process", p, name, chaining, route_side_outputs=True))
                target = name
            elif node.kind == pl.REDUCE:
                raise _fail(node, "reduce needs a keyed stream")
            else:
                raise _fail(node, f"{node.kind} is not supported")
        except UnsupportedFeature as e:
            raise _fail(node, str(e)) from None
        if node.id not in side_read and node.kind in (pl.PROCESS, pl.MAP, pl.FLAT_MAP, pl.FILTER, pl.REDUCE) and \
                name in functions:
            functions[name] = _without_side_outputs(functions[name])
        convert = jf.typed(node.output_type) if node.kind != pl.SINK else None
        if convert is not None:
            typed_name = f"{name}/type"
            functions[typed_name] = (lambda c: lambda: _Typed(c))(convert)
            operators.append(OperatorNode(typed_name, "process", p, typed_name, True))
            edges.append(Edge(name, typed_name, "forward"))
            main_output[node.id] = typed_name
        seen: set[tuple[str, str | None]] = set()
        for position, input_id in enumerate(node.inputs):
            which = position + 1 if node.two_inputs else 1  # the input of a connect-ed operator
            key_selector = node.key_selector2 if which == 2 else node.key_selector
            for up_id, tag in resolve(input_id):
                up = names[up_id] if tag is not None else main_output.get(up_id, names[up_id])
                if (up, tag) in seen:
                    raise _fail(node, f"it reads {up} twice (a union or connect of a stream with itself)")
                seen.add((up, tag))
                if node.broadcast is not None and which == 2:  # every record to every subtask
                    edges.append(Edge(up, target, "broadcast", tag=tag, input=2))
                elif key_selector is not None:
                    selector = f"key:{name}" if which == 1 else f"key2:{name}"
                    functions[selector] = _selector(key_selector)
                    edges.append(Edge(up, target, "keyed", key_selector=selector, tag=tag, input=which))
                else:
                    same = parallelism_of[up_id] == p and (pipeline.node(up_id).kind != pl.SOURCE or
                                                           names[up_id] in spread)
                    edges.append(Edge(up, target, "forward" if same else "rebalance", tag=tag, input=which))
    if not sinks:
        raise JobGraphError(f"{pipeline.file}: the job has no sink (print, add_sink or sink_to)")
    try:
        graph = JobGraph(operators, edges)
    except GraphError as e:
        raise JobGraphError(f"{pipeline.file}: {e}") from None
    return BuiltJob(graph, functions, programs, collections, labels, sinks, keyed, windows, fixed,
                    pipeline.max_parallelism or DEFAULT_MAX_PARALLELISM, spread)


def _without_side_outputs(factory):
    def make():
        function = factory()
        function.side_outputs = False
        return function
    return make


def _python_chain(pipeline: pl.Pipeline, source: pl.Node, fused: dict[int, int]) -> int | None:
    """For a source whose task runs Python functions before its watermark generator (a map, filter,
    flat_map, or a Python ``TimestampAssigner``, which PyFlink runs as a ``ProcessFunction``): the
    parallelism the job gives them (0: none given); None when the chain is Java only (a strategy
    without an assigner, chained to the source at its parallelism, as Java's
    ``assignTimestampsAndWatermarks``)."""
    members = [n for n in pipeline.nodes if fused.get(n.id) == source.id]
    python = [n for n in members if n.kind != pl.TIMESTAMPS or n.watermarks.assigner is not None]
    if not python:
        return None
    return next((n.parallelism for n in members if n.parallelism), 0)


def _selector(selector: Any):
    get_key = getattr(selector, "get_key", None)
    return get_key if get_key is not None else selector

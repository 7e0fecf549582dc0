"""A job graph: operators joined by forward and keyed edges, and the chains Flink builds from it.

Operator kinds: ``source`` (one or more; their subtasks read the scenario's inputs, in order),
``keyed_process`` (a :class:`~streamproof.impl.operators.keyed_process_operator.KeyedProcessFunction`; every input edge
keyed, or forward from another keyed_process, as ``DataStreamUtils.reinterpretAsKeyedStream``:
records keep the key they were emitted under), ``map``/``filter``/``flat_map`` (stateless), ``sink`` (the two-phase-commit sink),
``sink_writer`` and ``sink_committer`` (Flink's SinkV2 split: the writer sends committables to the
committer, which commits them when the checkpoint holding them completes). An operator with no
outgoing edge must be a sink or a committer.

Chaining follows Flink's ``StreamingJobGraphGenerator.isChainable``: the edge is forward, the
downstream operator has exactly one input edge, both have the same parallelism and neither
disabled chaining. Sources are their own tasks here (they hold the offsets checkpoints record);
in Flink a source chains with a following forward operator, which changes nothing observable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

KINDS = ("source", "keyed_process", "process", "map", "filter", "flat_map", "sink", "sink_writer", "sink_committer")
STATELESS = ("map", "filter", "flat_map")
TERMINAL = ("sink", "sink_committer")
# rebalance: round robin over the target's subtasks (Flink's default between different parallelisms);
# broadcast: every record to every subtask of the target (the broadcast input of a broadcast-state
# operator, ``connect(broadcast_stream)``: always its second input)
PARTITIONINGS = ("forward", "keyed", "rebalance", "broadcast")


class GraphError(ValueError):
    """A job graph Flink would refuse (or that this runtime cannot run), named in one line."""


@dataclass(frozen=True)
class OperatorNode:
    name: str
    kind: str
    parallelism: int
    function: str | None = None  # keyed_process / stateless: the function's name
    chaining: bool = True        # False: Flink's disableChaining()
    # FLIP-331 OperatorAttributes: emits only after all its inputs ended (its chain's outputs block)
    output_only_after_end_of_stream: bool = False
    internal_sorter_supported: bool = False
    slot_sharing_group: str = "default"
    # PyFlink side outputs: the operator's ("side-output", tag, value) outputs go only to the edges
    # tagged with their tag (unwrapped), the rest only to untagged edges; False: all to every edge
    route_side_outputs: bool = False


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    partitioning: str = "forward"
    # keyed edges of a captured job: the function (by name in the job's functions) computing the
    # key of each record (``key_by``); None: records keep the key they carry
    key_selector: str | None = None
    tag: str | None = None  # only the source's side output of this tag (``get_side_output``)
    input: int = 1  # which input of a two-input target (``connect``): its records arrive as SecondInput


@dataclass(frozen=True)
class Chain:
    """One job vertex: operators run by one task, head first, each before the ones it feeds."""

    name: str
    operators: tuple[str, ...]
    parallelism: int

    @property
    def head(self) -> str:
        return self.operators[0]


@dataclass
class JobGraph:
    operators: list[OperatorNode]
    edges: list[Edge] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.by_name = {op.name: op for op in self.operators}
        self._outputs: dict[str, list[Edge]] = {}
        self._source_subtasks: list[tuple[str, int]] | None = None
        self._blocking_chains: frozenset[str] | None = None
        self._regions: list[frozenset[str]] | None = None
        self.validate()
        self.chains = self._build_chains()
        self.chain_of = {op: chain.name for chain in self.chains for op in chain.operators}

    # -- structure ----------------------------------------------------------------------------
    def inputs(self, name: str) -> list[Edge]:
        return [e for e in self.edges if e.target == name]

    def outputs(self, name: str) -> list[Edge]:
        """The edges leaving ``name`` (computed once: a graph does not change; read, never modify)."""
        cached = self._outputs.get(name)
        if cached is None:
            cached = self._outputs[name] = [e for e in self.edges if e.source == name]
        return cached

    @property
    def source(self) -> OperatorNode:
        """The first source operator."""
        return self.sources[0]

    @property
    def sources(self) -> list[OperatorNode]:
        return [op for op in self.operators if op.kind == "source"]

    def source_subtasks(self) -> list[tuple[str, int]]:
        """(source operator, its subtask) for each global source index, in order: a scenario's
        ``source`` field counts across the source operators in their order (computed once)."""
        if self._source_subtasks is None:
            self._source_subtasks = [(op.name, i) for op in self.sources for i in range(op.parallelism)]
        return self._source_subtasks

    def topological_order(self) -> list[str]:
        order, indegree = [], {op.name: len(self.inputs(op.name)) for op in self.operators}
        ready = [op.name for op in self.operators if indegree[op.name] == 0]
        while ready:
            name = ready.pop(0)
            order.append(name)
            for edge in self.outputs(name):
                indegree[edge.target] -= 1
                if indegree[edge.target] == 0:
                    ready.append(edge.target)
        return order

    def is_chained(self, edge: Edge) -> bool:
        up, down = self.by_name[edge.source], self.by_name[edge.target]
        return (edge.partitioning == "forward" and up.kind != "source" and len(self.inputs(down.name)) == 1
                and up.parallelism == down.parallelism and up.chaining and down.chaining)

    def has_broadcast_input(self, name: str) -> bool:
        """Whether ``name`` is a broadcast-state operator (Flink's ``CoBroadcastWith(Non)KeyedOperator``):
        a broadcast edge is its second input; its broadcast state is operator state of each subtask."""
        return any(e.partitioning == "broadcast" for e in self.inputs(name))

    def network_inputs(self, chain: Chain) -> list[Edge]:
        """The edges entering a chain from other tasks (its head's inputs)."""
        return self.inputs(chain.head)

    def forward_group(self, chain_name: str) -> set[str]:
        """Chains joined by forward edges: they keep one parallelism (rescaled together)."""
        group, todo = set(), [chain_name]
        while todo:
            name = todo.pop()
            if name in group:
                continue
            group.add(name)
            for edge in self.edges:
                a, b = self.chain_of[edge.source], self.chain_of[edge.target]
                if edge.partitioning == "forward" and name in (a, b) and self.by_name[edge.source].kind != "source":
                    todo.append(b if a == name else a)
        return group

    def with_parallelism(self, chains: set[str], parallelism: int) -> "JobGraph":
        """The same graph with the operators of ``chains`` at another parallelism."""
        from dataclasses import replace
        ops = [replace(op, parallelism=parallelism) if self.chain_of[op.name] in chains else op for op in self.operators]
        return JobGraph(ops, list(self.edges))

    # -- FLIP-331: blocking outputs and pipelined regions ---------------------------------------
    def blocking_chains(self) -> frozenset[str]:
        """Chains holding an operator that emits only after end of stream: the flag marks the
        whole chain (Flink 1.20's ``StreamingJobGraphGenerator``), whose outputs become BLOCKING
        (computed once)."""
        if self._blocking_chains is None:
            self._blocking_chains = frozenset(
                chain.name for chain in self.chains
                if any(self.by_name[op].output_only_after_end_of_stream for op in chain.operators))
        return self._blocking_chains

    def is_blocking(self, edge: Edge) -> bool:
        return not self.is_chained(edge) and self.chain_of[edge.source] in self.blocking_chains()

    def regions(self) -> list[frozenset[str]]:
        """Pipelined regions: chains joined by pipelined (non-blocking) network edges; a region
        is scheduled, and restarted, as a whole (computed once; read, never modify)."""
        if self._regions is None:
            self._regions = self._pipelined_regions()
        return self._regions

    def _pipelined_regions(self) -> list[frozenset[str]]:
        parent = {chain.name: chain.name for chain in self.chains}

        def find(name: str) -> str:
            while parent[name] != name:
                name = parent[name]
            return name
        for edge in self.edges:
            if not self.is_chained(edge) and not self.is_blocking(edge):
                parent[find(self.chain_of[edge.source])] = find(self.chain_of[edge.target])
        regions: dict[str, set[str]] = {}
        for chain in self.chains:
            regions.setdefault(find(chain.name), set()).add(chain.name)
        order = [c.name for c in self.chains]
        return [frozenset(r) for r in sorted(regions.values(), key=lambda r: min(order.index(c) for c in r))]

    def slots_needed(self, chains: set[str]) -> int:
        """Slots for running ``chains`` at once: per slot-sharing group, its largest parallelism."""
        groups: dict[str, int] = {}
        for chain in self.chains:
            if chain.name in chains:
                group = self.by_name[chain.head].slot_sharing_group
                groups[group] = max(groups.get(group, 0), chain.parallelism)
        return sum(groups.values())

    # -- rules -------------------------------------------------------------------------------
    def validate(self) -> None:
        names = [op.name for op in self.operators]
        if len(set(names)) != len(names):
            raise GraphError(f"operator names must be unique: {names}")
        for op in self.operators:
            if op.kind not in KINDS:
                raise GraphError(f"operator {op.name!r}: kind {op.kind!r} is not one of {', '.join(KINDS)}")
            if op.parallelism < 1:
                raise GraphError(f"operator {op.name!r}: parallelism must be at least 1, got {op.parallelism}")
            if (op.kind in ("keyed_process", "process") or op.kind in STATELESS) and not op.function:
                raise GraphError(f"operator {op.name!r} ({op.kind}) needs a function")
            if (op.output_only_after_end_of_stream or op.internal_sorter_supported) and op.kind != "keyed_process":
                raise GraphError(f"operator {op.name!r} ({op.kind}): only a keyed_process operator declares "
                                 f"output_only_after_end_of_stream / internal_sorter_supported")
        if not any(op.kind == "source" for op in self.operators):
            raise GraphError("a job graph needs a source operator")
        for edge in self.edges:
            for end in (edge.source, edge.target):
                if end not in self.by_name:
                    raise GraphError(f"edge {edge.source}->{edge.target}: no operator named {end!r}")
            if edge.partitioning not in PARTITIONINGS:
                raise GraphError(f"edge {edge.source}->{edge.target}: partitioning {edge.partitioning!r} "
                                 f"is not one of {', '.join(PARTITIONINGS)}")
            up, down = self.by_name[edge.source], self.by_name[edge.target]
            if edge.partitioning == "forward" and up.parallelism != down.parallelism:
                raise GraphError(f"edge {edge.source}->{edge.target}: forward partitioning does not allow a change "
                                 f"of parallelism ({up.parallelism} -> {down.parallelism})")
            if down.kind == "source":
                raise GraphError(f"edge {edge.source}->{edge.target}: a source has no input")
            if up.kind in TERMINAL:
                raise GraphError(f"edge {edge.source}->{edge.target}: a {up.kind} has no output")
            if edge.partitioning == "broadcast" and (edge.input != 2 or down.kind not in ("keyed_process", "process")):
                raise GraphError(f"edge {edge.source}->{edge.target}: a broadcast edge is the second input of a "
                                 f"keyed_process or process operator (connect(broadcast_stream))")
            if down.kind == "keyed_process" and edge.partitioning not in ("keyed", "broadcast") and \
                    up.kind != "keyed_process":
                raise GraphError(f"edge {edge.source}->{edge.target}: a keyed_process operator reads a keyed stream "
                                 f"(partitioning 'keyed', or forward from a keyed_process: "
                                 f"reinterpretAsKeyedStream)")
            if edge.input not in (1, 2) or edge.input == 2 and (
                    down.kind not in ("keyed_process", "process")
                    or not any(e.input == 1 for e in self.edges if e.target == edge.target)):
                raise GraphError(f"edge {edge.source}->{edge.target}: input {edge.input!r}: an edge is input 1, or "
                                 f"input 2 of a keyed_process or process operator that also has an input 1 (connect)")
            if (down.kind == "sink_committer") != (up.kind == "sink_writer"):
                raise GraphError(f"edge {edge.source}->{edge.target}: a sink_writer feeds exactly its sink_committer")
        if len({(e.source, e.target, e.tag) for e in self.edges}) != len(self.edges):
            raise GraphError("two edges join the same operators")
        if len(self.topological_order()) != len(self.operators):
            raise GraphError("the job graph has a cycle")
        for op in self.operators:
            if op.kind != "source" and not self.inputs(op.name):
                raise GraphError(f"operator {op.name!r} has no input")
            if not self.outputs(op.name) and op.kind not in TERMINAL:
                raise GraphError(f"operator {op.name!r} ({op.kind}) has no output: end every path in a sink")
            if op.kind == "sink_writer" and len(self.outputs(op.name)) != 1:
                raise GraphError(f"operator {op.name!r}: a sink_writer has exactly one committer")

    def _build_chains(self) -> list[Chain]:
        order = self.topological_order()
        head_of: dict[str, str] = {}
        for name in order:
            ins = self.inputs(name)
            head_of[name] = head_of[ins[0].source] if len(ins) == 1 and self.is_chained(ins[0]) else name
        chains = []
        for name in order:
            if head_of[name] == name:
                members = tuple(n for n in order if head_of[n] == name)
                chains.append(Chain(" -> ".join(members), members, self.by_name[name].parallelism))
        return chains


def one_stage_graph(function: str, sources: int, parallelism: int) -> JobGraph:
    """The shape of every job before graphs: source --keyBy--> keyed operator -> 2PC sink."""
    return JobGraph([OperatorNode("source", "source", sources),
                     OperatorNode("process", "keyed_process", parallelism, function),
                     OperatorNode("sink", "sink", parallelism)],
                    [Edge("source", "process", "keyed"), Edge("process", "sink", "forward")])


def graph_from_json(document: dict, sources: int) -> JobGraph:
    """``{"operators": [{name, kind, parallelism?, function?, chaining?}], "edges": [{from, to,
    partitioning?}]}``; one source's parallelism is ``sources`` (several sources give theirs, adding
    up to ``sources``), others default to 1."""
    if not isinstance(document, dict) or set(document) - {"operators", "edges"}:
        raise GraphError("graph: an object with 'operators' and 'edges'")
    operators = []
    for i, op in enumerate(document.get("operators", [])):
        if not isinstance(op, dict) or not isinstance(op.get("name"), str) or not isinstance(op.get("kind"), str):
            raise GraphError(f"graph.operators[{i}]: an object with a string name and kind")
        unknown = set(op) - {"name", "kind", "parallelism", "function", "chaining", "output_only_after_end_of_stream",
                             "internal_sorter_supported", "slot_sharing_group"}
        if unknown:
            raise GraphError(f"graph.operators[{i}]: unknown field {sorted(unknown)[0]!r}")
        single = sum(1 for o in document.get("operators", []) if isinstance(o, dict) and o.get("kind") == "source") == 1
        parallelism = op.get("parallelism", sources if single else 1) if op["kind"] == "source" else op.get("parallelism", 1)
        if not isinstance(parallelism, int) or isinstance(parallelism, bool):
            raise GraphError(f"graph.operators[{i}]: parallelism must be an integer")
        flags = ("chaining", "output_only_after_end_of_stream", "internal_sorter_supported")
        if any(not isinstance(op.get(f, False), bool) for f in flags) or \
                not isinstance(op.get("function", ""), (str, type(None))) or \
                not isinstance(op.get("slot_sharing_group", ""), str):
            raise GraphError(f"graph.operators[{i}]: {', '.join(flags)} are true/false, function and "
                             f"slot_sharing_group names")
        operators.append(OperatorNode(op["name"], op["kind"], parallelism, op.get("function"), op.get("chaining", True),
                                      op.get("output_only_after_end_of_stream", False),
                                      op.get("internal_sorter_supported", False),
                                      op.get("slot_sharing_group", "default")))
    total = sum(op.parallelism for op in operators if op.kind == "source")
    if any(op.kind == "source" for op in operators) and total != sources:
        raise GraphError(f"graph: the sources' parallelisms add up to {total}, not params.sources ({sources})")
    edges = []
    for i, edge in enumerate(document.get("edges", [])):
        if not isinstance(edge, dict) or set(edge) - {"from", "to", "partitioning", "input"} or \
                not isinstance(edge.get("from"), str) or not isinstance(edge.get("to"), str):
            raise GraphError(f"graph.edges[{i}]: an object {{from, to, partitioning, input}}")
        if edge.get("input", 1) not in (1, 2) or isinstance(edge.get("input"), bool):
            raise GraphError(f"graph.edges[{i}]: input is 1 or 2, got {edge.get('input')!r}")
        edges.append(Edge(edge["from"], edge["to"], edge.get("partitioning", "forward"), input=edge.get("input", 1)))
    return JobGraph(operators, edges)


def graph_to_json(graph: JobGraph) -> dict:
    several = len(graph.sources) > 1
    return {"operators": [{"name": op.name, "kind": op.kind,
                           **({"parallelism": op.parallelism} if op.kind != "source" or several else {}),
                           **({"function": op.function} if op.function else {}),
                           **({} if op.chaining else {"chaining": False}),
                           **({"output_only_after_end_of_stream": True} if op.output_only_after_end_of_stream else {}),
                           **({"internal_sorter_supported": True} if op.internal_sorter_supported else {}),
                           **({"slot_sharing_group": op.slot_sharing_group} if op.slot_sharing_group != "default"
                              else {})} for op in graph.operators],
            "edges": [{"from": e.source, "to": e.target, "partitioning": e.partitioning,
                       **({"input": 2} if e.input == 2 else {})} for e in graph.edges]}

"""A job graph: operators joined by forward and keyed edges, and the chains Flink builds from it.

Operator kinds: ``source`` (exactly one; its subtasks read the scenario's inputs),
``keyed_process`` (a :class:`~streamproof.impl.operators.KeyedProcessFunction`; every input edge
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

KINDS = ("source", "keyed_process", "map", "filter", "flat_map", "sink", "sink_writer", "sink_committer")
STATELESS = ("map", "filter", "flat_map")
TERMINAL = ("sink", "sink_committer")
PARTITIONINGS = ("forward", "keyed")


class GraphError(ValueError):
    """A job graph Flink would refuse (or that this runtime cannot run), named in one line."""


@dataclass(frozen=True)
class OperatorNode:
    name: str
    kind: str
    parallelism: int
    function: str | None = None  # keyed_process / stateless: the function's name
    chaining: bool = True        # False: Flink's disableChaining()


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    partitioning: str = "forward"


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
        self.validate()
        self.chains = self._build_chains()
        self.chain_of = {op: chain.name for chain in self.chains for op in chain.operators}

    # -- structure ----------------------------------------------------------------------------
    def inputs(self, name: str) -> list[Edge]:
        return [e for e in self.edges if e.target == name]

    def outputs(self, name: str) -> list[Edge]:
        return [e for e in self.edges if e.source == name]

    @property
    def source(self) -> OperatorNode:
        return next(op for op in self.operators if op.kind == "source")

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
        ops = [OperatorNode(op.name, op.kind, parallelism if self.chain_of[op.name] in chains else op.parallelism,
                            op.function, op.chaining) for op in self.operators]
        return JobGraph(ops, list(self.edges))

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
            if (op.kind == "keyed_process" or op.kind in STATELESS) and not op.function:
                raise GraphError(f"operator {op.name!r} ({op.kind}) needs a function")
        sources = [op for op in self.operators if op.kind == "source"]
        if len(sources) != 1:
            raise GraphError(f"a job graph has exactly one source operator, found {len(sources)}")
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
            if down.kind == "keyed_process" and edge.partitioning != "keyed" and up.kind != "keyed_process":
                raise GraphError(f"edge {edge.source}->{edge.target}: a keyed_process operator reads a keyed stream "
                                 f"(partitioning 'keyed', or forward from a keyed_process: "
                                 f"reinterpretAsKeyedStream)")
            if (down.kind == "sink_committer") != (up.kind == "sink_writer"):
                raise GraphError(f"edge {edge.source}->{edge.target}: a sink_writer feeds exactly its sink_committer")
        if len({(e.source, e.target) for e in self.edges}) != len(self.edges):
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
    partitioning?}]}``; the source's parallelism is ``sources``, others default to 1."""
    if not isinstance(document, dict) or set(document) - {"operators", "edges"}:
        raise GraphError("graph: an object with 'operators' and 'edges'")
    operators = []
    for i, op in enumerate(document.get("operators", [])):
        if not isinstance(op, dict) or not isinstance(op.get("name"), str) or not isinstance(op.get("kind"), str):
            raise GraphError(f"graph.operators[{i}]: an object with a string name and kind")
        unknown = set(op) - {"name", "kind", "parallelism", "function", "chaining"}
        if unknown:
            raise GraphError(f"graph.operators[{i}]: unknown field {sorted(unknown)[0]!r}")
        parallelism = sources if op["kind"] == "source" else op.get("parallelism", 1)
        if op["kind"] == "source" and op.get("parallelism", sources) != sources:
            raise GraphError(f"graph.operators[{i}]: the source's parallelism is params.sources ({sources})")
        if not isinstance(parallelism, int) or isinstance(parallelism, bool):
            raise GraphError(f"graph.operators[{i}]: parallelism must be an integer")
        if not isinstance(op.get("chaining", True), bool) or not isinstance(op.get("function", ""), (str, type(None))):
            raise GraphError(f"graph.operators[{i}]: chaining is true/false, function a name")
        operators.append(OperatorNode(op["name"], op["kind"], parallelism, op.get("function"), op.get("chaining", True)))
    edges = []
    for i, edge in enumerate(document.get("edges", [])):
        if not isinstance(edge, dict) or set(edge) - {"from", "to", "partitioning"} or \
                not isinstance(edge.get("from"), str) or not isinstance(edge.get("to"), str):
            raise GraphError(f"graph.edges[{i}]: an object {{from, to, partitioning}}")
        edges.append(Edge(edge["from"], edge["to"], edge.get("partitioning", "forward")))
    return JobGraph(operators, edges)


def graph_to_json(graph: JobGraph) -> dict:
    return {"operators": [{"name": op.name, "kind": op.kind, **({"parallelism": op.parallelism} if op.kind != "source" else {}),
                           **({"function": op.function} if op.function else {}),
                           **({} if op.chaining else {"chaining": False})} for op in graph.operators],
            "edges": [{"from": e.source, "to": e.target, "partitioning": e.partitioning} for e in graph.edges]}

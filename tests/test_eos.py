"""FLIP-331 (Flink 1.20): operators that emit only after end of stream, blocking outputs, region
scheduling with slots, no checkpoints in the blocking phase; ports of Flink's tests."""

import json
from collections import Counter
from pathlib import Path

import pytest

from streamproof.impl.graph.job_graph import Edge, GraphError, JobGraph, OperatorNode
from streamproof.impl.graph.job_runtime import NoResourceAvailableError
from streamproof.impl.graph.job import GraphJobSpec
from streamproof.impl.operators.keyed_process_operator import StreamRecord
from streamproof.impl.graph.sim import simulate
from streamproof.impl.tasks.stream_task import TaskConfig, Watermark
from streamproof.properties import registry
from streamproof.properties.explore import explore
from streamproof.properties.job.check import model_reference
from streamproof.properties.job.eos import REACHABILITY
from streamproof.properties.job.functions import FUNCTIONS, STATELESS_FUNCTIONS
from streamproof.properties.job.steps import with_declared_attributes
from streamproof.properties.scenario import load_scenario

FUNCS = {**FUNCTIONS, **STATELESS_FUNCTIONS}
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "job" / "eos" / "flip-331-two-sources.json"
MAX = 2**63 - 1


def node(name, kind, p=1, function=None, chaining=True, flag=False, group="default"):
    return OperatorNode(name, kind, p, function, chaining, flag, False, group)


# -- StreamingJobGraphGeneratorWithOperatorAttributesTest ------------------------------------------
def test_flagged_chain_has_blocking_outputs_case1():
    """Case 1: source -> keyBy -> transform (flagged) -> map, sink with chaining disabled: three
    vertices; "transform -> map" has a BLOCKING output, the source a pipelined one."""
    graph = JobGraph([node("source", "source"), node("transform", "keyed_process", 1, "keyed_identity", flag=True),
                      node("map", "map", 1, "identity"), node("sink", "sink", chaining=False)],
                     [Edge("source", "transform", "keyed"), Edge("transform", "map"), Edge("map", "sink")])
    assert [c.name for c in graph.chains] == ["source", "transform -> map", "sink"]
    assert graph.blocking_chains() == {"transform -> map"}
    assert graph.is_blocking(graph.inputs("sink")[0]) and not graph.is_blocking(graph.inputs("transform")[0])
    assert graph.regions() == [{"source", "transform -> map"}, {"sink"}]


def test_chaining_disabled_only_the_flagged_vertex_blocks_case2():
    """Case 2: env.disableOperatorChaining(): four vertices; only "transform" has a BLOCKING output,
    "map" stays pipelined (the flag does not travel downstream across vertices)."""
    graph = JobGraph([node("source", "source"),
                      node("transform", "keyed_process", 1, "keyed_identity", chaining=False, flag=True),
                      node("map", "map", 1, "identity", chaining=False), node("sink", "sink", chaining=False)],
                     [Edge("source", "transform", "keyed"), Edge("transform", "map"), Edge("map", "sink")])
    assert len(graph.chains) == 4 and graph.blocking_chains() == {"transform"}
    assert graph.is_blocking(graph.inputs("map")[0]) and not graph.is_blocking(graph.inputs("sink")[0])


def test_flag_propagates_to_the_whole_chain_upstream_of_it():
    """A flagged operator chained after another one: the chain's every network output blocks,
    the upstream operator's own output included."""
    graph = JobGraph([node("source", "source"), node("a", "keyed_process", 1, "keyed_identity"),
                      node("b", "keyed_process", 1, "keyed_identity", flag=True), node("side", "sink", chaining=False),
                      node("sink", "sink", chaining=False)],
                     [Edge("source", "a", "keyed"), Edge("a", "b"), Edge("a", "side"), Edge("b", "sink")])
    assert graph.blocking_chains() == {"a -> b"}
    assert graph.is_blocking(graph.inputs("side")[0]) and graph.is_blocking(graph.inputs("sink")[0])


def test_window_operator_declares_the_attributes():
    graph = with_declared_attributes(JobGraph(
        [node("source", "source"), node("w", "keyed_process", 1, "eos_window_sum"),
         node("t", "keyed_process", 1, "tumbling_window_sum"), node("s1", "sink"), node("s2", "sink")],
        [Edge("source", "w", "keyed"), Edge("source", "t", "keyed"), Edge("w", "s1"), Edge("t", "s2")]))
    assert graph.by_name["w"].output_only_after_end_of_stream and graph.by_name["w"].internal_sorter_supported
    assert not graph.by_name["t"].output_only_after_end_of_stream


def test_only_keyed_operators_declare_the_flag():
    with pytest.raises(GraphError, match="only a keyed_process operator declares"):
        JobGraph([node("source", "source"), node("m", "map", 1, "identity", flag=True), node("s", "sink")],
                 [Edge("source", "m", "keyed"), Edge("m", "s")])


# -- scheduling -------------------------------------------------------------------------------------
def flip_example(flag=True):
    """FLIP-331's deployment example: Source1 -> Process1 (output only at the end) -> Process2 <-
    Source2, four slot-sharing groups."""
    return with_declared_attributes(JobGraph(
        [node("source1", "source", group="s1"),
         node("process1", "keyed_process", 1, "eos_window_sum" if flag else "keyed_identity", group="p1"),
         node("source2", "source", group="s2"), node("process2", "keyed_process", 1, "keyed_identity", group="p2"),
         node("sink", "sink", group="p2")],
        [Edge("source1", "process1", "keyed"), Edge("process1", "process2", "keyed"),
         Edge("source2", "process2", "keyed"), Edge("process2", "sink")]))


SOURCES = [[StreamRecord("a", 1, 1), StreamRecord("b", 2, 2), StreamRecord("a", 3, 3), Watermark(3)],
           [StreamRecord("a", 10, 5), StreamRecord("c", 1, 6), Watermark(6)]]


def test_flip_deployment_example_fails_without_the_flag_and_runs_with_it():
    """Two slots: without the flag the one pipelined region needs four (NoResourceAvailable); with
    it Source2 and Process2 are deployed once Source1 and Process1 finished and freed theirs."""
    with pytest.raises(NoResourceAvailableError, match="needs 4 slots, the cluster has 2"):
        simulate(GraphJobSpec(flip_example(False), SOURCES, FUNCS, slots=2), 0)
    run = simulate(GraphJobSpec(flip_example(), SOURCES, FUNCS, slots=2, checkpoint_interval=2,
                                      config=TaskConfig(interruptible_timers=True)), 0)
    assert Counter(run.committed) == Counter([("a", 4), ("b", 2), 10, 1])
    (_, first, region1), (_, later, region2) = run.metrics["deploy_log"]
    assert region1 == ["process1", "source1"] and region2 == ["process2 -> sink", "source2"]
    finished = {chain: step for _, chain, _, step in run.metrics["finish_log"]}
    assert first == 0 and later >= finished["process1"]


def test_checkpoints_start_only_after_the_blocking_vertex_finished():
    """DefaultSchedulerTest#testStartCheckpointOnlyAfterVertexWithBlockingEdgeFinished: while the
    blocking producer runs every due checkpoint is declined (BLOCKING_OUTPUT_EXIST); afterwards
    they run, and the sink commits through them."""
    run = simulate(GraphJobSpec(flip_example(), SOURCES, FUNCS, checkpoint_interval=2), 1)
    finished = {chain: step for _, chain, _, step in run.metrics["finish_log"]}
    assert run.metrics["declined"] > 0
    assert run.metrics["trigger_log"] and all(step >= finished["process1"] and not blocking
                                              for _, _, step, blocking in run.metrics["trigger_log"])


def test_stop_with_savepoint_fails_while_a_blocking_vertex_runs():
    scenario = json.loads(EXAMPLE.read_text())
    scenario["params"]["drain"] = False
    scenario["steps"] = [s for s in scenario["steps"] if s["op"] != "fail"]
    verdict = registry.get("eos.output-only-after-end").check(load_scenario(json.dumps(scenario)))
    assert not verdict.holds and "BLOCKING_OUTPUT_EXIST" in verdict.message


def test_the_flip_example_scenario_holds_every_property():
    scenario = load_scenario(EXAMPLE.read_text())
    for prop in registry.for_family("job"):
        verdict = prop.check(scenario)
        assert verdict.holds, (prop.name, verdict.invariant, verdict.message)
    assert Counter(model_reference(scenario))  # the model's reference for a two-source graph


def test_eos_reachability():
    """Failures do land in the batch phase and checkpoints are declined there."""
    result = explore(registry.get("eos.exactly-once"), examples=200, seed=3)
    assert result.holds, result.message
    other = explore(registry.get("eos.sorted-equals-streaming"), examples=200, seed=3)
    assert other.holds, other.message
    print("\neos reachability:", dict(sorted(other.reach.items())))
    for label in REACHABILITY:
        assert other.reach.get(label, 0) > 0, f"never reached: {label}"

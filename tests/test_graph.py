"""Job graphs: the graph rules, chaining, the graph runtime against the one-stage runtime and the
model, the chained duplicate watermark of Flink 2.3, and liveness."""

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from streamproof.impl.graph.job_graph import Edge, GraphError, JobGraph, OperatorNode, graph_from_json, one_stage_graph
from streamproof.impl.graph.job import GraphJobSpec
from streamproof.impl.operators.keyed_process_operator import StreamRecord
from streamproof.impl.graph.sim import Fault, simulate
from streamproof.impl.tasks.stream_task import TaskConfig, Watermark
from streamproof.properties import registry
from streamproof.properties.explore import explore, reduce_scenario
from streamproof.properties.job.catalogue import GRAPH_REACHABILITY, graph_scenarios, job_scenarios
from streamproof.properties.job.check import _spec, graph_spec, model_reference
from streamproof.properties.job.functions import FUNCTIONS, STATELESS_FUNCTIONS
from streamproof.properties.job.steps import faults_of, job_params
from streamproof.properties.registry import Property
from streamproof.properties.scenario import ScenarioError, dump_scenario, load_scenario

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "job" / "graph"
FUNCS = {**FUNCTIONS, **STATELESS_FUNCTIONS}


def node(name, kind, p=2, function=None, chaining=True):
    return OperatorNode(name, kind, p, function, chaining)


# -- the graph and Flink's chaining rules ---------------------------------------------------------
def test_chains_follow_flinks_rules():
    graph = JobGraph(
        [node("src", "source"), node("w", "keyed_process", 2, "window_sum"), node("m", "map", 2, "double"),
         node("n", "map", 2, "identity", chaining=False), node("x", "map", 3, "last"), node("k", "keyed_process", 3, "window_sum"),
         node("sink", "sink", 3)],
        [Edge("src", "w", "keyed"), Edge("w", "m"), Edge("m", "n"), Edge("n", "k", "keyed"), Edge("k", "x"),
         Edge("x", "sink")])
    assert [c.operators for c in graph.chains] == [("src",), ("w", "m"), ("n",), ("k", "x", "sink")]
    # a keyed edge never chains; disableChaining() starts a chain; same parallelism, one input
    assert not graph.is_chained(graph.inputs("w")[0]) and not graph.is_chained(graph.inputs("n")[0])
    assert graph.forward_group(graph.chain_of["n"]) == {"w -> m", "n"}


def test_fan_in_is_not_chained():
    graph = JobGraph([node("src", "source"), node("a", "keyed_process", 2, "window_sum"),
                      node("b", "keyed_process", 2, "timer_chain"), node("sink", "sink")],
                     [Edge("src", "a", "keyed"), Edge("src", "b", "keyed"), Edge("a", "sink"), Edge("b", "sink")])
    assert ("sink",) in [c.operators for c in graph.chains]  # two inputs: its own task


@pytest.mark.parametrize("operators, edges, message", [
    ([node("src", "source"), node("w", "keyed_process", 3, "window_sum"), node("s", "sink", 2)],
     [Edge("src", "w", "keyed"), Edge("w", "s")], "forward partitioning does not allow a change of parallelism"),
    ([node("src", "source"), node("m", "map", 2, "double"), node("w", "keyed_process", 2, "window_sum"), node("s", "sink")],
     [Edge("src", "m", "keyed"), Edge("m", "w"), Edge("w", "s")], "reads a keyed stream"),
    ([node("src", "source"), node("m", "map", 2, "double")], [Edge("src", "m", "keyed")], "has no output"),
    ([node("src", "source"), node("a", "map", 2, "double"), node("b", "map", 2, "double"), node("s", "sink")],
     [Edge("src", "a", "keyed"), Edge("a", "b"), Edge("b", "a"), Edge("b", "s")], "cycle"),
    ([node("src", "source"), node("s", "sink")], [Edge("src", "s", "shuffle")], "partitioning 'shuffle'"),
    ([node("src", "source"), node("s", "sink"), node("t", "sink")], [Edge("src", "s", "keyed")], "has no input"),
    ([node("src", "source"), node("w", "sink_writer"), node("s", "sink")], [Edge("src", "w", "keyed"), Edge("w", "s")],
     "a sink_writer feeds exactly its sink_committer"),
    ([node("src", "source"), node("w", "window", 2)], [], "kind 'window' is not one of"),
])
def test_bad_graphs_are_one_line_errors(operators, edges, message):
    with pytest.raises(GraphError, match=message) as error:
        JobGraph(operators, edges)
    assert "\n" not in str(error.value)


def test_bad_graph_in_a_scenario_names_the_problem():
    text = (EXAMPLES / "chain-duplicate-watermark.json").read_text()
    document = json.loads(text)
    document["params"]["graph"]["edges"][1]["partitioning"] = "keyed"
    document["params"]["graph"]["operators"][2]["parallelism"] = 99
    document["params"]["graph"]["operators"][3]["parallelism"] = 99
    with pytest.raises(ScenarioError, match="parallelism <= max_parallelism"):
        load_scenario(json.dumps(document))
    document["params"]["graph"]["operators"][2]["function"] = "nope"
    document["params"]["graph"]["operators"][2]["parallelism"] = 1
    document["params"]["graph"]["operators"][3]["parallelism"] = 1
    with pytest.raises(ScenarioError, match="function one of"):
        load_scenario(json.dumps(document))
    document["params"]["graph"]["operators"][2]["function"] = "window_sum"
    document["params"]["graph"]["edges"][1]["partitioning"] = "forward"
    document["params"]["graph"]["operators"][3]["parallelism"] = 2
    with pytest.raises(ScenarioError, match="forward partitioning does not allow"):
        load_scenario(json.dumps(document))
    document["steps"].append({"op": "rescale", "at": 5, "parallelism": 2, "operator": "nowhere"})
    document["params"]["graph"]["operators"][3]["parallelism"] = 1
    with pytest.raises(ScenarioError, match="an operator of params.graph"):
        load_scenario(json.dumps(document))


def test_graph_json_round_trip():
    from streamproof.impl.graph.job_graph import graph_to_json
    graph = one_stage_graph("window_sum", 2, 3)
    again = graph_from_json(graph_to_json(graph), 2)
    assert again.operators == graph.operators and again.edges == graph.edges


# -- the runtime: one stage, many stages ------------------------------------------------------------
SETTINGS = settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))


@SETTINGS
@given(job_scenarios())
def test_one_stage_jobs_commit_the_same_on_both_runtimes(scenario):
    """Every job scenario without a graph is the one-stage graph: same committed multiset."""
    seed = job_params(scenario)["seed"]
    faults = faults_of(scenario)
    old = simulate(_spec(scenario, None), seed, faults)
    new = simulate(graph_spec(scenario), seed, faults)
    assert Counter(old.committed) == Counter(new.committed) == model_reference(scenario)


@SETTINGS
@given(graph_scenarios())
def test_random_graphs_commit_the_model_reference(scenario):
    """Faults, rescales, interruptions: the committed output equals model/job.py's for the graph."""
    run = simulate(graph_spec(scenario), job_params(scenario)["seed"], faults_of(scenario))
    assert Counter(run.committed) == model_reference(scenario)


def three_stages():
    graph = JobGraph(
        [node("src", "source", 2), node("w1", "keyed_process", 2, "mailing_window_sum"),
         node("w2", "keyed_process", 2, "yielding_window_sum"), node("r", "flat_map", 2, "rekey"),
         node("t", "keyed_process", 3, "timer_chain"), node("writer", "sink_writer", 3),
         node("committer", "sink_committer", 3, chaining=False)],
        [Edge("src", "w1", "keyed"), Edge("w1", "w2"), Edge("w2", "r"), Edge("r", "t", "keyed"),
         Edge("t", "writer"), Edge("writer", "committer")])
    sources = [[StreamRecord(k, v, t) for k, v, t in [("a", 1, 1), ("b", 2, 3), ("a", 3, 12), ("c", 1, 15)]]
               + [Watermark(15)], [StreamRecord("b", 5, 2), Watermark(9), StreamRecord("a", 1, 21)]]
    return graph, sources


@pytest.mark.parametrize("faults", [
    (),
    (Fault("fail", at=25),),
    (Fault("fail_in_interrupted_firing", nth=1), Fault("fail", at=60)),
    (Fault("rescale", at=30, parallelism=1, operator="w1"), Fault("rescale", at=70, parallelism=2, operator="t")),
])
@pytest.mark.parametrize("unaligned", [False, True])
def test_three_stages_lose_and_duplicate_nothing(faults, unaligned):
    graph, sources = three_stages()
    config = TaskConfig(interruptible_timers=True, unaligned_checkpoints=unaligned)
    reference = Counter(simulate(GraphJobSpec(graph, sources, FUNCS, config=TaskConfig()), 0).committed)
    assert len(reference) > 3
    for seed in range(6):
        spec = GraphJobSpec(graph, sources, FUNCS, config=config, checkpoint_interval=4, async_mail_rate=0.5)
        run = simulate(spec, seed, faults)
        assert Counter(run.committed) == reference, (seed, run.events[-4:])
        assert run.failovers == len(run.faults_applied) and run.metrics["stranded"] == 0


def test_end_of_input_and_final_checkpoints_travel_stage_by_stage():
    graph, sources = three_stages()
    run = simulate(GraphJobSpec(graph, sources, FUNCS, config=TaskConfig(interruptible_timers=True)), 1)
    logs = {label: log for _, label, log in run.output_logs}
    for label, log in logs.items():
        if log:  # MAX_WATERMARK, then EndOfData, nothing after
            assert log[-1] == ("end_of_data",) and ("watermark", 2**63 - 1) in log, label
    assert run.metrics["final"] and all(due == 0 for _, _, _, due in run.metrics["final"])


# -- Flink 2.3's chained duplicate watermark ---------------------------------------------------------
def test_the_chained_duplicate_watermark_example():
    scenario = load_scenario((EXAMPLES / "chain-duplicate-watermark.json").read_text())
    prop = registry.get("job.watermarks")
    verdict = prop.check(scenario)
    assert not verdict.holds and "B[0]: 30 after 30" in verdict.message
    corrected = replace(scenario, params={**scenario.params, "watermark_mode": "corrected"})
    assert prop.check(corrected).holds
    run = simulate(graph_spec(scenario), 1)
    marks = {label: [e[1] for e in log if e[0] == "watermark"] for _, label, log in run.output_logs}
    assert marks["A[0]"] == [19, 30, 2**63 - 1] and marks["B[0]"] == [30, 30, 2**63 - 1]


def test_checker_finds_the_duplicate_in_flink_mode_shrunk_and_replayable():
    """The property finds it on random graphs on its own; the scenario is shrunk, replays from
    its file, and the same scenario holds in the corrected mode."""
    hunting = Property("job.watermarks", "job", "", registry.get("job.watermarks").check,
                       strategy=lambda: graph_scenarios(watermark_mode="flink-2.3"))
    result = explore(hunting, examples=200, seed=0, shrink=False)  # detection; then our reduction pass
    assert not result.holds and result.invariant == "watermarks-strictly-increase"
    reduced = reduce_scenario(hunting, result.scenario, result.invariant, seconds=10)
    assert len(reduced.steps) <= len(result.scenario.steps)
    scenario = load_scenario(dump_scenario(reduced))
    assert len(scenario.steps) <= 10, dump_scenario(scenario)
    assert not registry.get("job.watermarks").check(scenario).holds
    corrected = replace(scenario, params={**scenario.params, "watermark_mode": "corrected"})
    assert registry.get("job.watermarks").check(corrected).holds


def test_corrected_mode_never_repeats_a_watermark():
    result = explore(Property("job.watermarks", "job", "", registry.get("job.watermarks").check,
                              strategy=lambda: graph_scenarios(watermark_mode="corrected")),
                     examples=100, seed=1)
    assert result.holds, result.message


# -- liveness ------------------------------------------------------------------------------------
def test_flink_mode_freezes_the_output_watermark_under_steady_mail():
    """Without intermediate watermarks (Flink 2.3, FLINK-40101) steady mail keeps the output
    watermark behind; the corrected mode emits what the timers reached."""
    prop = registry.get("job.watermark-liveness")
    frozen = explore(Property(prop.name, "job", "", prop.check,
                              strategy=lambda: graph_scenarios(watermark_mode="flink-2.3", steady_mail=True)),
                     examples=100, seed=0, shrink=False)
    assert not frozen.holds and frozen.invariant == "output-watermark-advances"


def test_graph_reachability():
    """The graph cases the liveness and exactly-once properties are meant to see do happen."""
    result = explore(registry.get("job.drain-liveness"), examples=300, seed=7)
    assert result.holds, result.message
    print("\ngraph reachability:", dict(sorted(result.reach.items())))
    for label in GRAPH_REACHABILITY + ("unaligned checkpoint carried in-flight records",
                                       "processing-time timer mail ran"):
        assert result.reach.get(label, 0) > 0, f"never reached: {label}"

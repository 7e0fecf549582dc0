"""FLIP-331 properties (``eos.*``) of job scenarios whose graph holds an operator that emits only
after the end of its input (a global window with the end-of-stream trigger). They read the run's
logs against the graph's declared attributes with the predicates of ``model/eos.py``, never the
runtime's own notion of blocking:

  * ``eos.output-only-after-end``: a flagged operator emits nothing before MAX_WATERMARK reached it;
  * ``eos.no-checkpoint-while-blocking``: no checkpoint is triggered while a task of a chain holding
    a flagged operator runs, and no task fed through a blocking edge runs before the chain feeding
    it finished;
  * ``eos.sorted-equals-streaming``: the sorted fast path over a flagged aggregate's input gives
    what the streaming window operator emitted;
  * ``eos.exactly-once``: failures in the batch phase (no checkpoint to restore: inputs re-read)
    lose and duplicate nothing (``job.exactly-once`` on these scenarios).
"""

from __future__ import annotations

from collections import Counter

from hypothesis import strategies as st

from streamproof.impl.operators import end_of_stream
from streamproof.model import eos as eos_model
from streamproof.impl.operators.windows import SumAggregate
from streamproof.properties.job.inputs import BOOLEANS, _inputs, integers, sampled
from streamproof.properties.job.check import check_job, faulty_run, graph_spec, reference_run
from streamproof.properties.job.functions import count_and_sum, number
from streamproof.properties.job.steps import Fail, FailInInterruptedFiring, graph_of, sources_of
from streamproof.properties.reach import note
from streamproof.properties.registry import Property, register
from streamproof.properties.scenario import Scenario
from streamproof.properties.verdict import Verdict


def _flagged(scenario: Scenario) -> tuple:
    graph = graph_of(scenario)
    flagged = {op.name for op in graph.operators if op.output_only_after_end_of_stream}
    chains = {graph.chain_of[name] for name in flagged}
    return graph, flagged, chains


def _run(scenario: Scenario, prop: str):
    faulty = faulty_run(scenario, on_graph=True)  # a one-stage job runs as its graph (nothing flagged: holds)
    if isinstance(faulty, str):
        return Verdict(prop, False, [], "job-finishes", faulty)
    if faulty.metrics.get("declined"):
        note("checkpoint declined while blocking (BLOCKING_OUTPUT_EXIST)")
    if any(e[0] == "failover" for e in faulty.events):
        note("failure during an end-of-stream job")
    return faulty


def _output_only_after_end(scenario: Scenario, run) -> tuple | None:
    _, flagged, _ = _flagged(scenario)
    for attempt, label, name, log, ended_at in run.metrics["keyed_logs"]:
        problem = eos_model.output_only_after_end(f"attempt {attempt} {label}", log, ended_at) \
            if name in flagged else None
        if problem:
            return "no-output-before-end-of-input", problem
    return None


def _scheduling(scenario: Scenario, run) -> tuple | None:
    graph, _, chains = _flagged(scenario)
    m = run.metrics
    problem = eos_model.no_checkpoint_while_blocking(m["trigger_log"], m["finish_log"], m["layouts"], chains)
    if problem:
        return "no-checkpoint-while-blocking", problem
    feeds = {(graph.chain_of[e.source], graph.chain_of[e.target]) for e in graph.edges
             if graph.chain_of[e.source] in chains and not graph.is_chained(e)}
    problem = eos_model.consumers_after_producers(m["started"], m["finish_log"], m["layouts"], feeds)
    if problem:
        return "consumer-runs-after-producer-finished", problem
    return None


def _sorted_equals_streaming(scenario: Scenario, run) -> tuple | None:
    """In the failure-free run, each flagged ``eos_window_sum`` reading sources directly emitted what
    the sorted path computes from those sources' records."""
    reference = reference_run(scenario, on_graph=True)
    graph, flagged, _ = _flagged(scenario)
    subtasks = graph.source_subtasks()
    inputs = sources_of(scenario)
    def records_of(operators: set) -> list:
        return [(r.key, r.value, r.timestamp) for i, (op, _) in enumerate(subtasks) if op in operators
                for r in inputs[i] if hasattr(r, "key")]

    for name in flagged:
        node = graph.by_name[name]
        ins = graph.inputs(name)
        if node.function == "eos_window_sum" and all(graph.by_name[e.source].kind == "source" for e in ins):
            want = Counter(end_of_stream.sorted_window_aggregate(records_of({e.source for e in ins}),
                                                                 SumAggregate(number)))
        elif node.function == "eos_co_group" and all(
                graph.by_name[e.source].function in ("tag_left", "tag_right")
                and all(graph.by_name[f.source].kind == "source" for f in graph.inputs(e.source)) for e in ins):
            sides = {graph.by_name[e.source].function: {f.source for f in graph.inputs(e.source)} for e in ins}
            note("sorted co_group compared")
            want = Counter(end_of_stream.sorted_co_group(records_of(sides.get("tag_left", set())),
                                                         records_of(sides.get("tag_right", set())), count_and_sum))
        else:
            continue
        got = Counter(e[1] for attempt, _, op, log, _ in reference.metrics["keyed_logs"] if op == name
                      for e in log if e[0] == "record")
        note("sorted path compared")
        if got != want:
            extra, missing = sorted(got - want, key=repr)[:3], sorted(want - got, key=repr)[:3]
            return "sorted-equals-streaming", f"{name}: streaming extra {extra}, missing {missing}"
    return None


CHECKS = {
    "eos.output-only-after-end": _output_only_after_end,
    "eos.no-checkpoint-while-blocking": _scheduling,
    "eos.sorted-equals-streaming": _sorted_equals_streaming,
}


def check_eos(scenario: Scenario, prop: str) -> Verdict:
    if prop == "eos.exactly-once":
        verdict = check_job(scenario, "job.exactly-once")
        return Verdict(prop, verdict.holds, verdict.observed, verdict.invariant, verdict.message)
    run = _run(scenario, prop)
    if isinstance(run, Verdict):
        return run
    problem = CHECKS[prop](scenario, run)
    return Verdict(prop, False, [], *problem) if problem else Verdict(prop, True, [])


@st.composite
def eos_scenarios(draw) -> Scenario:
    """FLIP-331 jobs: source1 -> keyBy -> end-of-stream window (sometimes a chained map after it) ->
    keyBy -> a keyed operator (sometimes also fed by a second source: FLIP-331's example) -> sink;
    slot-sharing groups and 2 slots or plenty; failures, also inside interrupted firings."""
    if draw(integers(0, 3), label="co_group") == 3:
        return draw(co_group_scenarios())
    second = draw(BOOLEANS, label="second source")
    slots = draw(sampled(None, 2)) if second else None  # FLIP-331's example: 4 groups, 2 slots
    p1, p2 = (1, 1) if slots else (draw(integers(1, 2)), draw(integers(1, 3)))
    operators = [{"name": "source1", "kind": "source", "parallelism": 1, "slot_sharing_group": "s1"},
                 {"name": "process1", "kind": "keyed_process", "parallelism": p1, "function": "eos_window_sum",
                  "slot_sharing_group": "p1"}]
    edges = [{"from": "source1", "to": "process1", "partitioning": "keyed"}]
    last = "process1"
    if draw(BOOLEANS, label="chained map"):
        operators.append({"name": "map", "kind": "flat_map", "parallelism": p1, "function": "identity",
                          "slot_sharing_group": "p1"})
        edges.append({"from": "process1", "to": "map", "partitioning": "forward"})
        last = "map"
    operators.append({"name": "process2", "kind": "keyed_process", "parallelism": p2,
                      "function": draw(sampled("keyed_identity", "processing_buffer")),
                      "slot_sharing_group": "p2"})
    operators.append({"name": "sink", "kind": "sink", "parallelism": p2, "slot_sharing_group": "p2"})
    edges += [{"from": last, "to": "process2", "partitioning": "keyed"},
              {"from": "process2", "to": "sink", "partitioning": "forward"}]
    sources = 1
    if second:
        operators.insert(2, {"name": "source2", "kind": "source", "parallelism": 1, "slot_sharing_group": "s2"})
        edges.append({"from": "source2", "to": "process2", "partitioning": "keyed"})
        sources = 2
    steps = _inputs(draw, sources)
    for _ in range(draw(integers(0, 2), label="failures")):
        steps.append(Fail(draw(integers(1, 300)), None))
    if draw(BOOLEANS):
        steps.append(FailInInterruptedFiring(draw(integers(1, 4)), None))
    params = {"graph": {"operators": operators, "edges": edges}, "sources": sources,
              "max_parallelism": draw(sampled(4, 8)), "checkpoint_interval": draw(integers(2, 20)),
              "unaligned": draw(BOOLEANS), "async_mail_rate": draw(sampled(0.0, 0.3, 0.7)),
              "seed": draw(integers(0, 2**16)), "slots": slots}
    return Scenario(family="job", steps=tuple(steps), params=params)


@st.composite
def co_group_scenarios(draw) -> Scenario:
    """FLIP-331's co_group workload: two sources, each tagged by a map, co-grouped per key in an
    end-of-stream global window, then a keyed operator and a sink."""
    p = draw(integers(1, 2))
    operators = [{"name": "left", "kind": "source", "parallelism": 1}, {"name": "right", "kind": "source", "parallelism": 1},
                 {"name": "tag_l", "kind": "map", "parallelism": 1, "function": "tag_left"},
                 {"name": "tag_r", "kind": "map", "parallelism": 1, "function": "tag_right"},
                 {"name": "co_group", "kind": "keyed_process", "parallelism": p, "function": "eos_co_group"},
                 {"name": "process2", "kind": "keyed_process", "parallelism": p, "function": "keyed_identity"},
                 {"name": "sink", "kind": "sink", "parallelism": p}]
    edges = [{"from": "left", "to": "tag_l"}, {"from": "right", "to": "tag_r"},
             {"from": "tag_l", "to": "co_group", "partitioning": "keyed"},
             {"from": "tag_r", "to": "co_group", "partitioning": "keyed"},
             {"from": "co_group", "to": "process2", "partitioning": "keyed"}, {"from": "process2", "to": "sink"}]
    steps = _inputs(draw, 2)
    for _ in range(draw(integers(0, 2), label="failures")):
        steps.append(Fail(draw(integers(1, 300)), None))
    params = {"graph": {"operators": operators, "edges": edges}, "sources": 2,
              "max_parallelism": draw(sampled(4, 8)), "checkpoint_interval": draw(integers(2, 20)),
              "unaligned": draw(BOOLEANS), "async_mail_rate": draw(sampled(0.0, 0.3, 0.7)),
              "seed": draw(integers(0, 2**16))}
    return Scenario(family="job", steps=tuple(steps), params=params)


SUMMARIES = {
    "eos.output-only-after-end": "An operator that emits only after end of stream (FLIP-331) emits nothing "
                                 "before MAX_WATERMARK reached it.",
    "eos.no-checkpoint-while-blocking": "No checkpoint is triggered while a blocking-output chain runs, and no "
                                        "region is deployed before the chains feeding it through blocking edges "
                                        "finished.",
    "eos.sorted-equals-streaming": "The sorted fast path of an end-of-stream aggregate gives what the streaming "
                                   "window operator emits.",
    "eos.exactly-once": "Failures in the batch phase (inputs re-read, no checkpoint) and later lose and "
                        "duplicate nothing.",
}
REACHABILITY = ("failure during an end-of-stream job", "checkpoint declined while blocking (BLOCKING_OUTPUT_EXIST)",
                "sorted path compared", "sorted co_group compared")

for _name, _summary in SUMMARIES.items():
    register(Property(name=_name, family="job", summary=_summary,
                      check=(lambda name: lambda scenario: check_eos(scenario, name))(_name),
                      strategy=eos_scenarios, reachability=REACHABILITY))

_ = graph_spec  # (the runs go through properties.job.check)

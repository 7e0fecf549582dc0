"""Registers the job properties and the Hypothesis strategy of ``job`` scenarios."""

from __future__ import annotations

from hypothesis import strategies as st

from streamproof.properties.job.check import CHECKS, LIVENESS, check_job, check_liveness
from streamproof.properties.job.inputs import (
    BOOLEANS, _inputs, integers, keyed_forward_rescales, restores_after_end_of_input, sampled)
from streamproof.properties.job.steps import Fail, FailInInterruptedFiring, Record, Rescale
from streamproof.properties.registry import Property, register
from streamproof.properties.scenario import Scenario

WINDOWED = ["window_sum", "timer_chain", "yielding_window_sum", "mailing_window_sum", "async_window_sum",
            "side_window_sum"]
MAPS = ["identity", "last", "double", "even", "twice", "rekey"]


@st.composite
def job_graphs(draw, sources: int) -> dict:
    """1-4 keyed stages; each a chain of 1-3 operators (a keyed head, then maps or a second keyed
    operator reading it as a keyed stream), parallelism 1-3 per stage; a later stage's head may
    read the source and, as its second input, the previous stage (``connect``: a two-input keyed
    window sum); a 2PC sink or a SinkV2
    writer/committer at the end, sometimes a second branch from the source, sometimes chaining
    disabled (a forward edge between two tasks)."""
    operators = [{"name": "source", "kind": "source"}]
    edges: list[dict] = []
    previous, stages = "source", draw(integers(1, 4), label="stages")
    for stage in range(stages):
        p, last = draw(integers(1, 3), label="stage parallelism"), stage == stages - 1
        head = f"s{stage}"
        functions = WINDOWED + (["processing_buffer"] if last else [])
        # a later stage may read the source and the previous stage (connect: a two-input keyed operator)
        two_inputs = stage > 0 and draw(integers(0, 2), label="two-input stage") == 2
        operators.append({"name": head, "kind": "keyed_process", "parallelism": p,
                          "function": "co_window_sum" if two_inputs else draw(sampled(*functions))})
        if two_inputs:  # the source first, the previous stage (whose watermark lags) second
            edges.append({"from": "source", "to": head, "partitioning": "keyed"})
            edges.append({"from": previous, "to": head, "partitioning": "keyed", "input": 2})
        else:
            edges.append({"from": previous, "to": head, "partitioning": "keyed"})
        previous = head
        for i in range(draw(integers(0, 2), label="chained after the head")):
            name = f"s{stage}m{i}"
            keyed_next = i == 0 and operators[-1]["function"] != "processing_buffer" and draw(BOOLEANS)
            if keyed_next:  # reinterpretAsKeyedStream: a second keyed operator in the chain
                operators.append({"name": name, "kind": "keyed_process", "parallelism": p,
                                  "function": draw(sampled(*WINDOWED))})
            else:
                operators.append({"name": name, "kind": "flat_map", "parallelism": p, "function": draw(sampled(*MAPS))})
            if draw(integers(0, 5)) == 5:  # (shrinks towards chaining)
                operators[-1]["chaining"] = False
            edges.append({"from": previous, "to": name, "partitioning": "forward"})
            previous = name
        if last:
            _sink(draw, operators, edges, previous, p, "")
    if draw(integers(0, 4)) == 4:  # a second branch from the source (shrinks towards none)
        p = draw(integers(1, 3))
        operators.append({"name": "b0", "kind": "keyed_process", "parallelism": p, "function": draw(sampled(*WINDOWED))})
        edges.append({"from": "source", "to": "b0", "partitioning": "keyed"})
        _sink(draw, operators, edges, "b0", p, "b")
    return {"operators": operators, "edges": edges}


def _sink(draw, operators: list, edges: list, previous: str, p: int, prefix: str) -> None:
    if not draw(BOOLEANS):
        operators.append({"name": f"{prefix}sink", "kind": "sink", "parallelism": p})
        edges.append({"from": previous, "to": f"{prefix}sink", "partitioning": "forward"})
        return
    operators.append({"name": f"{prefix}writer", "kind": "sink_writer", "parallelism": p})
    committer = {"name": f"{prefix}committer", "kind": "sink_committer", "parallelism": p}
    if draw(BOOLEANS):
        committer["chaining"] = False  # the committer in a task of its own (the next stage)
    operators.append(committer)
    edges += [{"from": previous, "to": f"{prefix}writer", "partitioning": "forward"},
              {"from": f"{prefix}writer", "to": f"{prefix}committer", "partitioning": "forward"}]


@st.composite
def graph_scenarios(draw, watermark_mode: str | None = None, steady_mail: bool | None = None) -> Scenario:
    """A random job graph with its inputs, faults (failures, also inside interrupted firings;
    per-stage rescales) and settings; ``steady_mail``: a barrier every few steps (unaligned) and
    mail during most firings."""
    sources = draw(integers(1, 2), label="sources")
    graph = draw(job_graphs(sources))
    steps = _inputs(draw, sources)
    for _ in range(draw(integers(0, 2), label="failures")):
        steps.append(Fail(draw(integers(1, 600)), None))
    if draw(BOOLEANS):
        steps.append(FailInInterruptedFiring(draw(integers(1, 6)), draw(sampled(None, True))))
    if draw(BOOLEANS):
        stage = draw(sampled(*[op["name"] for op in graph["operators"] if op["kind"] == "keyed_process"]))
        steps.append(Rescale(draw(integers(1, 600)), draw(integers(1, 3)), stage))
    steady = draw(BOOLEANS) if steady_mail is None else steady_mail
    params = {
        "graph": graph,
        "sources": sources,
        "max_parallelism": draw(sampled(4, 8, 16), label="max_parallelism"),
        "checkpoint_interval": draw(integers(2, 4)) if steady else draw(integers(3, 30)),
        "interruptible_timers": draw(sampled(True, True, True, False)),
        "unaligned": True if steady else draw(BOOLEANS),
        "channel_capacity": draw(integers(1, 4)),
        "async_mail_rate": draw(sampled(0.7, 1.0)) if steady else draw(sampled(0.0, 0.3, 0.7)),
        "seed": draw(integers(0, 2**16)),
        "watermark_mode": watermark_mode or "corrected",
    }
    return Scenario(family="job", steps=tuple(steps), params=params)


@st.composite
def any_job_scenarios(draw) -> Scenario:
    """An eighth each issue 31's targeted shapes (keyed forward edges rescaled; restores after end of
    input), the rest half one-stage jobs, half job graphs."""
    shape = draw(integers(0, 7), label="shape")
    if shape == 0:
        return draw(keyed_forward_rescales())
    if shape == 1:
        return draw(restores_after_end_of_input())
    return draw(graph_scenarios() if draw(BOOLEANS, label="job graph") else job_scenarios())


@st.composite
def job_scenarios(draw) -> Scenario:
    """Bounded sources with correct watermarks (never followed by a record at or below them),
    up to three faults, and random job settings."""
    sources = draw(integers(1, 3), label="sources")
    max_parallelism = draw(sampled(4, 8, 16), label="max_parallelism")
    steps: list = []
    steps += _inputs(draw, sources)
    for _ in range(draw(integers(0, 2), label="failures")):
        steps.append(Fail(draw(integers(1, 400)), None))
    if draw(BOOLEANS):
        steps.append(FailInInterruptedFiring(draw(integers(1, 6)), draw(sampled(None, True))))
    if draw(BOOLEANS):
        steps.append(Rescale(draw(integers(1, 400)), draw(integers(1, 3))))
    params = {
        "operator": draw(sampled("window_sum", "timer_chain", "yielding_window_sum", "async_window_sum",
                                          "side_window_sum")),
        "sources": sources,
        "parallelism": draw(integers(1, 3)),
        "max_parallelism": max_parallelism,
        "checkpoint_interval": draw(integers(3, 30)),
        "interruptible_timers": draw(sampled(True, True, True, False)),
        "unaligned": draw(BOOLEANS),
        "channel_capacity": draw(integers(1, 4)),
        "async_mail_rate": draw(sampled(0.0, 0.3, 0.7, 0.7)),
        "seed": draw(integers(0, 2**16)),
    }
    if not steps:
        steps.append(Record(0, "a", 1, 1))
    return Scenario(family="job", steps=tuple(steps), params=params)


SUMMARIES = {
    "job.exactly-once": "Under checkpoints, failures (also inside interrupted firings), rescales and "
                        "interruptible timers, the committed output equals the failure-free run's "
                        "(multiset; per key in window order for one-stage jobs); one-stage jobs and job graphs. "
                        "Timers restored by subtask index after a rescale are caught only as a crash "
                        "(crash: ValueError from the timer restore), keyed state so restored as a wrong output.",
    "job.timer-effects-once": "Every timer's effect is committed exactly once (as often as in the failure-free run); "
                              "every snapshot is taken between mails, never inside a callback (not even by a yield "
                              "inside one: checkpoint mail has MIN_PRIORITY).",
    "job.watermarks": "Per operator and task attempt, output watermarks strictly increase and no timer output "
                      "at or below a watermark leaves after it; at most one watermark continuation per operator "
                      "is pending (FLIP-443).",
    "job.end-of-input": "With drain, MAX_WATERMARK precedes EndOfData and nothing follows it "
                        "(FLINK-39481); every interrupted advance fired a timer (FLIP-443).",
    "job.watermark-liveness": "Under steady mail (unaligned barriers every few steps, mail during firings) every "
                              "operator's output watermark catches up with the timers it fired within 3 of its "
                              "task's mailbox steps (FLINK-40101).",
    "job.timer-liveness": "A processing-time timer's mail runs within 3 of its task's mailbox steps, "
                          "whatever urgent mail arrives (FLINK-39898).",
    "job.drain-liveness": "Once inputs and faults stop the job finishes: every due timer fired, every operator's "
                          "output watermark reached MAX_WATERMARK, nothing reached a task after its EndOfData "
                          "(FLINK-38614).",
}
REACHABILITY = ("timer firing interrupted", "failure inside an interrupted firing", "rescaled restore",
                "restored from a completed checkpoint", "try_yield ran a mail inside a timer callback",
                "barrier processed during an interrupted firing", "continuation pending when a new watermark arrived",
                "a two-input operator processed records of both inputs",
                # issue 31: the targeted shapes (inputs.keyed_forward_rescales, inputs.restores_after_end_of_input)
                "keyed forward edge rescaled from a checkpoint",
                "keyed forward edge rescaled from a checkpoint with in-flight records",
                "restored after a task's end of input", "restored after a task's end of input with in-flight records",
                "failure between a task's snapshot and its checkpoint's completion")
GRAPH_REACHABILITY = ("job graph with more than one stage", "operator chain of more than one operator before its sink",
                      "job graph rescaled", "timer firing interrupted", "failure inside an interrupted firing")


@st.composite
def liveness_scenarios(draw) -> Scenario:
    """Job graphs, most under steady mail, and one-stage jobs (run as their one-stage graph)."""
    if draw(integers(0, 3), label="one-stage") == 0:
        return draw(job_scenarios())
    return draw(graph_scenarios(steady_mail=draw(sampled(True, True, False))))


for _name in CHECKS:
    register(Property(
        name=_name, family="job", summary=SUMMARIES[_name],
        check=(lambda name: lambda scenario: check_job(scenario, name))(_name),
        strategy=any_job_scenarios, reachability=REACHABILITY,
    ))
for _name in LIVENESS:
    register(Property(
        name=_name, family="job", summary=SUMMARIES[_name],
        check=(lambda name: lambda scenario: check_liveness(scenario, name))(_name),
        strategy=liveness_scenarios, reachability=GRAPH_REACHABILITY,
    ))

from streamproof.properties.job import eos  # noqa: E402 - registers the eos.* properties (FLIP-331)

EOS_PROPERTIES = tuple(eos.SUMMARIES)

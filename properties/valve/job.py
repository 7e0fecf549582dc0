"""The ``valve_job`` scenario family: coordinator events in a whole job (impl/coordination/valve_pipeline.py).

``params`` holds the job (:data:`DEFAULT_PARAMS`): the valve ``protocol``, the ``recipient`` kind
(``operator``: source -> network -> operator, the barrier races the events; ``source``: the
recipients are sources), ``events`` per coordinated operator, ``parallelism`` and the ``seed`` of
the interleaving. Steps are the faults: ``fail_job`` (a coordinator fails the job once it has sent
``after`` events: global failover) and ``fail_recipient`` (a recipient fails once it has received
``after`` events: region failover).

The property ``valve.job-exactly-once`` (the ITCases' oracle): every recipient ends with exactly
[0..N-1], and every completed checkpoint holds, per recipient, exactly the events its coordinator
had sent when it completed its part.
"""

from __future__ import annotations

from typing import Any, ClassVar

from hypothesis import strategies as st

from streamproof.impl.coordination import PROTOCOLS
from streamproof.impl.coordination.valve_pipeline import PipelineConfig, ValvePipeline
from streamproof.properties.reach import note
from streamproof.properties.scenario import TOP, IntKind, Scenario, Step, arg, register_family, step, step_error
from streamproof.properties.verdict import Verdict

DEFAULT_PARAMS: dict[str, Any] = {"protocol": "flink-2.3", "recipient": "operator", "events": [20],
                                  "parallelism": 1, "seed": 0}
COUNT = IntKind(1, 10**6)
INDEX = IntKind(0, 63)


@step
class FailJob(Step):
    """Coordinator ``operator`` fails the job (global failover) once it has sent ``after`` events."""

    op: ClassVar[str] = "fail_job"
    operator: int = arg(INDEX)
    after: int = arg(COUNT)


@step
class FailRecipient(Step):
    """Recipient subtask ``subtask`` of ``operator`` fails (region failover) once it has received
    ``after`` events."""

    op: ClassVar[str] = "fail_recipient"
    operator: int = arg(INDEX)
    subtask: int = arg(INDEX)
    after: int = arg(COUNT)


def job_params(scenario: Scenario) -> dict:
    unknown = set(scenario.params) - set(DEFAULT_PARAMS)
    if unknown:
        raise TOP.expected("params", "only " + ", ".join(DEFAULT_PARAMS), sorted(unknown)[0], "semantic")
    params = {**DEFAULT_PARAMS, **scenario.params}
    if params["protocol"] not in PROTOCOLS:
        raise TOP.expected("params", "protocol one of " + ", ".join(PROTOCOLS), params["protocol"], "semantic")
    if params["recipient"] not in ("operator", "source"):
        raise TOP.expected("params", "recipient operator or source", params["recipient"], "semantic")
    events = params["events"]
    if not (isinstance(events, list) and 1 <= len(events) <= 4 and
            all(isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= 1000 for n in events)):
        raise TOP.expected("params", "events: a list of 1 to 4 integers in [1, 1000]", events, "semantic")
    for name, hi in (("parallelism", 8), ("seed", 2**32)):
        value = params[name]
        if not (isinstance(value, int) and not isinstance(value, bool) and (name == "seed" or value >= 1)
                and 0 <= value <= hi):
            raise TOP.expected("params", f"{name}: an integer in [{0 if name == 'seed' else 1}, {hi}]", value,
                                "semantic")
    return params


def validate_valve_job(scenario: Scenario) -> None:
    params = job_params(scenario)
    for i, s in enumerate(scenario.steps):
        if s.operator >= len(params["events"]):
            raise step_error(i, s, "operator", f"an operator below {len(params['events'])} (len(params.events))",
                             s.operator)
        if isinstance(s, FailRecipient) and s.subtask >= params["parallelism"]:
            raise step_error(i, s, "subtask", f"a subtask below params.parallelism ({params['parallelism']})",
                             s.subtask)


register_family("valve_job", [FailJob, FailRecipient], validate_valve_job)


# ------------------------------------------------------------------------------------- check

def run_job(scenario: Scenario) -> ValvePipeline:
    params = job_params(scenario)
    fail_at = [None] * len(params["events"])
    for s in scenario.steps:
        if isinstance(s, FailJob) and fail_at[s.operator] is None:
            fail_at[s.operator] = s.after
    config = PipelineConfig(
        protocol=params["protocol"], recipient=params["recipient"], events=tuple(params["events"]),
        parallelism=params["parallelism"], seed=params["seed"], global_failure_at=tuple(fail_at),
        recipient_failures=tuple((s.operator, s.subtask, s.after) for s in scenario.steps if isinstance(s, FailRecipient)))
    pipeline = ValvePipeline(config)
    pipeline.final = pipeline.run()
    return pipeline


def check_valve_job(scenario: Scenario, property_name: str = "valve.job-exactly-once") -> Verdict:
    pipeline = run_job(scenario)
    events = job_params(scenario)["events"]
    observed = [{"event": e[0], "detail": list(e[1:])} for e in pipeline.log] + [
        {"event": "final_state", "operator": op, "subtask": i, "received": received}
        for op, per_op in enumerate(pipeline.final) for i, received in enumerate(per_op)]
    _reach(pipeline)
    for c, op, i, sent, state in pipeline.inconsistent:
        return Verdict(property_name, False, observed, "consistent-checkpoints",
                       f"checkpoint {c}, operator {op} subtask {i}: the coordinator had sent {sent} events, the "
                       f"subtask's snapshot holds {state}")
    for op, per_op in enumerate(pipeline.final):
        for i, received in enumerate(per_op):
            if received != list(range(events[op])):
                twice = sorted({v for v in received if received.count(v) > 1})
                missing = [v for v in range(events[op]) if v not in received]
                return Verdict(property_name, False, observed, "exactly-once",
                               f"operator {op} subtask {i} holds {received}: applied twice {twice}, never {missing}")
    return Verdict(property_name, True, observed)


def _reach(pipeline: ValvePipeline) -> None:
    kinds = {entry[0] for entry in pipeline.log}
    for kind, label in (("region failover", "job: region failover"), ("global failover", "job: global failover"),
                        ("completed", "job: checkpoint completed"), ("error", "job: holder threw")):
        if kind in kinds:
            note(label)


REACHABILITY = ("job: region failover", "job: global failover", "job: checkpoint completed")


def valve_job_scenarios(protocol: str = "streamproof"):
    @st.composite
    def scenarios(draw) -> Scenario:
        events = draw(st.lists(st.integers(1, 40), min_size=1, max_size=2), label="events")
        parallelism = draw(st.integers(1, 3), label="parallelism")
        steps: list = []
        for _ in range(draw(st.integers(0, 2), label="region failures")):
            op = draw(st.integers(0, len(events) - 1))
            steps.append(FailRecipient(op, draw(st.integers(0, parallelism - 1)), draw(st.integers(1, events[op]))))
        if draw(st.booleans()):
            op = draw(st.integers(0, len(events) - 1))
            steps.append(FailJob(op, draw(st.integers(1, events[op] * parallelism))))
        params = {"protocol": protocol, "recipient": draw(st.sampled_from(["operator", "operator", "source"])),
                  "events": events, "parallelism": parallelism, "seed": draw(st.integers(0, 2**16))}
        return Scenario(family="valve_job", steps=tuple(steps), params=params)
    return scenarios()

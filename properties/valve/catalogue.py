"""Registers the properties of the coordinator event valve (family ``valve``).

Each property checks a scenario under its ``params.protocol`` (default ``flink-2.3``, the
protocol of Flink's vectors). The registered state machines explore the ``streamproof``
protocol, which must hold everything (the differential machine draws any protocol: model and
implementation agree on Flink's flaws too); ``streamproof.properties.valve.machine.machine_for`` explores
``flink-2.3`` and ``legacy``, whose expected failures are tests (docs/valve.md).
"""

from __future__ import annotations

from streamproof.properties.registry import Property, register
from streamproof.properties.valve.check import check_valve

SUMMARIES = {
    "valve.differential": "The holder implementation and the protocol model agree step by step, under any of "
                          "the three protocols: the same deliveries (in order per subtask), refusals, losses, "
                          "failovers, resets, errors, holder futures and buffered events.",
    "valve.consistent-checkpoints": "For every completed checkpoint c and subtask i, the events the coordinator "
                                    "sent to i before completing c are exactly those applied in i's snapshot for "
                                    "c, in order; gateways close all or none.",
    "valve.exactly-once": "Across region and global failovers every event reaches only its target attempt and is "
                          "applied once; after the drain phase every subtask holds exactly what the coordinator "
                          "sent it (the ITCase oracle: exactly [0..N-1]).",
    "valve.liveness": "After the drain phase (no more faults, every RPC succeeds, one more checkpoint) that "
                      "checkpoint completes, an event sent to each subtask afterwards arrives, and no event is "
                      "left buffered or in flight.",
}


def _machine(name: str):
    def machine():
        from streamproof.properties.valve.machine import machine_for
        return machine_for(name, None if name == "valve.differential" else "streamproof")
    return machine


def _reachability(name: str) -> tuple:
    from streamproof.properties.valve.check import DRAINED
    from streamproof.properties.valve.machine import REACHABILITY
    return tuple(label for label in REACHABILITY if name in DRAINED or label != "drain checkpoint completed")


for _name, _summary in SUMMARIES.items():
    register(Property(
        name=_name, family="valve", summary=_summary,
        check=(lambda name: lambda scenario: check_valve(scenario, name))(_name),
        machine=_machine(_name), reachability=_reachability(_name),
    ))


def _job_strategy():
    from streamproof.properties.valve.job import valve_job_scenarios
    return valve_job_scenarios("streamproof")


def _job_check(scenario):
    from streamproof.properties.valve.job import check_valve_job
    return check_valve_job(scenario, "valve.job-exactly-once")


register(Property(
    name="valve.job-exactly-once", family="valve_job",
    summary="In a job (source -> network -> operator, or source recipients) under global and region "
            "failovers, every recipient ends with exactly the coordinator's events [0..N-1] and every "
            "completed checkpoint holds exactly the events its coordinator had sent (the ITCases' oracle).",
    check=_job_check, strategy=_job_strategy,
    reachability=("job: region failover", "job: global failover", "job: checkpoint completed"),
))

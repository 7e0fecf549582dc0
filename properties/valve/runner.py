"""Runs a ``valve`` scenario against the implementation and against the model.

Both turn each step into observations in the format of ``shared/vectors/flink_valve_traces.json``
(``deliver``, ``deliver_refused``, ``lost``, ``task_failover``, ``coordinator_received``,
``coordinator_reset``, ``coordinator_subtask_reset``, ``result``, ``global_failure``, ``error``;
an ``error`` is compared by its type only, as the vectors say). The protocol comes from
``params.protocol`` (default ``flink-2.3``, what the vectors observed).
"""

from __future__ import annotations

from typing import Iterable

from streamproof.impl.coordination import PROTOCOLS, ValveHarness
from streamproof.model import valve as spec
from streamproof.properties.scenario import TOP
from streamproof.properties.tracecompare import TraceComparison, run_trace

DEFAULT_PROTOCOL = "flink-2.3"
PARAMS = ("protocol",)


def protocol_of(scenario) -> str:
    """``params.protocol`` of a valve scenario (one of flink-2.3, legacy, streamproof)."""
    unknown = set(scenario.params) - set(PARAMS)
    if unknown:
        raise TOP.expected("params", "only protocol", sorted(unknown)[0], "semantic")
    protocol = scenario.params.get("protocol", DEFAULT_PROTOCOL)
    if protocol not in PROTOCOLS:
        raise TOP.expected("params", "protocol one of " + ", ".join(PROTOCOLS), protocol, "semantic")
    return protocol


def fields_of(step) -> tuple[str, dict]:
    data = step.to_json()
    return data.pop("op"), data


# -- implementation ------------------------------------------------------------------------
class ImplValveRun:
    """Drives :class:`streamproof.impl.coordination.ValveHarness` through the steps of a valve scenario."""

    def __init__(self, protocol: str = DEFAULT_PROTOCOL):
        self.protocol = protocol
        self.harness: ValveHarness | None = None

    def apply(self, op: str, fields: dict) -> list[dict]:
        if op == "new_holder":
            self.harness = ValveHarness(self.protocol, fields["parallelism"])
            return []
        trace = self.harness.trace
        start = len(trace)
        getattr(self.harness, op)(**fields)
        return trace[start:]

    # views the checks use
    def result_of(self, checkpoint: int) -> str | None:
        return self.harness.result_state(checkpoint)

    def closed_for(self, checkpoint: int) -> list[bool]:
        return self.harness.holder.gateways_closed_for(checkpoint)

    def coordinator_checkpoints(self) -> dict:
        futures = self.harness.coordinator.checkpoints
        return {c: (futures[c].is_done() if c in futures else True, self.result_of(c))
                for c in self.harness.results}

    def buffered(self) -> int:
        return self.harness.holder.buffered_events()

    def unresolved(self) -> int:
        return self.harness.unresolved_sends()


# -- model -----------------------------------------------------------------------------------
class ModelValveRun:
    """Drives :class:`streamproof.model.valve.ValveSpec` (the model predicts every observation)."""

    def __init__(self, protocol: str = DEFAULT_PROTOCOL):
        self.protocol = protocol
        self.spec: spec.ValveSpec | None = None

    def apply(self, op: str, fields: dict) -> list[dict]:
        if op == "new_holder":
            self.spec = spec.ValveSpec(self.protocol, fields["parallelism"])
            return []
        return self.spec.apply(op, fields)

    def result_of(self, checkpoint: int) -> str | None:
        return self.spec.result_state(checkpoint)

    def buffered(self) -> int:
        return self.spec.buffered()


# -- whole scenarios -------------------------------------------------------------------------
# Events compare as the vectors do: an ``error`` by its type only, no messages.
COMPARISON = TraceComparison(ignore=frozenset({"message"}))
normalize, same_trace, difference = COMPARISON.normalize, COMPARISON.same, COMPARISON.difference


def run_impl(steps: Iterable, protocol: str = DEFAULT_PROTOCOL) -> list[dict]:
    run = ImplValveRun(protocol)
    return run_trace(lambda step, _: run.apply(*fields_of(step)), steps)


def run_model(steps: Iterable, protocol: str = DEFAULT_PROTOCOL) -> list[dict]:
    run = ModelValveRun(protocol)
    return run_trace(lambda step, _: run.apply(*fields_of(step)), steps)


def same_up_to_interleaving(a: list[dict], b: list[dict]) -> bool:
    """The same observations, the same order per subtask (RPCs are FIFO per task), in any
    interleaving across subtasks: the protocol promises nothing about that interleaving."""
    return COMPARISON.same_up_to_interleaving(a, b, lane="subtask")


def run_vector_steps(steps: tuple) -> list[dict]:
    """The implementation's whole trace under ``flink-2.3`` (what ``streamproof replay`` compares
    with the vectors' ``flink_observed``)."""
    return run_impl(steps, DEFAULT_PROTOCOL)

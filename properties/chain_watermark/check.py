"""The differential check of the chain's watermark processors: implementation against model, step
by step.

After every step:
  * ``same-observations``: the model predicts exactly the implementation's observations (timers
    fired, watermarks emitted by A and by B, mail run), in order;
  * ``same-state``: both hold the same mails in the same order and, per operator, the same
    pending timers, maximum input watermark and continuation flag;
  * ``watermarks-never-decrease``: neither processor ever emits a watermark below one it emitted;
  * ``watermarks-strictly-increase`` (``corrected`` mode only): nor one equal to it. Flink 2.3
    (``flink-2.3`` mode) breaks this one in a chain: B emits the same watermark twice
    (docs/job-graphs.md); the differential check holds there, as Flink does the same.
"""

from __future__ import annotations

from typing import Iterable

from streamproof.properties.chain_watermark.runner import ImplChainRun, ModelChainRun, normalize
from streamproof.properties.verdict import Verdict, Violation

PROPERTY = "chain_watermark.differential"


class DifferentialChain:
    """Implementation and model side by side; ``apply`` raises :class:`Violation`."""

    def __init__(self, mode: str = "flink-2.3"):
        self.mode = mode
        self.impl = ImplChainRun(mode)
        self.model = ModelChainRun(mode)
        self.trace: list[dict] = []
        self.steps = 0
        self.last: dict[str, int] = {}  # operator -> last watermark it emitted

    def apply(self, step, check_state: bool = True) -> list[dict]:
        index = self.steps
        self.steps += 1
        observed = self.impl.apply(step, index)
        expected = self.model.apply(step, index)
        self.trace.extend(observed)
        if normalize(observed) != normalize(expected):
            raise Violation("same-observations", f"{step.op}: implementation {observed} but model {expected}", index)
        if step.op == "new_chain":
            self.last = {}
        for event in observed:
            if event["event"] != "emit":
                continue
            op, w = event["operator"], event["watermark"]
            if op in self.last and w < self.last[op]:
                raise Violation("watermarks-never-decrease", f"{op} emitted {w} after {self.last[op]}", index)
            if self.mode == "corrected" and op in self.last and w == self.last[op]:
                raise Violation("watermarks-strictly-increase", f"{op} emitted {w} twice", index)
            self.last[op] = w
        if check_state:
            self.check_state(index)
        return observed

    def check_state(self, index: int | None = None) -> None:
        impl_view, model_view = self.impl.view(), self.model.view()
        if impl_view != model_view:
            raise Violation("same-state", f"implementation holds {impl_view} but model {model_view}", index)


def check_chain_watermark(steps: Iterable, mode: str = "flink-2.3", property_name: str = PROPERTY) -> Verdict:
    """Replays ``steps``; the verdict fails at the first broken invariant."""
    run = DifferentialChain(mode)
    try:
        for step in steps:
            run.apply(step)
    except Violation as v:
        return Verdict(property_name, False, run.trace, v.invariant, v.detail, v.step)
    return Verdict(property_name, True, run.trace)

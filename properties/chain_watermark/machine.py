"""Hypothesis state machine: the chain's watermark processors (implementation) against the model.

Every rule is a step of the ``chain_watermark`` family, applied to both sides by
:class:`~streamproof.properties.chain_watermark.check.DifferentialChain`; the state is compared
as a Hypothesis invariant after each rule. ``self.steps`` is the scenario so far (the conformance
generator collects it). Timestamps are small, so timers are often due and watermarks repeat; an
operator never has two keys at one timestamp (Flink's heap orders such ties its own way, the
model by key).
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from streamproof.properties import scenario as sc
from streamproof.properties.chain_watermark import steps as cs
from streamproof.properties.chain_watermark.check import PROPERTY, DifferentialChain
from streamproof.properties.reach import note
from streamproof.properties.verdict import Violation

OPERATORS = st.sampled_from(["A", "B"])
KEYS = st.sampled_from(["a", "b", "c"])
TIMES = st.integers(0, 40)


class ChainWatermarkMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.mode = "flink-2.3"
        self.run = DifferentialChain(self.mode)
        self.steps: list = []
        self.mails = 0
        self.key_at: dict[tuple[str, int], str] = {}   # (operator, ts) -> the one key used there
        self.registered: list[tuple[str, str, int]] = []
        self.last_b: int | None = None

    # -- recording ---------------------------------------------------------------------------
    def do(self, step) -> list[dict]:
        model = self.run.model.model
        pending_before = {n: o.scheduled for n, o in model.ops.items()}
        self.steps.append(step)
        try:
            observed = self.run.apply(step, check_state=False)
        except Exception as e:
            self._attach(e)
            raise
        self._notice(step, observed, pending_before)
        return observed

    def _attach(self, e: BaseException) -> None:
        e.streamproof_steps = list(self.steps)
        e.streamproof_scenario = self.scenario()

    def _notice(self, step, observed: list[dict], pending_before: dict) -> None:
        model = self.run.model.model
        for name, op in model.ops.items():
            if op.scheduled and not pending_before[name]:
                note("advance interrupted")
                if op.next_due(op.max_input) is None:
                    note("interrupted after the last due timer")
        if step.op == "watermark" and any(pending_before.values()):
            note("watermark arrived while a continuation was pending")
        for event in observed:
            if event["event"] != "emit":
                continue
            op = model.ops[event["operator"]]
            if self.mode == "corrected" and event["watermark"] < op.max_input:
                note("corrected mode emitted an intermediate watermark")
            if event["operator"] == "B":
                if event["watermark"] == self.last_b and step.op in ("run_mail", "drain"):
                    note("B emitted the same watermark twice")
                self.last_b = event["watermark"]

    def scenario(self) -> sc.Scenario:
        return sc.Scenario(family="chain_watermark", steps=tuple(self.steps), params={"mode": self.mode},
                           property=PROPERTY)

    # -- rules -------------------------------------------------------------------------------
    @initialize(mode=st.sampled_from(cs.MODES))
    def new_chain(self, mode):
        self.mode = mode
        self.run = DifferentialChain(mode)
        self.do(cs.NewChain())

    def _register(self, operator: str, key: str, ts: int) -> tuple[str, str, int]:
        key = self.key_at.setdefault((operator, ts), key)
        self.do(cs.Register(operator, key, ts))
        self.registered.append((operator, key, ts))
        return operator, key, ts

    @rule(operator=OPERATORS, key=KEYS, ts=TIMES)
    def register(self, operator, key, ts):
        self._register(operator, key, ts)

    @rule(operator=OPERATORS, key=KEYS, ts=TIMES)
    def register_mailing(self, operator, key, ts):
        """A timer whose callback puts a mail (as ``mailing_window_sum``'s do)."""
        operator, key, ts = self._register(operator, key, ts)
        self.do(cs.TimerPutsMail(operator, key, ts))

    @precondition(lambda self: self.registered)
    @rule(data=st.data())
    def timer_puts_mail(self, data):
        operator, key, ts = data.draw(st.sampled_from(self.registered), label="timer")
        self.do(cs.TimerPutsMail(operator, key, ts))

    @rule(ts=st.integers(0, 45))
    def watermark(self, ts):
        self.do(cs.Watermark(ts))

    @rule()
    def mail(self):
        self.mails += 1
        self.do(cs.Mail(f"m{self.mails}"))

    @rule()
    def run_mail(self):
        self.do(cs.RunMail())

    @rule()
    def drain(self):
        self.do(cs.Drain())

    @invariant()
    def same_state(self):
        if self.steps:
            try:
                self.run.check_state(len(self.steps) - 1)
            except Violation as e:
                self._attach(e)
                raise


__all__ = ["ChainWatermarkMachine"]

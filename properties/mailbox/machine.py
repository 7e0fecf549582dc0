"""Hypothesis state machine: the task mailbox implementation against its model.

Every rule is a step of the ``mailbox`` scenario family, applied to both sides by
:class:`~streamproof.properties.mailbox.check.DifferentialMailbox`; the state invariants are checked as a
Hypothesis invariant after each rule. The steps are recorded, so a failure is reported as the
minimal scenario that ``streamproof replay`` reproduces.
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, precondition, rule

from streamproof.properties import scenario as sc
from streamproof.properties.mailbox import steps as ms
from streamproof.properties.mailbox.check import DifferentialMailbox
from streamproof.properties.reach import note
from streamproof.properties.verdict import Violation

PRIORITIES = st.integers(0, 3)
TAKE_PRIORITIES = st.integers(-1, 3)  # -1: TaskMailbox.MIN_PRIORITY, sees deferrable mail
OPTIONS = st.sampled_from(["default", "default", "deferrable", "urgent"])


class MailboxMachine(RuleBasedStateMachine):
    priorities = Bundle("priorities")  # priorities mails were put with: takes at them hide the rest

    def __init__(self) -> None:
        super().__init__()
        self.run = DifferentialMailbox()
        self.steps: list = []
        self.mail_count = 0
        self.overtakers: set[str] = set()  # urgent mails put while non-urgent mail was in the batch

    # -- recording ---------------------------------------------------------------------------
    def do(self, step) -> list[dict]:
        before = self.box
        mails, batch, state = list(before.mails), before.batch, before.state
        self.steps.append(step)
        try:
            observed = self.run.apply(step, check_invariants=False)
        except Exception as e:
            e.streamproof_steps = list(self.steps)  # the reporter turns these into a scenario
            raise
        self._notice(step, observed, mails, batch, state)
        return observed

    @property
    def box(self):
        return self.run.model.model.box

    def _notice(self, step, observed: list[dict], mails: list, batch: int, state: str) -> None:
        event = observed[0] if observed else None
        if step.op == "put":
            if event is None and step.options == "urgent" and any(not m.urgent for m in mails[:batch]):
                self.overtakers.add(step.mail)
            if event is not None and state == "QUIESCED":
                note("put refused after quiesce")
            return
        if event is None:
            return
        if event["event"] == "error" and step.op in ("try_take", "try_take_from_batch", "try_yield"):
            note("take refused after close")
        elif event["event"] in ("took", "yielded"):
            taken = event["mail"]
            if taken is not None and taken in self.overtakers and any(not m.urgent for m in mails[:batch]):
                note("urgent mail overtook a batch")
                self.overtakers.discard(taken)
            if taken is not None and state == "QUIESCED":
                note("mail taken from a quiesced mailbox")
            if step.op == "try_take_from_batch":
                if taken is None and mails:
                    note("batch empty while new mail waits")
                return
            position = next((i for i, m in enumerate(mails) if m.name == taken), len(mails))
            if taken is not None and position > 0:
                note("priority hid an earlier mail")
            if taken is None and mails:
                note("priority hid every mail")
            if step.op == "try_yield" and step.priority >= 0 and any(
                    m.options == "deferrable" for m in mails[:position]):
                note("deferrable mail invisible to yield")
        elif event["event"] == "should_interrupt" and event["value"]:
            if not any(m.visible_priority >= step.priority for m in mails):
                note("should_interrupt for mail the executor cannot take")
        elif event["event"] == "closed" and event["dropped"]:
            note("close dropped mail")

    # -- rules -------------------------------------------------------------------------------
    @initialize()
    def new_mailbox(self):
        self.do(ms.NewMailbox())

    def _put(self, priority: int, options: str, name: str | None = None) -> None:
        if name is None:
            self.mail_count += 1
            name = f"m{self.mail_count}"
        self.do(ms.Put(name, priority, options))

    @rule(target=priorities, priority=PRIORITIES, options=OPTIONS)
    def put(self, priority, options):
        self._put(priority, options)
        return priority

    @rule(mails=st.lists(st.tuples(PRIORITIES, OPTIONS), min_size=2, max_size=5))
    def put_many(self, mails):
        for priority, options in mails:
            self._put(priority, options)

    @precondition(lambda self: self.mail_count > 0)
    @rule(data=st.data(), priority=PRIORITIES, options=OPTIONS)
    def put_same_name_again(self, data, priority, options):
        """Two mails with one name: the no-loss check counts names as a multiset."""
        number = data.draw(st.integers(1, self.mail_count), label="mail")
        self._put(priority, options, f"m{number}")

    @rule(priority=TAKE_PRIORITIES)
    def try_take(self, priority):
        self.do(ms.TryTake(priority))

    @rule(priority=priorities)
    def try_take_at_a_put_priority(self, priority):
        self.do(ms.TryTake(priority))

    @rule()
    def create_batch(self):
        self.do(ms.CreateBatch())

    @rule()
    def try_take_from_batch(self):
        self.do(ms.TryTakeFromBatch())

    @rule(priority=TAKE_PRIORITIES)
    def try_yield(self, priority):
        self.do(ms.TryYield(priority))

    @rule(priority=priorities)
    def try_yield_at_a_put_priority(self, priority):
        self.do(ms.TryYield(priority))

    @rule(priority=TAKE_PRIORITIES)
    def should_interrupt(self, priority):
        self.do(ms.ShouldInterrupt(priority))

    @rule()
    def has_mail(self):
        self.do(ms.HasMail())

    @rule()
    def size(self):
        self.do(ms.Size())

    @rule(close=st.booleans())
    def quiesce_or_close(self, close):
        """One rule for both, so that the mailbox stays OPEN for longer."""
        self.do(ms.Close() if close else ms.Quiesce())

    @precondition(lambda self: self.box.state == "CLOSED")
    @rule()
    def new_mailbox_after_close(self):
        self.overtakers.clear()
        self.do(ms.NewMailbox())

    @invariant()
    def mailboxes_agree_and_invariants_hold(self):
        if self.steps:
            try:
                self.run.check_invariants(len(self.steps) - 1)
            except Violation as e:
                e.streamproof_steps = list(self.steps)
                raise

    def scenario(self) -> sc.Scenario:
        return sc.Scenario(family="mailbox", steps=tuple(self.steps))


__all__ = ["MailboxMachine"]

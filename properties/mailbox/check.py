"""The differential check of the task mailbox: implementation against model, step by step.

After every step:
  * ``same-observations``: the model predicts exactly the implementation's observations (the
    mail taken, yielded or dropped, batch, has_mail, should_interrupt, size, state, refusals);
  * ``same-mailbox``: both hold the same mails (name, priority, options) in the same take order,
    the same batch and the same state;
  * ``urgent-mail-first``, ``batch-within-mails``, ``closed-is-empty``:
    the model's invariants (``model/mailbox.py``), on the implementation's mailbox and the model's;
  * ``no-mail-lost-or-duplicated``: every accepted put is, exactly once, taken, yielded, dropped by
    close, or still in the mailbox (as multisets of names, per mailbox).
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable

from streamproof.model import mailbox as spec
from streamproof.properties.mailbox.runner import ImplMailboxRun, ModelMailboxRun
from streamproof.properties.verdict import Verdict, Violation


class DifferentialMailbox:
    """Implementation and model side by side; ``apply`` raises :class:`Violation`."""

    def __init__(self, policy: str = "any_mail"):
        self.impl = ImplMailboxRun(policy)
        self.model = ModelMailboxRun(policy)
        self.trace: list[dict] = []
        self.steps = 0
        self.accepted: Counter = Counter()  # names put into the current mailbox
        self.removed: Counter = Counter()   # names taken, yielded or dropped from it

    def apply(self, step, check_invariants: bool = True) -> list[dict]:
        """Runs ``step`` on both sides and compares; ``check_invariants=False`` leaves the state
        invariants to the caller (the state machine checks them as Hypothesis invariants)."""
        index = self.steps
        self.steps += 1
        observed = self.impl.apply(step, index)
        expected = self.model.apply(step, index)
        self.trace.extend(observed)
        if _without_message(observed) != _without_message(expected):
            raise Violation("same-observations", f"{step.op}: implementation {observed} but model {expected}", index)
        self._tally(step, observed)
        if check_invariants:
            self.check_invariants(index)
        return observed

    def _tally(self, step, observed: list[dict]) -> None:
        if step.op == "new_mailbox":
            self.accepted, self.removed = Counter(), Counter()
        elif step.op == "put" and not observed:
            self.accepted[step.mail] += 1
        for event in observed:
            if event["event"] in ("took", "yielded") and event["mail"] is not None:
                self.removed[event["mail"]] += 1
            elif event["event"] == "closed":
                self.removed.update(event["dropped"])

    def check_invariants(self, index: int | None = None) -> None:
        impl_view, model_view = self.impl.view(), self.model.view()
        if impl_view != model_view:
            raise Violation("same-mailbox", f"implementation holds {_show(impl_view)} but model {_show(model_view)}",
                            index)
        mails, batch, state = impl_view
        impl_box = spec.Mailbox([spec.Letter(*m) for m in mails], batch, state)
        sides = (("implementation", impl_box, impl_view), ("model", self.model.model.box, model_view))
        for name, holds in spec.INVARIANTS.items():
            for side, box, view in sides:
                if not holds(box):
                    raise Violation(name, f"broken in the {side}: {_show(view)}", index)
        pending = Counter(name for name, _, _ in mails)
        if self.accepted != self.removed + pending:
            lost = self.accepted - self.removed - pending
            extra = (self.removed + pending) - self.accepted
            raise Violation("no-mail-lost-or-duplicated",
                            f"lost {sorted(lost.elements())}, duplicated or invented {sorted(extra.elements())}", index)


def _without_message(events: list[dict]) -> list[dict]:
    return [{k: v for k, v in e.items() if k not in ("message", "step")} for e in events]


def _show(view: tuple) -> str:
    mails, batch, state = view
    names = [f"{n}/{p}{'' if o == 'default' else '/' + o}" for n, p, o in mails]
    return f"{state} mails {names} batch {batch}"


def check_mailbox(steps: Iterable, property_name: str = "mailbox.differential",
                  policy: str = "any_mail") -> Verdict:
    """Replays ``steps``; the verdict fails at the first broken invariant."""
    run = DifferentialMailbox(policy)
    try:
        for step in steps:
            run.apply(step)
    except Violation as v:
        return Verdict(property_name, False, run.trace, v.invariant, v.detail, v.step)
    return Verdict(property_name, True, run.trace)

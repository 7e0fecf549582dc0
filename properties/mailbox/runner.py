"""Runs a ``mailbox`` scenario against the implementation and against the model.

Both runners turn each step into observations in the format of
``shared/vectors/flink_mailbox_traces.json``: ``took`` (the mail ``try_take`` /
``try_take_from_batch`` returned, null for none), ``yielded`` (the mail ``try_yield`` ran),
``batch`` (``create_batch``'s answer), ``has_mail`` / ``should_interrupt`` / ``size`` (values),
``state`` (after ``quiesce``), ``closed`` (the mails ``close`` dropped, in order) and ``error`` (a
refused step: ``text`` is Flink's exception name, ``message`` ours; the run goes on).
``new_mailbox`` and an accepted ``put`` observe nothing. Mails are named by their description.
"""

from __future__ import annotations

from typing import Iterable

from streamproof.impl.tasks.mailbox import (
    InterruptPolicy, Mail, MailboxClosedError, MailboxExecutor, MailboxStateError, MailOptions, TaskMailbox,
)
from streamproof.model import mailbox as spec
from streamproof.properties.tracecompare import TraceComparison, run_trace

POLICIES = spec.POLICIES


def _error(flink: str, message: str, index: int | None) -> dict:
    event = {"event": "error", "text": flink, "message": message}
    if index is not None:
        event["step"] = index
    return event


def _flink_name(e: MailboxStateError) -> str:
    return "MailboxClosedException" if isinstance(e, MailboxClosedError) else "IllegalStateException"


# -- implementation ------------------------------------------------------------------------
class ImplMailboxRun:
    """Drives ``streamproof.impl.tasks.mailbox`` through the steps of a mailbox scenario."""

    def __init__(self, policy: str = "any_mail"):
        self.policy = InterruptPolicy(policy)
        self.mailbox: TaskMailbox | None = None
        self.ran: list[str] = []  # names of the mails run by try_yield, in order

    def _mail(self, step) -> Mail:
        name = step.mail
        return Mail(lambda: self.ran.append(name), name, step.priority, MailOptions(step.options))

    def apply(self, step, index: int | None = None) -> list[dict]:
        """Runs one step; returns its observations."""
        try:
            return self._apply(step)
        except MailboxStateError as e:
            return [_error(_flink_name(e), str(e), index)]

    def _apply(self, step) -> list[dict]:
        op, box = step.op, self.mailbox
        if op == "new_mailbox":
            self.mailbox = TaskMailbox()
            return []
        if op == "put":
            box.put(self._mail(step))
            return []
        if op == "try_take":
            return [_took(box.try_take(step.priority))]
        if op == "create_batch":
            return [{"event": "batch", "created": box.create_batch()}]
        if op == "try_take_from_batch":
            return [_took(box.try_take_from_batch())]
        if op == "try_yield":
            before = len(self.ran)
            yielded = MailboxExecutor(box, step.priority, self.policy).try_yield()
            mail = self.ran[before] if yielded and len(self.ran) > before else None
            return [{"event": "yielded", "mail": mail}]
        if op == "should_interrupt":
            value = MailboxExecutor(box, step.priority, self.policy).should_interrupt()
            return [{"event": "should_interrupt", "value": value}]
        if op == "has_mail":
            return [{"event": "has_mail", "value": box.has_mail()}]
        if op == "size":
            return [{"event": "size", "value": box.size()}]
        if op == "quiesce":
            box.quiesce()
            return [{"event": "state", "value": box.state.value}]
        if op == "close":
            return [{"event": "closed", "dropped": [m.description for m in box.close()]}]
        raise ValueError(f"unknown mailbox op {op!r}")

    def view(self) -> tuple[list[tuple], int, str]:
        """(mails in take order as (name, priority, options), batch size, state)."""
        box = self.mailbox
        mails = [(m.description, m.priority, m.options.value) for m in box.pending_mails()]
        return mails, box.batch_size(), box.state.value


def _took(mail: Mail | None) -> dict:
    return {"event": "took", "mail": mail.description if mail is not None else None}


# -- model -----------------------------------------------------------------------------------
class ModelMailboxRun:
    """Drives ``streamproof.model.mailbox`` through the steps (the model predicts every observation)."""

    def __init__(self, policy: str = "any_mail"):
        self.model = spec.MailboxModel(policy)

    def apply(self, step, index: int | None = None) -> list[dict]:
        try:
            return self._apply(step)
        except spec.Refused as e:
            return [_error(e.flink, str(e), index)]

    def _apply(self, step) -> list[dict]:
        m, op = self.model, step.op
        if op == "new_mailbox":
            m.new_mailbox()
            return []
        if op == "put":
            m.put(spec.Letter(step.mail, step.priority, step.options))
            return []
        if op == "try_take":
            return [_took_letter("took", m.try_take(step.priority))]
        if op == "create_batch":
            return [{"event": "batch", "created": m.create_batch()}]
        if op == "try_take_from_batch":
            return [_took_letter("took", m.try_take_from_batch())]
        if op == "try_yield":
            return [_took_letter("yielded", m.try_yield(step.priority))]
        if op == "should_interrupt":
            return [{"event": "should_interrupt", "value": m.should_interrupt(step.priority)}]
        if op == "has_mail":
            return [{"event": "has_mail", "value": m.has_mail()}]
        if op == "size":
            return [{"event": "size", "value": m.size()}]
        if op == "quiesce":
            return [{"event": "state", "value": m.quiesce()}]
        if op == "close":
            return [{"event": "closed", "dropped": [letter.name for letter in m.close()]}]
        raise ValueError(f"unknown mailbox op {op!r}")

    def view(self) -> tuple[list[tuple], int, str]:
        box = self.model.box
        return [(m.name, m.priority, m.options) for m in box.mails], box.batch, box.state


def _took_letter(event: str, letter: spec.Letter | None) -> dict:
    return {"event": event, "mail": letter.name if letter is not None else None}


# -- whole scenarios -------------------------------------------------------------------------
# Events compare as the vectors do: an ``error`` by its type only; the step index never counts.
COMPARISON = TraceComparison(ignore=frozenset({"step"}))
normalize, same_trace, difference = COMPARISON.normalize, COMPARISON.same, COMPARISON.difference


def run_impl(steps: Iterable, policy: str = "any_mail") -> list[dict]:
    return run_trace(ImplMailboxRun(policy).apply, steps)


def run_model(steps: Iterable, policy: str = "any_mail") -> list[dict]:
    return run_trace(ModelMailboxRun(policy).apply, steps)

"""Specification of Flink's task mailbox (``TaskMailboxImpl``) and of what its executors
(``MailboxExecutorImpl``) take from it and answer.

What is modelled
  * ``mails``: one sequence, in the order every take reads it. Its first ``batch`` mails are the
    batch; the rest is new mail. A mail is a name, a priority and its options (default,
    deferrable, urgent).
  * The visible priority of a mail is its priority, except a deferrable mail, which counts as
    MIN_PRIORITY (-1): only takes with priority -1 see it (FLINK-35528).
  * ``put``: a mail goes to the end; an urgent mail goes behind the urgent mails and ahead of every
    other mail, and belongs to the batch (Flink's ``putFirst`` from the mailbox thread adds to the
    batch; Flink 2.3 keeps urgent mail in put order).
  * ``take(p)`` (``try_take``, ``try_yield``): removes the first mail whose visible priority is at
    least ``p``. Priority hides mail, it never reorders it. ``try_yield_ignoring_deferrable`` also
    passes over deferrable mail, even for ``p = -1`` (a streamproof addition, not in Flink).
  * ``create_batch``: every mail joins the batch; mail put later is not in it (urgent excepted).
    ``try_take_from_batch`` takes the first mail of the batch whatever its priority.
  * ``should_interrupt``: any mail at all (Flink today), or, under the FLINK-35051 policy, any
    urgent mail. ``has_mail`` and ``size`` count every mail, deferrable mail included.
  * Life cycle OPEN -> QUIESCED -> CLOSED: QUIESCED refuses puts, CLOSED refuses puts and takes;
    ``close`` drops every mail and reports them in take order. A refusal is Flink's
    ``MailboxClosedException``; the state does not change.

What is left out
  * Threads, locks and blocking: every call comes from the mailbox thread (so urgent mail always
    lands in the batch); a take that would block is not modelled (scenarios use ``try_take``).
  * What a mail does when it runs, and the mailbox loop (``MailboxProcessor``): the implementation's
    processor is tested directly (``tests/test_mailbox.py``).
  * Choices: none. The mailbox is deterministic, so the model predicts every observation.

Checked by ``tests/test_mailbox_vectors.py`` (the 12 Flink 2.3 traces), ``tests/test_mailbox.py``
(ports of Flink's mailbox tests) and the differential state machine
``properties/mailbox/machine.py``: in the ci profile about 300 scenarios of up to 40 steps (about
14,000 steps per run) with priorities -1..3, every invariant below checked after each step, every
interesting case reached (counts in docs/properties.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

MIN_PRIORITY = -1
OPTIONS = ("default", "deferrable", "urgent")
POLICIES = ("any_mail", "urgent_only")


class Refused(Exception):
    """The step is refused as Flink refuses it; ``flink`` names Flink's exception."""

    def __init__(self, message: str, flink: str = "MailboxClosedException"):
        super().__init__(message)
        self.flink = flink


@dataclass(frozen=True)
class Letter:
    """One mail: its name, the priority it was put with, and its options."""

    name: str
    priority: int
    options: str = "default"

    @property
    def visible_priority(self) -> int:
        return MIN_PRIORITY if self.options == "deferrable" else self.priority

    @property
    def urgent(self) -> bool:
        return self.options == "urgent"


@dataclass
class Mailbox:
    mails: list = field(default_factory=list)  # every mail, in take order: the batch, then new mail
    batch: int = 0                              # the first `batch` mails form the batch
    state: str = "OPEN"                         # OPEN | QUIESCED | CLOSED


class MailboxModel:
    """The mailbox of a scenario and its actions; each action returns what it observes."""

    def __init__(self, policy: str = "any_mail"):
        assert policy in POLICIES
        self.policy = policy
        self.box = Mailbox()

    def new_mailbox(self) -> None:
        """A fresh, empty, OPEN mailbox replaces the current one."""
        self.box = Mailbox()

    def put(self, letter: Letter) -> None:
        """Urgent: behind the urgent mails, in the batch; otherwise at the end."""
        box = self.box
        if box.state != "OPEN":
            raise Refused(f"put refused: the mailbox is {box.state}")
        if letter.urgent:
            box.mails.insert(sum(m.urgent for m in box.mails), letter)
            box.batch += 1
        else:
            box.mails.append(letter)

    def try_take(self, priority: int) -> Letter | None:
        """The first mail whose visible priority is at least ``priority``, removed; else None."""
        box = self.box
        if box.state == "CLOSED":
            raise Refused("take refused: the mailbox is CLOSED")
        for index, letter in enumerate(box.mails):
            if letter.visible_priority >= priority:
                return self._remove(index)
        return None

    def try_yield(self, priority: int) -> Letter | None:
        """An executor of ``priority`` takes like ``try_take`` and runs what it took."""
        return self.try_take(priority)

    def try_yield_ignoring_deferrable(self, priority: int) -> Letter | None:
        """Like ``try_yield``, passing over deferrable mail whatever ``priority`` is."""
        box = self.box
        if box.state == "CLOSED":
            raise Refused("take refused: the mailbox is CLOSED")
        for index, letter in enumerate(box.mails):
            if letter.visible_priority >= priority and letter.options != "deferrable":
                return self._remove(index)
        return None

    def create_batch(self) -> bool:
        """Every mail joins the batch; answers whether the batch holds mail."""
        box = self.box
        box.batch = len(box.mails)
        return box.batch > 0

    def try_take_from_batch(self) -> Letter | None:
        """The first mail of the batch, whatever its priority; None when the batch is empty."""
        box = self.box
        if box.state == "CLOSED":
            raise Refused("take refused: the mailbox is CLOSED")
        return self._remove(0) if box.batch > 0 else None

    def should_interrupt(self, priority: int) -> bool:
        """Any mail (Flink today) or any urgent mail (FLINK-35051); the executor's priority does
        not matter."""
        if self.policy == "urgent_only":
            return any(m.urgent for m in self.box.mails)
        return bool(self.box.mails)

    def has_mail(self) -> bool:
        return bool(self.box.mails)

    def size(self) -> int:
        return len(self.box.mails)

    def quiesce(self) -> str:
        """OPEN becomes QUIESCED; any other state stays. Answers the state."""
        if self.box.state == "OPEN":
            self.box.state = "QUIESCED"
        return self.box.state

    def close(self) -> list:
        """CLOSED; answers the dropped mails in take order (none when already closed)."""
        box = self.box
        dropped, box.mails, box.batch, box.state = box.mails, [], 0, "CLOSED"
        return dropped

    def _remove(self, index: int) -> Letter:
        box = self.box
        if index < box.batch:
            box.batch -= 1
        return box.mails.pop(index)


# -- invariants (checked after every step by the differential check) ---------------------------
def urgent_mail_first(box: Mailbox) -> bool:
    """Urgent mails form a prefix of the take order (put order among them by construction)."""
    seen_other = False
    for letter in box.mails:
        if not letter.urgent:
            seen_other = True
        elif seen_other:
            return False
    return True


def urgent_mail_in_batch(box: Mailbox) -> bool:
    """Every urgent mail is in the batch."""
    return sum(m.urgent for m in box.mails) <= box.batch


def batch_within_mails(box: Mailbox) -> bool:
    return 0 <= box.batch <= len(box.mails)


def closed_is_empty(box: Mailbox) -> bool:
    return box.state != "CLOSED" or not box.mails


INVARIANTS = {
    "urgent-mail-first": urgent_mail_first,
    "urgent-mail-in-batch": urgent_mail_in_batch,
    "batch-within-mails": batch_within_mails,
    "closed-is-empty": closed_is_empty,
}

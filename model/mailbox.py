"""Specification of Flink's task mailbox (``TaskMailboxImpl``) and of what its executors
(``MailboxExecutorImpl``) take from it and answer.

What is modelled
  * ``mails``: every mail as Flink 2.3 stores it: the batch (its first ``batch`` mails), then the
    queue of new mail. A mail is a name, a priority and its options (default, deferrable, urgent).
    Takes read the batch, then the queue; ``close`` drops them in this stored order.
  * The visible priority of a mail is its priority, except a deferrable mail, which counts as
    MIN_PRIORITY (-1): only takes with priority -1 see it (FLINK-35528).
  * ``put``: a mail goes to the end of the queue. An urgent mail (Flink's ``putFirst`` from the
    mailbox thread) goes to the head of the batch when the batch starts with non-urgent mail and no
    urgent mail waits in the queue; otherwise to the head of the queue, so urgent mail waiting
    there is latest first.
  * Before a take (``try_take``, ``try_yield``, ``try_take_from_batch``) the urgent mails at the
    head of the queue move one by one to the head of the batch (restoring put order), unless the
    batch starts with urgent mail; non-urgent queued mail stays (Flink 2.3's
    ``moveUrgentMailsToBatchIfNeeded(true)``).
  * ``take(p)`` (``try_take``, ``try_yield``): then removes the first mail whose visible priority
    is at least ``p``. Priority hides mail, it never reorders it. ``try_yield_ignoring_deferrable``
    also passes over deferrable mail, even for ``p = -1`` (a streamproof addition, not in Flink).
  * ``create_batch``: moves the whole queue (urgent mail to the head of the batch, the rest to its
    tail) when the batch is empty, or when it starts with non-urgent mail and urgent mail waits;
    otherwise nothing moves. Answers whether the batch holds mail. ``try_take_from_batch`` takes
    the first mail of the batch whatever its priority.
  * ``should_interrupt``: any mail at all (Flink today), or, under the FLINK-35051 policy, any
    urgent mail. ``has_mail`` and ``size`` count every mail, deferrable mail included.
  * Life cycle OPEN -> QUIESCED -> CLOSED: QUIESCED refuses puts, CLOSED refuses puts and takes;
    ``close`` drops every mail and reports them, the batch then the queue. A refusal is Flink's
    ``MailboxClosedException``; the state does not change.

What is left out
  * Threads, locks and blocking: every call comes from the mailbox thread (so urgent mail always
    lands in the batch); a take that would block is not modelled (scenarios use ``try_take``).
  * What a mail does when it runs, and the mailbox loop (``MailboxProcessor``): the implementation's
    processor is tested directly (``tests/test_mailbox.py``).
  * Choices: none. The mailbox is deterministic, so the model predicts every observation.

Checked by ``tests/test_mailbox_vectors.py`` (the 12 Flink 2.3 traces), ``tests/test_conformance_mailbox.py``
(regression scenarios observed on Flink 2.3, one per divergence found by ``streamproof conform``),
``tests/test_mailbox.py``
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
    mails: list = field(default_factory=list)  # every mail as stored: the batch, then the queue
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
        """Urgent: to the batch's head if it starts with non-urgent mail and no urgent mail is
        queued, else to the queue's head; otherwise to the end of the queue."""
        box = self.box
        if box.state != "OPEN":
            raise Refused(f"put refused: the mailbox is {box.state}")
        if not letter.urgent:
            box.mails.append(letter)
        elif box.batch > 0 and not box.mails[0].urgent and not self._urgent_queued():
            box.mails.insert(0, letter)
            box.batch += 1
        else:
            box.mails.insert(box.batch, letter)

    def _urgent_queued(self) -> bool:
        """Flink's ``hasNewUrgentMail``: the queue starts with urgent mail."""
        box = self.box
        return len(box.mails) > box.batch and box.mails[box.batch].urgent

    def _move_urgent_to_batch(self, urgent_only: bool) -> None:
        """Flink 2.3's ``moveUrgentMailsToBatchIfNeeded``: queued urgent mail to the batch's head,
        one by one; the rest of the queue to the batch's tail too unless ``urgent_only``."""
        box = self.box
        batch, queue = box.mails[:box.batch], box.mails[box.batch:]
        if batch:
            if batch[0].urgent or not self._urgent_queued():
                return
        elif not queue or (urgent_only and not self._urgent_queued()):
            return
        while queue:
            letter = queue.pop(0)
            if letter.urgent:
                batch.insert(0, letter)
            elif urgent_only:
                queue.insert(0, letter)
                break
            else:
                batch.append(letter)
        box.mails, box.batch = batch + queue, len(batch)

    def _check_take(self) -> None:
        if self.box.state == "CLOSED":
            raise Refused("take refused: the mailbox is CLOSED")

    def try_take(self, priority: int) -> Letter | None:
        """Queued urgent mail joins the batch; then the first mail (batch, then queue) whose visible
        priority is at least ``priority``, removed; else None."""
        return self._take(lambda letter: letter.visible_priority >= priority)

    def try_yield(self, priority: int) -> Letter | None:
        """An executor of ``priority`` takes like ``try_take`` and runs what it took."""
        return self.try_take(priority)

    def try_yield_ignoring_deferrable(self, priority: int) -> Letter | None:
        """Like ``try_yield``, passing over deferrable mail whatever ``priority`` is."""
        return self._take(lambda letter: letter.visible_priority >= priority and letter.options != "deferrable")

    def _take(self, visible) -> Letter | None:
        self._check_take()
        self._move_urgent_to_batch(urgent_only=True)
        for index, letter in enumerate(self.box.mails):
            if visible(letter):
                return self._remove(index)
        return None

    def create_batch(self) -> bool:
        """The queue joins the batch if the batch is empty or urgent mail waits to go ahead of it;
        answers whether the batch holds mail."""
        self._move_urgent_to_batch(urgent_only=False)
        return self.box.batch > 0

    def try_take_from_batch(self) -> Letter | None:
        """Queued urgent mail joins the batch; then the first mail of the batch, whatever its
        priority; None when the batch is empty."""
        self._check_take()
        self._move_urgent_to_batch(urgent_only=True)
        return self._remove(0) if self.box.batch > 0 else None

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
def _urgent_prefix(letters: list) -> bool:
    seen_other = False
    for letter in letters:
        if not letter.urgent:
            seen_other = True
        elif seen_other:
            return False
    return True


def urgent_mail_first(box: Mailbox) -> bool:
    """Urgent mails form a prefix of the batch and a prefix of the queue: urgent mail is put at
    either head and only ever moves from the queue's head to the batch's head."""
    return _urgent_prefix(box.mails[:box.batch]) and _urgent_prefix(box.mails[box.batch:])


def batch_within_mails(box: Mailbox) -> bool:
    return 0 <= box.batch <= len(box.mails)


def closed_is_empty(box: Mailbox) -> bool:
    return box.state != "CLOSED" or not box.mails


INVARIANTS = {
    "urgent-mail-first": urgent_mail_first,
    "batch-within-mails": batch_within_mails,
    "closed-is-empty": closed_is_empty,
}

"""Known-bug variants of the task mailbox (caught by ``mailbox.differential``)."""

from __future__ import annotations

from contextlib import contextmanager

from streamproof.impl.tasks.mailbox import Mail, MailboxClosedError, MailboxExecutor, MailboxState, TaskMailbox
from streamproof.properties.bugzoo import variant
from streamproof.properties.timers.bugzoo import patched

PROPERTY = "mailbox.differential"


@variant("priority-reorders-mail", "streamproof", PROPERTY,
         "take(p) returns the visible mail of the highest priority instead of the first one in "
         "FIFO order: priority reorders mail instead of only hiding it (DESIGN.md 3.2).")
@contextmanager
def priority_reorders():
    def _take_or_none(self, priority, skip_deferrable=False):
        candidates = [(mail, where) for where in (self._batch, self._queue) for mail in where
                      if mail.get_priority() >= priority and not (skip_deferrable and mail.options.is_deferrable)]
        if not candidates:
            return None
        mail, where = max(candidates, key=lambda c: c[0].get_priority())  # BUG: reorders
        index = where.index(mail)
        del where[index]
        if where is self._batch and index < self._urgent_in_batch:
            self._urgent_in_batch -= 1
        return mail

    with patched(TaskMailbox, _take_or_none=_take_or_none):
        yield


@variant("urgent-mail-appended-at-tail", "streamproof", PROPERTY,
         "put_first enqueues urgent mail at the tail like any other mail: a checkpoint barrier waits "
         "behind every mail queued before it.")
@contextmanager
def urgent_at_tail():
    def put_first(self, mail):
        self._check_put_state()
        self._queue.append(mail)  # BUG: not ahead of the other mail

    with patched(TaskMailbox, put_first=put_first):
        yield


@variant("urgent-mail-lifo", "Flink 1.x TaskMailboxImpl.putFirst (batch.addFirst)", PROPERTY,
         "Urgent mail is pushed at the very head of the batch, so the last urgent mail runs first; "
         "Flink 2.3 keeps urgent mail in put order (vector put_urgent_first_fifo_among_urgent).")
@contextmanager
def urgent_lifo():
    def put_first(self, mail):
        self._check_put_state()
        self._batch.appendleft(mail)  # BUG: ahead of the urgent mail put before it
        self._urgent_in_batch += 1

    with patched(TaskMailbox, put_first=put_first):
        yield


@variant("batch-sees-later-puts", "streamproof", PROPERTY,
         "The batch is not fixed when created: once it is empty, try_take_from_batch goes on with "
         "mail put later, so a mail that keeps enqueuing mail starves the default action "
         "(TaskMailboxProcessorTest#testAvoidStarvation).")
@contextmanager
def batch_sees_later_puts():
    original = TaskMailbox.try_take_from_batch

    def try_take_from_batch(self):
        self._check_take_state()
        if not self._batch and self._queue:
            return self._queue.popleft()  # BUG: mail put after the batch was created
        return original(self)

    with patched(TaskMailbox, try_take_from_batch=try_take_from_batch):
        yield


@variant("deferrable-visible-to-yield", "FLINK-35528", PROPERTY,
         "Deferrable mail keeps the priority of its executor, so try_yield of an operator's "
         "executor runs it (e.g. the continuation of interrupted timer firing, FLIP-443).")
@contextmanager
def deferrable_visible():
    def get_priority(self):
        return self.priority  # BUG: deferrable mail should count as MIN_PRIORITY

    with patched(Mail, get_priority=get_priority):
        yield


@variant("quiesced-mailbox-accepts-puts", "streamproof", PROPERTY,
         "The put check refuses only a CLOSED mailbox: a QUIESCED mailbox still accepts mail, "
         "which then runs after the task was told to finish (or is dropped at close).")
@contextmanager
def quiesced_accepts():
    def _check_put_state(self):
        if self._state is MailboxState.CLOSED:  # BUG: QUIESCED must refuse too
            raise MailboxClosedError("Mailbox is in state CLOSED, but is required to be in state OPEN "
                                     "for put operations.")

    with patched(TaskMailbox, _check_put_state=_check_put_state):
        yield


@variant("close-forgets-the-batch", "streamproof", PROPERTY,
         "close() reports only the queued mails as dropped; the mails of the current batch vanish "
         "unreported (their futures are never cancelled).")
@contextmanager
def close_forgets_batch():
    def close(self):
        if self._state is MailboxState.CLOSED:
            return []
        dropped = list(self._queue)  # BUG: the batch is cleared without being reported
        self.drain()
        self._state = MailboxState.CLOSED
        return dropped

    with patched(TaskMailbox, close=close):
        yield


@variant("should-interrupt-only-for-visible-mail", "streamproof", PROPERTY,
         "should_interrupt answers only for mail this executor could take, so deferrable mail (and "
         "mail of lower priority) never interrupts timer firing; Flink interrupts for any mail "
         "(vector deferrable_invisible_to_yield).")
@contextmanager
def interrupt_only_visible():
    def should_interrupt(self):
        return any(m.get_priority() >= self.priority for m in self.mailbox.pending_mails())  # BUG

    with patched(MailboxExecutor, should_interrupt=should_interrupt):
        yield

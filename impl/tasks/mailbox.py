"""The task mailbox: Flink's ``TaskMailboxImpl``, ``MailboxExecutorImpl`` and ``MailboxProcessor``.

Layering as in Flink (``org.apache.flink.streaming.runtime.tasks.mailbox``): a :class:`TaskMailbox`
holds :class:`Mail` (a queue filled by ``put`` and a batch that ``create_batch`` moves out of it);
a :class:`MailboxExecutor` of some priority puts mail into it and yields to it; the
:class:`MailboxProcessor` runs the mailbox loop: the mail batch, then one default action
(processing input), again and again until the default action reports that all actions completed.

streamproof is single-threaded and deterministic: every call comes from the mailbox thread, so
Flink's locks and thread checks have no counterpart here. Where Flink would block (``take`` with
no visible mail, a suspended default action with an empty mailbox) we raise
:class:`MailboxWouldBlockError` or return, so that a run never hangs.

Size: Flink's ``mailbox`` package whole: three classes sharing :class:`Mail` and its states, read beside Flink's source.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable, Protocol

MIN_PRIORITY = -1  # TaskMailbox.MIN_PRIORITY: take(MIN_PRIORITY) sees every mail, deferrable too
DEFAULT_PRIORITY = 0
MAX_PRIORITY = 2**31 - 1  # TaskMailbox.MAX_PRIORITY (Integer.MAX_VALUE)
DEFAULT_MAX_STEPS = 1_000_000  # run_mailbox_loop's bound on loop iterations

__all__ = [
    "MailOptions", "InterruptPolicy", "MailboxState", "Mail", "TaskMailbox", "MailboxExecutor",
    "MailboxProcessor", "MailboxController", "Suspension", "MailboxStateError",
    "MailboxClosedError", "RejectedExecutionError", "MailboxWouldBlockError",
    "MailboxLoopBudgetExceeded", "MIN_PRIORITY", "DEFAULT_PRIORITY", "MAX_PRIORITY",
]


class MailOptions(Enum):
    """How a mail is queued and who may take it (Flink's ``MailboxExecutor.MailOptions``)."""

    DEFAULT = "default"
    # FLINK-35528: a mail that may wait (e.g. the continuation of interrupted timer firing); it
    # counts as MIN_PRIORITY, so only the mailbox loop and executors of MIN_PRIORITY take it.
    DEFERRABLE = "deferrable"
    # Time-sensitive mail (checkpoint barriers, control mails): goes ahead of every other mail.
    URGENT = "urgent"

    @property
    def is_deferrable(self) -> bool:
        return self is MailOptions.DEFERRABLE

    @property
    def is_urgent(self) -> bool:
        return self is MailOptions.URGENT


class InterruptPolicy(Enum):
    """When ``MailboxExecutor.should_interrupt()`` answers true."""

    ANY_MAIL = "any_mail"        # Flink today: the mailbox holds any mail at all
    URGENT_ONLY = "urgent_only"  # FLINK-35051: only time-sensitive (urgent) mail interrupts


class MailboxState(Enum):
    """The life cycle OPEN -> QUIESCED -> CLOSED (Flink's ``TaskMailbox.State``)."""

    OPEN = "OPEN"          # put and take
    QUIESCED = "QUIESCED"  # take only
    CLOSED = "CLOSED"      # neither; the remaining mail was dropped

    @property
    def is_accepting_mails(self) -> bool:
        return self is MailboxState.OPEN


class MailboxStateError(RuntimeError):
    """An operation the mailbox's state does not allow (Flink: ``IllegalStateException``)."""


class MailboxClosedError(MailboxStateError):
    """Put into a quiesced or closed mailbox, take from a closed one (Flink: ``MailboxClosedException``)."""


class RejectedExecutionError(MailboxClosedError):
    """``MailboxExecutor.execute`` on a mailbox that takes no more mail (Flink:
    ``RejectedExecutionException`` wrapping the ``MailboxClosedException``)."""


class MailboxWouldBlockError(MailboxStateError):
    """``take`` / ``yield_`` found no visible mail: Flink's thread would block waiting for another
    thread to put some; in a single-threaded run it would wait forever."""


class MailboxLoopBudgetExceeded(RuntimeError):
    """``run_mailbox_loop`` ran more iterations than its ``max_steps`` without completing."""


def _check_priority(priority: Any, what: str = "priority") -> int:
    if not (isinstance(priority, int) and not isinstance(priority, bool)
            and MIN_PRIORITY <= priority <= MAX_PRIORITY):
        raise ValueError(f"{what} must be an integer in [{MIN_PRIORITY}, 2^31-1], got {priority!r}")
    return priority


@dataclass(eq=False)
class Mail:
    """A runnable with a description, the priority of the executor that put it, and options."""

    runnable: Callable[[], Any]
    description: str = ""
    priority: int = DEFAULT_PRIORITY
    options: MailOptions = MailOptions.DEFAULT

    def __post_init__(self) -> None:
        if not callable(self.runnable):
            raise TypeError(f"mail {self.description!r}: runnable must be callable, got {self.runnable!r}")
        _check_priority(self.priority, f"mail {self.description!r}: priority")
        if not isinstance(self.options, MailOptions):
            raise TypeError(f"mail {self.description!r}: options must be MailOptions, got {self.options!r}")

    def get_priority(self) -> int:
        """The priority takes compare with: a deferrable mail counts as MIN_PRIORITY (FLINK-35528)."""
        return MIN_PRIORITY if self.options.is_deferrable else self.priority

    @property
    def is_urgent(self) -> bool:
        return self.options.is_urgent

    def run(self) -> None:
        self.runnable()

    def __str__(self) -> str:
        return self.description

    def __repr__(self) -> str:
        return f"Mail({self.description!r}, priority={self.priority}, options={self.options.value})"


class TaskMailbox:
    """Flink 2.3's ``TaskMailboxImpl``: a queue of new mail, a batch, and a life cycle.

    Takes read the batch first, then the queue. ``take(p)`` returns the first mail of that order
    whose priority is at least ``p``: priority hides mail, it never reorders it.

    Urgent mail (Flink 2.3, every put from the mailbox thread):
      * ``put_first`` adds it to the head of the batch when the batch starts with non-urgent mail
        and no urgent mail waits in the queue; otherwise to the head of the queue (so urgent mails
        waiting there are in reverse put order, latest first).
      * Before every take (``try_take``, ``take``, ``try_take_from_batch``) the urgent mails at the
        head of the queue move, one by one, to the head of the batch (which restores put order),
        unless the batch already starts with urgent mail; non-urgent queued mail stays.
      * ``create_batch`` does the same but moves the whole queue (urgent mail to the head, the rest
        to the tail); when the batch is not empty and no urgent mail waits, it moves nothing.
    ``drain`` and ``close`` return the batch, then the queue, as stored.
    """

    State = MailboxState

    # Read and written by older bug-zoo patches (properties/mailbox/bugzoo.py); the mailbox itself
    # no longer counts urgent mail (the layout above replaced that count).
    _urgent_in_batch = 0

    def __init__(self) -> None:
        self._queue: deque[Mail] = deque()  # new mail: queued urgent mail (latest first), then put order
        self._batch: deque[Mail] = deque()  # the batch: urgent mail first, then the batched mail
        self._state = MailboxState.OPEN

    # -- life cycle ------------------------------------------------------------------------------
    @property
    def state(self) -> MailboxState:
        return self._state

    def get_state(self) -> MailboxState:
        return self._state

    def quiesce(self) -> None:
        """Stop accepting mail; what is queued can still be taken. No effect unless OPEN."""
        if self._state is MailboxState.OPEN:
            self._state = MailboxState.QUIESCED

    def close(self) -> list[Mail]:
        """Refuse puts and takes from now on; returns the dropped mails as :meth:`drain` does."""
        if self._state is MailboxState.CLOSED:
            return []
        dropped = self.drain()
        self._state = MailboxState.CLOSED
        return dropped

    def drain(self) -> list[Mail]:
        """Removes and returns every mail, the batch then the queue as stored, whatever the state.

        Urgent mail still waiting in the queue comes out latest first, as in Flink 2.3.
        """
        drained = [*self._batch, *self._queue]
        self._batch.clear()
        self._queue.clear()
        return drained

    def _check_put_state(self) -> None:
        if self._state is not MailboxState.OPEN:
            raise MailboxClosedError(f"Mailbox is in state {self._state.value}, but is required to be "
                                     f"in state OPEN for put operations.")

    def _check_take_state(self) -> None:
        if self._state is MailboxState.CLOSED:
            raise MailboxClosedError("Mailbox is in state CLOSED, but is required to be in state OPEN "
                                     "or QUIESCED for take operations.")

    # -- put ---------------------------------------------------------------------------------------
    def put(self, mail: Mail) -> None:
        """Enqueues ``mail`` at the tail of the queue; urgent mail goes through :meth:`put_first`."""
        if mail.is_urgent:
            self.put_first(mail)
            return
        self._check_put_state()
        self._queue.append(mail)

    def put_first(self, mail: Mail) -> None:
        """Puts ``mail`` as urgent mail (Flink 2.3's private ``putFirst``, called for urgent mail only;
        a mail that is not urgent is marked urgent).

        It goes to the head of the batch when the batch starts with non-urgent mail and no urgent
        mail waits in the queue, otherwise to the head of the queue.
        """
        self._check_put_state()
        if not mail.is_urgent:
            mail.options = MailOptions.URGENT
        if self._batch and not self._batch[0].is_urgent and not self._has_new_urgent_mail():
            self._batch.appendleft(mail)
        else:
            self._queue.appendleft(mail)

    def _has_new_urgent_mail(self) -> bool:
        """Flink's ``hasNewUrgentMail``: urgent mail waits at the head of the queue."""
        return bool(self._queue) and self._queue[0].is_urgent

    def _move_urgent_mails_to_batch_if_needed(self, urgent_only: bool) -> None:
        """Flink 2.3's ``moveUrgentMailsToBatchIfNeeded``: queued urgent mail to the batch's head."""
        if self._batch:
            if self._batch[0].is_urgent or not self._has_new_urgent_mail():
                return
        elif not self._queue or (urgent_only and not self._has_new_urgent_mail()):
            return
        while self._queue:
            mail = self._queue.popleft()
            if mail.is_urgent:
                self._batch.appendleft(mail)
            elif urgent_only:
                self._queue.appendleft(mail)
                break
            else:
                self._batch.append(mail)

    # -- take --------------------------------------------------------------------------------------
    def _take_or_none(self, priority: int, skip_deferrable: bool = False) -> Mail | None:
        for where in (self._batch, self._queue):
            for index, mail in enumerate(where):
                if mail.get_priority() >= priority and not (skip_deferrable and mail.options.is_deferrable):
                    del where[index]
                    return mail
        return None

    def try_take(self, priority: int, *, skip_deferrable: bool = False) -> Mail | None:
        """The first mail (batch first, then queue) of priority >= ``priority``, or None; queued
        urgent mail first joins the batch.

        ``skip_deferrable`` also passes over deferrable mail (for
        :meth:`MailboxExecutor.try_yield_ignoring_deferrable`).
        """
        _check_priority(priority)
        self._check_take_state()
        self._move_urgent_mails_to_batch_if_needed(urgent_only=True)
        return self._take_or_none(priority, skip_deferrable)

    def take(self, priority: int) -> Mail:
        """Like :meth:`try_take`; where Flink would block, raises :class:`MailboxWouldBlockError`."""
        mail = self.try_take(priority)
        if mail is None:
            raise MailboxWouldBlockError(
                f"take({priority}) would block: no mail of priority >= {priority} among the "
                f"{self.size()} mails, and no other thread can put one")
        return mail

    def create_batch(self) -> bool:
        """Moves the queue into the batch when the batch is empty or urgent mail waits (urgent mail
        to the head, the rest to the tail); returns whether the batch holds mail.

        The batch is fixed from now on: mail put later waits for the next batch (urgent mail
        excepted). The mailbox loop processes one batch per iteration, so mail that keeps
        enqueuing mail cannot starve the default action.
        """
        self._move_urgent_mails_to_batch_if_needed(urgent_only=False)
        return bool(self._batch)

    def try_take_from_batch(self) -> Mail | None:
        """The next mail of the batch, whatever its priority, or None when the batch is empty;
        queued urgent mail first joins the batch."""
        self._check_take_state()
        self._move_urgent_mails_to_batch_if_needed(urgent_only=True)
        return self._batch.popleft() if self._batch else None

    # -- observe -----------------------------------------------------------------------------------
    def has_mail(self) -> bool:
        return bool(self._batch) or bool(self._queue)

    def has_urgent_mail(self) -> bool:
        return any(mail.is_urgent for mail in self._batch) or any(mail.is_urgent for mail in self._queue)

    def size(self) -> int:
        return len(self._batch) + len(self._queue)

    def pending_mails(self) -> list[Mail]:
        """Every mail as stored, the batch then the queue (the order :meth:`drain` returns): a view
        for checks. Takes read them in this order, except that queued urgent mail (latest first
        here) joins the batch's head, in put order, before a take."""
        return [*self._batch, *self._queue]

    def batch_size(self) -> int:
        return len(self._batch)

    def run_exclusively(self, fn: Callable[[], Any]) -> Any:
        """Runs ``fn`` holding the mailbox lock (single-threaded here: just runs it)."""
        return fn()


class MailboxExecutor:
    """Flink's ``MailboxExecutorImpl``: puts mail of its priority and yields to mail it may see."""

    def __init__(self, mailbox: TaskMailbox, priority: int,
                 interrupt_policy: InterruptPolicy = InterruptPolicy.ANY_MAIL):
        self.mailbox = mailbox
        self.priority = _check_priority(priority)
        self.interrupt_policy = InterruptPolicy(interrupt_policy)

    def execute(self, command: Callable[[], Any], description: str,
                options: MailOptions = MailOptions.DEFAULT) -> None:
        """Puts ``command`` as a mail of this executor's priority (urgent mail goes first)."""
        mail = Mail(command, description, self.priority, options)
        try:
            self.mailbox.put(mail)
        except MailboxClosedError as e:
            raise RejectedExecutionError(f"cannot execute {description!r}: {e}") from e

    def yield_(self) -> None:
        """Runs the first mail of priority >= this executor's; raises MailboxWouldBlockError when
        there is none (Flink blocks)."""
        self.mailbox.take(self.priority).run()

    def try_yield(self) -> bool:
        """Runs the first mail of priority >= this executor's, if any; returns whether one ran."""
        mail = self.mailbox.try_take(self.priority)
        if mail is None:
            return False
        mail.run()
        return True

    def try_yield_ignoring_deferrable(self) -> bool:
        """Like :meth:`try_yield`, but never runs deferrable mail, even for MIN_PRIORITY."""
        mail = self.mailbox.try_take(self.priority, skip_deferrable=True)
        if mail is None:
            return False
        mail.run()
        return True

    def should_interrupt(self) -> bool:
        """Whether a long computation (firing timers, FLIP-443) should return to the mailbox.

        ANY_MAIL (Flink today): any mail at all, deferrable mail and mail this executor could not
        take included. URGENT_ONLY (FLINK-35051): only urgent mail.
        """
        if self.interrupt_policy is InterruptPolicy.URGENT_ONLY:
            return self.mailbox.has_urgent_mail()
        return self.mailbox.has_mail()


class Suspension:
    """A suspended default action (Flink's ``MailboxDefaultAction.Suspension``)."""

    def __init__(self, processor: MailboxProcessor):
        self._processor = processor

    def resume(self) -> None:
        """The default action runs again from the next loop iteration on."""
        if self._processor._suspended_default_action is self:
            self._processor._suspended_default_action = None


class MailboxController:
    """What the default action may do to the loop (Flink's ``MailboxDefaultAction.Controller``)."""

    def __init__(self, processor: MailboxProcessor):
        self._processor = processor

    def all_actions_completed(self) -> None:
        """End of input: the loop stops once the mail ahead of this signal has run."""
        self._processor.all_actions_completed()

    def suspend_default_action(self) -> Suspension:
        """No default action until the returned suspension is resumed (e.g. no input available)."""
        return self._processor._suspend_default_action()


class MailboxDefaultAction(Protocol):
    def __call__(self, controller: MailboxController) -> None: ...


class MailboxProcessor:
    """Flink's ``MailboxProcessor``: the mailbox loop of one task, driven step by step.

    One loop iteration (:meth:`run_mailbox_step`): create a batch and run its mails, then, if the
    default action is not suspended, run it once. The loop ends when a control mail sent by
    :meth:`all_actions_completed` (end of input) or :meth:`suspend` runs.
    """

    def __init__(self, default_action: MailboxDefaultAction, mailbox: TaskMailbox | None = None,
                 interrupt_policy: InterruptPolicy = InterruptPolicy.ANY_MAIL):
        self.mailbox = mailbox if mailbox is not None else TaskMailbox()
        self.interrupt_policy = InterruptPolicy(interrupt_policy)
        self._default_action = default_action
        self._controller = MailboxController(self)
        self._mailbox_loop_running = True  # false once all actions completed
        self._suspended = False            # the loop returns (suspend() or all actions completed)
        self._suspended_default_action: Suspension | None = None
        self._main_executor = self.get_mailbox_executor(MIN_PRIORITY)

    # -- executors -------------------------------------------------------------------------------
    def get_main_mailbox_executor(self) -> MailboxExecutor:
        """The executor of MIN_PRIORITY: it takes every mail, deferrable mail included."""
        return self._main_executor

    def get_mailbox_executor(self, priority: int) -> MailboxExecutor:
        return MailboxExecutor(self.mailbox, priority, self.interrupt_policy)

    # -- state -----------------------------------------------------------------------------------
    def is_mailbox_loop_running(self) -> bool:
        return self._mailbox_loop_running

    def is_default_action_available(self) -> bool:
        return self._suspended_default_action is None

    def has_mail(self) -> bool:
        return self.mailbox.has_mail()

    def _is_next_loop_possible(self) -> bool:
        return not self._suspended

    # -- the loop --------------------------------------------------------------------------------
    def run_mailbox_step(self) -> bool:
        """One iteration of the mailbox loop; returns whether any mail or the default action ran.

        Flink's ``runMailboxStep`` runs a single mail; ours is one iteration of
        ``runMailboxLoop`` (a whole batch, then one default action). While the default action is
        suspended Flink keeps taking mail until it is resumed; here each batch is one step, in the
        same order, so ``max_steps`` bounds a mail that re-enqueues itself forever.
        """
        self._suspended = not self._mailbox_loop_running
        return self._step()

    def _step(self) -> bool:
        if not self._is_next_loop_possible():
            return False
        ran = self._process_mail()
        if self._is_next_loop_possible() and self.is_default_action_available():
            self._default_action(self._controller)
            ran = True
        return ran

    def _process_mail(self) -> bool:
        """Runs the batch; stops early when a control mail ended the loop."""
        if not self.mailbox.create_batch():
            return False
        ran = False
        while self._is_next_loop_possible() and (mail := self.mailbox.try_take_from_batch()) is not None:
            mail.run()
            ran = True
        return ran

    def run_mailbox_loop(self, max_steps: int = DEFAULT_MAX_STEPS) -> bool:
        """Runs loop iterations until the loop ends (True) or would block (False).

        It ends when :meth:`all_actions_completed` or :meth:`suspend` took effect. It would block
        when the default action is suspended and there is no mail (Flink waits for another thread
        to put some): put mail or resume the suspension, then call again. Raises
        :class:`MailboxLoopBudgetExceeded` after ``max_steps`` iterations.
        """
        self._suspended = not self._mailbox_loop_running
        steps = 0
        while self._is_next_loop_possible():
            if not self.is_default_action_available() and not self.mailbox.has_mail():
                return False
            if steps >= max_steps:
                raise MailboxLoopBudgetExceeded(
                    f"the mailbox loop ran {max_steps} iterations without completing: the default "
                    f"action never called controller.all_actions_completed() ({self.mailbox.size()} "
                    f"mails pending)")
            self._step()
            steps += 1
        return True

    # -- control ---------------------------------------------------------------------------------
    def _send_control_mail(self, action: Callable[[], None], description: str) -> None:
        """An urgent mail, unless the mailbox takes no more mail (Flink's ``sendPoisonMail``)."""
        def put() -> None:
            if self.mailbox.state is MailboxState.OPEN:
                self.mailbox.put(Mail(action, description, MAX_PRIORITY, MailOptions.URGENT))
        self.mailbox.run_exclusively(put)

    def all_actions_completed(self) -> None:
        """Ends the loop for good once this poison mail runs; mail behind it stays in the mailbox."""
        def stop() -> None:
            self._mailbox_loop_running = False
            self._suspended = True
        self._send_control_mail(stop, "poison mail")

    def suspend(self) -> None:
        """Returns from the loop once this mail runs; ``run_mailbox_loop`` may be called again."""
        def pause() -> None:
            self._suspended = True
        self._send_control_mail(pause, "suspend mail")

    def _suspend_default_action(self) -> Suspension:
        if self._suspended_default_action is None:
            self._suspended_default_action = Suspension(self)
        return self._suspended_default_action

    # -- end of life -----------------------------------------------------------------------------
    def prepare_close(self) -> None:
        """Quiesces the mailbox: no new mail, what is queued can still run."""
        self.mailbox.quiesce()

    def drain(self) -> None:
        """Runs every mail left in the mailbox, once, in take order."""
        for mail in self.mailbox.drain():
            mail.run()

    def close(self) -> list[Mail]:
        """Closes the mailbox; returns the mails it dropped (never run)."""
        return self.mailbox.close()

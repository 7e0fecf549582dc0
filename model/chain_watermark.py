"""Specification of Flink's ``MailboxWatermarkProcessor`` (FLIP-443) in a chain of two operators
``A -> B`` that share one task mailbox.

What is modelled
  * Each operator has a set of event-time timers ``(ts, key)`` and a watermark processor: the
    maximum input watermark ``max_input`` (initially ``MIN_TIME``) and whether a continuation
    mail is scheduled (at most one per operator).
  * An input watermark ``w`` raises ``max_input`` to ``max(max_input, w)``, then advances: the
    due timers (``ts <= max_input``) fire one at a time in timestamp order; after each fired
    timer the advance stops if the mailbox holds any mail (``shouldInterrupt`` of Flink's
    ``MailboxExecutorImpl``: any mail, deferrable included). A timer may put a mail when it fires
    (the scenario's ``timer_puts_mail``): that mail is in the mailbox before the check, so it
    interrupts the advance, even after the last due timer.
  * Completed advance: the processor emits ``max_input`` downstream, whether it left before or
    not (``flink-2.3``); A's output is B's input (Flink's ``ChainingOutput``), synchronously.
  * Interrupted advance: if no continuation is scheduled, one is put (deferrable, named
    ``"<operator>:emitWatermarkInsideMailbox"``); else nothing (the scheduled one picks up the
    new maximum). The continuation, when it runs, clears the flag and advances again to
    ``max_input``.
  * The mailbox is one FIFO queue; running mail takes its head (the task's mailbox loop takes
    at any priority, deferrable mail too).
  * ``corrected`` mode (the project's corrections, impl/tasks/stream_task.py ``intermediate`` and
    ``only_increasing``): a watermark at or below the last one the processor emitted is not
    emitted; the continuation first emits the watermark its timers reached (``min(max_input,
    reached)``, where ``reached`` is the advance target if no timer at or below it is left, else
    the earliest pending timer minus one) when it is above the last emitted one.

What is left out
  * Which of several timers with the same timestamp fires first: the model fires them by key
    (``repr`` order); Flink's heap order differs, so generated scenarios never register two keys
    at one timestamp in one operator.
  * Records, processing time, key groups, checkpoints, urgent mail and mail priorities (every
    take here sees every mail).

Checked by the differential property ``chain_watermark.differential``
(``properties/chain_watermark``) and against Flink 2.3's own classes by the conformance harness.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MIN_TIME, MAX_TIME = -(2**63), 2**63 - 1
MODES = ("flink-2.3", "corrected")
OPERATORS = ("A", "B")
CONTINUATION = "emitWatermarkInsideMailbox"


@dataclass
class Operator:
    name: str
    timers: set = field(default_factory=set)        # pending (ts, key)
    puts_mail: set = field(default_factory=set)     # (ts, key) whose firing puts a mail
    max_input: int = MIN_TIME
    advanced_to: int = MIN_TIME                      # the target of the last advance
    scheduled: bool = False                          # a continuation mail is in the mailbox
    last_emitted: int = MIN_TIME

    def next_due(self, time: int):
        due = [t for t in self.timers if t[0] <= time]
        return min(due, key=lambda t: (t[0], repr(t[1]))) if due else None

    def reached(self) -> int:
        """Up to where every timer has fired: the advance target, or just below the earliest
        timer at or below it."""
        left = [t[0] for t in self.timers if t[0] <= self.advanced_to]
        return self.advanced_to if not left else min(left) - 1


@dataclass
class ChainModel:
    """The chain A -> B; every method returns the observations it produces."""

    mode: str = "flink-2.3"
    ops: dict = field(default_factory=lambda: {name: Operator(name) for name in OPERATORS})
    mailbox: list = field(default_factory=list)  # FIFO of (name, action): action None, or ("continue", op)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")

    # -- steps -----------------------------------------------------------------------------
    def register(self, operator: str, key, ts: int) -> list[dict]:
        self.ops[operator].timers.add((ts, key))
        return []

    def timer_puts_mail(self, operator: str, key, ts: int) -> list[dict]:
        self.ops[operator].puts_mail.add((ts, key))
        return []

    def watermark(self, ts: int) -> list[dict]:
        out: list[dict] = []
        self._input(self.ops["A"], ts, out)
        return out

    def mail(self, name: str) -> list[dict]:
        self.mailbox.append((name, None))
        return []

    def run_mail(self) -> list[dict]:
        if not self.mailbox:
            return [{"event": "ran", "mail": None}]
        name, action = self.mailbox.pop(0)
        out = [{"event": "ran", "mail": name}]
        if action is not None:
            self._continue(self.ops[action], out)
        return out

    def drain(self, budget: int = 10_000) -> list[dict]:
        out: list[dict] = []
        for _ in range(budget):
            if not self.mailbox:
                return out
            out.extend(self.run_mail())
        raise RuntimeError(f"drain ran more than {budget} mails")

    # -- the processor ---------------------------------------------------------------------
    def _input(self, op: Operator, ts: int, out: list[dict]) -> None:
        op.max_input = max(op.max_input, ts)
        self._advance(op, out)

    def _advance(self, op: Operator, out: list[dict]) -> None:
        target = op.max_input
        op.advanced_to = target
        completed = True
        while (timer := op.next_due(target)) is not None:
            op.timers.discard(timer)
            ts, key = timer
            out.append({"event": "fire", "operator": op.name, "key": key, "ts": ts})
            if timer in op.puts_mail:
                self.mailbox.append((f"{op.name}:{key}@{ts}", None))
            if self.mailbox:  # shouldInterrupt: any mail at all
                completed = False
                break
        if completed:
            self._emit(op, target, out)
        elif not op.scheduled:
            op.scheduled = True
            self.mailbox.append((f"{op.name}:{CONTINUATION}", op.name))

    def _continue(self, op: Operator, out: list[dict]) -> None:
        op.scheduled = False
        if self.mode == "corrected":
            reached = min(op.max_input, op.reached())
            if reached > op.last_emitted:
                self._emit(op, reached, out)
        self._advance(op, out)

    def _emit(self, op: Operator, watermark: int, out: list[dict]) -> None:
        if self.mode == "corrected" and watermark <= op.last_emitted:
            return
        op.last_emitted = max(op.last_emitted, watermark)
        out.append({"event": "emit", "operator": op.name, "watermark": watermark})
        if op.name == "A":
            self._input(self.ops["B"], watermark, out)


__all__ = ["CONTINUATION", "ChainModel", "MAX_TIME", "MIN_TIME", "MODES", "OPERATORS"]

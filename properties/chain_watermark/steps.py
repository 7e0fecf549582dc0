"""The ``chain_watermark`` scenario family's steps: a chain ``A -> B`` of two operators, each with
its own ``MailboxWatermarkProcessor`` and timer service, one task mailbox (docs/chain-watermark.md).

``params.mode``: ``flink-2.3`` (default, the processor as Flink 2.3 ships it) or ``corrected``
(only strictly increasing watermarks; the continuation first emits the watermark its timers
reached).
"""

from __future__ import annotations

from typing import Any, ClassVar

from streamproof.properties.scenario import (
    INT64, KEY, STR, EnumKind, Scenario, Step, TOP, arg, register_family, require_first_step, step,
)

OPERATOR = EnumKind(("A", "B"))
MODES = ("flink-2.3", "corrected")


@step
class NewChain(Step):
    """A fresh chain A -> B: one mailbox, each operator with its executor (priority = its index
    in the chain), its timer service and its watermark processor; A's output feeds B's processor."""

    op: ClassVar[str] = "new_chain"


@step
class Register(Step):
    """An event-time timer of ``operator`` for ``key`` at ``ts``."""

    op: ClassVar[str] = "register"
    operator: str = arg(OPERATOR)
    key: Any = arg(KEY)
    ts: int = arg(INT64)


@step
class TimerPutsMail(Step):
    """From now on, when that timer fires, its callback puts a mail (named
    ``"<operator>:<key>@<ts>"``) through the operator's executor: the advance counts as
    interrupted (``shouldInterrupt`` is true)."""

    op: ClassVar[str] = "timer_puts_mail"
    operator: str = arg(OPERATOR)
    key: Any = arg(KEY)
    ts: int = arg(INT64)


@step
class Watermark(Step):
    """The input watermark reaches A: ``A.emitWatermarkInsideMailbox(ts)``."""

    op: ClassVar[str] = "watermark"
    ts: int = arg(INT64)


@step
class Mail(Step):
    """A foreign mail (e.g. a checkpoint's) is put into the mailbox."""

    op: ClassVar[str] = "mail"
    name: str = arg(STR)


@step
class RunMail(Step):
    """The mailbox loop takes its next mail (any priority, deferrable too) and runs it."""

    op: ClassVar[str] = "run_mail"


@step
class Drain(Step):
    """Runs mail until the mailbox is empty."""

    op: ClassVar[str] = "drain"


def validate_chain_watermark(scenario: Scenario) -> None:
    """The first step is ``new_chain``; ``params.mode`` is one of :data:`MODES`."""
    require_first_step(scenario, "new_chain")
    mode = scenario.params.get("mode", "flink-2.3")
    if mode not in MODES:
        raise TOP.expected("params", f"mode one of {', '.join(MODES)}", mode, "semantic")


CHAIN_WATERMARK_STEPS = [NewChain, Register, TimerPutsMail, Watermark, Mail, RunMail, Drain]
register_family("chain_watermark", CHAIN_WATERMARK_STEPS, validate_chain_watermark)

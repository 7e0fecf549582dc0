"""The ``mailbox`` scenario family's steps: a TaskMailbox and its MailboxExecutors driven step by
step (FLIP-443's mailbox; shared/vectors/flink_mailbox_traces.json uses it)."""

from __future__ import annotations

from typing import ClassVar

from streamproof.properties.scenario import (
    INT32_MAX, STR, EnumKind, IntKind, Scenario, Step, arg, register_family, require_first_step, step,
)


PRIORITY = IntKind(-1, INT32_MAX)  # -1 = TaskMailbox.MIN_PRIORITY: take any mail, deferrable too
MAIL_PRIORITY = IntKind(0, INT32_MAX)


@step
class NewMailbox(Step):
    op: ClassVar[str] = "new_mailbox"


@step
class Put(Step):
    op: ClassVar[str] = "put"
    mail: str = arg(STR)
    priority: int = arg(MAIL_PRIORITY)
    options: str = arg(EnumKind(("default", "deferrable", "urgent")))


@step
class TryTake(Step):
    op: ClassVar[str] = "try_take"
    priority: int = arg(PRIORITY)


@step
class CreateBatch(Step):
    op: ClassVar[str] = "create_batch"


@step
class TryTakeFromBatch(Step):
    op: ClassVar[str] = "try_take_from_batch"


@step
class TryYield(Step):
    """An executor of that priority runs the mail it takes."""

    op: ClassVar[str] = "try_yield"
    priority: int = arg(PRIORITY)


@step
class ShouldInterrupt(Step):
    op: ClassVar[str] = "should_interrupt"
    priority: int = arg(PRIORITY)


@step
class HasMail(Step):
    op: ClassVar[str] = "has_mail"


@step
class Size(Step):
    op: ClassVar[str] = "size"


@step
class Quiesce(Step):
    op: ClassVar[str] = "quiesce"


@step
class Close(Step):
    op: ClassVar[str] = "close"



def validate_mailbox(scenario: Scenario) -> None:
    """The first step is ``new_mailbox``."""
    require_first_step(scenario, "new_mailbox")


MAILBOX_STEPS = [
    NewMailbox, Put, TryTake, CreateBatch, TryTakeFromBatch, TryYield, ShouldInterrupt, HasMail,
    Size, Quiesce, Close,
]
register_family("mailbox", MAILBOX_STEPS, validate_mailbox)

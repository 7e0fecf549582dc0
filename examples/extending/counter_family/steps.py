"""The ``counter`` family's steps: what a scenario file of this family may say."""

from __future__ import annotations

from typing import ClassVar

from streamproof import IntKind, Step, arg, register_family, step


@step
class Add(Step):
    op: ClassVar[str] = "add"
    n: int = arg(IntKind(0, 1000))


@step
class Checkpoint(Step):
    op: ClassVar[str] = "checkpoint"


@step
class Restore(Step):
    """A failure: the counter goes back to its last checkpoint."""

    op: ClassVar[str] = "restore"


@step
class Read(Step):
    op: ClassVar[str] = "read"


register_family("counter", [Add, Checkpoint, Restore, Read])

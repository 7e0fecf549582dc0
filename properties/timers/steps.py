"""The ``timers`` scenario family's steps: one timer service (or several instances of it) driven
step by step, as Flink's InternalTimerServiceImpl is (DESIGN.md §2; shared/vectors use it)."""

from __future__ import annotations

from typing import Any, ClassVar

from streamproof.properties.scenario import (
    EnumKind, INT32_MAX, INT64, IntKind, KEY, KEY_GROUP_RANGE, Loc, STR, Scenario, Step, StepsKind, UPPER_BOUND_MAX_PARALLELISM, TOP, arg, register_family, step, step_error,
)


DOMAIN = EnumKind(("event", "processing"))
MAX_PARALLELISM = IntKind(1, UPPER_BOUND_MAX_PARALLELISM)


class _KeyGroupsCheck:
    """``key_group_range`` must lie below ``max_parallelism``."""

    max_parallelism: int
    key_group_range: tuple[int, int]

    def check(self, loc: Loc) -> None:
        if self.key_group_range[1] >= self.max_parallelism:
            what = f"[start, end] with end < max_parallelism ({self.max_parallelism})"
            raise loc.expected("key_group_range", what, list(self.key_group_range), "semantic")


@step
class NewInstance(_KeyGroupsCheck, Step):
    """Create a timer service instance owning the key groups of ``key_group_range``."""

    op: ClassVar[str] = "new_instance"
    max_parallelism: int = arg(MAX_PARALLELISM)
    key_group_range: tuple[int, int] = arg(KEY_GROUP_RANGE)


@step
class UseInstance(Step):
    """Send the following steps to an earlier instance (0 = the first one created)."""

    op: ClassVar[str] = "use_instance"
    index: int = arg(IntKind(0, INT32_MAX))


@step
class SetKey(Step):
    """Set the current key (the key context of the following registrations)."""

    op: ClassVar[str] = "set_key"
    key: Any = arg(KEY)


@step
class Register(Step):
    """Register a timer for the current key."""

    op: ClassVar[str] = "register"
    domain: str = arg(DOMAIN)
    namespace: str = arg(STR)
    ts: int = arg(INT64)
    action: str | None = arg(EnumKind(("CANCEL", "TRIGGER", "WAIT")), optional=True)
    service: str | None = arg(STR, optional=True)


@step
class Delete(Step):
    """Delete a timer of the current key."""

    op: ClassVar[str] = "delete"
    domain: str = arg(DOMAIN)
    namespace: str = arg(STR)
    ts: int = arg(INT64)
    service: str | None = arg(STR, optional=True)


@step
class AdvanceWatermark(Step):
    op: ClassVar[str] = "advance_watermark"
    to: int = arg(INT64)


@step
class TryAdvanceWatermark(Step):
    """Advance with a should-stop that answers true once ``interrupt_after`` timers fired."""

    op: ClassVar[str] = "try_advance_watermark"
    to: int = arg(INT64)
    interrupt_after: int = arg(IntKind(1, INT32_MAX))


@step
class AdvanceProcessingTime(Step):
    op: ClassVar[str] = "advance_processing_time"
    to: int = arg(INT64)


@step
class OnFire(Step):
    """Steps run inside the callback of that timer, every time it fires, in its key context."""

    op: ClassVar[str] = "on_fire"
    domain: str = arg(DOMAIN)
    key: Any = arg(KEY)
    namespace: str = arg(STR)
    ts: int = arg(INT64)
    then: tuple = arg(StepsKind(Register, Delete))
    service: str | None = arg(STR, optional=True)


@step
class Snapshot(Step):
    op: ClassVar[str] = "snapshot"
    id: str = arg(STR)


@step
class Restore(_KeyGroupsCheck, Step):
    """A new instance restoring, from snapshot ``id``, the key groups in its range."""

    op: ClassVar[str] = "restore"
    id: str = arg(STR)
    max_parallelism: int = arg(MAX_PARALLELISM)
    key_group_range: tuple[int, int] = arg(KEY_GROUP_RANGE)


@step
class Count(Step):
    """Observe the numbers of event, processing and physical timers."""

    op: ClassVar[str] = "count"


def validate_timers(scenario: Scenario) -> None:
    """An instance exists before any step but ``on_fire``; indices and snapshot ids exist."""
    instances, snapshots = 0, []
    for i, s in enumerate(scenario.steps):
        if isinstance(s, OnFire):
            continue
        if instances == 0 and not isinstance(s, NewInstance):
            raise step_error(i, s, "op", "new_instance before any step other than on_fire", s.op)
        if isinstance(s, UseInstance) and s.index >= instances:
            what = f"an index below {instances} (instances so far)"
            raise step_error(i, s, "index", what, s.index)
        if isinstance(s, Restore) and s.id not in snapshots:
            known = ", ".join(snapshots)
            raise step_error(i, s, "id", f"the id of an earlier snapshot ({known})", s.id)
        if isinstance(s, Snapshot):
            snapshots.append(s.id)
        if isinstance(s, (NewInstance, Restore)):
            instances += 1
    if instances == 0:
        raise TOP.expected("steps", "at least one new_instance step", [], "semantic")


TIMER_STEPS = [
    NewInstance, UseInstance, SetKey, Register, Delete, AdvanceWatermark, TryAdvanceWatermark,
    AdvanceProcessingTime, OnFire, Snapshot, Restore, Count,
]
register_family("timers", TIMER_STEPS, validate_timers)

"""The ``broadcast`` scenario family: the subtasks of one broadcast-state operator, each with its
copy of the broadcast state, checkpointed and restored at other parallelisms.

Steps: ``put{key, value, subtask?}`` (a broadcast element: every subtask puts it; with ``subtask``:
only that one, as a function writing subtask-specific data), ``checkpoint{id}`` (every subtask's
copy), ``restore{id, parallelism}`` (new subtasks restored from checkpoint ``id``).
``params``: ``parallelism`` (the first attempt's, 1-8).
"""

from __future__ import annotations

from typing import ClassVar

from streamproof.properties.scenario import (
    STR, TOP, IntKind, Scenario, Step, arg, register_family, step, step_error,
)

PARALLELISM = IntKind(1, 8)


@step
class Put(Step):
    """A broadcast element ``key -> value`` (``subtask``: put by that subtask only)."""

    op: ClassVar[str] = "put"
    key: str = arg(STR)
    value: int = arg(IntKind(-10**6, 10**6))
    subtask: int | None = arg(IntKind(0, 7), optional=True)


@step
class Checkpoint(Step):
    op: ClassVar[str] = "checkpoint"
    id: str = arg(STR)


@step
class Restore(Step):
    """Every subtask restarts, at ``parallelism``, from checkpoint ``id`` (taken earlier)."""

    op: ClassVar[str] = "restore"
    id: str = arg(STR)
    parallelism: int = arg(PARALLELISM)


def broadcast_parallelism(scenario: Scenario) -> int:
    unknown = set(scenario.params) - {"parallelism"}
    if unknown:
        raise TOP.expected("params", "only parallelism", sorted(unknown)[0], "semantic")
    p = scenario.params.get("parallelism", 2)
    if isinstance(p, bool) or not isinstance(p, int) or not 1 <= p <= 8:
        raise TOP.expected("params", "parallelism: an integer in [1, 8]", p, "semantic")
    return p


def validate_broadcast(scenario: Scenario) -> None:
    p, checkpoints = broadcast_parallelism(scenario), set()
    for i, s in enumerate(scenario.steps):
        if isinstance(s, Put) and s.subtask is not None and s.subtask >= p:
            raise step_error(i, s, "subtask", f"a subtask below the parallelism ({p})", s.subtask)
        if isinstance(s, Checkpoint):
            checkpoints.add(s.id)
        if isinstance(s, Restore):
            if s.id not in checkpoints:
                raise step_error(i, s, "id", "the id of an earlier checkpoint", s.id)
            p = s.parallelism


register_family("broadcast", [Put, Checkpoint, Restore], validate_broadcast)

"""What a task checkpoints and how it is configured: its snapshot (operator state, in-flight channel
state, the consumed input as a prefix view of the task's picks) and its configuration."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain, islice
from typing import Any

from streamproof.impl.operators.keyed_process_operator import OperatorSnapshot
from streamproof.impl.state.key_groups import KeyGroupRange
from streamproof.impl.timers.internal_timer_service import MIN_WATERMARK

INTERRUPTIBLE_TIMERS_KEY = "execution.checkpointing.unaligned.interruptible-timers.enabled"


class ConsumedPrefix(Sequence):
    """A lineage as it was at a snapshot: ``inherited`` then the first ``length`` of ``picks``. A
    task only appends to its picks, so the view keeps what the snapshot saw without copying it
    (issue 30: a copy per checkpoint made a run's time and memory grow with the square of its input)."""

    __slots__ = ("_inherited", "_picks", "_length")

    def __init__(self, inherited: list, picks: list):
        self._inherited, self._picks, self._length = inherited, picks, len(picks)

    def __len__(self) -> int:
        return len(self._inherited) + self._length

    def __iter__(self):
        return chain(self._inherited, islice(self._picks, self._length))

    def __getitem__(self, index):
        return list(self)[index]

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    def __repr__(self) -> str:
        return repr(list(self))


def consumed(inherited: list | None, picks: list) -> ConsumedPrefix | None:
    """The lineage a snapshot keeps (None: unknown after a rescale)."""
    return None if inherited is None else ConsumedPrefix(inherited, picks)


@dataclass
class TaskSnapshot:
    """What a task acknowledges for a checkpoint."""

    subtask_index: int
    key_group_range: KeyGroupRange
    operator: OperatorSnapshot
    sink: dict
    channel_state: list = field(default_factory=list)  # (channel, element) captured by an unaligned checkpoint
    processing_time: int = 0  # the task's clock (input-driven processing time is part of the replayed input)
    # the input watermark the task had processed: not restored (Flink does not checkpoint
    # watermarks), except by the counterfactual JobSpec.restore_watermarks
    watermark: int = MIN_WATERMARK
    # per key group, what was consumed (OperatorTask.history) as (the task's list, its length at the
    # snapshot): the list only grows, so its prefix is the snapshot's without copying it
    history: dict = field(default_factory=dict)
    lineage: list | None = field(default_factory=list)  # channels of the input consumed up to the snapshot, in order
    # a chain task (whose ``lineage`` counts records only): the channels of every input element
    element_lineage: list | None = None
    # a task of a job graph: its chain, its index in the chain's subtasks, the ids of its input channels
    vertex: str | None = None
    vertex_subtask: int = 0
    channels: list | None = None
    # per broadcast-state operator of the chain, this subtask's copy of its broadcast state
    # ({descriptor name: {key: value}}): operator state in Flink's BROADCAST mode
    broadcast_state: dict = field(default_factory=dict)


@dataclass
class TaskConfig:
    interruptible_timers: bool = False  # the job config key INTERRUPTIBLE_TIMERS_KEY
    unaligned_checkpoints: bool = False
    drain: bool = True
    firing_budget: int = 1_000_000
    snapshot_format: int = 2  # timer snapshots; 1 = without termination actions (an older writer)
    # time limit per user callback (seconds; None: none). Certification sets it: a SIGALRM
    # watchdog is then armed in the main thread (never alongside another SIGALRM user)
    callback_seconds: float | None = None

    @classmethod
    def from_configuration(cls, conf: dict[str, Any], drain: bool = True) -> "TaskConfig":
        """From Flink-style configuration keys; unknown keys are an error."""
        known = {INTERRUPTIBLE_TIMERS_KEY: "interruptible_timers",
                 "execution.checkpointing.unaligned.enabled": "unaligned_checkpoints"}
        values = {}
        for key, value in conf.items():
            if key not in known:
                raise ValueError(f"unknown configuration key {key!r}; known: {', '.join(sorted(known))}")
            if not isinstance(value, bool):
                raise ValueError(f"{key} must be true or false, got {value!r}")
            values[known[key]] = value
        return cls(drain=drain, **values)

"""What flows through a task's input channels besides records (Flink's ``StreamElement`` kinds and
the events of ``org.apache.flink.runtime.io.network.api``): watermarks, processing-time advances,
checkpoint barriers, the flush record of a termination action and ``EndOfData``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Watermark:
    timestamp: int


@dataclass(frozen=True)
class ProcessingTimeAdvance:
    """The scenario's processing-time clock moves to ``timestamp`` (a job whose processing time is
    driven by its input, so that processing-time timers fire at reproducible points; the clock
    only moves forward)."""

    timestamp: int


@dataclass(frozen=True)
class CheckpointBarrier:
    checkpoint_id: int
    savepoint: bool = False  # savepoints are always aligned


@dataclass(frozen=True)
class FlushRecord:
    """The end-of-input flush of a task: ``output_log[start:end]`` is its output; the processing
    time when it began (timers up to it were due) and each service's horizon."""

    start: int
    end: int
    clock: int
    horizons: dict


@dataclass(frozen=True)
class EndOfData:
    """The upstream subtask has no more data (and, with drain, already sent MAX_WATERMARK)."""


@dataclass(frozen=True)
class SecondInput:
    """A record value on a two-input operator's second input (``process_element2``, ``map2``...):
    the edge marks it as it is written, so channel state, lineage and history keep the input."""

    value: object

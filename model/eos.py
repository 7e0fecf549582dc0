"""Specification of FLIP-331 (Flink 1.20): operators that emit only after the end of their input.

What is modelled
  * Results: a job with such operators commits what its plain streaming run commits; an
    end-of-stream global window is one result per key over all its input
    (``model/job.py:graph_reference``, ``_end_of_stream_sums``).
  * Scheduling, as predicates over a run's event log (each returns None when it holds, else a
    one-line reason):
      - a flagged operator emits nothing before MAX_WATERMARK (every input ended) reached it;
      - no checkpoint is triggered while a task of a chain holding a flagged operator runs;
      - no task fed by such a chain through a (blocking) network edge runs before every task of
        that chain finished.

What is left out
  * How: slots, regions, deployment order among independent regions, the sorted input path
    (it must only give the same results).

Logs (plain tuples, one attempt per failover):
  trigger_log  (attempt, checkpoint id, step, _)       finish_log (attempt, chain, subtask, step)
  started      (attempt, chain, subtask, step | None)  layouts    per attempt {chain: parallelism}
"""

from __future__ import annotations


def output_only_after_end(label: str, log: list[tuple], ended_at: int | None) -> str | None:
    """``log``: what a flagged operator emitted; ``ended_at``: the log position when
    MAX_WATERMARK reached it (None: never)."""
    first = next((i for i, entry in enumerate(log) if entry[0] == "record"), None)
    if first is not None and (ended_at is None or first < ended_at):
        return f"{label} emitted {log[first][1]!r} before MAX_WATERMARK reached it"
    return None


def finished_at(finish_log: list[tuple], layouts: list[dict], attempt: int, chain: str) -> int | None:
    """The step at which every subtask of ``chain`` had finished in ``attempt`` (None: not all did)."""
    steps = {subtask: step for a, c, subtask, step in finish_log if a == attempt and c == chain}
    return max(steps.values()) if steps and len(steps) == layouts[attempt].get(chain, 0) else None


def no_checkpoint_while_blocking(trigger_log: list[tuple], finish_log: list[tuple], layouts: list[dict],
                                 blocking: set[str]) -> str | None:
    for attempt, checkpoint, step, _ in trigger_log:
        for chain in sorted(blocking):
            end = finished_at(finish_log, layouts, attempt, chain)
            if end is None or end > step:
                return f"attempt {attempt}: checkpoint {checkpoint} was triggered at step {step} while {chain} ran"
    return None


def consumers_after_producers(started: list[tuple], finish_log: list[tuple], layouts: list[dict],
                              feeds: set[tuple[str, str]]) -> str | None:
    """``feeds``: (blocking producer chain, consumer chain) pairs joined by a network edge."""
    for attempt, chain, subtask, step in started:
        for producer, consumer in sorted(feeds):
            if consumer == chain and step is not None:
                end = finished_at(finish_log, layouts, attempt, producer)
                if end is None or end > step:
                    return f"attempt {attempt}: {chain}[{subtask}] ran at step {step} before {producer} finished"
    return None

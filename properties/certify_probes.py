"""Probes of the user's operator alone (one ``KeyedProcessOperator``, no job): the event-time timers
pending after each record, and whether splitting a firing changes its output. Search aids for the
burst scenarios (remembered per input); an error in the user's code ends a probe, never a run."""

from __future__ import annotations

from typing import Any

from streamproof.properties.job.values import encode


PROBE_CALLBACK_SECONDS = 5.0  # a user callback of the timer probe running longer ends the probe


_PROBED: dict = {}  # (operator, the records' reprs) -> pending_timers' answer (each property draws the same inputs)


_PROBED_MAX = 2048


def pending_timers(operator: str, ordered: list) -> list[list]:
    """Per record of ``ordered`` ((record, key, ts) in input order), the event-time timers pending
    after it, as (timestamp, repr(key)): the operator run over the records alone, no watermark
    (a probe: any error ends it early; what it learnt so far is returned). Remembered per input:
    every certification property explores the same scenarios."""
    try:
        cache_key = (operator, tuple((repr(record), repr(key), ts) for record, key, ts in ordered))
    except Exception:  # noqa: BLE001 - a record whose repr fails: no caching
        return _pending_timers(operator, ordered)
    if cache_key not in _PROBED:
        if len(_PROBED) >= _PROBED_MAX:
            _PROBED.clear()
        _PROBED[cache_key] = _pending_timers(operator, ordered)
    return [list(p) for p in _PROBED[cache_key]]


_SPLIT_PROBED: dict = {}


def splits_change_output(operator: str, ordered: list, watermark: int, point: int, after: list,
                         end: bool = False) -> bool:
    """Does splitting the burst's firing change what the operator alone outputs? The operator runs
    over ``ordered[:point + 1]``, then the watermark, then the records of ``after`` that are on time
    (a difference only late records make is a finding, not a refusal) and the end of input,
    twice: the watermark's timers fired at once, and fired one part at a time with one record
    between two parts from the third part on (the split certify.interruptible-timers tries
    first); ``end``: no records after the watermark, the end of input (the last watermark) arrives
    after the second part and fires the rest with its own. A search aid only (remembered per
    input): the verdict is the job's."""
    try:
        cache_key = (operator, watermark, point, end, tuple((repr(r), repr(k), ts) for r, k, ts in ordered),
                     tuple((repr(r), repr(k), ts) for r, k, ts in after))
    except Exception:  # noqa: BLE001 - a record whose repr fails
        return False
    if cache_key not in _SPLIT_PROBED:
        if len(_SPLIT_PROBED) >= _PROBED_MAX:
            _SPLIT_PROBED.clear()
        on_time = [item for item in after if item[2] > watermark]  # a late record's difference is a finding
        outputs = [_probe_outputs(operator, ordered[:point + 1], watermark, on_time, split, end)
                   for split in (False, True)]
        _SPLIT_PROBED[cache_key] = None not in outputs and outputs[0] != outputs[1]
    return _SPLIT_PROBED[cache_key]


def _probe_outputs(operator: str, before: list, watermark: int, after: list, split: bool, end: bool = False):
    from collections import Counter

    from streamproof.properties.job.values import canonical
    from streamproof.impl.timers.internal_timer_service import MAX_WATERMARK

    outputs: list = []
    try:
        op = _probe_operator(operator, lambda value, ts: outputs.append(value),
                             lambda tag, value, ts: outputs.append(("side-output", tag, value)), len(before) + len(after))
        if op is None:
            return None
        for item in before:
            op.process_element(_probe_record(*item))
        rest = list(after)
        manager = op.time_service_manager
        if split:
            parts = 0
            while not manager.try_advance_watermark(watermark, lambda: True):
                parts += 1
                if parts >= 2 and end:
                    break  # the end of input's watermark fires the rest below
                if parts >= 2 and rest:
                    op.process_element(_probe_record(*rest.pop(0)))
        else:
            manager.advance_watermark(watermark)
        for item in rest:
            op.process_element(_probe_record(*item))
        manager.advance_watermark(MAX_WATERMARK)
        return Counter(canonical(v) for v in outputs)
    except Exception as e:  # noqa: BLE001 - the user's code: the runs report its errors, not the probe
        _remember_slow(operator, e)
        return None


def _remember_slow(operator: str, error: Exception) -> None:
    from streamproof.impl.operators.keyed_process_operator import CallbackLimitExceeded
    from streamproof.impl.timers.internal_timer_service import TimerFiringBudgetExceeded

    if isinstance(error, CallbackLimitExceeded):  # a looping callback: the runs say so, once
        _SLOW_PROBES.add(operator)
    if isinstance(error, TimerFiringBudgetExceeded):  # timers that never stop: preflight says so
        _SLOW_PROBES.add(operator)
        ENDLESS_TIMERS[operator] = str(error)


_SLOW_PROBES: set = set()  # operators whose callback ran past the probe's time limit: never probed again
# A probe or a certification run has a few dozen records: more firings than this in one advance is
# a timer that registers another due timer each time it fires (at end of input: for ever; Flink's
# job with bounded input never finishes). The runtime's own budget (a million) took minutes per run.
def firing_budget(records: int) -> int:
    return max(20_000, 1_000 * records)
ENDLESS_TIMERS: dict[str, str] = {}  # operator -> the budget error of its probe


def _probe_operator(operator: str, emit, emit_side, records: int = 0):
    from streamproof.impl.state.key_groups import KeyGroupRange
    from streamproof.impl.operators.keyed_process_operator import KeyedProcessOperator
    from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService
    from streamproof.properties.job.functions import FUNCTIONS

    factory = FUNCTIONS.get(operator)
    if factory is None or operator in _SLOW_PROBES:
        return None
    op = KeyedProcessOperator(factory(), 128, KeyGroupRange(0, 127), ManualProcessingTimeService(start=0), emit,
                              firing_budget=firing_budget(records), emit_side=emit_side,
                              max_seconds_per_callback=PROBE_CALLBACK_SECONDS)
    op.open()
    return op


def _probe_record(record: Any, key: Any, ts: int):
    from streamproof.impl.operators.keyed_process_operator import StreamRecord
    from streamproof.properties.job.steps import CompositeKey
    from streamproof.properties.job.values import decode

    routed = decode(encode(key))
    if isinstance(routed, bool) or not isinstance(routed, (str, int)):
        routed = CompositeKey.of(routed)
    return StreamRecord(routed, decode(encode(record)), ts)


def _pending_timers(operator: str, ordered: list) -> list[list]:
    found: list[list] = []
    try:
        op = _probe_operator(operator, lambda value, ts: None, lambda tag, value, ts: None, len(ordered))
        if op is None:
            return found
        names: dict = {}
        for item in ordered:
            record = _probe_record(*item)
            names[record.key] = repr(item[1])
            op.process_element(record)
            found.append(sorted((timer[0], names.get(timer[1], repr(timer[1])))
                                for service in op.time_service_manager.services.values()
                                for timer in service.event_time_timers_queue))
    except Exception as e:  # noqa: BLE001 - the user's code: the runs report its errors, not the probe
        _remember_slow(operator, e)
    return found

"""Specification of Flink's event-time window operator with allowed lateness (``WindowOperator``
with ``EventTimeTrigger``) on tumbling and sliding windows, one input, per key.

    windows(ts)   = [start, start + size) for start = ts - ts mod slide, stepping back by slide
                    while start > ts - size              (SlidingEventTimeWindows; tumbling: slide = size)
    max_ts(w)     = w.end - 1
    cleanup(w)    = max_ts(w) + lateness
    late(w)       = cleanup(w) <= watermark                (isWindowLate)

An element goes to each of its windows that is not late; in a window whose max_ts is already at or
below the watermark it fires that window at once (EventTimeTrigger.onElement). An element none of
whose windows took it is late (then ts + lateness <= watermark holds, isElementLate): it goes to
the late side output. A watermark fires, in timestamp order, each window with contents whose
max_ts it passes (the trigger's timer), and clears each window whose cleanup time it passes (the
cleanup timer; with lateness 0 the same timer, firing first). End of input is the watermark
Long.MAX_VALUE.

The result of a firing is ``(key, start, end, sum of the window's contents)``; ties between
windows firing at one timestamp have no order (Flink promises none), so outputs compare as a
multiset. Written from Flink's WindowOperator, not from ``streamproof/flink/window_operator.py``.
"""

from __future__ import annotations

from collections import Counter

MAX_WATERMARK = 2**63 - 1


def windows(ts: int, size: int, slide: int) -> list[tuple[int, int]]:
    start = ts - ts % slide
    out = []
    while start > ts - size:
        out.append((start, start + size))
        start -= slide
    return out


def run(events: list[tuple], size: int, slide: int, lateness: int) -> tuple[Counter, Counter]:
    """``events``: ``("element", key, value, ts)`` and ``("watermark", ts)`` (increasing), then end
    of input. Returns (the firings as a multiset, the late side output as a multiset of
    ``(key, value, ts)``)."""
    watermark = -(2**63)
    contents: dict[tuple, list] = {}  # (key, start, end) -> values
    fired: Counter = Counter()
    late: Counter = Counter()

    def advance(to: int) -> None:
        nonlocal watermark
        due = sorted((time, kind, window) for window in contents
                     for time, kind in ((window[2] - 1, 0), (window[2] - 1 + lateness, 1))
                     if watermark < time <= to)
        for _, kind, window in due:
            if window not in contents:
                continue
            if kind == 0 and contents[window]:
                fired[(*window, sum(contents[window]))] += 1
            if kind == 1:
                del contents[window]
        watermark = max(watermark, to)

    for event in events:
        if event[0] == "watermark":
            advance(event[1])
            continue
        _, key, value, ts = event
        took = False
        for start, end in windows(ts, size, slide):
            if end - 1 + lateness <= watermark:
                continue  # a late window
            took = True
            window = (key, start, end)
            contents.setdefault(window, []).append(value)
            if end - 1 <= watermark:
                fired[(*window, sum(contents[window]))] += 1
        if not took:
            late[(key, value, ts)] += 1
    advance(MAX_WATERMARK)
    return fired, late

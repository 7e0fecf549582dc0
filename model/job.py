"""Specification of a job's reference output: what its failure-free, uninterrupted run commits.

What is modelled
  * A bounded job: each source is a list of records ``(key, value, ts)`` and watermarks. With
    correct watermarks (no record at or below an earlier watermark of its source) and an operator
    whose output depends only on its input, every interleaving of the sources gives the same
    output; this module computes it directly from the operator's meaning.
  * End of input with drain fires every timer (MAX_WATERMARK); without drain only timers at or
    below the final combined watermark (the minimum over sources of their last watermark) fire.
  * The operators of ``properties/job/functions.py``: tumbling event-time window sums and timer
    chains (timers registered inside callbacks).

What is left out
  * Everything about how: tasks, mailboxes, checkpoints, failures. The implementation's job under
    any faults must commit exactly this multiset (``job.exactly-once``).
"""

from __future__ import annotations

from collections import Counter

MIN_TIME, MAX_TIME = -(2**63), 2**63 - 1


def saturated(time: int) -> int:
    """A timestamp kept inside Java's long range: a window past MAX_TIME ends at MAX_TIME (the
    operators here saturate instead of overflowing; docs/decisions.md)."""
    return min(max(time, MIN_TIME), MAX_TIME)


def window_end(ts: int, size: int = 10) -> int:
    """The last timestamp of the tumbling window of ``size`` that holds ``ts``."""
    return saturated((ts // size + 1) * size - 1)


def final_watermark(sources: list[list[tuple]], drain: bool) -> float:
    """The combined watermark at the end: +inf with drain, else the minimum over sources."""
    if drain:
        return float("inf")
    lasts = []
    for source in sources:
        marks = [e[1] for e in source if e[0] == "watermark"]
        lasts.append(max(marks) if marks else MIN_TIME)
    return min(lasts) if lasts else MIN_TIME


def records(sources: list[list[tuple]]) -> list[tuple]:
    return [e[1:] for source in sources for e in source if e[0] == "record"]


def window_sum(sources: list[list[tuple]], drain: bool, size: int = 10) -> Counter:
    """One output ``(key, window end, sum)`` per key and window, once the window's end is reached."""
    sums: dict = {}
    for key, value, ts in records(sources):
        end = window_end(ts, size)
        sums[(key, end)] = sums.get((key, end), 0) + value
    limit = final_watermark(sources, drain)
    return Counter((key, end, total) for (key, end), total in sums.items() if end <= limit)


def timer_chain(sources: list[list[tuple]], drain: bool, delay: int = 3, hops: int = 2) -> Counter:
    """Each record arms a timer ``delay`` later with ``hops`` hops; a firing at T emits
    ``(key, T, hops left)`` and, while hops remain, arms T + delay; equal timers merge (max)."""
    pending: dict = {}
    for key, _, ts in records(sources):
        if ts + delay <= MAX_TIME:  # a timer past the end of time is never registered
            pending[(key, ts + delay)] = max(pending.get((key, ts + delay), 0), hops)
    limit = final_watermark(sources, drain)
    out: Counter = Counter()
    while pending:
        key, at = min(pending, key=lambda k: (k[1], repr(k[0])))
        if at > limit:
            break
        left = pending.pop((key, at)) - 1
        out[(key, at, left)] += 1
        if left > 0 and at + delay <= MAX_TIME:
            pending[(key, at + delay)] = max(pending.get((key, at + delay), 0), left)
    return out


def side_window_sum(sources: list[list[tuple]], drain: bool) -> Counter:
    """``window_sum``'s outputs, the odd sums as the side output ``odd``: ``("side-output", "odd", output)``."""
    return Counter({("side-output", "odd", out) if out[2] % 2 else out: n
                    for out, n in window_sum(sources, drain).items()})


REFERENCES = {"window_sum": window_sum, "yielding_window_sum": window_sum, "async_window_sum": window_sum,
              "mailing_window_sum": window_sum, "timer_chain": timer_chain, "side_window_sum": side_window_sum}


def reference_output(operator: str, sources: list[list[tuple]], drain: bool) -> Counter:
    """The committed output of the failure-free run, as a multiset."""
    return REFERENCES[operator](sources, drain)


# -- job graphs ----------------------------------------------------------------------------------
def number(value) -> int:
    """The number a record carries: itself, or the last field of a tuple (recursively)."""
    while isinstance(value, (tuple, list)):
        value = value[-1] if value else 0
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _windows(records: list[tuple], limit: float, size: int = 10) -> list[tuple]:
    sums: dict = {}
    for key, value, ts in records:
        end = window_end(ts, size)
        sums[(key, end)] = sums.get((key, end), 0) + number(value)
    return [(key, (key, end, total), end) for (key, end), total in sums.items() if end <= limit]


def _side_windows(records: list[tuple], limit: float) -> list[tuple]:
    """Window sums, the odd ones as the side output ``odd`` (what reaches the sink with the main output)."""
    return [(key, ("side-output", "odd", value) if value[2] % 2 else value, end)
            for key, value, end in _windows(records, limit)]


def _timer_chains(records: list[tuple], limit: float) -> list[tuple]:
    fired = timer_chain([[("record", key, value, ts) for key, value, ts in records]], True)
    return [(key, (key, at, left), at) for (key, at, left), n in fired.items() for _ in range(n) if at <= limit]


def _buffered(records: list[tuple], limit: float) -> list[tuple]:
    return [(key, (key, ts, number(value)), None) for key, value, ts in records]


def _end_of_stream_sums(records: list[tuple], limit: float) -> list[tuple]:
    """A global window with the end-of-stream trigger: one (key, sum) per key, only with drain."""
    sums: dict = {}
    for key, value, _ in records:
        sums[key] = sums.get(key, 0) + number(value)
    return [(key, (key, total), 2**63 - 1) for key, total in sums.items()] if limit == float("inf") else []


def _end_of_stream_co_group(records: list[tuple], limit: float) -> list[tuple]:
    """Values tagged ("L", v) / ("R", v): per key (left count, left sum, right count, right sum)."""
    sides: dict = {}
    for key, (side, value), _ in records:
        sides.setdefault(key, {"L": [], "R": []})[side].append(number(value))
    return [(key, (key, (len(s["L"]), sum(s["L"]), len(s["R"]), sum(s["R"]))), 2**63 - 1)
            for key, s in sides.items()] if limit == float("inf") else []


def _identity(records: list[tuple], limit: float) -> list[tuple]:
    return list(records)


class Second:
    """A record value on a two-input operator's second input."""

    def __init__(self, value):
        self.value = value


def _co_windows(records: list[tuple], limit: float, size: int = 10) -> list[tuple]:
    """Two inputs into one keyed window sum: a second-input value counts a hundredfold."""
    return _windows([(key, 100 * number(v.value) if isinstance(v, Second) else number(v), ts)
                     for key, v, ts in records], limit, size)


KEYED = {"co_window_sum": _co_windows, "eos_window_sum": _end_of_stream_sums, "eos_co_group": _end_of_stream_co_group, "keyed_identity": _identity, "tumbling_window_sum": _windows,
         "window_sum": _windows, "side_window_sum": _side_windows, "yielding_window_sum": _windows, "mailing_window_sum": _windows,
         "async_window_sum": _windows,
         "timer_chain": _timer_chains, "processing_buffer": _buffered}
STATELESS = {
    "identity": lambda key, value: [(key, value)],
    "last": lambda key, value: [(key, number(value))],
    "double": lambda key, value: [(key, 2 * number(value))],
    "even": lambda key, value: [(key, value)] if number(value) % 2 == 0 else [],
    "twice": lambda key, value: [(key, value), (key, value)],
    "rekey": lambda key, value: [(f"{key}{number(value) % 3}", number(value))],
    "tag_left": lambda key, value: [(key, ("L", value))],
    "tag_right": lambda key, value: [(key, ("R", value))],
}


def _parallelism(source: dict, graph: dict, sources: list) -> int:
    """A source operator's subtasks: its own parallelism, all of them when it is the only one."""
    single = sum(1 for o in graph["operators"] if o["kind"] == "source") == 1
    return source.get("parallelism", len(sources) if single else 1)


def graph_reference(graph: dict, sources: list[list[tuple]], drain: bool) -> Counter:
    """What a job graph commits: each operator's output is a function of the multiset of its
    inputs (the union of its input edges); sinks and committers commit what reaches them. With
    correct watermarks, timer output never depends on arrival order, so no schedule matters."""
    ops = {op["name"]: op for op in graph["operators"]}
    edges = [(e["from"], e["to"]) for e in graph["edges"]]
    second = {(e["from"], e["to"]) for e in graph["edges"] if e.get("input", 1) == 2}  # connect's second input
    limit = final_watermark(sources, drain)
    streams: dict[str, list[tuple]] = {}
    committed: Counter = Counter()
    done: set[str] = set()
    while len(done) < len(ops):
        name = next(n for n in ops if n not in done and all(a in done for a, b in edges if b == n))
        op, inputs = ops[name], [r if (a, b) not in second else (r[0], Second(r[1]), r[2])
                                 for a, b in edges if b == name for r in streams[a]]
        if op["kind"] == "source":  # its own subtasks' records: the sources count across source operators
            first = sum(_parallelism(o, graph, sources) for o in graph["operators"][:graph["operators"].index(op)]
                        if o["kind"] == "source")
            mine = sources[first:first + _parallelism(op, graph, sources)]
            streams[name] = [tuple(e[1:]) for source in mine for e in source if e[0] == "record"]
        elif op["kind"] == "keyed_process":
            streams[name] = KEYED[op["function"]](inputs, limit)
        elif op["kind"] in ("map", "filter", "flat_map"):
            streams[name] = [(k, v, ts) for key, value, ts in inputs for k, v in STATELESS[op["function"]](key, value)]
        elif op["kind"] == "sink_writer":
            streams[name] = inputs
        else:  # sink, sink_committer
            committed.update(value for _, value, _ in inputs)
            streams[name] = []
        done.add(name)
    return committed

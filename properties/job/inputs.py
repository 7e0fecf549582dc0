"""Hypothesis inputs of job scenarios: per source subtask, records with correct watermarks."""

from __future__ import annotations

from functools import lru_cache

from hypothesis import strategies as st

from streamproof.properties.job.steps import Record, SourceWatermark

KEYS = ["a", "b", "c", "d", "e", 1, 2]

# Strategies are built once per distinct argument (issue 30): one made per draw cost Hypothesis a
# cache lookup and a validation each time. The draws, and so the scenarios of a seed, are the same.
# ``typed``: sampled(0, 1) and sampled(0.0, True) are different strategies.
integers = lru_cache(maxsize=None, typed=True)(st.integers)
_sampled_from = lru_cache(maxsize=None, typed=True)(st.sampled_from)
BOOLEANS = st.booleans()


def sampled(*options):
    """``st.sampled_from(options)``, built once per distinct options."""
    return _sampled_from(options)


_RECORDS = integers(6, 30)
_GAPS, _VALUES = 5, 5  # a record's timestamp gap 0-4 and value 1-5
# One draw per record (issue 30: a draw costs Hypothesis about 20 us whatever it draws, and four
# per record were a quarter of an example's time): gap, key, value and whether a watermark follows,
# in mixed radix, the gap most significant, so shrinking towards 0 shrinks towards gap 0, the first
# key, value 1 and no watermark, as the four draws did.
_RECORD = integers(0, _GAPS * len(KEYS) * _VALUES * 2 - 1)


def _inputs(draw, sources: int, records=_RECORDS) -> list:
    """Per source subtask, records with correct watermarks (never followed by a record at or below them)."""
    steps: list = []
    for source in range(sources):
        ts, last_watermark = 0, None
        for _ in range(draw(records, label="records")):
            rest, watermark = divmod(draw(_RECORD), 2)
            rest, value = divmod(rest, _VALUES)
            gap, key = divmod(rest, len(KEYS))
            ts += gap
            steps.append(Record(source, KEYS[key], value + 1, ts))
            if watermark and (last_watermark is None or ts - 1 > last_watermark):
                last_watermark = ts - 1
                steps.append(SourceWatermark(source, last_watermark))
    return steps


# issue 31: the targeted shapes (drawn by ``catalogue.any_job_scenarios`` now and then)
_SHORT = integers(1, 8)
_KEYED = ["window_sum", "timer_chain", "yielding_window_sum", "side_window_sum"]


@st.composite
def keyed_forward_rescales(draw):
    """A keyed operator feeding a second keyed operator over a forward edge (chained, or a task of
    its own), the pair rescaled from a checkpoint taken while windows and timers are pending
    (short checkpoint interval, the rescale after 1-2 completed checkpoints; rarely to parallelism 1); unaligned
    checkpoints half the time (in-flight records on the forward edge)."""
    from streamproof.properties.job.steps import Fail, Rescale
    from streamproof.properties.scenario import Scenario
    sources, p = draw(integers(1, 2), label="sources"), draw(integers(1, 3), label="parallelism")
    second = {"name": "k1", "kind": "keyed_process", "parallelism": p, "function": draw(sampled(*_KEYED))}
    if draw(BOOLEANS):
        second["chaining"] = False  # a forward edge between two tasks
    operators = [{"name": "source", "kind": "source"},
                 {"name": "k0", "kind": "keyed_process", "parallelism": p,
                  "function": draw(sampled("keyed_identity", *_KEYED))},
                 second, {"name": "sink", "kind": "sink", "parallelism": p}]
    edges = [{"from": "source", "to": "k0", "partitioning": "keyed"},
             {"from": "k0", "to": "k1", "partitioning": "forward"},
             {"from": "k1", "to": "sink", "partitioning": "forward"}]
    steps = _inputs(draw, sources)
    new_p = draw(sampled(*[q for q in (2, 3, 4, 1) if q != p]), label="new parallelism")
    steps.append(Rescale(draw(integers(10, 120)), new_p, draw(sampled("k0", "k1")),
                         draw(integers(1, 2))))
    if draw(BOOLEANS):
        steps.append(Fail(draw(integers(1, 400)), None))
    unaligned = draw(BOOLEANS)
    params = {"graph": {"operators": operators, "edges": edges}, "sources": sources,
              "max_parallelism": draw(sampled(4, 8, 16)), "checkpoint_interval": draw(integers(2, 6)),
              "interruptible_timers": draw(BOOLEANS), "unaligned": unaligned,
              "channel_capacity": draw(integers(1, 4)), "async_mail_rate": draw(sampled(0.0, 0.3, 0.7)),
              "seed": draw(integers(0, 2**16))}
    return Scenario(family="job", steps=tuple(steps), params=params)


@st.composite
def restores_after_end_of_input(draw):
    """A one-stage job with short sources that end early, unaligned checkpoints every few
    steps (so a checkpoint is triggered after a source ended, with that source's last records,
    MAX_WATERMARK and EndOfData in flight), and failures after one or more completed checkpoints,
    late enough to fall after end of input; sources' watermarks from bounded-out-of-orderness
    generators two times in three (sources restored as finished, FLIP-147)."""
    from streamproof.properties.job.steps import Fail
    from streamproof.properties.scenario import Scenario
    sources = draw(integers(1, 3), label="sources")
    steps = _inputs(draw, sources, _SHORT)
    n = len(steps)  # a failure late in the run: after the sources ended, while tasks still work
    for _ in range(draw(integers(1, 2), label="failures")):
        steps.append(Fail(draw(integers(n, 3 * n + 10)), None, draw(integers(1, 3 + n // 2))))
    params = {"operator": draw(sampled(*_KEYED)), "sources": sources, "parallelism": draw(integers(1, 3)),
              "max_parallelism": draw(sampled(4, 8, 16)), "checkpoint_interval": draw(integers(2, 5)),
              "interruptible_timers": draw(BOOLEANS), "unaligned": True,
              "channel_capacity": draw(integers(2, 4)), "async_mail_rate": draw(sampled(0.0, 0.3, 0.7)),
              "seed": draw(integers(0, 2**16))}
    if draw(integers(0, 2)) > 0:
        params["watermark_bound"] = draw(integers(0, 3))
    return Scenario(family="job", steps=tuple(steps), params=params)

"""Registers the job properties and the Hypothesis strategy of ``job`` scenarios."""

from __future__ import annotations

from hypothesis import strategies as st

from streamproof.properties.job.check import CHECKS, check_job
from streamproof.properties.job.steps import Fail, FailInInterruptedFiring, Record, Rescale, SourceWatermark
from streamproof.properties.registry import Property, register
from streamproof.properties.scenario import Scenario

KEYS = ["a", "b", "c", "d", "e", 1, 2]


@st.composite
def job_scenarios(draw) -> Scenario:
    """Bounded sources with correct watermarks (never followed by a record at or below them),
    up to three faults, and random job settings."""
    sources = draw(st.integers(1, 3), label="sources")
    max_parallelism = draw(st.sampled_from([4, 8, 16]), label="max_parallelism")
    steps: list = []
    for source in range(sources):
        ts, last_watermark = 0, None
        for _ in range(draw(st.integers(6, 30), label="records")):
            ts += draw(st.integers(0, 4))
            steps.append(Record(source, draw(st.sampled_from(KEYS)), draw(st.integers(1, 5)), ts))
            if draw(st.booleans()) and (last_watermark is None or ts - 1 > last_watermark):
                last_watermark = ts - 1
                steps.append(SourceWatermark(source, last_watermark))
    for _ in range(draw(st.integers(0, 2), label="failures")):
        steps.append(Fail(draw(st.integers(1, 400)), None))
    if draw(st.booleans()):
        steps.append(FailInInterruptedFiring(draw(st.integers(1, 6)), draw(st.sampled_from([None, True]))))
    if draw(st.booleans()):
        steps.append(Rescale(draw(st.integers(1, 400)), draw(st.integers(1, 3))))
    params = {
        "operator": draw(st.sampled_from(["window_sum", "timer_chain", "yielding_window_sum"])),
        "sources": sources,
        "parallelism": draw(st.integers(1, 3)),
        "max_parallelism": max_parallelism,
        "checkpoint_interval": draw(st.integers(3, 30)),
        "interruptible_timers": draw(st.sampled_from([True, True, True, False])),
        "unaligned": draw(st.booleans()),
        "channel_capacity": draw(st.integers(1, 4)),
        "async_mail_rate": draw(st.sampled_from([0.0, 0.3, 0.7, 0.7])),
        "seed": draw(st.integers(0, 2**16)),
    }
    if not steps:
        steps.append(Record(0, "a", 1, 1))
    return Scenario(family="job", steps=tuple(steps), params=params)


SUMMARIES = {
    "job.exactly-once": "Under checkpoints, failures (also inside interrupted firings), rescales and "
                        "interruptible timers, the committed output equals the failure-free run's "
                        "(multiset; per key in window order).",
    "job.timer-effects-once": "Every timer's effect is committed exactly once.",
    "job.watermarks": "Per task attempt, output watermarks strictly increase and no timer output at or "
                      "below a watermark leaves after it.",
    "job.end-of-input": "With drain, MAX_WATERMARK precedes EndOfData and nothing follows it "
                        "(FLINK-39481); every interrupted advance fired a timer (FLIP-443).",
}
REACHABILITY = ("timer firing interrupted", "failure inside an interrupted firing", "rescaled restore",
                "restored from a completed checkpoint")

for _name in CHECKS:
    register(Property(
        name=_name, family="job", summary=SUMMARIES[_name],
        check=(lambda name: lambda scenario: check_job(scenario, name))(_name),
        strategy=job_scenarios, reachability=REACHABILITY,
    ))

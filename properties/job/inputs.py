"""Hypothesis inputs of job scenarios: per source subtask, records with correct watermarks."""

from __future__ import annotations

from hypothesis import strategies as st

from streamproof.properties.job.steps import Record, SourceWatermark

KEYS = ["a", "b", "c", "d", "e", 1, 2]


def _inputs(draw, sources: int) -> list:
    """Per source subtask, records with correct watermarks (never followed by a record at or below them)."""
    steps: list = []
    for source in range(sources):
        ts, last_watermark = 0, None
        for _ in range(draw(st.integers(6, 30), label="records")):
            ts += draw(st.integers(0, 4))
            steps.append(Record(source, draw(st.sampled_from(KEYS)), draw(st.integers(1, 5)), ts))
            if draw(st.booleans()) and (last_watermark is None or ts - 1 > last_watermark):
                last_watermark = ts - 1
                steps.append(SourceWatermark(source, last_watermark))
    return steps

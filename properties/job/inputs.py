"""Hypothesis inputs of job scenarios: per source subtask, records with correct watermarks."""

from __future__ import annotations

from hypothesis import strategies as st

from streamproof.properties.job.steps import Record, SourceWatermark

KEYS = ["a", "b", "c", "d", "e", 1, 2]

# built once: a strategy made per draw cost a cache lookup and a validation each time (issue 30);
# the draws, and so the scenarios of a seed, are the same
_RECORDS = st.integers(6, 30)
_GAP = st.integers(0, 4)
_KEY = st.sampled_from(KEYS)
_VALUE = st.integers(1, 5)
_WATERMARK = st.booleans()


def _inputs(draw, sources: int) -> list:
    """Per source subtask, records with correct watermarks (never followed by a record at or below them)."""
    steps: list = []
    for source in range(sources):
        ts, last_watermark = 0, None
        for _ in range(draw(_RECORDS, label="records")):
            ts += draw(_GAP)
            steps.append(Record(source, draw(_KEY), draw(_VALUE), ts))
            if draw(_WATERMARK) and (last_watermark is None or ts - 1 > last_watermark):
                last_watermark = ts - 1
                steps.append(SourceWatermark(source, last_watermark))
    return steps

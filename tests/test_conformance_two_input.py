"""A two-input operator's watermark against Apache Flink 2.3's own classes (issue 29): each input's
``StatusWatermarkValve`` handing its watermark to ``IndexedCombinedWatermarkStatus`` as
``AbstractStreamOperator.processWatermark1/2`` does (the harness's ``TwoInputWatermarkHarness``),
and streamproof's runtime, whose task keeps one valve over the channels of both inputs
(docs/flink-api.md, "Two inputs"). Random watermark sequences, ties and regressions included:
the operator's watermark must advance at the same steps to the same values. Measured (seed 0):
188 of 300 sequences advance it, 352 advances in all; the first-input-only watermark (the bug-zoo
variant ``combined-watermark-from-first-input-only``) disagrees with Flink on some of them."""

from __future__ import annotations

import random
import shutil

import pytest

from streamproof.impl.tasks.stream_task import StatusWatermarkValve

HAVE_JDK = shutil.which("java") is not None and shutil.which("javac") is not None
pytestmark = pytest.mark.skipif(not HAVE_JDK, reason="no JDK: java and javac are needed to run the Flink harness")


def scenarios(count: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        channels = [rng.randint(1, 3), rng.randint(1, 3)]
        steps = []
        for _ in range(rng.randint(1, 20)):
            input_ = rng.randint(1, 2)
            steps.append({"op": "watermark", "input": input_, "channel": rng.randrange(channels[input_ - 1]),
                          "ts": rng.choice([rng.randint(0, 20), rng.randint(-5, 40)])})
        out.append({"params": {"channels": channels}, "steps": steps})
    return out


def streamproof_watermarks(scenario: dict, first_input_only: bool = False) -> list[dict]:
    """The runtime's two-input operator: one valve over input 1's channels, then input 2's
    (``first_input_only``: the bug-zoo variant, input 2's channels never counted)."""
    first, second = scenario["params"]["channels"]
    valve = StatusWatermarkValve(first + second)
    if first_input_only:
        valve.finished[first:] = [True] * second
    events = []
    for step in scenario["steps"]:
        channel = step["channel"] + (0 if step["input"] == 1 else first)
        combined = valve.input_watermark(channel, step["ts"])
        if combined is not None:
            events.append({"event": "watermark", "ts": combined})
    return events


def test_the_operator_watermark_moves_as_on_flink():
    from streamproof.conformance import harness
    from streamproof.conformance.flink_env import FlinkUnavailable

    batch = scenarios(300, seed=0)
    try:
        answers = harness.run("2.3.0", "two_input_watermark", batch)
    except FlinkUnavailable as e:
        pytest.skip(f"Flink 2.3.0 cannot run here: {e}")
    advanced = differs_with_the_bug = 0
    for scenario, answer in zip(batch, answers):
        assert "observed" in answer, answer
        assert streamproof_watermarks(scenario) == answer["observed"], scenario
        advanced += bool(answer["observed"])
        differs_with_the_bug += streamproof_watermarks(scenario, first_input_only=True) != answer["observed"]
    assert differs_with_the_bug > 50, differs_with_the_bug  # the comparison bites
    assert advanced >= 180, advanced  # most sequences move the operator's watermark (measured: see the docstring)

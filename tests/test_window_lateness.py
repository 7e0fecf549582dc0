"""Event-time windows at their lateness boundaries (issue 31): the window operator against
``model/window_lateness.py`` (Flink's WindowOperator with EventTimeTrigger and allowed lateness).

The generator aims at the boundaries: element timestamps at the watermark minus the lateness and
around it, at window starts and ends; watermarks at a pending window's end - 1, end, end - 1 +
lateness and one either side. Each known bug of that boundary (``<`` for ``<=``, the cleanup time
without the lateness, the trigger firing only past the end) must be found by the same search."""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from unittest import mock

from hypothesis import HealthCheck, given, settings, strategies as st

from streamproof import testing
from streamproof.flink.common import Time
from streamproof.flink.datastream import OutputTag
from streamproof.flink.datastream.functions import ProcessWindowFunction
from streamproof.flink.datastream.window import EventTimeTrigger, SlidingEventTimeWindows, TumblingEventTimeWindows
from streamproof.flink.window_operator import MAX_LONG_VALUE, WindowOperator
from streamproof.model import window_lateness as spec

LATE = OutputTag("late")
EXAMPLES = 150


class WindowSum(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield key, context.window().start, context.window().end, sum(e[1] for e in elements)


@st.composite
def scenarios(draw):
    """(size, slide, lateness, events): keys a and b, timestamps >= 0, increasing watermarks."""
    size = draw(st.sampled_from([2, 3, 4, 5]))
    slide = draw(st.sampled_from([size, size, size, 1] + ([size // 2] if size % 2 == 0 else [])))
    lateness = draw(st.sampled_from([0, 1, 2, size, size + 1]))
    watermark, events, ends = -1, [], set()
    for _ in range(draw(st.integers(1, 14))):
        pending = sorted(end for end in ends if end - 1 + lateness > watermark)
        if pending and draw(st.integers(0, 4)) == 0:  # a probe: the watermark at a window's cleanup time
            end = draw(st.sampled_from(pending))      # and an element at or near its max timestamp
            watermark = end - 1 + lateness - draw(st.integers(0, 1))
            events.append(("watermark", watermark))
            ts = max(0, end - 1 - draw(st.integers(0, 1)))
            events.append(("element", draw(st.sampled_from("ab")), draw(st.integers(1, 9)), ts))
            ends.update(end for _, end in spec.windows(ts, size, slide))
            continue
        if draw(st.integers(0, 2)) == 0:  # a watermark, at a boundary of a window seen so far
            targets = sorted({t for end in ends for t in (end - 2, end - 1, end, end - 2 + lateness, end - 1 + lateness,
                                                         end + lateness)} | {watermark + draw(st.integers(1, 6))})
            targets = [t for t in targets if t > watermark]
            if targets:
                watermark = draw(st.sampled_from(targets))
                events.append(("watermark", watermark))
            continue
        base = max(watermark, 0)
        edge = base - lateness  # an element at it is late exactly at the boundary...
        last_end = edge - (edge + 1) % size  # ...when it is its (tumbling) window's max timestamp
        ts = draw(st.sampled_from([edge - 1, edge, edge + 1, last_end, last_end, base, base + 1, base - base % size,
                                   base - base % size + size - 1, draw(st.integers(0, 30))]))
        ts = max(ts, 0)
        events.append(("element", draw(st.sampled_from("ab")), draw(st.integers(1, 9)), ts))
        ends.update(end for _, end in spec.windows(ts, size, slide))
    return size, slide, lateness, events


def run_operator(size: int, slide: int, lateness: int, events: list) -> tuple[Counter, Counter]:
    assigner = TumblingEventTimeWindows.of(Time.milliseconds(size)) if slide == size else \
        SlidingEventTimeWindows.of(Time.milliseconds(size), Time.milliseconds(slide))
    harness = testing.for_window(assigner, WindowSum(), key_selector=lambda e: e[0], timestamp=lambda e: e[2],
                                 allowed_lateness=lateness, late_tag=LATE)
    for event in events:
        if event[0] == "watermark":
            harness.process_watermark(event[1])
        else:
            harness.process_element(event[1:])
    harness.end_input()
    return Counter(harness.output()), Counter(harness.side_output(LATE))


def boundary_cases(size: int, slide: int, lateness: int, events: list) -> set[str]:
    """What an example reached at the boundary (each can change the output)."""
    reached, watermark = set(), None
    for event in events:
        if event[0] == "watermark":
            watermark = event[1]
            continue
        if watermark is None:
            continue
        for _, end in spec.windows(event[3], size, slide):
            if watermark == end - 1 + lateness:
                reached.add("element at its window's end - 1 + lateness (late)")
            if lateness and watermark == end - 2 + lateness:
                reached.add("element one before its window's cleanup (fires at once)")
            if watermark == end - 1:
                reached.add("element when the watermark is at its window's max timestamp")
        if slide == size and watermark == event[3] + lateness and (event[3] + 1) % size == 0:
            reached.add("element at its window's max timestamp, the watermark at it + lateness")
    return reached


def search(examples: int = EXAMPLES) -> tuple[list, Counter]:
    """Differences between the operator and the model over ``examples`` derandomized examples,
    and how many examples reached each boundary case."""
    differences, reached = [], Counter()

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(scenarios())
    def explore(scenario):
        reached.update(boundary_cases(*scenario))
        got, want = run_operator(*scenario), spec.run(scenario[3], *scenario[:3])
        if got != want:
            differences.append((scenario, got, want))

    explore()
    return differences, reached


def test_windows_at_the_lateness_boundary_behave_as_flink():
    differences, reached = search()
    assert not differences, differences[0]
    # the search reaches each boundary (measured: roughly a quarter to a half of the examples each)
    for case in ("element at its window's end - 1 + lateness (late)",
                 "element one before its window's cleanup (fires at once)",
                 "element when the watermark is at its window's max timestamp",
                 "element at its window's max timestamp, the watermark at it + lateness"):
        assert reached[case] >= EXAMPLES // 20, (case, reached)


@contextmanager
def _patched(**methods):
    with mock.patch.multiple(WindowOperator, **methods):
        yield


def _window_late_strict(self, window):
    return self.event_time and self._cleanup_time(window) < self._timer_service.current_watermark()


def _element_late_strict(self, timestamp):
    return self.event_time and timestamp + self.allowed_lateness < self._timer_service.current_watermark()


def _cleanup_without_lateness(self, window):
    return window.max_timestamp()


def _fires_only_past_the_end(self, element, timestamp, window, ctx):
    from streamproof.flink.datastream.window import TriggerResult
    if window.max_timestamp() < ctx.get_current_watermark():
        return TriggerResult.FIRE
    ctx.register_event_time_timer(window.max_timestamp())
    return TriggerResult.CONTINUE


def test_each_known_boundary_bug_is_found():
    """The search bites: each bug at the boundary gives a difference within the examples."""
    bugs = {
        "window late at cleanup time + 1": _patched(_is_window_late=_window_late_strict),
        "element late only below the boundary": _patched(_is_element_late=_element_late_strict),
        "cleanup without the lateness": _patched(_cleanup_time=_cleanup_without_lateness),
    }
    for name, patch in bugs.items():
        with patch:
            differences, _ = search()
        assert differences, f"{name}: not found in {EXAMPLES} examples"
    with mock.patch.object(EventTimeTrigger, "on_element", _fires_only_past_the_end):
        differences, _ = search()
    assert differences, "trigger firing only past the window's end: not found"
    assert MAX_LONG_VALUE == spec.MAX_WATERMARK

"""The differential state machine: implementation against model under the active profile."""

import pytest
from hypothesis import settings

from streamproof.properties import registry
from streamproof.properties.explore import explore
from streamproof.properties.timers.machine import TimersMachine

TestTimersDifferential = TimersMachine.TestCase


def test_interesting_cases_are_reached():
    """A property that never meets its interesting cases tests nothing: count them."""
    prop = registry.get("timers.differential")
    result = explore(prop, examples=max(200, settings().max_examples), seed=12345)
    assert result.holds, result.message
    print("\nreachability over", result.examples, "examples:", dict(sorted(result.reach.items())))
    for label in prop.reachability:
        assert result.reach.get(label, 0) > 0, f"never reached: {label}"

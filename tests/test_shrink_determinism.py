"""A seed shrinks to the same counterexample however busy the machine: shrinking is bounded by
numbers of checks, not by the clock (properties/determinism.py ``shrinking_without_clock``,
``explore.reduce_scenario``). A slow machine is played by a clock that jumps ten seconds each
time it is read: urgent-mail-lifo's shrink reads Hypothesis' clock 81 times, past Hypothesis' own
five minutes and within streamproof's 30-minute guard."""

import time

from hypothesis.internal.conjecture import engine

from streamproof.properties import bugzoo, determinism, explore as explore_module, registry
from streamproof.properties.explore import explore, reduce_scenario


class SlowClock:
    """The ``time`` module as a machine that takes ten seconds between two looks at the clock sees it."""

    def __init__(self) -> None:
        self.looks = 0

    def perf_counter(self) -> float:
        self.looks += 1
        return time.perf_counter() + 10 * self.looks

    def __getattr__(self, name):
        return getattr(time, name)


def _hunt(name: str):
    result = bugzoo.hunt(bugzoo.get_variant(name), 300, seed=0)
    assert not result.holds, name
    return result.scenario


def test_hypothesis_shrinks_to_the_same_counterexample_on_a_slow_machine(monkeypatch):
    quiet = _hunt("urgent-mail-lifo")
    monkeypatch.setattr(engine, "time", SlowClock())
    assert _hunt("urgent-mail-lifo") == quiet
    # the test bites: with Hypothesis' own five minutes the slow machine stops shrinking early
    monkeypatch.setattr(determinism, "SHRINK_GUARD_SECONDS", 0)
    monkeypatch.setattr(engine, "time", SlowClock())
    assert len(_hunt("urgent-mail-lifo").steps) > len(quiet.steps)


def test_the_time_limit_is_lifted_inside_an_exploration_only():
    assert hasattr(engine, "MAX_SHRINKING_SECONDS")  # a Hypothesis without it: this guard is gone
    before, seen = engine.MAX_SHRINKING_SECONDS, []
    prop = registry.get("ttl.differential")
    check = prop.check

    def spying(scenario):
        seen.append(engine.MAX_SHRINKING_SECONDS)
        return check(scenario)

    import dataclasses
    explore(dataclasses.replace(prop, check=spying), 2, seed=0, shrink=False)
    assert seen and set(seen) == {determinism.SHRINK_GUARD_SECONDS}
    assert engine.MAX_SHRINKING_SECONDS == before


def test_the_generic_reduction_counts_checks_not_seconds(monkeypatch):
    variant = bugzoo.get_variant("ttl-expiry-from-registration")
    prop = registry.get(variant.caught_by)
    with variant.patch():
        found = explore(prop, 300, seed=0, shrink=False)
        assert not found.holds
        quiet = reduce_scenario(prop, found.scenario, found.invariant, seconds=20)
        monkeypatch.setattr(explore_module, "time", SlowClock())
        slow = reduce_scenario(prop, found.scenario, found.invariant, seconds=20)
    assert len(quiet.steps) < len(found.scenario.steps)  # it reduces at all
    assert slow == quiet

"""Explores a property with Hypothesis and reports the outcome as data (used by pytest, the
CLI, the bug zoo and the Spark harness alike)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, seed as hypothesis_seed, settings
from hypothesis.stateful import get_state_machine_test

from streamproof.properties import scenario as sc
from streamproof.properties.determinism import pinned_constants
from streamproof.properties.reach import counting
from streamproof.properties.registry import Property
from streamproof.properties.verdict import Violation


@dataclass
class Exploration:
    property: str
    holds: bool
    examples: int
    steps: int
    seconds: float
    reach: dict = field(default_factory=dict)  # note() label -> count
    invariant: str | None = None
    message: str = ""
    scenario: sc.Scenario | None = None  # the minimal failing scenario

    @property
    def verdict(self) -> str:
        return "held" if self.holds else "failed"


def exploration_settings(examples: int, step_count: int = 40, shrink: bool = True) -> settings:
    phases = [Phase.explicit, Phase.reuse, Phase.generate, Phase.target]
    if shrink:
        phases.append(Phase.shrink)
    return settings(
        max_examples=examples, stateful_step_count=step_count, deadline=None, database=None,
        report_multiple_bugs=False, print_blob=False, phases=phases,
        suppress_health_check=list(HealthCheck),
    )


def explore(prop: Property, examples: int, seed: int | None = None, step_count: int = 40,
            shrink: bool = True) -> Exploration:
    """Runs ``prop``'s state machine for ``examples`` examples; a failure is shrunk to a scenario."""
    if prop.machine is None and prop.strategy is None:
        raise ValueError(f"property {prop.name!r} has neither a state machine nor a strategy to explore")
    tally = {"examples": 0, "steps": 0}
    if prop.machine is None:
        test = _strategy_test(prop, tally, exploration_settings(examples, step_count, shrink))
    else:
        test = get_state_machine_test(_counting_factory(prop.machine(), tally),
                                      settings=exploration_settings(examples, step_count, shrink))
    if seed is not None:
        test = hypothesis_seed(seed)(test)
    started = time.perf_counter()
    with counting() as reach, pinned_constants():
        try:
            test()
        except Exception as e:  # a violation or a crash of the implementation
            scenario = getattr(e, "streamproof_scenario", None)
            steps = getattr(e, "streamproof_steps", None)
            if scenario is None and steps:
                scenario = sc.Scenario(family=prop.family, steps=tuple(steps), property=prop.name)
            invariant = e.invariant if isinstance(e, Violation) else f"crash: {type(e).__name__}"
            if shrink and scenario is not None and isinstance(e, Violation) and prop.machine is None:
                scenario = reduce_scenario(prop, scenario, e.invariant)
            return Exploration(prop.name, False, tally["examples"], tally["steps"],
                               time.perf_counter() - started, dict(reach), invariant,
                               _one_line(e), scenario)
    return Exploration(prop.name, True, tally["examples"], tally["steps"], time.perf_counter() - started, dict(reach))


def reduce_scenario(prop: Property, scenario: sc.Scenario, invariant: str, seconds: float = 20.0,
                    seeds: int = 8) -> sc.Scenario:
    """After Hypothesis' shrinking, reduces a failing scenario while the property still fails with
    the same invariant. Job-like families (``job``, ``termination``, ``valve_job``) get the
    domain-aware passes of :mod:`streamproof.properties.shrink` (sources, records, faults,
    settings, timestamps, keys, graph, a few schedule seeds; a budget of checks worth about
    ``seconds``, so deterministic). Other families drop steps one at a time (last first); a
    scenario with a schedule seed (``params.seed``) may take another of ``seeds`` small seeds.
    Stops after ``seconds``."""
    from dataclasses import replace

    from streamproof.properties import shrink

    def fails(candidate: sc.Scenario) -> bool:
        try:
            verdict = prop.check(sc.load_scenario(sc.dump_scenario(candidate)))
        except Exception:  # noqa: BLE001 - an invalid or crashing candidate is not a reduction
            return False
        return not verdict.holds and verdict.invariant == invariant

    if shrink.shrinks(scenario.family):
        return shrink.shrink(fails, scenario, seconds, seeds)

    deadline = time.perf_counter() + seconds

    def variants(candidate: sc.Scenario):
        yield candidate
        if "seed" in candidate.params:
            for seed in range(seeds):
                if seed != candidate.params["seed"]:
                    yield replace(candidate, params={**candidate.params, "seed": seed})

    index = len(scenario.steps) - 1
    while index >= 0 and time.perf_counter() < deadline:
        steps = scenario.steps[:index] + scenario.steps[index + 1:]
        scenario = next((c for c in variants(replace(scenario, steps=steps)) if fails(c)), scenario)
        index = min(index - 1, len(scenario.steps) - 1)
    return scenario


def _strategy_test(prop: Property, tally: dict, test_settings: settings):
    """A ``@given`` test checking each generated scenario; a failure carries its scenario."""
    from dataclasses import replace

    from hypothesis import given

    @test_settings
    @given(prop.strategy())
    def test(scenario):
        tally["examples"] += 1
        tally["steps"] += len(scenario.steps)
        try:
            verdict = prop.check(scenario)
        except Exception as e:
            e.streamproof_scenario = replace(scenario, property=prop.name)
            raise
        if not verdict.holds:
            error = Violation(verdict.invariant or "violation", verdict.message, verdict.step)
            error.streamproof_scenario = replace(scenario, property=prop.name)
            raise error

    return test


def _counting_factory(machine_class, tally: dict):
    def factory():
        tally["examples"] += 1
        machine = machine_class()
        original = machine.do

        def do(step):
            tally["steps"] += 1
            return original(step)

        machine.do = do
        return machine

    return factory


def _one_line(e: BaseException) -> str:
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    return text[:500]

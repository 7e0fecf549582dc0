"""Explores a property with Hypothesis and reports the outcome as data (used by pytest, the
CLI, the bug zoo and the Spark harness alike)."""

from __future__ import annotations

import hashlib
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from hypothesis import HealthCheck, Phase, seed as hypothesis_seed, settings
from hypothesis.errors import StopTest, UnsatisfiedAssumption
from hypothesis.stateful import get_state_machine_test

from streamproof.properties import scenario as sc
from streamproof.properties.determinism import pinned_constants, shrinking_without_clock
from streamproof.properties.gc_pacing import paced_collections
from streamproof.properties.reach import counting
from streamproof.properties.registry import Property
from streamproof.properties.verdict import Violation


@dataclass
class Exploration:
    """The outcome of :func:`explore`.

    ``examples`` counts the examples run as asked: the valid examples Hypothesis generated, up to
    and including the first failing one (never the examples it gave up on, nor the re-runs of
    shrinking); so a property that held ran exactly the examples asked for. ``steps`` counts the
    steps of those examples. ``reach`` counts events: every ``note(label)`` during the whole
    exploration, shrinking included (one example may reach a case many times); ``reach_examples``
    counts the examples (as counted by ``examples``) that reached each case at least once.
    """

    property: str
    holds: bool
    examples: int
    steps: int
    seconds: float
    reach: dict = field(default_factory=dict)  # note() label -> events
    invariant: str | None = None
    message: str = ""
    scenario: sc.Scenario | None = None  # the minimal failing scenario
    reach_examples: dict = field(default_factory=dict)  # note() label -> examples that reached it
    found_seconds: float | None = None  # seconds until the first failing example ended (before shrinking)

    @property
    def verdict(self) -> str:
        return "held" if self.holds else "failed"


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`explore`: a KeyboardInterrupt carrying what was done so far as an
    :class:`Exploration` (``exploration``): the examples run, and when a failure had already been
    found, its scenario as found (not minimal: shrinking was cut short) with ``holds`` False."""

    def __init__(self, exploration: Exploration) -> None:
        super().__init__(f"interrupted exploring {exploration.property}")
        self.exploration = exploration


def exploration_settings(examples: int, step_count: int = 40, shrink: bool = True, database=None) -> settings:
    """``database``: a Hypothesis example database (``settings().database``) whose failures of
    the same exploration are replayed first and where new ones are saved; None (the CLI, the bug
    zoo, campaigns) keeps explorations deterministic, a function of their seed alone."""
    phases = [Phase.explicit, Phase.reuse, Phase.generate, Phase.target]
    if shrink is True:
        phases.append(Phase.shrink)
    return settings(
        max_examples=examples, stateful_step_count=step_count, deadline=None, database=database,
        report_multiple_bugs=False, print_blob=False, phases=phases,
        suppress_health_check=list(HealthCheck),
    )


def explore(prop: Property, examples: int, seed: int | None = None, step_count: int = 40,
            shrink: bool = True, progress: Callable[[int, bool], None] | None = None,
            database=None, database_key: str | None = None) -> Exploration:
    """Runs ``prop``'s state machine for ``examples`` examples; a failure is shrunk to a scenario.

    ``database``: a Hypothesis example database (the pytest fixtures pass the active settings'
    one): the failures it holds for this exploration are replayed first, new ones are saved there.
    Its key is ``database_key`` (default: the property's name; certification adds the operator),
    the same in every run and process. None (the default) uses none: the exploration depends on
    ``seed`` alone.

    ``progress(examples_done, shrinking)`` is called after every counted example and, once a
    failure was found, after every re-run of shrinking (a progress display; it must be cheap).
    ``shrink="domain"`` skips Hypothesis' own shrinking and reduces with the domain-aware passes
    alone (a deterministic budget of checks: for properties whose checks are costly).
    """
    if prop.machine is None and prop.strategy is None:
        raise ValueError(f"property {prop.name!r} has neither a state machine nor a strategy to explore")
    tally = _Tally(progress)
    chosen = exploration_settings(examples, step_count, shrink, database)
    if prop.machine is None:
        test = _strategy_test(prop, tally, chosen)
    else:
        test = get_state_machine_test(_counting_factory(prop.machine(), tally), settings=chosen)
    if database is not None:
        # Hypothesis keys a test's examples by a digest of its source: every state machine (and
        # every strategy property) here would share one key. A key of its own, stable across runs;
        # set on the wrapped test, it is used with --hypothesis-seed too (which otherwise turns
        # the database off)
        key = database_key or prop.name
        test._hypothesis_internal_database_key = b"streamproof:" + hashlib.sha384(key.encode()).digest()
        if seed is not None:
            test._hypothesis_internal_use_seed = seed  # what @seed does, less its database=None
    elif seed is not None:
        test = hypothesis_seed(seed)(test)
    started = time.perf_counter()

    def outcome(error: BaseException | None, scenario: sc.Scenario | None = None) -> Exploration:
        if error is None:
            return Exploration(prop.name, True, tally.examples, tally.steps, time.perf_counter() - started,
                               dict(reach), reach_examples=dict(tally.reach_examples))
        invariant = error.invariant if isinstance(error, Violation) else f"crash: {type(error).__name__}"
        found = None if tally.found_at is None else tally.found_at - started
        return Exploration(prop.name, False, tally.examples, tally.steps, time.perf_counter() - started,
                           dict(reach), invariant, _one_line(error), scenario or _scenario_of(prop, error),
                           dict(tally.reach_examples), found)

    interrupts = _interrupts
    with counting() as reach, pinned_constants(), shrinking_without_clock(), paced_collections():
        tally.reach = reach
        tally.outer_exception = sys.exc_info()[1]
        try:
            test()
        except KeyboardInterrupt:
            raise Interrupted(outcome(tally.first_error)) from None
        except Exception as e:  # a violation or a crash of the implementation
            if _interrupts != interrupts or _interrupted_inside(e):
                # Hypothesis's own bookkeeping failed on the way out of a Ctrl-C (its AssertionError
                # is the interrupt, not a failure of the property)
                raise Interrupted(outcome(tally.first_error)) from None
            scenario = _scenario_of(prop, e)
            if shrink and scenario is not None and isinstance(e, Violation) and prop.machine is None:
                try:
                    scenario = reduce_scenario(prop, scenario, e.invariant)
                except KeyboardInterrupt:
                    raise Interrupted(outcome(e, scenario)) from None
            return outcome(e, scenario)
    if _interrupts != interrupts:  # a Ctrl-C swallowed on the way: the run was cut short
        raise Interrupted(outcome(tally.first_error))
    return outcome(None)


_interrupts = 0  # Ctrl-Cs received (note_interrupt): whether one landed during an exploration


def note_interrupt() -> None:
    """Called by a SIGINT handler (the CLI's) before it raises KeyboardInterrupt: an exploration
    that ends with an exception after it is interrupted, whatever Hypothesis made of the
    KeyboardInterrupt (a Ctrl-C landing as Hypothesis sets up its runner surfaces as an
    AssertionError without the interrupt in its context: it was once reported as the property
    failing, "caught after 0 examples (crash: AssertionError)", and the command went on)."""
    global _interrupts
    _interrupts += 1


def _interrupted_inside(error: BaseException) -> bool:
    """Was ``error`` raised while a KeyboardInterrupt was being handled outside the property's own
    check? (Hypothesis asserts on its runner when a Ctrl-C lands before the runner exists: the
    AssertionError it raises then is the interrupt, not a failure.) A check that raised on its
    own carries its scenario and is a failure."""
    if getattr(error, "streamproof_scenario", None) is not None:
        return False
    seen, cause = set(), error.__context__
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__context__
    return False


def _scenario_of(prop: Property, error: BaseException) -> sc.Scenario | None:
    scenario = getattr(error, "streamproof_scenario", None)
    steps = getattr(error, "streamproof_steps", None)
    if scenario is None and steps:
        scenario = sc.Scenario(family=prop.family, steps=tuple(steps), property=prop.name)
    return scenario


class _Tally:
    """Counts the examples run as asked (see :class:`Exploration`): an example counts when it
    ends normally or with the property's failure, until the first failure (what follows is
    shrinking); one Hypothesis gave up on (an assumption, too much data) does not count."""

    def __init__(self, progress: Callable[[int, bool], None] | None = None) -> None:
        self.examples = self.steps = 0
        self.failed = False
        self.first_error: BaseException | None = None  # the first failure (what shrinking starts from)
        self.found_at: float | None = None  # perf_counter() when the first failure ended
        self.progress = progress
        self.reach: Counter | None = None
        self.reach_examples: Counter = Counter()
        self.outer_exception: BaseException | None = None
        self._steps = 0
        self._reach_before: Counter = Counter()

    def start(self) -> None:
        self._steps = 0
        if self.reach is not None and not self.failed:
            self._reach_before = Counter(self.reach)

    def step(self, n: int = 1) -> None:
        self._steps += n

    def end(self, error: BaseException | None) -> None:
        """An example ended, with ``error`` propagating (None: it ended normally)."""
        if self.failed:
            if self.progress is not None:
                self.progress(self.examples, True)
            return
        if error is not None and error is not self.outer_exception:
            if isinstance(error, (StopTest, UnsatisfiedAssumption)) or not isinstance(error, Exception):
                return  # given up by Hypothesis (or interrupted): not an example
            self.failed = True  # the first failure: counted; the runs after it are shrinking
            self.first_error = error
            self.found_at = time.perf_counter()
        self.examples += 1
        self.steps += self._steps
        if self.reach is not None:
            self.reach_examples.update(label for label, n in self.reach.items()
                                       if n > self._reach_before.get(label, 0))
        if self.progress is not None:
            self.progress(self.examples, False)

GENERIC_CHECKS_PER_SECOND = 100  # the generic reduction's families (broadcast, ttl) check in a few ms


def reduce_scenario(prop: Property, scenario: sc.Scenario, invariant: str, seconds: float = 20.0,
                    seeds: int = 8) -> sc.Scenario:
    """After Hypothesis' shrinking, reduces a failing scenario while the property still fails with
    the same invariant. Job-like families (``job``, ``termination``, ``valve_job``) get the
    domain-aware passes of :mod:`streamproof.properties.shrink` (sources, records, faults,
    settings, timestamps, keys, graph, a few schedule seeds; a budget of checks worth about
    ``seconds``, so deterministic). Other families drop steps one at a time (last first); a
    scenario with a schedule seed (``params.seed``) may take another of ``seeds`` small seeds.
    Stops after about ``seconds`` worth of checks (a number of checks, not wall-clock time: the
    result depends on the input alone)."""
    from dataclasses import replace

    from streamproof.properties import shrink

    budget = [max(1, int(seconds * GENERIC_CHECKS_PER_SECOND))]

    def fails(candidate: sc.Scenario) -> bool:
        budget[0] -= 1
        try:
            verdict = prop.check(sc.load_scenario(sc.dump_scenario(candidate)))
        except Exception:  # noqa: BLE001 - an invalid or crashing candidate is not a reduction
            return False
        return not verdict.holds and verdict.invariant == invariant

    if shrink.shrinks(scenario.family):
        return shrink.shrink(fails, scenario, seconds, seeds)

    def variants(candidate: sc.Scenario):
        yield candidate
        if "seed" in candidate.params:
            for seed in range(seeds):
                if seed != candidate.params["seed"]:
                    yield replace(candidate, params={**candidate.params, "seed": seed})

    index = len(scenario.steps) - 1
    while index >= 0 and budget[0] > 0:
        steps = scenario.steps[:index] + scenario.steps[index + 1:]
        scenario = next((c for c in variants(replace(scenario, steps=steps)) if fails(c)), scenario)
        index = min(index - 1, len(scenario.steps) - 1)
    return scenario


def _strategy_test(prop: Property, tally: _Tally, test_settings: settings):
    """A ``@given`` test checking each generated scenario; a failure carries its scenario."""
    from dataclasses import replace

    from hypothesis import given

    @test_settings
    @given(prop.strategy())
    def test(scenario):
        tally.start()
        tally.step(len(scenario.steps))
        error = None
        try:
            verdict = prop.check(scenario)
            if not verdict.holds:
                error = Violation(verdict.invariant or "violation", verdict.message, verdict.step)
                error.streamproof_scenario = replace(scenario, property=prop.name)
        except BaseException as e:
            if isinstance(e, Exception):
                e.streamproof_scenario = replace(scenario, property=prop.name)
            tally.end(e)
            raise
        tally.end(error)
        if error is not None:
            raise error

    return test


def _counting_factory(machine_class, tally: _Tally):
    def factory():
        tally.start()
        machine = machine_class()
        original, original_teardown = machine.do, machine.teardown

        def do(step):
            tally.step()
            return original(step)

        def teardown():
            # called in a ``finally``: the exception ending the run, if any, is propagating
            try:
                return original_teardown()
            finally:
                tally.end(sys.exc_info()[1])

        machine.do = do
        machine.teardown = teardown
        return machine

    return factory


def _one_line(e: BaseException) -> str:
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    return text[:500]

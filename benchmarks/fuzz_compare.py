"""Time to detect bug-zoo variants: today's seed sweep against HypoFuzz's coverage-guided fuzzing.

For each variant (applied with ``get_variant(NAME).patch()``) and repetition, two sides hunt its
catching property until the first counterexample (no shrinking on either side) or the budget:

- *sweep* (the baseline): what a campaign does, ``explore(prop, E, seed=s, shrink=False)`` for
  successive seeds s = 1000 * rep, 1000 * rep + 1, ... (E examples per seed, 20 like
  ``streamproof campaign --examples``), stopping at the first seed that fails;
- *hypofuzz*: one HypoFuzz fuzz target (``hypofuzz.hypofuzz.FuzzTarget``, the unit a
  ``hypothesis fuzz`` worker runs) built from the Hypothesis test ``explore`` runs (the
  property's state machine, or ``@given`` its strategy and check; same settings), fed inputs one
  at a time by the coverage-guided ``HypofuzzProvider`` (its random generators seeded from rep),
  stopping at the first failing input: one worker, an in-memory database, no dashboard.

Each measurement runs in its own fresh process, one at a time (imports and caches warm up
before the clock starts); the sides alternate per repetition. Time to detect is wall seconds
from the first example to the failure; examples are counted as ``explore`` counts them (the
valid examples up to and including the first failing one), the same on both sides. A run that
does not detect within the budget counts as the budget (a median that is censored this way is
shown as ``>B``). ``ratio`` is hypofuzz median / sweep median seconds: below 1 HypoFuzz detects
faster. It asserts nothing about time.

    /tmp/hfvenv/bin/python -m benchmarks.fuzz_compare [--variants A,B] [--reps 3] [--budget 120]
        [--examples-per-seed 20] [--step-count 40] [--json]

The 12 default variants with 3 reps take about 10 minutes on 2 cores (docs/decisions.md,
"Coverage-guided exploration (HypoFuzz)", has a 5-rep run).

Needs ``hypofuzz`` (a separate venv: ``python3 -m venv /tmp/hfvenv && /tmp/hfvenv/bin/pip install
-e . hypofuzz``); it says so and exits 2 without.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import format_table  # noqa: E402

# Every family with an explorable property, weighted to the variants a 20-example seed takes
# longest to catch (a one-seed survey of the whole zoo: most fall within the first 10 examples).
DEFAULT_VARIANTS = (
    "snapshot-before-fired-effects",                     # job (job.timer-effects-once)
    "sink-commits-on-snapshot",                          # job (job.exactly-once)
    "final-committables-on-checkpoint-completion",       # job (job.exactly-once)
    "processing-timer-mail-starved-by-urgent-batching",  # job (job.timer-liveness)
    "override-applies-only-to-later-timers",             # termination (termination.actions-obeyed)
    "format-1-restore-keeps-trigger",                    # termination (termination.actions-obeyed)
    "restore-accepts-foreign-key-groups",                # timers (timers.differential)
    "deferrable-visible-to-yield",                       # mailbox (mailbox.differential)
    "seed-single-create-delete-pair",                    # snapshots (snapshots.point-in-time)
    "format-1-restores-trigger",                         # snapshots (snapshots.restore-equivalence)
    "late-event-reaches-new-attempt",                    # valve (valve.exactly-once)
    "valve-shut-after-future-completion",                # valve (valve.consistent-checkpoints)
)
SIDES = ("sweep", "hypofuzz")


# ------------------------------------------------------------------ one measurement (child process)

def _hunt_sweep(variant: str, rep: int, budget: float, per_seed: int, step_count: int) -> dict:
    from streamproof.properties import registry
    from streamproof.properties.bugzoo import get_variant
    from streamproof.properties.explore import explore

    bug = get_variant(variant)
    prop = registry.get(bug.caught_by)
    with bug.patch():
        explore(prop, 1, seed=10**6, step_count=step_count, shrink=False)  # warm up, not timed
        seed, examples, seeds = 1000 * rep, 0, 0
        started = time.perf_counter()
        while True:
            e = explore(prop, per_seed, seed=seed, step_count=step_count, shrink=False)
            examples += e.examples
            seeds += 1
            elapsed = time.perf_counter() - started
            if not e.holds:
                return {"detected": True, "seconds": elapsed, "examples": examples, "seeds": seeds,
                        "invariant": e.invariant, "first_seed": seed}
            if elapsed >= budget:
                return {"detected": False, "seconds": elapsed, "examples": examples, "seeds": seeds}
            seed += 1


class _Counter:
    """Counts the examples as ``explore`` does (the valid examples up to and including the first
    failing one) and keeps the first failure."""

    def __init__(self) -> None:
        self.examples = 0
        self.error: BaseException | None = None

    def end(self, error: BaseException | None) -> None:
        from hypothesis.errors import StopTest, UnsatisfiedAssumption

        if self.error is not None:
            return
        if error is not None and (isinstance(error, (StopTest, UnsatisfiedAssumption))
                                  or not isinstance(error, Exception)):
            return  # given up by Hypothesis: not an example
        self.examples += 1
        self.error = error


def _hypothesis_test(prop, counter: _Counter, step_count: int):
    """The Hypothesis test ``explore`` runs for ``prop`` (its state machine, or ``@given`` its
    strategy and check), counting into ``counter``; built here so the benchmark does not depend
    on ``explore``'s private helpers."""
    from hypothesis import given
    from hypothesis.stateful import get_state_machine_test

    from streamproof.properties.explore import exploration_settings
    from streamproof.properties.verdict import Violation

    test_settings = exploration_settings(10**9, step_count, shrink=False)
    if prop.machine is None:
        @test_settings
        @given(prop.strategy())
        def test(scenario):
            error = None
            try:
                verdict = prop.check(scenario)
                if not verdict.holds:
                    error = Violation(verdict.invariant or "violation", verdict.message, verdict.step)
            except BaseException as e:
                counter.end(e)
                raise
            counter.end(error)
            if error is not None:
                raise error

        return test

    machine_class = prop.machine()

    def factory():
        machine = machine_class()
        teardown = machine.teardown

        def counted_teardown():
            try:  # called in a ``finally``: the exception ending the run, if any, is propagating
                return teardown()
            finally:
                counter.end(sys.exc_info()[1])

        machine.teardown = counted_teardown
        return machine

    return get_state_machine_test(factory, settings=test_settings)


def _hunt_hypofuzz(variant: str, rep: int, budget: float, step_count: int) -> dict:
    from random import Random

    from hypothesis import settings
    from hypothesis.database import InMemoryExampleDatabase

    # HypofuzzProvider refuses a test without a database: an in-memory one (no files, no sharing).
    settings.register_profile("fuzz-compare", database=InMemoryExampleDatabase(), deadline=None)
    settings.load_profile("fuzz-compare")

    from hypofuzz.database import HypofuzzDatabase
    from hypofuzz.hypofuzz import FuzzTarget

    from streamproof.properties import registry
    from streamproof.properties.bugzoo import get_variant
    from streamproof.properties.determinism import pinned_constants
    from streamproof.properties.explore import explore
    from streamproof.properties.reach import counting

    bug = get_variant(variant)
    prop = registry.get(bug.caught_by)
    counter = _Counter()
    target = FuzzTarget.from_hypothesis_test(_hypothesis_test(prop, counter, step_count),
                                             database=HypofuzzDatabase(InMemoryExampleDatabase()))
    target.random = Random(rep)
    target.provider.random = Random(10_000 + rep)
    with bug.patch():
        explore(prop, 1, seed=10**6, step_count=step_count, shrink=False)  # warm up, not timed
        with counting(), pinned_constants():  # as explore runs its test
            return _fuzz_until_failure(target, counter, budget)


def _fuzz_until_failure(target, counter: _Counter, budget: float) -> dict:
    """``FuzzWorker.start``'s inner loop for one target (``FuzzTarget.run_one`` without its
    shrinking), stopping at the first failing input or after ``budget`` seconds."""
    from hypothesis.internal.conjecture.data import Status

    target._enter_fixtures()
    started = time.perf_counter()
    while True:
        data = target.new_conjecture_data()
        target._execute_once(data)  # the provider observes its coverage (its corpus grows)
        data.freeze()
        elapsed = time.perf_counter() - started
        if data.status is Status.INTERESTING:
            e = counter.error
            return {"detected": True, "seconds": elapsed, "examples": counter.examples,
                    "inputs": target.provider.ninputs,
                    "invariant": getattr(e, "invariant", None) or f"crash: {type(e).__name__}"}
        if elapsed >= budget:
            return {"detected": False, "seconds": elapsed, "examples": counter.examples,
                    "inputs": target.provider.ninputs}


def run_one(side: str, variant: str, rep: int, budget: float, per_seed: int, step_count: int) -> dict:
    if side == "sweep":
        out = _hunt_sweep(variant, rep, budget, per_seed, step_count)
    else:
        out = _hunt_hypofuzz(variant, rep, budget, step_count)
    return {"side": side, "variant": variant, "rep": rep, **out}


# ------------------------------------------------------------------ the comparison (parent process)

@dataclass
class Row:
    variant: str
    family: str
    sweep_s: str
    sweep_ex: str
    sweep_hits: str
    fuzz_s: str
    fuzz_ex: str
    fuzz_hits: str
    ratio: str
    sweep_ms: str
    fuzz_ms: str
    value: float  # hypofuzz / sweep median seconds (censored medians count as the budget)


def _median(runs: list[dict], key: str, budget: float) -> tuple[float, bool]:
    """Median of ``key`` over runs, an undetected run counting as the budget (seconds) or as its
    own count (examples); True when the median is censored (more than half not detected)."""
    values = [r[key] if r["detected"] or key != "seconds" else max(r[key], budget) for r in runs]
    censored = sum(not r["detected"] for r in runs) > len(runs) // 2
    return statistics.median(values), censored


def summarise(results: list[dict], variants: list[str], budget: float) -> list[Row]:
    from streamproof.properties import registry
    from streamproof.properties.bugzoo import get_variant

    rows = []
    for v in variants:
        cols = {}
        for side in SIDES:
            runs = [r for r in results if r["variant"] == v and r["side"] == side]
            s, cs = _median(runs, "seconds", budget)
            ex, _ = _median(runs, "examples", budget)
            cols[side] = (s, cs, ex, f"{sum(r['detected'] for r in runs)}/{len(runs)}",
                          statistics.median(1000 * r["seconds"] / max(1, r["examples"]) for r in runs))
        (ss, scs, sex, shits, sms), (fs, fcs, fex, fhits, fms) = cols["sweep"], cols["hypofuzz"]
        ratio = fs / ss if ss > 0 else float("inf")
        prefix = "<" if fcs and not scs else ">" if scs and not fcs else ""
        rows.append(Row(v, registry.get(get_variant(v).caught_by).family,
                        f">{ss:.0f}" if scs else f"{ss:.2f}", f"{sex:g}", shits,
                        f">{fs:.0f}" if fcs else f"{fs:.2f}", f"{fex:g}", fhits,
                        "n/a" if scs and fcs else f"{prefix}{ratio:.2f}x", f"{sms:.1f}", f"{fms:.1f}", ratio))
    return rows


COLUMNS = [("variant", "variant", "{}"), ("family", "family", "{}"),
           ("sweep median s", "sweep_s", "{}"), ("sweep examples", "sweep_ex", "{}"),
           ("sweep found", "sweep_hits", "{}"),
           ("hypofuzz median s", "fuzz_s", "{}"), ("hypofuzz examples", "fuzz_ex", "{}"),
           ("hypofuzz found", "fuzz_hits", "{}"), ("ratio", "ratio", "{}"),
           ("sweep ms/example", "sweep_ms", "{}"), ("hypofuzz ms/example", "fuzz_ms", "{}")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fuzz_compare", description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default=",".join(DEFAULT_VARIANTS), help="comma-separated bug-zoo variants")
    parser.add_argument("--reps", type=int, default=3, help="repetitions per side (different seeds) [3]")
    parser.add_argument("--budget", type=float, default=120.0, help="seconds per run [120]")
    parser.add_argument("--examples-per-seed", type=int, default=20, help="sweep: examples per seed [20]")
    parser.add_argument("--step-count", type=int, default=40, help="steps per example, both sides [40]")
    parser.add_argument("--json", action="store_true", help="every run as a JSON line, then the rows")
    parser.add_argument("--one", nargs=3, metavar=("SIDE", "VARIANT", "REP"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    try:
        import hypofuzz  # noqa: F401
    except ImportError:
        print("benchmarks/fuzz_compare.py needs hypofuzz: python3 -m venv /tmp/hfvenv && "
              "/tmp/hfvenv/bin/pip install -e . hypofuzz; then run it with /tmp/hfvenv/bin/python", file=sys.stderr)
        return 2

    if args.one:  # a child: one measurement, one JSON line
        side, variant, rep = args.one
        print(json.dumps(run_one(side, variant, int(rep), args.budget, args.examples_per_seed, args.step_count)))
        return 0

    from importlib.metadata import version

    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    from streamproof.properties.bugzoo import get_variant
    for v in variants:
        get_variant(v)  # KeyError for an unknown name, before anything runs
    header = (f"hypothesis {version('hypothesis')}, hypofuzz {version('hypofuzz')}, Python "
              f"{sys.version.split()[0]}; budget {args.budget:g} s per run, {args.reps} reps, sweep "
              f"{args.examples_per_seed} examples per seed, {args.step_count} steps per example")
    print(header, file=sys.stderr, flush=True)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    results = []
    for v in variants:
        for rep in range(args.reps):
            for side in (SIDES if rep % 2 == 0 else SIDES[::-1]):
                cmd = [sys.executable, "-m", "benchmarks.fuzz_compare", "--budget", str(args.budget),
                       "--examples-per-seed", str(args.examples_per_seed), "--step-count", str(args.step_count),
                       "--one", side, v, str(rep)]
                proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
                if proc.returncode != 0:
                    raise RuntimeError(f"{side} {v} rep {rep} failed:\n{proc.stderr[-2000:]}")
                result = json.loads(proc.stdout.strip().splitlines()[-1])
                results.append(result)
                if args.json:
                    print(json.dumps(result), flush=True)
                print(f"  {v:40} rep {rep} {side:8} {'found' if result['detected'] else 'NOT found'} "
                      f"{result['seconds']:7.2f} s {result['examples']:6d} examples", file=sys.stderr, flush=True)
    rows = summarise(results, variants, args.budget)
    if args.json:
        for row in rows:
            print(json.dumps({"row": True, **row.__dict__}))
    else:
        print(header)
        print(format_table(rows, COLUMNS))
        faster = sum(1 for r in rows if r.ratio != "n/a" and r.value < 1)
        fewer = sum(1 for r in rows if float(r.fuzz_ex) < float(r.sweep_ex))
        ratios = [r.value for r in rows if r.ratio != "n/a"]
        print(f"\nHypoFuzz detects faster (ratio < 1) on {faster} of {len(rows)} variants, with fewer examples "
              f"on {fewer}; median ratio {statistics.median(ratios):.2f}x" if ratios else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One seed, one run: the same examples in every process.

Hypothesis (6.131 and later) draws about 5% of its values from constants found in the source of
every *local* module the process has loaded (not the standard library, not site-packages). What a
process happens to have imported (pytest's test modules, a user's code, a Spark worker whose code
comes from a zip, where the source cannot be read) would then change the examples a seed gives, and
a seed found on an executor would not replay on a laptop. :func:`pinned_constants` runs a block
with that pool empty (Hypothesis's own built-in constants stay); outside it nothing changes.
On a Hypothesis without this machinery it does nothing.

One seed, one counterexample: :func:`shrinking_without_clock` lifts Hypothesis' five-minute
shrink limit inside an exploration, so how far a failure shrinks does not depend on how busy the
machine is.
"""

from __future__ import annotations

from contextlib import contextmanager


@contextmanager
def pinned_constants():
    try:
        from hypothesis.internal.conjecture import providers
        original = providers._get_local_constants
        empty = providers.Constants()
        cache = providers.CONSTANTS_CACHE
    except (ImportError, AttributeError):  # another Hypothesis: nothing to pin
        yield
        return
    cache.cache.clear()
    providers._get_local_constants = lambda: empty
    try:
        yield
    finally:
        providers._get_local_constants = original
        cache.cache.clear()


# Hypothesis stops shrinking after MAX_SHRINKING_SECONDS (five minutes) of wall-clock time, so on a
# busy machine the same seed shrank to another counterexample (issue 30: 17 steps instead of 43).
# Inside an exploration its deterministic limits apply (MAX_SHRINKS successful shrinks, the
# shrinker's stall limits); this many seconds stay as a guard against a shrink that never ends.
# The longest shrink of the bug zoo takes about 2 minutes on a quiet machine: the guard leaves 15x.
SHRINK_GUARD_SECONDS = 30 * 60


@contextmanager
def shrinking_without_clock():
    """Runs a block with Hypothesis' shrink time limit lifted to :data:`SHRINK_GUARD_SECONDS`, so a
    seed shrinks to the same counterexample however busy the machine; restored after. On a
    Hypothesis without that limit it does nothing."""
    try:
        from hypothesis.internal.conjecture import engine
        original = engine.MAX_SHRINKING_SECONDS
    except (ImportError, AttributeError):
        yield
        return
    engine.MAX_SHRINKING_SECONDS = max(original, SHRINK_GUARD_SECONDS)
    try:
        yield
    finally:
        engine.MAX_SHRINKING_SECONDS = original

"""One seed, one run: the same examples in every process.

Hypothesis (6.131 and later) draws about 5% of its values from constants found in the source of
every *local* module the process has loaded (not the standard library, not site-packages). What a
process happens to have imported (pytest's test modules, a user's code, a Spark worker whose code
comes from a zip, where the source cannot be read) would then change the examples a seed gives, and
a seed found on an executor would not replay on a laptop. :func:`pinned_constants` runs a block
with that pool empty (Hypothesis's own built-in constants stay); outside it nothing changes.
On a Hypothesis without this machinery it does nothing.
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

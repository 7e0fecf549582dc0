"""The bug zoo of certification itself: checker variants that would give each wrong verdict
``streamproof certify`` was once found giving on real operators (issue 24), each a patch applied
in a context manager, each caught by a test in ``tests/test_certify_bugzoo.py``.

- ``coverage-counts-empty-splits``: a split firing counts as the case FLIP-443 changes outputs in
  even when no record ran between its parts (the coverage that read as full while the case was
  reached in 0-4 of 150 scenarios).
- ``split-schedule-seeded-only``: firings are split at one random schedule fixed by the scenario's
  seed, never at every chance (a hand-built unsafe input refused for some seeds, held for others).
- ``lineage-replayed-at-scenario-parallelism``: after a rescale before the first completed
  checkpoint, the lineage of the restarted job is replayed at the scenario's parallelism (a
  ``zip`` cut it short).
"""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager
from typing import Callable, Iterator

from streamproof.properties import certify_checks as checks

VARIANTS: dict[str, Callable] = {}


def _variant(name: str):
    def register(patch):
        VARIANTS[name] = contextmanager(patch)
        return patch
    return register


def applied(name: str):
    """The variant ``name`` as a context manager (the runs' cache is cleared on entry and exit)."""
    patch = VARIANTS[name]

    @contextmanager
    def scope() -> Iterator[None]:
        checks._runs.cache_clear()
        try:
            with patch():
                yield
        finally:
            checks._runs.cache_clear()
    return scope()


@_variant("coverage-counts-empty-splits")
def _coverage_counts_empty_splits():
    original = checks.cover

    def cover(run):
        original(run)
        if run.interrupted_firings_seen:
            checks.note(checks.SPLIT_CASE)
    checks.cover = cover
    try:
        yield
    finally:
        checks.cover = original


@_variant("split-schedule-seeded-only")
def _split_schedule_seeded_only():
    original = checks.SPLIT_PLANS
    checks.SPLIT_PLANS = ((checks.SPLIT_MAIL_RATE, 0),)
    try:
        yield
    finally:
        checks.SPLIT_PLANS = original


@_variant("lineage-replayed-at-scenario-parallelism")
def _lineage_at_scenario_parallelism():
    original = checks._spec

    def spec(scenario, interruptible, mail_rate=None, lineage=None, tie="insertion"):
        made = original(scenario, interruptible, mail_rate, lineage, tie)
        if lineage is None:
            return made
        return dataclasses.replace(made, parallelism=checks.job_params(scenario)["parallelism"])
    checks._spec = spec
    try:
        yield
    finally:
        checks._spec = original


__all__ = ["VARIANTS", "applied"]

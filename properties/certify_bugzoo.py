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
- ``tie-order-fixed-in-reference``: the failure-free runs a restored job is compared with fire
  equal-timestamp timers only in registration order, while a restore fires them key group by key
  group (Flink leaves that order open): a split firing's difference is blamed on the rescale.
- ``histories-accepted-without-input-check``: each key group's history after a rescale is taken as
  the reference without checking that it holds every input record exactly once, so a runtime that
  replays a record twice explains its own duplicate.
- ``watermarks-not-regenerated``: a restored source's watermark generator does not restart from the
  replayed records (the emission points keep their failure-free values), so restored timers wait for
  the end of input where Flink fires them at the regenerated watermark.
- ``restored-clock-starts-at-zero``: a restored task's input-driven processing-time clock starts at
  0, not where the checkpoint's tasks owning its key groups were (plus the restart's gap), until
  the replayed input moves it on: a timer registered right after the restore is due too early
  (issue 31).
- ``restored-clock-ignores-restart-gap``: a restored task's clock resumes where the checkpoint's
  tasks were, without the time the restart took (``restore_clock_gap``), so processing-time timers
  that came due while the job restarted wait for the replayed input (issue 31).
- ``restored-lineage-forgets-inherited-input``: after a restore a task's lineage starts empty, without
  the input its restored state consumed before the checkpoint, so the failure-free replay certify
  takes as the reference for the restored run follows only the new attempt's input (issue 31).
"""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager
from typing import Callable, Iterator

from streamproof.properties import certify_checks as checks
from streamproof.properties import certify_runs

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
        certify_runs._runs.cache_clear()
        try:
            with patch():
                yield
        finally:
            certify_runs._runs.cache_clear()
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
    original = certify_runs.SPLIT_PLANS
    certify_runs.SPLIT_PLANS = ((certify_runs.SPLIT_MAIL_RATE, 0),)
    try:
        yield
    finally:
        certify_runs.SPLIT_PLANS = original


@_variant("lineage-replayed-at-scenario-parallelism")
def _lineage_at_scenario_parallelism():
    original = certify_runs._spec

    def spec(scenario, interruptible, mail_rate=None, lineage=None, tie="insertion"):
        made = original(scenario, interruptible, mail_rate, lineage, tie)
        if lineage is None:
            return made
        return dataclasses.replace(made, parallelism=certify_runs.job_params(scenario)["parallelism"])
    certify_runs._spec = spec
    try:
        yield
    finally:
        certify_runs._spec = original


@_variant("tie-order-fixed-in-reference")
def _tie_order_fixed():
    original = certify_runs.OTHER_TIE_ORDERS
    certify_runs.OTHER_TIE_ORDERS = ()
    try:
        yield
    finally:
        certify_runs.OTHER_TIE_ORDERS = original


@_variant("histories-accepted-without-input-check")
def _histories_unchecked():
    original = certify_runs._histories_hold_the_input
    certify_runs._histories_hold_the_input = lambda scenario, run: True
    try:
        yield
    finally:
        certify_runs._histories_hold_the_input = original


@_variant("watermarks-not-regenerated")
def _watermarks_not_regenerated():
    from streamproof.impl.graph import job, sources
    original_tick, original_restart = sources.SourceTask.emit_next, sources.SourceTask._restart_tick

    def emit_next(self):  # an emission point emits its failure-free value, never a regenerated one
        if self.offset < len(self.elements) and isinstance(self.elements[self.offset], job.PeriodicWatermark):
            element = self.elements[self.offset]
            self.offset += 1
            if element.timestamp > self.generated:
                self.generated = element.timestamp
                self.job.broadcast(self.index, job.Watermark(element.timestamp))
            return
        original_tick(self)

    sources.SourceTask.emit_next = emit_next
    sources.SourceTask._restart_tick = lambda self: None
    try:
        yield
    finally:
        sources.SourceTask.emit_next, sources.SourceTask._restart_tick = original_tick, original_restart


@_variant("restored-clock-starts-at-zero")
def _restored_clock_starts_at_zero():
    from streamproof.impl.graph.job_runtime import GraphJob

    original = GraphJob._create_task

    def create_task(self, chain, s):  # the clock is made as if nothing were restored
        restoring, self.restoring = self.restoring, None
        try:
            return original(self, chain, s)
        finally:
            self.restoring = restoring
    GraphJob._create_task = create_task
    try:
        yield
    finally:
        GraphJob._create_task = original


@_variant("restored-clock-ignores-restart-gap")
def _restored_clock_ignores_restart_gap():
    from streamproof.impl.graph.job_runtime import GraphJob

    original = GraphJob._create_task

    def create_task(self, chain, s):  # the clock is made as if the restart took no time
        spec, self.spec = self.spec, dataclasses.replace(self.spec, restore_clock_gap=0)
        try:
            return original(self, chain, s)
        finally:
            self.spec = spec
    GraphJob._create_task = create_task
    try:
        yield
    finally:
        GraphJob._create_task = original


@_variant("restored-lineage-forgets-inherited-input")
def _restored_lineage_forgets_inherited_input():
    from streamproof.impl.graph.job_runtime import GraphJob

    original = GraphJob._restore

    def restore(self, checkpoint):
        original(self, checkpoint)
        for task in self.tasks:  # unknown (None, after a rescale) stays unknown
            if task.inherited is not None:
                task.inherited = []
            if task.inherited_records is not None:
                task.inherited_records = []
    GraphJob._restore = restore
    try:
        yield
    finally:
        GraphJob._restore = original


__all__ = ["VARIANTS", "applied"]

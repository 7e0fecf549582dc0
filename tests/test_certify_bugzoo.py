"""Each variant of certification's own bug zoo (properties/certify_bugzoo.py) is caught: the check
below holds on the real checker and fails with the variant applied."""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from streamproof.properties import certify as cert
from streamproof.properties import certify_bugzoo as zoo
from streamproof.properties import certify_checks as checks
from streamproof.properties import certify_late, certify_runs
from streamproof.impl.operators.keyed_process_operator import KeyedProcessFunction
from streamproof.properties.job.steps import Fail, ProcessingTime, Record, Rescale, SourceWatermark
from streamproof.properties.reach import counting
from streamproof.properties.scenario import Scenario
from tests.test_certify_split_shapes import REAL, count_with_timeout, scenario

REPO = Path(__file__).resolve().parent.parent
COUNT = f"{REAL}count_with_timeout_function:CountWithTimeoutFunction"


@pytest.fixture(autouse=True)
def _operator(monkeypatch):
    monkeypatch.chdir(REPO)
    cert.load(COUNT)


def _named(s: Scenario) -> Scenario:
    return Scenario(family="job", steps=s.steps, params={**s.params, "operator": f"user:{COUNT}"})


def empty_splits_are_not_coverage() -> bool:
    """Three timers due at one watermark and nothing after it: the firing is split (every timer a
    part of its own) but no record runs between the parts, so nothing the split did can change an
    output; the case must not be counted."""
    items = [i for i in count_with_timeout() if not (i is not None and getattr(i, "f1", None) == "c"
                                                      and getattr(i, "f0", 0) > 60_002)]
    shape = _named(scenario("count_with_timeout_function", items))
    with counting() as reach:
        verdict = checks.check("certify.interruptible-timers", shape)
    split = next(iter(checks.runs(shape).splits()))
    assert verdict.holds and split.interrupted_firings_seen > 0 and split.split_records == 0
    return checks.SPLIT_CASE not in reach


def unsafe_shape_refused_at_every_seed() -> bool:
    base = _named(scenario("count_with_timeout_function", count_with_timeout()))
    return all(not checks.check("certify.interruptible-timers",
                                Scenario(family="job", steps=base.steps, params={**base.params, "seed": seed})).holds
               for seed in range(8))


def lineage_after_early_rescale_is_replayed() -> bool:
    """Two subtasks, a rescale to one before any checkpoint completed: the job restarts from
    scratch with one subtask, whose lineage the reference must replay with one subtask."""
    base = scenario("count_with_timeout_function", count_with_timeout())
    shape = Scenario(family="job", steps=base.steps + (Rescale(3, 1),),
                     params={**base.params, "operator": f"user:{COUNT}", "parallelism": 2,
                             "checkpoint_interval": 1000})
    r = checks.runs(shape)
    assert not isinstance(r.faulty, str) and len(r.faulty.lineage) == 1, r.faulty
    replay = r.lineage(False)
    return replay is not None and replay.lineage == r.faulty.lineage and checks.check(
        "certify.same-output", shape).holds


def restored_timers_fire_at_the_regenerated_watermark() -> bool:
    """A checkpoint past the source's last emission point, then a failure: Flink's restarted
    generator emits from the first replayed record (29), so the restored timers fire before the
    end of input, not at MAX_WATERMARK (docs/decisions.md, "Watermarks after a restore")."""
    from tests.test_restore_watermarks import STEPS, restored_after_last_tick
    from tests.test_restore_watermarks import scenario as window_scenario

    job, restored = restored_after_last_tick(window_scenario(STEPS, watermark_bound=0))
    marks = [e[1] for e in restored.keyed[0].log if e[0] == "watermark"]  # the keyed operator's output
    return marks[:1] == [29] and restored.timers_fired_before_end_of_input() == 2


@contextmanager
def a_record_replayed_twice_after_a_rescale() -> Iterator[None]:
    """A runtime bug (the test's, not certify's): a rescaled restore rewinds each source's offset
    by one, so the record before the checkpoint's offset is consumed twice."""
    from streamproof.impl.graph.job_runtime import GraphJob

    original = GraphJob._deploy

    def deploy(self, checkpoint):
        if checkpoint is not None and checkpoint.parallelism != self.layout():
            checkpoint = dataclasses.replace(checkpoint, source_offsets=[max(0, o - 1) for o in checkpoint.source_offsets])
        original(self, checkpoint)
    GraphJob._deploy = deploy
    try:
        yield
    finally:
        GraphJob._deploy = original


def a_record_replayed_twice_is_refused() -> bool:
    """Two subtasks, a checkpoint, a rescale to one: the key groups' histories hold the replayed
    record twice, and must not be taken as the reference that explains the duplicate."""
    base = scenario("count_with_timeout_function", count_with_timeout())
    shape = Scenario(family="job", steps=base.steps[:3] + (Rescale(12, 1, checkpoints=1),) + base.steps[3:],
                     params={**base.params, "operator": f"user:{COUNT}", "parallelism": 2, "checkpoint_interval": 2})
    assert checks.check("certify.same-output", shape).holds  # the runtime without the bug
    certify_runs._runs.cache_clear()
    try:
        with a_record_replayed_twice_after_a_rescale():
            r = checks.runs(shape)
            assert not isinstance(r.faulty, str) and r.faulty.lineage is None and r.faulty.histories, r.faulty
            assert any(e[0] == "failover" and e[3] is not None for e in r.faulty.events), r.faulty.events
            return not checks.check("certify.same-output", shape).holds
    finally:
        certify_runs._runs.cache_clear()


class FiringCounter(KeyedProcessFunction):
    """Numbers its firings in a field of the function (not keyed state): its output depends on the
    order in which equal-timestamp timers of different keys fire, which Flink leaves open."""

    def open(self, ctx):
        self.fired = 0

    def process_element(self, value, ctx, out):
        ctx.timer_service().register_event_time_timer(10)

    def on_timer(self, timestamp, ctx, out):
        self.fired += 1
        out.collect((ctx.get_current_key(), self.fired))


def a_restore_reordering_equal_timers_is_a_finding() -> bool:
    """Timers of a, b, c, d at 10 (registered in that order; key groups 1, 6, 6, 0 of 8), a
    checkpoint, a failure: the restore fires d first, then a, b, c, then y (registered after it).
    Flink's timer heap leaves that order open: certified, with the tie-order finding."""
    spec = "tests.test_certify_bugzoo:FiringCounter"
    cert.load(spec)
    steps = tuple(Record(0, k, 1, 1) for k in "abcd") + (Fail(11, checkpoints=1),) + \
        tuple(Record(0, "y", 1, 1) for _ in range(4)) + (SourceWatermark(0, 10),)
    shape = Scenario(family="job", steps=steps, params={
        "operator": f"user:{spec}", "sources": 1, "parallelism": 1, "max_parallelism": 8, "checkpoint_interval": 8,
        "interruptible_timers": True, "unaligned": False, "channel_capacity": 4, "async_mail_rate": 0.0, "seed": 0,
        "late_records": True, "processing_time": "input"})
    r = checks.runs(shape)
    assert checks.output(r.faulty) != checks.output(r.off(0)), "the restore did not reorder the ties"
    with counting() as reach:
        holds = checks.check("certify.same-output", shape).holds
    return holds and certify_late.FINDING_TIE_ORDER in reach


def restored_shape(restart_gap: int) -> Scenario:
    """Records of a, b, c, a, b, c, processing time moved on after the first two, a failure right
    after the second completed checkpoint (the first holds no input yet): the restored task reads
    the rest of the input again."""
    from examples.operators.real.count_with_timeout_function import Row

    base = _named(scenario("count_with_timeout_function", [Row(f0=ts, f1=key, f2="x") for ts, key in enumerate("abcabc")]))
    steps = base.steps[:2] + (ProcessingTime(0, 5_000),) + base.steps[2:] + (Fail(1, checkpoints=2),)
    return Scenario(family="job", steps=steps,
                    params={**base.params, "checkpoint_interval": 2, "restart_gap": restart_gap})


def same_output_reaching(shape: Scenario, case: str) -> bool:
    """certify.same-output on ``shape``, which must reach ``case``."""
    with counting() as reach:
        holds = checks.check("certify.same-output", shape).holds
    assert case in reach, dict(reach)
    return holds


def restored_clock_resumes_at_the_checkpoint() -> bool:
    """Restarts taking no time: after the restore, certify's clock witness meets each record at the
    processing time the input before it gives, not at 0."""
    return same_output_reaching(restored_shape(0), checks.RESTORED_CLOCK)


def restored_clock_resumes_after_the_restart_gap() -> bool:
    """A restart taking a minute: every record a restored task reads meets a clock past it."""
    return same_output_reaching(restored_shape(60_000), checks.RESTORED_CLOCK)


def restored_lineage_holds_inherited_input() -> bool:
    """The restored run's lineage names the records its restored state consumed before the
    checkpoint, not only those read after the restore."""
    return same_output_reaching(restored_shape(0), checks.RESTORED_LINEAGE)


CATCHES = {
    "coverage-counts-empty-splits": empty_splits_are_not_coverage,
    "split-schedule-seeded-only": unsafe_shape_refused_at_every_seed,
    "lineage-replayed-at-scenario-parallelism": lineage_after_early_rescale_is_replayed,
    "watermarks-not-regenerated": restored_timers_fire_at_the_regenerated_watermark,
    "histories-accepted-without-input-check": a_record_replayed_twice_is_refused,
    "tie-order-fixed-in-reference": a_restore_reordering_equal_timers_is_a_finding,
    "restored-clock-starts-at-zero": restored_clock_resumes_at_the_checkpoint,
    "restored-clock-ignores-restart-gap": restored_clock_resumes_after_the_restart_gap,
    "restored-lineage-forgets-inherited-input": restored_lineage_holds_inherited_input,
}


@pytest.mark.parametrize("name", sorted(CATCHES))
def test_the_variant_is_caught(name):
    check = CATCHES[name]
    assert check(), f"{name}: the real checker fails its own check"
    with zoo.applied(name):
        assert not check(), f"bug variant {name} survived"


def test_every_variant_has_a_catching_test():
    untested = set(zoo.VARIANTS) - set(CATCHES)
    assert not untested, untested

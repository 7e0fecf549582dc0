"""Every property is proven to bite: each known-bug variant must be caught by the default
profile, and its counterexample must replay to the same failure."""

import pytest
from hypothesis import settings

from streamproof.properties import registry
from streamproof.properties.bugzoo import all_variants, hunt
from streamproof.properties.scenario import dump_scenario, load_scenario

VARIANTS = all_variants()


def test_the_zoo_holds_the_required_variants():
    names = {v.name for v in VARIANTS}
    assert {"key-context-set-after-poll", "equal-timestamp-reregisters-physical", "delete-cancels-physical-timer",
            "register-at-watermark-fires-at-once", "timer-list-not-set",
            "restore-accepts-foreign-key-groups", "flush-handles-head-only", "flush-without-horizon",
            "trigger-reads-real-clock", "flush-after-finish", "wait-fires-early", "override-ignored", "format-1-restore-keeps-trigger",
            # issue 31: keyed forward edges after a rescale; end of input after a restore
            "forward-keyed-state-restored-by-subtask-index", "finished-source-channel-state-dropped",
            "finished-source-restored-without-max-watermark"} <= names
    for v in VARIANTS:
        assert v.source and v.description
        registry.get(v.caught_by)


@pytest.mark.parametrize("bug", VARIANTS, ids=lambda v: v.name)
def test_variant_is_caught_and_replays(bug):
    result = hunt(bug, examples=settings().max_examples, seed=0, shrink=False)  # detection; the CLI shrinks
    assert not result.holds, f"{bug.name} ({bug.source}) survived {result.examples} examples"
    assert result.scenario is not None and len(result.scenario.steps) > 0
    # the minimal scenario is a file a user can replay: it fails with the bug, holds without it
    scenario = load_scenario(dump_scenario(result.scenario))
    prop = registry.get(bug.caught_by)
    with bug.patch():
        assert not prop.check(scenario).holds
    assert prop.check(scenario).holds


def test_patches_are_undone():
    from streamproof.impl.timers.internal_timer_service import InternalTimerService
    before = dict(vars(InternalTimerService))
    for bug in VARIANTS:
        with bug.patch():
            pass
    assert dict(vars(InternalTimerService)) == before

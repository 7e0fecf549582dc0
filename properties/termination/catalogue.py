"""Registers the termination properties (FLIP-269) and the Hypothesis strategy of ``termination``
scenarios."""

from __future__ import annotations

from hypothesis import strategies as st

from streamproof.properties.job.steps import Fail, FailInInterruptedFiring, Rescale
from streamproof.properties.registry import Property, register
from streamproof.properties.scenario import Scenario
from streamproof.properties.termination.check import CHECKS, check_termination
from streamproof.properties.termination.steps import ACTIONS, Override, ProcessingTimer

KEYS = ["a", "b", "c", "d", 1, 2]


@st.composite
def termination_scenarios(draw) -> Scenario:
    """Timers at multiples of 4 in [0, 400] (the job's processing time runs one unit per step, a
    few hundred steps: some fire while the job runs, some are pending at its end); callbacks
    register a child 1 earlier (always at or below the horizon), or a chain 150 or 1000 later
    (the flush's horizon cuts it), and delete a timer 4k later; up to three faults."""
    sources = draw(st.integers(1, 3), label="sources")
    steps: list = []
    used: set = set()
    for _ in range(draw(st.integers(3, 24), label="timers")):
        key = draw(st.sampled_from(KEYS))
        pts = 4 * draw(st.integers(0, 100))
        if (key, pts) in used:
            continue
        used.add((key, pts))
        then = draw(st.sampled_from([None, None, -1, -1, 150, 1000]))
        steps.append(ProcessingTimer(
            draw(st.integers(0, sources - 1)), key, pts,
            draw(st.sampled_from([None, *ACTIONS, "TRIGGER", "WAIT"])),
            None if then == -1 and pts == 0 else then,
            draw(st.sampled_from([None, None, None, 4, 8, 40]))))
    for _ in range(draw(st.integers(0, 2), label="failures")):
        steps.append(Fail(draw(st.integers(1, 400)), None))
    if draw(st.booleans()):
        steps.append(FailInInterruptedFiring(draw(st.integers(1, 4)), None))
    if draw(st.integers(0, 3)) == 0:
        steps.append(Rescale(draw(st.integers(1, 400)), draw(st.integers(1, 3))))
    if draw(st.integers(0, 2), label="override steps") == 0:
        for _ in range(draw(st.integers(1, 2))):  # the job's input ends around step 60
            steps.append(Override(draw(st.sampled_from(ACTIONS)), draw(st.one_of(
                st.none(), st.integers(1, 50), st.integers(1, 50), st.integers(0, 400)))))
    params = {
        "sources": sources,
        "parallelism": draw(st.integers(1, 3)),
        "max_parallelism": draw(st.sampled_from([4, 8, 16])),
        "checkpoint_interval": draw(st.integers(3, 30)),
        "interruptible_timers": draw(st.booleans()),
        "unaligned": draw(st.booleans()),
        "channel_capacity": draw(st.integers(1, 4)),
        "async_mail_rate": draw(st.sampled_from([0.0, 0.3, 0.7])),
        "seed": draw(st.integers(0, 2**16)),
        "drain": draw(st.sampled_from([True, True, True, False])),
    }
    override = draw(st.sampled_from([None, None, None, *ACTIONS]))
    params.update({
        "override": override,
        "yielding": draw(st.booleans()),
        # without any override, format 1 (restored timers become CANCEL) is the interesting case
        "snapshot_format": draw(st.sampled_from([2, 1] if override or any(
            isinstance(s, Override) for s in steps) else [1, 1, 2])),
    })
    return Scenario(family="termination", steps=tuple(steps), params=params)


SUMMARIES = {
    "termination.fires-once": "At end of input with drain every TRIGGER / WAIT processing-time timer fires "
                              "exactly once in the committed output (under failures, rescales, interruptible "
                              "timers); without drain each is committed or kept with its action in the stop "
                              "savepoint; no timer's output is committed twice.",
    "termination.actions-obeyed": "In the end-of-input flush, timers not yet due fire only by TRIGGER (reading MAX) "
                                  "or WAIT (reading exactly the later of the flush's clock and their time), never "
                                  "CANCEL, never after the horizon, in timestamp order; the flush's firings are the "
                                  "specification's (model/termination.py) from the timers pending when it began, "
                                  "with the override in effect applied to every one (set at any time, after "
                                  "registrations and restores, format-1 ones included); no firing reads a time "
                                  "before its timer's; no flush without drain.",
    "termination.finish-is-last": "The flush terminates; MAX_WATERMARK and the event-time timers' output (an "
                                  "interrupted firing's continuation) precede it, finish() follows it, and only "
                                  "EndOfData follows finish().",
}
REACHABILITY = ("end with drain", "stop without drain", "flush fired a TRIGGER timer", "flush fired a WAIT timer",
                "timer firing interrupted", "failure before the end",
                "operator override set", "restored from a format-1 checkpoint",
                "override set after timers exist", "override set after a restore",
                "format-1 restore under an override", "flush handled timers out of registration order",
                "WAIT timer read a flush clock later than its time")

for _name in CHECKS:
    register(Property(
        name=_name, family="termination", summary=SUMMARIES[_name],
        check=(lambda name: lambda scenario: check_termination(scenario, name))(_name),
        strategy=termination_scenarios, reachability=REACHABILITY,
    ))

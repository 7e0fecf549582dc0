"""Registers the timer-service properties."""

from __future__ import annotations

from streamproof.properties.registry import Property, register
from streamproof.properties.timers.check import check_timers


def _machine():
    from streamproof.properties.timers.machine import TimersMachine
    return TimersMachine


def _check(scenario):
    return check_timers(scenario.steps, "timers.differential")


TIMERS_DIFFERENTIAL = register(Property(
    name="timers.differential",
    family="timers",
    summary="The timer service fires, keeps and snapshots exactly what the model allows: same "
            "observations, same pending timers per key group, one physical timer at the head; "
            "unwatched, its clock's inline firing changes nothing else.",
    check=_check,
    machine=_machine,
    reachability=(
        "equal-timestamp timers fired together (tie)",
        "try_advance_watermark interrupted",
        "rescaled restore into split key-group ranges",
        "restored instance holds timers",
        "step rejected",
        "spurious wake-up (physical timer with nothing due)",
        "physical timer moved earlier",
        "processing-time tie with a callback registering a timer",
        "head's physical timer fired inline (unwatched clock)",
        "inline firing passed over: another physical timer due first",
    ),
))

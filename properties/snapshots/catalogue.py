"""Registers the properties of copy-on-write timer snapshots (family ``snapshots``)."""

from __future__ import annotations

from streamproof.properties.registry import Property, register
from streamproof.properties.snapshots.check import check_snapshots

SUMMARIES = {
    "snapshots.point-in-time": "Every finished copy-on-write snapshot holds exactly the timers live when it "
                               "started (both domains, with termination actions; format 1: CANCEL), however "
                               "registrations, deletions, firings and other snapshots interleave with it; once "
                               "none runs, no tombstone or old version is left.",
    "snapshots.restore-equivalence": "Restoring a snapshot into any number of subtasks and going on equals the "
                                     "model going on from the snapshot: the same timers fire, each once, and the "
                                     "same timers stay pending with their actions; a corrupted snapshot is "
                                     "rejected and changes nothing, and one damaged only in a section's payload "
                                     "(whole-file CRC recomputed) is rejected naming that section's key group.",
}


def _machine(name: str):
    def machine():
        from streamproof.properties.snapshots import machine as snapshot_machine
        return {"snapshots.point-in-time": snapshot_machine.PointInTimeMachine,
                "snapshots.restore-equivalence": snapshot_machine.RestoreEquivalenceMachine}[name]
    return machine


def _reachability() -> tuple:
    from streamproof.properties.snapshots.machine import REACHABILITY
    return REACHABILITY


for _name, _summary in SUMMARIES.items():
    register(Property(
        name=_name, family="snapshots", summary=_summary,
        check=(lambda name: lambda scenario: check_snapshots(scenario.steps, name))(_name),
        machine=_machine(_name), reachability=_reachability(),
    ))

"""Registers the state TTL property (family ``ttl``) and the Hypothesis strategy of its scenarios."""

from __future__ import annotations

from hypothesis import strategies as st

from streamproof.properties.registry import Property, register
from streamproof.properties.scenario import Scenario
from streamproof.properties.ttl.check import LABELS, PROPERTY, check_ttl
from streamproof.properties.ttl.steps import (
    KINDS, UPDATE_TYPES, VISIBILITIES, Advance, Clear, Read, Remove, Restore, Snapshot, Write,
)

KEYS = ["a", "a", "b"]
ENTRIES = ["x", "y"]


@st.composite
def ttl_scenarios(draw) -> Scenario:
    """Writes, reads, clears and removes on two keys and one or two state kinds, the clock moving by
    steps of about a third of the TTL (so values expire, some just at ``last access + ttl``),
    snapshots and restores; a random TTL configuration."""
    ttl = draw(st.sampled_from([10, 30, 100]), label="ttl")
    start = draw(st.sampled_from([0, 1000]))
    params = {"ttl": ttl, "update_type": UPDATE_TYPES[draw(st.integers(0, 1))],
              "visibility": VISIBILITIES[draw(st.integers(0, 1))], "full_snapshot": draw(st.booleans()),
              "start": start}
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=2, unique=True), label="state kinds")
    now, steps, snapshots = start, [], []
    for _ in range(draw(st.integers(10, 40), label="steps")):
        what = draw(st.sampled_from(["write", "read", "advance", "write", "read", "snapshot", "advance", "write",
                                     "read", "restore", "clear", "remove", "snapshot", "restore"]))
        key, kind = draw(st.sampled_from(KEYS)), draw(st.sampled_from(kinds))
        entry = draw(st.sampled_from(ENTRIES)) if kind == "map" else None
        if what == "write":
            steps.append(Write(key, kind, draw(st.integers(-5, 5)), entry))
        elif what == "read":
            steps.append(Read(key, kind, draw(st.sampled_from([entry, None])) if kind == "map" else None))
        elif what == "advance":
            now += draw(st.sampled_from([1, ttl // 3, ttl // 2, ttl, ttl + 1, 2 * ttl]))
            steps.append(Advance(now))
        elif what == "clear":
            steps.append(Clear(key, kind))
        elif what == "remove":
            steps.append(Remove(key, draw(st.sampled_from(ENTRIES))))
        elif what == "snapshot" or not snapshots:
            snapshots.append(f"c{len(snapshots) + 1}")
            steps.append(Snapshot(snapshots[-1]))
        else:
            steps.append(Restore(draw(st.sampled_from(snapshots))))
    return Scenario(family="ttl", steps=tuple(steps), params=params)


REACHABILITY = tuple(LABELS.values())

register(Property(
    name=PROPERTY, family="ttl",
    summary="State with a time-to-live (StateTtlConfig) behaves as model/state_ttl.py, Flink's TTL state: on "
            "value, list (per element), map (per entry), reducing and aggregating state, under both update "
            "types and visibilities, a value expires ttl after its last write (or read, OnReadAndWrite) on the "
            "operator's processing time, reads of expired values hide and remove them (or return them once), "
            "snapshots carry the timestamps and, with cleanup_full_snapshot, leave out what is expired, and "
            "expiry goes on after a restore.",
    check=check_ttl, strategy=ttl_scenarios, reachability=REACHABILITY,
))

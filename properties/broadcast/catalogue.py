"""Registers the broadcast-state property (family ``broadcast``) and the strategy of its scenarios."""

from __future__ import annotations

from hypothesis import strategies as st

from streamproof.properties.broadcast.check import LABELS, PROPERTY, check_broadcast
from streamproof.properties.broadcast.steps import Checkpoint, Put, Restore
from streamproof.properties.registry import Property, register
from streamproof.properties.scenario import Scenario


@st.composite
def broadcast_scenarios(draw) -> Scenario:
    """Broadcast puts (sometimes one subtask's only), checkpoints and restores at parallelisms 1-4."""
    p = draw(st.integers(1, 3), label="parallelism")
    steps, checkpoints, current = [], [], p
    for _ in range(draw(st.integers(4, 16), label="steps")):
        what = draw(st.sampled_from(["put", "put", "put", "checkpoint", "restore"]))
        if what == "put":
            subtask = draw(st.one_of(st.none(), st.none(), st.integers(0, current - 1)))
            steps.append(Put(draw(st.sampled_from("abc")), draw(st.integers(0, 9)), subtask))
        elif what == "checkpoint" or not checkpoints:
            checkpoints.append(f"c{len(checkpoints) + 1}")
            steps.append(Checkpoint(checkpoints[-1]))
        else:
            current = draw(st.integers(1, 4))
            steps.append(Restore(draw(st.sampled_from(checkpoints)), current))
    return Scenario(family="broadcast", steps=tuple(steps), params={"parallelism": p})


register(Property(
    name=PROPERTY, family="broadcast",
    summary="Broadcast state is operator state in BROADCAST mode (model/broadcast_state.py): each subtask keeps, "
            "checkpoints and restores its own copy; on restore new subtask i reads old subtask i % old "
            "parallelism's copy (its own at the same or a lower parallelism, round robin beyond it).",
    check=check_broadcast, strategy=broadcast_scenarios, reachability=tuple(LABELS.values()),
))

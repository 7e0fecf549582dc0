"""The ``counter`` family's property: the counter reads what its specification says, after
every step, checkpoints and restores included."""

from __future__ import annotations

from streamproof import Property, Scenario, Verdict, register_property

from counter_family.counter import CheckpointedCounter
from counter_family.spec import CounterSpec

NAME = "counter.matches-spec"


def check(scenario: Scenario) -> Verdict:
    counter, spec, observed = CheckpointedCounter(), CounterSpec(), []
    for index, step in enumerate(scenario.steps):
        args = {"n": step.n} if step.op == "add" else {}
        getattr(counter, step.op)(**args)
        getattr(spec, step.op)(**args)
        if step.op == "read":
            observed.append({"event": "read", "value": counter.read()})
        if counter.read() != spec.read():
            return Verdict(NAME, False, observed, invariant="value", step=index,
                           message=f"the counter reads {counter.read()}, the specification {spec.read()}")
    return Verdict(NAME, True, observed)


def scenarios():
    """Scenarios to explore: up to 30 steps of adds, checkpoints, restores and reads."""
    from hypothesis import strategies as st

    from counter_family.steps import Add, Checkpoint, Read, Restore

    one = st.one_of(st.builds(Add, st.integers(0, 1000)), st.sampled_from([Checkpoint(), Restore(), Read()]))
    return st.lists(one, max_size=30).map(lambda steps: Scenario(family="counter", steps=tuple(steps)))


register_property(Property(
    name=NAME,
    family="counter",
    summary="After every step the counter reads what its specification says: a restore undoes "
            "exactly the adds since the last checkpoint, none lost, none counted twice.",
    check=check,
    strategy=scenarios,
))

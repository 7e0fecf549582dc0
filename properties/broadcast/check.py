"""The differential check of broadcast state: the runtime's per-subtask stores
(:class:`streamproof.impl.tasks.chained_operators.BroadcastStateStore`) snapshotted and restored by the rule the
chain task uses (:func:`streamproof.impl.tasks.operator_chain.broadcast_copy_for`) against
``model/broadcast_state.py``, step by step.

Invariant ``same-copies``: after every step each subtask's copy is the specification's.
"""

from __future__ import annotations

from streamproof.impl.tasks import operator_chain as chain
from streamproof.impl.tasks.chained_operators import BroadcastStateStore
from streamproof.model.broadcast_state import BroadcastStateSpec
from streamproof.properties.broadcast.steps import Checkpoint, Put, Restore, broadcast_parallelism
from streamproof.properties.reach import note
from streamproof.properties.scenario import Scenario
from streamproof.properties.verdict import Verdict

PROPERTY = "broadcast.restore"
STATE = "rules"
LABELS = {"rescaled-up": "restored at a higher parallelism", "rescaled-down": "restored at a lower parallelism",
          "diverged": "subtask copies differed at a checkpoint"}


def _stores(parallelism: int) -> list:
    return [BroadcastStateStore() for _ in range(parallelism)]


def check_broadcast(scenario: Scenario) -> Verdict:
    p = broadcast_parallelism(scenario)
    spec, stores = BroadcastStateSpec(p), _stores(p)
    checkpoints: dict[str, list] = {}
    observed: list = []
    for index, s in enumerate(scenario.steps):
        if isinstance(s, Put):
            for i, store in enumerate(stores):
                if s.subtask is None or s.subtask == i:
                    store.states.setdefault(STATE, {})[s.key] = s.value
            spec.put(s.key, s.value, s.subtask)
        elif isinstance(s, Checkpoint):
            checkpoints[s.id] = [(i, {STATE: dict(store.snapshot().get(STATE, {}))}) for i, store in enumerate(stores)]
            spec.checkpoint(s.id)
            if len({tuple(sorted(c.items())) for c in spec.copies}) > 1:
                note(LABELS["diverged"])
        elif isinstance(s, Restore):
            old = len(checkpoints[s.id])
            note(LABELS["rescaled-up"] if s.parallelism > old else LABELS["rescaled-down"] if s.parallelism < old
                 else "restored at the same parallelism")
            stores = _stores(s.parallelism)
            for i, store in enumerate(stores):
                chosen = chain.broadcast_copy_for(checkpoints[s.id], i)
                if chosen is not None:
                    store.restore(chosen)
            spec.restore(s.id, s.parallelism)
        got = [store.states.get(STATE, {}) for store in stores]
        observed.append([s.op, got])
        if got != spec.copies:
            return Verdict(PROPERTY, False, observed, "same-copies",
                           f"after step {index} ({s.op}) the subtasks' broadcast state is {got}, the specification's "
                           f"{spec.copies}", index)
    return Verdict(PROPERTY, True, observed)

"""The differential check of state TTL: ``streamproof.flink``'s TTL state handles
(streamproof/flink/state_ttl.py) on the runtime's keyed operator, against ``model/state_ttl.py``,
step by step, on ``ttl`` scenarios.

Invariants:
  * ``same-reads``: every read returns what the specification reads;
  * ``same-stored-state``: after every step the operator's keyed state holds exactly the
    specification's cells (values and last-access timestamps), key by key;
  * ``same-snapshot``: a snapshot's keyed state holds exactly the specification's snapshot
    (with ``cleanup_full_snapshot``: without what was expired at snapshot time).
"""

from __future__ import annotations

from typing import Any

from streamproof.flink.adapter import adapt
from streamproof.flink.common.time import Time
from streamproof.flink.common.typeinfo import Types
from streamproof.flink.datastream.functions import AggregateFunction, KeyedProcessFunction
from streamproof.flink.datastream.state import (
    AggregatingStateDescriptor, ListStateDescriptor, MapStateDescriptor, ReducingStateDescriptor, StateTtlConfig,
    ValueStateDescriptor,
)
from streamproof.flink.state_ttl import TtlValue
from streamproof.impl.state.key_groups import KeyGroupRange
from streamproof.impl.operators.keyed_process_operator import KeyedProcessOperator, StreamRecord
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService
from streamproof.model import state_ttl as spec
from streamproof.properties.reach import note
from streamproof.properties.scenario import Scenario
from streamproof.properties.ttl.steps import Advance, Clear, Read, Remove, Restore, Snapshot, Write, ttl_params
from streamproof.properties.verdict import Verdict

PROPERTY = "ttl.differential"
MAX_PARALLELISM = 8
LABELS = {"expired-hidden": "expired value read and hidden",
          "expired-returned": "expired value returned (ReturnExpiredIfNotCleanedUp)",
          "refreshed": "read refreshed the TTL",
          "snapshot-dropped": "entry dropped by a full snapshot",
          "expired-after-restore": "entry expired after restore"}


class CountAndSum(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, accumulator):
        return (accumulator[0] + 1, accumulator[1] + value)

    def get_result(self, accumulator):
        return accumulator

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


class TtlStates(KeyedProcessFunction):
    """Runs one step on the current key's states (a record ``(op, state, value, entry)``) and
    yields what a read returns."""

    def __init__(self, ttl_config: StateTtlConfig):
        self.ttl_config = ttl_config

    def open(self, runtime_context):
        def ttl(descriptor):
            descriptor.enable_time_to_live(self.ttl_config)
            return descriptor
        self.states = {
            "value": runtime_context.get_state(ttl(ValueStateDescriptor("value", Types.LONG()))),
            "list": runtime_context.get_list_state(ttl(ListStateDescriptor("list", Types.LONG()))),
            "map": runtime_context.get_map_state(ttl(MapStateDescriptor("map", Types.STRING(), Types.LONG()))),
            "reducing": runtime_context.get_reducing_state(
                ttl(ReducingStateDescriptor("reducing", lambda a, b: a + b, Types.LONG()))),
            "aggregating": runtime_context.get_aggregating_state(
                ttl(AggregatingStateDescriptor("aggregating", CountAndSum(), Types.PICKLED_BYTE_ARRAY()))),
        }

    def process_element(self, record, ctx):
        op, kind, value, entry = record
        state = self.states[kind]
        if op == "write":
            if kind == "value":
                state.update(value)
            elif kind == "map":
                state.put(entry, value)
            else:
                state.add(value)
        elif op == "read":
            if kind == "value":
                yield state.value()
            elif kind == "list":
                yield list(state.get())
            elif kind == "map":
                yield state.get(entry) if entry is not None else sorted(state.items())
            else:
                yield state.get()
        elif op == "clear":
            state.clear()
        elif op == "remove":
            state.remove(entry)


def ttl_config(params: dict) -> StateTtlConfig:
    builder = StateTtlConfig.new_builder(Time.milliseconds(params["ttl"])) \
        .set_update_type(StateTtlConfig.UpdateType[params["update_type"]]) \
        .set_state_visibility(StateTtlConfig.StateVisibility[params["visibility"]])
    return (builder.cleanup_full_snapshot() if params["full_snapshot"] else builder).build()


def spec_config(params: dict) -> spec.Config:
    return spec.Config(params["ttl"], params["update_type"] == "OnReadAndWrite",
                       params["visibility"] == "ReturnExpiredIfNotCleanedUp", params["full_snapshot"])


class _Operator:
    """One operator instance (all key groups) on a shared processing-time clock."""

    def __init__(self, params: dict, clock: ManualProcessingTimeService, snapshot=None):
        self.outputs: list = []
        self.operator = KeyedProcessOperator(
            adapt(TtlStates(ttl_config(params))), MAX_PARALLELISM, KeyGroupRange(0, MAX_PARALLELISM - 1),
            clock, lambda value, ts: self.outputs.append(value), max_seconds_per_callback=None)
        if snapshot is not None:
            self.operator.initialize_state([snapshot])
        self.operator.open()

    def run(self, key: str, record: tuple) -> list:
        before = len(self.outputs)
        self.operator.process_element(StreamRecord(key, record, 0))
        return self.outputs[before:]


def _plain(stored: Any) -> Any:
    """A stored TTL value as the specification writes it: cells ``(value, timestamp)``."""
    if isinstance(stored, TtlValue):
        return (stored.user_value, stored.last_access_timestamp)
    if isinstance(stored, list):
        return [_plain(v) for v in stored]
    if isinstance(stored, dict):
        return {k: _plain(v) for k, v in stored.items()}
    return ("not a TtlValue", repr(stored))


def keyed_state(tables: dict) -> dict:
    """``{key: {state name: cells}}`` of a backend's tables or a snapshot's keyed state."""
    out: dict = {}
    for per_name in tables.values():
        for name, entries in per_name.items():
            for key, stored in entries.items():
                out.setdefault(getattr(key, "value", key), {})[name] = _plain(stored)
    return out


def check_ttl(scenario: Scenario) -> Verdict:
    params = ttl_params(scenario)
    clock = ManualProcessingTimeService(start=params["start"])
    operator = _Operator(params, clock)
    config = spec_config(params)
    models: dict[str, spec.KeyState] = {}
    snapshots: dict[str, tuple] = {}
    observed: list = []
    happened: set = set()

    def model(key: str) -> spec.KeyState:
        return models.setdefault(key, spec.KeyState(config))

    def fail(invariant: str, message: str, index: int) -> Verdict:
        return Verdict(PROPERTY, False, observed, invariant, message, index)

    for index, s in enumerate(scenario.steps):
        now = clock.get_current_processing_time()
        if isinstance(s, Write):
            operator.run(s.key, ("write", s.state, s.value, s.entry))
            model(s.key).write(s.state, s.value, now, s.entry)
        elif isinstance(s, Read):
            got = operator.run(s.key, ("read", s.state, None, s.entry))
            want = model(s.key).read(s.state, now, s.entry)
            observed.append(["read", s.key, s.state, got[0] if got else None])
            if got != [want]:
                return fail("same-reads", f"{s.state} of {s.key!r} at {now} read {got[0] if got else None!r}, "
                                          f"the specification reads {want!r}", index)
        elif isinstance(s, Clear):
            operator.run(s.key, ("clear", s.state, None, None))
            model(s.key).clear(s.state)
        elif isinstance(s, Remove):
            operator.run(s.key, ("remove", "map", None, s.entry))
            model(s.key).remove(s.entry)
        elif isinstance(s, Advance):
            clock.advance_to(s.to)
        elif isinstance(s, Snapshot):
            taken = operator.operator.snapshot_state()
            snapshots[s.id] = (taken, {key: m.snapshot(now) for key, m in models.items()})
            got = keyed_state(taken.keyed_state)
            want = {key: cells for key, cells in snapshots[s.id][1].items() if cells}
            if got != want:
                return fail("same-snapshot", f"snapshot {s.id!r} at {now} holds {got}, the specification's "
                                             f"{want}", index)
        elif isinstance(s, Restore):
            taken, states = snapshots[s.id]
            operator = _Operator(params, clock, taken)
            happened.update(label for m in models.values() for label in m.happened)
            models = {}
            for key, cells in states.items():
                model(key).restore(cells, now)
        got = keyed_state(operator.operator.state_backend._tables)
        want = {key: dict(m.stored) for key, m in models.items() if m.stored}
        if got != want:
            return fail("same-stored-state", f"after step {index} ({s.op}) at {now} the operator holds {got}, "
                                             f"the specification {want}", index)
    happened.update(label for m in models.values() for label in m.happened)
    for tag, label in LABELS.items():
        if tag in happened:
            note(label)
    return Verdict(PROPERTY, True, observed)

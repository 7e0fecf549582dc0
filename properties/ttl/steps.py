"""The ``ttl`` scenario family: one keyed operator whose states of every kind (``value``,
``list``, ``map``, ``reducing``, ``aggregating``) enable the TTL configuration of ``params``,
driven by the processing-time clock, snapshotted and restored.

Steps: ``write{key, state, value, entry?}`` (value: ``update``; list: ``add``; map: ``put(entry,
value)``; reducing: ``add`` (a sum); aggregating: ``add`` (accumulator ``(count, sum)``)),
``read{key, state, entry?}`` (a map without ``entry``: its sorted items), ``clear{key, state}``,
``remove{key, entry}`` (a map entry), ``advance{to}`` (the processing time, never back),
``snapshot{id}`` (a checkpoint of the keyed state), ``restore{id}`` (a new operator instance
restored from that snapshot; the clock goes on).

``params`` (see :data:`DEFAULT_PARAMS`): ``ttl`` (ms), ``update_type`` (``OnCreateAndWrite`` or
``OnReadAndWrite``), ``visibility`` (``NeverReturnExpired`` or ``ReturnExpiredIfNotCleanedUp``),
``full_snapshot`` (``cleanup_full_snapshot()``), ``start`` (the clock's start).
"""

from __future__ import annotations

from typing import Any, ClassVar

from streamproof.properties.scenario import (
    STR, TOP, EnumKind, IntKind, Scenario, Step, arg, register_family, step, step_error,
)

KINDS = ("value", "list", "map", "reducing", "aggregating")
UPDATE_TYPES = ("OnCreateAndWrite", "OnReadAndWrite")
VISIBILITIES = ("NeverReturnExpired", "ReturnExpiredIfNotCleanedUp")
DEFAULT_PARAMS: dict[str, Any] = {"ttl": 100, "update_type": "OnCreateAndWrite", "visibility": "NeverReturnExpired",
                                  "full_snapshot": False, "start": 0}
TIME = IntKind(0, 10**15)
VALUE = IntKind(-10**6, 10**6)


@step
class Write(Step):
    """Writes ``value`` to ``state`` of ``key`` (a map: at ``entry``)."""

    op: ClassVar[str] = "write"
    key: str = arg(STR)
    state: str = arg(EnumKind(KINDS))
    value: int = arg(VALUE)
    entry: str | None = arg(STR, optional=True)


@step
class Read(Step):
    """Reads ``state`` of ``key`` (a map: ``get(entry)``, or its items without ``entry``)."""

    op: ClassVar[str] = "read"
    key: str = arg(STR)
    state: str = arg(EnumKind(KINDS))
    entry: str | None = arg(STR, optional=True)


@step
class Clear(Step):
    op: ClassVar[str] = "clear"
    key: str = arg(STR)
    state: str = arg(EnumKind(KINDS))


@step
class Remove(Step):
    """Removes ``entry`` of the map state of ``key``."""

    op: ClassVar[str] = "remove"
    key: str = arg(STR)
    entry: str = arg(STR)


@step
class Advance(Step):
    """The processing time becomes ``to`` (never back)."""

    op: ClassVar[str] = "advance"
    to: int = arg(TIME)


@step
class Snapshot(Step):
    op: ClassVar[str] = "snapshot"
    id: str = arg(STR)


@step
class Restore(Step):
    """A new operator instance restored from snapshot ``id`` (taken earlier)."""

    op: ClassVar[str] = "restore"
    id: str = arg(STR)


def ttl_params(scenario: Scenario) -> dict:
    params = {**DEFAULT_PARAMS, **scenario.params}
    unknown = set(scenario.params) - set(DEFAULT_PARAMS)
    if unknown:
        raise TOP.expected("params", f"only {', '.join(DEFAULT_PARAMS)}", sorted(unknown)[0], "semantic")
    for name, low in (("ttl", 1), ("start", 0)):
        value = params[name]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= 10**15:
            raise TOP.expected("params", f"{name}: an integer in [{low}, 10^15]", value, "semantic")
    if params["update_type"] not in UPDATE_TYPES:
        raise TOP.expected("params", "update_type: " + " or ".join(UPDATE_TYPES), params["update_type"], "semantic")
    if params["visibility"] not in VISIBILITIES:
        raise TOP.expected("params", "visibility: " + " or ".join(VISIBILITIES), params["visibility"], "semantic")
    if not isinstance(params["full_snapshot"], bool):
        raise TOP.expected("params", "full_snapshot: true or false", params["full_snapshot"], "semantic")
    return params


def validate_ttl(scenario: Scenario) -> None:
    params = ttl_params(scenario)
    clock, snapshots = params["start"], set()
    for i, s in enumerate(scenario.steps):
        if isinstance(s, (Write, Read)) and s.state != "map" and s.entry is not None:
            raise step_error(i, s, "entry", "no entry (only a map state has entries)", s.entry)
        if isinstance(s, Write) and s.state == "map" and s.entry is None:
            raise step_error(i, s, "entry", "an entry (a map state is written at an entry)", None)
        if isinstance(s, Advance):
            if s.to < clock:
                raise step_error(i, s, "to", f"a time not before the clock ({clock})", s.to)
            clock = s.to
        if isinstance(s, Snapshot):
            snapshots.add(s.id)
        if isinstance(s, Restore) and s.id not in snapshots:
            raise step_error(i, s, "id", "the id of an earlier snapshot", s.id)


register_family("ttl", [Write, Read, Clear, Remove, Advance, Snapshot, Restore], validate_ttl)

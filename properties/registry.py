"""The one property registry: pytest, the CLI, the Spark harness and certification read it.

A property has a name that appears in every report, the scenario family it checks, a checker
``check(scenario) -> Verdict`` (what ``streamproof replay`` runs), a Hypothesis state machine that
explores scenarios of its family, and the bug-zoo variants it must catch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from streamproof.properties import families


@dataclass(frozen=True)
class Property:
    name: str
    family: str
    summary: str
    check: Callable  # (Scenario) -> Verdict
    machine: Callable[[], type] | None = None  # () -> RuleBasedStateMachine subclass
    strategy: Callable[[], object] | None = None  # () -> SearchStrategy[Scenario], when not a machine
    reachability: tuple[str, ...] = field(default=())  # event() labels its interesting cases emit


class UnknownProperty(KeyError):
    def __str__(self) -> str:
        return self.args[0]


_REGISTRY: dict[str, Property] = {}
_loaded = False


def register(prop: Property) -> Property:
    if prop.name in _REGISTRY and _REGISTRY[prop.name] is not prop:
        raise ValueError(f"property {prop.name!r} is registered twice")
    _REGISTRY[prop.name] = prop
    return prop


def _load() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        families.load("steps")  # a family's properties need its steps
        families.load("catalogue")


def all_properties() -> list[Property]:
    _load()
    return sorted(_REGISTRY.values(), key=lambda p: p.name)


def get(name: str) -> Property:
    _load()
    if name not in _REGISTRY:
        raise UnknownProperty(f"unknown property {name!r}; known: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def select(names: list[str] | None) -> list[Property]:
    """The named properties, or every property. A name before the dot selects exactly the
    properties so named (``job``: ``job.*``, not the ``eos.*`` properties that also run job
    scenarios); a scenario family that no property is named after (``valve_job``) selects its
    properties."""
    props = all_properties()
    if not names:
        return props
    chosen: list[Property] = []
    for name in names:
        matches = [p for p in props if p.name == name or p.name.split(".")[0] == name]
        if not matches:
            matches = [p for p in props if p.family == name]
        if not matches:
            get(name)  # raises UnknownProperty with the list
        chosen.extend(p for p in matches if p not in chosen)
    return chosen


def for_family(family: str) -> list[Property]:
    return [p for p in all_properties() if p.family == family]

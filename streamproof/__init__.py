"""streamproof: property-based verification of a Flink-style stream runtime.

The public API (docs/api.md lists it, with what is internal): scenarios (:func:`load_scenario`,
:func:`load_scenario_file`, :func:`dump_scenario`, :class:`Scenario`, :class:`ScenarioError`),
:func:`replay` (check one scenario), :func:`all_properties` (the registry) and :func:`explore` (a
Hypothesis run of one property).

Every name is imported on first use (PEP 562), so ``import streamproof`` and
``import streamproof.model`` stay light and load nothing of the rest (the pytest plugin imports
this package in every test session; Spark executors import ``streamproof.model`` and friends).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> the module that defines it
_PUBLIC = {
    "load_scenario": "streamproof.properties.scenario",
    "load_scenario_file": "streamproof.properties.scenario",
    "dump_scenario": "streamproof.properties.scenario",
    "Scenario": "streamproof.properties.scenario",
    "ScenarioError": "streamproof.properties.scenario",
    "replay": "streamproof.replayer",
    "ReplayResult": "streamproof.replayer",
    "all_properties": "streamproof.properties.registry",
    "explore": "streamproof.properties.explore",
}

__all__ = ["__version__", *_PUBLIC]

if TYPE_CHECKING:  # for type checkers and IDEs; at run time every name is imported lazily
    from streamproof.properties.explore import explore
    from streamproof.properties.registry import all_properties
    from streamproof.properties.scenario import (
        Scenario,
        ScenarioError,
        dump_scenario,
        load_scenario,
        load_scenario_file,
    )
    from streamproof.replayer import ReplayResult, replay


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'streamproof' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))

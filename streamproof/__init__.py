"""streamproof: property-based verification of a Flink-style stream runtime.

The public API: scenarios (:func:`load_scenario`, :func:`load_scenario_file`,
:func:`dump_scenario`, :class:`Scenario`, :class:`ScenarioError`), :func:`replay` (check one
scenario), :func:`all_properties` (the registry) and :func:`explore` (a Hypothesis run of one
property). ``explore`` imports Hypothesis on first use, so importing this package stays light
(the pytest plugin imports it in every test session).
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

from properties.registry import all_properties  # noqa: E402
from properties.scenario import (  # noqa: E402
    Scenario,
    ScenarioError,
    dump_scenario,
    load_scenario,
    load_scenario_file,
)
from streamproof.replay import ReplayResult, replay  # noqa: E402

__all__ = [
    "__version__", "load_scenario", "load_scenario_file", "dump_scenario", "Scenario",
    "ScenarioError", "replay", "ReplayResult", "all_properties", "explore",
]


def __getattr__(name: str) -> Any:
    if name == "explore":
        from properties.explore import explore
        return explore
    raise AttributeError(f"module 'streamproof' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | {"explore"})

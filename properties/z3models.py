"""The z3 models ``streamproof prove`` runs (docs/prove.md): each a transition system with its
invariants, the known-bug variants that must be refuted, what it abstracts away, and how a
counterexample becomes a scenario file replayed on the implementation.

A variant names how the implementation reproduces it (``reproduced_by``): ``bugzoo:NAME`` (the bug
zoo's patch of that name) or ``protocol:MODE`` (the scenario's ``params.protocol``, valve family).
:func:`replay_counterexample` runs a counterexample's scenario both ways: reproduced (must fail its
property) and on the correct implementation (must hold).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable

from streamproof.properties.z3kit import Outcome, TransitionSystem, bmc, prove


@dataclass(frozen=True)
class ModelVariant:
    name: str
    source: str                  # a JIRA id, a seed document, or "streamproof"
    description: str
    refutes: str                 # the invariant its counterexample breaks
    reproduced_by: str | None    # "bugzoo:NAME", "protocol:MODE", or None (no implementation counterpart)


@dataclass(frozen=True)
class Z3Model:
    name: str
    family: str                  # the scenario family its counterexamples become
    summary: str
    abstracts: str               # what the model leaves out, one sentence
    build: Callable[[str | None, int], TransitionSystem]   # (variant or None, size) -> system
    variants: dict[str, ModelVariant]
    k: int                       # the induction depth that proves it
    depth: int                   # how deep BMC looks for counterexamples
    size_name: str               # the model's main bound ("timers", "subtasks", ...)
    size: int                    # its default value
    to_scenario: Callable[[list, str | None], dict] | None = None  # (trace, variant) -> scenario dict
    bounded: tuple[str, ...] = field(default=())  # invariants checked by BMC only (bounded liveness)
    variant_size: int | None = None  # the (smaller) size at which variants' counterexamples are searched
    variant_bounds: dict = field(default_factory=dict)  # further bounds of that search (build keywords)


_MODULES = (
    "streamproof.properties.termination.z3_flush",
    "streamproof.properties.job.z3_lifecycle",
    "streamproof.properties.valve.z3_valve",
    "streamproof.properties.snapshots.z3_versions",
)


def models() -> dict[str, Z3Model]:
    """Every model, by name, in the order of ``_MODULES`` (each module's ``MODEL``)."""
    found = {}
    for name in _MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name != name:
                raise
            continue
        found[module.MODEL.name] = module.MODEL
    return found


def check_model(model: Z3Model, variant: str | None = None, k: int | None = None,
                depth: int | None = None, size: int | None = None) -> list[Outcome]:
    """The correct model: every invariant proved by k-induction, its base case ``depth`` steps deep
    (default ``k``, which is sound); the ``bounded`` invariants by BMC to the model's depth. A
    variant: BMC to ``depth`` (default the model's) on the invariant it refutes (a counterexample
    elsewhere would say nothing about the variant)."""
    if variant is not None and variant not in model.variants:
        raise ValueError(f"unknown variant {variant!r} of model {model.name} "
                         f"(known: {', '.join(model.variants) or 'none'})")
    k = model.k if k is None else k
    if variant is not None:
        system = model.build(variant, size or model.variant_size or model.size, **model.variant_bounds)
        depth = model.depth if depth is None else depth
        return [bmc(system, model.variants[variant].refutes, depth)]
    system = model.build(variant, model.size if size is None else size)
    inductive = TransitionSystem(system.name, system.variables, system.init, system.actions,
                                 {n: f for n, f in system.invariants.items() if n not in model.bounded},
                                 system.description)
    outcomes = prove(inductive, k, k if depth is None else depth)
    return outcomes + [bmc(system, name, model.depth if depth is None else depth) for name in model.bounded]


def replay_command(model: Z3Model, variant: str, file: str) -> str:
    """The command that replays a variant's counterexample file on the implementation."""
    import shlex

    kind, _, name = (model.variants[variant].reproduced_by or "").partition(":")
    inject = f"--inject {name} " if kind == "bugzoo" else ""
    return f"streamproof replay {inject}{shlex.quote(file)}"


def counterexample_scenario(model: Z3Model, variant: str, outcome: Outcome) -> dict:
    """The scenario of a variant's counterexample, with its name, description and property."""
    if model.to_scenario is None:
        raise ValueError(f"model {model.name} has no scenario mapping")
    scenario = model.to_scenario(outcome.trace, variant)
    how = model.variants[variant].reproduced_by or ""
    kind, _, name = how.partition(":")
    # named as the bug-zoo variant it reproduces (z3-flush-handles-head-only), else the model's variant
    scenario.setdefault("name", f"z3-{name}" if kind == "bugzoo" else f"z3-{model.name}-{variant}")
    if kind == "bugzoo":
        scenario["description"] = (scenario.get("description", "") + f". Fails with the bug applied "
                                   f"('streamproof replay --inject {name} FILE'); holds without it.").lstrip(". ")
    elif kind == "protocol":
        scenario["description"] = (scenario.get("description", "") + f". Fails under params.protocol "
                                   f"{name!r}; holds under 'streamproof'.").lstrip(". ")
    return scenario


@dataclass(frozen=True)
class RoundTrip:
    scenario: dict
    reproduced_holds: bool       # the property on the variant's implementation counterpart (must be False)
    correct_holds: bool          # the property on the correct implementation (must be True)
    detail: str                  # the reproduced failure's message

    @property
    def ok(self) -> bool:
        return not self.reproduced_holds and self.correct_holds


def replay_counterexample(model: Z3Model, variant: str, scenario: dict) -> RoundTrip:
    """Runs the scenario's property on the variant's counterpart and on the correct implementation."""
    from streamproof.properties import registry
    from streamproof.properties.scenario import scenario_from_dict

    how = model.variants[variant].reproduced_by
    if how is None:
        raise ValueError(f"variant {variant!r} of model {model.name} has no implementation counterpart")
    prop = registry.get(scenario["property"])
    kind, _, name = how.partition(":")
    if kind == "bugzoo":
        from streamproof.properties.bugzoo import get_variant
        parsed = scenario_from_dict(scenario)
        with get_variant(name).patch():
            reproduced = prop.check(parsed)
        correct = prop.check(parsed)
    elif kind == "protocol":
        reproduced = prop.check(scenario_from_dict({**scenario, "params": {**scenario.get("params", {}),
                                                                         "protocol": name}}))
        correct = prop.check(scenario_from_dict({**scenario, "params": {**scenario.get("params", {}),
                                                                      "protocol": "streamproof"}}))
    else:
        raise ValueError(f"unknown reproduction {how!r}")
    return RoundTrip(scenario, reproduced.holds, correct.holds, reproduced.message or "")

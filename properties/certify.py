"""Certification of a user's operator (``streamproof certify module:Class``, docs/certify.md).

The operator, a :class:`streamproof.impl.operators.KeyedProcessFunction` whose records are ``(key, int value,
timestamp)``, runs in random ``job`` scenarios (1-3 sources with watermarks, parallelism 1-3,
checkpoints aligned or not, failures, failures inside interrupted timer firings, rescales, end of
input with drain) with interruptible timers on, against its own *ideal run*: the same input without
faults and with interruptible timers off. Properties:

  * ``certify.same-output``: the committed output equals the ideal run's (as a multiset);
  * ``certify.watermarks``: per task attempt, watermarks increase and no timer output at or below a
    watermark leaves after it;
  * ``certify.end-of-input``: MAX_WATERMARK before EndOfData, nothing after it, every interrupted
    firing made progress.

An operator that raises, or never lets the job finish, fails ``same-output`` with the error.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import platform
import sys
import time
from dataclasses import dataclass, field

from streamproof.impl.operators import KeyedProcessFunction
from streamproof.properties.job import check as job_check
from streamproof.properties.explore import explore
from streamproof.properties.job.functions import FUNCTIONS
from streamproof.properties.job.catalogue import job_scenarios
from streamproof.properties.registry import Property
from streamproof.properties.scenario import Scenario, dump_scenario
from streamproof.properties.verdict import Verdict

class CertifyError(ValueError):
    """The operator cannot be loaded (one line)."""


def load_operator(spec: str) -> type:
    """``module:Class`` (or ``module.Class``) of a KeyedProcessFunction subclass, importable from
    the current directory too."""
    module_name, sep, name = spec.partition(":")
    if not sep:
        module_name, _, name = spec.rpartition(".")
    if not module_name or not name:
        raise CertifyError(f"{spec!r}: expected module:Class")
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # the user's modules, as `python -m` finds them
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # noqa: BLE001 - any import failure is bad input
        raise CertifyError(f"{spec!r}: cannot import {module_name}: {type(e).__name__}: {e}") from None
    cls = getattr(module, name, None)
    if not (isinstance(cls, type) and issubclass(cls, KeyedProcessFunction)):
        raise CertifyError(f"{spec!r}: {name} is not a KeyedProcessFunction subclass in {module_name}")
    try:
        cls()
    except Exception as e:  # noqa: BLE001
        raise CertifyError(f"{spec!r}: {name}() cannot be built without arguments: {type(e).__name__}: {e}") from None
    return cls


def _same_output(faulty, ideal):
    from collections import Counter

    got, want = Counter(faulty.committed), Counter(ideal.committed)
    if got != want:
        extra, missing = sorted(got - want, key=repr)[:3], sorted(want - got, key=repr)[:3]
        return "same-output-as-the-ideal-run", f"extra {extra}, missing {missing}"
    return None


CHECKS = {
    "certify.same-output": _same_output,
    "certify.watermarks": job_check.CHECKS["job.watermarks"],
    "certify.end-of-input": job_check.CHECKS["job.end-of-input"],
}


def _check(operator_name: str, prop: str, scenario: Scenario) -> Verdict:
    if scenario.params.get("operator") != operator_name:
        scenario = dataclasses.replace(scenario, params={**scenario.params, "operator": operator_name})
    faulty, ideal = job_check.runs(scenario)
    if isinstance(ideal, str):
        return Verdict(prop, False, [], "ideal-run-finishes", f"the ideal run did not finish: {ideal}")
    if isinstance(faulty, str):
        return Verdict(prop, False, [], "job-finishes", faulty)
    problem = CHECKS[prop](faulty, ideal)
    if problem:
        return Verdict(prop, False, [], *problem)
    return Verdict(prop, True, [])


def properties_for(spec: str, cls: type) -> list[Property]:
    """The certification properties of ``cls``, runnable by :func:`streamproof.properties.explore.explore`."""
    name = f"user:{spec}"
    FUNCTIONS[name] = cls

    def scenarios():
        return job_scenarios().map(lambda s: dataclasses.replace(
            s, params={**s.params, "operator": name, "interruptible_timers": True}))

    return [Property(prop, "job", f"certification of {spec}: {prop}",
                     check=(lambda p: lambda scenario: _check(name, p, scenario))(prop), strategy=scenarios)
            for prop in CHECKS]


@dataclass
class Certificate:
    operator: str
    examples: int
    seed: int
    results: list = field(default_factory=list)
    versions: dict = field(default_factory=dict)

    @property
    def holds(self) -> bool:
        return all(r["verdict"] == "held" for r in self.results)

    def to_json(self) -> dict:
        return {"operator": self.operator, "certified": self.holds, "examples": self.examples, "seed": self.seed,
                "results": self.results, "versions": self.versions}

    def markdown(self) -> str:
        lines = [f"# Certificate: `{self.operator}`", "",
                 f"**{'certified' if self.holds else 'NOT certified'}**: {self.examples} job scenarios per property, "
                 f"seed {self.seed}, interruptible timers on, against the ideal run (no faults, interruptible timers off).",
                 "", "| property | verdict | examples | seconds | invariant | counterexample |", "|---|---|---|---|---|---|"]
        for r in self.results:
            lines.append(f"| `{r['property']}` | {r['verdict']} | {r['examples']} | {r['seconds']:.1f} | "
                         f"{r['invariant'] or ''} | {r['scenario_file'] or ''} |")
        lines += ["", "Tool versions: " + ", ".join(f"{k} {v}" for k, v in self.versions.items()), ""]
        for r in self.results:
            if r["message"]:
                lines += [f"- `{r['property']}`: {r['message']}"]
        return "\n".join(lines) + "\n"


def certify(spec: str, examples: int, seed: int = 0, out=None) -> Certificate:
    """Explores every certification property of the operator ``spec``; failing scenarios are
    written to ``out`` (a directory) when given."""
    from pathlib import Path

    from importlib import metadata

    import hypothesis

    try:
        version = metadata.version("streamproof")
    except metadata.PackageNotFoundError:
        version = "unknown"
    cls = load_operator(spec)
    cert = Certificate(spec, examples, seed, versions={"streamproof": version, "hypothesis": hypothesis.__version__,
                                                         "python": platform.python_version()})
    for prop in properties_for(spec, cls):
        started = time.perf_counter()
        e = explore(prop, examples, seed=seed)
        path = None
        if e.scenario is not None and out is not None:
            Path(out).mkdir(parents=True, exist_ok=True)
            path = str(Path(out) / f"{prop.name}.json")
            Path(path).write_text(dump_scenario(dataclasses.replace(
                e.scenario, name=f"certify-{prop.name}", description=f"{spec}: {e.message}")))
        cert.results.append({"property": prop.name, "verdict": e.verdict, "examples": e.examples,
                             "seconds": time.perf_counter() - started, "invariant": e.invariant,
                             "message": e.message or None, "scenario_file": path})
    return cert


def replay(spec: str, path) -> list[Verdict]:
    """The certification verdicts of one scenario file (a counterexample) for the operator ``spec``
    (its scenarios name it as ``user:SPEC``, known once it is loaded)."""
    import json
    from pathlib import Path

    from streamproof.properties.scenario import ScenarioError, load_scenario

    props = properties_for(spec, load_operator(spec))
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise ScenarioError(f"{path}: {e}") from None
    if isinstance(doc, dict) and isinstance(doc.get("params"), dict):
        doc["params"]["operator"] = f"user:{spec}"  # the operator being certified runs it
    scenario = load_scenario(json.dumps(doc))
    return [prop.check(scenario) for prop in props]


__all__ = ["Certificate", "CertifyError", "certify", "load_operator", "properties_for", "replay"]

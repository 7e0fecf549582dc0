"""streamproof: property-based verification of a Flink-style stream runtime.

The public API is what this package exports (``__all__``); docs/api.md lists it by use, with what
is internal. Scenarios (:func:`load_scenario`, :func:`load_scenario_file`, :func:`dump_scenario`),
checking (:func:`replay`, :func:`explore`), the catalogue (:func:`all_properties`,
:func:`register_property`), the bug zoo (:func:`bug_variant`, :func:`hunt`), extending the suite
with a family of one's own (:func:`register_family_package`, :func:`register_family`,
:func:`step`, :func:`arg`) and certifying an operator or a job (:func:`certify`).

Every name is imported on first use (PEP 562), so ``import streamproof`` and
``import streamproof.model`` stay light and load nothing of the rest (the pytest plugin imports
this package in every test session; Spark executors import ``streamproof.model`` and friends).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_SCENARIO = "streamproof.properties.scenario"
_REGISTRY = "streamproof.properties.registry"
_BUGZOO = "streamproof.properties.bugzoo"

# public name -> (the module that defines it, its name there)
_PUBLIC = {
    # scenarios
    "Scenario": (_SCENARIO, "Scenario"),
    "ScenarioError": (_SCENARIO, "ScenarioError"),
    "load_scenario": (_SCENARIO, "load_scenario"),
    "load_scenario_file": (_SCENARIO, "load_scenario_file"),
    "dump_scenario": (_SCENARIO, "dump_scenario"),
    # checking
    "replay": ("streamproof.replayer", "replay"),
    "ReplayResult": ("streamproof.replayer", "ReplayResult"),
    "explore": ("streamproof.properties.explore", "explore"),
    "Exploration": ("streamproof.properties.explore", "Exploration"),
    "Verdict": ("streamproof.properties.verdict", "Verdict"),
    "Violation": ("streamproof.properties.verdict", "Violation"),
    # the property catalogue
    "Property": (_REGISTRY, "Property"),
    "all_properties": (_REGISTRY, "all_properties"),
    "get_property": (_REGISTRY, "get"),
    "register_property": (_REGISTRY, "register"),
    # the bug zoo
    "BugVariant": (_BUGZOO, "BugVariant"),
    "bug_variant": (_BUGZOO, "variant"),
    "all_variants": (_BUGZOO, "all_variants"),
    "get_variant": (_BUGZOO, "get_variant"),
    "hunt": (_BUGZOO, "hunt"),
    # extending: a scenario family of one's own (docs/extending.md)
    "register_family_package": ("streamproof.properties.families", "register_family_package"),
    "FamilyPackageError": ("streamproof.properties.families", "FamilyPackageError"),
    "register_family": (_SCENARIO, "register_family"),
    "Step": (_SCENARIO, "Step"),
    "step": (_SCENARIO, "step"),
    "arg": (_SCENARIO, "arg"),
    "step_error": (_SCENARIO, "step_error"),
    "IntKind": (_SCENARIO, "IntKind"),
    "StrKind": (_SCENARIO, "StrKind"),
    "BoolKind": (_SCENARIO, "BoolKind"),
    "EnumKind": (_SCENARIO, "EnumKind"),
    "KeyKind": (_SCENARIO, "KeyKind"),
    "TraceComparison": ("streamproof.properties.tracecompare", "TraceComparison"),
    # certifying a user's operator or a job, as `streamproof certify` does (docs/certify.md)
    "certify": ("streamproof.certify_api", "certify"),
    # certifying a job as written (docs/certify.md, "Certifying a job")
    "certify_job": ("streamproof.properties.certify_job_report", "certify"),
    "JobCertificate": ("streamproof.properties.certify_job", "JobCertificate"),
    "JobCertifyError": ("streamproof.properties.certify_job_runs", "JobCertifyError"),
    # running a job on Apache Flink itself (docs/conformance.md, "Whole jobs on Apache Flink")
    "run_on_flink": ("streamproof.on_flink.oracle", "run_on_flink"),
    "FlinkReport": ("streamproof.on_flink.oracle", "FlinkReport"),
    "FlinkUnavailable": ("streamproof.on_flink.runner", "FlinkUnavailable"),
    "Certificate": ("streamproof.properties.certify_report", "Certificate"),
    "CertifyError": ("streamproof.properties.certify_load", "CertifyError"),
}

__all__ = ["__version__", *_PUBLIC]

if TYPE_CHECKING:  # for type checkers and IDEs; at run time every name is imported lazily
    from streamproof.properties.bugzoo import BugVariant, all_variants, get_variant, hunt
    from streamproof.properties.bugzoo import variant as bug_variant
    from streamproof.certify_api import certify
    from streamproof.properties.certify_load import CertifyError
    from streamproof.properties.certify_report import Certificate
    from streamproof.properties.certify_job import JobCertificate
    from streamproof.properties.certify_job_runs import JobCertifyError
    from streamproof.properties.certify_job_report import certify as certify_job
    from streamproof.properties.explore import Exploration, explore
    from streamproof.properties.families import FamilyPackageError, register_family_package
    from streamproof.properties.registry import Property, all_properties
    from streamproof.properties.registry import get as get_property
    from streamproof.properties.registry import register as register_property
    from streamproof.properties.scenario import (
        BoolKind,
        EnumKind,
        IntKind,
        KeyKind,
        Scenario,
        ScenarioError,
        Step,
        StrKind,
        arg,
        dump_scenario,
        load_scenario,
        load_scenario_file,
        register_family,
        step,
        step_error,
    )
    from streamproof.properties.tracecompare import TraceComparison
    from streamproof.properties.verdict import Verdict, Violation
    from streamproof.replayer import ReplayResult, replay


def __getattr__(name: str) -> Any:
    where = _PUBLIC.get(name)
    if where is None:
        raise AttributeError(f"module 'streamproof' has no attribute {name!r}")
    module, attribute = where
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))

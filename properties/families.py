"""Scenario families as packages: where the steps, properties and bug variants of each live.

A family is a package with up to three modules, found by name:

- ``steps``: its step vocabulary, registered with :func:`~streamproof.properties.scenario.register_family`;
- ``catalogue``: its properties, registered with :func:`~streamproof.properties.registry.register`;
- ``bugzoo``: its known-bug variants, registered with :func:`~streamproof.properties.bugzoo.variant`.

The built-in families are the packages under ``streamproof.properties``. A user's family joins
with one registration: :func:`register_family_package` (in a ``conftest.py`` or at import), or
an entry point in the group ``streamproof.families`` whose value is the package's dotted name
(docs/extending.md). Modules are imported on demand, role by role, so loading scenarios never
imports Hypothesis state machines and listing properties never imports bug variants.
"""

from __future__ import annotations

import importlib
import importlib.util
from importlib.metadata import entry_points

BUILTIN = tuple(f"streamproof.properties.{name}"
                for name in ("timers", "mailbox", "job", "snapshots", "termination", "valve"))
ROLES = ("steps", "catalogue", "bugzoo")
ENTRY_POINT_GROUP = "streamproof.families"

_registered: list[str] = []
_from_entry_points: list[str] | None = None


class FamilyPackageError(ImportError):
    """A family package that cannot be imported or has no ``steps`` module; one line."""


def _entry_point_packages() -> list[str]:
    global _from_entry_points
    if _from_entry_points is None:
        _from_entry_points = [ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)]
    return _from_entry_points


def packages() -> list[str]:
    """Every family package: the built-in ones, then entry points, then registered ones."""
    found: list[str] = []
    for package in (*BUILTIN, *_entry_point_packages(), *_registered):
        if package not in found:
            found.append(package)
    return found


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def modules(role: str) -> list[str]:
    """The ``role`` module of every family package that has one."""
    if role not in ROLES:
        raise ValueError(f"unknown family role {role!r}; one of {', '.join(ROLES)}")
    return [f"{p}.{role}" for p in packages() if _has_module(f"{p}.{role}")]


def load(role: str) -> None:
    """Imports the ``role`` module of every family (registering what it declares)."""
    for module in modules(role):
        importlib.import_module(module)


def register_family_package(package: str) -> None:
    """Adds a user's family package (dotted name) and imports its modules now, so its steps,
    properties and bug variants are registered when this returns."""
    if not _has_module(package):
        raise FamilyPackageError(f"family package {package!r} cannot be imported")
    if not _has_module(f"{package}.steps"):
        raise FamilyPackageError(f"family package {package!r} has no 'steps' module")
    if package not in _registered and package not in packages():
        _registered.append(package)
    for role in ROLES:
        if _has_module(f"{package}.{role}"):
            importlib.import_module(f"{package}.{role}")

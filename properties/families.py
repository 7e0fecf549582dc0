"""Scenario families as packages: where the steps, properties and bug variants of each live.

A family is a package with up to three modules, found by name:

- ``steps``: its step vocabulary, registered with :func:`~streamproof.properties.scenario.register_family`;
- ``catalogue``: its properties, registered with :func:`~streamproof.properties.registry.register`;
- ``bugzoo``: its known-bug variants, registered with :func:`~streamproof.properties.bugzoo.variant`.

The built-in families are the packages under ``streamproof.properties``. A user's family joins
with one registration: an entry point in the group ``streamproof.families`` whose value is the
package's dotted name (an installed family: the CLI, pytest and campaigns all see it), the
environment variable ``STREAMPROOF_FAMILIES`` (dotted names, comma-separated; the current
directory is importable for them, as for ``python -m``), or
:func:`register_family_package` (in a ``conftest.py`` or at import; docs/extending.md). Modules are imported on demand, role by role, so loading scenarios never
imports Hypothesis state machines and listing properties never imports bug variants.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from importlib.metadata import entry_points

BUILTIN = tuple(f"streamproof.properties.{name}"
                for name in ("timers", "mailbox", "job", "snapshots", "termination", "valve", "chain_watermark",
                                "ttl", "broadcast"))
ROLES = ("steps", "catalogue", "bugzoo")
ENTRY_POINT_GROUP = "streamproof.families"
ENVIRONMENT = "STREAMPROOF_FAMILIES"

_registered: list[str] = []
_from_entry_points: list[str] | None = None


class FamilyPackageError(ImportError):
    """A family package that cannot be imported or has no ``steps`` module; one line."""


def _entry_point_packages() -> list[str]:
    global _from_entry_points
    if _from_entry_points is None:
        _from_entry_points = [ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)]
    return _from_entry_points


def _environment_packages() -> list[str]:
    return [name.strip() for name in os.environ.get(ENVIRONMENT, "").split(",") if name.strip()]


def packages() -> list[str]:
    """Every family package: the built-in ones, then entry points, the environment variable,
    then registered ones."""
    found: list[str] = []
    named = _environment_packages()
    if named and "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # the user's packages, as `python -m` (and certify) find them
    for package in (*BUILTIN, *_entry_point_packages(), *named, *_registered):
        if package not in found:
            found.append(package)
    return found


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:  # a parent package that is missing or fails to import
        return False
    except Exception as e:  # noqa: BLE001 - a parent package raising while imported
        raise FamilyPackageError(f"family package {name.rsplit('.', 1)[0]!r} cannot be imported: "
                                 f"{type(e).__name__}: {e}") from None


def _import(module: str) -> None:
    """Imports one role module; any failure becomes one line naming the family package."""
    try:
        importlib.import_module(module)
    except FamilyPackageError:
        raise
    except Exception as e:  # noqa: BLE001 - the user's code: whatever it raises
        package, role = module.rsplit(".", 1)
        raise FamilyPackageError(f"family package {package!r}: its {role!r} module cannot be imported: "
                                 f"{type(e).__name__}: {' '.join(str(e).split())}") from None


def modules(role: str) -> list[str]:
    """The ``role`` module of every family package that has one."""
    if role not in ROLES:
        raise ValueError(f"unknown family role {role!r}; one of {', '.join(ROLES)}")
    return [f"{p}.{role}" for p in packages() if _has_module(f"{p}.{role}")]


def load(role: str) -> None:
    """Imports the ``role`` module of every family (registering what it declares)."""
    for package in packages():
        if package not in BUILTIN and not _has_module(package):
            raise FamilyPackageError(f"family package {package!r} cannot be imported "
                                     f"(named by {_origin(package)})")
        if package not in BUILTIN and not _has_module(f"{package}.steps"):
            raise FamilyPackageError(f"family package {package!r} has no 'steps' module "
                                     f"(named by {_origin(package)})")
    for module in modules(role):
        _import(module)


def _origin(package: str) -> str:
    if package in _environment_packages():
        return f"${ENVIRONMENT}"
    if package in _entry_point_packages():
        return f"an entry point in {ENTRY_POINT_GROUP!r}"
    return "register_family_package"


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
            _import(f"{package}.{role}")

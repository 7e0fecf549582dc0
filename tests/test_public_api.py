"""The public face: what `streamproof` exports is what docs/api.md lists, it loads lazily, and no
public name is shadowed by a module of the package."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import streamproof

REPO = Path(__file__).resolve().parent.parent
API_DOC = REPO / "docs" / "api.md"


def documented_names(module: str = "streamproof") -> set[str]:
    """The names in the first column of docs/api.md's tables (without call signatures): those of
    ``streamproof``, or of the section about the module ``streamproof.testing``."""
    names = set()
    section = "streamproof"
    for line in API_DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            section = "streamproof.testing" if "`streamproof.testing`" in line else "streamproof"
        if line.startswith("| `") and section == module:
            cell = line.split("|")[1]
            names |= {re.match(r"\w+", code).group(0) for code in re.findall(r"`([^`]+)`", cell)}
    return names


def test_docs_api_lists_exactly_what_streamproof_testing_exports():
    from streamproof import testing

    exported = set(testing.__all__) - {"KeyedOperatorHarness", "ProcessFunctionHarness", "JobHarness", "JobResult"}
    assert exported - documented_names("streamproof.testing") == set(), "exported but not in docs/api.md"
    assert documented_names("streamproof.testing") - set(testing.__all__) == set(), "documented but not exported"


def test_every_exported_name_resolves_to_what_its_module_defines():
    for name, (module, attribute) in streamproof._PUBLIC.items():
        assert getattr(streamproof, name) is getattr(importlib.import_module(module), attribute), name
    assert set(streamproof.__all__) == {"__version__", *streamproof._PUBLIC}


def test_docs_api_lists_exactly_the_exported_names():
    exported = set(streamproof._PUBLIC)
    documented = documented_names()
    assert exported - documented == set(), "exported but not in docs/api.md"
    assert documented - exported == set(), "in docs/api.md but not exported"


def test_no_public_name_is_also_a_module_of_the_package():
    # importing streamproof.<name> would set the attribute to the module, replacing the function
    clashes = [n for n in streamproof._PUBLIC if importlib.util.find_spec(f"streamproof.{n}") is not None]
    assert clashes == []


def test_import_streamproof_loads_nothing_heavy():
    code = ("import sys, streamproof, streamproof.model, streamproof.pytest_plugin; "
            "print(sorted(m for m in ('hypothesis', 'z3', 'pyspark', 'streamproof.properties', "
            "'streamproof.impl') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert out.stdout.strip() == "[]"


def test_unknown_names_are_attribute_errors():
    try:
        streamproof.no_such_name  # noqa: B018
    except AttributeError as e:
        assert "no_such_name" in str(e)
    else:
        raise AssertionError("streamproof.no_such_name resolved")

"""The dependency rule of DESIGN.md §1, enforced by parsing every import."""

import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PROJECT = {"model", "impl", "properties", "spark_harness", "streamproof", "tests", "benchmarks", "examples"}
STDLIB = set(sys.stdlib_module_names)

# package -> (project packages it may import, third-party packages it may import; None = any)
RULES = {
    "model": (set(), set()),
    "impl": ({"impl"}, {"sortedcontainers"}),
    "properties": ({"model", "impl", "properties"}, None),
    "spark_harness": ({"model", "impl", "properties", "spark_harness"}, None),
}
NO_SPARK = {"model", "impl", "properties", "streamproof"}  # importable without Java or pyspark


def imports_of(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name.split(".")[0], node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.module.split(".")[0], node.lineno))
    return found


def files(package: str) -> list[Path]:
    return sorted((REPO / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(RULES))
def test_dependency_rule(package):
    allowed_project, allowed_third = RULES[package]
    broken = []
    for path in files(package):
        for name, line in imports_of(path):
            where = f"{path.relative_to(REPO)}:{line} imports {name}"
            if name in PROJECT:
                if name not in allowed_project and name != package:
                    broken.append(where)
            elif name not in STDLIB and allowed_third is not None and name not in allowed_third:
                broken.append(where)
    assert not broken, "dependency rule broken:\n" + "\n".join(broken)


def test_nothing_but_streamproof_and_tests_imports_spark_harness():
    offenders = [f"{p.relative_to(REPO)}:{line}" for pkg in ("model", "impl", "properties")
                 for p in files(pkg) for name, line in imports_of(p) if name == "spark_harness"]
    assert not offenders


@pytest.mark.parametrize("package", sorted(NO_SPARK))
def test_core_does_not_import_spark(package):
    offenders = [f"{p.relative_to(REPO)}:{line}" for p in files(package)
                 for name, line in imports_of(p) if name in ("pyspark", "py4j")]
    assert not offenders


def test_the_rule_checker_itself_bites(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import impl.timers\nfrom model import timers\nfrom . import x\n")
    assert [n for n, _ in imports_of(bad)] == ["impl", "model"]


def test_layout_is_complete():
    for entry in ("pyproject.toml", "model", "impl", "properties", "spark_harness", "tests", "README.md",
                  "streamproof", "benchmarks", "examples", "docs", "Makefile", ".ci/run"):
        assert (REPO / entry).exists(), entry

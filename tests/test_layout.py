"""The layout and dependency rule of DESIGN.md §1, enforced by parsing every import.

Installed, the repository's folders live under one import name: ``model/`` is
``streamproof.model``, ``impl/`` is ``streamproof.impl``, and so on. Every import of the project
goes through that namespace (a bare ``import model`` would be a user's package, not ours), the
folders keep their dependency rule, and no two modules import each other, directly or through
others (function-level imports count: a lazy import hides a cycle, it does not remove it).
"""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# repository folder -> installed package
MAPPED = {"model": "streamproof.model", "impl": "streamproof.impl", "properties": "streamproof.properties",
          "spark_harness": "streamproof.spark_harness", "streamproof": "streamproof"}
BARE = {"model", "impl", "properties", "spark_harness"}  # never imported under these names
STDLIB = set(sys.stdlib_module_names)

# folder -> (project folders it may import, third-party packages it may import; None = any)
RULES = {
    "model": (set(), set()),
    "impl": (set(), set()),
    "properties": ({"model", "impl", "flink"}, None),
    # streamproof/flink/ (PyFlink's API on the implementation): a layer beside impl/, below properties/
    "flink": ({"impl"}, set()),
    "spark_harness": ({"model", "impl", "properties"}, None),
}
NO_SPARK = {"model", "impl", "properties", "streamproof", "flink"}  # importable without Java or pyspark


def module_name(path: Path) -> str:
    """The installed dotted name of a repository file."""
    rel = path.relative_to(REPO).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([MAPPED[parts[0]]] + parts[1:])


def imported_names(path: Path) -> list[tuple[str, int]]:
    """Every module name an import statement of ``path`` may load (absolute, dotted), with its line.

    ``from a.b import c`` yields ``a.b`` and ``a.b.c`` (c may be a module); relative imports are
    resolved against the file's installed name."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    here = module_name(path) if path.is_relative_to(REPO) and path.relative_to(REPO).parts[0] in MAPPED else ""
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.append((module, node.lineno))
            found += [(f"{module}.{alias.name}", node.lineno) for alias in node.names]
    return found


def folder_of(name: str) -> str | None:
    """The repository folder an installed module name belongs to (None: not the project's);
    ``flink`` for streamproof/flink/, a layer of its own."""
    if name == "streamproof.flink" or name.startswith("streamproof.flink."):
        return "flink"
    for folder, package in sorted(MAPPED.items(), key=lambda kv: -len(kv[1])):
        if name == package or name.startswith(package + "."):
            return folder
    return None


def files(folder: str) -> list[Path]:
    if folder == "flink":
        return sorted((REPO / "streamproof" / "flink").rglob("*.py"))
    found = sorted((REPO / folder).rglob("*.py"))
    return [p for p in found if "flink" not in p.relative_to(REPO).parts] if folder == "streamproof" else found


ALL_FOLDERS = ("model", "impl", "properties", "spark_harness", "streamproof", "flink", "tests", "benchmarks",
               "examples")


@pytest.mark.parametrize("folder", ALL_FOLDERS)
def test_the_project_is_imported_only_through_its_namespace(folder):
    bare = [f"{p.relative_to(REPO)}:{line} imports {name}" for p in files(folder)
            for name, line in imported_names(p) if name.split(".")[0] in BARE]
    assert not bare, "import through streamproof.* instead:\n" + "\n".join(bare)


@pytest.mark.parametrize("folder", sorted(RULES))
def test_dependency_rule(folder):
    allowed_project, allowed_third = RULES[folder]
    broken = []
    for path in files(folder):
        for name, line in imported_names(path):
            where = f"{path.relative_to(REPO)}:{line} imports {name}"
            top = name.split(".")[0]
            target = folder_of(name)
            if target is not None:
                if target != folder and target not in allowed_project:
                    broken.append(where)
            elif top and top not in STDLIB and allowed_third is not None and top not in allowed_third:
                broken.append(where)
    assert not broken, "dependency rule broken:\n" + "\n".join(broken)


def test_nothing_but_streamproof_and_tests_imports_spark_harness():
    offenders = [f"{p.relative_to(REPO)}:{line}" for folder in ("model", "impl", "properties")
                 for p in files(folder) for name, line in imported_names(p) if folder_of(name) == "spark_harness"]
    assert not offenders


@pytest.mark.parametrize("folder", sorted(NO_SPARK))
def test_core_does_not_import_spark(folder):
    offenders = [f"{p.relative_to(REPO)}:{line}" for p in files(folder)
                 for name, line in imported_names(p) if name.split(".")[0] in ("pyspark", "py4j")]
    assert not offenders


# ------------------------------------------------------------------------------ import cycles


def import_graph(paths: list[Path]) -> dict[str, set[str]]:
    """module -> the project modules it imports (anywhere in the file)."""
    modules = {module_name(p): p for p in paths}
    return {m: {n for n, _ in imported_names(p) if n in modules and n != m} for m, p in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles():
    paths = [p for folder in (*MAPPED, "flink") for p in files(folder)]
    found = cycles(import_graph(paths))
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_cycle_finder_bites():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_rule_checker_itself_bites(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import impl.timers\nfrom model import timers\nfrom streamproof.impl import x\n")
    names = [n for n, _ in imported_names(bad)]
    assert names == ["impl.timers", "model", "model.timers", "streamproof.impl", "streamproof.impl.x"]
    assert [folder_of(n) for n in names] == [None, None, None, "impl", "impl"]


# ------------------------------------------------------------------------------------ layout


def test_layout_is_complete():
    for entry in ("pyproject.toml", "model", "impl", "properties", "spark_harness", "tests", "README.md",
                  "streamproof", "benchmarks", "examples", "docs", "Makefile", ".ci/run"):
        assert (REPO / entry).exists(), entry


def test_every_package_folder_is_installed_under_streamproof():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    data_only = {"streamproof.examples": "examples"}  # shipped files, not imported (streamproof examples DIR)
    assert config["package-dir"] == {**{package: folder for folder, package in MAPPED.items()}, **data_only}
    on_disk = {module_name(init) for folder in MAPPED for init in (REPO / folder).rglob("__init__.py")}
    assert set(config["packages"]) == on_disk | set(data_only)
    assert all(p == "streamproof" or p.startswith("streamproof.") for p in config["packages"])

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


# ------------------------------------------------------------------- impl/'s packages and layers

# impl/'s packages (impl/__init__.py and docs/architecture.md): each imports only those before it
IMPL_LAYERS = ("state", "timers", "operators", "tasks", "graph")
# the operator-coordinator event valve stands apart: it imports none of the layers, and of them
# only these may import it (none does today: grep -rn "impl.coordination" impl/)
IMPL_APART = "coordination"
IMPORTS_COORDINATION: frozenset[str] = frozenset()
IMPL_PACKAGES = (*IMPL_LAYERS, IMPL_APART)


def impl_package_of(name: str) -> str | None:
    """The impl package of an installed module name: ``streamproof.impl.tasks.mailbox`` -> tasks;
    None outside impl/ and for ``streamproof.impl`` itself."""
    parts = name.split(".")
    return parts[2] if parts[:2] == ["streamproof", "impl"] and len(parts) > 2 else None


def impl_layer_break(importer: str, imported: str) -> str | None:
    """Why ``importer`` (an impl module) may not import ``imported``; None when it may."""
    here, there = impl_package_of(importer), impl_package_of(imported)
    if here is None or there is None or here == there or there not in IMPL_PACKAGES:
        return None
    if here == IMPL_APART:
        return f"{IMPL_APART} imports no other impl package"
    if there == IMPL_APART:
        return None if here in IMPORTS_COORDINATION else f"{here} may not import {IMPL_APART}"
    if here in IMPL_LAYERS and IMPL_LAYERS.index(there) > IMPL_LAYERS.index(here):
        return f"{here} imports the later layer {there} (order: {' < '.join(IMPL_LAYERS)})"
    return None


def impl_layer_breaks(importer: str, names: list[tuple[str, int]]) -> list[str]:
    """The imports of one impl module (``imported_names``) that break the layer rule."""
    return [f"line {line}: {name}: {why}" for name, line in names
            if (why := impl_layer_break(importer, name)) is not None]


def package_doc_problems(docstring: str | None) -> list[str]:
    """What an impl package's ``__init__`` docstring lacks: the Flink package it mirrors and what
    it leaves out."""
    if not docstring:
        return ["no docstring"]
    problems = []
    if "org.apache.flink" not in docstring:
        problems.append("names no Flink package (org.apache.flink...)")
    if "Left out" not in docstring:
        problems.append("does not say what it leaves out (\"Left out: ...\")")
    return problems


def impl_module_misplaced(rel: Path) -> str | None:
    """Why a file of impl/ (relative to impl/) is not where the package map puts it."""
    if rel == Path("__init__.py"):
        return None
    if len(rel.parts) != 2 or rel.parts[0] not in IMPL_PACKAGES:
        return f"impl/{rel.as_posix()}: not in one of impl/'s packages ({', '.join(IMPL_PACKAGES)})"
    return None


def test_impl_is_exactly_its_six_packages():
    impl = REPO / "impl"
    packages = sorted(p.parent.name for p in impl.glob("*/__init__.py"))
    assert packages == sorted(IMPL_PACKAGES)
    folders = sorted(p.name for p in impl.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert folders == sorted(IMPL_PACKAGES), "a folder of impl/ that is not one of its packages"
    misplaced = [why for p in files("impl") if (why := impl_module_misplaced(p.relative_to(impl)))]
    assert not misplaced, "\n".join(misplaced)


@pytest.mark.parametrize("package", IMPL_PACKAGES)
def test_each_impl_package_says_what_of_flink_it_mirrors_and_leaves_out(package):
    init = REPO / "impl" / package / "__init__.py"
    problems = package_doc_problems(ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))))
    assert not problems, f"impl/{package}/__init__.py's docstring: " + "; ".join(problems)


def test_impl_layers():
    broken = [f"{p.relative_to(REPO)} {b}" for p in files("impl")
              for b in impl_layer_breaks(module_name(p), imported_names(p))]
    assert not broken, "impl/'s layer rule broken:\n" + "\n".join(broken)


def test_the_impl_package_checks_bite(tmp_path):
    lazy = tmp_path / "lazy.py"
    lazy.write_text("from streamproof.impl.state import key_groups\n\n\ndef later():\n"
                    "    from streamproof.impl.graph.sim import run_schedule\n")
    assert impl_layer_breaks("streamproof.impl.timers.fake", imported_names(lazy)) == [
        "line 5: streamproof.impl.graph.sim: timers imports the later layer graph "
        "(order: state < timers < operators < tasks < graph)",
        "line 5: streamproof.impl.graph.sim.run_schedule: timers imports the later layer graph "
        "(order: state < timers < operators < tasks < graph)"]
    assert impl_layer_breaks("streamproof.impl.graph.fake", imported_names(lazy)) == []
    assert impl_layer_break("streamproof.impl.coordination.x", "streamproof.impl.state.key_groups")
    assert impl_layer_break("streamproof.impl.graph.x", "streamproof.impl.coordination")
    assert impl_layer_break("streamproof.impl.tasks.x", "streamproof.impl.tasks.mailbox") is None
    assert impl_layer_break("streamproof.properties.x", "streamproof.impl.graph") is None
    assert package_doc_problems('Tasks (Flink\'s ``org.apache.flink.streaming.runtime.tasks``).') == [
        "does not say what it leaves out (\"Left out: ...\")"]
    assert len(package_doc_problems("Tasks. Left out: network buffers.")) == 1
    assert package_doc_problems(None) == ["no docstring"]
    assert package_doc_problems("``org.apache.flink.runtime.state``.\n\nLeft out: RocksDB.") == []
    assert impl_module_misplaced(Path("job.py"))
    assert impl_module_misplaced(Path("tasks/deeper/x.py"))
    assert impl_module_misplaced(Path("tasks/mailbox.py")) is None


# -------------------------------------------------------------------------------- module size

MAX_LINES = 500
# the folders whose modules are held to MAX_LINES: the installed code, streamproof/flink/ included
# (PyFlink's API written here, not copied); tests/, benchmarks/ and examples/ are not held to it
SIZED = ("model", "impl", "properties", "spark_harness", "streamproof", "flink")


def size_problem(path: Path, limit: int = MAX_LINES) -> str | None:
    """Why ``path`` is too long: more than ``limit`` lines and no line of its module docstring
    starting with ``Size:`` and a reason; None when it is not."""
    text = path.read_text(encoding="utf-8")
    lines = len(text.splitlines())
    if lines <= limit:
        return None
    docstring = ast.get_docstring(ast.parse(text, str(path))) or ""
    if any(line.strip().startswith("Size:") and line.strip()[len("Size:"):].strip()
           for line in docstring.splitlines()):
        return None
    return (f"{lines} lines (more than {limit}): split it, or give the reason it is one module in a line of its "
            "docstring starting with 'Size:'")


LONG_MODULES = [p for folder in SIZED for p in files(folder)
                if len(p.read_text(encoding="utf-8").splitlines()) > MAX_LINES]


@pytest.mark.parametrize("path", LONG_MODULES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_a_long_module_says_why(path):
    problem = size_problem(path)
    assert problem is None, f"{path.relative_to(REPO)}: {problem}"


def test_the_size_check_bites(tmp_path):
    def module(name: str, docstring: str, lines: int) -> Path:
        path = tmp_path / name
        head = f'"""{docstring}"""\n'
        path.write_text(head + "x = 1\n" * (lines - len(head.splitlines())))
        return path

    assert size_problem(module("short.py", "Short.", MAX_LINES)) is None
    assert size_problem(module("long.py", "Long, for no reason.", MAX_LINES + 1)).startswith(f"{MAX_LINES + 1} lines")
    assert size_problem(module("empty.py", "Long.\n\nSize:\n", MAX_LINES + 1)) is not None
    assert size_problem(module("mentioned.py", "Long. See Size: below.", MAX_LINES + 1)) is not None
    assert size_problem(module("why.py", "Long.\n\nSize: one class, kept whole.\n", MAX_LINES + 1)) is None
    assert size_problem(module("no_docstring.py", "", MAX_LINES + 1)) is not None


# ------------------------------------------------------------------ docs/architecture.md's picture


def test_the_architecture_picture_is_the_code_s():
    from tests import architecture

    doc = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    found = architecture.current_block(doc)
    assert found is not None, f"docs/architecture.md lost its markers {architecture.BEGIN!r} ... {architecture.END!r}"
    assert found == architecture.block(), (
        "docs/architecture.md's picture is not what the code's imports give now: run "
        "python -m tests.architecture --write (and read the diff: a new arrow is a new dependency)")


def test_the_architecture_picture_bites():
    from tests import architecture

    edges = architecture.edges_from({
        "streamproof.impl.timers.x": ["streamproof.impl.state.key_groups", "streamproof.impl.timers.y", "heapq"],
        "streamproof.impl.graph.sim": ["streamproof.impl", "streamproof.impl.tasks.mailbox.Mail"],
        "streamproof.properties.a": ["streamproof.model.valve", "streamproof.flink.adapter", "streamproof.impl.x"],
        "streamproof.cli": ["streamproof.spark_harness.campaign"],
    })
    assert edges == [("impl.graph", "impl.tasks"), ("impl.timers", "impl.state"), ("properties", "flink"),
                     ("properties", "model"), ("streamproof", "spark_harness")]
    picture = architecture.mermaid(edges, ["state", "timers"])
    assert '    impl_state["impl/state/"]' in picture and "  impl_timers --> impl_state" in picture
    doc = f"# T\n\n{architecture.BEGIN}\nold\n{architecture.END}\n\ntext\n"
    assert architecture.replace_block(doc, "NEW") == "# T\n\nNEW\n\ntext\n"
    with pytest.raises(ValueError):
        architecture.replace_block("# no markers\n", "NEW")

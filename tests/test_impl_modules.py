"""The module structure of impl/: no import cycle, the timer modules' dependency direction, and the
coordination facade (streamproof.impl.coordination exports every name of its parts, the same objects)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

IMPL = Path(__file__).resolve().parents[1] / "impl"


def module_of(path: Path) -> str:
    """impl/timers/snapshots.py -> timers.snapshots; impl/coordination/__init__.py -> coordination."""
    parts = path.relative_to(IMPL).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def impl_imports() -> dict[str, set[str]]:
    """impl module (dotted below impl) -> the impl modules it imports anywhere in the file (lazy
    imports count); a package's ``__init__`` is the package."""
    paths = {module_of(p): p for p in IMPL.rglob("*.py") if p != IMPL / "__init__.py"}
    graph = {}
    for name, path in paths.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
        graph[name] = {n.removeprefix("streamproof.impl.") for n in found
                       if n.startswith("streamproof.impl.")} & set(paths) - {name}
    return graph


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in graph[todo.pop()] - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen


def test_impl_has_no_import_cycle():
    graph = impl_imports()
    # a package's __init__ that re-exports its modules is imported by them only through Python's
    # own package import, not by name: a cycle through it would show here
    assert [m for m in sorted(graph) if m in reachable(graph, m)] == []


def test_snapshots_build_on_the_timer_values_not_on_the_timer_service():
    graph = impl_imports()
    assert "timers.internal_timer_service" not in reachable(graph, "timers.snapshots")
    assert "timers.internal_timer_service" not in reachable(graph, "timers.snapshot_format")
    assert reachable(graph, "timers.internal_timer") <= {"state.key_groups"}


def test_the_coordination_package_exports_every_name_from_its_parts():
    coordination = importlib.import_module("streamproof.impl.coordination")
    names = set(coordination.__all__) | {"_call_send_action", "_raise"}
    for name in names:
        value = getattr(coordination, name)
        home = getattr(value, "__module__", None)
        if home is not None and home.startswith("streamproof.impl.coordination."):
            assert getattr(importlib.import_module(home), name) is value, name
    assert coordination.create_holder is importlib.import_module("streamproof.impl.coordination.protocols").create_holder


def test_each_protocol_differs_from_flink_only_by_overrides():
    from streamproof.impl.coordination import (
        LegacyOperatorCoordinatorHolder,
        OperatorCoordinatorHolder,
        StreamproofOperatorCoordinatorHolder,
        StreamproofSubtaskGateway,
        SubtaskGatewayImpl,
    )
    assert LegacyOperatorCoordinatorHolder.__bases__ == (OperatorCoordinatorHolder,)
    assert StreamproofOperatorCoordinatorHolder.__bases__ == (OperatorCoordinatorHolder,)
    assert StreamproofSubtaskGateway.__bases__ == (SubtaskGatewayImpl,)


def _resolves(reference: str) -> bool:
    """Whether a dotted ``streamproof.impl...`` reference names a module or an attribute of one."""
    parts = reference.split(".")
    for i in range(len(parts), 2, -1):
        try:
            found = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            if not hasattr(found, part):
                return False
            found = getattr(found, part)
        return True
    return False


def test_every_dotted_reference_to_impl_resolves():
    """Docstrings and docs name impl's modules and classes by dotted path (``:class:`...```); after
    the modules moved into packages (issue 32), every such reference names something that exists.
    docs/api.md's table of old module paths is left out: it names the old ones on purpose."""
    import re

    repo = IMPL.parent
    texts = [p for folder in ("impl", "model", "properties", "spark_harness", "streamproof")
             for p in (repo / folder).rglob("*.py")]
    texts += [p for p in (repo / "docs").glob("*.md") if p.name != "api.md"] + [repo / "README.md"]
    pattern = re.compile(r"streamproof\.impl(?:\.[A-Za-z_][A-Za-z_0-9]*)+")
    broken = sorted({f"{p.relative_to(repo)}: {m.group(0)}" for p in texts
                     for m in pattern.finditer(p.read_text(encoding="utf-8")) if not _resolves(m.group(0))})
    assert not broken, "references to names that do not exist:\n" + "\n".join(broken)


def test_the_reference_check_bites():
    assert _resolves("streamproof.impl.timers.snapshots.TimerSnapshot")
    assert _resolves("streamproof.impl.graph.sim")
    assert not _resolves("streamproof.impl.graph.job_graph.SecondInput")  # moved to tasks.stream_elements
    assert not _resolves("streamproof.impl.sim")  # the flat module before issue 32

"""The module structure of impl/: no import cycle, the timer modules' dependency direction, and the
coordinator split (impl.coordinator still exports every name, the same objects)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

IMPL = Path(__file__).resolve().parents[1] / "impl"


def impl_imports() -> dict[str, set[str]]:
    """impl module -> the impl modules it imports anywhere in the file (lazy imports count)."""
    modules = {p.stem for p in IMPL.glob("*.py")} - {"__init__"}
    graph = {}
    for name in modules:
        found = set()
        for node in ast.walk(ast.parse((IMPL / f"{name}.py").read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
        graph[name] = {n.split(".")[2] for n in found if n.startswith("streamproof.impl.")} & modules - {name}
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
    assert [m for m in sorted(graph) if m in reachable(graph, m)] == []


def test_snapshots_build_on_the_timer_values_not_on_the_timer_service():
    graph = impl_imports()
    assert "timers" not in reachable(graph, "snapshots")
    assert "timers" not in reachable(graph, "snapshot_format")
    assert reachable(graph, "internal_timer") <= {"keygroups"}


def test_the_coordinator_exports_every_name_from_its_parts():
    coordinator = importlib.import_module("streamproof.impl.coordinator")
    names = set(coordinator.__all__) | {"_call_send_action", "_raise"}
    for name in names:
        value = getattr(coordinator, name)
        home = getattr(value, "__module__", None)
        if home is not None and home.startswith("streamproof.impl.coordinator_"):
            assert getattr(importlib.import_module(home), name) is value, name
    assert coordinator.create_holder is importlib.import_module("streamproof.impl.coordinator_protocols").create_holder


def test_each_protocol_differs_from_flink_only_by_overrides():
    from streamproof.impl.coordinator import (
        LegacyOperatorCoordinatorHolder, OperatorCoordinatorHolder, StreamproofOperatorCoordinatorHolder,
        StreamproofSubtaskGateway, SubtaskGatewayImpl,
    )
    assert LegacyOperatorCoordinatorHolder.__bases__ == (OperatorCoordinatorHolder,)
    assert StreamproofOperatorCoordinatorHolder.__bases__ == (OperatorCoordinatorHolder,)
    assert StreamproofSubtaskGateway.__bases__ == (SubtaskGatewayImpl,)

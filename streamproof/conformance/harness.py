"""Runs scenarios on Apache Flink's own classes: one JVM per batch (``java/.../Main.java``).

``run(version, family, scenarios)`` sends each scenario (its ``family``, ``params`` and ``steps``)
as one JSON line to the harness's stdin and returns, in the same order, one dict per scenario:
``{"observed": [...]}`` (the observations, in the format of the family's vectors in
``shared/vectors``) or ``{"error": "one line"}`` when the harness cannot drive that scenario (an
op Flink has no counterpart for, a Java exception outside any step). One scenario's failure never
costs the others; a JVM that ends early gives an ``error`` to every scenario it did not answer.

The JVM's stdout carries only the protocol (the harness moves ``System.out`` to stderr, where
log4j's console output goes too); its stderr is kept and shown only when the batch fails.

Example::

    from streamproof.conformance import harness
    [result] = harness.run("2.3.0", "mailbox", [{"steps": [{"op": "new_mailbox"}, {"op": "has_mail"}]}])
    result == {"observed": [{"event": "has_mail", "value": False}]}
"""

from __future__ import annotations

import json
import subprocess
from typing import Any, Iterable

from streamproof.conformance.flink_env import FlinkUnavailable, harness_classpath, require_java

__all__ = ["HarnessError", "MAIN_CLASS", "JVM_OPTIONS", "run", "default_timeout"]

MAIN_CLASS = "org.streamproof.harness.Main"
# Short batches: start fast (class data sharing, C1 only, serial GC, small heap).
JVM_OPTIONS = ["-Xshare:auto", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xss16m", "-Xmx1g",
               "-Djava.awt.headless=true"]


class HarnessError(RuntimeError):
    """The harness JVM did not answer the batch in time."""


def default_timeout(count: int) -> float:
    """Seconds allowed for a batch of ``count`` scenarios: JVM start plus a generous share each."""
    return 120.0 + 2.0 * count


def _line(family: str, scenario: dict) -> str:
    own = scenario.get("family")
    if own is not None and own != family:
        raise ValueError(f"a {own!r} scenario in a batch of family {family!r}")
    payload = {"family": family, "params": scenario.get("params") or {}, "steps": scenario.get("steps", [])}
    name = scenario.get("name")
    if name is not None:
        payload["name"] = name
    return json.dumps(payload, separators=(",", ":"))


def run(version: str, family: str, scenarios: Iterable[dict], timeout: float | None = None) -> list[dict[str, Any]]:
    """The harness's answer for each scenario (see the module docstring), from one JVM.

    Raises :class:`~streamproof.conformance.flink_env.FlinkUnavailable` when Flink or a JDK cannot
    be had, :class:`~streamproof.conformance.flink_env.HarnessBuildError` when the harness does not
    compile, :class:`HarnessError` when the JVM times out."""
    scenarios = list(scenarios)
    if not scenarios:
        return []
    lines = [_line(family, s) for s in scenarios]
    classpath = harness_classpath(version)
    java, _ = require_java()
    limit = default_timeout(len(scenarios)) if timeout is None else timeout
    cmd = [java, *JVM_OPTIONS, "-cp", classpath, MAIN_CLASS]
    try:
        proc = subprocess.run(cmd, input="\n".join(lines) + "\n", capture_output=True, text=True,
                              encoding="utf-8", timeout=limit)
    except subprocess.TimeoutExpired:
        raise HarnessError(f"the Flink {version} harness did not answer {len(scenarios)} {family} scenarios "
                           f"within {limit:.0f} s") from None
    except OSError as e:
        raise FlinkUnavailable(f"cannot start java: {e}") from None
    results: list[dict[str, Any]] = []
    for text in proc.stdout.splitlines():
        if not text.strip():
            continue
        try:
            answer = json.loads(text)
        except json.JSONDecodeError:
            answer = {"error": f"the harness printed a line that is not JSON: {text[:200]}"}
        if not isinstance(answer, dict) or not ({"observed", "error"} & answer.keys()):
            answer = {"error": f"the harness printed an unexpected answer: {text[:200]}"}
        results.append(answer)
    if len(results) < len(scenarios):
        tail = [l.strip() for l in proc.stderr.splitlines() if l.strip()][-1:] or ["no output on stderr"]
        reason = (f"the Flink {version} harness JVM ended (exit code {proc.returncode}) before answering "
                  f"this scenario: {tail[0][:300]}")
        results.extend({"error": reason} for _ in range(len(scenarios) - len(results)))
    return results[:len(scenarios)]

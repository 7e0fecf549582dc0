"""Exhaustive small scope: every scenario up to a bound, split across the cluster.

A family with a finite bounded space has a :class:`SmallScope`: a fixed prefix (e.g. one timer
service instance), an *alphabet* of steps allowed by the bound (two keys, two timestamps, ...)
and a depth d. The scope's scenarios are the prefix followed by every sequence of d alphabet
steps: ``len(alphabet) ** d`` of them, numbered so that index ``i`` spells its steps in base
``len(alphabet)``, most significant first. A campaign in exhaustive mode runs ``spark.range(0,
total)`` through the registered checker of each property of the family (``check(scenario)``,
which checks every invariant after every step, so every shorter sequence is checked as the
prefix of a longer one).

Coverage is reported against the total: sequences checked of ``A**d``, nodes of the enumeration
tree executed (prefixes of length 0..d, the "states" of the bounded exploration) of
``sum(A**l)``, and, where the family gives a fingerprint of the implementation's state, how many
distinct states the bound reaches.

Families join by adding a builder to :data:`SCOPES` (``family -> (bound, depth) -> SmallScope``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any, Callable

from streamproof.spark_harness import spec as specs


@dataclass(frozen=True)
class SmallScope:
    family: str
    depth: int
    bound: dict
    prefix: tuple[dict, ...]
    alphabet: tuple[dict, ...]
    fingerprint: Callable[[list], list[str]] | None = None  # steps -> the state after each step
    params: dict | None = None                               # the scenarios' params
    # the family's own rules: (scenario) -> (the scenario to check, its alphabet steps kept); a
    # sequence that breaks them from step k on is checked up to step k (its longest valid prefix)
    prepare: Callable[[Any], tuple[Any, int]] | None = None

    @property
    def total(self) -> int:
        return len(self.alphabet) ** self.depth

    @property
    def nodes(self) -> int:
        return sum(len(self.alphabet) ** level for level in range(self.depth + 1))

    def steps(self, index: int) -> list[dict]:
        if not 0 <= index < self.total:
            raise IndexError(f"scenario index {index} outside 0..{self.total - 1}")
        size, out = len(self.alphabet), []
        for position in range(self.depth - 1, -1, -1):
            out.append(self.alphabet[(index // size ** position) % size])
        return out

    def document(self, index: int) -> dict:
        doc = {"format": "streamproof.scenario/1", "family": self.family,
               "steps": [dict(s) for s in (*self.prefix, *self.steps(index))]}
        if self.params:
            doc["params"] = dict(self.params)
        return doc

    def scenario(self, index: int):
        from streamproof.properties.scenario import scenario_from_dict
        return scenario_from_dict(self.document(index))

    def describe(self) -> dict:
        return {"family": self.family, "depth": self.depth, "bound": self.bound,
                "alphabet": len(self.alphabet), "total": self.total, "nodes": self.nodes,
                "prefix": list(self.prefix), "fingerprint": self.fingerprint is not None,
                "prepared": self.prepare is not None}


# ----------------------------------------------------------------------------------- timers

def _timers_scope(bound: dict, depth: int) -> SmallScope:
    keys = list(bound.get("keys", ["a", "b"]))
    times = list(bound.get("timestamps", [1, 2]))
    domains = list(bound.get("domains", ["event", "processing"]))
    parallelism = int(bound.get("max_parallelism", 2))
    alphabet: list[dict] = [{"op": "set_key", "key": k} for k in keys]
    for op in ("register", "delete"):
        alphabet += [{"op": op, "domain": d, "namespace": "w", "ts": t} for d in domains for t in times]
    alphabet += [{"op": "advance_watermark", "to": t} for t in times]
    if "processing" in domains:
        alphabet += [{"op": "advance_processing_time", "to": t} for t in times]
    prefix = ({"op": "new_instance", "max_parallelism": parallelism, "key_group_range": [0, parallelism - 1]},)
    return SmallScope("timers", depth, {"keys": keys, "timestamps": times, "domains": domains,
                                        "max_parallelism": parallelism},
                      prefix, tuple(alphabet), _timers_fingerprint)


def _timers_fingerprint(steps: list) -> list[str]:
    """The implementation's state after each step: per instance the current key, clock, and per
    service the watermark, the pending timers of both domains and the physical timer."""
    from streamproof.properties.timers.runner import ImplTimersRun, RunEnded

    run, states = ImplTimersRun(), []
    for index, step in enumerate(steps):
        try:
            run.apply(step, index)
        except RunEnded:
            break
        if run.ended:
            break
        view = []
        for inst in run.instances:
            services = []
            for name, svc in sorted(inst.manager.services.items()):
                physical = svc.next_timer.timestamp if svc.next_timer is not None and svc.next_timer.pending else None
                services.append((name, svc.current_watermark,
                                 sorted(map(repr, svc.event_time_timers_queue)),
                                 sorted(map(repr, svc.processing_time_timers_queue)), physical))
            view.append((repr(inst.key_context.get_current_key()), inst.clock.get_current_processing_time(),
                         services))
        current = run.instances.index(run.current) if run.current in run.instances else -1
        states.append(hashlib.sha1(repr((current, view)).encode()).hexdigest()[:16])
    return states


# ---------------------------------------------------------------------------------- mailbox

def _mailbox_scope(bound: dict, depth: int) -> SmallScope:
    priorities = list(bound.get("priorities", [0, 1]))
    alphabet: list[dict] = []
    names = iter("abcdefghijklmnopqrstuvwxyz")
    for options in bound.get("options", ["default", "deferrable", "urgent"]):
        for p in priorities:
            alphabet.append({"op": "put", "mail": next(names), "priority": p, "options": options})
    alphabet += [{"op": "try_take", "priority": p} for p in priorities]
    alphabet += [{"op": "create_batch"}, {"op": "try_take_from_batch"},
                 {"op": "try_yield", "priority": priorities[0]}, {"op": "should_interrupt", "priority": priorities[0]},
                 {"op": "quiesce"}, {"op": "close"}]
    return SmallScope("mailbox", depth, {"priorities": priorities,
                                         "options": list(bound.get("options", ["default", "deferrable", "urgent"]))},
                      ({"op": "new_mailbox"},), tuple(alphabet), None)


# ------------------------------------------------------------------------------------ valve

def _valve_scope(bound: dict, depth: int) -> SmallScope:
    """One coordinator holder with ``subtasks`` subtasks; at most ``events`` events sent to each
    (a send carries the coordinator's next number for its subtask); checkpoints ``checkpoints``;
    region failover of subtask 0 and global failover (to no checkpoint or to a checkpoint of the
    bound), under ``protocol`` (default ``streamproof``, the corrected protocol, which must hold
    everything). Sequences a real JobManager could not produce are cut (see ``prepare``)."""
    subtasks = int(bound.get("subtasks", 2))
    events = int(bound.get("events", 2))
    checkpoints = list(bound.get("checkpoints", [1]))
    protocol = bound.get("protocol", "streamproof")
    failover = bool(bound.get("failover", True))
    alphabet: list[dict] = [{"op": "send", "subtask": s, "event": 0} for s in range(subtasks)]
    for c in checkpoints:
        alphabet += [{"op": "trigger", "checkpoint": c}, {"op": "complete", "checkpoint": c}]
        alphabet += [{"op": "ack", "subtask": s, "checkpoint": c} for s in range(subtasks)]
        alphabet += [{"op": "notify_complete", "checkpoint": c}, {"op": "notify_aborted", "checkpoint": c}]
    alphabet.append({"op": "abort_triggering"})
    if failover:
        alphabet.append({"op": "fail_subtask", "subtask": 0})
        for c in (-1, *checkpoints):
            alphabet += [{"op": "restart_subtask", "subtask": 0, "checkpoint": c}, {"op": "reset", "checkpoint": c}]
    return SmallScope("valve", depth, {"subtasks": subtasks, "events": events, "checkpoints": checkpoints,
                                       "protocol": protocol, "failover": failover},
                      ({"op": "new_holder", "parallelism": subtasks},), tuple(alphabet), None,
                      {"protocol": protocol}, functools.partial(_valve_prepare, events))


def _valve_prepare(events: int, scenario):
    """The valve family's realism rules (``streamproof.properties.valve.check``): every send carries the
    coordinator's next number for its subtask (``canonical``); a sequence a real JobManager could
    not produce (``unrealistic``), or that sends a subtask more than ``events`` events, is cut
    before that step."""
    import dataclasses
    import re

    from streamproof.properties.valve.check import canonical, unrealistic

    scenario = canonical(scenario)
    cut = len(scenario.steps)
    why = unrealistic(scenario)
    if why is not None:
        cut = int(re.match(r"step (\d+)", why).group(1))
    for index, step in enumerate(scenario.steps[:cut]):
        if step.op == "send" and step.event >= events:
            cut = index
            break
    if cut < len(scenario.steps):
        scenario = canonical(dataclasses.replace(scenario, steps=scenario.steps[:cut]))
    return scenario, cut - 1


# ------------------------------------------------------------------------------- bounds

def _list_of(kind: str, check: Callable[[Any], bool], example: str, allowed: tuple | None = None):
    what = f"a non-empty JSON list of distinct {kind}" + (f" among {', '.join(map(str, allowed))}" if allowed else "")

    def validate(value: Any) -> str | None:
        ok = (isinstance(value, list) and value and all(check(v) for v in value)
              and len({json.dumps(v) for v in value}) == len(value)
              and (allowed is None or all(v in allowed for v in value)))
        return None if ok else f"{what}, e.g. {example}"
    return validate


def _int_in(low: int, high: int, example: str):
    def validate(value: Any) -> str | None:
        ok = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
        return None if ok else f"an integer from {low} to {high}, e.g. {example}"
    return validate


def _one_of(options: tuple, example: str):
    def validate(value: Any) -> str | None:
        return None if value in options else f"one of {', '.join(json.dumps(o) for o in options)}, e.g. {example}"
    return validate


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_key(v: Any) -> bool:
    return isinstance(v, str) or (_is_int(v) and -2 ** 63 <= v < 2 ** 63)


def _valve_protocols() -> tuple:
    from streamproof.impl.coordination import PROTOCOLS
    return tuple(PROTOCOLS)


# family -> bound -> validator (value -> None, or what is expected). Checked by the CLI before
# Spark starts, so that a bad bound is one line, not a failed job.
BOUNDS: dict[str, dict[str, Callable[[Any], str | None]]] = {
    "timers": {
        "keys": _list_of("keys (strings or integers)", _is_key, """keys='["a","b","c"]'"""),
        "timestamps": _list_of("integers", lambda v: _is_int(v) and 0 <= v < 2 ** 62, "timestamps='[1,2,3]'"),
        "domains": _list_of("domains", lambda v: isinstance(v, str), """domains='["event"]'""",
                            ("event", "processing")),
        "max_parallelism": _int_in(1, 128, "max_parallelism=2"),
    },
    "mailbox": {
        "priorities": _list_of("integers", lambda v: _is_int(v) and 0 <= v < 2 ** 31, "priorities='[0,1]'"),
        "options": _list_of("mail options", lambda v: isinstance(v, str), """options='["default","urgent"]'""",
                            ("default", "deferrable", "urgent")),
    },
    "valve": {
        "subtasks": _int_in(1, 8, "subtasks=3"),
        "events": _int_in(1, 16, "events=1"),
        "checkpoints": _list_of("positive integers", lambda v: _is_int(v) and 0 < v < 2 ** 62, "checkpoints='[1,2]'"),
        "protocol": lambda v: _one_of(_valve_protocols(), """protocol='"legacy"'""")(v),
        "failover": lambda v: None if isinstance(v, bool) else "true or false, e.g. failover=false",
    },
}


def parse_bounds(family: str, pairs: list[str] | tuple[str, ...]) -> dict:
    """``KEY=JSON`` texts of ``--bound`` -> the bound, validated against the family's scope; a
    ValueError with one line naming the bound and what it expects otherwise."""
    known = BOUNDS.get(family, {})
    bound: dict = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"bad --bound {pair!r}: expected KEY=JSON, e.g. --bound keys='[\"a\",\"b\"]'")
        if key not in known:
            others = sorted(f for f, bounds in BOUNDS.items() if key in bounds and f != family)
            where = f" (a bound of {', '.join(others)})" if others else ""
            raise ValueError(f"unknown bound {key!r} for family {family}{where}; its bounds: "
                             f"{', '.join(known) or 'none'}")
        try:
            value = json.loads(text)
        except ValueError:
            value = text  # a bare word: a string (protocol=legacy)
        problem = known[key](value)
        if problem is not None:
            raise ValueError(f"bad --bound {key}={text!r}: expected {problem}")
        if key in bound:
            raise ValueError(f"--bound {key} given twice")
        bound[key] = value
    if family == "mailbox":
        options = len(bound.get("options", ["default", "deferrable", "urgent"]))
        if options * len(bound.get("priorities", [0, 1])) > 26:
            raise ValueError("bad --bound: options x priorities must be at most 26 (one letter per mail)")
    return bound


SCOPES: dict[str, Callable[[dict, int], SmallScope]] = {
    "timers": _timers_scope,
    "mailbox": _mailbox_scope,
    "valve": _valve_scope,
}
DEFAULT_DEPTH = 3


def build(family: str, depth: int, bound: dict | None = None) -> SmallScope:
    if family not in SCOPES:
        raise KeyError(f"no small scope for family {family!r}; families with one: {', '.join(sorted(SCOPES))}")
    return SCOPES[family](dict(bound or {}), depth)


@functools.lru_cache(maxsize=16)
def _cached(family: str, depth: int, bound_json: str) -> SmallScope:
    return build(family, depth, json.loads(bound_json))


def scope_of(config: dict) -> SmallScope:
    s = config["scope"]
    return _cached(s["family"], s["depth"], json.dumps(s["bound"], sort_keys=True))


# ------------------------------------------------------------------------------- executor

def run_index(config: dict, index: int) -> list[dict]:
    """Checks scenario ``index`` of the scope against ``config["property"]``: one result row
    (``seed`` is the index, ``steps`` the alphabet steps executed, ``states`` the fingerprints)."""
    from streamproof.spark_harness.seedrun import SeedTimeout, base_row, deadline, one_line

    row = base_row(config, index)
    row.update(examples=1, reproduce="streamproof replay FILE (this row's scenario; the report writes it)")
    started = time.perf_counter()
    try:
        from streamproof.properties import registry
        from streamproof.properties.scenario import dump_scenario, scenario_from_dict

        scope = scope_of(config)
        prop = registry.get(config["property"])
        doc = scope.document(index)
        scenario = scenario_from_dict(doc)
        executed = scope.depth
        if scope.prepare is not None:
            scenario, executed = scope.prepare(scenario)
            doc = scenario.to_dict()
        limit = deadline(config.get("timeout"))
        try:
            with limit:
                verdict = prop.check(scenario)
                states = scope.fingerprint(list(scenario.steps)) if scope.fingerprint else None
        finally:
            limit.disarm()
        if limit.expired:
            raise SeedTimeout()
        if not verdict.holds:
            failing = len(doc["steps"]) if verdict.step is None else verdict.step + 1
            executed = max(0, min(executed, failing - len(scope.prefix)))
            doc["steps"] = doc["steps"][:failing]
            doc.update(name=f"{prop.name}-exhaustive-{index}", property=prop.name,
                       description=one_line(f"Exhaustive small scope {scope.family} depth {scope.depth}, "
                                             f"scenario {index}: {verdict.message}", 1000))
            row["scenario"] = dump_scenario(scenario_from_dict(doc))
        row.update(verdict=verdict.verdict, steps=executed,
                   invariant=verdict.invariant, message=one_line(verdict.message) or None,
                   states=_reached(states, len(scope.prefix), executed))
    except SeedTimeout:
        row.update(verdict="timeout", invariant="timeout",
                   message=f"scenario {index} exceeded the timeout of {config.get('timeout')} s")
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # noqa: BLE001
        row.update(verdict="error", invariant=type(err).__name__, message=one_line(f"{type(err).__name__}: {err}"))
    row["duration"] = time.perf_counter() - started
    row["finished"] = time.time()
    if row["verdict"] != "held":
        row["signature"], row["signature_text"] = specs.signature(
            row["property"], row["verdict"], row["invariant"], row["message"])
    return [row]


def _reached(states: list[str] | None, prefix: int, executed: int) -> list[str] | None:
    """The state after the prefix and after each executed alphabet step."""
    if states is None:
        return None
    return states[max(0, prefix - 1):prefix + executed]


def calibrate(config: dict, probes: int = 20) -> float:
    scope = scope_of(config)
    step = max(1, scope.total // probes)
    indices = list(range(0, scope.total, step))[:probes]
    run_index(config, indices[0])
    started = time.perf_counter()
    for i in indices:
        run_index(config, i)
    return max(1e-5, (time.perf_counter() - started) / len(indices))


# ------------------------------------------------------------------------------- coverage

def coverage(df, spec_: specs.CampaignSpec) -> dict[str, Any]:
    """Per property: sequences checked, enumeration-tree nodes executed per level, distinct
    fingerprinted states; computed on the read-back ``df`` (the campaign's result rows)."""
    from pyspark.sql import functions as F

    scope = spec_.scope
    size, depth = scope["alphabet"], scope["depth"]
    result: dict[str, Any] = {}
    levels = (df.where(F.col("steps") >= 1)
              .select("property", "seed", F.explode(F.sequence(F.lit(1), F.col("steps").cast("int"))).alias("level"))
              .select("property", "level",
                      F.expr(f"seed div cast(pow({size}, {depth} - level) as bigint)").alias("node"))
              .groupBy("property", "level").agg(F.countDistinct("node").alias("nodes")).collect())
    checked = {r["property"]: r["n"] for r in df.groupBy("property").agg(F.count("*").alias("n")).collect()}
    states = {r["property"]: r["n"] for r in df.select("property", F.explode("states").alias("s"))
              .groupBy("property").agg(F.countDistinct("s").alias("n")).collect()}
    for prop in spec_.properties:
        per_level = {r["level"]: r["nodes"] for r in levels if r["property"] == prop}
        result[prop] = {
            "sequences": checked.get(prop, 0), "sequences_total": scope["total"],
            "nodes": 1 + sum(per_level.values()), "nodes_total": scope["nodes"],
            "per_level": {str(level): per_level.get(level, 0) for level in range(1, depth + 1)},
            "distinct_states": states.get(prop) if scope.get("fingerprint") else None,
        }
    return result

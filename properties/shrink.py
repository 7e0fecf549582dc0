"""Domain-aware reduction of job-like counterexamples (families ``job``, ``termination``,
``valve_job``).

A job scenario's outcome hangs on the interleaving (``params.seed``) and on when its faults land
(``fail.at``, ``rescale.at`` count simulation steps), so Hypothesis' byte-level shrinking and a
one-step-at-a-time deletion leave long scenarios: dropping one record shifts every later action and
the failure moves away. :func:`shrink` edits the scenario as a job instead, in greedy passes run to a
fixpoint:

  * drop whole sources (the later ones renumbered), then chunks of steps (halves down to single
    steps, last first), each also with the faults' ``at`` scaled to the shorter input;
  * lower the faults (``at`` towards 1, ``nth`` to 1, no ``after_checkpoint`` / ``subtask``,
    a smaller rescale parallelism);
  * lower the settings: ``parallelism``, ``max_parallelism``, ``checkpoint_interval``,
    ``channel_capacity``, ``async_mail_rate`` to 0 or 1, ``unaligned`` off, ``valve_job`` events;
  * normalise the data: timestamps by their rank, equal neighbours merged; keys renamed a, b, c in
    order of appearance, two keys merged; record values 1;
  * simplify ``params.graph``: bypass an operator (its input edge joined to its outputs) or drop it;
  * try the schedule seeds 0-7, alone and with a dropped step.

A candidate is kept only when it is a valid scenario of its family (:func:`scenario_from_dict`),
is smaller by :func:`measure` (fewer steps first, then fewer sources, graph operators, keys, ...:
a scenario never grows) and still fails with the same invariant. The budget is a number of checks
(about ``seconds`` on the reference machine: a job check takes 20-40 ms), not wall-clock time, so
the result depends only on the input.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from streamproof.properties import scenario as sc

FAMILIES = ("job", "termination", "valve_job")
CHECKS_PER_SECOND = 30   # measured: a job check (faulty + reference run) takes 20-40 ms here
SEEDS = 8                # schedule seeds tried (0 .. SEEDS-1), as the generic reduction does
INPUT_OPS = ("record", "user_record", "watermark", "processing_time", "timer")
FAULT_OPS = ("fail", "fail_in_interrupted_firing", "rescale", "fail_job", "fail_recipient")
TS_FIELDS = {"record": "ts", "user_record": "ts", "watermark": "ts", "processing_time": "ts", "timer": "pts"}
DEFAULTS = {"job": "streamproof.properties.job.steps", "termination": "streamproof.properties.termination.steps",
            "valve_job": "streamproof.properties.valve.job"}

Doc = dict  # a scenario's to_dict() form


def shrinks(family: str) -> bool:
    return family in FAMILIES


# ------------------------------------------------------------------------------------- measure

def _params(d: Doc) -> dict:
    import importlib
    module = importlib.import_module(DEFAULTS[d["family"]])
    return {**module.DEFAULT_PARAMS, **d.get("params", {})}


def _num(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def measure(d: Doc) -> tuple:
    """How big a scenario is, compared lexicographically: steps, sources, graph operators and
    edges, distinct keys, fault settings, parallelism, max parallelism, distinct timestamps,
    timestamp magnitudes, keys not named a, b, c, the mail rate (0 and 1 count as simpler), the
    checkpoint interval, channel capacity, aligned before unaligned, values, the seed."""
    p, steps = _params(d), d["steps"]
    graph = p.get("graph") or {"operators": [], "edges": []}
    keys = _keys(steps)
    ts = [s[TS_FIELDS[s["op"]]] for s in steps if s["op"] in TS_FIELDS]
    faults = sum(_num(s.get("at")) + _num(s.get("nth")) + _num(s.get("after")) + (s.get("after_checkpoint") is not None)
                 + (s.get("subtask") is not None) for s in steps if s["op"] in FAULT_OPS)
    parallelism = (_num(p.get("parallelism")) + sum(_num(o.get("parallelism")) for o in graph["operators"])
                   + sum(_num(s.get("parallelism")) for s in steps))
    rate = p.get("async_mail_rate", 0)
    return (
        len(steps),
        _num(p.get("sources")),
        len(graph["operators"]) + len(graph["edges"]) + sum(len(o) for o in graph["operators"] if isinstance(o, dict)),
        len(keys),
        faults,
        parallelism,
        _num(p.get("max_parallelism")) + sum(_num(n) for n in p.get("events", []) if isinstance(p.get("events"), list)),
        len(set(ts)),
        sum(abs(t) for t in ts if isinstance(t, int)),
        sum(1 for i, k in enumerate(keys) if k != _key_name(i)),
        0 if rate in (0, 1) else 1,
        _num(p.get("checkpoint_interval")),
        _num(p.get("channel_capacity")),
        int(p.get("unaligned") is True),
        sum(abs(_num(s.get("value")) - 1) for s in steps if s["op"] == "record"),
        _num(p.get("seed")),
    )


def _keys(steps: list) -> list:
    """The keys of the input steps in order of first appearance (as JSON text)."""
    seen: dict[str, None] = {}
    for s in steps:
        if "key" in s and s["op"] in INPUT_OPS:
            seen.setdefault(json.dumps(s["key"], sort_keys=True), None)
    return list(seen)


def _key_name(i: int) -> str:
    return json.dumps(chr(ord("a") + i) if i < 26 else f"k{i}")


# ------------------------------------------------------------------------------------ the search

@dataclass
class Shrinker:
    fails: Callable[[sc.Scenario], bool]   # the candidate still fails with the same invariant
    budget: int                            # checks left
    seeds: int = SEEDS
    checks: int = 0
    seen: dict = field(default_factory=dict)

    def test(self, d: Doc) -> bool:
        text = json.dumps(d, sort_keys=True)
        if text in self.seen:
            return self.seen[text]
        try:
            scenario = sc.scenario_from_dict(json.loads(text))
        except sc.ScenarioError:
            self.seen[text] = False
            return False
        if self.budget <= 0:
            return False
        self.budget -= 1
        self.checks += 1
        self.seen[text] = result = self.fails(scenario)
        return result

    def first(self, current: Doc, candidates: Iterator[Doc]) -> Doc | None:
        """The first candidate smaller than ``current`` that still fails."""
        size = measure(current)
        for candidate in candidates:
            if self.budget <= 0:
                return None
            try:
                smaller = measure(candidate) < size
            except (TypeError, KeyError, ValueError):
                continue
            if smaller and self.test(candidate):
                return candidate
        return None

    def run(self, d: Doc) -> Doc:
        """Greedy passes to a fixpoint: first the ones that shorten the scenario (or let it be
        shortened), then the data's normal form, then merges of keys and timestamps."""
        rounds = [[self.lower_faults, self.drop_sources, self.drop_chunks, self.reseed, self.lower_params,
                   self.simplify_graph], [self.normalise], [self.merge]]
        while self.budget > 0:
            before = measure(d)
            for passes in rounds:
                d = self.fixpoint(d, passes)
                if measure(d)[0] < before[0]:
                    break  # shorter: the structural passes again first
            if measure(d) >= before:
                break
        return d

    def fixpoint(self, d: Doc, passes: list) -> Doc:
        while self.budget > 0:
            before = measure(d)
            for make in passes:
                if make == self.drop_chunks:
                    d = self.drop_chunks(d)
                    continue
                while self.budget > 0:
                    better = self.first(d, make(d))
                    if better is None:
                        break
                    d = better
            if measure(d) >= before:
                return d
        return d

    # -- passes: each yields candidates built from the current scenario ------------------------

    def drop_sources(self, d: Doc) -> Iterator[Doc]:
        p = _params(d)
        sources = p.get("sources")
        if not isinstance(sources, int) or sources <= 1:
            return
        for k in reversed(range(sources)):
            steps = []
            for s in d["steps"]:
                if "source" in s and s["op"] in INPUT_OPS:
                    if s["source"] == k:
                        continue
                    s = {**s, "source": s["source"] - (s["source"] > k)}
                steps.append(s)
            params = {**d.get("params", {}), "sources": sources - 1}
            if p.get("graph"):
                graph = _drop_source_subtask(p["graph"], sources, k)
                if graph is None:
                    continue
                params["graph"] = graph
            yield from _with_scaled_faults(d, {**d, "params": params, "steps": steps})

    def drop_chunks(self, d: Doc) -> Doc:
        """Chunks of steps, halves down to single steps, right to left; after a success the scan
        goes on left of the dropped chunk (its size kept)."""
        size = max(1, len(d["steps"]) // 2)
        while size >= 1 and self.budget > 0:
            start = len(d["steps"]) - size
            while start > -size and self.budget > 0:
                at = max(0, start)
                steps = d["steps"][:at] + d["steps"][at + size:]
                better = self.first(d, _with_scaled_faults(d, {**d, "steps": steps}))
                if better is not None:
                    d = better
                start = min(start, len(d["steps"])) - size
            size //= 2
        return d

    def lower_faults(self, d: Doc) -> Iterator[Doc]:
        for i, s in enumerate(d["steps"]):
            if s["op"] not in FAULT_OPS:
                continue
            options: list[dict] = []
            for name in ("at", "after"):
                if isinstance(s.get(name), int) and s[name] > 1:
                    v = s[name]
                    options += [{name: x} for x in dict.fromkeys([1, v // 8, v // 4, v // 2, 3 * v // 4, v - 2, v - 1])
                                if 1 <= x < v]
            if isinstance(s.get("nth"), int) and s["nth"] > 1:
                options += [{"nth": 1}, {"nth": s["nth"] - 1}]
            if isinstance(s.get("parallelism"), int) and s["parallelism"] > 1:
                options += [{"parallelism": 1}, {"parallelism": s["parallelism"] - 1}]
            for name in ("after_checkpoint", "subtask", "operator"):
                if s.get(name) is not None and not (s["op"] in ("fail_job", "fail_recipient") and name != "after_checkpoint"):
                    options.append({name: None})
            for change in options:
                new = {k: v for k, v in {**s, **change}.items() if v is not None}
                yield _replace_step(d, i, new)

    def lower_params(self, d: Doc) -> Iterator[Doc]:
        p, own = _params(d), d.get("params", {})

        def with_(**changes) -> Doc:
            return {**d, "params": {**own, **changes}}

        for name in ("parallelism", "checkpoint_interval", "channel_capacity"):
            v = p.get(name)
            if isinstance(v, int) and not isinstance(v, bool) and v > 1 and (name != "parallelism" or not p.get("graph")):
                for x in dict.fromkeys([1, 2, v // 2, v - 1]):
                    if 1 <= x < v:
                        yield with_(**{name: x})
        v = p.get("max_parallelism")
        if isinstance(v, int) and v > 1:
            for x in dict.fromkeys([1, 2, 4, v // 2, v - 1]):
                if 1 <= x < v:
                    yield with_(max_parallelism=x)
        rate = p.get("async_mail_rate")
        if isinstance(rate, (int, float)) and rate not in (0, 1):
            yield with_(async_mail_rate=0.0)
            yield with_(async_mail_rate=1.0)
        if p.get("unaligned") is True:
            yield with_(unaligned=False)
        events = p.get("events")
        if isinstance(events, list):
            if len(events) > 1:
                yield with_(events=events[:-1])
            for i, n in enumerate(events):
                if isinstance(n, int) and n > 1:
                    for x in dict.fromkeys([1, n // 4, n // 2, n - 1]):
                        if 1 <= x < n:
                            yield with_(events=events[:i] + [x] + events[i + 1:])

    def simplify_graph(self, d: Doc) -> Iterator[Doc]:
        graph = _params(d).get("graph")
        if not isinstance(graph, dict):
            return
        for candidate in _graph_candidates(graph):
            steps = [s for s in d["steps"] if s.get("operator") is None or
                     s.get("operator") in {o["name"] for o in candidate["operators"]}]
            yield {**d, "params": {**d.get("params", {}), "graph": candidate}, "steps": steps}

    def normalise(self, d: Doc) -> Iterator[Doc]:
        """Timestamps replaced by their rank, keys renamed a, b, c (in order of appearance), values 1.
        Not for a user's records (``user_record``): their key and timestamp are what the user's
        key selector and timestamp assigner give for their data, and must stay so."""
        steps = d["steps"]
        if _user_records(steps):
            return
        stamped = _stamped(steps)
        values = sorted({steps[i][TS_FIELDS[steps[i]["op"]]] for i in stamped})
        if values:
            for low in dict.fromkeys([0, min(0, values[0])]):
                yield _map_ts(d, stamped, {v: low + r for r, v in enumerate(values)})
        keys = _keys(steps)
        if keys:
            yield _map_keys(d, {k: json.loads(_key_name(i)) for i, k in enumerate(keys)})
        if any(s["op"] == "record" and s.get("value") != 1 for s in steps):
            yield {**d, "steps": [{**s, "value": 1} if s["op"] == "record" else s for s in steps]}

    def merge(self, d: Doc) -> Iterator[Doc]:
        """Two keys made one, two neighbouring timestamps made one, one value made 1 (not for a
        user's records: see :meth:`normalise`)."""
        steps = d["steps"]
        if _user_records(steps):
            return
        keys = _keys(steps)
        for i in range(1, len(keys)):
            for j in range(i):
                yield _map_keys(d, {keys[i]: json.loads(keys[j])})
        stamped = _stamped(steps)
        values = sorted({steps[i][TS_FIELDS[steps[i]["op"]]] for i in stamped})
        for a, b in zip(values, values[1:]):
            yield _map_ts(d, stamped, {v: (a if v == b else v) for v in values})
        for i, s in enumerate(steps):
            if s["op"] == "record" and s.get("value") != 1:
                yield _replace_step(d, i, {**s, "value": 1})

    def reseed(self, d: Doc) -> Iterator[Doc]:
        p = _params(d)
        if not isinstance(p.get("seed"), int):
            return
        others = [s for s in range(self.seeds) if s != p["seed"]]
        for seed in others:
            yield {**d, "params": {**d.get("params", {}), "seed": seed}}
        for i in reversed(range(len(d["steps"]))):
            dropped = {**d, "steps": d["steps"][:i] + d["steps"][i + 1:]}
            for seed in others:
                yield {**dropped, "params": {**d.get("params", {}), "seed": seed}}


# ------------------------------------------------------------------------------------- helpers

def _user_records(steps: list) -> bool:
    return any(s["op"] == "user_record" for s in steps)


def _replace_step(d: Doc, i: int, new: dict) -> Doc:
    return {**d, "steps": d["steps"][:i] + [new] + d["steps"][i + 1:]}


def _with_scaled_faults(before: Doc, after: Doc) -> Iterator[Doc]:
    """``after`` as it is, and with its faults' ``at`` scaled by how much of the input is left (a
    fault at simulation step ``at`` of a longer input would land after the shorter job ended)."""
    yield after
    inputs = sum(1 for s in before["steps"] if s["op"] in INPUT_OPS)
    left = sum(1 for s in after["steps"] if s["op"] in INPUT_OPS)
    if not inputs or left == inputs or not any(isinstance(s.get("at"), int) for s in after["steps"]):
        return
    yield {**after, "steps": [{**s, "at": max(1, s["at"] * left // inputs)} if isinstance(s.get("at"), int) else s
                              for s in after["steps"]]}


def _stamped(steps: list) -> list[int]:
    return [i for i, s in enumerate(steps) if s["op"] in TS_FIELDS and isinstance(s[TS_FIELDS[s["op"]]], int)]


def _map_ts(d: Doc, stamped: list[int], mapping: dict) -> Doc:
    steps = list(d["steps"])
    for i in stamped:
        f = TS_FIELDS[steps[i]["op"]]
        steps[i] = {**steps[i], f: mapping[steps[i][f]]}
    return {**d, "steps": steps}


def _map_keys(d: Doc, mapping: dict) -> Doc:
    steps = [{**s, "key": mapping.get(json.dumps(s["key"], sort_keys=True), s["key"])}
             if "key" in s and s["op"] in INPUT_OPS else s for s in d["steps"]]
    return {**d, "steps": steps}


def _drop_source_subtask(graph: dict, sources: int, k: int) -> dict | None:
    """The graph with one subtask less in the source operator that reads source ``k``."""
    ops = graph.get("operators", [])
    kinds = [o for o in ops if isinstance(o, dict) and o.get("kind") == "source"]
    start = 0
    for o in kinds:
        n = o.get("parallelism", sources if len(kinds) == 1 else 1)
        if start <= k < start + n:
            if n <= 1:
                return None
            new_ops = [({**x, "parallelism": n - 1} if x is o and "parallelism" in x else x) for x in ops]
            return {**graph, "operators": new_ops}
        start += n
    return None


def _graph_candidates(graph: dict) -> Iterator[dict]:
    ops, edges = graph.get("operators", []), graph.get("edges", [])
    for op in reversed(ops):
        if op.get("kind") == "source":
            continue
        name = op["name"]
        ins = [e for e in edges if e.get("to") == name]
        outs = [e for e in edges if e.get("from") == name]
        rest = [e for e in edges if e not in ins and e not in outs]
        others = [o for o in ops if o is not op]
        if len(ins) == 1 and outs:  # bypass: the input joined to every output
            for keep in ("out", "in"):
                joined = [{**(e if keep == "out" else ins[0]), "from": ins[0]["from"], "to": e["to"]} for e in outs]
                yield {**graph, "operators": others, "edges": rest + joined}
        yield {**graph, "operators": others, "edges": rest}
        for flag in ("chaining", "slot_sharing_group"):  # an operator's optional setting left out
            if flag in op:
                yield {**graph, "operators": [({k: v for k, v in x.items() if k != flag} if x is op else x)
                                              for x in ops], "edges": edges}


def shrink(fails: Callable[[sc.Scenario], bool], scenario: sc.Scenario, seconds: float = 20.0,
           seeds: int = SEEDS) -> sc.Scenario:
    """The smallest failing scenario the passes reach within about ``seconds`` worth of checks
    (``CHECKS_PER_SECOND`` each); ``fails`` tells whether a candidate still fails the same way."""
    shrinker = Shrinker(fails, budget=max(1, int(seconds * CHECKS_PER_SECOND)), seeds=seeds)
    start = scenario.to_dict()
    shrinker.seen[json.dumps(start, sort_keys=True)] = True
    result = shrinker.run(start)
    return sc.scenario_from_dict(result)

"""A small transition-system toolkit on z3: state variables, an initial condition, guarded actions
and invariants; bounded model checking to a depth and k-induction (docs/prove.md).

A system's state is a dict ``name -> z3 term``; ``state(i)`` makes the copy of step ``i``. An action
is ``(s, t, p) -> condition`` relating a state ``s`` to its successor ``t``, with ``p`` the action's
own parameters (fresh per step, chosen by the solver). Every action must say what it leaves
unchanged (``frame``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import z3

State = dict


@dataclass
class TransitionSystem:
    name: str
    variables: dict[str, str]                        # name -> "int" | "bool"
    init: Callable[[State], z3.BoolRef]
    actions: dict[str, tuple[dict[str, str], Callable[[State, State, dict], z3.BoolRef]]]
    invariants: dict[str, Callable[[State], z3.BoolRef]]
    description: str = ""

    def state(self, i: int) -> State:
        make = {"int": z3.Int, "bool": z3.Bool}
        return {name: make[kind](f"{name}@{i}") for name, kind in self.variables.items()}

    def frame(self, s: State, t: State, *changed: str) -> z3.BoolRef:
        """Every variable not in ``changed`` keeps its value."""
        return z3.And([t[n] == s[n] for n in self.variables if n not in changed])

    def step(self, s: State, t: State, i: int) -> tuple[z3.BoolRef, z3.ArithRef, dict]:
        """Some action from ``s`` to ``t``; returns (condition, the action-index variable, params)."""
        make = {"int": z3.Int, "bool": z3.Bool}
        choice = z3.Int(f"action@{i}")
        params, options = {}, []
        for index, (name, (kinds, relation)) in enumerate(self.actions.items()):
            p = {k: make[kind](f"{name}.{k}@{i}") for k, kind in kinds.items()}
            params[name] = p
            options.append(z3.And(choice == index, relation(s, t, p)))
        return z3.Or(options), choice, params


@dataclass
class Outcome:
    model: str
    invariant: str
    verdict: str                 # "proved", "bounded" (no counterexample to the depth), "counterexample"
    depth: int
    trace: list = field(default_factory=list)  # counterexample: [(action or "init", params, state)]

    @property
    def holds(self) -> bool:
        return self.verdict != "counterexample"


def _trace(system: TransitionSystem, model: z3.ModelRef, states, choices, params) -> list:
    names = list(system.actions)

    def value(term):
        v = model.eval(term, model_completion=True)
        return z3.is_true(v) if z3.is_bool(v) else v.as_long()

    out = [("init", {}, {n: value(x) for n, x in states[0].items()})]
    for i, choice in enumerate(choices):
        action = names[value(choice)]
        out.append((action, {k: value(x) for k, x in params[i][action].items()},
                    {n: value(x) for n, x in states[i + 1].items()}))
    return out


def bmc(system: TransitionSystem, invariant: str, depth: int) -> Outcome:
    """A counterexample of at most ``depth`` steps from an initial state, or "bounded". Each depth
    is a fresh solver over the unrolled path (measured faster than one incremental solver here:
    z3's incremental mode gives up most of its preprocessing)."""
    check = system.invariants[invariant]
    states = [system.state(0)]
    path = [system.init(states[0])]
    choices, params = [], []
    for d in range(depth + 1):
        solver = z3.Solver()
        solver.add(*path)
        solver.add(z3.Not(check(states[d])))
        if solver.check() == z3.sat:
            return Outcome(system.name, invariant, "counterexample", d,
                           _trace(system, solver.model(), states, choices, params))
        if d == depth:
            break
        states.append(system.state(d + 1))
        condition, choice, p = system.step(states[d], states[d + 1], d)
        path.append(condition)
        choices.append(choice)
        params.append(p)
    return Outcome(system.name, invariant, "bounded", depth)


def reach(system: TransitionSystem, goal: Callable[[State], z3.BoolRef], depth: int) -> list | None:
    """A run of at most ``depth`` steps to a state where ``goal`` holds (its trace), or None: a
    model whose interesting states are unreachable proves nothing about them."""
    probe = TransitionSystem(system.name, system.variables, system.init, system.actions,
                             {"goal-unreachable": lambda s: z3.Not(goal(s))}, system.description)
    outcome = bmc(probe, "goal-unreachable", depth)
    return outcome.trace if outcome.verdict == "counterexample" else None


def k_induction(system: TransitionSystem, invariant: str, k: int, assume: list[str] | None = None,
                depth: int = 0) -> Outcome:
    """"proved" when no counterexample exists to depth ``k`` and every run of ``k`` steps on which
    the ``assume`` invariants (default: all) hold at the first ``k`` states keeps ``invariant`` at
    the last. Assuming others is sound only if they are proved too: :func:`prove` sees to it. The
    base case looks for counterexamples to ``max(k, depth)`` steps."""
    base = bmc(system, invariant, max(k, depth))
    if not base.holds:
        return base
    hypotheses = [system.invariants[n] for n in (assume if assume is not None else system.invariants)]
    solver = z3.Solver()
    states = [system.state(i) for i in range(k + 1)]
    for i in range(k):
        solver.add(z3.And([inv(states[i]) for inv in hypotheses]))
        solver.add(system.step(states[i], states[i + 1], i)[0])
    solver.add(z3.Not(system.invariants[invariant](states[k])))
    verdict = "proved" if solver.check() == z3.unsat else "bounded"
    return Outcome(system.name, invariant, verdict, k)


def prove(system: TransitionSystem, k: int, depth: int = 0) -> list[Outcome]:
    """Every invariant: a counterexample, or proved by k-induction of the conjunction of all of
    them (sound when all are proved); when some is not, each of the others counts as proved only
    if its induction goes through assuming itself alone."""
    outcomes = [k_induction(system, name, k, depth=depth) for name in system.invariants]
    if all(o.verdict == "proved" for o in outcomes):
        return outcomes
    return [k_induction(system, o.invariant, k, assume=[o.invariant], depth=depth) if o.verdict == "proved" else o
            for o in outcomes]

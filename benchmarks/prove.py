"""Solver time of the z3 models (``streamproof prove``): each model's proof and each variant's
counterexample at the model's default bound, and how both grow with the bound (timers or subtasks)
and with the BMC depth. Ratios are against the same model's proof at its default size, measured in
the same run.

    python -m benchmarks.prove             # the default sizes, sizes one off, BMC depths 4 and 6 (about 40 s)
    python -m benchmarks.prove --depths 4,6,8   # deeper BMC (versions at depth 8: about 2 minutes)
    python -m benchmarks.prove --quick     # default sizes only
    python -m benchmarks.prove --json
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass

from benchmarks.common import format_table, sizes_parser

GOAL_COUNTEREXAMPLE, GOAL_PROOF = 5.0, 60.0


@dataclass
class Row:
    model: str
    run: str          # "proof", "variant NAME", "bmc of the correct model"
    size: str
    depth: int
    verdict: str
    seconds: float
    ratio: float = 0.0
    goal: str = ""


def _timed(fn):
    started = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - started


def measure(quick: bool, depths: list[int]) -> list[Row]:
    from streamproof.properties.z3kit import bmc
    from streamproof.properties.z3models import check_model, models

    rows: list[Row] = []
    for model in models().values():
        outcomes, base = _timed(lambda: check_model(model))
        verdict = "proved" if all(o.verdict == "proved" or o.invariant in model.bounded for o in outcomes) else "NOT PROVED"
        rows.append(Row(model.name, "proof", f"{model.size_name}={model.size}", model.k, verdict, base, 1.0,
                        "ok" if base <= GOAL_PROOF else f"> {GOAL_PROOF:.0f} s"))
        for name in model.variants:
            (outcome,), seconds = _timed(lambda: check_model(model, name))
            size = model.variant_size or model.size
            bounds = "".join(f", {k}={v}" for k, v in model.variant_bounds.items())
            rows.append(Row(model.name, f"variant {name}", f"{model.size_name}={size}{bounds}", outcome.depth,
                            f"counterexample, {outcome.depth} steps" if outcome.verdict == "counterexample"
                            else "NOT REFUTED", seconds, seconds / base,
                            "ok" if seconds <= GOAL_COUNTEREXAMPLE else f"> {GOAL_COUNTEREXAMPLE:.0f} s"))
        if quick:
            continue
        for size in (model.size - 1, model.size + 1):
            if size < 1:
                continue
            outcomes, seconds = _timed(lambda: check_model(model, size=size))
            verdict = "proved" if all(o.verdict == "proved" or o.invariant in model.bounded for o in outcomes) else "NOT PROVED"
            rows.append(Row(model.name, "proof", f"{model.size_name}={size}", model.k, verdict, seconds, seconds / base,
                            "ok" if seconds <= GOAL_PROOF else f"> {GOAL_PROOF:.0f} s"))
        system = model.build(None, model.size)
        theorem = next(iter(system.invariants))
        for depth in depths:
            outcome, seconds = _timed(lambda: bmc(system, theorem, depth))
            rows.append(Row(model.name, f"bmc of the correct model ({theorem})", f"{model.size_name}={model.size}",
                            depth, "holds to depth" if outcome.holds else "COUNTEREXAMPLE", seconds, seconds / base))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the default sizes only")
    parser.add_argument("--depths", type=sizes_parser(1), default=[4, 6],
                        help="BMC depths of the correct models (default 4,6; 8 takes minutes for versions)")
    parser.add_argument("--json", action="store_true", help="the rows as JSON")
    args = parser.parse_args(argv)
    rows = measure(args.quick, args.depths)
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=1))
    else:
        print(format_table(rows, [("model", "model", "{}"), ("run", "run", "{}"), ("bound", "size", "{}"),
                                  ("k / depth", "depth", "{}"), ("verdict", "verdict", "{}"),
                                  ("seconds", "seconds", "{:.2f}"), ("x proof", "ratio", "{:.2f}"),
                                  ("goal", "goal", "{}")]))
    wrong = [r for r in rows if "NOT" in r.verdict or "COUNTEREXAMPLE" in r.verdict]
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())

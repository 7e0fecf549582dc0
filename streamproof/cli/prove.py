"""``streamproof prove``: the z3 models (docs/prove.md, ``properties/z3models.py``). Each correct
model's invariants are proved by k-induction (PROVED (k)) or checked to a depth (HOLDS TO DEPTH n);
each known-bug variant is refuted by a bounded-model-checking counterexample, written as a scenario
file of the model's family (COUNTEREXAMPLE, scenario written). Registered on the ``streamproof``
group by :mod:`streamproof.cli`; z3 is imported inside the command."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from streamproof import outputs

DEFAULT_OUT = outputs.default("prove")


def _verdict(outcome) -> str:
    return {"proved": f"PROVED (k={outcome.depth})",
            "bounded": f"HOLDS TO DEPTH {outcome.depth}",
            "counterexample": f"COUNTEREXAMPLE ({outcome.depth} steps)"}[outcome.verdict]


def _write(out: Path, scenario: dict) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{scenario['name']}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(scenario, indent=2) + "\n")
    tmp.replace(path)
    return path


def _bugzoo_name(model, variant: str | None) -> str | None:
    """The bug-zoo variant (``streamproof bugzoo NAME``) a model variant reproduces, if any."""
    kind, _, name = ((model.variants[variant].reproduced_by or "") if variant else "").partition(":")
    return name if kind == "bugzoo" else f"protocol {name}" if kind == "protocol" else None


def _model_variant(models: list, name: str) -> str:
    """A model variant asked for by its own name or by the bug-zoo variant it reproduces."""
    for model in models:
        for variant, v in model.variants.items():
            if v.reproduced_by == f"bugzoo:{name}":
                return variant
    return name


@click.command()
@click.argument("names", nargs=-1, metavar="[MODEL]...")
@click.option("-k", "k", type=click.IntRange(1, 20), default=None, help="induction depth [default: the model's]")
@click.option("--depth", type=click.IntRange(0, 60), default=None,
              help="BMC depth: of the variants' counterexample search, and of the proofs' base case "
                   "[default: the model's for variants, k for proofs]")
@click.option("--size", type=click.IntRange(1, 6), default=None,
              help="the model's main bound (timers or subtasks) [default: the model's]")
@click.option("--variant", "variants", multiple=True, metavar="NAME",
              help="refute this known-bug variant of the model (repeatable)")
@click.option("--variants", "all_variants", is_flag=True, help="refute every known-bug variant too")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_OUT, show_default=True,
              help="where counterexample scenarios are written")
@click.option("--json", "as_json", is_flag=True, help="JSON Lines on stdout instead of text")
def prove(names: tuple[str, ...], k: int | None, depth: int | None, size: int | None, variants: tuple[str, ...],
          all_variants: bool, out: Path, as_json: bool) -> None:
    """Prove the invariants of the z3 models (default: all) and refute their known-bug variants.

    Exit 0 when every correct model's invariants are proved (or hold to the depth, for the bounded
    ones) and every variant asked for is refuted; 1 otherwise."""
    from streamproof import extras
    from streamproof.cli.common import EXIT_FAILED, EXIT_HELD, InputError, Status, emit_json, table

    extras.require(("z3",), "prove", "streamproof prove")
    from streamproof.properties.z3models import check_model, counterexample_scenario, models, replay_command

    registry = models()
    unknown = [n for n in names if n not in registry]
    if unknown:
        raise InputError(f"unknown model {unknown[0]!r}; known: {', '.join(registry)}")
    chosen = [registry[n] for n in (names or registry)]
    variants = tuple(_model_variant(chosen, v) for v in variants)  # a bug-zoo name works as well
    for v in variants:
        if not any(v in m.variants for m in chosen):
            raise InputError(f"unknown variant {v!r} of model(s) {', '.join(m.name for m in chosen)}; known: "
                             f"{', '.join(name for m in chosen for name in m.variants)}")
    rows, traces, replays, failed = [], [], [], 0
    plan = [(model, variant) for model in chosen
            for variant in [None] + [v for v in model.variants if all_variants or v in variants]]
    with Status("prove", len(plan)) as status:
        for index, (model, variant) in enumerate(plan):
            status.begin(index, f"{model.name} {variant or '(correct)'}")
            started = time.perf_counter()
            outcomes = check_model(model, variant, k=k, depth=depth, size=size)
            seconds = time.perf_counter() - started
            status.item(f"{model.name} {variant or '(correct)'}: {len(outcomes)} invariant(s), {seconds:.1f} s")
            for o in outcomes:
                written = None
                if variant is None:
                    bad = o.verdict == "counterexample" or (o.verdict == "bounded" and o.invariant not in model.bounded)
                else:
                    bad = o.verdict != "counterexample"
                    if not bad and model.to_scenario is not None and model.variants[variant].reproduced_by:
                        written = _write(out, counterexample_scenario(model, variant, o))
                        replays.append(replay_command(model, variant, str(written)))
                failed += bad
                if as_json:
                    with status.paused():
                        emit_json({"model": model.name, "variant": variant, "bugzoo": _bugzoo_name(model, variant),
                                   "replay": replay_command(model, variant, str(written)) if written else None,
                                   "invariant": o.invariant,
                                   "verdict": o.verdict, "depth": o.depth, "seconds": round(seconds, 3),
                                   "scenario": str(written) if written else None,
                                   "trace": [{"action": a, "params": p, "state": s} for a, p, s in o.trace]})
                verdict = _verdict(o) + (f", scenario written: {written}" if written else "")
                if variant is not None and bad:
                    verdict = f"NOT REFUTED ({_verdict(o)})"
                rows.append((model.name, variant or "(correct)", _bugzoo_name(model, variant) or "", o.invariant, verdict,
                             f"{seconds:.1f} s" if o is outcomes[0] else ""))
                if o.trace:
                    traces.append(f"{model.name} {variant}: " + " -> ".join(
                        a + (f"({', '.join(f'{key}={val}' for key, val in p.items())})" if p else "")
                        for a, p, _ in o.trace[1:]))
    if not as_json:
        for model in chosen:
            click.echo(f"model {model.name} ({model.family} family; {model.size_name}={size or model.size}): "
                       f"{model.summary}")
            click.echo(f"  abstracts: {model.abstracts}")
        click.echo("")
        for line in table(("model", "variant", "bug-zoo variant", "invariant", "verdict", "solver time"), rows):
            click.echo(line)
        if traces:
            click.echo("\ncounterexamples (the initial state is in --json; the scenario files replay them):")
            for line in traces:
                click.echo(f"  {line}")
        if replays:
            click.echo("\nreplay them on the implementation (each fails with its bug injected, holds without):")
            for line in replays:
                click.echo(f"  {line}")
        click.echo("")
        click.echo(f"FAILED: {failed} check(s) not as expected" if failed else
                   "every invariant proved, every variant asked for refuted")
    click.get_current_context().exit(EXIT_FAILED if failed else EXIT_HELD)

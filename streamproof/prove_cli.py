"""``streamproof prove``: the z3 models (docs/prove.md), each invariant proved by k-induction or
refuted by a bounded model checking counterexample. Registered on the ``streamproof`` group by
``streamproof/cli.py``; z3 is imported inside the command."""

from __future__ import annotations

import time

import click


def _models() -> dict:
    from streamproof.properties.termination.z3_flush import MODELS
    return MODELS


@click.command()
@click.argument("names", nargs=-1, metavar="[MODEL]...")
@click.option("-k", "k", type=click.IntRange(1, 20), default=1, show_default=True, help="induction depth")
@click.option("--depth", type=click.IntRange(0, 60), default=8, show_default=True,
              help="look for counterexamples this many steps deep")
@click.option("--variant", default=None, metavar="NAME", help="a known-bug variant of the model (must be refuted)")
@click.option("--json", "as_json", is_flag=True, help="JSON Lines on stdout instead of text")
def prove(names: tuple[str, ...], k: int, depth: int, variant: str | None, as_json: bool) -> None:
    """Prove the invariants of the z3 models (default: all). Exit 0 when every invariant is proved,
    1 when one has a counterexample or is only known to hold to the depth."""
    from streamproof.properties.z3kit import prove as run
    from streamproof.cli_common import EXIT_FAILED, EXIT_HELD, InputError, emit_json, table

    models = _models()
    unknown = [n for n in names if n not in models]
    if unknown:
        raise InputError(f"unknown model {unknown[0]!r}; known: {', '.join(models)}")
    rows, failed = [], 0
    for name in names or list(models):
        try:
            system = models[name](variant)
        except ValueError as e:
            raise InputError(e) from None
        started = time.perf_counter()
        outcomes = run(system, k, depth)
        seconds = time.perf_counter() - started
        for o in outcomes:
            failed += o.verdict != "proved"
            if as_json:
                emit_json({"model": name, "variant": variant, "invariant": o.invariant, "verdict": o.verdict,
                            "depth": o.depth, "trace": [{"action": a, "params": p, "state": s} for a, p, s in o.trace]})
            rows.append((name, o.invariant, {"proved": f"proved (k={o.depth})",
                                             "bounded": f"no counterexample to depth {max(k, depth)}, not proved",
                                             "counterexample": f"COUNTEREXAMPLE in {o.depth} steps"}[o.verdict]))
            if o.trace and not as_json:
                rows.append(("", "  " + " -> ".join(
                    a + (f"({', '.join(f'{key}={val}' for key, val in p.items())})" if p else "") for a, p, _ in o.trace),
                    ""))
        if not as_json:
            click.echo(f"model {name}{f' (variant {variant})' if variant else ''}: {system.description}; "
                       f"{seconds:.1f} s")
    if not as_json:
        for line in table(("model", "invariant", "verdict"), rows):
            click.echo(line)
        click.echo("")
        click.echo(f"all {len(rows)} invariants proved" if not failed else f"FAILED: {failed} invariant(s) not proved")
    click.get_current_context().exit(EXIT_FAILED if failed else EXIT_HELD)

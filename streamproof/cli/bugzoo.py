"""``streamproof bugzoo``: hunts the known-bug variants (each applied as a patch, its property
explored; every one must be caught) and reports, per family, the time to detect."""

from __future__ import annotations

import click

from streamproof.cli.common import (
    EXIT_FAILED, EXIT_HELD, Status, emit_json, examples_option, input_error, interrupted, json_option, plural,
    profile_defaults, seed_option, table,
)
from streamproof.properties import registry


@click.command()
@click.argument("names", nargs=-1, metavar="[VARIANT]...")
@examples_option
@seed_option
@json_option
def bugzoo(names: tuple[str, ...], examples: int | None, seed: int, as_json: bool) -> None:
    """Hunt the known-bug variants: each is applied as a patch and its property explored; every
    variant must be caught (exit 1 when one survives)."""
    from streamproof.properties.bugzoo import all_variants, get_variant
    from streamproof.properties.explore import explore

    try:
        variants = [get_variant(n) for n in dict.fromkeys(names)] if names else all_variants()
    except KeyError as e:
        raise input_error(e) from None
    default_examples, _ = profile_defaults()
    examples = examples or default_examples
    rows, survived, job_lengths, hunts = [], 0, [], []
    current = None
    try:
        with Status("bugzoo", len(variants)) as status:
            for index, bug in enumerate(variants):
                current = bug
                status.begin(index, bug.name)
                with bug.patch():  # as bugzoo.hunt, with a progress callback
                    e = explore(registry.get(bug.caught_by), examples, seed=seed,
                                progress=lambda done, shrinking: status.examples(done, examples, shrinking))
                caught = not e.holds
                survived += not caught
                length = len(e.scenario.steps) if e.scenario is not None else None
                family = registry.get(bug.caught_by).family
                if length is not None and family == "job":
                    job_lengths.append(length)
                hunts.append((family, caught, e.found_seconds, e.seconds, e.examples))
                rows.append((bug.name, bug.source, "yes" if caught else "NO", f"{e.seconds:.2f}" if caught else "-",
                             e.examples, length if length is not None else "-", e.invariant or "-"))
                current = None  # finished before it is printed: a Ctrl-C from now on counts it
                status.item(f"{bug.name}: " + (f"caught after {plural(e.examples, 'example')} ({e.invariant}), "
                                               f"{e.seconds:.1f} s with shrinking" if caught
                                               else f"SURVIVED {plural(e.examples, 'example')}, {e.seconds:.1f} s"))
                if as_json:
                    with status.paused():
                        emit_json({
                            "variant": bug.name, "source": bug.source, "caught_by": bug.caught_by,
                            "caught": caught, "family": family, "seconds": round(e.seconds, 3),
                            "found_seconds": None if e.found_seconds is None else round(e.found_seconds, 3),
                            "examples": e.examples, "explored_steps": e.steps, "counterexample_steps": length,
                            "invariant": e.invariant, "message": e.message or None,
                            "scenario": e.scenario.to_dict() if e.scenario is not None else None,
                        })
            if not status.tty:
                status.summary(f"{len(rows) - survived} of {len(rows)} bug variants caught" if not survived
                               else f"{survived} of {len(rows)} bug variants SURVIVED")
    except KeyboardInterrupt as stop:
        if not as_json and rows:
            _print_bugzoo_table(rows)
        partial = getattr(stop, "exploration", None)
        if current is None and len(rows) < len(variants):
            current = variants[len(rows)]  # between two variants: the next one had (almost) started
        what = "bugzoo"
        if current is not None:
            what += f" stopped while hunting {current.name}"
            if partial is not None:
                what += (f" after {plural(partial.examples, 'example')} of {examples}"
                         + (" (caught, shrinking its counterexample)" if not partial.holds else ""))
        interrupted(what, f"finished: {len(rows)} of {len(variants)} bug variants "
                          f"({len(rows) - survived} caught, {survived} survived)")
    median = _median(job_lengths)
    families = time_to_detect(hunts)
    if as_json:
        summary = {"summary": True, "variants": len(rows), "caught": len(rows) - survived, "families": families}
        if median is not None:
            summary.update(median_job_counterexample_steps=median, job_variants=len(job_lengths))
        emit_json(summary)
    else:
        _print_bugzoo_table(rows)
        click.echo("")
        for family, d in families.items():
            if d["caught"]:
                click.echo(f"{family}: {d['caught']} of {d['variants']} caught; time to detect (first failing "
                           f"example) median {d['found_seconds']['median']:g} s, max {d['found_seconds']['max']:g} s; "
                           f"examples median {d['examples']['median']:g}, max {d['examples']['max']:g}")
        if median is not None:
            click.echo(f"median job counterexample: {median:g} steps (over {len(job_lengths)} job variants)")
        click.echo(f"{len(rows) - survived} of {len(rows)} bug variants caught" if not survived
                   else f"FAILED: {survived} of {len(rows)} bug variants survived")
    click.get_current_context().exit(EXIT_FAILED if survived else EXIT_HELD)


def _print_bugzoo_table(rows: list) -> None:
    header = ("variant", "source", "caught", "time to detect (s)", "examples",
              "counterexample (steps)", "invariant")  # the steps of the shrunk counterexample
    for line in table(header, rows, {3, 4, 5}):
        click.echo(line)


def time_to_detect(hunts: list[tuple]) -> dict:
    """Per family, the distribution of time to detect over its caught variants: seconds to the
    first failing example (``found_seconds``), seconds with shrinking, examples run.
    ``hunts``: (family, caught, found seconds, seconds, examples) per variant."""
    out: dict = {}
    for family in sorted({h[0] for h in hunts}):
        mine = [h for h in hunts if h[0] == family]
        caught = [h for h in mine if h[1]]
        spread = {name: {"median": _median([h[i] for h in caught]), "max": max((h[i] for h in caught), default=None)}
                  for name, i in (("found_seconds", 2), ("seconds", 3), ("examples", 4))}
        for d in spread.values():
            d.update({k: round(v, 3) for k, v in d.items() if isinstance(v, float)})
        out[family] = {"variants": len(mine), "caught": len(caught), **spread}
    return out


def _median(values: list[int]) -> float | None:
    if not values:
        return None
    ordered, middle = sorted(values), len(values) // 2
    return float(ordered[middle]) if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2

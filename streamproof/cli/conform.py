"""``streamproof conform``: random scenarios of a family on Apache Flink's own classes, the
implementation and the model, compared observation by observation (docs/conformance.md).
Registered on the ``streamproof`` group by :mod:`streamproof.cli`."""

from __future__ import annotations

import time
from pathlib import Path

import click

from streamproof import outputs

DEFAULT_OUT = outputs.default("conform")


@click.command()
@click.argument("families", nargs=-1, metavar="[FAMILY]...")
@click.option("--flink", "version", default="2.3.0", show_default=True, metavar="VERSION",
              help="the Flink 2.x release whose classes are driven (its jars come from PyPI's apache-flink-libraries)")
@click.option("--examples", type=click.IntRange(1, 100_000), default=300, show_default=True,
              help="distinct scenarios compared per family (generated until there are this many the harness can drive)")
@click.option("--seed", type=int, default=0, show_default=True, help="generation seed (deterministic per seed)")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_OUT, show_default=True,
              help="where divergent scenarios are written (with Flink's, the implementation's and the model's traces)")
@click.option("--json", "as_json", is_flag=True, help="JSON Lines on stdout instead of text")
def conform(families: tuple[str, ...], version: str, examples: int, seed: int, out: Path, as_json: bool) -> None:
    """Compare Flink, the implementation and the model on random scenarios of each FAMILY
    (default: all). Exit 0 only when every scenario agrees; 1 on a divergence; 2 when Flink or Java
    is unavailable or the arguments are bad."""
    from streamproof.cli.common import EXIT_FAILED, EXIT_HELD, InputError, Status, emit_json, table
    from streamproof.conformance.conform import FAMILIES, KNOWN, conform as run, write_divergences
    from streamproof.conformance.flink_env import FlinkUnavailable, HarnessBuildError
    from streamproof.conformance.harness import HarnessError

    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        raise InputError(f"unknown conformance family {unknown[0]!r}; known: {', '.join(FAMILIES)}")
    rows, failed = [], 0
    chosen = list(families or FAMILIES)
    for index, family in enumerate(chosen):
        started = time.perf_counter()
        try:
            with Status("conform", len(chosen)) as status:
                status.begin(index, f"{family}: {examples} scenarios on Flink {version}, the implementation and the model")
                report = run(family, version, examples, seed)
        except (FlinkUnavailable, HarnessBuildError, HarnessError) as e:
            raise InputError(str(e)) from None
        seconds = time.perf_counter() - started
        written = write_divergences(report, out) if not report.agreed else []
        failed += not report.agreed
        if as_json:
            emit_json({"family": family, "flink": version, "generated": report.generated, "compared": report.compared,
                       "not_drivable": report.skipped, "harness_errors": len(report.harness_errors),
                       "implementation_divergences": len(report.impl_divergences),
                       "model_divergences": len(report.model_divergences), "tie_choices": report.tie_choices,
                       "seconds": round(seconds, 2),
                       "written": [str(p) for p in written]})
        rows.append((family, str(report.compared), str(report.skipped), str(len(report.harness_errors)),
                     str(len(report.impl_divergences)), str(len(report.model_divergences)), str(report.tie_choices),
                     f"{seconds:.1f} s"))
        if written and not as_json:
            click.echo(f"{family}: {len(written)} divergent scenario(s) written to {out}, e.g. "
                       f"streamproof replay {written[0]}")
    if not as_json:
        for line in table(("family", "compared", "not drivable", "harness errors", "impl differs", "model differs",
                           "tie choices", "time"), rows):
            click.echo(line)
        for family, side, reason in KNOWN:
            if family not in (families or FAMILIES):
                continue  # only the families compared in this run
            click.echo(f"known, expected difference ({family}, {side}): {reason}")
        click.echo("")
        click.echo(f"Flink {version}: every scenario agrees" if not failed
                   else f"FAILED: {failed} famil{'y' if failed == 1 else 'ies'} with divergent scenarios (written to {out})")
    click.get_current_context().exit(EXIT_FAILED if failed else EXIT_HELD)

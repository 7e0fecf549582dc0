"""``streamproof certify module:Class``: certifies a user's KeyedProcessFunction (docs/certify.md).
Registered on the ``streamproof`` group by ``streamproof/cli.py``."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command()
@click.argument("operator", metavar="MODULE:CLASS")
@click.option("--examples", type=click.IntRange(1), default=None, metavar="N",
              help="job scenarios per property [default: the profile's]")
@click.option("--seed", type=int, default=0, show_default=True, help="Hypothesis seed")
@click.option("--out", default="streamproof-certificate", show_default=True, metavar="DIR",
              help="where certificate.json, certificate.md and counterexamples go")
@click.option("--replay", "replay_file", default=None, metavar="FILE", help="check one counterexample file instead")
def certify(operator: str, examples: int | None, seed: int, out: str, replay_file: str | None) -> None:
    """Certify a KeyedProcessFunction (records: key, int value, timestamp) under interruptible timers,
    checkpoints, failures and rescales against its own ideal run. Exit 0 when certified, 1 when not,
    2 on bad input."""
    from streamproof.properties import certify as cert
    from streamproof.properties.scenario import ScenarioError
    from streamproof.cli_common import EXIT_FAILED, EXIT_HELD, InputError, profile_defaults

    try:
        if replay_file is not None:
            verdicts = cert.replay(operator, replay_file)
            for v in verdicts:
                click.echo(f"{v.property}: {'held' if v.holds else f'FAILED {v.invariant}: {v.message}'}")
            click.get_current_context().exit(EXIT_HELD if all(v.holds for v in verdicts) else EXIT_FAILED)
        certificate = cert.certify(operator, examples or profile_defaults()[0], seed, Path(out))
    except (cert.CertifyError, ScenarioError, OSError) as e:
        raise InputError(e) from None
    Path(out).mkdir(parents=True, exist_ok=True)
    (Path(out) / "certificate.json").write_text(json.dumps(certificate.to_json(), indent=2) + "\n")
    (Path(out) / "certificate.md").write_text(certificate.markdown())
    for r in certificate.results:
        line = f"{r['property']:22} {r['verdict']:7} {r['examples']:6} examples  {r['seconds']:6.1f} s"
        if r["verdict"] != "held":
            line += f"  {r['message']}  scenario: {r['scenario_file']}"
        click.echo(line)
    click.echo(f"\n{operator}: {'certified' if certificate.holds else 'NOT certified'}; "
               f"certificate: {Path(out) / 'certificate.md'}")
    click.get_current_context().exit(EXIT_HELD if certificate.holds else EXIT_FAILED)

"""The ``streamproof`` command line (DESIGN.md §5): the click group :data:`cli`, the console script
:func:`main`, and the registration of the sub-commands, one module each (``check``, ``replay``,
``explain``, ``bugzoo``, ``campaign``, ``report``, ``prove``, ``certify``, ``conform``,
``snapshot``, ``examples``); what they share is in :mod:`streamproof.cli.common`.

Exit codes, for every command: 0 when everything held, 1 when a property failed or a bug variant
survived, 2 on bad input (an unreadable or malformed scenario, an unknown property or variant, a
bad option), reported as exactly one line ``streamproof: error: <message>`` on stderr; 130 when
interrupted (Ctrl-C), with one line ``streamproof: interrupted: ...`` saying what finished.
Progress goes to stderr (common.Status), so stdout and ``--json`` stay clean.

Each command is one click command in its module, added to :data:`cli` here; the options several
commands share are the ``*_option`` decorators of :mod:`streamproof.cli.common`. Heavy imports
(Hypothesis, the state machines, pyspark, z3) happen inside the commands, so ``streamproof
--version`` and ``replay`` start fast.
"""

from __future__ import annotations

from typing import Any, Sequence

import click

from streamproof import __version__
from streamproof.cli.common import (
    EXIT_INTERRUPTED, NO_ARGS_HELP, deliver_ctrl_c_reliably, input_error, settle_interrupt,
)
from streamproof.properties import registry
from streamproof.properties.families import FamilyPackageError
from streamproof.properties.scenario import ScenarioError
from streamproof.replayer import NothingToCheck

# The sub-commands' modules, bound as modules: a command bound to its own name here would hide its
# module (an attribute of this package). campaign and report import no pyspark, prove imports z3
# inside the command, conform builds its Java harness on demand.
from streamproof.cli import (
    bugzoo, campaign, certify, check, conform, examples, explain, prove, replay, report, snapshot,
)


class StreamproofGroup(click.Group):
    """Turns bad input anywhere (option parsing included) into exit 2 with one line."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except NO_ARGS_HELP:
            raise
        except click.UsageError as e:
            raise input_error(e) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except NO_ARGS_HELP:
            raise
        except (click.UsageError, ScenarioError, registry.UnknownProperty, NothingToCheck, FamilyPackageError) as e:
            raise input_error(e) from None
        except KeyboardInterrupt:  # before a command's own handling (or in one without): still 130
            name = ctx.invoked_subcommand or ctx.info_name
            click.echo(f"streamproof: interrupted: {name} stopped; finished: nothing reported", err=True)
            settle_interrupt()
            ctx.exit(EXIT_INTERRUPTED)


@click.group(cls=StreamproofGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="streamproof", message="%(prog)s %(version)s")
def cli() -> None:
    """Property-based verification of a Flink-style stream runtime's timers, checkpoints and
    coordinator events. Exit codes: 0 all held, 1 a property failed or a bug survived, 2 bad
    input, 130 interrupted (Ctrl-C). Results go to streamproof-out/COMMAND unless --out says
    otherwise."""


def main(argv: Sequence[str] | None = None) -> None:
    """The console script ``streamproof``."""
    deliver_ctrl_c_reliably()
    cli.main(args=list(argv) if argv is not None else None, prog_name="streamproof")


for _command in (check.check, replay.replay_command, explain.explain_command, bugzoo.bugzoo,
                 campaign.campaign, report.report, prove.prove, certify.certify, conform.conform,
                 snapshot.snapshot, examples.examples):
    cli.add_command(_command)

# What 0 and 1 mean per command; 2 and 130 mean the same everywhere (the module docstring).
_EXIT_MEANING = {
    "check": "0 every property held, 1 one failed",
    "replay": "0 every scenario gave its expected verdict, 1 one did not",
    "explain": "0 the scenario holds, 1 it fails (the page is written either way)",
    "bugzoo": "0 every variant caught, 1 one survived",
    "certify": "0 certified, 1 not certified (or not exercised)",
    "prove": "0 every invariant proved and every variant asked for refuted, 1 otherwise",
    "conform": "0 every scenario agrees, 1 a divergence (2 also when Flink or Java is unavailable)",
    "campaign": "0 every seed held, 1 one did not (2 also when Spark cannot start)",
    "report": "0 every seed held, 1 some did not (2 also when DIR holds no results)",
    "examples": "0 written (or listed)",
    "snapshot": "0 the file is valid, 1 it is damaged (the sections before the damage are listed)",
}
for _name, _meaning in _EXIT_MEANING.items():
    cli.commands[_name].epilog = (f"Exit codes: {_meaning}, 2 bad input (one line on stderr), "
                                  "130 interrupted (Ctrl-C; one line saying what finished).")

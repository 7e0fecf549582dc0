"""``streamproof replay FILE...``: checks each scenario file against its property (or every
property of its family) and compares the implementation with the trace the file carries."""

from __future__ import annotations

import json
from typing import Any

import click

from streamproof.cli.common import (
    EXIT_FAILED, EXIT_HELD, InputError, Status, emit_json, injected_patch, interrupted, json_option, plural,
    refuse_certify_counterexample,
)
from streamproof.properties import registry
from streamproof.properties.scenario import load_scenario_file
from streamproof.replayer import NothingToCheck, ReplayResult, replay


@click.command("replay")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("--inject", metavar="VARIANT", default=None,
              help="apply this bug-zoo variant while replaying (a counterexample of it must fail)")
@json_option
def replay_command(files: tuple[str, ...], inject: str | None, as_json: bool) -> None:
    """Replay scenario files: check each against its property (or every property of its family)
    and compare the implementation with the trace it carries (flink_observed, expected)."""
    patch = injected_patch(inject)
    held = failed = 0
    try:
        with Status("replay", len(files)) as status:
            for index, file in enumerate(files):
                status.begin(index, file)
                status.detail = f"{held} held, {failed} failed"
                refuse_certify_counterexample(file)
                scenario = load_scenario_file(file)  # ScenarioError: exit 2, earlier output stays
                try:
                    with patch():
                        result = replay(scenario)
                except (NothingToCheck, registry.UnknownProperty) as e:
                    raise InputError(f"{file}: {e.args[0]}") from None
                held += result.holds  # counted before it is printed: a Ctrl-C from now on counts it finished
                failed += not result.holds
                with status.paused():
                    if as_json:
                        emit_json(result.to_json(file))
                    else:
                        _print_replay(file, result)
            if not status.tty and len(files) > 1:
                status.summary(f"{plural(len(files), 'file')}, {held} held, {failed} failed")
    except KeyboardInterrupt:
        done = held + failed
        interrupted(f"replay stopped at {files[done]}" if done < len(files) else "replay",
                    f"finished: {done} of {plural(len(files), 'file')} ({held} held, {failed} failed)")
    click.get_current_context().exit(EXIT_HELD if not failed else EXIT_FAILED)


def _print_replay(file: str, result: ReplayResult) -> None:
    title = f"{result.family}: {result.name}" if result.name else result.family
    click.echo(f"== {file} ({title}) ==")
    for event in result.observed:
        click.echo(f"  {_compact(event)}")
    for v in result.verdicts:
        click.echo(f"property {v.property}: {v.verdict}")
    if result.matches_expected is not None:
        what = " and ".join(result.compared_with)
        click.echo(f"matches {what}: yes" if result.matches_expected
                   else f"matches {what}: NO ({result.mismatch})")
    click.echo("verdict: held" if result.holds else f"verdict: FAILED ({result.failure()})")
    click.echo("")


def _compact(event: Any) -> str:
    return json.dumps(event, ensure_ascii=False, separators=(",", ":"))

"""``streamproof explain FILE``: replays a scenario file and draws its run as a timeline (text,
``--json``, ``--html``); a job certification counterexample is drawn with the job's operators as
lanes. The timeline itself is built and rendered by :mod:`streamproof.explain`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click

from streamproof.cli.common import (
    EXIT_FAILED, EXIT_HELD, InputError, emit_json, injected_patch, json_option, refuse_certify_counterexample,
)
from streamproof.properties import registry
from streamproof.properties.scenario import load_scenario_file
from streamproof.replayer import NothingToCheck


@click.command("explain")
@click.argument("file", metavar="FILE")
@click.option("--html", "html_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              metavar="OUT.html", help="also write the timeline as a self-contained HTML page")
@click.option("--width", type=click.IntRange(min=40), default=None, metavar="N",
              help="width of the text timeline [default: the terminal's, else 120]")
@click.option("--inject", metavar="VARIANT", default=None,
              help="apply this bug-zoo variant while replaying (as replay --inject)")
@click.option("--job", "job", default=None, metavar="JOB.py",
              help="a counterexample of 'streamproof certify JOB.py': the job [default: the one the file names]")
@json_option
def explain_command(file: str, html_out: Path | None, width: int | None, inject: str | None,
                    job: str | None, as_json: bool = False) -> None:
    """Replay a scenario file and draw its run as a timeline, one lane per subtask (plus the job
    manager), with the row where the property broke marked and the family's reference. A
    counterexample of 'streamproof certify JOB.py' is drawn with the job's operators as lanes."""
    import shutil

    from streamproof.explain.build import explain
    from streamproof.explain.render import render_html, render_text
    from streamproof.properties import certify_job as cj

    patch = injected_patch(inject)
    if cj.is_job_scenario(file):
        timeline = _job_timeline(file, job)
    else:
        refuse_certify_counterexample(file)
        scenario = load_scenario_file(file)  # ScenarioError: exit 2
        try:
            with patch():
                timeline = explain(scenario, file)
        except (NothingToCheck, registry.UnknownProperty) as e:
            raise InputError(f"{file}: {e.args[0]}") from None
        timeline.injected = inject
    width = width or shutil.get_terminal_size((120, 24)).columns
    if as_json:  # the timeline itself: lanes, rows (the broken one marked), verdicts, sections
        emit_json({"file": file, **json.loads(json.dumps(dataclasses.asdict(timeline), default=str))})
    else:
        click.echo(render_text(timeline, width), nl=False)
    if html_out is not None:
        try:
            html_out.write_text(render_html(timeline), encoding="utf-8")
        except OSError as err:
            raise InputError(f"cannot write {html_out}: {err.strerror or err}") from None
        click.echo(f"html: {html_out}", err=as_json)
    click.get_current_context().exit(EXIT_HELD if timeline.holds else EXIT_FAILED)


def _job_timeline(file: str, job: str | None):
    """The timeline of a job certification counterexample (its job from --job or the file)."""
    from streamproof.explain.certify_job import job_timeline
    from streamproof.properties import certify_job as cj

    try:
        scenario, named, prop = cj.load_scenario(file)
        target = job or named
        if target is None:
            raise InputError(f"{file}: a job counterexample that names no job: give --job JOB.py")
        return job_timeline(cj.load_job(target), scenario, file, prop)
    except cj.JobCertifyError as e:
        raise InputError(f"{file}: {e}") from None

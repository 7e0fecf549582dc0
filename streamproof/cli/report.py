"""``streamproof report DIR``: the Markdown + HTML report of the Spark campaigns in DIR (the work
is in ``spark_harness``, imported inside the command). Registered on the ``streamproof`` group by
:mod:`streamproof.cli`."""

from __future__ import annotations

import json

import click

from streamproof import extras


@click.command("report")
@click.argument("results", metavar="DIR", type=click.Path(file_okay=False))
@click.option("--campaign", "name", default=None, metavar="NAME", help="Only this campaign")
@click.option("--out", default=None, metavar="OUT", help="Report directory [default: DIR/_report]")
@click.option("--json", "as_json", is_flag=True, help="one JSON object per campaign, then the report's paths")
def report(results: str, name: str | None, out: str | None, as_json: bool = False) -> None:
    """Write a Markdown + HTML report of the campaigns in DIR: counts per property, failures
    deduplicated by signature with their scenario files, time per seed histogram, throughput.
    Exit 0 when every seed held, 1 when some did not, 2 when DIR holds no results."""
    from streamproof.spark_harness.report import ReportError, write_report
    from streamproof.cli.common import EXIT_FAILED, EXIT_HELD, InputError

    extras.require(("pyarrow", "pandas", "matplotlib"), "spark", "streamproof report")
    try:
        from streamproof.explain import failure_fragment
        path, reports = write_report(results, out, name, explain=failure_fragment)
    except ReportError as e:
        raise InputError(e) from None
    except ImportError as e:  # a part of the extra imported deeper down
        raise InputError(extras.missing(e, "spark", "streamproof report")) from None
    for r in reports:
        count = lambda verdict: sum(p[verdict] for p in r.per_property)  # noqa: E731
        if as_json:
            click.echo(json.dumps({"campaign": r.name, "status": r.status, "runs": r.rows, "failed": count("failed"),
                                   "timeout": count("timeout"), "error": count("error"),
                                   "signatures": len(r.failures), "exactly_once": r.exactly_once,
                                   "problems": list(r.problems)}))
            continue
        click.echo(f"campaign {r.name}: {r.rows} runs, {count('failed')} failed, {count('timeout')} timed out, "
                   f"{count('error')} errors, {len(r.failures)} failure signatures"
                   + ("" if r.exactly_once else " (results incomplete: " + "; ".join(r.problems) + ")"))
    if as_json:
        click.echo(json.dumps({"report": str(path), "html": str(path.with_suffix(".html"))}))
    else:
        click.echo(f"report: {path} (and {path.with_suffix('.html')})")
    ok = all(r.status == "held" for r in reports)
    click.get_current_context().exit(EXIT_HELD if ok else EXIT_FAILED)

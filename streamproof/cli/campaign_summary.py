"""What ``streamproof campaign`` prints when a campaign ends: the summary as text (the counts per
property, the failures with their replay and rerun commands, the verdict line) or as one JSON
object (``--json``)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import click


def replay_command(path: str, inject: str | None) -> str:
    """``streamproof replay FILE``, with ``--inject VARIANT`` when the campaign injected one (its
    scenarios fail only with the variant applied)."""
    return "streamproof replay " + shlex.quote(str(path)) + (f" --inject {shlex.quote(inject)}" if inject else "")


def summary_json(result, skipped: list[str], report_path) -> dict:
    run = result.run
    return {
        "campaign": result.spec.name, "out": result.out, "holds": result.holds, "verified": result.verified,
        "verification": result.verification, "spec": json.loads(result.spec.to_json()),
        "properties": result.per_property, "skipped": skipped,
        "status": result.status,
        "failures": [{k: v for k, v in f.items()} for f in result.failures],
        "timeouts": [{k: v for k, v in f.items()} for f in result.timeouts],
        "errors": [{k: v for k, v in f.items()} for f in result.errors],
        "run": dict(run.__dict__), "coverage": result.exhaustive,
        "report": str(report_path) if report_path else None,
    }


def print_summary(result, skipped: list[str], target, report_path) -> None:
    from streamproof.cli.common import table

    spec, run = result.spec, result.run
    echo = click.echo
    if spec.mode == "exhaustive":
        s = spec.scope
        what = (f"exhaustive small scope of {s['family']}: depth {s['depth']}, {s['alphabet']} steps per "
                f"position, {s['total']} scenarios per property")
    else:
        what = (f"seeds {spec.seed_start}..{spec.seed_end - 1} ({spec.seeds} per property), {spec.examples} "
                f"examples x {spec.step_count} steps per seed" + (f", bug variant {spec.inject} injected"
                                                                   if spec.inject else ""))
    echo(f"campaign {spec.name}: {len(spec.properties)} properties, {what}")
    echo(f"target: {run.master} ({run.api}, {run.cores} cores)")
    echo("")
    rows = [(p["property"], p["rows"], p["held"], p["failed"], p["timeout"], p["error"], p["signatures"],
             p["examples"], p["steps"], f"{p['seconds'] / max(1, p['rows']):.3f}") for p in result.per_property]
    for line in table(("property", "seeds", "held", "failed", "timeout", "error", "signatures", "examples",
                        "steps", "s/seed"), rows, set(range(1, 10))):
        echo(line)
    if skipped:
        echo(f"skipped (nothing to explore; replay-only): {', '.join(skipped)}")
    echo("")
    total = sum(p["rows"] for p in result.per_property)
    echo(f"every seed exactly once: yes ({total} rows)" if result.verified
         else "every seed exactly once: NO: " + "; ".join(result.verification))
    if result.exhaustive:
        for prop, c in sorted(result.exhaustive.items()):
            states = f", {c['distinct_states']} distinct states" if c["distinct_states"] is not None else ""
            echo(f"coverage {prop}: {c['sequences']} of {c['sequences_total']} scenarios, "
                 f"{c['nodes']} of {c['nodes_total']} tree nodes{states}")
    if run.previous:
        echo(f"started again without --resume: the previous results of {spec.name} were moved to {run.previous}")
    rate = run.seeds_run / run.seconds if run.seconds else 0.0
    kept = f", {run.chunks_resumed} chunks kept from earlier runs" if run.chunks_resumed else ""
    echo(f"time: startup {run.startup_seconds:.1f} s, planning {run.plan_seconds:.1f} s, campaign {run.seconds:.1f} s for {run.seeds_run} runs "
         f"({rate:.1f} runs/s; a run: one property on one seed){kept}")
    if result.failures:
        echo("")
        echo(f"failures: {len(result.failures)} signatures (the smallest seed represents each)")
        for f in result.failures:
            echo(f"  {f['property']}  {f['verdict']}  {f['signature']}  {f['seeds']} seeds, first seed {f['seed']}")
            echo(f"    {f['message']}")
            if f.get("file"):
                echo(f"    scenario: {f['file']}")
                echo(f"    replay:   {replay_command(f['file'], spec.inject)}")
            echo(f"    rerun:    {f['reproduce']}")
    for title, rows in (("timeouts (not failures: the per-seed limit of "
                         f"{spec.timeout:g} s ran out before the budget was done; raise --timeout)", result.timeouts),
                        ("errors (the run raised outside the property's checks; no scenario)", result.errors)):
        if rows:
            echo("")
            echo(f"{title}: {sum(f['seeds'] for f in rows)} seeds, {len(rows)} signatures")
            for f in rows:
                echo(f"  {f['property']}  {f['verdict']}  {f['signature']}  {f['seeds']} seeds, first seed {f['seed']}")
                echo(f"    {f['message']}")
                echo(f"    rerun:    {f['reproduce']}")
    echo("")
    if report_path:
        echo(f"report: {report_path} (and {Path(report_path).with_suffix('.html')})")
    echo(f"results: {result.out}")
    echo(_verdict_line(result.status, result.per_property, total))


def _verdict_line(status: str, per_property: list[dict], total: int) -> str:
    count = lambda verdict: sum(p.get(verdict, 0) for p in per_property)  # noqa: E731
    if status == "held":
        return f"all {total} runs held (property x seed)"
    timeouts = f", {count('timeout')} timed out" if count("timeout") else ""
    if status == "failed":
        return f"FAILED: {count('failed')} runs failed, {count('error')} errors{timeouts}"
    if status == "timeout":
        return (f"NOT ALL HELD: no run failed, but {count('timeout')} runs timed out (not checked to the end; "
                "not failures)")
    return "INCOMPLETE: not every seed is in the results (resume the campaign)"

"""``streamproof campaign``: fuzz campaigns on Apache Spark (seed ranges, exhaustive small scopes,
``--resume``, ``--on-flink``); the summary it prints is :mod:`streamproof.cli.campaign_summary`'s.

Registered on the ``streamproof`` group by :mod:`streamproof.cli`. Nothing here imports pyspark:
the work is in ``spark_harness`` (imported inside the command), so the core CLI starts fast and
works without Spark or Java.
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

import click

from streamproof import extras, outputs
from streamproof.cli.campaign_summary import print_summary, summary_json

SEEDS_HELP = "Seed range A:B (B excluded) or a count N (= 0:N)"


def _parse_seeds(text: str) -> tuple[int, int]:
    from streamproof.cli.common import InputError

    try:
        if ":" in text:
            a, b = text.split(":", 1)
            start, end = int(a), int(b)
        else:
            start, end = 0, int(text)
    except ValueError:
        raise InputError(f"bad --seeds {text!r}: expected A:B or N") from None
    if end <= start or start < 0:
        raise InputError(f"bad --seeds {text!r}: expected 0 <= A < B")
    return start, end


def _parse_pairs(pairs: tuple[str, ...], option: str, as_json: bool = False) -> dict:
    from streamproof.cli.common import InputError

    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InputError(f"bad {option} {pair!r}: expected KEY=VALUE")
        if as_json:
            try:
                value = json.loads(value)
            except ValueError:
                pass
        out[key.strip()] = value
    return out


def _explicit(ctx: click.Context, name: str) -> bool:
    source = ctx.get_parameter_source(name)
    return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")


@click.command("campaign")
@click.argument("names", nargs=-1, metavar="[PROPERTY]...")
@click.option("--master", default="local[*]", show_default=True, metavar="URL",
              help="local[*] | local[N] | spark://HOST:PORT | yarn | k8s://HOST:PORT | sc://HOST:PORT")
@click.option("--api", type=click.Choice(["classic", "connect"]), default="classic", show_default=True,
              help="connect: run a local or standalone master behind an in-process Spark Connect server "
                   "(sc:// is always Connect)")
@click.option("--seeds", "seeds_text", default="0:100", show_default=True, metavar="A:B|N", help=SEEDS_HELP)
@click.option("--examples", type=click.IntRange(min=1), default=20, show_default=True, metavar="N",
              help="Budget per seed: Hypothesis examples")
@click.option("--step-count", type=click.IntRange(min=1), default=40, show_default=True, metavar="N",
              help="Budget per example: at most N steps")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=300.0, show_default=True,
              metavar="SECONDS", help="Per-seed time limit: a slower seed is a 'timeout' verdict, not a failure")
@click.option("--inject", metavar="VARIANT", default=None, help="Apply a bug-zoo variant on the executors")
@click.option("--campaign", "name", metavar="NAME", default=None,
              help="Campaign name [default: derived from properties, seeds and budget]")
@click.option("--out", default=str(outputs.default("campaign")), show_default=True, metavar="DIR",
              help="Results directory (Parquet), any path the cluster can write")
@click.option("--resume", is_flag=True,
              help="Continue the campaign: run only its chunks not yet in DIR (an error when DIR does not hold "
                   "it); without --resume a campaign name that exists starts afresh (its old results are moved "
                   "to DIR/_previous/NAME)")
@click.option("--conf", "confs", multiple=True, metavar="KEY=VALUE", help="Spark configuration (repeatable)")
@click.option("--chunk-seeds", type=click.IntRange(min=1), default=None, metavar="N",
              help="Seeds per chunk (= per partition) [default: ~2 s of work, measured]")
@click.option("--wave-seconds", type=click.FloatRange(min=1), default=30.0, show_default=True, metavar="S",
              help="Work of one wave per core, measured and corrected as waves commit (one Spark job; what an "
                   "interruption can cost)")
@click.option("--exhaustive", is_flag=True,
              help="Check every scenario of the family's small scope up to --depth instead of seeds")
@click.option("--depth", type=click.IntRange(min=1, max=12), default=None, metavar="D",
              help="Exhaustive mode: steps after the prefix [default: 3]")
@click.option("--bound", "bounds", multiple=True, metavar="KEY=JSON",
              help="Exhaustive mode: a bound of the scope, e.g. keys='[\"a\",\"b\"]' (repeatable)")
@click.option("--no-report", is_flag=True, help="Do not write the Markdown/HTML report")
@click.option("--json", "as_json", is_flag=True, help="The summary as one JSON object on stdout")
@click.option("--on-flink", is_flag=True,
              help="The arguments are PyFlink job files: run each on Apache Flink (certify --on-flink's runs), one "
                   "Spark task and one Flink MiniCluster per job; rows in DIR/_flink/NAME")
@click.option("--flink-faults", type=click.IntRange(0), default=6, show_default=True, metavar="N",
              help="With --on-flink: runs with a failure injected, per job")
@click.pass_context
def campaign(ctx: click.Context, names: tuple[str, ...], master: str, api: str, seeds_text: str, examples: int,
             step_count: int, timeout: float, inject: str | None, name: str | None, out: str, resume: bool,
             confs: tuple[str, ...], chunk_seeds: int | None, wave_seconds: float, exhaustive: bool,
             depth: int | None, bounds: tuple[str, ...], no_report: bool, as_json: bool, on_flink: bool = False,
             flink_faults: int = 6) -> None:
    """Run a fuzz campaign on Apache Spark: every seed of the range explores each property with
    Hypothesis seeded from it (all explorable properties by default; a family name selects its
    properties). Results go to DIR as Parquet; failures are deduplicated by signature; a report
    is written to DIR/_report. Exit 0 when every seed held, 1 otherwise, 2 on bad input or when
    Spark cannot start."""
    from streamproof.properties import registry
    from streamproof.spark_harness import campaign as camp
    from streamproof.spark_harness import session as sess
    from streamproof.spark_harness import ship
    from streamproof.spark_harness.progress import CampaignDisplay
    from streamproof.spark_harness.spec import NAME_PATTERN, default_name
    from streamproof import __version__
    from streamproof.cli.common import EXIT_FAILED, EXIT_HELD, InputError

    try:
        target = sess.parse_master(master)
    except sess.SparkSetupError as e:
        raise InputError(e) from None
    conf = _parse_pairs(confs, "--conf")
    if on_flink:
        _flink_campaign(ctx, list(names), master, api, conf, name, out, flink_faults, timeout, as_json)
        return
    seed_start, seed_end = _parse_seeds(seeds_text)
    if exhaustive:
        if inject:
            raise InputError("--inject is not available with --exhaustive")
        if _explicit(ctx, "seeds_text"):
            raise InputError("--seeds does not apply to --exhaustive (the scope numbers its scenarios)")
        props, skipped, family = _exhaustive_properties(list(names))
        depth = depth or 3
        from streamproof.spark_harness.exhaustive import parse_bounds
        try:
            bound = parse_bounds(family, bounds)
        except ValueError as e:
            raise InputError(e) from None
    else:
        if depth is not None or bounds:
            raise InputError("--depth and --bound apply to --exhaustive only")
        props, skipped = camp.explorable(list(names))
        if not props:
            raise InputError("no property with a state machine or strategy to explore among: "
                             + ", ".join(p.name for p in registry.select(list(names))))
        if inject is not None:
            from streamproof.properties.bugzoo import get_variant
            try:
                get_variant(inject)
            except KeyError as e:
                raise InputError(e.args[0]) from None
    if name is None:
        name = (default_name(props, 0, depth, 0, 0, "exhaustive " + json.dumps(bound, sort_keys=True)) if exhaustive
                else default_name(props, seed_start, seed_end, examples, step_count, inject))
    if not NAME_PATTERN.match(name):
        raise InputError(f"bad campaign name {name!r}: letters, digits, '.', '_', '-' (at most 64)")

    from streamproof.spark_harness.report import is_local_path, local_path
    if resume and is_local_path(out) and not (Path(local_path(out)) / "_campaigns" / name / "spec").is_dir():
        raise InputError(_nothing_to_resume(name, out))
    _require_spark_extra(("pyspark", "pyarrow", "pandas") + (() if no_report else ("matplotlib",)),
                         "streamproof campaign")
    run = camp.new_run(master, "connect" if target.kind == "connect" else api)
    log_dir = Path(local_path(out)) / "_logs" if is_local_path(out) else Path("streamproof-logs")
    log_path = log_dir / f"{name}-{run.run_id}.log"
    display = CampaignDisplay(name, local=target.loopback).open()  # progress on stderr, Spark's start-up too
    display.step(f"starting Spark ({master})")
    started = time.perf_counter()
    try:
        spark = sess.start_session(master, api=api, app_name=f"streamproof {name}", conf=conf, log_path=log_path)
    except BaseException as e:
        display.close()
        if isinstance(e, sess.SparkSetupError):
            raise InputError(e) from None
        if not isinstance(e, KeyboardInterrupt):
            raise
        click.echo("streamproof: interrupted while Spark was starting", err=True)
        ctx.exit(130)
    interrupted = False
    try:
        ship.ship(spark)
        camp.warm_up(spark, target.cores or 4)  # starts the executors' Python workers (startup)
        cores = sess.cluster_cores(spark, target)
        run.startup_seconds = time.perf_counter() - started
        display.step("reading the campaign's state and planning")
        stored = camp.load_spec(spark, out, name)
        planning = time.perf_counter()
        if resume and stored is None:
            raise InputError(_nothing_to_resume(name, out))
        if resume and stored is not None:
            spec = stored
            _check_resume(ctx, spec, props, seed_start, seed_end, examples, step_count, timeout, inject, exhaustive)
        elif exhaustive:
            spec = camp.plan_exhaustive(name, props, family, depth, bound, timeout, __version__, cores, chunk_seeds)
        else:
            spec = camp.plan(name, props, seed_start, seed_end, examples, step_count, timeout, inject,
                             __version__, cores, chunk_seeds, note=display.step)
        run.plan_seconds = time.perf_counter() - planning
        if is_local_path(out):  # a stale report must not vouch for results this run changes
            from streamproof.spark_harness.report import mark_in_progress
            mark_in_progress(local_path(out), name, run.run_id)
        result = camp.run_campaign(spark, spec, out, run, resume=resume, cores=cores, wave_seconds=wave_seconds,
                                   bar=display, stored=stored)
    except KeyboardInterrupt:
        interrupted = True
    except camp.CampaignError as e:
        raise InputError(f"campaign {name}: {e}") from None
    except (InputError, click.exceptions.Exit):
        raise
    except Exception as e:  # noqa: BLE001 - Spark failed: one line, the details in the log
        where = f" (details: {log_path})" if target.needs_jvm else ""
        raise InputError(f"campaign {name}: Spark failed: {' '.join(str(e).split())[:300]}{where}") from None
    finally:
        display.step("stopping Spark")
        try:
            sess.stop_session(spark)
        finally:
            display.close()
    if interrupted:
        again = ["streamproof", "campaign", "--campaign", name, "--out", out, "--master", master]
        if api != "classic":
            again += ["--api", api]
        if run.seeds_total:
            done = (f"{run.seeds_kept + run.seeds_run} of {run.seeds_total} runs (property x seed) are committed "
                    f"({run.seeds_run} this run, {run.waves} waves"
                    + (f"; {run.seeds_kept} kept from earlier runs" if run.seeds_kept else "") + ") and kept"
                    + (f"; the {run.seeds_dropped} runs of the waves in flight were dropped and run again on resume"
                       if run.seeds_dropped else ""))
        else:
            done = "nothing ran yet (it stopped while planning)"
        click.echo(f"streamproof: interrupted: campaign {name}: {done}. Resume with: "
                   f"{shlex.join(again + ['--resume'])}", err=True)
        ctx.exit(130)

    report_path = None
    try:
        if not no_report and is_local_path(out) and Path(local_path(out), f"campaign={name}").is_dir():
            from streamproof.spark_harness.report import write_report
            from streamproof.explain import failure_fragment
            report_path, reports = write_report(local_path(out), explain=failure_fragment)
            files = {(f["property"], f["signature"]): f.get("file") for r in reports if r.name == name
                     for f in r.failures}
            for f in result.failures:
                f["file"] = files.get((f["property"], f["signature"]))
        else:  # the results are not here (a remote Connect server or cluster file system): no report
            _write_failures_locally(result, outputs.default("campaign") / "failures" / name)
    except KeyboardInterrupt:
        click.echo(f"streamproof: interrupted while writing the report: campaign {name} is complete in {out}; "
                   f"write the report with: streamproof report {shlex.quote(out)}", err=True)
        ctx.exit(130)
    if as_json:
        click.echo(json.dumps(summary_json(result, skipped, report_path), default=str))
    else:
        print_summary(result, skipped, target, report_path)
    ctx.exit(EXIT_HELD if result.holds else EXIT_FAILED)


def _flink_campaign(ctx: click.Context, jobs: list[str], master: str, api: str, conf: dict, name: str | None,
                    out: str, faults: int, time_limit: float, as_json: bool) -> None:
    """``campaign --on-flink JOB...``: every job on Apache Flink, one Spark task each."""
    import os

    from streamproof.cli.common import EXIT_FAILED, EXIT_HELD, InputError
    from streamproof.on_flink.runner import FlinkUnavailable, check_available
    from streamproof.on_flink import campaign as flink_runs
    from streamproof.spark_harness import session as sess
    from streamproof.spark_harness import ship
    from streamproof.spark_harness.report import is_local_path, local_path

    if not jobs:
        raise InputError("--on-flink takes the PyFlink job files to run on Flink (e.g. examples/jobs/real/*.py)")
    missing = [job for job in jobs if not (job.endswith(".py") and os.path.isfile(job))]
    if missing:
        raise InputError(f"--on-flink: {missing[0]}: no such job file (a PyFlink job's .py file)")
    try:
        version = check_available()
    except FlinkUnavailable as e:
        raise InputError(e) from None
    _require_spark_extra(("pyspark", "pyarrow", "pandas"), "streamproof campaign --on-flink")
    name = name or f"flink-{len(jobs)}-jobs"
    log_dir = Path(local_path(out)) / "_logs" if is_local_path(out) else Path("streamproof-logs")
    started = time.perf_counter()
    try:
        spark = sess.start_session(master, api=api, app_name=f"streamproof {name}", conf=conf,
                                   log_path=log_dir / f"{name}.log")
    except sess.SparkSetupError as e:
        raise InputError(e) from None
    try:
        ship.ship(spark)
        click.echo(f"campaign {name}: {len(jobs)} jobs on Apache Flink {version} ({master})", err=True)
        rows = flink_runs.run_jobs(spark, jobs, faults, time_limit, out, name)
    except KeyboardInterrupt:
        click.echo(f"streamproof: interrupted: campaign {name}: no job's row is kept (rows are written when every "
                   "job has run); run it again", err=True)
        ctx.exit(130)
    except Exception as e:  # noqa: BLE001 - Spark failed: one line
        raise InputError(f"campaign {name}: Spark failed: {' '.join(str(e).split())[:300]}") from None
    finally:
        sess.stop_session(spark)
    seconds = time.perf_counter() - started
    bad = [r for r in rows if r["verdict"] != "agrees"]
    if as_json:
        click.echo(json.dumps({"campaign": name, "flink": version, "seconds": round(seconds, 1),
                               "rows": [{k: v for k, v in r.items() if k != "report"} for r in rows]}, default=str))
    else:
        click.echo(f"{'job':50} {'on Flink':9} {'simulator':13} {'runs':>4} {'s/run':>6}  executor")
        for r in rows:
            click.echo(f"{r['job']:50} {r['verdict']:9} {'gives all' if r['faithful'] else 'MISSES ONE':13} "
                       f"{r['runs']:4} {r['seconds_per_run']:6.1f}  {r['executor']}"
                       + (f"\n    {r['message']}" if r["message"] else ""))
        click.echo(f"{len(rows) - len(bad)} of {len(rows)} jobs: every committed output under a failure equals a "
                   f"failure-free one ({seconds:.0f} s); rows: {os.path.join(out, '_flink', name)}")
    ctx.exit(EXIT_HELD if not bad else EXIT_FAILED)


def _missing_extra(e: ImportError, command: str) -> str:
    return extras.missing(e, "spark", command)


def _require_spark_extra(modules: tuple[str, ...], command: str) -> None:
    """One line (exit 2) naming the extra when a module of it is missing, instead of a traceback."""
    extras.require(modules, "spark", command)


def _nothing_to_resume(name: str, out: str) -> str:
    return (f"nothing to resume: no campaign {name!r} in {out} (start it without --resume; "
            f"the campaigns there: {', '.join(_campaigns_in(out)) or 'none'})")


def _campaigns_in(out: str) -> list[str]:
    from streamproof.spark_harness.report import is_local_path, local_path

    if not is_local_path(out):
        return []
    base = Path(local_path(out)) / "_campaigns"
    return sorted(d.name for d in base.iterdir() if (d / "spec").is_dir()) if base.is_dir() else []


def _exhaustive_properties(names: list[str]):
    from streamproof.properties import registry
    from streamproof.spark_harness import exhaustive as ex
    from streamproof.cli.common import InputError

    if not names:
        raise InputError(f"--exhaustive needs a family or properties of one family (families with a small scope: "
                         f"{', '.join(sorted(ex.SCOPES))})")
    props = [p for name in names for p in (registry.for_family(name) or registry.select([name]))]  # scenario families
    families = sorted({p.family for p in props})
    if len(families) != 1:
        raise InputError(f"--exhaustive checks one family at a time; selected: {', '.join(families)}")
    if families[0] not in ex.SCOPES:
        raise InputError(f"no small scope for family {families[0]!r}; families with one: {', '.join(sorted(ex.SCOPES))}")
    return [p.name for p in props], [], families[0]


def _check_resume(ctx, spec, props, seed_start, seed_end, examples, step_count, timeout, inject, exhaustive) -> None:
    from streamproof.cli.common import InputError

    given = {"seeds_text": ("seed range", (spec.seed_start, spec.seed_end), (seed_start, seed_end)),
             "examples": ("examples", spec.examples, examples), "step_count": ("step count", spec.step_count, step_count),
             "timeout": ("timeout", spec.timeout, timeout), "inject": ("inject", spec.inject, inject)}
    if exhaustive != (spec.mode == "exhaustive"):
        raise InputError(f"campaign {spec.name} was started in {spec.mode} mode; resume it the same way")
    if ctx.params.get("names") and sorted(props) != sorted(spec.properties):
        raise InputError(f"campaign {spec.name} runs {', '.join(spec.properties)}; resume it without naming others")
    for param, (label, stored, now) in given.items():
        if _explicit(ctx, param) and stored != now and not (exhaustive and param == "seeds_text"):
            raise InputError(f"campaign {spec.name} was started with {label} {stored}, not {now}: "
                             "resume it with the same options (or leave them out)")


def _write_failures_locally(result, directory: Path) -> None:
    from streamproof.properties.scenario import dump_scenario, load_scenario

    for f in result.failures:
        f["file"] = None
        if f.get("scenario"):
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / f"{f['property']}-{f['seed']}.json"
            path.write_text(dump_scenario(load_scenario(f["scenario"]), indent=2), encoding="utf-8")
            f["file"] = str(path)

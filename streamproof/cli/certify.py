"""``streamproof certify module:Class``: certifies a user's keyed operator (docs/certify.md).
Registered on the ``streamproof`` group by :mod:`streamproof.cli`."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import click

from streamproof import outputs


def _args(text: str | None):
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as e:
        raise click.BadParameter(f"not JSON: {e}", param_hint="--args") from None
    if not isinstance(value, (list, dict)):
        raise click.BadParameter("a JSON list (positional) or object (keyword arguments)", param_hint="--args")
    return value


@click.command()
@click.argument("operator", metavar="JOB.py|MODULE|MODULE:CLASS")
@click.option("--examples", type=click.IntRange(0), default=None, metavar="N",
              help="scenarios per property (one operator, at least 1), or random scenarios after a job's plan "
                   "(0: the plan only) [default: the profile's; 50 for a job]")
@click.option("--seed", type=int, default=0, show_default=True, help="Hypothesis seed")
@click.option("--out", default=str(outputs.default("certify")), show_default=True, metavar="DIR",
              help="where certificate.json, .md, .html and the counterexamples go")
@click.option("--replay", "replay_file", default=None, metavar="FILE", help="check one counterexample file instead")
@click.option("--records", default=None, metavar="MODULE:NAME",
              help="a Hypothesis strategy of one input record (or a function returning one) [default: the "
                   "operator module's records()]; for a job: SOURCE=MODULE:NAME, the records of a source whose "
                   "data is not in the file (a list, a function returning one, or a strategy of a list)")
@click.option("--stream", default=None, metavar="MODULE:NAME",
              help="instead of --records: a strategy of a whole input (a list of records, in order) "
                   "[default: the module's stream()]")
@click.option("--key", default=None, metavar="SELECTOR",
              help="the key of a record: MODULE:FUNCTION, a field index or a field name [default: the module's key()]")
@click.option("--timestamp", default=None, metavar="SELECTOR",
              help="the event time of a record (ms): MODULE:FUNCTION, index or field name [default: the module's "
                   "timestamp()]")
@click.option("--args", "args_json", default=None, metavar="JSON",
              help="constructor arguments: a JSON list or object [default: the module's ARGS, else none]")
@click.option("--span", type=click.IntRange(1), default=None, metavar="MS",
              help="built-in records only: how far timestamps reach [default: 3x the operator's largest constant]")
@click.option("--layout", type=click.Choice(["spread", "by-key", "one"]), default=None,
              help="records over parallel sources: spread (each record to any), by-key (a key's records from one "
                   "source, in order), one (a single source) [default: by-key for --stream, spread for --records]")
@click.option("--late/--no-late", default=None,
              help="whether records may fall behind their source's watermark [default: yes, or the module's LATE]; "
                   "--no-late for input that is never late (e.g. a window operator's results)")
@click.option("--on-flink", is_flag=True,
              help="a job: also run it on Apache Flink (PyFlink's local MiniCluster; the flink extra and Java 17): "
                   "failure-free runs, runs with a failure injected, and whether the simulator gives Flink's outputs")
@click.option("--flink-faults", type=click.IntRange(0), default=6, show_default=True, metavar="N",
              help="with --on-flink: runs with a failure injected")
@click.option("--flink-time-limit", type=click.FloatRange(1), default=600, show_default=True, metavar="SECONDS",
              help="with --on-flink: the longest a batch of Flink runs may take")
@click.option("--flink-mode", type=click.Choice(["process", "thread"]), default="process", show_default=True,
              help="with --on-flink: PyFlink's python.execution-mode (thread: 2-3x faster runs; it cannot "
                   "checkpoint session windows in PyFlink 2.3)")
@click.option("--json", "as_json", is_flag=True,
              help="one JSON document on stdout (certificate.json's content and where it is; with --replay the "
                   "verdicts); the progress and the text go to stderr")
def certify(operator: str, examples: int | None, seed: int, out: str, replay_file: str | None,
            records: str | None, stream: str | None, key: str | None, timestamp: str | None,
            args_json: str | None, span: int | None, layout: str | None, late: bool | None,
            on_flink: bool = False, flink_faults: int = 6, flink_time_limit: float = 600,
            flink_mode: str = "process", as_json: bool = False) -> None:
    """Certify a PyFlink job as written (a job file or module: its own records, watermarks and
    keys) or one keyed operator (MODULE:CLASS: a PyFlink KeyedProcessFunction, or the
    impl.operators style) under interruptible timers, checkpoints, failures and rescales against
    Flink's exactly-once promise. Exit 0 when certified, 1 when not (or not exercised), 2 on bad input."""
    if as_json:
        _as_json(out, replay_file, lambda: certify.callback(
            operator, examples, seed, out, replay_file, records, stream, key, timestamp, args_json, span, layout,
            late, on_flink, flink_faults, flink_time_limit, flink_mode, False))
        return
    from streamproof.cli.common import EXIT_FAILED, EXIT_HELD, InputError, Status, profile_defaults
    from streamproof.impl.operators.user_clock import forget_printed
    from streamproof.properties import certify as cert
    from streamproof.properties.scenario import ScenarioError

    forget_printed()  # what the user's code prints from here on is this command's
    if is_job(operator):
        given = {"--stream": stream, "--key": key, "--timestamp": timestamp,
                 "--args": args_json, "--span": span, "--layout": layout, "--late/--no-late": late}
        misplaced = [name for name, value in given.items() if value is not None]
        if misplaced:
            raise InputError(f"{misplaced[0]} is for one operator (module:Class); a job brings its own input, keys "
                             "and timestamps")
        certify_job_command(operator, examples, seed, out, replay_file, records,
                            (flink_faults, flink_time_limit, flink_mode) if on_flink else None)
        return
    if on_flink:
        raise InputError("--on-flink runs a job (a job file or module) on Apache Flink; certify the operator inside "
                         "a job to run it on Flink")
    if examples == 0:
        raise InputError("--examples 0: one operator needs at least one example (0 is for a job: its plan only)")
    args = _args(args_json)
    try:
        if replay_file is None:
            outputs.prepare(out)
            cert.check_out(out)  # before any work: a bad --out is one line, not a tree made somewhere
        subject = cert.load(operator, args, records, key, timestamp, span, stream, layout, late,
                            replay_only=replay_file is not None)
        if replay_file is not None:
            verdicts = cert.replay(subject, replay_file)
            for v in verdicts:
                _REPLAYED.append({"property": v.property, "holds": v.holds, "invariant": v.invariant,
                                  "message": v.message})
                click.echo(f"{v.property}: {'held' if v.holds else f'FAILED {v.invariant}: {v.message}'}")
            _user_output(None)
            click.get_current_context().exit(EXIT_HELD if all(v.holds for v in verdicts) else EXIT_FAILED)
        command = " ".join(["streamproof", *map(shlex.quote, sys.argv[1:])]) if sys.argv[1:2] == ["certify"] else ""
        examples = examples or profile_defaults()[0]
        run = _Run(operator, examples)
        try:
            with Status("certify", len(cert.CHECKS)) as run.status:
                certificate = cert.certify(subject, examples, seed, Path(out), command=command,
                                           on_result=run.finished, progress=run.progress)
        except KeyboardInterrupt as stop:
            run.interrupted(stop)
    except (cert.CertifyError, ScenarioError) as e:
        raise InputError(e) from None
    except OSError as e:  # writing the certificate or a counterexample
        raise InputError(f"cannot write {e.filename or out}: {e.strerror or type(e).__name__}") from None
    for finding in certificate.findings:
        click.echo(f"finding: {finding['finding']} ({finding['scenarios']} scenarios)")
    _user_output(Path(out))
    click.echo(f"\n{operator}: {certificate.status}; certificate: {Path(out) / 'certificate.md'}")
    click.get_current_context().exit(EXIT_HELD if certificate.holds else EXIT_FAILED)


def _user_output(out: Path | None) -> None:
    """What the user's callbacks printed (kept, not shown, while certify ran them: Flink writes a
    task's stdout to the TaskManager's .out file): in ``OUT/user-output.txt``, or after a replay's
    verdicts."""
    from streamproof.impl.operators.user_clock import forget_printed, printed

    count, kept = printed()
    forget_printed()
    if not count:
        return
    more = [f"... and {count - len(kept)} more lines"] if count > len(kept) else []
    if out is None:
        click.echo(f"what your code printed ({count} lines):")
        for line in kept + more:
            click.echo(f"  {line}")
        return
    path = out / "user-output.txt"
    path.write_text("\n".join(kept + more) + "\n", encoding="utf-8")
    click.echo(f"your code printed {count} lines while certify ran it (in Flink: the TaskManager's .out file): {path}")


_REPLAYED: list[dict] = []  # the verdicts of --replay, for --json


def _as_json(out: str, replay_file: str | None, run) -> None:
    """Runs the command with its text on stderr, then prints one JSON document on stdout."""
    import contextlib

    _REPLAYED.clear()
    stdout = sys.stdout
    try:
        with contextlib.redirect_stdout(sys.stderr):
            run()
    except click.exceptions.Exit as done:
        if replay_file is not None:
            document = {"replay": replay_file, "verdicts": list(_REPLAYED)}
        else:
            path = Path(out) / "certificate.json"
            document = {"certificate": str(path), **json.loads(path.read_text(encoding="utf-8"))}
        document["exit_code"] = done.exit_code
        print(json.dumps(document, ensure_ascii=False), file=stdout, flush=True)
        raise


def is_job(target: str) -> bool:
    """A job file (``path/job.py``) or a job module (``package.job``, no ``:``)."""
    from streamproof.certify_api import is_job as is_job_target

    return is_job_target(target)


def certify_job_command(target: str, examples: int | None, seed: int, out: str, replay_file: str | None,
                        records: str | None = None, on_flink: tuple | None = None) -> None:
    """``streamproof certify job.py``: the job as written (docs/certify.md, "Certifying a job")."""
    import os

    from streamproof.cli.common import EXIT_FAILED, EXIT_HELD, InputError
    from streamproof.properties import certify as cert
    from streamproof.properties import certify_job as cj
    from streamproof.properties import certify_job_report as report

    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        if replay_file is None:
            outputs.prepare(out)
            cert.check_out(out)
        given = dict([cj.given_records(records)]) if records else None
        subject = cj.load_job(target, given)
        if replay_file is not None:
            outcomes = cj.replay_job(subject, replay_file)
            for prop, outcome in outcomes.items():
                verdict = "held" if outcome.message is None else \
                    f"finding: {outcome.finding}" if outcome.finding else f"FAILED: {outcome.message}"
                _REPLAYED.append({"property": prop, "holds": outcome.message is None, "finding": outcome.finding,
                                  "message": outcome.message})
                click.echo(f"{prop}: {verdict}")
            _user_output(None)
            failed = any(o.message is not None and not o.finding for o in outcomes.values())
            click.get_current_context().exit(EXIT_FAILED if failed else EXIT_HELD)
        pipeline = cj.describe_pipeline(subject)
        click.echo(f"{target}: {len(pipeline)} operators")
        for line in pipeline:
            click.echo(f"  {line}")
        examples = cj.DEFAULT_EXAMPLES if examples is None else examples
        certificate = cj.certify_job(subject, examples, seed)
        command = " ".join(["streamproof", *map(shlex.quote, sys.argv[1:])]) if sys.argv[1:2] == ["certify"] else ""
        md = report.write(subject, certificate, Path(out), command, examples, seed)
    except cj.JobCertifyError as e:
        raise InputError(e) from None
    except OSError as e:
        raise InputError(f"cannot write {e.filename or out}: {e.strerror or type(e).__name__}") from None
    for prop, result in certificate.results.items():
        line = f"{prop:28} {result['verdict']:13} {result['scenarios']:5} scenarios"
        if result["message"]:
            line += f"  {result['message']}"
        click.echo(line)
    for name, o in certificate.operators.items():
        click.echo(f"  {name} ({o['kind']}, {o['line']}): interruptible timers {o['interruptible timers']}")
    for finding in certificate.findings:
        click.echo(f"finding: {finding['finding']} ({finding['scenarios']} scenarios)")
    if on_flink is not None:
        refused = [prop for prop, r in certificate.results.items() if r["verdict"] == "failed"]
        certificate.on_flink = _on_flink(subject, target, Path(out), command, refused, *on_flink)
    _user_output(Path(out))
    click.echo(f"\n{target}: {certificate.status}; certificate: {md}")
    click.get_current_context().exit(EXIT_HELD if certificate.holds else EXIT_FAILED)


def _on_flink(subject, target: str, out: Path, command: str, refused: list, faults: int, time_limit: float,
              mode: str):
    """Runs the job on Apache Flink, prints and appends the certificate's section; the report."""
    from streamproof.cli.common import InputError
    from streamproof.on_flink import oracle, report
    from streamproof.on_flink.runner import FlinkUnavailable

    if not subject.pipeline.file:
        raise InputError(f"{target}: --on-flink needs the job's file")
    try:
        flink = oracle.run_on_flink(subject, subject.pipeline.file, faults=faults, time_limit=time_limit,
                                    progress=lambda text: click.echo(f"on Flink: {text}"), mode=mode)
    except FlinkUnavailable as e:
        kept = ""
        if e.partial is not None and (e.partial.failure_free or e.partial.faults):
            import json

            (out / "on_flink_partial.json").write_text(json.dumps(e.partial.to_json(), indent=1) + "\n")
            kept = f"; the Flink runs that ended: {out / 'on_flink_partial.json'}"
        raise InputError(f"{e} (the simulator's certificate is written: {out / 'certificate.md'}{kept})") from None
    report.append(out, flink, command, refused)
    for f in flink.faults:
        where = f"{f.function} call {f.fault[2]} ({f.fault[1]})" if f.fault else "-"
        click.echo(f"  fault at {where}: {f.verdict}" + (f"  {f.detail}" if f.verdict != "agrees" else ""))
    for ok, how in flink.fidelity:
        click.echo(f"  Flink output {'produced' if ok else 'NOT produced'} by the simulator: {how}")
    for line in report.beside(flink, refused):
        click.echo(f"  {line.replace('`', '')}")
    click.echo(report.verdict_line(flink))
    return flink


class _Run:
    """What a certification run printed and is doing: each property's line as it finishes, and
    on Ctrl-C one line saying where it stopped (exit 130)."""

    def __init__(self, operator: str, examples: int) -> None:
        self.operator, self.examples = operator, examples
        self.results: list[dict] = []
        self.current: str | None = None
        self.done = 0
        self.status = None  # a common.Status while certifying

    def progress(self, prop: str, done: int, shrinking: bool) -> None:
        if prop != self.current and self.status is not None:
            self.status.begin(len(self.results), prop)
        self.current, self.done = prop, done
        if self.status is not None:
            self.status.examples(done, self.examples, shrinking)

    def finished(self, r: dict) -> None:
        """One property's line, printed as it finishes (its counterexample already written)."""
        self.results.append(r)
        self.current = None
        line = f"{r['property']:30} {r['verdict']:13} {r['examples']:6} examples  {r['seconds']:6.1f} s"
        search = r.get("search")
        if search is not None:  # its planned search ran first
            line += (f"  refused by the {search['name']} at its example {search['examples']}" if search["refused"]
                     else f"  after {search['examples']} {search['name']} scenarios")
        if r["verdict"] != "held":
            line += f"  {r['message']}" + (f"  scenario: {r['scenario_file']}" if r["scenario_file"] else "")
        if self.status is None:
            click.echo(line)
            return
        with self.status.paused():
            click.echo(line)
        self.status.begin(len(self.results), "")

    def interrupted(self, stop: KeyboardInterrupt):
        from streamproof.cli.common import interrupted, plural
        from streamproof.properties import certify as cert

        prop = getattr(stop, "property", None) or self.current
        if prop is None and len(self.results) < len(cert.CHECKS):
            prop = list(cert.CHECKS)[len(self.results)]  # between two properties: the next one had started
        what = f"certify {self.operator}"
        if prop is not None:
            partial = getattr(stop, "exploration", None)
            done = partial.examples if partial is not None else self.done if prop == self.current else 0
            what += f" stopped during {prop} after {plural(done, 'example')} of {self.examples}"
        else:
            what += " stopped" + (" before its first property" if not self.results else "")
        written = getattr(stop, "scenario_file", None)
        if written:
            what += f"; the failure it had found is written, not minimised: {written}"
        verdicts = [r["verdict"] for r in self.results]
        finished = f"finished: {len(self.results)} of {len(cert.CHECKS)} properties"
        if self.results:
            finished += " (" + ", ".join(f"{verdicts.count(v)} {v}" for v in dict.fromkeys(verdicts)) + ")"
        interrupted(what, finished + "; no certificate written")

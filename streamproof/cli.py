"""The ``streamproof`` command line (DESIGN.md §5); what the commands share is in cli_common.

Exit codes, for every command: 0 when everything held, 1 when a property failed or a bug variant
survived, 2 on bad input (an unreadable or malformed scenario, an unknown property or variant, a
bad option), reported as exactly one line ``streamproof: error: <message>`` on stderr; 130 when
interrupted (Ctrl-C), with one line ``streamproof: interrupted: ...`` saying what finished.
Progress goes to stderr (cli_common.Status), so stdout and ``--json`` stay clean.

Each command is one function registered on :data:`cli`; the options several commands share are
the ``*_option`` decorators below, so the faces still to come (``campaign``, ``prove``,
``certify``, ``report``) join the group the same way. Heavy imports (Hypothesis, the state
machines) happen inside the commands, so ``streamproof --version`` and ``replay`` start fast.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from pathlib import Path
from typing import Any, Sequence

import click

from streamproof import outputs

from streamproof.properties import registry
from streamproof.properties.families import FamilyPackageError
from streamproof.properties.scenario import ScenarioError, dump_scenario, load_scenario_file
from streamproof import __version__
from streamproof.cli_common import (
    EXIT_FAILED,
    EXIT_HELD,
    EXIT_INTERRUPTED,
    settle_interrupt,
    NO_ARGS_HELP,
    deliver_ctrl_c_reliably,
    InputError,
    emit_json,
    examples_option,
    input_error,
    interrupted,
    json_option,
    Status,
    profile_defaults,
    plural,
    seed_option,
    table,
    write_atomically,
)
from streamproof.campaign_cli import campaign, report  # Spark campaigns (imports no pyspark)
from streamproof.certify_cli import certify
from streamproof.examples_cli import examples
from streamproof.prove_cli import prove  # z3 models (z3 imported inside)
from streamproof.conform_cli import conform  # the Flink conformance kit (Java harness built on demand)
from streamproof.snapshot_cli import snapshot  # inspect and validate timer snapshot files
from streamproof.replayer import NothingToCheck, ReplayResult, replay

DEFAULT_OUT = outputs.default("check")


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


def _compact(event: Any) -> str:
    return json.dumps(event, ensure_ascii=False, separators=(",", ":"))


# ------------------------------------------------------------------------------------ check

@cli.command()
@click.argument("names", nargs=-1, metavar="[PROPERTY]...")
@examples_option
@seed_option
@json_option
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_OUT,
              show_default=True, help="Directory for the minimal failing scenarios")
@click.option("--reach", "reach_detail", is_flag=True,
              help="list every reachability case of every property with its counts (default: a summary)")
def check(names: tuple[str, ...], examples: int | None, seed: int, as_json: bool, out: Path,
          reach_detail: bool) -> None:
    """Explore properties with Hypothesis (all of them by default; a family name selects its
    properties). A failure is shrunk to a minimal scenario written to --out."""
    from streamproof.properties.explore import explore

    props = _select_explorable(list(names))
    default_examples, step_count = profile_defaults()
    examples = examples or default_examples
    records: list[_CheckRecord] = []
    current = None
    try:
        with Status("check", len(props)) as status:
            for index, prop in enumerate(props):
                current = prop
                status.begin(index, prop.name)
                exploration = explore(prop, examples, seed=seed, step_count=step_count,
                                      progress=lambda done, shrinking: status.examples(done, examples, shrinking))
                record = _CheckRecord(prop, exploration, seed)
                if not exploration.holds and exploration.scenario is not None:
                    status.detail = "writing and replaying the counterexample"
                    record.save(out, examples)
                records.append(record)  # before it is printed: a Ctrl-C from now on counts it finished
                current = None
                status.item(f"{prop.name}: {exploration.verdict}, {plural(exploration.examples, 'example')}, "
                            f"{exploration.seconds:.1f} s"
                            + (f", scenario {record.scenario_file}" if record.scenario_file else ""))
                if as_json:
                    with status.paused():
                        emit_json(record.to_json())
            failed = sum(not r.exploration.holds for r in records)
            if not status.tty:
                status.summary(f"{len(records) - failed} of {len(records)} properties held" if not failed
                               else f"{failed} of {len(records)} properties FAILED")
    except KeyboardInterrupt as stop:
        if current is None and len(records) < len(props):
            current = props[len(records)]  # between two properties: the next one had (almost) started
        _check_interrupted(stop, current, records, len(props), out, examples, seed, as_json)
    if not as_json:
        _print_check_report(records, detail=reach_detail)
    click.get_current_context().exit(EXIT_HELD if all(r.exploration.holds for r in records) else EXIT_FAILED)


def _check_interrupted(stop: KeyboardInterrupt, current: registry.Property | None, records: list,
                       total: int, out: Path, examples: int, seed: int, as_json: bool) -> None:
    """Ctrl-C: the finished properties' report, a counterexample already found written (as found:
    its shrinking was cut short), one line on stderr, exit 130."""
    partial = getattr(stop, "exploration", None)
    saved = None
    if current is not None and partial is not None and not partial.holds and partial.scenario is not None:
        record = _CheckRecord(current, partial, seed)
        record.save(out, examples, minimal=False)
        saved = record.scenario_file
    if not as_json and records:
        _print_check_report(records, summary=False)
    what = "check"
    if current is not None:
        what += f" stopped during {current.name}"
        if partial is not None:
            what += f" after {plural(partial.examples, 'example')} of {examples}"
    if saved is not None:
        what += (f"; the failure it had found is written, not minimised: {saved} "
                 f"(streamproof replay {shlex.quote(str(saved))})")
    failed = sum(not r.exploration.holds for r in records)
    finished = f"finished: {len(records)} of {total} properties"
    if records:
        finished += f" ({len(records) - failed} held, {failed} failed)"
    interrupted(what, finished)


def _select_explorable(names: list[str]) -> list[registry.Property]:
    try:
        props = registry.select(names)
    except registry.UnknownProperty as e:
        raise input_error(e) from None
    named = set(names)
    for prop in props:
        if prop.machine is None and prop.strategy is None and prop.name in named:
            raise InputError(f"property {prop.name!r} has nothing to explore with; "
                             "replay its scenarios with 'streamproof replay'")
    return [p for p in props if p.machine is not None or p.strategy is not None]


@dataclasses.dataclass
class _CheckRecord:
    prop: registry.Property
    exploration: Any  # properties.explore.Exploration
    seed: int
    scenario: Any = None
    scenario_file: Path | None = None
    reproduced: bool | None = None

    def save(self, out: Path, examples: int, minimal: bool = True) -> None:
        """Writes the minimal scenario (atomically) and replays the file (a failure that does not
        replay from its file is a streamproof bug, so it is checked here, at once). Not
        ``minimal``: a failure as found, its shrinking interrupted (written, not replayed)."""
        e, prop = self.exploration, self.prop
        what = "Minimal counterexample" if minimal else "Counterexample (not minimised: the run was interrupted)"
        self.scenario = dataclasses.replace(
            e.scenario, name=f"{prop.name}-{self.seed}",
            description=f"{what} found by 'streamproof check {prop.name} --seed "
                        f"{self.seed} --examples {examples}': {e.message}"[:1000],
        )
        try:
            out.mkdir(parents=True, exist_ok=True)
            path = out / f"{prop.name}-{self.seed}.json"
            write_atomically(path, dump_scenario(self.scenario, indent=2))
        except OSError as err:
            raise InputError(f"cannot write the failing scenario to {out}: {err.strerror or err}") from None
        self.scenario_file = path
        if not minimal:
            return
        try:
            self.reproduced = not replay(load_scenario_file(path)).holds
        except (ScenarioError, NothingToCheck, registry.UnknownProperty):
            self.reproduced = False

    def reach(self) -> dict[str, int]:
        counts = dict(self.exploration.reach)
        ordered = {label: counts.pop(label, 0) for label in self.prop.reachability}
        ordered.update(sorted(counts.items()))
        return ordered

    def reach_examples(self) -> dict[str, int]:
        return {label: self.exploration.reach_examples.get(label, 0) for label in self.reach()}

    def to_json(self) -> dict:
        e = self.exploration
        return {
            "property": self.prop.name, "family": self.prop.family, "verdict": e.verdict,
            "examples": e.examples, "steps": e.steps, "seconds": round(e.seconds, 3),
            "seed": self.seed, "reach": self.reach(), "reach_examples": self.reach_examples(),
            "invariant": e.invariant,
            "message": e.message or None,
            "scenario": self.scenario.to_dict() if self.scenario is not None else None,
            "scenario_file": str(self.scenario_file) if self.scenario_file is not None else None,
            "reproduced": self.reproduced,
        }


def _print_check_report(records: list[_CheckRecord], summary: bool = True, detail: bool = False) -> None:
    """The result table (with how many of its declared cases each property reached), the cases
    never reached, the failures; ``detail``: every reachability label with its counts."""
    rows = [(r.prop.name, r.prop.family, "held" if r.exploration.holds else "FAILED", r.exploration.examples,
             r.exploration.steps, f"{r.exploration.seconds:.2f}", _cases(r)) for r in records]
    for line in table(("property", "family", "verdict", "examples", "steps", "seconds", "cases reached"),
                      rows, {3, 4, 5}):
        click.echo(line)
    click.echo("")
    click.echo("examples: run as asked (a failed property: up to its first failure; shrinking's re-runs not counted)")
    never = [(r.prop.name, label) for r in records for label in r.prop.reachability if not r.reach().get(label)]
    for name, label in never:
        click.echo(f"never reached: {name}: {label}")
    if not detail:
        click.echo("cases reached: declared cases reached at least once (--reach lists every case with its counts)")
    else:
        click.echo("reachability: events (times a case was reached, every run and shrinking included: one example "
                   "may reach a case many times), then how many of the examples reached it")
    for r in records if detail else ():
        reach, in_examples = r.reach(), r.reach_examples()
        click.echo("")
        click.echo(f"reachability of {r.prop.name}:")
        if not reach:
            click.echo("  (no labels declared or reached)")
        expected = set(r.prop.reachability)
        rows = [(f"  {label}", count, "events" if count != 1 else "event",
                 f"in {in_examples[label]} of {r.exploration.examples} examples",
                 "(never reached)" if count == 0 and label in expected else "")
                for label, count in reach.items()]
        for line in table(("", "", "", "", ""), rows, {1})[1:]:
            click.echo(line)
    for r in records:
        e = r.exploration
        if e.holds:
            continue
        click.echo("")
        click.echo(f"{r.prop.name} FAILED")
        click.echo(f"  invariant: {e.invariant}")
        click.echo(f"  message:   {e.message}")
        if r.scenario_file is None:
            click.echo("  scenario:  none recorded (the failure happened before any step)")
            continue
        click.echo(f"  scenario:  {r.scenario_file} ({len(r.scenario.steps)} steps)")
        click.echo(f"  replay:    streamproof replay {shlex.quote(str(r.scenario_file))}")
        if not r.reproduced:
            click.echo("  warning:   replaying this file does not reproduce the failure "
                       "(a streamproof bug: please report it)")
    if not summary:
        return
    failed = sum(not r.exploration.holds for r in records)
    click.echo("")
    click.echo(f"{len(records) - failed} of {len(records)} properties held" if not failed
               else f"FAILED: {failed} of {len(records)} properties failed")


# ----------------------------------------------------------------------------------- replay

@cli.command("replay")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("--inject", metavar="VARIANT", default=None,
              help="apply this bug-zoo variant while replaying (a counterexample of it must fail)")
@json_option
def replay_command(files: tuple[str, ...], inject: str | None, as_json: bool) -> None:
    """Replay scenario files: check each against its property (or every property of its family)
    and compare the implementation with the trace it carries (flink_observed, expected)."""
    patch = _injected_patch(inject)
    held = failed = 0
    try:
        with Status("replay", len(files)) as status:
            for index, file in enumerate(files):
                status.begin(index, file)
                status.detail = f"{held} held, {failed} failed"
                _refuse_certify_counterexample(file)
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


def _injected_patch(inject: str | None):
    """The patch of the bug-zoo variant ``--inject`` names (no-op without one); an unknown name
    is bad input."""
    from contextlib import nullcontext

    if inject is None:
        return nullcontext
    from streamproof.properties.bugzoo import get_variant
    try:
        return get_variant(inject).patch
    except KeyError as e:
        raise input_error(e) from None


def _refuse_certify_counterexample(file: str) -> None:
    """A counterexample of ``streamproof certify`` runs the user's operator, which only
    ``certify --replay`` loads: bad input here, with the command that replays it."""
    try:
        doc = json.loads(Path(file).read_bytes().decode("utf-8-sig"))
    except (OSError, ValueError):
        return  # load_scenario_file says what is wrong
    if not isinstance(doc, dict):
        return
    params = doc.get("params") if isinstance(doc.get("params"), dict) else {}
    operator, prop = params.get("operator"), doc.get("property")
    if isinstance(operator, str) and operator.startswith("user:") or isinstance(prop, str) and prop.startswith("certify."):
        spec = operator[len("user:"):] if isinstance(operator, str) and operator.startswith("user:") else "MODULE:CLASS"
        raise InputError(f"{file}: a counterexample of 'streamproof certify' (it runs your operator); replay it with: "
                         f"streamproof certify {shlex.quote(spec)} --replay {shlex.quote(file)}")


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


# ---------------------------------------------------------------------------------- explain

@cli.command("explain")
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

    from streamproof.explain import explain, render_html, render_text
    from streamproof.properties import certify_job as cj

    patch = _injected_patch(inject)
    if cj.is_job_scenario(file):
        timeline = _job_timeline(file, job)
    else:
        _refuse_certify_counterexample(file)
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
    from streamproof.properties import certify_job as cj
    from streamproof.explain_job import job_timeline

    try:
        scenario, named, prop = cj.load_scenario(file)
        target = job or named
        if target is None:
            raise InputError(f"{file}: a job counterexample that names no job: give --job JOB.py")
        return job_timeline(cj.load_job(target), scenario, file, prop)
    except cj.JobCertifyError as e:
        raise InputError(f"{file}: {e}") from None


# ----------------------------------------------------------------------------------- bugzoo

@cli.command()
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


def _cases(record: _CheckRecord) -> str:
    declared = record.prop.reachability
    if not declared:
        return "-"
    reach = record.reach()
    return f"{sum(1 for label in declared if reach.get(label))}/{len(declared)}"


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


for _command in (campaign, report, prove, certify, conform, snapshot, examples):
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

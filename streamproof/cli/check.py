"""``streamproof check``: explores properties with Hypothesis; a failure is shrunk to a minimal
scenario, written to --out and replayed from its file at once; the report is a table of verdicts
with the reachability cases each property reached."""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path
from typing import Any

import click

from streamproof import outputs
from streamproof.cli.common import (
    EXIT_FAILED, EXIT_HELD, InputError, Status, emit_json, examples_option, input_error, interrupted,
    json_option, plural, profile_defaults, seed_option, table, write_atomically,
)
from streamproof.properties import registry
from streamproof.properties.scenario import ScenarioError, dump_scenario, load_scenario_file
from streamproof.replayer import NothingToCheck, replay

DEFAULT_OUT = outputs.default("check")


@click.command()
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


def _cases(record: _CheckRecord) -> str:
    declared = record.prop.reachability
    if not declared:
        return "-"
    reach = record.reach()
    return f"{sum(1 for label in declared if reach.get(label))}/{len(declared)}"

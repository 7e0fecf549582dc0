"""The certificate of a certified operator (``streamproof certify module:Class --out DIR``):
certificate.json, certificate.md, certificate.html, and one counterexample scenario file per
refused property with its replay command and trace; :func:`check_out` checks ``--out`` first."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from streamproof.properties import certify_checks as checks
from streamproof.properties.certify_input import PLANNED_INPUTS, SEARCH_EXAMPLES
from streamproof.properties import certify_runs
from streamproof.properties import html_pages
from streamproof.properties.certify_load import CertifyError, Subject, _one_line
from streamproof.properties.scenario import Scenario, dump_scenario
from streamproof.properties.files import write_atomically


# -- where the certificate goes ------------------------------------------------------------
def check_out(out: str | os.PathLike) -> Path:
    """``out`` as a directory the certificate can go to, checked before any work: an existing
    writable directory, or a new one in an existing writable directory (never a chain of
    directories: a typo must not create a tree somewhere, e.g. at the filesystem root)."""
    path = Path(out)
    if path.exists():
        if not path.is_dir():
            raise CertifyError(f"--out {out}: exists and is not a directory")
        if not os.access(path, os.W_OK | os.X_OK):
            raise CertifyError(f"--out {out}: directory not writable")
        return path
    parent = path.absolute().parent
    if not parent.exists():
        raise CertifyError(f"--out {out}: its parent directory {parent} does not exist (create it first)")
    if not parent.is_dir():
        raise CertifyError(f"--out {out}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CertifyError(f"--out {out}: cannot create it, {parent} is not writable")
    return path


# -- the certificate -----------------------------------------------------------------------
SEARCH_NOTE = (
    f"{SEARCH_EXAMPLES} burst scenarios whatever the examples asked for, each screening up to {PLANNED_INPUTS} inputs "
    "of the operator's own records with the operator alone (the split search of certify.interruptible-timers: "
    "firings split; the restore search of the others: a failure while the records after a watermark run); the "
    "examples asked for run after it when it held.")


@dataclass
class Certificate:
    operator: str
    examples: int
    seed: int
    results: list = field(default_factory=list)
    versions: dict = field(default_factory=dict)
    source: dict = field(default_factory=dict)
    command: str = ""
    date: str = ""
    input: dict = field(default_factory=dict)
    findings: list = field(default_factory=list)

    @property
    def holds(self) -> bool:
        return all(r["verdict"] == "held" for r in self.results)

    @property
    def status(self) -> str:
        if any(r["verdict"] == "failed" for r in self.results):
            return "not certified"
        if any(r["verdict"] == "not exercised" for r in self.results):
            return "not exercised"
        return "certified"

    def to_json(self) -> dict:
        return {"operator": self.operator, "certified": self.holds, "status": self.status, "date": self.date,
                "command": self.command, "examples": self.examples, "seed": self.seed, "source": self.source,
                "input": self.input, "results": self.results, "findings": self.findings, "versions": self.versions}

    def markdown(self) -> str:
        lines = [f"# Certificate: `{self.operator}`", "",
                 f"**{self.status}** on {self.date}: {self.examples} job scenarios asked for per property, seed "
                 f"{self.seed}, interruptible timers on, checkpoints, failures and rescales, against Flink's "
                 "exactly-once promise (the committed output equals a failure-free run's).", "",
                 f"*examples* is the number of job scenarios each property ran: the {self.examples} asked for when it "
                 "held; when it failed, those up to and including the first failing one (the re-runs that minimised "
                 "the counterexample are not counted). On your records each property first runs a planned search: "
                 f"{SEARCH_NOTE}", "",
                 f"- command: `{self.command}`",
                 f"- source: `{self.source.get('file')}` sha256 `{self.source.get('sha256')}`"
                 + (f", git commit `{self.source['git_commit']}`" if self.source.get("git_commit") else ""),
                 f"- input: {', '.join(f'{k} `{v}`' for k, v in self.input.items() if v is not None)}",
                 "- versions: " + ", ".join(f"{k} {v}" for k, v in self.versions.items()), "",
                 "| property | verdict | examples | seconds | invariant | counterexample |", "|---|---|---|---|---|---|"]
        for r in self.results:
            search = r.get("search")
            examples = r["examples"] if search is None else (
                f"{r['examples']} ({search['name']})" if search["refused"]
                else f"{r['examples']} + {search['examples']} {search['name']}")
            lines.append(f"| `{r['property']}` | {r['verdict']} | {examples} | {r['seconds']:.1f} | "
                         f"{r['invariant'] or ''} | {r['scenario_file'] or ''} |")
        lines += ["", "## Coverage (of each property's examples, how many exercised each case)", "",
                  "| property | " + " | ".join(checks.COVERAGE) + " |", "|---|" + "---|" * len(checks.COVERAGE)]
        for r in self.results:
            lines.append(f"| `{r['property']}` | " + " | ".join(str(r["coverage"].get(c, 0)) for c in checks.COVERAGE) + " |")
        lines += ["", "A case counts once per scenario however often it happened in it (the faulty run and its "
                      "failure-free references); each number is at most that row's examples."]
        details = [r for r in self.results if r["message"]]
        if details:
            lines += ["", "## Why"] + [f"- `{r['property']}`: {r['message']}" + (
                f" Replay: `{r['replay']}`" if r.get("replay") else "") for r in details]
        for r in self.results:
            if r.get("trace"):
                lines += ["", f"## `{r['property']}`: the counterexample, faulty run beside a failure-free run", "",
                          "```", *r["trace"], "```"]
        if self.findings:
            lines += ["", "## Findings (not faults)"] + [f"- {f['finding']} ({f['scenarios']} scenarios): {f['hint']}"
                                                          for f in self.findings]
        return "\n".join(lines) + "\n"

    def html(self) -> str:
        """The certificate's Markdown rendered as a page, with a status banner."""
        return html_pages.certificate_page(self.markdown(), self.status, f"Certificate {self.operator}")

    def write(self, out: Path) -> None:
        out.mkdir(exist_ok=True)  # its parent was checked (check_out): no tree of new directories
        write_atomically(out / "certificate.json", json.dumps(self.to_json(), indent=2) + "\n")
        write_atomically(out / "certificate.md", self.markdown())
        write_atomically(out / "certificate.html", self.html())


def _source_info(path: str | None) -> dict:
    if not path or not os.path.exists(path):
        return {"file": path, "sha256": None, "git_commit": None}
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    commit = None
    try:
        proc = subprocess.run(["git", "rev-parse", "HEAD"], cwd=os.path.dirname(os.path.abspath(path)),
                              capture_output=True, text=True, timeout=5)
        if proc.returncode == 0:
            commit = proc.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {"file": os.path.relpath(path) if not os.path.relpath(path).startswith("..") else path,
            "sha256": digest, "git_commit": commit}


def _command(subject: Subject, examples: int, seed: int) -> str:
    if subject.not_replayable is not None:
        return (f"streamproof.certify({subject.spec}, examples={examples}, seed={seed}) from Python (not from the "
                f"command line: it is {subject.not_replayable})")
    return f"streamproof certify {subject.spec} --examples {examples} --seed {seed}"


def _replay_command(subject: Subject, path: str) -> str:
    if subject.not_replayable is not None:
        return (f"not replayable from the command line: {subject.spec} is {subject.not_replayable} (at module "
                f"level it would be: streamproof certify module:Class --replay {path})")
    parts = ["streamproof", "certify", subject.spec, "--replay", path]
    if subject.args is not None:
        parts += ["--args", json.dumps(subject.args)]
    return " ".join(parts)


def _trace(scenario: Scenario) -> list[str]:
    """The minimised counterexample as text: its steps, then the faulty run's and a failure-free
    run's committed output and job events, side by side."""
    r = certify_runs.runs(scenario)
    lines = ["steps:"] + [f"  {i:3}  {json.dumps(s.to_json(), separators=(',', ':'))}" for i, s in enumerate(scenario.steps)]
    for title, run in (("faulty run", r.faulty), ("failure-free run (same schedule)", r.off(0))):
        lines.append(f"{title}:")
        if isinstance(run, str):
            lines.append(f"  error: {run}")
            continue
        lines += [f"  event {e[0]} {' '.join(map(str, e[1:]))}" for e in run.events]
        lines += [f"  committed {certify_runs.readable(certify_runs.canonical(v))}" for v in run.committed[:40]]
    return lines


def _write_counterexample(subject: Subject, prop: str, e, out) -> str:
    Path(out).mkdir(exist_ok=True)  # its parent was checked (check_out)
    path = str(Path(out) / f"{prop}.json")
    write_atomically(Path(path), dump_scenario(dataclasses.replace(
        e.scenario, name=f"certify-{prop}", description=_one_line(f"{subject.spec}: {e.message}", 500))))
    return path

"""The certificate of a certified job (``streamproof certify job.py --out DIR``): certificate.json,
certificate.md, certificate.html (the Markdown rendered, :func:`write_html`) and one
counterexample scenario file per refused property (replayed with ``streamproof certify job.py
--replay FILE``)."""

from __future__ import annotations

import datetime
import hashlib
import json
import platform
import shlex
from pathlib import Path

from typing import Any

from streamproof.properties.certify_job import JobCertificate, certify_job
from streamproof.properties.certify_job_runs import JobSubject, describe_scenario, load_job
from streamproof.properties.files import write_atomically
from streamproof.properties.html_pages import certificate_page


def _source(path: str) -> dict:
    try:
        data = Path(path).read_bytes()
    except OSError:
        return {"file": path}
    return {"file": path, "sha256": hashlib.sha256(data).hexdigest()}


def write(subject: JobSubject, certificate: JobCertificate, out: Path, command: str = "", examples: int = 0,
          seed: int = 0) -> Path:
    """Writes the certificate and its counterexamples into ``out``; returns certificate.md's path."""
    from importlib import metadata

    import hypothesis

    try:
        version = metadata.version("streamproof")
    except metadata.PackageNotFoundError:
        version = "unknown"
    out.mkdir(exist_ok=True)
    files = {}
    for prop, scenario in certificate.counterexamples.items():
        path = out / f"{prop}.json"
        document = {**scenario.to_json(), "job": str(Path(subject.pipeline.file or subject.target)), "property": prop,
                    "message": certificate.results[prop]["message"]}
        write_atomically(path, json.dumps(document, indent=1, default=str) + "\n")
        files[prop] = str(path)
    document = certificate.to_json()
    document.update({"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                     "command": command, "examples": examples, "seed": seed,
                     "source": _source(subject.pipeline.file or subject.target),
                     "counterexample_files": files,
                     "versions": {"streamproof": version,
                                  "hypothesis": hypothesis.__version__, "python": platform.python_version()}})
    write_atomically(out / "certificate.json", json.dumps(document, indent=1, default=str) + "\n")
    md = out / "certificate.md"
    write_atomically(md, markdown(subject, certificate, files, document))
    write_html(out, document["status"])
    return md


def write_html(out: Path, status: str) -> Path:
    """certificate.html from ``out``/certificate.md (again after a section is added to it)."""
    text = (out / "certificate.md").read_text(encoding="utf-8")
    target = text.partition("\n")[0].removeprefix("# Certificate: ")
    path = out / "certificate.html"
    write_atomically(path, certificate_page(text, status, f"Certificate {target}"))
    return path


def markdown(subject: JobSubject, certificate: JobCertificate, files: dict, document: dict) -> str:
    lines = [f"# Certificate: {subject.target}", "", f"**{certificate.status}** ({document['date']})", ""]
    if document.get("command"):
        lines += [f"Command: `{document['command']}`", ""]
    source = document["source"]
    lines += [f"Job file: `{source['file']}`" + (f" (SHA-256 `{source['sha256']}`)" if "sha256" in source else ""), "",
              "## The pipeline", ""]
    lines += [f"{i + 1}. {line}" for i, line in enumerate(certificate.pipeline)]
    lines += ["", "## Verdicts", "", "| property | verdict | scenarios | message |", "|---|---|---|---|"]
    for prop, result in certificate.results.items():
        message = result["message"].replace("|", "\\|")
        lines.append(f"| `{prop}` | {result['verdict']} | {result['scenarios']} | {message} |")
    if certificate.operators:
        lines += ["", "## Keyed operators", "", "| operator | what | built at | interruptible timers (FLIP-443) |",
                  "|---|---|---|---|"]
        for name, o in certificate.operators.items():
            lines.append(f"| {name} | {o['kind']} | {o['line']} | {o['interruptible timers']} |")
    lines += ["", "## Coverage per operator", "", "| operator | case | scenarios |", "|---|---|---|"]
    for name, cases in certificate.coverage.items():
        for case, n in sorted(cases.items()):
            lines.append(f"| {name} | {case} | {n} |")
    for name, missing in certificate.not_exercised.items():
        lines.append(f"| {name} | never reached: {', '.join(missing)} | 0 |")
    if certificate.notes:
        lines += ["", "## What the job's own input never reaches", ""]
        lines += [f"- {name}: {note}" for name, notes in certificate.notes.items() for note in notes]
    if certificate.findings:
        lines += ["", "## Findings (not refusals)", ""]
        lines += [f"- {f['finding']} ({f['scenarios']} scenarios)" for f in certificate.findings]
    if files:
        lines += ["", "## Counterexamples", ""]
        for prop, path in files.items():
            lines += [f"### `{prop}`", "", certificate.results[prop]["message"], "", "The scenario:", ""]
            lines += [f"- {step}" for step in describe_scenario(subject, certificate.counterexamples[prop])]
            lines += ["", f"File `{path}`: replay with "
                      f"`streamproof certify {shlex.quote(subject.target)} --replay {shlex.quote(path)}`, "
                      f"draw it (the job's operators as lanes) with `streamproof explain {shlex.quote(path)}`", ""]
    lines += ["", f"{certificate.scenarios} scenarios in {certificate.seconds:.1f} s.", ""]
    return "\n".join(lines)


def certify(target: Any, examples: int = 50, seed: int = 0, out: str | None = None) -> JobCertificate:
    """Certifies the job ``target`` (see :func:`load_job`); with ``out``, writes the certificate."""
    subject = target if isinstance(target, JobSubject) else load_job(target)
    certificate = certify_job(subject, examples, seed)
    if out is not None:
        write(subject, certificate, Path(out), examples=examples, seed=seed)
    return certificate

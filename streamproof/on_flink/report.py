"""The certificate's section "On Apache Flink x.y" (certificate.md) and its ``on_flink`` entry
(certificate.json), added after the simulator's certificate is written."""

from __future__ import annotations

import json
from pathlib import Path

from streamproof.on_flink.oracle import FlinkReport


def verdict_line(report: FlinkReport) -> str:
    """One line: what Flink showed."""
    faults = [f for f in report.faults if f.verdict != "not reached"]
    differs = [f for f in report.faults if f.verdict in ("differs", "failed")]
    lines = f"Apache Flink {report.version}: {len(report.failure_free)} failure-free runs, {len(faults)} with a failure"
    if differs:
        return f"{lines}: {len(differs)} committed an output no failure-free run gives"
    text = f"{lines}: every committed output equals a failure-free one"
    if not report.faithful:
        text += f"; {sum(not ok for ok, _ in report.fidelity)} failure-free Flink output(s) the simulator does not give"
    return text


WHY_NOT_SHOWN = {
    "job.interruptible-timers": "PyFlink's Python operators fire their timers without interruption (FLIP-443 "
                                "splits firings of Java operators that opt in), so no run on Flink splits one",
    "job.same-output": "the failure the counterexample needs (its point, its checkpoint, its schedule) is not among "
                       "the ones injected here; the counterexample replays it on the simulator",
}


def beside(report: FlinkReport, refused: list[str]) -> list[str]:
    """For each property the simulator refused: whether Flink showed the problem, and if not why."""
    shows = not report.exactly_once
    return [f"`{prop}` refused by the simulator: " + (
        "Flink also committed an output no failure-free run gives" if shows and prop == "job.same-output" else
        "not shown by Flink's runs: " + WHY_NOT_SHOWN.get(prop, "no run on Flink reached it")) for prop in refused]


def markdown(report: FlinkReport, command: str = "", refused: list[str] = ()) -> str:
    lines = [f"## On Apache Flink {report.version}", "",
             f"The job as written ran on Apache Flink {report.version}'s local MiniCluster (PyFlink, default "
             f"parallelism {report.parallelism}, checkpoints every 200 ms unless the job sets them, a fixed-delay "
             "restart strategy), each sink replaced by an exactly-once `FileSink` read back from its finished files.",
             ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    lines += [f"**{verdict_line(report)}.**", "", "| run | failure injected | committed output |", "|---|---|---|"]
    for k, run in enumerate(report.failure_free):
        sizes = ", ".join(str(sum(o.values())) for o in run.outputs) or "none"
        lines.append(f"| failure-free {k + 1} | none | values per sink: {sizes} |")
    for f in report.faults:
        where = f"{f.function}: call {f.fault[2]} ({f.fault[1]})" if f.fault else "-"
        lines.append(f"| fault | {where} | {f.verdict}: {f.detail.replace('|', '/')} |")
    if refused:
        lines += [""] + [f"- {line}" for line in beside(report, list(refused))]
    lines += ["", "Simulator fidelity (every distinct failure-free output of Flink, and the failure-free simulator "
              "run that gives it):", ""]
    for ok, how in report.fidelity:
        lines.append(f"- {'produced' if ok else 'NOT produced'}: {how}")
    per_run = report.run_seconds
    if per_run:
        lines += ["", f"{len(per_run)} runs on Flink in {report.seconds:.1f} s (per run {min(per_run):.1f}-"
                  f"{max(per_run):.1f} s; the first of each client includes starting the JVM)."]
    return "\n".join(lines) + "\n"


def append(out: Path, report: FlinkReport, command: str = "", refused: list[str] = ()) -> None:
    """Adds the section to ``out``/certificate.md and the entry to certificate.json; renders
    certificate.html again."""
    from streamproof.properties.certify_job_report import write_html
    from streamproof.properties.files import write_atomically

    md = out / "certificate.md"
    text = md.read_text() if md.exists() else ""
    path = out / "certificate.json"
    document = json.loads(path.read_text()) if path.exists() else {}
    document["on_flink"] = report.to_json()
    if not report.exactly_once and document.get("status") in ("certified", "not exercised"):
        text = text.replace(f"**{document['status']}**", "**not certified (on Apache Flink)**", 1)
        document.update(status="not certified (on Apache Flink)", certified=False)
    document["on_flink"]["beside_refusals"] = beside(report, list(refused))
    write_atomically(md, text.rstrip("\n") + "\n\n" + markdown(report, command, refused))
    write_atomically(path, json.dumps(document, indent=1, default=str) + "\n")
    write_html(out, document.get("status") or "not certified")

"""``streamproof report DIR``: a Markdown and an HTML report of the campaigns in a results
directory, with plots. It reads the Parquet files with pyarrow (no JVM needed, so it also works
where Spark does not run) and deduplicates failures exactly as the campaign driver does: by
signature, the smallest seed representing each.

Written to ``DIR/_report/`` unless told otherwise: ``report.md``, ``report.html`` (from
``templates/report.html.j2``; with an ``explain`` hook, each failure's run drawn as a timeline), one
``seed-time-CAMPAIGN.png`` (time per seed: a box per property over its held seeds, the others as
markers) and one ``throughput-CAMPAIGN.png`` (seeds done over time) per campaign, and the
representative failing scenario of every signature in ``failures/CAMPAIGN/PROPERTY-SEED.json``.

Size: one command, ``streamproof report``, from Parquet rows to files; the plots are what to move out next.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from markupsafe import Markup

from streamproof.properties import html_pages
from streamproof.properties.files import write_atomically
from streamproof.spark_harness import spec as specs
from streamproof.spark_harness.spec import is_local_path, local_path, result_status, split_by_verdict  # noqa: F401

REPORT_DIR = "_report"


class ReportError(ValueError):
    """No results to report on (one line)."""


# ----------------------------------------------------------------------------------- reading

def _partitioning():
    import pyarrow as pa
    import pyarrow.dataset as ds

    return ds.partitioning(pa.schema([("campaign", pa.string()), ("property", pa.string()), ("chunk", pa.int32())]),
                           flavor="hive")


def read_rows(results: str | os.PathLike, campaign: str | None = None):
    """The result rows as a pandas DataFrame (every column of ``spec.COLUMNS``)."""
    import pyarrow.dataset as ds

    from streamproof.spark_harness.executor import arrow_schema

    root = Path(results)
    if not root.is_dir():
        raise ReportError(f"{results}: not a directory of campaign results")
    dirs = [root / f"campaign={campaign}"] if campaign else sorted(root.glob("campaign=*"))
    files = sorted(str(f) for d in dirs for f in d.rglob("*.parquet")
                   if not any(part.startswith((".", "_")) for part in f.relative_to(root).parts))
    if not files:
        raise ReportError(f"{results}: no campaign results" + (f" for campaign {campaign!r}" if campaign else ""))
    try:
        dataset = ds.dataset(files, format="parquet", partitioning=_partitioning(), schema=arrow_schema(),
                             partition_base_dir=str(root))
        table = dataset.to_table()
    except Exception as e:  # noqa: BLE001
        raise ReportError(f"{results}: cannot read the results: {' '.join(str(e).split())[:300]}") from None
    return table.to_pandas()


def _texts(path: Path) -> list[str]:
    if not path.is_dir():
        return []
    lines = []
    for part in sorted(path.glob("part-*")):
        lines += [line for line in part.read_text(encoding="utf-8").splitlines() if line.strip()]
    return lines


def read_meta(results: str | os.PathLike, campaign: str) -> tuple[dict | None, list[dict]]:
    base = Path(results) / "_campaigns" / campaign
    spec_lines = _texts(base / "spec")
    spec = json.loads(spec_lines[0]) if spec_lines else None
    runs = []
    if (base / "runs").is_dir():
        for run_dir in sorted((base / "runs").iterdir()):
            runs += [json.loads(line) for line in _texts(run_dir)]
    runs.sort(key=lambda r: r.get("started", 0))
    if spec is not None and spec.get("created"):  # records of an earlier campaign of this name are not its runs
        runs = [r for r in runs if r.get("started", 0) >= spec["created"]]
    return spec, runs


def _ended(run: dict) -> str:
    return run.get("status") or ("completed" if run.get("completed") else "not finished")


def run_status(run: dict) -> str:
    """How a run ended, for the report: old records have no status (completed or not)."""
    status = _ended(run)
    return {"running": "did not finish (killed, or still running)", "interrupted": "interrupted (Ctrl-C)",
            "failed": "stopped by an error", "incomplete": "ended with seeds missing"}.get(status, status)


# ---------------------------------------------------------------------------------- analysis

@dataclass
class CampaignReport:
    name: str
    spec: dict | None
    runs: list[dict]
    per_property: list[dict]
    failures: list[dict]
    exactly_once: bool
    problems: list[str]
    rows: int
    seed_seconds: float
    plots: dict[str, str] = field(default_factory=dict)
    coverage: dict | None = None
    timeouts: list[dict] = field(default_factory=list)   # per signature; never failures
    errors: list[dict] = field(default_factory=list)     # per signature; no scenario

    @property
    def status(self) -> str:
        """``held``, ``failed`` (a seed failed or errored), ``timeout`` or ``incomplete``."""
        return result_status(self.per_property, self.exactly_once)


def analyse(name: str, df, spec: dict | None, runs: list[dict]) -> CampaignReport:
    problems = []
    per_property = []
    for prop, group in sorted(df.groupby("property"), key=lambda kv: kv[0]):
        counts = group["verdict"].value_counts()
        row = {"property": prop, "rows": len(group), "distinct_seeds": group["seed"].nunique(),
               **{v: int(counts.get(v, 0)) for v in specs.VERDICTS},
               "signatures": int(group["signature"].dropna().nunique()),
               "examples": int(group["examples"].sum()), "steps": int(group["steps"].sum()),
               "seconds": float(group["duration"].sum()), "max_seconds": float(group["duration"].max())}
        per_property.append(row)
        if row["rows"] != row["distinct_seeds"]:
            problems.append(f"{prop}: {row['rows'] - row['distinct_seeds']} duplicated seeds")
        if spec is not None:
            expected = spec["seed_end"] - spec["seed_start"]
            if row["distinct_seeds"] != expected:
                problems.append(f"{prop}: {row['distinct_seeds']} of {expected} seeds present")
    if spec is not None:
        for prop in spec["properties"]:
            if prop not in {p["property"] for p in per_property}:
                problems.append(f"{prop}: no results")
    failures = []
    failed = df[df["verdict"] != "held"].sort_values(["property", "seed"])
    for (prop, verdict, signature), group in failed.groupby(["property", "verdict", "signature"], dropna=False):
        first = group.iloc[0]  # the smallest seed represents the signature
        failures.append({"property": prop, "verdict": verdict, "signature": signature, "seeds": len(group),
                         "seed": int(first["seed"]), "signature_text": first["signature_text"],
                         "invariant": first["invariant"], "message": first["message"],
                         "scenario": first["scenario"], "reproduce": first["reproduce"]})
    failures.sort(key=lambda f: (f["property"], f["seed"]))
    failures, timeouts, errors = split_by_verdict(failures)
    coverage = next((r.get("coverage") for r in reversed(runs) if r.get("coverage")), None)
    return CampaignReport(name, spec, runs, per_property, failures, not problems, problems, len(df),
                          float(df["duration"].sum()), coverage=coverage, timeouts=timeouts, errors=errors)


_atomic_write = write_atomically  # whole or not at all


def write_failures(failures: list[dict], directory: Path) -> None:
    """Writes the representative scenario of each signature; sets ``failure["file"]``."""
    for f in failures:
        if not f.get("scenario"):
            f["file"] = None
            continue
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{f['property']}-{f['seed']}.json"
        from streamproof.properties.scenario import dump_scenario, load_scenario

        _atomic_write(path, dump_scenario(load_scenario(f["scenario"]), indent=2))
        f["file"] = str(path)


# ------------------------------------------------------------------------------------- plots

def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def _save(fig, path: Path) -> None:
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    _atomic_write(path, buffer.getvalue())


# verdict -> marker, colour, legend label of its seeds in the time-per-seed plot (held: the box)
SEED_MARKERS = (("failed", "o", "tab:red", "failed (shrinking included)"), ("error", "D", "tab:purple", "error"),
                ("timeout", "x", "black", "timeout"))


def _plots(report: CampaignReport, df, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.lines import Line2D

    safe = _safe(report.name)
    # Time per seed: one box per property over its held seeds, sorted by median (any number of
    # properties); the other seeds are markers at their time (a failing seed shrinks, so it is slow).
    groups = sorted(df.groupby("property"), key=lambda kv: (float(kv[1]["duration"].median()), kv[0]))
    names = [prop for prop, _ in groups]
    durations = lambda frame: np.maximum(frame["duration"].to_numpy(dtype=float), 1e-4)  # noqa: E731
    held = [durations(group[group["verdict"] == "held"]) for _, group in groups]
    fig, ax = plt.subplots(figsize=(8, 1.6 + 0.32 * len(names)))
    box = {"whis": (0, 100), "widths": 0.6, "medianprops": {"color": "black"}, "showfliers": False}
    positions = [y for y, d in enumerate(held, 1) if len(d)]
    if positions:
        data = [held[y - 1] for y in positions]
        try:
            ax.boxplot(data, positions=positions, orientation="horizontal", **box)  # matplotlib >= 3.10
        except TypeError:
            ax.boxplot(data, positions=positions, vert=False, **box)
    shown = set()
    for y, (_, group) in enumerate(groups, 1):
        for verdict, marker, colour, label in SEED_MARKERS:
            times = durations(group[group["verdict"] == verdict])
            if len(times):
                ax.plot(times, [y] * len(times), marker, color=colour, markersize=6, alpha=0.8, linestyle="none",
                        label=None if verdict in shown else label)
                shown.add(verdict)
    ax.set_yticks(range(1, len(names) + 1), names, fontsize="small")
    ax.set_ylim(0.4, len(names) + 0.6)
    every = durations(df)
    if float(every.max()) / max(float(every.min()), 1e-4) > 50:
        ax.set_xscale("log")
    ax.set_xlabel("seconds per seed on the executor (box: held seeds, quartiles; whiskers: min and max)")
    ax.set_title(f"time per seed: {report.name} (sorted by median)")
    ax.grid(axis="x", alpha=0.3)
    order = [label for _, _, _, label in SEED_MARKERS]
    marked = sorted(ax.get_legend_handles_labels()[0], key=lambda h: order.index(h.get_label()))
    handles = [Line2D([], [], color="black", marker="s", markerfacecolor="white", linestyle="none",
                      label="held (box)"), *marked]
    height = fig.get_figheight()
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize="small", frameon=False)
    fig.tight_layout(rect=(0, 0.4 / height, 1, 1))  # the legend below the axes, never over the boxes
    path = out / f"seed-time-{safe}.png"
    _save(fig, path)
    plt.close(fig)
    report.plots["seed_time"] = path.name

    finished = df["finished"].dropna().sort_values()
    if len(finished) > 1:
        fig, ax = plt.subplots(figsize=(7, 3.2))
        t0 = finished.iloc[0]
        ax.plot((finished - t0).to_numpy(), range(1, len(finished) + 1))
        ax.set_xlabel("seconds since the first seed ended (gaps: between runs)")
        ax.set_ylabel("seeds done")
        ax.set_title(f"throughput: {report.name}")
        fig.tight_layout()
        path = out / f"throughput-{safe}.png"
        _save(fig, path)
        plt.close(fig)
        report.plots["throughput"] = path.name


# ------------------------------------------------------------------------------- rendering

@dataclass(frozen=True)
class Link:
    """A table cell that links (a relative path in both renderings)."""

    text: str
    href: str


class Doc:
    """Blocks rendered as Markdown and, through ``templates/report.html.j2``, as HTML."""

    def __init__(self) -> None:
        self.blocks: list[dict] = []

    def h(self, level: int, text: str, anchor: str | None = None) -> None:
        self.blocks.append({"kind": "h", "level": level, "text": text, "anchor": anchor})

    def p(self, text: str) -> None:
        self.blocks.append({"kind": "p", "text": text})

    def banner(self, text: str, cls: str) -> None:
        """A paragraph; in HTML a banner of class ``ok``, ``warn`` or ``fail``."""
        self.blocks.append({"kind": "banner", "text": text, "cls": cls})

    def table(self, header: list[str], rows: list[list[Any]], classes: list[str | None] | None = None) -> None:
        """``classes``: per row, its HTML class (``fail``, ``warn``) or None."""
        cell = lambda c: c if isinstance(c, Link) else ("" if c is None else str(c))  # noqa: E731
        self.blocks.append({"kind": "table", "header": header, "rows": [[cell(c) for c in r] for r in rows],
                            "classes": classes or [None] * len(rows)})

    def img(self, src: str, alt: str) -> None:
        self.blocks.append({"kind": "img", "src": src, "alt": alt})

    def code(self, text: str) -> None:
        self.blocks.append({"kind": "code", "text": text})

    def failure(self, title: str, message: str, commands: list[str], timeline: Any = None,
                anchor: str | None = None) -> None:
        """A failure: in Markdown one code block (title and message as comments, then the
        commands); in HTML a highlighted section with the timeline fragment (HTML only)."""
        self.blocks.append({"kind": "failure", "title": title, "message": message, "commands": commands,
                            "timeline": timeline, "anchor": anchor})

    def markdown(self) -> str:
        out = []
        esc = lambda s: s.replace("|", "\\|").replace("\n", " ")  # noqa: E731
        md_cell = lambda c: f"[{esc(c.text)}]({c.href})" if isinstance(c, Link) else esc(c)  # noqa: E731
        for b in self.blocks:
            kind = b["kind"]
            if kind == "h":
                out.append("#" * b["level"] + " " + b["text"])
            elif kind in ("p", "banner"):
                out.append(b["text"])
            elif kind == "table":
                out.append("\n".join(["| " + " | ".join(esc(c) for c in b["header"]) + " |",
                                      "|" + "---|" * len(b["header"])]
                                     + ["| " + " | ".join(md_cell(c) for c in r) + " |" for r in b["rows"]]))
            elif kind == "img":
                out.append(f"![{b['alt']}]({b['src']})")
            elif kind == "code":
                out.append("```\n" + b["text"] + "\n```")
            elif kind == "failure":
                out.append("```\n" + "\n".join([f"# {b['title']}", f"# {b['message']}", *b["commands"]]) + "\n```")
        return "\n\n".join(out) + "\n"

    def html(self, title: str) -> str:
        return html_pages.render("report.html.j2", package="streamproof.spark_harness", title=title,
                                 blocks=self.blocks)


def replay_line(path: str, inject: str | None) -> str:
    return "streamproof replay " + shlex.quote(path) + (f" --inject {shlex.quote(inject)}" if inject else "")


def explain_line(path: str, inject: str | None) -> str:
    return (f"streamproof explain {shlex.quote(path)}" + (f" --inject {shlex.quote(inject)}" if inject else "")
            + " --html timeline.html")


STATUS_TEXT = {
    "held": "complete: every seed held",
    "failed": "complete: seeds failed",
    "timeout": "complete: no seed failed, some timed out (not checked to the end)",
    "incomplete": "INCOMPLETE: seeds are missing",
}
STATUS_CLASS = {"held": "ok", "failed": "fail", "timeout": "warn", "incomplete": "warn"}

Explain = Callable[[str, "str | None"], str]
"""The ``explain`` hook of :func:`write_report`: (scenario JSON, bug-zoo variant or None) -> an
HTML fragment of the run (``streamproof.explain.failure_fragment``; spark_harness may not import
the face modules, so the caller passes it)."""


def _status(r: CampaignReport) -> str:
    return r.status if r.exactly_once else "incomplete"


def _row_class(p: dict) -> str | None:
    return "fail" if p.get("failed") or p.get("error") else "warn" if p.get("timeout") else None


def _timeline(explain: Explain | None, f: dict, inject: str | None) -> Any:
    """The failure's timeline fragment (markup), a one-line note when it cannot be drawn, or None."""
    if explain is None or not f.get("scenario"):
        return None
    try:
        return Markup(explain(f["scenario"], inject))
    except Exception as e:  # noqa: BLE001 - the report is written anyway
        return f"timeline not drawn: {type(e).__name__}: {' '.join(str(e).split())[:300]}"


def _render(doc: Doc, r: CampaignReport, out: Path, explain: Explain | None = None) -> None:
    doc.h(2, f"Campaign {r.name}", anchor=f"campaign-{_safe(r.name)}")
    s = r.spec or {}
    status = STATUS_TEXT[_status(r)]
    unfinished = [run for run in r.runs if _ended(run) != "completed"]
    if r.runs and _ended(r.runs[-1]) != "completed":
        status += f" (its last run, {r.runs[-1]['run_id']}, {run_status(r.runs[-1])}: resume it with --resume)"
    doc.banner(f"Status: {status}.", STATUS_CLASS[_status(r)])
    inject = s.get("inject")
    if s:
        mode = "exhaustive small scope" if s.get("mode") == "exhaustive" else "seeds"
        budget = (f"depth {s['scope'].get('depth')}, {s['scope'].get('total')} scenarios per property"
                  if s.get("mode") == "exhaustive" else
                  f"{s['examples']} examples x {s['step_count']} steps per seed, timeout {s['timeout']:g} s")
        doc.table(["setting", "value"], [
            ["properties", ", ".join(s["properties"])], ["mode", mode],
            ["seeds", f"{s['seed_start']}..{s['seed_end'] - 1} ({s['seed_end'] - s['seed_start']} per property)"],
            ["budget", budget], ["injected bug variant", inject or "none"],
            ["seeds per chunk", ", ".join(f"{k}: {v}" for k, v in sorted(s.get("chunk_seeds", {}).items()))],
            ["streamproof", s.get("version", "")]])
    doc.h(3, "Results per property")
    doc.table(["property", "seeds", "held", "failed", "timeout", "error", "signatures", "examples", "steps",
               "mean s/seed", "max s/seed"],
              [[p["property"], p["rows"], p["held"], p["failed"], p["timeout"], p["error"], p["signatures"],
                p["examples"], p["steps"], f"{p['seconds'] / max(1, p['rows']):.3f}", f"{p['max_seconds']:.3f}"]
               for p in r.per_property], [_row_class(p) for p in r.per_property])
    doc.p("Every seed exactly once: yes." if r.exactly_once else
          "Every seed exactly once: NO: " + "; ".join(r.problems))
    if r.coverage:
        doc.h(3, "Exhaustive coverage")
        doc.table(["property", "scenarios checked", "of", "tree nodes executed", "of", "distinct states"],
                  [[p, c["sequences"], c["sequences_total"], c["nodes"], c["nodes_total"],
                    c["distinct_states"] if c["distinct_states"] is not None else "-"]
                   for p, c in sorted(r.coverage.items())])
    doc.h(3, "Failures (deduplicated by signature)")
    if not r.failures:
        doc.p("None: no seed failed." + (" (Timeouts and errors are listed below.)" if r.timeouts or r.errors else ""))
    else:
        doc.p("One row per signature (property, verdict, invariant, and the message's shape: numbers, quoted "
              "keys and values replaced by placeholders); the smallest seed represents it. Each links to its "
              "scenario file; below, its message in full, the commands that replay it"
              + (" and its run as a timeline." if explain is not None else "."))
        doc.table(["property", "signature", "seeds", "first seed", "invariant", "scenario file"],
                  [[f["property"], f["signature"], f["seeds"], f["seed"], f["invariant"],
                    Link(os.path.relpath(f["file"], out), os.path.relpath(f["file"], out)) if f.get("file") else "-"]
                   for f in r.failures], ["fail"] * len(r.failures))
        for f in r.failures:
            commands = []
            if f.get("file"):
                commands += [replay_line(f["file"], inject),
                             explain_line(f["file"], inject) + "  # the run as a timeline"]
            commands.append(f"{f['reproduce'] or ''}  # reruns the seed")
            doc.failure(f"{f['property']} seed {f['seed']} ({f['seeds']} seeds share signature {f['signature']})",
                        f["message"], commands, _timeline(explain, f, inject),
                        anchor=f"failure-{_safe(r.name)}-{_safe(f['property'])}-{f['seed']}")
    for title, rows, note, cls in (
            ("Timeouts (not failures)", r.timeouts,
             "Seeds that ran out of the per-seed time limit before their budget was done: not checked to "
             "the end, not failures (no invariant broke). Rerun them with a larger --timeout.", "warn"),
            ("Errors", r.errors, "Seeds whose run raised (the harness, or a crash outside the property's "
                                 "checks); no scenario.", "fail")):
        if rows:
            doc.h(3, title)
            doc.p(note)
            doc.table(["property", "signature", "seeds", "first seed"],
                      [[f["property"], f["signature"], f["seeds"], f["seed"]] for f in rows], [cls] * len(rows))
            doc.code("\n".join(f"# {f['property']} seed {f['seed']}: {f['message']}\n{f['reproduce'] or ''}"
                               for f in rows))
    doc.h(3, "Time per seed")
    if "seed_time" in r.plots:
        doc.img(r.plots["seed_time"], f"time per seed, {r.name}")
    doc.h(3, "Throughput")
    rows = []
    for run in r.runs:
        rate = run["seeds_run"] / run["seconds"] if run.get("seconds") else 0.0
        rows.append([run["run_id"], run["master"], run["api"], run.get("cores", ""), f"{run['startup_seconds']:.1f}",
                     f"{run['seconds']:.1f}", run["seeds_run"], run.get("chunks_resumed", 0), f"{rate:.1f}",
                     run_status(run)])
    if rows:
        doc.table(["run", "master", "api", "cores", "startup s", "campaign s", "seeds run", "chunks kept (resume)",
                   "seeds/s", "ended"], rows,
                  [None if _ended(run) == "completed" else "warn" for run in r.runs])
    if unfinished:
        doc.p(f"{len(unfinished)} of {len(r.runs)} runs did not complete; their committed chunks are kept and "
              "counted above, what was in flight ran again in a later run.")
    doc.p(f"{r.rows} seeds took {r.seed_seconds:.1f} s of executor time in all.")
    if "throughput" in r.plots:
        doc.img(r.plots["throughput"], f"seeds done over time, {r.name}")


def write_report(results: str | os.PathLike, out: str | os.PathLike | None = None,
                 campaign: str | None = None, explain: Explain | None = None) -> tuple[Path, list[CampaignReport]]:
    """Writes the report; returns (path of report.md, the campaign reports). Every file is
    written whole (a temporary file renamed into place), the Markdown and HTML last. With
    ``explain`` (:data:`Explain`), report.html shows each failure's run as a timeline."""
    results = Path(results)
    out = Path(out) if out is not None else results / REPORT_DIR
    df = read_rows(results, campaign)
    if df.empty:
        raise ReportError(f"{results}: no campaign results" + (f" for campaign {campaign!r}" if campaign else ""))
    out.mkdir(parents=True, exist_ok=True)
    doc = Doc()
    doc.h(1, "streamproof campaign report")
    doc.p(f"Results: {results}")
    reports = []
    for name in sorted(df["campaign"].unique()):
        part = df[df["campaign"] == name]
        spec, runs = read_meta(results, name)
        r = analyse(name, part, spec, runs)
        write_failures(r.failures, out / "failures" / name)
        _plots(r, part, out)
        reports.append(r)
    if len(reports) > 1:
        doc.table(["campaign", "seeds", "status"],
                  [[Link(r.name, f"#campaign-{_safe(r.name)}"), r.rows, STATUS_TEXT[_status(r)]] for r in reports],
                  [None if _status(r) == "held" else STATUS_CLASS[_status(r)] for r in reports])
    for r in reports:
        _render(doc, r, out, explain)
    md = out / "report.md"
    _atomic_write(out / "report.html", doc.html("streamproof campaign report"))
    _atomic_write(md, doc.markdown())
    return md, reports


def mark_in_progress(results: str | os.PathLike, name: str, run_id: str) -> None:
    """Replaces a report in ``results/_report`` by a note that campaign ``name`` is running, so that
    a stale report never vouches for results a new run is changing (a killed run leaves the note;
    ``streamproof report`` writes the report of what is there)."""
    out = Path(results) / REPORT_DIR
    if not out.is_dir():
        return
    text = (f"Campaign {name} is running (run {run_id}): the results in {results} are changing, and this "
            f"report is written again when the run ends. If no run is going (it was killed), write the report "
            f"of what is there with: streamproof report {shlex.quote(str(results))}")
    doc = Doc()
    doc.h(1, "streamproof campaign report: IN PROGRESS")
    doc.banner(text, "warn")
    _atomic_write(out / "report.html", doc.html("streamproof campaign report (in progress)"))
    _atomic_write(out / "report.md", doc.markdown())

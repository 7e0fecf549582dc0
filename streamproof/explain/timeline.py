"""A timeline as data: its rows (:class:`Row`), lanes, verdicts and sections (:class:`Timeline`),
how a value is printed in it (:func:`show`), and :func:`mark`, which marks the row where the
invariant broke. Building a timeline is :mod:`streamproof.explain.build`'s job, drawing one
:mod:`streamproof.explain.render`'s."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

JM = "JM"
MAX = 2**63 - 1
MIN = -(2**63)


@dataclass
class Row:
    order: Any            # sort key: the recorder's number, or (attempt, position, lane) without one
    attempt: int | None
    lane: str
    text: str
    kind: str
    phrases: tuple = ()   # texts of a verdict message that point at this row
    mark: bool = False
    note: str = ""


@dataclass
class Timeline:
    title: str
    family: str
    lanes: list[str]
    rows: list[Row]
    verdicts: list[str]
    holds: bool
    failure: str | None
    ordering: str
    sections: list[tuple[str, list[str]]] = field(default_factory=list)  # (title, lines): reference etc.
    not_recorded: list[str] = field(default_factory=list)
    legend: list[tuple[str, str]] = field(default_factory=list)
    injected: str | None = None  # the bug-zoo variant applied while replaying (--inject)

    @property
    def marked(self) -> Row | None:
        return next((r for r in self.rows if r.mark), None)


# ------------------------------------------------------------------------------------ values

def show(value: Any) -> str:
    """A value as the timeline prints it: MAX / MIN for the watermark bounds."""
    if value == MAX and isinstance(value, int) and not isinstance(value, bool):
        return "MAX"
    if value == MIN and isinstance(value, int) and not isinstance(value, bool):
        return "MIN"
    if isinstance(value, tuple):
        inner = ", ".join(show(v) for v in value)
        return f"({inner}{',' if len(value) == 1 else ''})"
    if isinstance(value, list):
        return "[" + ", ".join(show(v) for v in value) + "]"
    return repr(value)


# ------------------------------------------------------------------------------------ marking

def mark(timeline: Timeline, failed, failure: str | None) -> None:
    """Marks the row where the invariant broke: the step the verdict names; the row of the lane
    and attempt its message names and, within them, the entry it quotes (the lane's last row in
    that attempt when it quotes none); else the last row (the end of the run)."""
    message = failed.message if failed is not None else ""
    note = failure or (f"{failed.invariant}: {failed.message}" if failed is not None else "")
    rows = timeline.rows
    if not rows:
        return
    target = None
    if failed is not None and failed.step is not None and timeline.lanes == ["steps"]:
        target = next((r for r in rows if r.order == failed.step), None)
    if target is None and message:
        target = _locate(rows, message)
    if target is None:
        target = rows[-1]
    target.mark, target.note = True, note


def _locate(rows: list[Row], message: str) -> Row | None:
    best = None  # (position in the message, attempt, lane)
    for attempt, lane in {(r.attempt, r.lane) for r in rows}:
        names = [lane] + ([lane.split(" ", 1)[1]] if lane.startswith("subtask ") else [f"subtask {lane}"])
        for name in names:
            for needle in (f"attempt {attempt} {name}",) if attempt is not None else ():
                for m in re.finditer(re.escape(needle) + r"(?![\d\]])", message):
                    if best is None or m.start() < best[0]:
                        best = (m.start(), attempt, lane)
    if best is not None:
        _, attempt, lane = best
        mine = [r for r in rows if r.attempt == attempt and r.lane == lane]
        hit = next((r for r in mine if any(p and p in message for p in r.phrases)), None)
        return hit or (mine[-1] if mine else None)
    hits = [r for r in rows if r.lane != JM and r.kind != "commit" and any(p and p in message for p in r.phrases)]
    if hits and len({r.attempt for r in hits}) == 1 and len(hits) == 1:
        return hits[0]
    jm = [r for r in rows if r.lane == JM and any(p and p in message for p in r.phrases)]
    return jm[0] if jm else None

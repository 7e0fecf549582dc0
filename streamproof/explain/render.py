"""Draws a :class:`~streamproof.explain.timeline.Timeline`: as text (:func:`render_text`, one
column per lane), as a self-contained HTML page (:func:`render_html`) or as an HTML fragment to
embed (:func:`timeline_fragment`; the templates are in ``streamproof/templates/``)."""

from __future__ import annotations

import textwrap

from markupsafe import Markup

from streamproof.explain.timeline import Timeline
from streamproof.properties import html_pages


def render_text(timeline: Timeline, width: int = 120) -> str:
    width = max(width, 40)
    lanes = timeline.lanes
    prefix = 11  # ">> " + row number + attempt
    widths = _lane_widths(timeline, width - prefix - 3 * len(lanes))
    out = [f"== {timeline.title} =="]
    if timeline.injected:
        out.append(f"BUG INJECTED: {timeline.injected} (a bug-zoo variant applied while replaying; not the runtime as it is)")
    out += textwrap.wrap(f"order: {timeline.ordering}", width=width, subsequent_indent="  ")
    header = f"{'':3}{'#':>4} {'att':>3} " + "".join(f"| {_fit(lane, widths[lane])} " for lane in lanes)
    out += [header.rstrip(), "-" * min(width, len(header))]
    attempt = None
    for n, row in enumerate(timeline.rows, 1):
        if row.attempt is not None and attempt is not None and row.attempt != attempt:
            out.append(f"{'':3}---- attempt {row.attempt} " + "-" * max(0, min(width, len(header)) - 20))
        if row.attempt is not None:
            attempt = row.attempt
        cells = "".join(f"| {_fit(row.text if lane == row.lane else '', widths[lane])} " for lane in lanes)
        att = "" if row.attempt is None else str(row.attempt)
        out.append(f"{'>> ' if row.mark else '':3}{n:>4} {att:>3} {cells}".rstrip())
        if row.mark:
            full = f"broke here: {row.note}" + (f" [{row.text}]" if len(row.text) > widths[row.lane] else "")
            out += textwrap.wrap(full, width=max(20, width - 9), initial_indent=" " * 9 + "^ ",
                                 subsequent_indent=" " * 11)
    if not timeline.rows:
        out.append("   (nothing recorded)")
    out.append("")
    for line in timeline.verdicts:
        out.append(line)
    out.append("verdict: held" if timeline.holds else f"verdict: FAILED ({timeline.failure})")
    for title, lines in timeline.sections:
        out += ["", f"{title}:"]
        for line in lines:
            out += textwrap.wrap(line, width=width, initial_indent="  ", subsequent_indent="    ") or ["  "]
    out += ["", "legend:"]
    for symbol, meaning in timeline.legend:
        out += textwrap.wrap(f"{symbol}: {meaning}", width=width, initial_indent="  ", subsequent_indent="      ")
    if timeline.not_recorded:
        out += ["", "not recorded (so not drawn):"]
        for line in timeline.not_recorded:
            out += textwrap.wrap(line, width=width, initial_indent="  - ", subsequent_indent="    ")
    return "\n".join(out) + "\n"


def _lane_widths(timeline: Timeline, available: int) -> dict[str, int]:
    """Each lane as wide as its longest cell, the widest ones cut to share ``available``."""
    natural = {lane: len(lane) for lane in timeline.lanes}
    for row in timeline.rows:
        natural[row.lane] = max(natural.get(row.lane, 0), len(row.text))
    cap = max(natural.values(), default=12)
    while cap > 12 and sum(min(w, cap) for w in natural.values()) > available:
        cap -= 1
    return {lane: max(3, min(w, cap)) for lane, w in natural.items()}


def _fit(text: str, width: int) -> str:
    return text.ljust(width) if len(text) <= width else text[:width - 1] + "~"


# ------------------------------------------------------------------------------------- html

def render_html(timeline: Timeline) -> str:
    """A self-contained page (``streamproof/templates/explain.html.j2``) of the timeline."""
    return html_pages.render("explain.html.j2", package="streamproof",
                             title=f"streamproof explain: {timeline.title}", fragment=timeline_fragment(timeline))


def timeline_fragment(timeline: Timeline, anchor: str | None = "broken") -> Markup:
    """The timeline as an HTML fragment (its own ``<section>``; the shared stylesheet's classes);
    ``anchor``: the ``id`` of the row where the property broke (None: no id)."""
    rows, attempt = [], None
    for n, row in enumerate(timeline.rows, 1):
        new_attempt = None  # a separator row before the first row of a later attempt
        if row.attempt is not None:
            if attempt is not None and row.attempt != attempt:
                new_attempt = row.attempt
            attempt = row.attempt
        cells = [None if lane != row.lane else {"kind": row.kind, "text": row.text, "note": row.note}
                 for lane in timeline.lanes]
        rows.append({"n": n, "attempt": "" if row.attempt is None else row.attempt, "new_attempt": new_attempt,
                     "mark": row.mark, "cells": cells})
    verdict = "held" if timeline.holds else f"FAILED ({timeline.failure})"
    return Markup(html_pages.render("timeline.html.j2", package="streamproof", timeline=timeline, rows=rows,
                                    verdict=verdict, anchor=anchor))

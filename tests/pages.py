"""Checks shared by the tests of the HTML pages (certificates, campaign report, explain): Markdown
left raw in a page, the failure highlight, templates shipped as package data."""

from __future__ import annotations

import re
from importlib import resources

RAW_MARKDOWN = {
    "bold": re.compile(r"\*\*"),
    "table separator": re.compile(r"\|\s*:?-{3,}"),
    "code span": re.compile(r"`[^`\n]+`"),
}
HEADING = re.compile(r"^#{1,6} ", re.M)  # outside <pre>: a shell comment there is no heading
PRE = re.compile(r"<pre\b.*?</pre>", re.S)


def raw_markdown(page: str) -> list[str]:
    """What in ``page`` is Markdown that was not rendered (empty when none)."""
    found = [f"{name}: {m.group()!r}" for name, pattern in RAW_MARKDOWN.items() for m in pattern.finditer(page)]
    return found + [f"heading: {m.group()!r}" for m in HEADING.finditer(PRE.sub("", page))]


def highlighted(page: str) -> bool:
    """A failure is highlighted: an element of class ``fail`` (a failing row, a red banner)."""
    return bool(re.search(r'class="[^"]*\bfail\b', page))


def packaged(package: str, *names: str) -> list[str]:
    """Of ``names`` (under ``templates/``), those missing from the installed ``package``."""
    root = resources.files(package).joinpath("templates")
    return [name for name in names if not root.joinpath(name).is_file()]

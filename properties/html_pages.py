"""HTML pages from Jinja2 templates and Markdown, shared by the certificate, the campaign report
and the explain page (not named ``html``: run as a script, a folder's module shadows the stdlib's).

Templates are package data (``templates/`` beside a package's modules, loaded with
:class:`jinja2.PackageLoader`, so they work from a wheel); every environment also finds this
package's ``base.html.j2`` and ``style.css``. Autoescape is on. Markdown is rendered with
markdown-it-py (CommonMark and tables, raw HTML off); a table row whose cell says a failure
(``failed``, ``not certified``, ...) gets the class ``fail``, a warning (``not exercised``) ``warn``.
"""

from __future__ import annotations

from functools import lru_cache

import jinja2
from markdown_it import MarkdownIt
from markupsafe import Markup

PACKAGE = "streamproof.properties"
TEMPLATES = "templates"
FAILING = ("failed", "not certified", "refused", "differs", "error", "unsafe", "not produced")
WARNING = ("not exercised", "timeout", "never reached")


@lru_cache(maxsize=None)
def environment(package: str = PACKAGE) -> jinja2.Environment:
    """The templates of ``package`` (then this package's), autoescaped."""
    loaders = [jinja2.PackageLoader(package, TEMPLATES)]
    if package != PACKAGE:
        loaders.append(jinja2.PackageLoader(PACKAGE, TEMPLATES))
    return jinja2.Environment(loader=jinja2.ChoiceLoader(loaders), autoescape=True, trim_blocks=True,
                              lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)


def render(template: str, package: str = PACKAGE, **context) -> str:
    """``template`` of ``package`` rendered with ``context``."""
    return environment(package).get_template(template).render(**context)


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False}).enable("table")


def row_class(cells: list[str]) -> str | None:
    """``fail`` when a cell says a failure, ``warn`` when one says a warning, else None."""
    texts = [c.strip().strip("*`").lower() for c in cells]
    for cls, words in (("fail", FAILING), ("warn", WARNING)):
        if any(t == w or t.startswith((w + ":", w + " (")) for t in texts for w in words):
            return cls
    return None


def markdown_html(text: str) -> Markup:
    """``text`` (Markdown) as HTML, failing table rows classed ``fail`` / ``warn``."""
    md = _markdown()
    tokens = md.parse(text)
    row = None
    cells: list[str] = []
    for token in tokens:
        if token.type == "tr_open":
            row, cells = token, []
        elif token.type == "inline" and row is not None:
            cells.append(token.content)
        elif token.type == "tr_close" and row is not None:
            cls = row_class(cells)
            if cls:
                row.attrSet("class", cls)
            row = None
    return Markup(md.renderer.render(tokens, md.options, {}))


def markdown_inline(text: str) -> Markup:
    """One line of Markdown (a heading's text) as inline HTML."""
    return Markup(_markdown().renderInline(text))


def banner(status: str) -> str:
    """The banner class of a certificate's status: ``ok``, ``warn`` (not exercised) or ``fail``."""
    if status == "certified":
        return "ok"
    return "warn" if status.startswith("not exercised") else "fail"


def certificate_page(markdown: str, status: str, title: str) -> str:
    """A certificate page: its Markdown's first heading, a banner with ``status``, the rest rendered."""
    first, _, rest = markdown.partition("\n")
    if not first.startswith("# "):
        first, rest = "", markdown
    heading = markdown_inline(first[2:].strip()) if first else title
    return render("certificate.html.j2", title=title, heading=heading, status=status, banner=banner(status),
                  body=markdown_html(rest))

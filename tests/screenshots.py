"""Screenshots of the HTML pages in headless Chromium, and what a browser shows of them: the
certificate of an operator that is not certified, a campaign report with an injected bug, and an
explain page of a failing scenario. For each page: a PNG at 1280 px, and the checks a reader
needs: the failure highlighted (a red banner or row, as Chromium computes its colour), no
Markdown left raw in the text a reader sees, no element wider than the page (no horizontal
scroll).

``python -m tests.screenshots [OUT]`` (``make screenshots``) writes the pages and PNGs to OUT
(default ``streamproof-out/screenshots``) and exits 1 when a check fails;
tests/test_page_screenshots.py runs the same checks.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

WIDTH, HEIGHT = 1280, 900
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars", f"--window-size={WIDTH},{HEIGHT}"]
REPO = Path(__file__).resolve().parents[1]

# Run in the page once it has loaded: what a reader sees, written into the DOM for --dump-dom.
PROBE = """<script>
addEventListener('load', () => {
  const width = document.documentElement.clientWidth;
  const wide = [...document.querySelectorAll('body *')]
    .filter(e => e.getBoundingClientRect().right > width + 1)
    .map(e => e.tagName.toLowerCase() + (e.className ? '.' + e.className : '') + ': ' +
              Math.round(e.getBoundingClientRect().right) + ' px');
  const red = [...document.querySelectorAll('.fail, .fail td')].filter(e => {
    const m = getComputedStyle(e).backgroundColor.match(/\\d+/g);
    return m && +m[0] > +m[1] + 8 && +m[0] > +m[2] + 8;  // red-dominant (the pale red of .fail)
  }).length;
  const out = document.createElement('pre');
  out.id = 'streamproof-probe';
  out.textContent = JSON.stringify({scroll_width: document.documentElement.scrollWidth, width,
                                    wide: wide.slice(0, 10), red, text: document.body.innerText});
  document.body.appendChild(out);
});
</script>"""
RAW = {"bold": re.compile(r"\*\*\S"), "table separator": re.compile(r"\|\s*:?-{3,}"),
       "code span": re.compile(r"`[^`\n]+`"), "heading": re.compile(r"^#{1,6} \S", re.M)}


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _run(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="streamproof-chromium-") as profile:
        return subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=timeout)


def inspect(page: Path, png: Path) -> dict:
    """Screenshot ``page`` to ``png``; what the browser shows of it (a copy with the probe)."""
    shot = _run([f"--screenshot={png}", page.resolve().as_uri()])
    if not png.exists():
        raise RuntimeError(f"chromium wrote no screenshot of {page}: {shot.stderr.strip()[-300:]}")
    probed = page.with_name(page.stem + ".probe.html")
    html = page.read_text(encoding="utf-8")
    probed.write_text(html.replace("</body>", PROBE + "</body>") if "</body>" in html else html + PROBE,
                      encoding="utf-8")
    try:
        dom = _run(["--dump-dom", "--virtual-time-budget=5000", probed.resolve().as_uri()]).stdout
    finally:
        probed.unlink()
    found = re.search(r'<pre id="streamproof-probe">(.*?)</pre>', dom, re.S)
    if not found:
        raise RuntimeError(f"the probe did not run in {page}")
    import html as html_module

    return json.loads(html_module.unescape(found.group(1)))


def problems(seen: dict, failing: bool = True) -> list[str]:
    """What is wrong with a page as the browser showed it (empty: nothing)."""
    found = []
    if seen["scroll_width"] > seen["width"] or seen["wide"]:
        found.append(f"wider than the page ({seen['scroll_width']} > {seen['width']} px): {seen['wide']}")
    found += [f"raw Markdown ({name}): {m.group()!r}" for name, pattern in RAW.items()
              for m in pattern.finditer(seen["text"])]
    if failing and not seen["red"]:
        found.append("the failure is not highlighted (no red banner or row)")
    return found


def make_pages(out: Path) -> dict[str, Path]:
    """The three pages, each of a failure: an operator certificate, a campaign report, an explain page."""
    for stale in ("certificate", "campaign"):
        shutil.rmtree(out / stale, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    pages = {}
    from streamproof.properties import certify as cert

    subject = cert.load("tests.certify_operators:CountAtFiring")
    cert.certify(subject, 40, 0, out / "certificate")
    pages["certificate"] = out / "certificate" / "certificate.html"

    from streamproof.explain import failure_fragment
    from streamproof.spark_harness import report
    from tests.test_campaign_report import _bug_campaign

    _bug_campaign(out / "campaign")
    report.write_report(out / "campaign", explain=failure_fragment)
    pages["campaign-report"] = out / "campaign" / "_report" / "report.html"

    from streamproof.explain.build import explain
    from streamproof.explain.render import render_html
    from streamproof.properties.scenario import load_scenario_file

    example = REPO / "examples" / "job" / "graph" / "chain-duplicate-watermark.json"
    (out / "explain.html").write_text(render_html(explain(load_scenario_file(example), str(example))),
                                      encoding="utf-8")
    pages["explain"] = out / "explain.html"
    return pages


def main(argv: list[str]) -> int:
    if chromium() is None:
        print("streamproof: error: chromium not found (apt-get install chromium)", file=sys.stderr)
        return 2
    out = Path(argv[0] if argv else "streamproof-out/screenshots")
    failed = 0
    for name, page in make_pages(out).items():
        png = out / f"{name}.png"
        wrong = problems(inspect(page, png))
        failed += bool(wrong)
        print(f"{name}: {png}" + ("" if not wrong else "\n  " + "\n  ".join(wrong)))
    print("every page: failure highlighted, no raw Markdown, nothing wider than the page" if not failed
          else f"FAILED: {failed} page(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

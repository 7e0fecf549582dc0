"""The HTML pages as headless Chromium shows them (tests/screenshots.py; ``make screenshots``
installs Chromium and writes the PNGs): each failure page highlights the failure, shows no raw
Markdown and nothing wider than a 1280 px page. Without Chromium these tests are skipped (and say
so); the page checks that need no browser are in test_campaign_report.py, test_certify*.py and
test_explain.py."""

from __future__ import annotations

import pytest

from tests import screenshots

pytestmark = [pytest.mark.timeout(900),
              pytest.mark.skipif(screenshots.chromium() is None, reason="chromium not installed (make screenshots)")]


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    out = tmp_path_factory.mktemp("screenshots")
    return out, screenshots.make_pages(out)


@pytest.mark.parametrize("name", ["certificate", "campaign-report", "explain"])
def test_the_page_in_a_browser(pages, name):
    out, made = pages
    png = out / f"{name}.png"
    seen = screenshots.inspect(made[name], png)
    assert png.stat().st_size > 10_000  # a rendered page, not an empty one
    assert screenshots.problems(seen) == []


def test_the_browser_checks_bite(tmp_path):
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><html><body><p>**not rendered** and `code`</p>"
                    "<div style='width:2000px'>wide</div></body></html>", encoding="utf-8")
    wrong = screenshots.problems(screenshots.inspect(page, tmp_path / "bad.png"))
    assert any("wider than the page" in w for w in wrong)
    assert any("raw Markdown (bold)" in w for w in wrong) and any("raw Markdown (code span)" in w for w in wrong)
    assert any("not highlighted" in w for w in wrong)

"""A dashboard opened in a real browser, for the tests that read one (tests/test_html_browser.py;
the fleet dashboard's test can use it the same way): Debian's chromium driven by Playwright for
Python, never ``playwright install``.

``chromium()`` launches one browser (skipping the test where neither /usr/bin/chromium nor CI
is there: CI installs it, .ci/run); ``visit(browser, page)`` opens a page in a fresh context and
records what a reader would meet: console errors and uncaught exceptions, every request made,
every dialog (a script run by hostile input), the marks plotly drew per figure, what the
caller's ``more(page, seen)`` reads, and each evidence link of the findings panel, followed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1280, "height": 900}

#: per figure: how many marks plotly drew (bar paths, scatter lines and points, heatmap images)
DRAWN_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(el => [
  el.id,
  el.querySelectorAll('.barlayer .trace path[d]:not([d="M0,0Z"])').length
  + el.querySelectorAll('.scatterlayer .trace path.js-line[d]').length
  + el.querySelectorAll('.scatterlayer .trace .points path[d]').length
  + el.querySelectorAll('.heatmaplayer .hm image').length])"""
#: per evidence link of the findings panel: its href, and whether its target exists
FINDINGS_JS = """() => Array.from(document.querySelectorAll('#findings a.ev')).map(a => [
  a.getAttribute('href'), !!document.getElementById(a.getAttribute('href').slice(1))])"""
#: after following a link: the target's id, whether it is the :target, whether every
#: <details> around it is open, and whether it is inside the viewport
FOLLOWED_JS = """() => { const el = document.querySelector(':target'); if (!el) return null;
  let open = true; for (let p = el.parentElement; p; p = p.parentElement)
    if (p.tagName === 'DETAILS' && !p.open) open = false;
  const r = el.getBoundingClientRect();
  return [el.id, open, r.bottom > 0 && r.top < window.innerHeight]; }"""


def skip_without_chromium(*, module: bool = False) -> None:
    """Skip the calling test (with ``module``, called at import: the whole module) where
    /usr/bin/chromium is missing, except under CI, where a missing browser is a failure to
    see, not a skip."""
    if not Path(CHROMIUM).exists() and not os.environ.get("CI"):
        pytest.skip("needs /usr/bin/chromium (apt-get install chromium); CI always runs this",
                    allow_module_level=module)


@contextmanager
def chromium() -> Iterator[Any]:
    """One chromium (a Playwright ``Browser``), closed on exit; each ``visit`` opens its own
    page in its own context."""
    skip_without_chromium()
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


def visit(browser: Any, page_at: Path | str, more: Callable[[Any, dict], None] | None = None,
          *, follow: bool = True) -> dict:
    """Open ``page_at`` (a file, or a URL) in a new page of ``browser`` (a fresh context: no
    cache, storage or history of another visit) and return what was seen: ``errors`` (console
    errors, uncaught exceptions), ``requests``, ``dialogs``, ``title``, ``drawn`` ([figure id,
    marks] per plotly figure), whatever ``more(page, seen)`` adds, and with ``follow`` the
    findings panel's evidence links (``findings``: [href, target exists]) each clicked in turn
    (``followed``: FOLLOWED_JS after each click)."""
    uri = page_at.as_uri() if isinstance(page_at, Path) else page_at
    seen: dict = {"errors": [], "requests": [], "dialogs": []}
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.on("console", lambda m: m.type == "error" and seen["errors"].append(m.text))
        page.on("pageerror", lambda e: seen["errors"].append(str(e)))
        page.on("request", lambda r: seen["requests"].append(r.url))
        page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
        page.goto(uri, wait_until="load", timeout=120_000)
        page.wait_for_timeout(500)
        seen["title"] = page.title()
        seen["drawn"] = page.evaluate(DRAWN_JS)
        if more is not None:
            more(page, seen)
        if follow:
            seen["findings"] = page.evaluate(FINDINGS_JS)
            seen["followed"] = []
            for href in [h for h, _ in seen["findings"]]:   # click each evidence link
                page.click(f"a.ev[href='{href}']")
                page.wait_for_timeout(50)
                seen["followed"].append(page.evaluate(FOLLOWED_JS))
    finally:
        page.context.close()
    return seen

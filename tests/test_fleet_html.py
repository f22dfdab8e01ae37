"""The fleet dashboard (``dptrace survey --html``) in a real browser: Debian's chromium driven
by Playwright, on a survey of job folders copied from the real fixtures
(tests/fixtures/fleet/make_fleet.py: the mpitrace straggler run twice on host node-bad) and
one folder whose name is HTML.

Checks: no console errors, each of the three figures drawn, no network request but the
page, the repeat-offender host named, the hostile folder name shown as text, and every
run link opening that run's own report (itself a dashboard without errors)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from dptrace.fleet import html as fleet_html

FIXTURES = Path(__file__).parent / "fixtures"
HOSTILE = "job <img src=x onerror=alert(1)>"


sys.path.insert(0, str(FIXTURES / "fleet"))
from browser_visit import chromium, visit  # noqa: E402
from make_fleet import BAD_HOST, make_fleet  # noqa: E402


@pytest.fixture(scope="module")
def fleet_page(tmp_path_factory):
    import dptrace.fleet

    root = tmp_path_factory.mktemp("fleet")
    make_fleet(root / "jobs", 12)
    hostile = root / "jobs" / HOSTILE
    hostile.mkdir()
    shutil.copy(FIXTURES / "trainlog" / "dschat_step1_opt1.3b_gbs128.log", hostile)
    fleet = dptrace.fleet.survey(root / "jobs", cache=root / "cache", engine="serial")
    page = fleet_html.write(fleet, root / "fleet.html", reports=3)
    return fleet, page


@pytest.fixture(scope="module")
def seen(fleet_page):
    """What a reader meets on the fleet page (tests/browser_visit.py), and each run's own
    report opened from its link."""
    _, page_path = fleet_page

    def more(page, out):
        out["text"] = page.evaluate("document.body.textContent")
        out["imgs"] = page.evaluate("document.querySelectorAll('img').length")
        out["links"] = page.evaluate(
            "Array.from(document.querySelectorAll('a.report')).map(a => a.href)")

    with chromium() as browser:
        out = visit(browser, page_path, more, follow=False)
        out["reports"] = {h: (r["errors"], r["title"]) for h in sorted(set(out["links"]))
                          for r in [visit(browser, h, follow=False)]}
    return out


def test_no_console_errors_and_no_network(seen, fleet_page):
    _, page_path = fleet_page
    assert seen["errors"] == [] and seen["dialogs"] == []
    assert seen["requests"] == [page_path.as_uri()]


def test_every_figure_is_drawn(seen):
    drawn = dict(seen["drawn"])
    assert set(drawn) == {"fig-throughput", "fig-findings", "fig-hosts"}
    assert all(n > 0 for n in drawn.values()), drawn


def test_the_repeat_offender_and_the_hostile_name_are_text(seen):
    text = seen["text"]
    assert BAD_HOST in text.split("repeat-offender hosts", 1)[1]
    assert HOSTILE in text and seen["imgs"] == 0


def test_runs_link_to_their_own_reports(seen, fleet_page):
    fleet, page_path = fleet_page
    assert len(set(seen["links"])) == 3
    for href, (errors, title) in seen["reports"].items():
        assert errors == [] and title == "dptrace report", href
        assert Path(href.removeprefix("file://")).parent == page_path.with_name(
            "fleet_reports")


def test_the_most_interesting_runs_are_linked_first(fleet_page):
    fleet, _ = fleet_page
    first = fleet_html._interesting(fleet)[:3]
    rows = fleet.fleet.set_index(fleet.fleet["run_key"].astype(object)).loc[first]
    assert (rows["findings_critical"].fillna(0) * 100 + rows["findings_warning"].fillna(0)
            * 10).is_monotonic_decreasing


def test_an_empty_fleet_renders(fleet_page):
    fleet, _ = fleet_page
    empty = type(fleet)(fleet.fleet.iloc[:0], fleet.findings.iloc[:0], fleet.ranks.iloc[:0],
                        fleet.job_figures.iloc[:0], None)
    text = fleet_html.render(empty)
    assert "nothing to draw" in text and text.count("<section") == 8
    assert isinstance(fleet.fleet, pd.DataFrame)

"""Make docs/dashboard.png: the HTML dashboard over a mix of fixtures, in headless chromium.

    python scripts/screenshot.py [--out docs/dashboard.png] [--html /tmp/dashboard.html]

It also writes the Horovod section's first figures beside it (docs/dashboard-horovod.png).

Needs Debian's chromium at /usr/bin/chromium and `pip install playwright` (the test extra);
never `playwright install`.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import dptrace

ROOT = Path(__file__).resolve().parents[1]
FIX = Path("tests") / "fixtures"   # relative to ROOT: the dashboard shows paths as given
INPUTS = [FIX / "trainlog" / "ug_sn30_multinode_from_docs.md",
          FIX / "trainlog" / "megatron_ds_gpt3_125M_8gpu.log",
          FIX / "mpitrace" / "alcfws_theta_knl32",
          FIX / "sntilestat" / "watch_sntilestat_sn30.typescript",
          FIX / "horovod" / "andrewor14_horovod_timeline_2019_4rank.json"]
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "dashboard.png"))
    ap.add_argument("--html", default="/tmp/dptrace-dashboard.html")
    args = ap.parse_args()
    os.chdir(ROOT)
    dptrace.report(dptrace.load(INPUTS)).to_html(args.html)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1600})
        page.goto(Path(args.html).resolve().as_uri(), wait_until="load", timeout=120_000)
        page.evaluate("document.querySelector('#inputs details')?.removeAttribute('open')")
        page.wait_for_timeout(500)
        page.screenshot(path=args.out)
        horovod = str(Path(args.out).with_name(Path(args.out).stem + "-horovod.png"))
        _figures_shot(page, "horovod-file1", horovod)
        browser.close()
    print(f"wrote {args.out} and {horovod} from {args.html}")


def _figures_shot(page, prefix: str, out: str) -> None:
    """A screenshot of the page region that holds the figures whose ids start with prefix."""
    box = page.evaluate("""p => { const els = Array.from(document.querySelectorAll(
        `[id^="fig-${p}_"]`)).slice(0, 3); if (!els.length) return null;
        els[0].scrollIntoView(); const rs = els.map(e => e.getBoundingClientRect());
        const top = Math.min(...rs.map(r => r.top)) + window.scrollY;
        const bottom = Math.max(...rs.map(r => r.bottom)) + window.scrollY;
        return {x: 0, y: top, width: 1280, height: bottom - top}; }""", prefix)
    if box:
        page.screenshot(path=out, full_page=True, clip=box)


if __name__ == "__main__":
    main()

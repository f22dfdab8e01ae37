"""Make docs/dashboard.png: the HTML dashboard over a mix of fixtures, in headless chromium.

    python scripts/screenshot.py [--out docs/dashboard.png] [--html /tmp/dashboard.html]

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
          FIX / "sntilestat" / "watch_sntilestat_sn30.typescript"]
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
        browser.close()
    print(f"wrote {args.out} from {args.html}")


if __name__ == "__main__":
    main()

"""The HTML dashboard in a real browser: Debian's chromium, driven by Playwright for Python.

Checks: no console errors, every figure drawn (.js-plotly-plot with SVG marks), no network
request besides the file itself, and hostile input strings shown as text with no script
run. Skipped only outside CI when /usr/bin/chromium is missing (CI installs it: .ci/run).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_visit import chromium, skip_without_chromium, visit

import dptrace

HOSTILE = "<img src=x onerror=alert(1)>"

skip_without_chromium(module=True)


def write_hostile_inputs(d: Path) -> None:
    """A training log whose tqdm label and an sntilestat listing whose user, COMMAND and file
    name are HTML."""
    bar = "{r}: {h}:  {p}0%|##        | {p}0/100 [00:02<00:08,  9.{v}0it/s]"
    (d / "slurm-hostile.out").write_text(
        bar.format(r=0, h=HOSTILE, p=1, v=5) + "\r" + bar.format(r=0, h=HOSTILE, p=2, v=8)
        + "\n" + bar.format(r=1, h=HOSTILE, p=2, v=1) + "\n")
    rows = ["TILE                 %idle %exec %pload %aload %chkpt %quiesce    PID     USER "
            "COMMAND"]
    rows += [f"/XRDU_0/RDU_0/TILE_{t}   8.0  91.6    0.3    0.1    0.0      0.0 2750333  "
             f"<b>eve</b> {HOSTILE}" for t in (0, 1)]
    rows += [f"/XRDU_0/RDU_0/TILE_{t} 100.0   0.0    0.0    0.0    0.0      0.0" for t in (2, 3)]
    (d / "tiles <img src=x onerror=alert(2)>.txt").write_text("\n".join(rows) + "\n")


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory, fixtures_dir=Path(__file__).parent / "fixtures"):
    d = tmp_path_factory.mktemp("hostile")
    write_hostile_inputs(d)
    ds = dptrace.load([fixtures_dir / "trainlog" / "ug_sn30_multinode_from_docs.md",
                       fixtures_dir / "mpitrace" / "alcfws_theta_knl32",
                       fixtures_dir / "mpitrace" / "mlprof_polaris2n_horovod",
                       fixtures_dir / "sntilestat" / "watch_sntilestat_sn30.typescript",
                       fixtures_dir / "horovod" / "andrewor14_horovod_timeline_2019_4rank.json",
                       fixtures_dir / "horovod" / "synthetic_xss_tensor_name.json", d])
    report = dptrace.report(ds)
    out = d.parent / "dashboard.html"
    report.to_html(out)
    return report, out


@pytest.fixture(scope="module")
def browser():
    """One chromium for the module's dashboards (each visit opens its own page)."""
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def page_result(dashboard, browser):
    report, out = dashboard

    def more(page, seen: dict) -> None:
        seen["text"] = page.evaluate("document.body.textContent")
        seen["svg_text"] = page.evaluate(
            "Array.from(document.querySelectorAll('.js-plotly-plot text'))"
            ".map(t => t.textContent).join('\\n')")
        seen["imgs"] = page.evaluate("document.querySelectorAll('img').length")
        seen["bold"] = page.evaluate("document.querySelectorAll('td b').length")
        seen["horovod_text"] = page.evaluate("document.getElementById('horovod').textContent")

    return report, out, visit(browser, out, more)


def test_no_console_errors(page_result):
    assert page_result[2]["errors"] == []


def test_every_figure_is_drawn(page_result):
    report, _, seen = page_result
    drawn = dict(seen["drawn"])
    expected = {f"fig-{k.replace('.', '-')}" for k in report.figures}
    assert set(drawn) == expected
    # throughput, comm share x2, message sizes x2, tiles x3 (heatmaps, %exec over time), steps,
    # Horovod: activities, stragglers, fused-op sizes, throughput, cycles (4-rank file) and
    # activities, stragglers, throughput (hostile tensor file)
    assert len(expected) >= 17
    assert all(n > 0 for n in drawn.values()), drawn
    kinds = {k.split(".")[0] for k in report.figures}
    assert kinds == {"throughput", "communication", "message_sizes", "tiles", "horovod"}
    horovod = {k.split(".")[1].split("_", 1)[1] for k in report.figures
               if k.startswith("horovod.")}
    assert horovod == {"activities", "stragglers", "fusion_sizes", "throughput", "cycles"}
    assert any(k.endswith("_exec_over_time") for k in report.figures)


def test_no_network_requests(page_result):
    _, out, seen = page_result
    assert seen["requests"] == [out.as_uri()]


def test_hostile_strings_are_text(page_result):
    _, _, seen = page_result
    assert seen["dialogs"] == []
    assert seen["imgs"] == 0 and seen["bold"] == 0
    text = seen["text"]
    assert HOSTILE in text                                 # COMMAND in the instances table
    assert "<b>eve</b>" in text                            # USER
    assert "tiles <img src=x onerror=alert(2)>.txt" in text    # a file name
    assert "<img src=x onerror=alert(#)>" in text          # tqdm label (digits normalised)
    # inside the figures, plotly draws them as text too (heatmap title: the file name)
    assert "tiles <img src=x onerror=alert(2)>.txt" in seen["svg_text"]
    assert "<img src=x onerror=alert(#)>" in seen["svg_text"]  # tqdm label in a bar title
    assert HOSTILE in seen["horovod_text"]                 # tensor name in the top tensors
    assert "synthetic_xss_tensor_name.json" in seen["svg_text"]


def test_findings_link_to_their_evidence(page_result):
    report, _, seen = page_result
    findings = report.tables["findings.findings"]
    links = seen["findings"]
    # the dashboard's inputs give at least: Theta's small Allreduces, the Horovod rank 0
    # straggler, the SambaNova instance 0 straggler and its lowest-%exec PID
    assert {"small_message_allreduce", "negotiation_straggler", "throughput_straggler",
            "lowest_exec_instance"} <= set(findings["kind"].astype(str))
    assert len(links) >= 4 and all(exists for _, exists in links), links
    assert any(h.startswith("#r-") for h, _ in links)      # rows, not only tables
    for (href, _), followed in zip(links, seen["followed"], strict=True):
        assert followed is not None, href
        target, all_open, in_view = followed
        assert f"#{target}" == href and all_open and in_view, (href, followed)


# ---- the compare and scaling dashboards (issue 16) --------------------------------------------

@pytest.fixture(scope="module")
def runs_dashboards(tmp_path_factory, browser):
    """``dptrace compare`` of the real straggler pair and ``dptrace scaling`` of the real
    weak-scaling set (tests/fixtures/scaling),
    as the CLI writes them (run labels hostile: they are input strings too)."""
    from dptrace.cli import main

    d = tmp_path_factory.mktemp("runs")
    strag = Path(__file__).parent / "fixtures" / "straggler"
    label = "<i>after<script>x"   # no '=' or '/': a label, not a path
    assert main(["compare", f"before={strag / 'balanced'}", f"{label}={strag / 'delayed_r2'}",
                 "--html", str(d / "compare.html")]) == 0
    assert label not in (d / "compare.html").read_text()   # escaped wherever it shows
    weak = Path(__file__).parent / "fixtures" / "scaling" / "weak"
    assert main(["scaling", *(str(weak / f"n{n}") for n in (1, 2, 4, 8)),
                 "--html", str(d / "scaling.html")]) == 0
    return {name: (d / f"{name}.html", visit(browser, d / f"{name}.html"))
            for name in ("compare", "scaling")}


@pytest.mark.parametrize("name", ["compare", "scaling"])
def test_runs_dashboards_in_a_real_browser(runs_dashboards, name):
    path, seen = runs_dashboards[name]
    assert seen["errors"] == []
    assert seen["requests"] == [path.as_uri()]
    drawn = dict(seen["drawn"])
    want = {"compare": {"fig-compare-largest_changes", "fig-compare-message_sizes",
                        "fig-compare-ranks"},
            "scaling": {"fig-scaling-throughput", "fig-scaling-efficiency",
                        "fig-scaling-comm_share", "fig-scaling-routines"}}[name]
    assert set(drawn) == want and all(n > 0 for n in drawn.values()), drawn
    links = seen["findings"]
    assert links and all(exists for _, exists in links), links
    for (href, _), followed in zip(links, seen["followed"], strict=True):
        assert followed is not None and f"#{followed[0]}" == href and followed[1], followed

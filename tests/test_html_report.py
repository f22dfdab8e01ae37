"""The HTML file's structure (not its bytes), the notebook Report API, exports and the CLI."""

import json
import re
from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace.cli import main
from dptrace.reports import export as export_mod
from dptrace.reports.fmt import table_share

FIX = Path(__file__).parent / "fixtures"
HOSTILE = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def everything():
    return dptrace.load(FIX)


@pytest.fixture(scope="module")
def everything_report(everything):
    return dptrace.report(everything)


@pytest.fixture(scope="module")
def all_html(everything_report):
    return everything_report.to_html()


def test_self_contained_offline_and_under_5_mb(all_html):
    assert len(all_html.encode()) < 5_000_000
    assert all_html.count("dptraceInflate(src") == 1            # plotly.js inlined once
    assert not re.search(r"<(script|link|img|iframe)[^>]*\b(src|href)=", all_html, re.I)
    assert "cdn.plot.ly" not in all_html and "@import" not in all_html


def test_every_section_with_caption_figures_and_tables(everything_report, all_html):
    report = everything_report
    for s in report.sections:
        assert f"<section id='{s.name}'>" in all_html
        assert f"<h2>{s.title}</h2>" in all_html
    assert all_html.count("class=\"plotly-graph-div\"") == len(report.figures)
    assert len(re.findall(r"<table[^>]*class=\"dataframe data\"", all_html)) == sum(
        1 for s in report.sections for df in s.tables.values() if len(df))
    assert "not parsed" in all_html and "job ids" in all_html


def test_hostile_strings_escaped(tmp_path):
    log = tmp_path / "<i>x.out"
    log.write_text(f"0: {HOSTILE}:  20%|##        | 20/100 [00:02<00:08,  9.80it/s]\n"
                   f"1: {HOSTILE}:  20%|##        | 20/100 [00:02<00:08,  9.10it/s]\n")
    ds = dptrace.load(tmp_path)
    text = dptrace.report(ds).to_html()
    assert "<img" not in text and "<i>x" not in text
    assert "&lt;i&gt;x.out" in text and "&lt;img src=x onerror=alert(#)&gt;" in text
    assert "<i>x" not in ds._repr_html_() and "&lt;i&gt;x.out" in ds._repr_html_()
    assert "<i>x" not in dptrace.report(ds)._repr_html_()


def test_notebook_report_api(tmp_path):
    ds = dptrace.load(FIX / "trainlog" / "ug_sn30_multinode_from_docs.md")
    rep = dptrace.report(ds)
    assert isinstance(rep.tables["throughput.summary"], pd.DataFrame)
    assert rep.figures["throughput.series1_instances"].data[0].type == "bar"
    assert "Throughput" in rep._repr_html_() and "<script" not in rep._repr_html_()
    doc = json.loads(rep.to_json())
    assert doc["exit_code"] == rep.exit_code and "throughput" in doc["sections"]
    out = tmp_path / "r.html"
    assert rep.to_html(out) == out.read_text()


def test_shares_shown_as_percentages():
    ds = dptrace.load(FIX / "mpitrace" / "alcfws_theta_knl32")
    report = dptrace.report(ds)
    routines = report.tables["communication.routines"].set_index("routine")
    # MPI_Allreduce: 800.501 s of the 803.14 s in MPI summed over the 3 profiled ranks
    assert routines.loc["MPI_Allreduce", "time_share"] == pytest.approx(800.501 / 803.14,
                                                                        abs=1e-5)
    page = report.to_html()
    table = page[page.index("table <b>routines</b>"):]
    table = table[:table.index("</table>")]
    cells = re.findall(r"<td>([^<]*)</td>", table)
    assert "99.7 %" in cells and "0.996714" not in page
    assert table_share(float("nan")) == "" and table_share(1.86767e-05) == \
        "0.00187 %"


def test_cli_report_html(tmp_path, capsys):
    out = tmp_path / "d.html"
    log = FIX / "trainlog" / "ug_sn30_multinode_from_docs.md"
    assert main(["report", str(log), "--html", str(out), "--width", "100"]) == 0
    assert "e2e samples_per_sec" in out.read_text() and "e2e samples_per_sec" in \
        capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_cli_export(tmp_path, fmt, capsys):
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    code = main(["export", str(FIX / "sntilestat" / "watch_sntilestat_sn30.typescript"),
                 str(FIX / "mpitrace" / "alcfws_theta_knl32"), "--to", str(tmp_path),
                 "--format", fmt])
    assert code == 0
    names = sorted(p.stem for p in tmp_path.iterdir())
    assert names == sorted(["tiles", "mpi_routines", "mpi_messages", "mpi_ranks", "mpi_jobs",
                            "sources", "problems", "runs", "findings"])
    ds = dptrace.load(FIX / "mpitrace" / "alcfws_theta_knl32")
    path = tmp_path / f"mpi_ranks.{fmt}"
    back = {"csv": pd.read_csv, "json": pd.read_json, "parquet": pd.read_parquet}[fmt](path)
    assert list(back.columns) == list(ds["mpi_ranks"].columns)
    assert len(back) == len(ds["mpi_ranks"])
    if fmt == "parquet":
        assert str(back["rank"].dtype) == "Int64"


def test_export_parquet_without_pyarrow(tmp_path, monkeypatch, capsys):
    real = export_mod.importlib.util.find_spec
    monkeypatch.setattr(export_mod.importlib.util, "find_spec",
                        lambda name, *a: None if name == "pyarrow" else real(name, *a))
    code = main(["export", str(FIX / "trainlog" / "ug_sn30_multinode_from_docs.md"), "--to",
                 str(tmp_path), "--format", "parquet"])
    err = capsys.readouterr().err
    assert code == 2 and "needs pyarrow" in err and "pip install pyarrow" in err
    assert len(err.strip().splitlines()) == 1 and not list(tmp_path.iterdir())

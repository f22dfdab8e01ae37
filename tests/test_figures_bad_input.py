"""Figures from bad input (issue 12): a tile index of 20 million does not build a 20-million
column grid, and values that are not finite (inf, 1e308, 1e999) never reach plotly.js:
they are left out with a note in the figure's title, and every figure still builds.

Each test starts from a real fixture, damaged as the issue's reproduction was (in the file
when the parser lets the value through, else in the loaded tables), and goes through
``dptrace.load``, ``dptrace.report(ds).figures`` and ``to_html``.
"""

import base64
import math
from pathlib import Path

import numpy as np
import pandas as pd

import dptrace
from dptrace.formats.horovod import figures as figures_horovod

FIX = Path(__file__).parent / "fixtures"
TILES = FIX / "sntilestat" / "aitbdocs_sambanova_Miscellaneous_from_docs.md"
WATCH = FIX / "sntilestat" / "watch_sntilestat_sn30.typescript"
SAMBA = FIX / "trainlog" / "ug_sn30_multinode_from_docs.md"
THETA = FIX / "mpitrace" / "alcfws_thetagpu_gpu8_mpi_profile.163698.0"
HOROVOD = FIX / "horovod" / "andrewor14_horovod_timeline_2019_4rank.json"


def undrawable(fig) -> list[str]:
    """Paths of numbers in a figure that plotly.js cannot draw (typed arrays decoded)."""
    out: list[str] = []

    def walk(o, path):
        if isinstance(o, dict) and set(o) >= {"dtype", "bdata"}:
            arr = np.frombuffer(base64.b64decode(o["bdata"]), dtype=o["dtype"])
            if arr.dtype.kind == "f" and not (np.abs(arr[~np.isnan(arr)]) <= 1e300).all():
                out.append(path)
        elif isinstance(o, dict):
            for k, v in o.items():
                walk(v, f"{path}.{k}")
        elif isinstance(o, (list, tuple)):
            for i, v in enumerate(o):
                walk(v, f"{path}[{i}]")
        elif isinstance(o, float) and not (math.isnan(o) or abs(o) <= 1e300):
            out.append(path)

    walk(fig.to_plotly_json(), "")
    return out


def html_and_figures(ds: dptrace.Dataset, tmp_path: Path) -> dict:
    """Write the HTML report; check no figure holds an undrawable number; the figures."""
    report = dptrace.report(ds)
    out = tmp_path / "report.html"
    report.to_html(str(out))
    assert out.stat().st_size > 10_000
    figures = report.figures
    for name, fig in figures.items():
        assert not undrawable(fig), (name, undrawable(fig)[:3])
        assert "could not be drawn" not in str(fig.layout.annotations), name
    return figures


def with_table(ds: dptrace.Dataset, name: str, df: pd.DataFrame) -> dptrace.Dataset:
    tables = {t: ds[t] for t in ds.tables}
    tables[name] = df
    return dptrace.Dataset(tables, ds.sources, ds.problems)


def heatmap_z(fig) -> np.ndarray:
    return np.array(fig.data[0].z, dtype=float)


# -- tiles ---------------------------------------------------------------------------------

def test_tile_twenty_million_is_one_more_column_not_twenty_million(tmp_path):
    path = tmp_path / "sntilestat.md"
    text = TILES.read_text()
    path.write_text(text.replace("/XRDU_0/RDU_0/TILE_3 ", "/XRDU_0/RDU_0/TILE_20000000 ", 1))
    ds = dptrace.load(path)
    tiles = ds["tiles"]
    assert tiles["tile"].max() == 20_000_000
    figures = html_and_figures(ds, tmp_path)
    fig = figures["tiles.source1_heatmap"]
    z = heatmap_z(fig)
    rdus = len(tiles[["xrdu", "rdu"]].drop_duplicates())
    assert z.shape[0] <= rdus and z.shape[1] <= tiles["tile"].nunique()
    assert z.size <= rdus * tiles["tile"].nunique()
    assert list(fig.data[0].x) == ["TILE_0", "TILE_1", "TILE_2", "TILE_3", "TILE_20000000"]
    # the tile keeps its cell: owned by the instance that owns TILE_0-2 of XRDU_0/RDU_0
    row = list(fig.data[0].y).index("0/0")
    assert fig.data[0].text[row][4] == fig.data[0].text[row][0] == "#1"
    assert not math.isnan(z[row, 4]) and math.isnan(z[row, 3])


def test_capture_frames_are_sized_by_the_tiles_that_exist(tmp_path):
    path = tmp_path / "watch.typescript"
    text = WATCH.read_text(errors="replace")
    path.write_text(text.replace("/XRDU_1/RDU_1/TILE_7 ", "/XRDU_1/RDU_1/TILE_20000000 ", 1))
    ds = dptrace.load(path)
    tiles = ds["tiles"]
    figures = html_and_figures(ds, tmp_path)
    fig = figures["tiles.source1_heatmap"]
    bound = len(tiles[["xrdu", "rdu"]].drop_duplicates()) * tiles["tile"].nunique()
    assert heatmap_z(fig).size <= bound
    steps = fig.layout.sliders[0].steps
    assert len(steps) > 2
    for step in steps:
        assert np.array(step.args[0]["z"][0], dtype=float).size <= bound


def test_tile_exec_values_that_are_not_finite_stay_grey(tmp_path):
    ds = dptrace.load(TILES)
    tiles = ds["tiles"].copy()
    busy = tiles.index[tiles["pid"].notna()]
    tiles.loc[busy[0], "exec_pct"] = np.inf
    tiles.loc[busy[1], "exec_pct"] = 1e308 * 10
    figures = html_and_figures(with_table(ds, "tiles", tiles), tmp_path)
    fig = figures["tiles.source1_heatmap"]
    assert "2 %exec value(s) not finite or too large" in fig.layout.title.text
    assert np.isnan(heatmap_z(fig)).sum() > np.isnan(heatmap_z(
        dptrace.report(ds).figures["tiles.source1_heatmap"])).sum()


# -- throughput ------------------------------------------------------------------------------

def test_throughput_bars_with_inf_and_1e308(tmp_path):
    # one of the eight `e2e samples_per_sec` lines prints 1e308 (a float, too large to draw);
    # another instance's value is inf in the table (what a line printing 1e999 gave)
    text = SAMBA.read_text()
    lines = [ln for ln in text.splitlines() if "e2e samples_per_sec:" in ln]
    path = tmp_path / "log.md"
    path.write_text(text.replace(lines[3], lines[3].rsplit(":", 1)[0] + ": 1e308", 1))
    ds = dptrace.load(path)
    tp = ds["throughput"].copy()
    assert (tp["value"] == 1e308).sum() == 1
    tp.loc[tp.index[(tp["metric"] == "samples_per_s") & (tp["value"] != 1e308)][2],
           "value"] = np.inf
    figures = html_and_figures(with_table(ds, "throughput", tp), tmp_path)
    bars = [f for k, f in figures.items() if k.startswith("throughput.")]
    assert bars
    fig = bars[0]
    assert "2 value(s) not finite or too large to draw" in fig.layout.title.text
    # the mean and median lines are over the values that can be drawn
    assert len(fig.layout.shapes) == 2
    assert all(math.isfinite(s.y0) and s.y0 < 1e4 for s in fig.layout.shapes)


def test_step_series_with_values_that_are_not_finite(tmp_path):
    ds = dptrace.load(FIX / "trainlog" / "megatron_ds_gpt3_125M_8gpu.log")
    tp = ds["throughput"].copy()
    series = tp.index[(tp["name"] == "CurrSamplesPerSec") & tp["step"].notna()]
    assert len(series) > 10
    tp.loc[series[3], "value"] = np.inf
    tp.loc[series[4], "value"] = -np.inf
    tp.loc[series[5], "value"] = np.nan
    figures = html_and_figures(with_table(ds, "throughput", tp), tmp_path)
    notes = [k for k, f in figures.items()
             if "2 value(s) not finite" in f.layout.title.text]
    assert len(notes) == 1 and notes[0].endswith("_steps")


# -- mpitrace --------------------------------------------------------------------------------

def test_rank_share_with_an_infinite_comm_time(tmp_path):
    ds = dptrace.load(THETA)
    ranks = ds["mpi_ranks"].copy()
    ranks.loc[ranks.index[ranks["rank"] == 1], "comm_time_s"] = np.inf
    ranks.loc[ranks.index[ranks["rank"] == 2], "elapsed_s"] = 1e-320   # share overflows
    figures = html_and_figures(with_table(ds, "mpi_ranks", ranks), tmp_path)
    notes = [k for k, f in figures.items() if "not finite" in f.layout.title.text]
    assert notes == ["communication.job1_rank_share"]


def test_message_size_bins_from_sizes_that_are_not_finite(tmp_path):
    ds = dptrace.load(THETA)
    msgs = ds["mpi_messages"].copy()
    bcast = msgs.index[msgs["routine"] == "MPI_Bcast"]
    # a size of 1e999 bytes has no bin; a time of 1e308 and its rate cannot be drawn
    msgs.loc[bcast[1], ["avg_bytes", "bytes"]] = np.inf
    msgs.loc[bcast[1], ["bin", "bin_lo_bytes", "bin_hi_bytes"]] = pd.NA
    msgs.loc[bcast[2], "time_s"] = 1e308 * 10
    allreduce = msgs.index[msgs["routine"] == "MPI_Allreduce"]
    msgs.loc[allreduce[0], "bytes"] = 1e308
    msgs.loc[allreduce[0], "time_s"] = 1e-300
    figures = html_and_figures(with_table(ds, "mpi_messages", msgs), tmp_path)
    fig = figures["message_sizes.job1_message_sizes"]
    assert "not finite or too large to draw" in fig.layout.title.text


# -- horovod ---------------------------------------------------------------------------------

def test_horovod_figures_with_values_that_are_not_finite(tmp_path):
    ds = dptrace.load(HOROVOD)
    acts = ds["hvd_activities"].copy()
    ops = acts.index[acts["level"] == "op"]
    acts.loc[ops[:3], "dur_us"] = np.inf
    ready = ds["hvd_ready"].copy()
    ready.loc[ready.index[:5], "lag_us"] = np.inf
    tensors = ds["hvd_tensors"].copy()
    tensors.loc[tensors.index[:2], "dur_us"] = 1e308 * 10
    tensors.loc[tensors.index[2], "bytes"] = 2**62
    cycles = ds["hvd_cycles"].copy()
    cycles.loc[cycles.index[:4], "dur_us"] = [np.inf, -np.inf, 0.0, np.nan]
    bad = ds
    for name, df in (("hvd_activities", acts), ("hvd_ready", ready), ("hvd_tensors", tensors),
                     ("hvd_cycles", cycles)):
        bad = with_table(bad, name, df)
    figures = html_and_figures(bad, tmp_path)
    names = {k.split(".", 1)[1] for k in figures if k.startswith("horovod.")}
    assert {"file1_activities", "file1_stragglers", "file1_cycles"} <= names
    assert "3 cycle time(s) of 0 µs or less, or not finite: not drawn" in \
        figures["horovod.file1_cycles"].layout.title.text


def test_a_figure_that_fails_costs_only_itself(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("zero-size array to reduction operation minimum which has no identity")

    monkeypatch.setattr(figures_horovod, "fusion_sizes", broken)
    ds = dptrace.load(HOROVOD)
    report = dptrace.report(ds)
    out = tmp_path / "report.html"
    report.to_html(str(out))
    fig = report.figures["horovod.file1_fusion_sizes"]
    note = fig.layout.annotations[0].text
    assert note.startswith("this figure could not be drawn: ValueError: zero-size array")
    assert "please report" in note
    assert "horovod.file1_activities" in report.figures


def test_terminal_tile_grid_is_sized_by_the_tiles_that_exist(tmp_path):
    """The terminal heatmap of the same listing: one TILE_20000000 column, not 20 M cells."""
    import io

    from rich.console import Console

    from dptrace.reports import terminal

    path = tmp_path / "sntilestat.md"
    text = TILES.read_text()
    path.write_text(text.replace("/XRDU_0/RDU_0/TILE_3 ", "/XRDU_0/RDU_0/TILE_20000000 ", 1))
    ds = dptrace.load(path)
    buf = io.StringIO()
    terminal.render(dptrace.report(ds), Console(file=buf, width=200, color_system=None))
    out = buf.getvalue()
    assert "TILE_20000000" in out and "TILE_4 " not in out and "TILE_19999999" not in out
    assert len(out) < 100_000

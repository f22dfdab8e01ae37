"""Figure functions: the data they draw (traces, values, axis titles with units), not pixels."""

from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace.formats.mpitrace import communication as comm
from dptrace.formats.mpitrace.figures import message_size_histogram, rank_share
from dptrace.formats.sntilestat.figures import tile_heatmap
from dptrace.formats.trainlog import throughput as thr
from dptrace.formats.trainlog.figures import step_series, throughput_bars, throughput_figures
from dptrace.reports.figures import esc

FIX = Path(__file__).parent / "fixtures"
HOSTILE = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def samba():
    return dptrace.load(FIX / "trainlog" / "ug_sn30_multinode_from_docs.md")


@pytest.fixture(scope="module")
def theta():
    return dptrace.load(FIX / "mpitrace" / "alcfws_theta_knl32")


def test_throughput_bars_instances_lines_and_stragglers(samba):
    inst = thr.per_instance(samba["throughput"])
    inst = inst[inst["name"] == "e2e samples_per_sec"]
    fig = throughput_bars(inst, metric="samples_per_s", title="t")
    normal, slow = fig.data
    assert (normal.type, slow.type) == ("bar", "bar")
    assert list(slow.x) == ["0", "2"] and slow.name.startswith("straggler")
    assert list(normal.x) == ["1", "3", "4", "5", "6", "7"]
    assert slow.y[0] == pytest.approx(563.9653, abs=1e-3)
    lines = {s.line.dash: s.y0 for s in fig.layout.shapes}
    assert lines["dash"] == pytest.approx(659.7926, abs=1e-3)     # mean
    assert lines["dot"] == pytest.approx(642.8580, abs=1e-3)      # median
    notes = " ".join(a.text for a in fig.layout.annotations)
    assert "job: 5,278.34 samples_per_s (sum over 8 instances)" in notes
    assert fig.layout.xaxis.title.text == "instance"
    assert fig.layout.yaxis.title.text == "samples_per_s (after warm-up)"


def test_step_series_lines_and_warmup():
    tp = pd.DataFrame({"instance": ["0"] * 5 + ["1"] * 5, "step": pd.array(list(range(1, 6)) * 2,
                                                                          dtype="Int64"),
                       "value": [1.0, 2, 3, 4, 5, 2, 3, 4, 5, 6]})
    tp["warmup"] = tp["step"] == 1
    fig = step_series(tp, metric="tokens_per_s", title="x")
    assert [t.type for t in fig.data] == ["scatter", "scatter"]
    assert [t.name for t in fig.data] == ["instance 0", "instance 1"]
    assert list(fig.data[1].x) == [1, 2, 3, 4, 5] and list(fig.data[1].y) == [2, 3, 4, 5, 6]
    assert fig.layout.shapes[0].type == "rect"                     # warm-up: step 1 up to
    assert (fig.layout.shapes[0].x0, fig.layout.shapes[0].x1) == (1.0, 2.0)  # first steady step
    assert (fig.layout.xaxis.title.text, fig.layout.yaxis.title.text) == ("step", "tokens_per_s")


def test_throughput_figures_pick_series_and_escape_labels():
    rows = {"source": ["a.log"] * 4, "instance": ["0", "1", "0", "1"], "pattern": "tqdm",
            "name": "tqdm", "label": HOSTILE, "metric": "iterations_per_s", "scope": "instance",
            "phase": "train", "value": [9.5, 9.8, 9.6, 9.0], "step": pd.array([1, 1, 2, 2], dtype="Int64"),
            "epoch": float("nan"), "lineno": pd.array([1, 2, 3, 4], dtype="Int64")}
    tp = pd.DataFrame(rows)
    tables = {"summary": thr.throughput_summary(tp), "instances": thr.per_instance(tp)}
    figs = throughput_figures(tables, tp)
    assert list(figs) == ["series1_instances"]          # 2 steps: no per-step figure
    title = figs["series1_instances"].layout.title.text
    assert esc(HOSTILE) in title and HOSTILE not in title
    assert esc(HOSTILE) == "&lt;img src=x onerror=alert(1)&gt;"


def test_message_size_histogram_calls_time_busbw(theta):
    bins = comm.message_sizes(theta["mpi_messages"])
    fig = message_size_histogram(bins, title="job 19013")
    allreduce = [t for t in fig.data if t.name == "MPI_Allreduce"]
    calls, time, busbw = allreduce
    assert (calls.type, time.type, busbw.type) == ("bar", "bar", "scatter")
    i = list(calls.x).index("32-64 MiB")
    assert calls.y[i] == 375 and time.y[i] == pytest.approx(73.687, abs=1e-3)
    assert busbw.y[i] == pytest.approx(0.662, abs=1e-3)          # GB/s, nccl-tests factor
    assert list(calls.x)[:2] == ["1-4 B", "4-8 B"]
    assert fig.layout.yaxis.title.text == "calls" and fig.layout.yaxis.type == "log"
    assert fig.layout.yaxis2.title.text == "time (s)"
    assert fig.layout.yaxis3.title.text == "busbw (GB/s)"
    assert fig.layout.xaxis3.title.text.startswith("message size (bytes")
    assert list(fig.layout.xaxis.categoryarray)[-1] == "32-64 MiB"


def test_rank_share_highlights_min_median_max(theta):
    rt = comm.rank_times(theta["mpi_ranks"])
    job = comm.job_summary(rt, theta["mpi_jobs"]).iloc[0]
    fig = rank_share(rt, job=job, title="job")
    names = [t.name for t in fig.data]
    assert names == ["rank", "min comm (rank 0)", "median comm (rank 26)",
                     "max comm (rank 28)"]
    assert len(fig.data[0].x) == 29 and "26" not in fig.data[0].x
    top = rt.loc[rt["rank"] == 28, "comm_share"].iloc[0]
    assert fig.data[3].y[0] == pytest.approx(100 * top)
    assert (fig.layout.xaxis.title.text, fig.layout.yaxis.title.text) == (
        "MPI rank", "time in MPI (% of elapsed)")


def test_tile_heatmap_per_snapshot_with_instance_labels():
    ds = dptrace.load(FIX / "sntilestat" / "watch_sntilestat_sn30.typescript")
    tiles = ds["tiles"]
    fig = tile_heatmap(tiles, title=esc(HOSTILE))
    hm = fig.data[0]
    assert hm.type == "heatmap" and (hm.zmin, hm.zmax) == (0, 100)
    assert hm.x[0] == "TILE_0" and hm.y[0] == "0/0"
    assert fig.layout.coloraxis.colorbar.title.text is None   # colorbar on the trace
    assert hm.colorbar.title.text == "%exec"
    labels = {c for row in hm.text for c in row if c}
    assert labels and all(c.startswith("#") for c in labels)
    snaps = tiles["snapshot"].nunique()
    steps = fig.layout.sliders[0].steps
    assert len(steps) == snaps + 1 and steps[0].label == "mean"
    busy = tiles[tiles["pid"].notna() & (tiles["snapshot"] == 0)].iloc[0]
    z0 = steps[1].args[0]["z"][0]
    row = hm.y.index(f"{busy['xrdu']}/{busy['rdu']}")
    assert z0[row][int(busy["tile"])] == pytest.approx(busy["exec_pct"])
    assert fig.layout.yaxis.title.text == "XRDU/RDU"
    assert "&lt;img" in fig.layout.title.text


def test_long_capture_slider_is_sampled_evenly(monkeypatch):
    from dptrace.formats.sntilestat import figures as figures_tiles

    assert figures_tiles.sample_snapshots(list(range(10)), 4) == [0, 3, 6, 9]
    assert figures_tiles.sample_snapshots(list(range(3)), 4) == [0, 1, 2]
    tiles = dptrace.load(FIX / "sntilestat" / "watch_sntilestat_sn30.typescript")["tiles"]
    monkeypatch.setattr(figures_tiles, "MAX_FRAMES", 2)   # 3 snapshots -> first and last
    fig = tile_heatmap(tiles)
    slider = fig.layout.sliders[0]
    assert [s.label for s in slider.steps][0] == "mean" and len(slider.steps) == 3
    assert slider.currentvalue.prefix == "snapshot (2 of 3 shown): "
    last = tiles[tiles["snapshot"] == 2]
    busy = last[last["pid"].notna()].iloc[-1]
    z = slider.steps[2].args[0]["z"][0]
    row = fig.data[0].y.index(f"{busy['xrdu']}/{busy['rdu']}")
    assert z[row][int(busy["tile"])] == pytest.approx(busy["exec_pct"])


def test_sections_carry_figures_lazily(samba):
    report = dptrace.report(samba)
    sec = report.section("throughput")
    assert sec is not None and sec._figures is None          # not built until asked
    assert "throughput.series1_instances" in report.figures
    assert report.section("inputs").figures == {}

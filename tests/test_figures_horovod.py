"""Horovod and tile-series figures: the data they draw (traces, values, axis titles, units).

Expected values come from the real 2019 4-rank timeline (andrewor14, one event per line) and
the `watch sntilestat` capture; the cycle-time figures are checked against the CYCLE_START
timestamps read straight from the file, without dptrace.
"""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dptrace
from dptrace.formats.horovod import figures as fh
from dptrace.formats.horovod.sections import build as horovod_section
from dptrace.formats.sntilestat import compute as tl
from dptrace.formats.sntilestat.compute import instance_numbers
from dptrace.formats.sntilestat.figures import exec_over_time

FIX = Path(__file__).parent / "fixtures"
RANK4 = FIX / "horovod" / "andrewor14_horovod_timeline_2019_4rank.json"
HOSTILE = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def rank4():
    ds = dptrace.load(RANK4)
    return ds, horovod_section(ds, {})


def test_activity_breakdown_bars_per_level(rank4):
    _, section = rank4
    fig = section.figures["file1_activities"]
    neg, op, act = fig.data
    assert (neg.name, op.name, act.name) == ("negotiation", "op (B to E)", "activity in op")
    assert neg.orientation == "h"
    assert list(neg.y) == ["ALLREDUCE / NEGOTIATE_ALLREDUCE", "BROADCAST / NEGOTIATE_BROADCAST"]
    # 140 s of the 189.8 s span some tensor was negotiating an allreduce: rank 0 was late
    assert neg.x[0] == pytest.approx(140.0087, abs=1e-3)
    assert op.x[0] == pytest.approx(46.7542, abs=1e-3)
    assert act.y[0] == "ALLREDUCE / MPI_ALLREDUCE"
    assert set(act.y) >= {"ALLREDUCE / MEMCPY_IN_FUSION_BUFFER", "BROADCAST / MPI_BCAST"}
    # allreduce rows first (the busier op), then broadcast; top to bottom
    order = list(fig.layout.yaxis.categoryarray)
    assert order.index("ALLREDUCE / MPI_ALLREDUCE") < order.index("BROADCAST / NEGOTIATE_BROADCAST")
    assert fig.layout.yaxis.autorange == "reversed"
    assert fig.layout.xaxis.title.text.startswith("wall time (s)")


def test_straggler_chart_marks_the_rank_everyone_waited_for(rank4):
    _, section = rank4
    last, mean, p95 = section.figures["file1_stragglers"].data
    assert list(last.x) == ["0", "1", "2", "3"]
    assert list(last.y) == [100.0, 0.0, 0.0, 0.0]          # rank 0 last in all 673
    assert last.marker.color[0] == fh.STRAGGLER and last.marker.color[1] == fh.BAR
    assert list(last.customdata[0]) == [673, 673]
    assert mean.name == "mean lag" and p95.name == "p95 lag"
    assert mean.y[0] == pytest.approx(634.566, abs=1e-3)      # ms
    assert p95.y[0] == pytest.approx(994.176, abs=1e-3)
    fig = section.figures["file1_stragglers"]
    assert fig.layout.yaxis.title.text == "last ready (%)"
    assert fig.layout.yaxis2.title.text == "lag (ms)"


def test_fusion_sizes_count_ops_per_tensor_count(rank4):
    _, section = rank4
    allreduce, broadcast = section.figures["file1_fusion_sizes"].data
    assert allreduce.name == "ALLREDUCE" and list(allreduce.x) == ["1", "2"]
    # 553 allreduce ops carried 660 tensors: 446 alone + 107 fused pairs
    assert list(allreduce.y) == [446, 107]
    assert 446 + 2 * 107 == 660
    assert list(broadcast.y) == [13]


def test_op_throughput_in_gb_per_s(rank4):
    _, section = rank4
    bars, marks = section.figures["file1_throughput"].data
    tp = section.tables["throughput"]
    assert list(bars.x)[-1] == "64-128 MiB"
    assert bars.y[-1] == pytest.approx(tp["op_bytes_per_s"].iloc[-1] / 1e9)
    assert bars.y[-1] == pytest.approx(0.3359, abs=1e-4)
    assert marks.mode == "markers" and marks.y[3] == pytest.approx(0.6221, abs=1e-4)
    assert section.figures["file1_throughput"].layout.yaxis.title.text == "GB/s"


def test_cycle_histogram_matches_the_raw_markers(rank4):
    _, section = rank4
    ts = [int(m) for m in re.findall(r'"name": "CYCLE_START", "ts": (\d+)',
                                     RANK4.read_text())]
    gaps_ms = np.diff(np.array(ts, dtype=float)) / 1e3
    assert len(ts) == 13999
    hist, median, p95 = section.figures["file1_cycles"].data
    assert sum(hist.y[:-1]) == len(gaps_ms) == 13998
    assert median.x[0] == pytest.approx(np.median(gaps_ms)) == pytest.approx(9.018)
    assert p95.x[0] == pytest.approx(np.quantile(gaps_ms, 0.95)) == pytest.approx(12.0)
    fig = section.figures["file1_cycles"]
    assert fig.layout.xaxis.type == "log"
    assert fig.layout.xaxis.title.text == "cycle time (ms, log scale)"


def test_figures_only_when_they_say_something():
    ds = dptrace.load([FIX / "horovod" / "alcfws_timeline_cpu_n1.json",
                       FIX / "horovod" / "alcfws_timeline_gpu_n1.json"])
    names = set(horovod_section(ds, {}).figures)
    # one rank: no stragglers, no throughput; broadcast only, never fused; cpu has no cycles
    assert names == {"file1_activities", "file2_activities", "file2_cycles"}


def test_hostile_op_and_source_names_are_escaped():
    acts = pd.DataFrame({"source": ["s"], "level": ["op"], "op": [HOSTILE],
                         "activity": [HOSTILE], "intervals": [1], "open": [0],
                         "wall_us": [5.0], "span_share": [0.5], "tensor_us": [5.0],
                         "mean_us": [5.0]})
    fig = fh.activity_breakdown(acts, title="t")
    assert "<img" not in fig.data[0].y[0] and "&lt;img" in fig.data[0].y[0]
    sizes = pd.DataFrame({"source": ["s"], "op": [HOSTILE], "min_tensors": [2],
                          "max_tensors": [3], "ops": [4], "share": [1.0]})
    fig = fh.fusion_sizes(sizes)
    assert fig.data[0].name.startswith("&lt;img") and list(fig.data[0].x) == ["2-3"]
    tables = {"runs": pd.DataFrame({"source": [HOSTILE], "ranks": [1]}),
              "activities": acts.assign(source=HOSTILE)}
    for name in ("stragglers", "fusion_sizes", "throughput"):
        tables[name] = pd.DataFrame(columns=["source"])
    figs = fh.horovod_figures(tables, pd.DataFrame(columns=["source", "dur_us"]))
    assert list(figs) == ["file1_activities"]
    assert "&lt;img" in figs["file1_activities"].layout.title.text


def test_exec_over_time_per_instance():
    ds = dptrace.load(FIX / "sntilestat" / "watch_sntilestat_sn30.typescript")
    series = tl.exec_series(ds["tiles"])
    fig = exec_over_time(series, title="t", numbers=instance_numbers(ds["tiles"]))
    assert len(fig.data) == 8                    # 8 PIDs, 8 tiles each
    # named as in the heatmap: PIDs numbered by first appearance (2750338 owns RDU 0/1)
    assert [t.name.split()[0] for t in fig.data] == [f"#{n}" for n in range(1, 9)]
    grid = tl.grid(ds["tiles"])
    assert set(grid.loc[grid["pid"] == 2750338, "instance"]) == {2}
    dip = [t for t in fig.data if t.name == "#2 (PID 2750338)"][0]
    # all 8 tiles of PID 2750338 fell to 61.6-61.8 % in the second snapshot: 493.5 / 8
    assert list(np.round(dip.y, 4)) == [91.6875, 61.6875, 91.6875]
    assert str(pd.Timestamp(dip.x[1])) == "2023-04-17 10:20:03"
    assert fig.layout.xaxis.title.text == "snapshot time"
    assert fig.layout.yaxis.ticksuffix == "%"
    report = dptrace.report(ds)
    legend = [t.name for t in report.figures["tiles.source1_exec_over_time"].data]
    assert legend == [t.name for t in fig.data]

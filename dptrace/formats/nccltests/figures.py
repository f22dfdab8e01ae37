"""Plotly figures for nccl-tests: bus bandwidth by message size, per test."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ...reports.figures import COLORS, build_all, esc, layout
from ..nccltests.tables import PLACEMENTS

#: tests drawn (one figure each); the rest are in the tables and exports
MAX_TESTS = 24


def busbw_by_size(curve: pd.DataFrame, *, title: str = "", avg: float | None = None,
                  job: pd.DataFrame | None = None) -> go.Figure:
    """One test's rows of ``analysis.nccltests.curve``: busbw (GB/s) against message size
    on a log2 x axis, a line per placement (out-of-place solid, in-place dashed); the
    test's printed average as a dotted horizontal line; ``job``: the job's own collective
    bins compared with this test (``analysis.nccltests.job_vs_system``) as diamonds at their
    mean size. Sizes of 0 bytes cannot sit on a
    log axis and are left out (the tables have them)."""
    fig = go.Figure()
    for k, placement in enumerate(PLACEMENTS):
        g = curve[(curve["placement"] == placement) & (curve["size_bytes"] > 0)]
        if g.empty:
            continue
        fig.add_trace(go.Scatter(
            x=g["size_bytes"].astype("float64"), y=g["busbw_gbps"].astype("float64"),
            mode="lines+markers", name=placement,
            line={"color": COLORS[k], "dash": "solid" if k == 0 else "dash"},
            customdata=np.stack([g["time_us"].astype("float64"),
                                 g["algbw_gbps"].astype("float64")], axis=-1),
            hovertemplate="%{x:,} B<br>busbw %{y} GB/s<br>algbw %{customdata[1]} GB/s"
                          "<br>time %{customdata[0]} us<extra>%{fullData.name}</extra>"))
    if job is not None and not job.empty:      # the job's own bins at their sizes
        for k, (evidence, g) in enumerate(job.groupby("evidence", sort=False)):
            fig.add_trace(go.Scatter(
                x=g["avg_bytes"].astype("float64"), y=g["busbw_gbps"].astype("float64"),
                mode="markers", name=f"job: {esc(evidence)}",
                marker={"symbol": "diamond", "size": 10, "color": COLORS[(k + 2) % len(COLORS)]},
                customdata=np.stack([g["calls"].astype("float64"),
                                     100 * g["ratio"].astype("float64")], axis=-1),
                hovertemplate="%{x:,.0f} B (mean)<br>busbw %{y:.3g} GB/s<br>%{customdata[1]:.1f}% "
                              "of the test<br>%{customdata[0]} calls<extra>%{fullData.name}"
                              "</extra>"))
    if avg is not None and np.isfinite(avg):
        fig.add_hline(y=avg, line={"dash": "dot", "color": "#888"},
                      annotation_text=f"printed avg {avg:g} GB/s",
                      annotation_position="top left")
    layout(fig, title, "message size (bytes, log2)", "busbw (GB/s)")
    fig.update_xaxes(type="log", dtick=np.log10(4), tickformat=".2s",
                     exponentformat="power")
    return fig


def nccl_tests_figures(tables: dict[str, pd.DataFrame]) -> dict[str, go.Figure]:
    """Per test: busbw by size (out of place and in place)."""
    tests, curve = tables["tests"], tables["busbw"]
    jobs: list[tuple[str, Callable[[], go.Figure]]] = []
    for k, row in enumerate(tests.head(MAX_TESTS).itertuples(index=False), start=1):
        mine = curve[(curve["source"] == row.source) & (curve["block"] == row.block)]
        if "run" in curve.columns and "run" in tests.columns:
            mine = mine[mine["run"] == row.run]
        ranks = "" if pd.isna(row.nranks) else f"{int(row.nranks)} ranks"
        hosts = "" if pd.isna(row.nhosts) else f" on {int(row.nhosts)} host(s)"
        avg = None if pd.isna(row.avg_busbw_gbps) else float(row.avg_busbw_gbps)
        jvs = tables.get("job_vs_system")
        job = None
        if jvs is not None and not jvs.empty:
            job = jvs[(jvs["test_source"].astype(str) == str(row.source))
                      & (jvs["test_block"] == row.block)]
            if "run" in jvs.columns and "run" in tests.columns:
                job = job[job["run"].astype(str) == str(row.run)]
        jobs.append((f"test{k}_busbw", partial(
            busbw_by_size, mine, avg=avg, job=job,
            title=f"<b>{esc(row.test) or 'nccl-tests'}</b>: {esc(row.source)}<br><span "
                  f"style='font-size:12px'>busbw by message size; {ranks}{hosts}</span>")))
    return build_all(jobs)

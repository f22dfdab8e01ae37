"""Plotly figures for DeepSpeed comms logger summaries: bus bandwidth by message size, a line
per op, one figure per summary."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ...reports.figures import COLORS, build_all, esc, layout
from .._units import US_TO_MS, scaled

#: summaries drawn (one figure each); the rest are in the tables and exports
MAX_SUMMARIES = 12


def busbw_by_size(curve: pd.DataFrame, *, title: str = "") -> go.Figure:
    """One summary's rows of ``analysis.dscomms.curve``: busbw (Gbit/s) against message size
    on a log2 x axis, a line per op (and caller). Sizes of 0 bytes (DeepSpeed's barrier)
    cannot sit on a log axis and are left out (the tables have them)."""
    fig = go.Figure()
    g = curve[curve["size_bytes"] > 0]
    labels = (g["op"].astype(str) + g["caller"].astype("string").fillna("")
              .map(lambda c: f" ({c})" if c else ""))
    for k, label in enumerate(pd.unique(labels)):
        s = g[labels == label]
        fig.add_trace(go.Scatter(
            x=s["size_bytes"].astype("float64"), y=s["busbw_gbps"].astype("float64"),
            mode="lines+markers", name=esc(label), line={"color": COLORS[k % len(COLORS)]},
            customdata=np.stack([s["count"].astype("float64"),
                                 s["avg_latency_us"].astype("float64")
                                 .map(lambda us: scaled(us, US_TO_MS))], axis=-1),
            hovertemplate="%{x:,} B<br>busbw %{y} Gbit/s<br>%{customdata[0]} call(s), "
                          "avg %{customdata[1]} ms<extra>%{fullData.name}</extra>"))
    layout(fig, title, "message size (bytes, log2)", "busbw (Gbit/s)")
    fig.update_xaxes(type="log", dtick=np.log10(4), tickformat=".2s", exponentformat="power")
    return fig


def ds_comms_figures(tables: dict[str, pd.DataFrame]) -> dict[str, go.Figure]:
    """Per summary: busbw by size, a line per op."""
    curve = tables["sizes"]
    keys = [c for c in ("run", "source", "block") if c in curve.columns]
    jobs: list[tuple[str, Callable[[], go.Figure]]] = []
    summaries = curve[keys].drop_duplicates().head(MAX_SUMMARIES)
    for k, row in enumerate(summaries.itertuples(index=False), start=1):
        mask = np.ones(len(curve), dtype=bool)
        for col, value in zip(keys, row, strict=True):
            mask &= (curve[col] == value).to_numpy()
        src = esc(str(row[keys.index("source")]))
        jobs.append((f"summary{k}_busbw", partial(
            busbw_by_size, curve[mask],
            title=f"<b>DeepSpeed comms</b>: {src}<br><span style='font-size:12px'>busbw by "
                  "message size, per op</span>")))
    return build_all(jobs)

"""Plotly figures for MLPerf logs: epoch durations and evaluation accuracy, per log."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import pandas as pd
import plotly.graph_objects as go

from ...reports.figures import COLORS, build_all, esc, layout

#: logs drawn (one figure each); the rest are in the tables and exports
MAX_LOGS = 12


def epochs_figure(eps: pd.DataFrame, *, title: str = "") -> go.Figure:
    """One log's rows of ``analysis.mllog.epochs``: each complete epoch's duration (bars, s)
    and the accuracy of its evaluation (markers, right axis) by epoch number."""
    fig = go.Figure()
    fig.add_trace(go.Bar(x=eps["epoch_num"].astype("float64"),
                         y=eps["duration_s"].astype("float64"), name="epoch time (s)",
                         marker={"color": COLORS[0]},
                         hovertemplate="epoch %{x}<br>%{y:.1f} s<extra></extra>"))
    acc = eps[eps["eval_accuracy"].notna()]
    if len(acc):
        fig.add_trace(go.Scatter(x=acc["epoch_num"].astype("float64"),
                                 y=acc["eval_accuracy"].astype("float64"), yaxis="y2",
                                 mode="lines+markers", name="eval accuracy",
                                 line={"color": COLORS[1]},
                                 hovertemplate="epoch %{x}<br>accuracy %{y}<extra></extra>"))
        fig.update_layout(yaxis2={"title": "eval accuracy", "overlaying": "y",
                                  "side": "right", "showgrid": False})
    layout(fig, title, "epoch", "epoch time (s)")
    return fig


def mllog_figures(tables: dict[str, pd.DataFrame]) -> dict[str, go.Figure]:
    """Per log with complete epochs: epoch time and evaluation accuracy."""
    eps = tables["epochs"]
    keys = [c for c in ("run", "source") if c in eps.columns]
    jobs: list[tuple[str, Callable[[], go.Figure]]] = []
    if eps.empty:
        return {}
    for k, (_key, g) in enumerate(eps.groupby(keys, observed=True, sort=False), start=1):
        if k > MAX_LOGS:
            break
        src = esc(str(g["source"].iloc[0]))
        jobs.append((f"log{k}_epochs", partial(
            epochs_figure, g,
            title=f"<b>MLPerf</b>: {src}<br><span style='font-size:12px'>epoch time and "
                  "evaluation accuracy</span>")))
    return build_all(jobs)

"""Plotly figures for mpiP: MPI time per callsite, per report (the top callsites)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import pandas as pd
import plotly.graph_objects as go

from ...reports.figures import COLORS, build_all, esc, layout

#: reports drawn (one figure each)
MAX_JOBS = 12


def time_by_callsite(sites: pd.DataFrame, *, title: str = "") -> go.Figure:
    """One job's rows of ``analysis.communication.top_callsites``: a horizontal bar per
    callsite (most time on top), labelled with its routine and where it is."""
    g = sites.sort_values("time_s", kind="stable")
    labels = [f"{esc(r)} #{s} ({esc(w)})" for r, s, w in
              zip(g["routine"], g["site"], g["where"], strict=True)]
    fig = go.Figure(go.Bar(
        x=g["time_s"].astype("float64"), y=labels, orientation="h",
        marker={"color": COLORS[0]},
        hovertemplate="%{y}<br>%{x:.4g} s<extra></extra>"))
    layout(fig, title, "MPI time (s, summed over ranks)", "",
           height=max(260, 40 + 28 * len(g)))
    return fig


def callsite_figures(tables: dict[str, pd.DataFrame]) -> dict[str, go.Figure]:
    """Per job: its top callsites' MPI time."""
    t = tables["callsites"]
    by = [c for c in ("run", "job") if c in t.columns]
    jobs: list[tuple[str, Callable[[], go.Figure]]] = []
    for k, (key, g) in enumerate(t.groupby(by, sort=False, observed=True), start=1):
        if k > MAX_JOBS:
            break
        label = " ".join(str(x) for x in (key if isinstance(key, tuple) else (key,)))
        jobs.append((f"job{k}_callsites", partial(
            time_by_callsite, g, title=f"<b>MPI time per callsite</b>: {esc(label)}")))
    return build_all(jobs)

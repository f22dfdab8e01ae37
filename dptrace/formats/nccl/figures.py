"""Plotly figure of the NCCL section: per run, the processes that printed NCCL lines on each
host, coloured by the network NCCL chose (a node that fell back to sockets stands out)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import pandas as pd
import plotly.graph_objects as go

from ...reports.figures import COLORS, build_all, esc, layout

#: runs drawn (one figure each); the rest are in the tables and exports
MAX_RUNS = 8
#: hosts drawn per run (the most processes first)
MAX_HOSTS = 64


def networks_by_host(procs: pd.DataFrame, *, title: str = "") -> go.Figure:
    """Processes per host (x) stacked by network (``nccl_setup.network``; 'not printed' when
    the process said none)."""
    net = procs["network"].astype("object").where(procs["network"].notna(), "not printed")
    counts = pd.crosstab(procs["host"].astype(str), net.astype(str))
    counts = counts.loc[counts.sum(axis=1).sort_values(ascending=False, kind="stable")
                        .index[:MAX_HOSTS]]
    fig = go.Figure()
    for k, network in enumerate(counts.columns):
        fig.add_trace(go.Bar(
            x=[esc(h) for h in counts.index], y=counts[network].tolist(), name=esc(network),
            marker_color="#e45756" if network == "Socket" else COLORS[k % len(COLORS)],
            hovertemplate="%{x}<br>%{y} process(es)<extra>%{fullData.name}</extra>"))
    layout(fig, title, "host", "processes")
    fig.update_layout(barmode="stack")
    return fig


def nccl_figures(tables: dict[str, pd.DataFrame]) -> dict[str, go.Figure]:
    """Per run with NCCL processes: processes per host by network."""
    procs = tables["processes"]
    if procs.empty:
        return {}
    jobs: list[tuple[str, Callable[[], go.Figure]]] = []
    runs = procs["run"].astype(str) if "run" in procs.columns else pd.Series([""] * len(procs))
    for k, run in enumerate(list(dict.fromkeys(runs.tolist()))[:MAX_RUNS], start=1):
        mine = procs[(runs == run).to_numpy()]
        jobs.append((f"run{k}_networks", partial(
            networks_by_host, mine,
            title=f"<b>NCCL network by host</b>{': ' + esc(run) if run else ''}<br><span "
                  "style='font-size:12px'>processes that printed NCCL lines, by the network "
                  "NCCL chose between nodes</span>")))
    return build_all(jobs)

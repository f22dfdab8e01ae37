"""Plotly figures for mpitrace: message-size histograms per collective, per-rank comm share."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...reports.figures import BAR, COLORS, MAX, MEDIAN, MIN, build_all, drawable, esc, layout
from ...reports.fmt import bin_label
from . import communication as comm

#: jobs drawn per figure kind; the rest are in the tables and exports
MAX_JOBS = 24


def message_size_histogram(bins: pd.DataFrame, *, title: str = "") -> go.Figure:
    """One job's size bins (rows of ``communication.message_sizes``), one colour per routine.

    Three rows share the size axis (power-of-two bins in order, i.e. a log2 scale of
    bytes): calls (log scale), time in s, and the estimated busbw in GB/s per bin.
    Routines with no measurable time that are not collectives are left out.
    """
    bins, unplaced = _placed_bins(bins)
    keep = _drawn_routines(bins)
    bins = bins[bins["routine"].isin(keep)].sort_values("bin", kind="stable")
    if unplaced:
        title += f" <i>({unplaced:,} bin(s) with no finite size: left out)</i>"
    order = bins.drop_duplicates("bin")
    labels = [bin_label(int(b), int(h)) for b, h in zip(order["bin"], order["bin_hi_bytes"],
                                                         strict=True)]
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.05)
    for i, routine in enumerate(keep):
        _add_routine(fig, bins[bins["routine"] == routine], esc(routine),
                     COLORS[i % len(COLORS)])
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=labels)
    layout(fig, title, "", "", height=560)
    fig.update_xaxes(title_text="message size (bytes, power-of-two bins)", tickangle=-40,
                     row=3, col=1)
    if bins["busbw_bytes_per_s"].isna().all():
        fig.add_annotation(text="no busbw: no collective bin with 10 ms or more", showarrow=False,
                           xref="x3 domain", yref="y3 domain", x=0.5, y=0.5)
    fig.update_yaxes(title_text="calls", type="log", row=1, col=1)
    fig.update_yaxes(title_text="time (s)", row=2, col=1)
    fig.update_yaxes(title_text="busbw (GB/s)", row=3, col=1)
    fig.update_layout(barmode="group")
    return fig


def _placed_bins(bins: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """The bins with a size bin and bound that can be labelled, and how many were not."""
    ok = np.isfinite(drawable(bins["bin"])) & np.isfinite(drawable(bins["bin_hi_bytes"]))
    ok &= drawable(bins["bin_hi_bytes"]) < 2.0 ** 63
    return bins[ok], int((~ok).sum())


def _drawn_routines(bins: pd.DataFrame) -> list[str]:
    time = pd.Series(drawable(bins["time_s"]), index=bins.index)
    total = time.groupby(bins["routine"], sort=False, observed=True).sum()
    total = total.sort_values(ascending=False, kind="stable")
    return [str(r) for r, t in total.items() if t > 0 or r in comm.COLLECTIVES]


def _add_routine(fig: go.Figure, rb: pd.DataFrame, name: str, color: str) -> None:
    x = [bin_label(int(b), int(h)) for b, h in zip(rb["bin"], rb["bin_hi_bytes"], strict=True)]
    common = {"x": x, "name": name, "legendgroup": name, "marker_color": color}
    hover = "%{x}<br>%{y:,}<extra>" + name + "</extra>"
    fig.add_trace(go.Bar(y=rb["calls"].astype("float64"), hovertemplate=hover, **common), 1, 1)
    fig.add_trace(go.Bar(y=rb["time_s"].astype("float64"), showlegend=False,
                         hovertemplate="%{x}<br>%{y:,.3f} s<extra>" + name + "</extra>",
                         **common), 2, 1)
    fig.add_trace(go.Scatter(y=rb["busbw_bytes_per_s"].astype("float64") / 1e9,
                             mode="markers+lines", showlegend=False, connectgaps=False,
                             hovertemplate="%{x}<br>busbw %{y:.3g} GB/s<extra>" + name +
                             "</extra>", **common), 3, 1)


def rank_share(ranks: pd.DataFrame, *, job: pd.Series | None = None,
               title: str = "") -> go.Figure:
    """One job's ranks (rows of ``communication.rank_times``): comm time as % of elapsed.

    The ranks with the minimum, median and maximum communication time (as ``job``, a
    ``job_summary`` row, names them; else computed) get their own colour and legend entry.
    x: MPI rank (category); y: ``comm_share`` in %.
    """
    ranks = ranks.sort_values("rank", kind="stable")
    roles = _roles(ranks, job)
    fig = go.Figure()
    plain = ~ranks["rank"].isin(list(roles.values()))
    fig.add_trace(_rank_bar(ranks[plain], "rank", BAR))
    for (role, rank), color in zip(roles.items(), (MIN, MEDIAN, MAX), strict=True):
        fig.add_trace(_rank_bar(ranks[ranks["rank"] == rank], f"{role} comm (rank {rank})",
                                color))
    fig.update_layout(barmode="overlay")
    fig.update_xaxes(type="category", categoryorder="array",
                     categoryarray=[str(r) for r in ranks["rank"]])
    return layout(fig, title, "MPI rank", "time in MPI (% of elapsed)")


def _roles(ranks: pd.DataFrame, job: pd.Series | None) -> dict[str, int]:
    if job is not None and pd.notna(job.get("min_rank")):
        picks = {"min": job["min_rank"], "median": job["median_rank"], "max": job["max_rank"]}
        return {k: int(v) for k, v in picks.items() if pd.notna(v)}
    g = ranks[ranks["comm_time_s"].notna()].sort_values(["comm_time_s", "rank"], kind="stable")
    if g.empty:
        return {}
    n = len(g)
    return {"min": int(g["rank"].iloc[0]), "median": int(g["rank"].iloc[(n - 1) // 2]),
            "max": int(g["rank"].iloc[n - 1])}


def _rank_bar(rows: pd.DataFrame, name: str, color: str) -> go.Bar:
    custom = list(zip([esc(h) for h in rows["host"]], rows["comm_time_s"].astype("float64"),
                      rows["elapsed_s"].astype("float64"), strict=True))
    return go.Bar(x=[str(r) for r in rows["rank"]],
                  y=100 * rows["comm_share"].astype("float64"), name=name, marker_color=color,
                  customdata=custom,
                  hovertemplate="rank %{x} %{customdata[0]}<br>%{y:.1f}% of elapsed<br>"
                  "comm %{customdata[1]:.3f} s of %{customdata[2]:.2f} s<extra></extra>")


def communication_figures(tables: dict[str, pd.DataFrame]) -> dict[str, go.Figure]:
    """Per job with more than one rank listed: the per-rank communication share."""
    jobs, ranks = tables["jobs"], tables["ranks"]
    todo: list[tuple[str, Callable[[], go.Figure]]] = []
    for k, (_, job) in enumerate(jobs.head(MAX_JOBS).iterrows(), start=1):
        mine = ranks[ranks["job"] == job["job"]]
        if len(mine) > 1:
            todo.append((f"job{k}_rank_share", partial(
                rank_share, mine, job=job, title=f"<b>job {esc(job['job'])}</b>: communication "
                f"share per rank ({len(mine)} of {esc(job['nranks'])} ranks)")))
    return build_all(todo)


def message_size_figures(tables: dict[str, pd.DataFrame]) -> dict[str, go.Figure]:
    """Per job: the message-size histogram of its routines."""
    bins = tables["bins"]
    todo: list[tuple[str, Callable[[], go.Figure]]] = []
    for k, job in enumerate(list(dict.fromkeys(bins["job"]))[:MAX_JOBS], start=1):
        jb = bins[bins["job"] == job]
        if _drawn_routines(_placed_bins(jb)[0]):
            n = jb["nranks"].max()
            todo.append((f"job{k}_message_sizes", partial(
                message_size_histogram, jb, title=f"<b>job {esc(job)}</b>: message sizes per "
                "routine" + (f" ({n} ranks)" if pd.notna(n) else ""))))
    return build_all(todo)

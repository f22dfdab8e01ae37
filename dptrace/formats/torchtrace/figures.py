"""Plotly figures for PyTorch profiler traces: the temporal breakdown per rank (stacked bars)
and the step times per rank."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import pandas as pd
import plotly.graph_objects as go

from ...reports.figures import COLORS, build_all, esc, layout

#: the stacked parts of a rank's span, in order: they add up to the span
PARTS = (("overlap_us", "compute + communication"), ("compute_only_us", "compute only"),
         ("exposed_comm_us", "exposed communication"), ("memory_only_us", "memory only"),
         ("idle_us", "idle"))


def _label(r: object, source: object) -> str:
    return f"rank {int(r)}" if not pd.isna(r) else esc(source)  # type: ignore[call-overload]


def breakdown_bars(ranks: pd.DataFrame, *, title: str = "") -> go.Figure:
    """One stacked bar per rank (ms): overlap, compute only, exposed communication, the rest
    busy (memory only) and idle; they add up to the rank's span."""
    df = ranks.copy()
    df["compute_only_us"] = df["compute_us"] - df["overlap_us"]
    busy = df["compute_us"] + df["communication_us"] - df["overlap_us"]
    df["memory_only_us"] = (df["span_us"] - df["idle_us"] - busy).clip(lower=0)
    x = [_label(r, s) for r, s in zip(df["rank"], df["source"], strict=True)]
    fig = go.Figure()
    for k, (col, name) in enumerate(PARTS):
        fig.add_trace(go.Bar(x=x, y=df[col].astype("float64") / 1e3, name=name,
                             marker_color=COLORS[k],
                             hovertemplate="%{x}<br>" + name + " %{y:.3f} ms<extra></extra>"))
    fig.update_layout(barmode="stack")
    return layout(fig, title, "", "time (ms)")


def step_times(steps: pd.DataFrame, *, title: str = "") -> go.Figure:
    """ProfilerStep#N duration (ms) per rank: a line per rank."""
    fig = go.Figure()
    for k, ((r, s), g) in enumerate(steps.groupby(["rank", "source"], dropna=False,
                                                  observed=True, sort=True)):
        fig.add_trace(go.Scatter(x=g["step"].astype("float64"),
                                 y=g["dur_us"].astype("float64") / 1e3, mode="lines+markers",
                                 name=_label(r, s), line={"color": COLORS[k % len(COLORS)]},
                                 hovertemplate="step %{x}<br>%{y:.3f} ms<extra>"
                                               "%{fullData.name}</extra>"))
    return layout(fig, title, "ProfilerStep#", "step time (ms)")


def torch_figures(tables: dict[str, pd.DataFrame]) -> dict[str, go.Figure]:
    """Per run: the temporal breakdown per rank, and the step times when the traces have
    steps."""
    ranks, steps = tables["ranks"], tables["steps"]
    jobs: list[tuple[str, Callable[[], go.Figure]]] = []
    runs = ranks["run"].astype(str).unique().tolist() if "run" in ranks.columns else [""]
    for k, run in enumerate(runs, start=1):
        mine = ranks[ranks["run"].astype(str) == run] if run else ranks
        name = f" of {esc(run)}" if run else ""
        jobs.append((f"run{k}_breakdown", partial(
            breakdown_bars, mine,
            title=f"<b>Temporal breakdown per rank</b>{name}<br><span style='font-size:12px'>"
                  "computation, communication, their overlap and idle time (HTA's "
                  "definitions)</span>")))
        st = steps[steps["run"].astype(str) == run] if run and "run" in steps.columns else steps
        if not st.empty:
            jobs.append((f"run{k}_steps", partial(
                step_times, st, title=f"<b>ProfilerStep times per rank</b>{name}")))
    return build_all(jobs)

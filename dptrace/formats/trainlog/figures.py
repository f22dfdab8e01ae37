"""Plotly figures of the Throughput section (training logs): per series, the instances as
bars (stragglers red, mean and median lines, the job figure) and the per-step lines.

Shared pieces (colours, :func:`~dptrace.reports.figures.layout`, :func:`~dptrace.reports.
figures.esc` for every input string, :func:`~dptrace.reports.figures.build_all` and the
guard against values plotly.js cannot draw) are in :mod:`dptrace.reports.figures`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ...reports.figures import (
    BAR,
    DRAWABLE,
    MEAN,
    MEDIAN,
    STRAGGLER,
    build_all,
    drawable,
    esc,
    layout,
)
from ...reports.fmt import plot_num
from . import throughput as thr
from .instances import shown

#: series drawn (bars and step lines); the rest are in the tables and exports
MAX_SERIES = 12
#: instances drawn as lines in a step series
MAX_LINES = 16


def throughput_bars(inst: pd.DataFrame, *, metric: str, title: str = "",
                    job_value: float | None = None, job_rule: str = "") -> go.Figure:
    """One series' instances (rows of ``per_instance``) as bars; stragglers red.

    Mean and median over the instances are horizontal lines; the job figure (by default
    the sum) is an annotation. x: instance (category); y: ``value`` in ``metric``.
    """
    v = pd.Series(drawable(inst["value"]))
    slow = inst["straggler"].fillna(False).astype(bool)
    fig = go.Figure()
    for name, mask, color in (("instance", ~slow, BAR),
                              (f"straggler (>{thr.STRAGGLER_THRESHOLD:.0%} below median)",
                               slow, STRAGGLER)):
        if mask.any():
            fig.add_trace(_instance_bar(inst[mask], name, color, esc(metric)))
    mean, median = v.mean(), v.median()    # over the drawable values
    if np.isfinite(mean) and abs(mean) <= DRAWABLE:
        fig.add_hline(y=mean, line_dash="dash", line_color=MEAN,
                      annotation_text=f"mean {plot_num(mean)}", annotation_position="top left")
    if np.isfinite(median):
        fig.add_hline(y=median, line_dash="dot", line_color=MEDIAN,
                      annotation_text=f"median {plot_num(median)}",
                      annotation_position="bottom right")
    job = v.sum() if job_value is None else job_value
    rule = job_rule or f"sum over {len(inst)} instances"
    fig.add_annotation(text=f"job: {plot_num(job)} {esc(metric)} ({esc(rule)})", xref="paper",
                       yref="paper", x=0, y=1.0, yanchor="bottom", xanchor="left",
                       showarrow=False)
    fig.update_layout(barmode="overlay")
    fig.update_xaxes(type="category", categoryorder="array",
                     categoryarray=[esc(shown(i)) for i in inst["instance"]])
    return layout(fig, title, "instance", f"{esc(metric)} (after warm-up)")


def _instance_bar(rows: pd.DataFrame, name: str, color: str, metric: str) -> go.Bar:
    below = rows["below_median_pct"].astype("float64").fillna(0.0)
    return go.Bar(x=[esc(shown(i)) for i in rows["instance"]], y=rows["value"].astype("float64"),
                  name=name, marker_color=color, customdata=-below,
                  hovertemplate="instance %{x}<br>%{y:,.2f} " + metric +
                  "<br>%{customdata:+.1f}% vs median<extra></extra>")


def step_series(rows: pd.DataFrame, *, metric: str, title: str = "",
                max_lines: int = MAX_LINES) -> go.Figure:
    """Per-step throughput of one series (throughput rows with a ``step``): a line per instance.

    A boolean ``warmup`` column (from :func:`analysis.throughput.mark_warmup`), when present,
    shades the warm-up steps. x: step; y: ``value`` in ``metric``.
    """
    rows = rows[rows["step"].notna()]
    fig = go.Figure()
    who = rows["instance"].astype("object")
    unknown = who.isna()
    # each printer's rows, in order of appearance; an unknown printer (null) is one more
    # (no groupby with dropna=False: pandas 2 cannot make a group of a null string)
    groups = [(inst, rows[(who == inst) & ~unknown]) for inst in pd.unique(who[~unknown])]
    if unknown.any():
        groups.append((None, rows[unknown]))
    instances = [inst for inst, _ in groups]
    for inst, g in groups[:max_lines]:  # an unknown printer (null instance) is '?'
        g = g.sort_values("step", kind="stable")
        fig.add_trace(go.Scatter(x=g["step"].astype("int64"), y=g["value"].astype("float64"),
                                 mode="lines", name=f"instance {esc(shown(inst))}",
                                 hovertemplate="step %{x}<br>%{y:,.2f}<extra>%{fullData.name}"
                                 "</extra>"))
    if "warmup" in rows and rows["warmup"].any():
        steady = rows.loc[~rows["warmup"].astype(bool), "step"]
        end = steady.min() if len(steady) else rows["step"].max()
        fig.add_vrect(x0=float(rows["step"].min()), x1=float(end), fillcolor="#999",
                      opacity=0.15, line_width=0, annotation_text="warm-up",
                      annotation_position="top left")
    if len(instances) > max_lines:
        title += f" (first {max_lines} of {len(instances)} instances)"
    return layout(fig, title, "step", esc(metric))


def throughput_figures(tables: dict[str, pd.DataFrame], tp: pd.DataFrame,
                       fraction: float = thr.WARMUP_FRACTION) -> dict[str, go.Figure]:
    """The throughput section's figures: per series (non-tqdm first, at most MAX_SERIES), the
    instance bars when it has several instances, and the step lines when it has steps."""
    summary, inst = tables["summary"], tables["instances"]
    order = summary.assign(_tqdm=summary["pattern"] == "tqdm", _one=summary["instances"] < 2)
    order = order.sort_values(["_tqdm", "_one", "source"], kind="stable")
    stepped = tp[tp["step"].notna()]
    if "repeat" in stepped:  # a closing redraw or a double write is not another step
        stepped = stepped[~stepped["repeat"].fillna(False).astype(bool)]
    stepped = stepped.assign(warmup=thr.mark_warmup(stepped, fraction))
    jobs: list[tuple[str, Callable[[], go.Figure]]] = []
    drawn = 0
    for k, (_, row) in enumerate(order.iterrows(), start=1):
        if drawn == MAX_SERIES:
            break
        mine = inst[series_mask(inst, row)]
        steps = stepped[series_mask(stepped, row)]
        bars = len(mine) > 1 and not _identical_copies(row)
        lines = steps["step"].nunique() >= 3
        drawn += bars or lines
        if bars:
            jobs.append((f"series{k}_instances", partial(
                throughput_bars, mine, metric=str(row["metric"]),
                title=_series_title(row, "per instance"), job_value=row["job_value"],
                job_rule=str(row["job_rule"]))))
        if lines:
            jobs.append((f"series{k}_steps", partial(
                step_series, steps, metric=str(row["metric"]),
                title=_series_title(row, "per step"))))
    return build_all(jobs)


def series_mask(df: pd.DataFrame, row: pd.Series) -> pd.Series:
    """Rows of ``df`` that belong to the series ``row`` names (nulls match nulls)."""
    mask = pd.Series(True, index=df.index)
    for col in thr.SERIES:
        mask &= df[col].isna() if pd.isna(row[col]) else df[col] == row[col]
    return mask.fillna(False).astype(bool)


def _series_title(row: pd.Series, what: str) -> str:
    label = f" [{esc(row['label'])}]" if isinstance(row["label"], str) else ""
    return (f"<b>{esc(row['name'])}{label}</b>: {what}<br><span style='font-size:11px'>"
            f"{esc(row['source'])} · scope {esc(row['scope'])}</span>")


def _identical_copies(row: pd.Series) -> bool:
    with np.errstate(invalid="ignore", over="ignore"):
        spread = (row["max"] - row["min"]) / row["median"] if row["median"] else 0.0
    return bool(row["scope"] == "global" and row["instances"] > 1 and spread <= 0.01)

"""Plotly figures for Horovod timelines: activity breakdown, straggler ranks, fused-op sizes,
throughput by op size and cycle times. One set of figures per timeline file.

Tensor, op and activity names come from the input: they go through
:func:`dptrace.reports.figures.esc`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...reports.figures import BAR, COLORS, MAX, MEDIAN, STRAGGLER, build_all, drawable, esc, layout
from ...reports.fmt import bin_label, plot_num, span

#: timeline files drawn; the rest are in the tables and exports
MAX_SOURCES = 16
#: ranks drawn in the straggler chart (the most often last first)
MAX_RANKS = 64
#: bins of the cycle-time histogram (log-spaced between the shortest and longest cycle)
CYCLE_BINS = 40
LAG_P95 = "#b279a2"
LEVEL_COLORS = {"negotiate": "#f58518", "op": "#4c78a8", "activity": "#72b7b2"}
LEVEL_NAMES = {"negotiate": "negotiation", "op": "op (B to E)", "activity": "activity in op"}


def activity_breakdown(acts: pd.DataFrame, *, title: str = "") -> go.Figure:
    """One file's rows of ``analysis.horovod.activity_breakdown`` as horizontal bars.

    y: ``op / activity`` (grouped by op, busiest op first: negotiation, the op, its
    activities); x: ``wall_us`` in s (time at least one tensor was in it); colour: level.
    Hover gives the share of the traced span, interval count, open intervals and mean.
    """
    rows = _tree_order(acts)
    labels = [f"{esc(r.op)} / {esc(r.activity)}" for r in rows.itertuples(index=False)]
    fig = go.Figure()
    for level, color in LEVEL_COLORS.items():
        mask = (rows["level"] == level).to_numpy()
        if not mask.any():
            continue
        sub = rows[mask]
        custom = np.column_stack([100 * sub["span_share"].astype("float64").fillna(0.0),
                                  sub["intervals"].astype("int64"), sub["open"].astype("int64"),
                                  sub["mean_us"].astype("float64") / 1e3])
        fig.add_trace(go.Bar(
            y=[lab for lab, m in zip(labels, mask, strict=True) if m],
            x=sub["wall_us"].astype("float64") / 1e6, orientation="h", name=LEVEL_NAMES[level],
            marker_color=color, customdata=custom,
            hovertemplate="%{y}<br>wall %{x:,.3f} s = %{customdata[0]:.1f}% of span<br>"
            "%{customdata[1]:,} intervals (%{customdata[2]:,} open), mean "
            "%{customdata[3]:,.2f} ms<extra></extra>"))
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=labels,
                     autorange="reversed")
    height = max(260, 120 + 22 * len(labels))
    return layout(fig, title, "wall time (s): at least one tensor in the state", "",
                  height=height)


def _tree_order(acts: pd.DataFrame) -> pd.DataFrame:
    """Rows grouped by op (largest op wall time first), then level, then wall time."""
    order = {"negotiate": 0, "op": 1, "activity": 2}
    op_wall = acts.groupby(acts["op"].astype(str), sort=False)["wall_us"].max()
    return acts.assign(_op=acts["op"].astype(str).map(op_wall), _l=acts["level"].map(order),
                       _name=acts["op"].astype(str)).sort_values(
        ["_op", "_name", "_l", "wall_us"], ascending=[False, True, True, False],
        kind="stable").drop(columns=["_op", "_l", "_name"]).reset_index(drop=True)


def straggler_ranks(ranks: pd.DataFrame, *, title: str = "") -> go.Figure:
    """One file's rows of ``analysis.horovod.straggler_ranks``: who everyone waited for.

    Top: share of compared negotiations in which the rank was the last to report ready
    (%; red: the rank the ``negotiation_straggler`` finding names from the steady state, the
    section's ``straggler`` column, and no other). Bottom: mean and p95 lag behind the first
    rank ready (ms). x: rank (category), in rank order; at most :data:`MAX_RANKS` (the
    section's order: the straggler, then the most often waited for and last first).
    """
    keep = ranks.head(MAX_RANKS).sort_values("rank", kind="stable")
    x = [str(int(r)) for r in keep["rank"]]
    share = 100 * keep["last_share"].astype("float64").fillna(0.0)
    named = (keep["straggler"].astype(bool) if "straggler" in keep.columns
             else pd.Series(False, index=keep.index))
    colors = [STRAGGLER if n else BAR for n in named]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12)
    fig.add_trace(go.Bar(x=x, y=share, name="last to be ready", marker_color=colors,
                         customdata=np.column_stack([keep["last"].astype("int64"),
                                                     keep["negotiations"].astype("int64")]),
                         hovertemplate="rank %{x}: last in %{customdata[0]:,} of "
                         "%{customdata[1]:,} negotiations (%{y:.1f}%)<extra></extra>"), 1, 1)
    for col, name, color in (("mean_lag_us", "mean lag", MEDIAN), ("p95_lag_us", "p95 lag",
                                                                     LAG_P95)):
        fig.add_trace(go.Bar(x=x, y=keep[col].astype("float64") / 1e3, name=name,
                             marker_color=color,
                             hovertemplate="rank %{x}<br>" + name + " %{y:,.2f} ms"
                             "<extra></extra>"), 2, 1)
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=x)
    if len(ranks) > MAX_RANKS:
        title += f" ({MAX_RANKS} of {len(ranks)} ranks: the straggler and the most often last)"
    layout(fig, title, "", "", height=460)
    fig.update_xaxes(title_text="rank", row=2, col=1)
    fig.update_yaxes(title_text="last ready (%)", row=1, col=1)
    fig.update_yaxes(title_text="lag (ms)", row=2, col=1)
    fig.update_layout(barmode="group")
    return fig


def fusion_sizes(sizes: pd.DataFrame, *, title: str = "") -> go.Figure:
    """One file's rows of ``analysis.horovod.fusion_sizes``: ops by tensors fused into them.

    x: tensors per op (bucket, category); y: ops; one bar series per op type.
    """
    fig = go.Figure()
    labels: list[str] = []
    for i, (op, g) in enumerate(sizes.groupby(sizes["op"].astype(str), sort=False)):
        x = [span(lo, hi) for lo, hi in zip(g["min_tensors"], g["max_tensors"], strict=True)]
        labels += [lab for lab in x if lab not in labels]
        fig.add_trace(go.Bar(x=x, y=g["ops"].astype("int64"), name=esc(op),
                             marker_color=COLORS[i % len(COLORS)],
                             customdata=100 * g["share"].astype("float64"),
                             hovertemplate="%{x} tensor(s) per op: %{y:,} ops "
                             "(%{customdata:.1f}%)<extra>" + esc(op) + "</extra>"))
    order = sorted(labels, key=lambda s: int(s.split("-")[0]))
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=order)
    fig.update_layout(barmode="group")
    return layout(fig, title, "tensors fused into one op", "ops")


def op_throughput(tp: pd.DataFrame, *, title: str = "") -> go.Figure:
    """One file's rows of ``analysis.horovod.op_throughput``: rate by fused-op size.

    x: op size (power-of-two bins, as for mpitrace); y: GB/s, as bytes / op time (queueing
    and copies included, bars) and bytes / time in the collective itself (markers).
    """
    fig = go.Figure()
    labels: list[str] = []
    placed = tp["bin"].notna() & (drawable(tp["hi_bytes"]) < 2.0 ** 63)
    if not placed.all():
        title += f" <i>({int((~placed).sum()):,} size bin(s) unknown: left out)</i>"
    tp = tp[placed]
    for i, (op, g) in enumerate(tp.groupby(tp["op"].astype(str), sort=False)):
        g = g.sort_values("bin", kind="stable")
        x = [bin_label(int(b), int(h)) for b, h in zip(g["bin"], g["hi_bytes"], strict=True)]
        labels += [lab for lab in x if lab not in labels]
        color, name = COLORS[i % len(COLORS)], esc(op)
        fig.add_trace(go.Bar(x=x, y=g["op_bytes_per_s"].astype("float64") / 1e9,
                             name=f"{name} op rate", marker_color=color,
                             customdata=g["ops"].astype("int64"),
                             hovertemplate="%{x}: %{y:.3g} GB/s over %{customdata:,} ops"
                             "<extra>" + name + " bytes / op time</extra>"))
        fig.add_trace(go.Scatter(x=x, y=g["comm_bytes_per_s"].astype("float64") / 1e9,
                                 name=f"{name} collective rate", mode="markers",
                                 marker={"color": color, "symbol": "diamond", "size": 9,
                                         "line": {"color": "#222", "width": 1}},
                                 hovertemplate="%{x}: %{y:.3g} GB/s<extra>" + name +
                                 " bytes / collective time</extra>"))
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=labels,
                     tickangle=-40)
    return layout(fig, title, "op size (bytes, power-of-two bins)", "GB/s")


def cycle_times(durations_us: pd.Series, *, title: str = "") -> go.Figure:
    """Histogram of the time between CYCLE_START markers (``hvd_cycles.dur_us``).

    Log-spaced bins (binned here, so a file with millions of cycles stays small), drawn as
    a filled step line; x: cycle time in ms (log axis); y: cycles per bin. Vertical lines
    mark the median and the p95. Cycles of 0 µs (markers sharing a timestamp) and times
    that are not finite cannot be placed on the log axis: the title counts them, and a
    figure with none left says so.
    """
    given = int(durations_us.notna().sum())
    d = drawable(durations_us)
    d = d[d > 0] / 1e3
    if len(d) < given:
        title += (f" <i>({given - len(d):,} cycle time(s) of 0 µs or less, or not finite: "
                  "not drawn)</i>")
    if not d.size:
        fig = go.Figure()
        fig.add_annotation(text="no cycle time above 0 µs to draw (the CYCLE_START markers "
                           "share their timestamps)", showarrow=False, xref="paper",
                           yref="paper", x=0.5, y=0.5)
        return layout(fig, title, "cycle time (ms, log scale)", "cycles", height=200)
    lo, hi = float(d.min()), float(d.max())
    edges = np.geomspace(lo, hi * 1.0001, CYCLE_BINS + 1) if hi > lo else np.array([lo, lo * 2])
    counts, edges = np.histogram(d, bins=edges)
    fig = go.Figure(go.Scatter(
        x=edges, y=np.append(counts, counts[-1]), mode="lines", line_shape="hv",
        fill="tozeroy", line_color=BAR, name="cycles per bin",
        customdata=np.append(edges[1:], edges[-1]),
        hovertemplate="%{x:.3g}-%{customdata:.3g} ms: %{y:,} cycles<extra></extra>"))
    top = float(counts.max())
    for q, name, color in ((0.5, "median", MEDIAN), (0.95, "p95", MAX)):
        v = float(np.quantile(d, q))
        fig.add_trace(go.Scatter(x=[v, v], y=[0, top], mode="lines",
                                 name=f"{name} {plot_num(v, 3)} ms",
                                 line={"color": color, "dash": "dash"}, hoverinfo="name"))
    fig.update_xaxes(type="log")
    return layout(fig, title, "cycle time (ms, log scale)", "cycles")


def horovod_figures(tables: dict[str, pd.DataFrame],
                    cycles: pd.DataFrame) -> dict[str, go.Figure]:
    """Per timeline file: activities; stragglers (2+ ranks compared); fused-op sizes (when
    an op carried 2+ tensors); throughput by size (2+ ranks); cycle times (3+ markers)."""
    jobs: list[tuple[str, Callable[[], go.Figure]]] = []
    for k, run in enumerate(tables["runs"].head(MAX_SOURCES).itertuples(index=False), start=1):
        src = str(run.source)
        ranks = int(run.ranks) if pd.notna(run.ranks) else 0
        jobs += [(f"file{k}_{name}", job) for name, job in _file_figures(tables, cycles, src,
                                                                          ranks)]
    return build_all(jobs)


def _file_figures(tables: dict[str, pd.DataFrame], cycles: pd.DataFrame, src: str,
                  ranks: int) -> list[tuple[str, Callable[[], go.Figure]]]:
    def rows(name: str) -> pd.DataFrame:
        df = tables[name]
        return df[df["source"].astype(str) == src] if len(df) else df

    head = f"<b>{esc(src)}</b>: "
    out: list[tuple[str, Callable[[], go.Figure]]] = []
    acts = rows("activities")
    if len(acts):
        out.append(("activities", partial(activity_breakdown, acts,
                                          title=head + "time per activity")))
    strag = rows("stragglers")
    if len(strag) > 1:
        out.append(("stragglers", partial(
            straggler_ranks, strag, title=head + "straggler ranks (last to report a tensor "
            "ready)")))
    sizes = rows("fusion_sizes")
    if len(sizes) and sizes["max_tensors"].max() > 1:
        out.append(("fusion_sizes", partial(fusion_sizes, sizes,
                                            title=head + "tensors per fused op")))
    tp = rows("throughput")
    if len(tp) and ranks > 1:
        out.append(("throughput", partial(op_throughput, tp,
                                          title=head + "throughput by op size")))
    mine = cycles[cycles["source"].astype(str) == src]["dur_us"] if len(cycles) else None
    if mine is not None and (drawable(mine) > 0).sum() >= 2:  # 2+ cycles on the log axis
        out.append(("cycles", partial(cycle_times, mine, title=head + "cycle times "
                                      "(CYCLE_START to CYCLE_START)")))
    return out

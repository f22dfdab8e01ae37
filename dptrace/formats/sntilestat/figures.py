"""Plotly figures for SambaNova sntilestat: the tile heatmap per snapshot, and %exec per
instance over a capture's snapshots."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ...reports.figures import build_all, drawable, esc, layout
from .compute import instance_numbers, tile_columns

#: sources drawn; the rest are in the tables and exports
MAX_SOURCES = 24
#: snapshots a heatmap's slider steps through; longer captures are sampled evenly
MAX_FRAMES = 120
#: instances drawn as lines in the %exec-over-time chart
MAX_LINES = 16
#: red (idle) -> yellow -> green (busy)
EXEC_SCALE = [[0.0, "#d73027"], [0.5, "#fee08b"], [0.8, "#a6d96a"], [1.0, "#1a9850"]]


def tile_heatmap(tiles: pd.DataFrame, *, title: str = "") -> go.Figure:
    """One source's ``tiles`` rows: %exec per tile, each cell labelled with its instance.

    y: XRDU/RDU pairs listed; x: TILE_k for the tile numbers listed (the grid is sized by
    the tiles that exist, so a listing naming TILE_20000000 gives one more column, not 20
    million); z: ``exec_pct`` (0-100 %), null (grey) for tiles no process owns. Instances
    are numbered #1, #2, ...
    by first appearance of their PID, as ``analysis.tiles.grid`` numbers them. With several
    snapshots the figure opens on the mean over snapshots and a slider steps through each
    (through :data:`MAX_FRAMES` evenly spaced ones, first and last included, in longer
    captures).
    """
    numbers = instance_numbers(tiles)
    rows, cols = _rows(tiles), tile_columns(tiles)
    undrawable = int((tiles["exec_pct"].notna() & np.isnan(drawable(tiles["exec_pct"]))).sum())
    if undrawable:
        title += f" <i>({undrawable:,} %exec value(s) not finite or too large: left grey)</i>"
    frames = [("mean", _matrix(tiles, rows, cols, numbers))]
    snaps = sorted(int(s) for s in tiles["snapshot"].dropna().unique())
    shown = sample_snapshots(snaps)
    if len(snaps) > 1:
        frames += [(_snap_label(tiles, s), _matrix(tiles[tiles["snapshot"] == s], rows, cols,
                                                   numbers)) for s in shown]
    z, text = frames[0][1]
    fig = go.Figure(go.Heatmap(
        z=z, text=text, texttemplate="%{text}", x=[f"TILE_{k}" for k in cols],
        y=[f"{x}/{r}" for x, r in rows], zmin=0, zmax=100, colorscale=EXEC_SCALE,
        colorbar={"title": {"text": "%exec"}, "ticksuffix": "%"}, xgap=2, ygap=2,
        hovertemplate="XRDU/RDU %{y} %{x}<br>exec %{z:.1f}%<br>%{text}<extra></extra>"))
    if len(frames) > 1:
        prefix = "snapshot: " if len(shown) == len(snaps) else \
            f"snapshot ({len(shown)} of {len(snaps)} shown): "
        fig.update_layout(sliders=[_slider(frames, prefix)])
    fig.update_yaxes(type="category", autorange="reversed")
    fig.update_xaxes(type="category", side="top")
    height = 160 + 34 * len(rows) + (70 if len(frames) > 1 else 0)
    layout(fig, title, "", "XRDU/RDU", height=height)
    fig.update_layout(margin={"t": 100}, plot_bgcolor="#d9d9d9")
    return fig


def _rows(tiles: pd.DataFrame) -> list[tuple[int, int]]:
    pairs = tiles[["xrdu", "rdu"]].dropna().drop_duplicates().astype("int64")
    return sorted(map(tuple, pairs.to_numpy().tolist()))


def _matrix(tiles: pd.DataFrame, rows: list[tuple[int, int]], cols: list[int],
            numbers: dict[int, int]) -> tuple[list[list[float | None]], list[list[str]]]:
    """Mean %exec and instance label ('#n') of each (XRDU/RDU, tile) cell; None when idle.
    ``rows`` and ``cols`` are the XRDU/RDU pairs and tile numbers that exist."""
    index = {r: i for i, r in enumerate(rows)}
    column = {t: j for j, t in enumerate(cols)}
    z = np.full((len(rows), len(cols)), np.nan)
    text = [[""] * len(cols) for _ in rows]
    g = tiles.groupby(["xrdu", "rdu", "tile"], sort=False).agg(
        exec_pct=("exec_pct", "mean"), pid=("pid", "last"))
    for (x, r, t), cell in g.iterrows():
        i, j = index[(int(x), int(r))], column[int(t)]
        if pd.notna(cell["pid"]):  # idle tiles stay empty: the grey background
            z[i, j] = cell["exec_pct"]
            text[i][j] = f"#{numbers[int(cell['pid'])]}"
    cells = drawable(z.ravel()).reshape(z.shape)  # inf, 1e308: no colour (grey)
    return [[None if np.isnan(v) else round(float(v), 2) for v in row] for row in cells], text


def _snap_label(tiles: pd.DataFrame, snap: int) -> str:
    when = tiles.loc[tiles["snapshot"] == snap, "time"].dropna()
    return f"#{snap} {when.iloc[0]:%H:%M:%S}" if len(when) else f"#{snap}"


def sample_snapshots(snaps: list[int], limit: int | None = None) -> list[int]:
    """At most ``limit`` (default :data:`MAX_FRAMES`) of ``snaps``, evenly spaced, keeping
    the first and the last."""
    limit = MAX_FRAMES if limit is None else limit
    if len(snaps) <= limit:
        return snaps
    picks = np.unique(np.linspace(0, len(snaps) - 1, limit).round().astype(int))
    return [snaps[i] for i in picks]


def _slider(frames: list[tuple[str, tuple[list, list]]], prefix: str = "snapshot: ") -> dict:
    steps = [{"label": label, "method": "restyle", "args": [{"z": [z], "text": [text]}]}
             for label, (z, text) in frames]
    return {"active": 0, "steps": steps, "currentvalue": {"prefix": prefix},
            "pad": {"t": 10}, "len": 1.0}


def exec_over_time(series: pd.DataFrame, *, title: str = "",
                   numbers: dict[int, int] | None = None) -> go.Figure:
    """One capture's rows of ``analysis.tiles.exec_series``: mean %exec per instance.

    x: snapshot time when the ``watch`` headers give it, else the snapshot number; y:
    ``exec_mean_pct`` (0-100 %); one line per instance, at most :data:`MAX_LINES`, named
    #n as in the heatmap (``numbers``: PID -> n, from
    :func:`analysis.tiles.instance_numbers`; by default by first appearance in ``series``).
    """
    timed = series["time"].notna().all()
    fig = go.Figure()
    if numbers is None:
        numbers = instance_numbers(series)
    pids = sorted({int(p) for p in series["pid"].dropna()},
                  key=lambda p: numbers.get(p, len(numbers) + 1))
    for pid in pids[:MAX_LINES]:
        n = numbers.get(pid, "?")
        g = series[series["pid"] == pid].sort_values("snapshot", kind="stable")
        fig.add_trace(go.Scatter(
            x=g["time"] if timed else g["snapshot"].astype("int64"),
            y=g["exec_mean_pct"].astype("float64"), mode="lines+markers",
            name=f"#{n} (PID {int(pid)})", customdata=g["tiles"].astype("int64"),
            hovertemplate="%{x}<br>exec %{y:.1f}% over %{customdata} tiles"
            "<extra>%{fullData.name}</extra>"))
    if len(pids) > MAX_LINES:
        title += f" (first {MAX_LINES} of {len(pids)} instances)"
    layout(fig, title, "snapshot time" if timed else "snapshot", "mean %exec of its tiles")
    fig.update_yaxes(range=[0, 102], ticksuffix="%")
    fig.update_layout(legend={"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1,
                              "yanchor": "top"}, margin={"r": 160})
    return fig


def tiles_figures(tables: dict[str, pd.DataFrame], tiles: pd.DataFrame) -> dict[str, go.Figure]:
    """Per source: the tile heatmap (mean and per snapshot); for captures with several
    snapshots, %exec per instance over time."""
    jobs: list[tuple[str, Callable[[], go.Figure]]] = []
    overview = tables["overview"]
    for k, row in enumerate(overview.head(MAX_SOURCES).itertuples(index=False), start=1):
        mine = tiles[tiles["source"] == row.source]
        host = mine["host"].dropna()
        where = f" on {esc(host.iloc[0])}" if len(host) else ""
        jobs.append((f"source{k}_heatmap", partial(
            tile_heatmap, mine, title=f"<b>{esc(row.source)}</b>{where}<br><span "
            f"style='font-size:12px'>%exec per tile; #n = instance (one PID), grey = idle; "
            f"{row.instances} instance(s), {row.snapshots} snapshot(s)</span>")))
        series = tables["exec_series"]
        series = series[series["source"] == row.source]
        if row.snapshots > 1 and len(series):
            jobs.append((f"source{k}_exec_over_time", partial(
                exec_over_time, series, title=f"<b>{esc(row.source)}</b>: %exec per instance "
                "over the snapshots", numbers=instance_numbers(mine))))
    return build_all(jobs)

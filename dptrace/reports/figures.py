"""Plotly figures for the report: DataFrames in, ``go.Figure`` out (plotly-express style).

Figure functions never call ``.show()`` and never parse: they draw analysis tables. This
module holds what every figure shares (colours, :func:`layout`, :func:`esc`, :func:`guard`,
:func:`drawable`, :func:`build_all`); the figures themselves live with their format, in
``dptrace/formats/<format>/figures.py`` (the area modules): throughput (trainlog), message
sizes and per-rank communication share (mpitrace), Horovod timelines (horovod), tile
heatmaps (sntilestat).

Escaping: plotly draws titles, tick labels, legend entries and hover text as pseudo-HTML
(``<b>``, ``<br>``, ``<a href>``). Every string that comes from an input (file names,
instances, routines, hosts, commands, tqdm labels) goes through :func:`esc` first, so
``<img src=x onerror=alert(1)>`` arrives as ``&lt;img ...&gt;`` and is drawn as text.

Numbers that cannot be drawn: tables can hold ``inf`` or values like ``1e308`` (a log line
printing ``1e999``, sums that overflow). plotly.js cannot place them (an axis range of
Infinity draws nothing), so every figure an area module returns goes through
:func:`guard`: values that are not finite or beyond :data:`DRAWABLE` in the traces become
missing, shapes and annotations placed at them are dropped, and the title says how many
values were left out. Statistics drawn as lines (mean, median, quantiles) are taken over the
drawable values only (:func:`drawable`). A figure function that still fails gives a figure
that says so instead of stopping the report (:func:`build_all`).
"""

from __future__ import annotations

import html
import math
import traceback
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

BAR, STRAGGLER, MEAN, MEDIAN, MIN, MAX = ("#4c78a8", "#e45756", "#54a24b", "#f58518",
                                          "#54a24b", "#e45756")
COLORS = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#eeca3b",
          "#9d755d", "#bab0ac", "#ff9da6"]
#: a small template: plotly's default one adds ~7 KB of JSON to every figure
TEMPLATE = go.layout.Template(layout={
    "font": {"family": "system-ui, sans-serif", "size": 12, "color": "#222"},
    "paper_bgcolor": "white", "plot_bgcolor": "white",
    "colorway": COLORS,
    "xaxis": {"gridcolor": "#eee", "linecolor": "#999", "zeroline": False, "automargin": True},
    "yaxis": {"gridcolor": "#eee", "linecolor": "#999", "zeroline": False, "automargin": True},
    "hoverlabel": {"align": "left"},
})


#: the largest magnitude drawn; beyond it an axis with padding overflows in plotly.js
DRAWABLE = 1e300
#: trace attributes holding the numbers drawn (counted in the title's note when left out),
#: then the ones only shown on hover or sizing bars (cleaned, not counted)
_DRAWN = ("x", "y", "z")
_NUMERIC = (*_DRAWN, "customdata", "base", "width")


def drawable(values: Any) -> np.ndarray:
    """float64 values with the ones that cannot be drawn (inf, beyond :data:`DRAWABLE`) as NaN."""
    v = pd.to_numeric(pd.Series(values), errors="coerce").astype("float64").to_numpy()
    return np.where(np.abs(v) <= DRAWABLE, v, np.nan)


def _clean(value: Any) -> tuple[Any, int]:
    """``value`` (a trace array, nested lists) with undrawable numbers as NaN / None, and
    how many there were."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "fc":
            bad = ~(np.abs(value) <= DRAWABLE) & ~np.isnan(value)
            n = int(np.count_nonzero(bad))
            return (np.where(bad, np.nan, value), n) if n else (value, 0)
        if value.dtype.kind == "O":
            out, n = _clean(value.tolist())
            return (np.array(out, dtype=object), n) if n else (value, 0)
        return value, 0
    if isinstance(value, (list, tuple)):
        items, total = [], 0
        for item in value:
            fixed, n = _clean(item)
            items.append(fixed)
            total += n
        return (type(value)(items) if total else value), total
    if isinstance(value, (float, np.floating)) and not math.isnan(value) \
            and not abs(value) <= DRAWABLE:
        return None, 1
    return value, 0


def _placed(item: Any) -> bool:
    """A shape or annotation whose coordinates can be drawn."""
    for key in ("x", "y", "x0", "x1", "y0", "y1"):
        v = getattr(item, key, None)
        if isinstance(v, (int, float, np.number)) and not isinstance(v, bool) \
                and not abs(float(v)) <= DRAWABLE:
            return False
    return True


def guard(fig: go.Figure) -> go.Figure:
    """Make ``fig`` safe for plotly.js: see the module docstring. Returns ``fig``."""
    dropped = 0
    for trace in fig.data:
        for key in _NUMERIC:
            value = getattr(trace, key, None)
            if value is None or isinstance(value, str):
                continue
            fixed, n = _clean(value)
            if n:
                trace[key] = fixed
                dropped += n if key in _DRAWN else 0
    for kind in ("shapes", "annotations"):
        items = fig.layout[kind]
        keep = [item for item in items if _placed(item)]
        if len(keep) < len(items):
            fig.layout[kind] = keep
    if dropped:
        title = fig.layout.title.text or ""
        fig.update_layout(title_text=f"{title} <i>({dropped:,} value(s) not finite or too "
                          "large to draw: left out)</i>")
    return fig


def build_all(jobs: Iterable[tuple[str, Callable[[], go.Figure]]]) -> dict[str, go.Figure]:
    """Build each named figure and :func:`guard` it; a figure function that fails gives a
    figure saying so (naming the error), so one bad table never costs the report."""
    out: dict[str, go.Figure] = {}
    for name, job in jobs:
        try:
            out[name] = guard(job())
        except Exception as exc:  # a figure must not stop the report
            where = traceback.extract_tb(exc.__traceback__)[-1]
            fig = go.Figure()
            fig.add_annotation(text=esc(f"this figure could not be drawn: {type(exc).__name__}: "
                                        f"{exc} (at {where.name}:{where.lineno}; please "
                                        "report)"), showarrow=False, xref="paper",
                               yref="paper", x=0.5, y=0.5)
            fig.update_xaxes(visible=False)
            fig.update_yaxes(visible=False)
            out[name] = layout(fig, esc(name), "", "", height=160)
    return out


def esc(value: object) -> str:
    """An input string made safe for plotly's pseudo-HTML text ('' for missing values)."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ""
    return html.escape(str(value), quote=False)


def layout(fig: go.Figure, title: str, x_title: str, y_title: str,
           height: int = 360) -> go.Figure:
    """Common look: left title, small margins, the light template, axis titles with units."""
    fig.update_layout(template=TEMPLATE, height=height, title={"text": title, "x": 0.01},
                      margin={"l": 60, "r": 20, "t": 90, "b": 50},
                      legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 1,
                              "xanchor": "right"})
    fig.update_xaxes(title_text=x_title)
    fig.update_yaxes(title_text=y_title)
    return fig

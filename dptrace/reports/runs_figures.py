"""Plotly figures of the compare and scaling reports (:mod:`.sections.runs`).

Compare: paired bars of the largest changes in time, the message-size histograms of both
runs overlaid, per-rank communication of both runs. Scaling: job throughput (rates) against
workers with the ideal line, the step time against workers (better lower; its ideal only
where the efficiency is known, the global batch per step printed), efficiency against
workers, communication share against workers, and the MPI time per routine of each run
stacked.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from .figures import BAR, COLORS, MAX, build_all, esc, layout

#: routines drawn in the stacked chart; the rest are summed as "other"
MAX_ROUTINES = 8


def compare_figures(tables: dict[str, pd.DataFrame], *, base: str = "base",
                    candidate: str = "candidate") -> dict[str, go.Figure]:
    jobs = [("largest_changes", lambda: _changes(tables.get("changes"), base, candidate)),
            ("message_sizes", lambda: _paired(tables.get("message_sizes"), base, candidate,
                                              "Time per rank by message size", "time per "
                                              "rank (s)")),
            ("ranks", lambda: _paired(tables.get("ranks"), base, candidate,
                                      "Communication time per rank", "MPI time (s)"))]
    return build_all((n, f) for n, f in jobs if _has(tables.get(_SOURCE[n])))


_SOURCE = {"largest_changes": "changes", "message_sizes": "message_sizes", "ranks": "ranks"}


def _has(df: pd.DataFrame | None) -> bool:
    return df is not None and not df.empty


def _changes(df: pd.DataFrame | None, base: str, cand: str) -> go.Figure:
    assert df is not None
    keys = [esc(f"{k} ({m})" if m not in ("time_s_per_rank",) else k)
            for k, m in zip(df["key"], df["metric"], strict=True)]
    fig = go.Figure([
        go.Bar(name=esc(base), y=keys, x=df["base"], orientation="h", marker_color=BAR),
        go.Bar(name=esc(cand), y=keys, x=df["candidate"], orientation="h", marker_color=MAX)])
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_layout(barmode="group")
    return layout(fig, f"What changed most in time: {esc(base)} vs {esc(cand)}", "seconds", "",
                  height=max(300, 60 + 44 * len(df)))


def _paired(df: pd.DataFrame | None, base: str, cand: str, title: str,
            y_title: str) -> go.Figure:
    assert df is not None
    keys = [esc(k) for k in df["key"]]
    fig = go.Figure([go.Bar(name=esc(n), x=keys, y=df[n], marker_color=c)
                     for n, c in ((base, BAR), (cand, MAX)) if n in df.columns])
    fig.update_xaxes(type="category")
    fig.update_layout(barmode="group")
    return layout(fig, f"{title}: {esc(base)} vs {esc(cand)}", "", y_title)


def scaling_figures(tables: dict[str, pd.DataFrame], *, by: str = "ranks",
                    ) -> dict[str, go.Figure]:
    sc = tables.get("scaling")
    jobs = []
    if _has(sc) and sc is not None and sc["job_value"].notna().any():
        times = _times(sc)
        if (~times & sc["job_value"].notna()).any():
            jobs.append(("throughput", lambda: _throughput(sc[~times], by)))
        if (times & sc["job_value"].notna()).any():
            jobs.append(("step_time", lambda: _step_time(sc[times], by)))
        if sc["efficiency"].notna().any():
            jobs.append(("efficiency", lambda: _efficiency(sc, by)))
    if _has(sc) and sc is not None and sc["comm_share"].notna().any():
        jobs.append(("comm_share", lambda: _comm_share(sc, by)))
    if _has(tables.get("routines")):
        jobs.append(("routines", lambda: _stacked_routines(tables["routines"])))
    return build_all(jobs)


def _times(sc: pd.DataFrame) -> pd.Series:
    """Rows whose job figure is a time (the step time: better lower)."""
    if "better" in sc.columns:
        return (sc["better"].astype(object) == "lower").fillna(False).astype(bool)
    return pd.Series(False, index=sc.index)


def _step_time(sc: pd.DataFrame, by: str) -> go.Figure:
    """The step time against workers; the ideal step time (the step time x efficiency:
    the base's step time scaled by the global batch and the workers) where it is known."""
    fig = go.Figure()
    pts = _points(sc[sc["job_value"].notna()])
    for i, (metric, g) in enumerate(pts.groupby("metric", sort=False)):
        color = COLORS[i % len(COLORS)]
        x = g["workers"].astype("float64")
        fig.add_trace(go.Scatter(x=x, y=g["job_value"], mode="lines+markers",
                                 name=esc(metric), marker_color=color,
                                 text=[esc(v) for v in g["label"]],
                                 hovertemplate="%{text}: %{y:,.4g} s at %{x} " + esc(by)
                                 + "<extra></extra>"))
        known = g[g["efficiency"].notna()]
        if len(known) > 1:
            fig.add_trace(go.Scatter(x=known["workers"].astype("float64"),
                                     y=known["job_value"] * known["efficiency"],
                                     mode="lines", name=f"ideal ({esc(metric)})",
                                     line={"dash": "dot", "color": color}))
    return layout(fig, "Step time against workers (lower is faster)", esc(by),
                  "step time (s)")


def _points(sc: pd.DataFrame) -> pd.DataFrame:
    return sc[sc["workers"].notna()].sort_values("workers", kind="stable")


def _throughput(sc: pd.DataFrame, by: str) -> go.Figure:
    fig = go.Figure()
    pts = _points(sc[sc["job_value"].notna()])
    for i, (metric, g) in enumerate(pts.groupby("metric", sort=False)):
        color = COLORS[i % len(COLORS)]
        x = g["workers"].astype("float64")
        fig.add_trace(go.Scatter(x=x, y=g["job_value"], mode="lines+markers",
                                 name=esc(metric), marker_color=color,
                                 text=[esc(v) for v in g["label"]],
                                 hovertemplate="%{text}: %{y:,.4g} at %{x} " + esc(by)
                                 + "<extra></extra>"))
        base = g[g["run"] == g["base_run"]]
        if len(base):
            b = base.iloc[0]
            ideal = b["job_value"] * x / float(b["workers"])
            fig.add_trace(go.Scatter(x=x, y=ideal, mode="lines", name=f"ideal ({esc(metric)})",
                                     line={"dash": "dot", "color": color}))
    return layout(fig, "Job throughput against workers, with the ideal line", esc(by),
                  "throughput (/s)")


def _efficiency(sc: pd.DataFrame, by: str) -> go.Figure:
    fig = go.Figure()
    pts = _points(sc[sc["efficiency"].notna()])
    for i, (metric, g) in enumerate(pts.groupby("metric", sort=False)):
        fig.add_trace(go.Scatter(x=g["workers"].astype("float64"), y=g["efficiency"] * 100,
                                 mode="lines+markers", name=esc(metric),
                                 marker_color=COLORS[i % len(COLORS)]))
    fig.add_hline(y=100, line_dash="dot", line_color="#999")
    return layout(fig, "Scaling efficiency against workers", esc(by), "efficiency (%)")


def _comm_share(sc: pd.DataFrame, by: str) -> go.Figure:
    pts = _points(sc.drop_duplicates("run"))
    pts = pts[pts["comm_share"].notna()]
    fig = go.Figure(go.Scatter(x=pts["workers"].astype("float64"), y=pts["comm_share"] * 100,
                               mode="lines+markers", marker_color=BAR,
                               text=[esc(v) for v in pts["comm_from"]], name="communication"))
    return layout(fig, "Communication share of elapsed time against workers", esc(by),
                  "share (%)")


def _stacked_routines(df: pd.DataFrame) -> go.Figure:
    runs = [c for c in df.columns if c != "key"]
    total = df[runs].sum(axis=1)
    order = total.sort_values(ascending=False, kind="stable").index
    top, rest = order[:MAX_ROUTINES], order[MAX_ROUTINES:]
    fig = go.Figure()
    for i, j in enumerate(top):
        fig.add_trace(go.Bar(name=esc(df.loc[j, "key"]), x=[esc(r) for r in runs],
                             y=[df.loc[j, r] for r in runs], marker_color=COLORS[i % 10]))
    if len(rest):
        fig.add_trace(go.Bar(name="other", x=[esc(r) for r in runs],
                             y=df.loc[rest, runs].sum(axis=0).tolist(), marker_color="#bbb"))
    fig.update_xaxes(type="category")
    fig.update_layout(barmode="stack")
    return layout(fig, "MPI time per rank by routine, per run", "run", "time per rank (s)")

"""The fleet dashboard (``dptrace survey --html FILE``): one self-contained, offline HTML page
over a survey, the way the report's dashboard is (:mod:`dptrace.reports.html`: plotly.js
inlined once, nothing fetched, every string from an input escaped).

What it shows, in the order a reader asks:

- **throughput per GPU over time**: each run's per-GPU job figure at its start (the run's
  end, else its files' times; runs without any time in survey order), one trace per metric
  and world size, so that a system upgrade or a slow week shows as a step;
- **findings by kind**: how many runs each finding kind fired in, by severity;
- **hosts by straggler count**: the hosts a straggler finding names, by the number of runs
  (a host that straggles in many jobs is a node to drain);
- the survey's lists (slow runs against their own history, repeat-offender hosts, runs on
  a fallback network, runs that failed) and the fleet table, each run linked to its own
  report where one was written (:func:`write` with ``reports``).
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from .. import __version__
from ..reports.html import _e
from ..reports.safe_text import visible_frame
from . import summary as fs

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from .api import Fleet

#: runs linked to their own report by default (the most interesting first)
REPORTS = 50
#: rows of the fleet table written into the page
MAX_ROWS = 500
#: hosts in the straggler figure
TOP_HOSTS = 30
_SEVERITIES = ("critical", "warning", "info")
_COLOURS = {"critical": "#c00", "warning": "#d90", "info": "#789"}


def render(fleet: Fleet, *, links: Mapping[str, str] | None = None) -> str:
    """The dashboard as one HTML document; ``links``: run key -> the href of its report."""
    from ..reports.html import _CSS, _OPEN_TARGET, plotly_loader

    links = dict(links or {})
    figures = [("throughput", "Throughput per GPU over time", _throughput(fleet.fleet)),
               ("findings", "Findings by kind", _findings(fleet.findings)),
               ("hosts", "Hosts by straggler count", _hosts(fleet.ranks))]
    lists = [("slow runs", "Runs below 90% of their history's median per-GPU figure (same "
              "metric, world size and formats)", fs.slow_runs(fleet.fleet)),
             ("repeat-offender hosts", "Hosts a straggler finding names in two runs or more",
              fs.repeat_hosts(fleet.ranks)),
             ("fallback network", "Runs where NCCL fell back to TCP sockets",
              fs.fallback_runs(fleet.fleet, fleet.findings)),
             ("failed", "Job folders that could not be read", fs.failed_runs(fleet.fleet))]
    body = "".join(_figure_section(name, title, fig) for name, title, fig in figures)
    body += "".join(_list_section(name, caption, df, links) for name, caption, df in lists)
    body += _list_section("fleet", "One row per run: its job figure, communication share, "
                          "network and findings (all rows: --json or --out)",
                          fleet.fleet, links, limit=MAX_ROWS)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    facts = [("runs", str(len(fleet.fleet))),
             ("job folders", str(fleet.fleet["path"].nunique()) if len(fleet.fleet) else "0"),
             ("findings", ", ".join(f"{_count(fleet.findings, s)} {s}" for s in _SEVERITIES)),
             ("reports linked", str(len(links))),
             ("made by", f"dptrace {__version__}, {stamp}")]
    head = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in facts)
    nav = " ".join(f"<a href='#{_id(n)}'>{_e(n)}</a>" for n, _, _ in figures + lists)
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>dptrace survey</title><style>{_CSS}</style>{plotly_loader()}</head>"
            f"<body><header><h1>dptrace survey</h1><table class='facts'>{head}</table>"
            f"<nav>{nav} <a href='#fleet'>fleet</a></nav></header><main>{body}</main>"
            f"<script>{_OPEN_TARGET}</script></body></html>\n")


def write(fleet: Fleet, path: str | os.PathLike[str], *, reports: int = REPORTS) -> Path:
    """Write the dashboard to ``path`` (atomically: a temporary file, then a rename) and
    the reports of the ``reports`` most interesting runs beside it, in ``<path
    stem>_reports/`` (read from the survey's cache, else parsed from their folders); the
    page links each of them. Returns the page's path."""
    target = Path(path)
    links = _write_reports(fleet, target, reports) if reports > 0 else {}
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(render(fleet, links=links), encoding="utf-8")
    os.replace(tmp, target)
    return target


# -- figures ----------------------------------------------------------------------------------

def _throughput(fleet: pd.DataFrame) -> go.Figure | None:
    import plotly.graph_objects as go

    from ..reports.figures import esc, guard, layout

    df = fleet[fleet["per_gpu"].notna()] if len(fleet) else fleet
    if df.empty:
        return None
    when = df["start"].where(df["start"].notna(), df["end"])
    timed = when.notna().any()
    x = when if timed else pd.Series(range(len(df)), index=df.index)
    fig = go.Figure()
    groups = df.groupby([df["metric"].astype(object).fillna("?"),
                         df["world_size"].astype(object).fillna(-1)], sort=True)
    for (metric, world), g in groups:
        label = f"{metric}, {int(world)} ranks" if world != -1 else str(metric)
        fig.add_trace(go.Scatter(
            x=x.loc[g.index], y=g["per_gpu"].astype(float), mode="markers", name=esc(label),
            text=[esc(f"{r} ({p})") for r, p in zip(g["run"], g["path"], strict=True)],
            hovertemplate="%{text}<br>%{y:,.4g} per GPU<extra></extra>"))
    layout(fig, "Job figure per GPU (per process) of each run", "run start" if timed
           else "run (survey order)", "per GPU")
    return guard(fig)


def _findings(findings: pd.DataFrame) -> go.Figure | None:
    import plotly.graph_objects as go

    from ..reports.figures import esc, guard, layout

    if findings.empty:
        return None
    runs = (findings.assign(kind=findings["kind"].astype(object),
                            severity=findings["severity"].astype(object))
            .groupby(["kind", "severity"])["run_key"].nunique().unstack(fill_value=0))
    order = runs.sum(axis=1).sort_values(ascending=True).index
    fig = go.Figure()
    for sev in _SEVERITIES:
        if sev in runs.columns:
            fig.add_trace(go.Bar(y=[esc(k) for k in order], x=runs.loc[order, sev],
                                 orientation="h", name=sev, marker_color=_COLOURS[sev]))
    fig.update_layout(barmode="stack", height=max(260, 22 * len(order) + 120))
    layout(fig, "Runs in which each finding fired", "runs", "")
    return guard(fig)


def _hosts(ranks: pd.DataFrame) -> go.Figure | None:
    import plotly.graph_objects as go

    from ..reports.figures import esc, guard, layout

    if ranks.empty or "host" not in ranks:
        return None
    strag = ranks[ranks["straggler"].fillna(False).astype(bool) & ranks["host"].notna()]
    if strag.empty:
        return None
    per = strag.groupby(strag["host"].astype(object))["run_key"].nunique()
    per = per.sort_values(ascending=False, kind="stable").head(TOP_HOSTS)[::-1]
    fig = go.Figure(go.Bar(y=[esc(h) for h in per.index], x=per.to_numpy(), orientation="h",
                           marker_color="#d90",
                           hovertemplate="%{y}: straggler in %{x} runs<extra></extra>"))
    fig.update_layout(height=max(260, 22 * len(per) + 120))
    layout(fig, f"Hosts a straggler finding names (top {TOP_HOSTS}), by runs", "runs", "")
    return guard(fig)


# -- page parts -------------------------------------------------------------------------------

def _figure_section(name: str, title: str, fig: Any) -> str:
    if fig is None:
        inner = "<p class='note'>nothing to draw: no run gives it</p>"
    else:
        inner = fig.to_html(full_html=False, include_plotlyjs=False, div_id=f"fig-{_id(name)}",
                            config={"displaylogo": False, "responsive": True})
        inner = f"<figure data-figure='fleet.{_id(name)}'>{inner}</figure>"
    return f"<section id='{_id(name)}'><h2>{_e(title)}</h2>{inner}</section>"


def _list_section(name: str, caption: str, df: pd.DataFrame, links: Mapping[str, str],
                  limit: int = 200) -> str:
    if df.empty:
        table = "<p class='note'>none</p>"
    else:
        shown = visible_frame(df.head(limit).reset_index(drop=True))
        body = shown.to_html(index=False, escape=True, border=0, na_rep="",
                             float_format=lambda v: f"{v:,.4g}", classes="data")
        body = _linked(body, df.head(limit), links)
        more = (f"<p class='note'>first {limit} of {len(df)} rows</p>" if len(df) > limit
                else "")
        table = f"<div class='scroll'>{body}</div>{more}"
    return (f"<section id='{_id(name)}'><h2>{_e(name)}</h2><p class='caption'>{_e(caption)}"
            f"</p>{table}</section>")


def _linked(body: str, df: pd.DataFrame, links: Mapping[str, str]) -> str:
    """The table's rows, each with a link to its run's report after its first cell (the
    cells are escaped by pandas, so ``<tr>`` only ever starts a row)."""
    if "run_key" not in df.columns or not links:
        return body
    head, sep, rows = body.partition("<tbody>")
    if not sep:
        return body
    parts = rows.split("<tr>")
    out = [parts[0]]
    for key, part in zip(df["run_key"].astype(object), parts[1:], strict=False):
        href = links.get(str(key))
        if href:
            first, cut, rest = part.partition("</td>")
            part = (f"{first} <a class='report' href='{html.escape(href, quote=True)}'>"
                    f"report</a>{cut}{rest}")
        out.append(f"<tr>{part}")
    return head + sep + "".join(out)


def _write_reports(fleet: Fleet, page: Path, n: int) -> dict[str, str]:
    """The reports of the ``n`` most interesting runs (critical, then warning findings,
    slow against their history, then the rest), written beside the page; run key -> href.
    A run whose report cannot be made is left unlinked (the survey row says why)."""
    from .. import api
    from ..errors import DptraceError

    chosen = _interesting(fleet)[:n]
    if not chosen:
        return {}
    folder = page.with_name(f"{page.stem}_reports")
    folder.mkdir(parents=True, exist_ok=True)
    rows = fleet.fleet.set_index(fleet.fleet["run_key"].astype(object))
    links: dict[str, str] = {}
    for i, key in enumerate(chosen):
        try:
            ds = (fleet.dataset([key]) if fleet.cache_dir is not None
                  else api.load(str(rows.loc[key, "path"])).run(str(rows.loc[key, "run"])))
            name = f"run{i:04d}.html"
            api.report(ds).to_html(str(folder / name))
        except (DptraceError, OSError, KeyError, ValueError):
            continue
        links[key] = f"{folder.name}/{name}"
    return links


def _interesting(fleet: Fleet) -> list[str]:
    f = fleet.fleet
    if f.empty:
        return []
    ok = f[~f["status"].astype(object).isin(("error", "timeout"))]
    slow = set(fs.slow_runs(f)["run_key"].astype(object))
    score = (ok["findings_critical"].fillna(0).astype(int) * 100
             + ok["findings_warning"].fillna(0).astype(int) * 10
             + ok["run_key"].astype(object).isin(slow).astype(int) * 5)
    order = score.sort_values(ascending=False, kind="stable").index
    return [str(k) for k in ok.loc[order, "run_key"].astype(object)]


def _count(findings: pd.DataFrame, severity: str) -> int:
    return int((findings["severity"].astype(object) == severity).sum()) if len(findings) else 0


def _id(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name)


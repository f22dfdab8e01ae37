"""Terminal drawers of the compare and scaling sections: the rows a reader needs first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from rich.console import Group, RenderableType
from rich.text import Text

from ..fit import KEY, NUM, TEXT, Col, FitTable
from ..fmt import fmt, pct
from ..model import Section

#: rows of the compare table shown in the terminal (all of them: --json, --html, exports)
COMPARE_ROWS = 30


def _signed_pct(v: object) -> str:
    f = float(v)  # type: ignore[arg-type]
    return "-" if f != f else f"{f:+.1f}%"


def _changes_table(df: pd.DataFrame, title: str) -> FitTable:
    cols = [Col("key", KEY), Col("metric", KEY), Col("unit", TEXT), Col("base", NUM),
            Col("candidate", NUM), Col("change", NUM), Col("change %", NUM)]
    table = FitTable(cols, ["unit", "metric"], title=title, boxed=True)
    for r in df.itertuples(index=False):
        table.add_row(fmt(r.key), fmt(r.metric), fmt(r.unit), fmt(r.base), fmt(r.candidate),
                      fmt(r.change), _signed_pct(r.change_pct))
    return table


def draw_compare(section: Section, opts: Mapping[str, Any] | None = None) -> RenderableType:
    parts: list[RenderableType] = [Text(section.title, style="bold"),
                                   Text(section.caption, style="dim")]
    top = section.tables.get("changes")
    if top is not None and len(top):
        parts.append(_changes_table(top, "What changed most in time"))
    table = section.tables.get("compare")
    if table is not None and len(table):
        changed = table[table["change"].fillna(0) != 0]
        parts.append(_changes_table(changed.head(COMPARE_ROWS),
                                    "Every change, by table (largest relative change first)"))
        rest = len(changed) - COMPARE_ROWS
        if rest > 0:
            parts.append(Text(f"{rest} more changed rows, and {len(table) - len(changed)} "
                              "unchanged: --json, --html", style="dim"))
    return Group(*parts)


def draw_scaling(section: Section, opts: Mapping[str, Any] | None = None) -> RenderableType:
    parts: list[RenderableType] = [Text(section.title, style="bold"),
                                   Text(section.caption, style="dim")]
    sc = section.tables.get("scaling")
    if sc is not None and len(sc):
        cols = [Col("run", KEY), Col("workers", NUM), Col("metric", KEY),
                Col("figure", NUM), Col("speedup", NUM), Col("ideal", NUM),
                Col("efficiency", NUM), Col("comm s/rank", NUM), Col("comm share", NUM),
                Col("missing", TEXT)]
        table = FitTable(cols, ["missing", "comm share", "comm s/rank", "ideal"],
                         title="Scaling", boxed=True)
        for r in sc.itertuples(index=False):
            note = "; ".join(str(v) for v in (getattr(r, "missing", None),
                                              getattr(r, "efficiency_note", None))
                             if isinstance(v, str) and v)
            table.add_row(fmt(r.label), fmt(r.workers), fmt(r.metric), fmt(r.job_value),
                          fmt(r.speedup), fmt(r.ideal_speedup), pct(r.efficiency),
                          fmt(r.comm_time_s), pct(r.comm_share), note)
        parts.append(table)
    for name, df in section.tables.items():
        if name == "scaling" or not len(df):
            continue
        runs = [c for c in df.columns if c != "key"]
        t = FitTable([Col("key", KEY), *(Col(str(c), NUM) for c in runs)],
                     [str(c) for c in reversed(runs[1:])], title=_TITLES.get(name, name),
                     boxed=True)
        for r in df.itertuples(index=False):
            t.add_row(*(fmt(v) for v in r))
        parts.append(t)
    return Group(*parts)


_TITLES = {"routines": "MPI time per rank (s) by routine, per run",
           "message_sizes": "MPI time per rank (s) by message size, per run",
           "horovod": "Horovod timeline shares, per run",
           "tiles": "SambaNova tiles, per run"}


def draw_setup(section: Section, opts: Mapping[str, Any] | None = None) -> Any:
    """The terminal drawer of the setup: settings and runs whole, changed rows marked
    (rich is imported here, when the terminal face draws, never when a report is built)."""
    from rich.console import Group
    from rich.text import Text

    from ..fit import KEY, TEXT, Col, FitTable
    from ..fmt import fmt

    df = section.tables["setup"]
    runs = [str(c) for c in df.columns if c not in ("setting", "changed")]
    table = FitTable([Col("setting", KEY), Col("changed", KEY),
                      *(Col(r, TEXT) for r in runs)], (), boxed=True)
    for r in df.to_dict("records"):
        table.add_row(fmt(r["setting"]), "changed" if r["changed"] else "",
                      *("-" if r[c] is None else fmt(r[c]) for c in runs))
    return Group(Text(section.title, style="bold"), table,
                 Text(section.caption, style="dim"))

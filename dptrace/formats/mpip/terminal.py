"""The rich drawer of the mpiP callsites section: one table per job, a row per callsite."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from ...reports.fit import KEY, TEXT, Col, FitTable
from ...reports.fmt import count, human_bytes, missing, num, pct, text
from ...reports.model import Section

#: columns given up first when the table does not fit the terminal
DROP = ("bytes", "calls", "function")


def draw_callsites(section: Section, opts: Mapping[str, Any] | None = None
                   ) -> RenderableType:
    t = section.tables["callsites"]
    parts: list[RenderableType] = [Text(section.title, style="bold"),
                                   Text(section.caption, style="dim")]
    by = [c for c in ("run", "job") if c in t.columns]
    for key, g in t.groupby(by, sort=False, observed=True):
        label = " ".join(str(k) for k in (key if isinstance(key, tuple) else (key,)))
        parts.append(Text(f"job {label}", style="bold"))
        table = FitTable([Col("site"), Col("routine", KEY), Col("function", TEXT, floor=8),
                          Col("where", TEXT, floor=10), Col("ranks"), Col("calls"),
                          Col("time s"), Col("share"), Col("bytes")], DROP, pad_edge=False)
        for r in g.itertuples(index=False):
            table.add_row(count(r.site), text(r.routine), text(r.function), text(r.where),
                          count(r.ranks), count(r.calls), num(r.time_s, 3),
                          pct(r.time_share), "-" if missing(r.bytes) else human_bytes(r.bytes))
        parts.append(table)
    return Group(*parts)

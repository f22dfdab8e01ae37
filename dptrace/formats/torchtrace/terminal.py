"""The rich drawer of the PyTorch profiler section: one line per rank (the breakdown), then
the collectives holding the most time; steps are in the HTML figure and the JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from ...reports.fit import KEY, PATH, Col, FitTable, common_dir
from ...reports.fmt import count, human_bytes, human_time, missing, percent, text
from ...reports.model import Section

#: the ranks table, when it does not fit the terminal (see :mod:`dptrace.reports.fit`)
RANKS_DROP = ("memory", "idle %", "basis", "input")
#: collectives listed (the rest are in the JSON and the HTML)
TOP_COLLECTIVES = 8


def draw_torch_profile(section: Section, opts: Mapping[str, Any] | None = None
                       ) -> RenderableType:
    ranks, coll = section.tables["ranks"], section.tables["collectives"]
    parts: list[RenderableType] = [Text(section.title, style="bold"),
                                   Text(section.caption, style="dim")]
    where, names = common_dir(ranks["source"].astype(str))
    if where:
        parts.append(Text(f"in {where}", style="dim"))
    table = FitTable([Col("rank", KEY), Col("input", PATH), Col("basis", KEY), Col("span"),
                      Col("compute"), Col("comm"), Col("overlap %"), Col("exposed comm"),
                      Col("memory"), Col("idle"), Col("idle %"), Col("collectives")],
                     RANKS_DROP, pad_edge=False)
    for name, r in zip(names, ranks.itertuples(index=False), strict=True):
        table.add_row("?" if missing(r.rank) else str(int(r.rank)), name, r.basis,
                      human_time(r.span_us), human_time(r.compute_us),
                      human_time(r.communication_us), percent(r.overlap_pct),
                      human_time(r.exposed_comm_us), human_time(r.memory_us),
                      human_time(r.idle_us), percent(r.idle_pct), count(r.collectives))
    parts.append(table)
    if not coll.empty:
        top = coll.sort_values("total_us", ascending=False, kind="stable").head(TOP_COLLECTIVES)
        ct = FitTable([Col("rank", KEY), Col("collective", KEY), Col("size"), Col("calls"),
                       Col("total"), Col("mean"), Col("max")], ("max",), pad_edge=False)
        for r in top.itertuples(index=False):
            ct.add_row("?" if missing(r.rank) else str(int(r.rank)), text(r.collective),
                       "-" if missing(r.size_bytes) else human_bytes(r.size_bytes),
                       count(r.calls), human_time(r.total_us), human_time(r.mean_us),
                       human_time(r.max_us))
        parts.append(Text(f"collectives holding the most time (top {len(top)} of "
                          f"{len(coll)})", style="dim"))
        parts.append(ct)
    return Group(*parts)

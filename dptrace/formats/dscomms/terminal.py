"""The rich drawer of the DeepSpeed comms section: one line per summary and op (the ops
table of :mod:`.sections`); latency and busbw by size are in the HTML figure and the JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from ...reports.fit import KEY, PATH, Col, FitTable, common_dir
from ...reports.fmt import count, human_bytes, missing, num, pct, text
from ...reports.model import Section
from .._units import S_TO_MS, scaled

#: the ops table, when it does not fit the terminal (see :mod:`dptrace.reports.fit`)
OPS_DROP = ("caller", "sizes", "at size")


def draw_ds_comms(section: Section, opts: Mapping[str, Any] | None = None) -> RenderableType:
    ops = section.tables["ops"]
    parts: list[RenderableType] = [Text(section.title, style="bold"),
                                   Text(section.caption, style="dim")]
    where, names = common_dir(ops["source"].astype(str))
    if where:
        parts.append(Text(f"in {where}", style="dim"))
    table = FitTable([Col("input", PATH), Col("op", KEY), Col("caller", KEY), Col("sizes"),
                      Col("calls"), Col("total ms"), Col("share"), Col("peak busbw Gbps"),
                      Col("at size")], OPS_DROP, pad_edge=False)
    blocks = ops.groupby(ops["source"].astype(str), sort=False)["block"].nunique()
    many = set(blocks.index[blocks > 1])      # sources with several summaries
    for name, r in zip(names, ops.itertuples(index=False), strict=True):
        label = f"{name} #{r.block}" if str(r.source) in many else name
        table.add_row(label, text(r.op), text(r.caller), count(r.sizes), count(r.calls),
                      num(scaled(r.total_latency_s, S_TO_MS), 2), pct(r.latency_share),
                      num(r.peak_busbw_gbps, 2),
                      "-" if missing(r.peak_size_bytes) else human_bytes(r.peak_size_bytes))
    parts.append(table)
    return Group(*parts)

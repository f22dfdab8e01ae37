"""The rich drawer of the NCCL section: one line per run (network, processes, transports,
GPUDirect RDMA, warnings and timeouts), then the events; the processes and settings are in
the HTML and JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from ...reports.fit import KEY, TEXT, Col, FitTable
from ...reports.fmt import count, missing, text
from ...reports.model import Section

#: the overview, when it does not fit the terminal (see :mod:`dptrace.reports.fit`)
OVERVIEW_DROP = ("plugin", "version", "transports", "hosts")
#: events listed (the rest are counted)
MAX_EVENTS = 3


def draw_nccl(section: Section, opts: Mapping[str, Any] | None = None) -> RenderableType:
    o, events = section.tables["overview"], section.tables["events"]
    parts: list[RenderableType] = [Text(section.title, style="bold"),
                                   Text(section.caption, style="dim")]
    several = len(o) > 1
    cols = [Col("run", KEY)] if several else []
    table = FitTable([*cols, Col("network", TEXT, floor=10), Col("processes"), Col("hosts"),
                      Col("nodes"), Col("plugin", TEXT), Col("transports", TEXT, floor=10),
                      Col("GDRDMA"), Col("warn"), Col("errors"), Col("timeouts"),
                      Col("version", TEXT)], OVERVIEW_DROP, pad_edge=False)
    for r in o.itertuples(index=False):
        gdr = "-" if not r.net_processes else f"{r.gdrdma_processes}/{r.net_processes}"
        table.add_row(*([text(r.run)] if several else []), text(r.networks) or "?",
                      count(r.processes), count(r.hosts), count(r.nodes), text(r.plugins),
                      text(r.transports), gdr, count(r.warnings), count(r.errors),
                      count(r.timeouts), text(r.versions))
    parts.append(table)
    shown = events[events["kind"] != "warn"] if len(events) > MAX_EVENTS else events
    for r in shown.head(MAX_EVENTS).itertuples(index=False):
        who = text(r.host) or "?" if missing(r.rank) else f"rank {int(r.rank)}"
        style = "red" if r.level == "ERROR" else "yellow"
        line = "" if missing(r.lineno) else f", line {int(r.lineno)}"
        parts.append(Text(f"! {r.kind} ({who}{line}): {text(r.message)}",
                          style=style))
    if len(events) > len(shown.head(MAX_EVENTS)):
        parts.append(Text(f"  ... {len(events) - len(shown.head(MAX_EVENTS))} more NCCL "
                          "events in the JSON and HTML", style="dim"))
    return Group(*parts)

"""The rich drawer of the Horovod timeline section: one panel per timeline file (the
section and its tables: :mod:`.sections`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ...reports.fit import BAR, KEY, SHORT, TEXT, BarCell, Col, FitTable, common_dir, shorten_left
from ...reports.fmt import bin_label, human_bytes, human_rate, human_time, missing, pct, span
from ...reports.model import Section
from . import compute as hv

#: rows drawn per table in the terminal (all rows are in --json)
MAX_ACTIVITIES = 14
MAX_RANKS = 16
TOP_TENSORS = 8
NAME_WIDTH = 38

# When a table does not fit the terminal (see :mod:`dptrace.reports.fit`), bars and text
# shrink first, then these columns are hidden, first named first; activity, rank, op and
# size columns never are, and no cell is cut. A dim line names what was hidden.
#: activities per op: the bar repeats "of span"; mean = wall / count
ACTIVITY_DROP = ("bar", "mean", "open", "tensor time", "count")
#: straggler ranks: how often waited for in the steady state, how often last, and by how
#: much, stay longest
STRAGGLER_DROP = ("bar", "p95 lag", "reported", "mean lag", "last share")
#: throughput by op size: the times behind the rates go first
THROUGHPUT_DROP = ("op time", "comm time", "ops", "bytes")
#: top tensors: the tensor name (shortened from the left) keeps the room
TENSOR_DROP = ("shape", "negotiating", "size", "ops")


def short_name(name: str, width: int = NAME_WIDTH) -> str:
    """Keep the end of a long tensor name (where TF/PyTorch names differ): '…conv2d_22_0'."""
    return shorten_left(name, width)


def _rows(df: pd.DataFrame, src: str) -> pd.DataFrame:
    return df[df["source"].astype(str) == src] if len(df) else df


# -- drawing -------------------------------------------------------------------------------------

def draw_horovod(section: Section, opts: Mapping[str, Any] | None = None,
                 ) -> RenderableType:
    """One panel per timeline file."""
    t = section.tables
    parts: list[RenderableType] = [Text(section.title, style="bold"),
                                   Text(section.caption, style="dim")]
    prefix, names = common_dir(t["runs"]["source"].astype(str))
    if prefix:
        parts.append(Text(f"files under {prefix}", style="dim"))
    for name, (_, run) in zip(names, t["runs"].iterrows(), strict=True):
        parts.append(_file_panel(run, t, name))
    return Group(*parts)


class _FilePanel:
    """A panel titled with the file name; a title or subtitle too long for the width moves
    into the panel's first lines (wrapped there) instead of being cut."""

    def __init__(self, title: str, subtitle: str, body: list[RenderableType]) -> None:
        self.title, self.subtitle, self.body = title, subtitle, body

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        room = options.max_width - 6                    # corners, dashes, spaces
        title = Text(self.title, style="bold cyan")
        sub = Text(self.subtitle, style="dim")
        title_fits, sub_fits = cell_len(self.title) <= room, cell_len(self.subtitle) <= room
        head = [t for t, fits in ((title, title_fits), (sub, sub_fits)) if not fits]
        yield Panel(Group(*head, *self.body), title_align="left", subtitle_align="right",
                    title=title if title_fits else None, subtitle=sub if sub_fits else None)


def _file_panel(run: pd.Series, t: dict[str, pd.DataFrame], name: str) -> _FilePanel:
    src = str(run["source"])
    body: list[RenderableType] = []
    time = _rows(t["time"], src)
    if len(time) and (run["negotiations"] or run["ops"]):
        body.append(_time_text(time.iloc[0]))
    for part in (_activities(_rows(t["activities"], src)),
                 _stragglers(_rows(t["stragglers"], src), run),
                 _fusion(_rows(t["fusion"], src), _rows(t["fusion_sizes"], src)),
                 _throughput(_rows(t["throughput"], src), int(run["ranks"])),
                 _cycles(_rows(t["cycles"], src), _rows(t["idle_gaps"], src)),
                 _top_tensors(_rows(t["top_tensors"], src))):
        if part is not None:
            body.append(part)
    if len(body) == 0:
        body.append(Text("no events", style="dim"))
    return _FilePanel(name, _subtitle(run), body)


def _subtitle(run: pd.Series) -> str:
    n = int(run["ranks"])
    ranks = f"{n} rank{'s' if n != 1 else ''} seen" if n else "no rank ticks"
    return (f"{run['layout']} · {int(run['events']):,} events · {int(run['tensors']):,} tensors "
            f"· {ranks} · span {human_time(run['span_us'])}")


def _time_text(r: pd.Series) -> RenderableType:
    whole = human_time(r["span_us"])
    text = Text()
    if r["negotiate_wall_us"]:
        text.append(f"negotiating {human_time(r['negotiate_wall_us'])} of {whole} "
                    f"({pct(r['negotiate_share'])}); ")
    else:
        text.append(f"span {whole}; no closed negotiation; ")
    if r["op_wall_us"]:
        text.append(f"an op in flight {human_time(r['op_wall_us'])} ({pct(r['op_share'])})")
    else:
        text.append("no complete op in the file")
    if not r["gaps"]:
        return _labelled(("time", text))
    idle = (f"no op in flight {human_time(r['idle_us'])} ({pct(r['idle_share'])}) in "
            f"{int(r['gaps']):,} gaps between ops, longest {human_time(r['longest_us'])}")
    return _labelled(("time", text), ("idle", idle))


def _labelled(*rows: tuple[str, str | Text]) -> Table:
    """'label  text' lines whose text wraps under itself, not under the label."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    for label, text in rows:
        grid.add_row(label, Text(text) if isinstance(text, str) else text)
    return grid


def _table(title: str, cols: list[Col], drop: tuple[str, ...]) -> FitTable:
    """A borderless table that fits the terminal: keys whole, ``drop`` hidden first."""
    return FitTable(cols, drop, title=Text(title, style="bold") if title else None,
                    pad_edge=False, show_edge=False)


def _activities(acts: pd.DataFrame) -> FitTable | None:
    if acts.empty:
        return None
    rows = _tree(acts)
    table = _table("activities per op (wall time: at least one tensor in it)", [
        Col("activity", KEY), Col("count"), Col("open"), Col("wall"), Col("of span"),
        Col("bar", BAR, width=10, header=""), Col("tensor time"), Col("mean")], ACTIVITY_DROP)
    top = float(acts["span_share"].max()) if acts["span_share"].notna().any() else 0.0
    for label, r in rows[:MAX_ACTIVITIES]:
        share = 0.0 if missing(r.span_share) else float(r.span_share)
        table.add_row(Text(label, style="bold" if r.level == "op" else ""), f"{r.intervals:,}",
                      Text(f"{r.open:,}", style="yellow") if r.open else "0",
                      human_time(r.wall_us), pct(r.span_share), BarCell(top or 1.0, share),
                      human_time(r.tensor_us), human_time(r.mean_us))
    if len(rows) > MAX_ACTIVITIES:
        table.add_row(Text(f"+{len(rows) - MAX_ACTIVITIES} more (see --json)", style="dim"))
    return table


def _tree(acts: pd.DataFrame) -> list[tuple[str, Any]]:
    """Rows grouped by op (busiest op first): negotiation, the op, then its activities."""
    order = {"negotiate": 0, "op": 1, "activity": 2}
    ops = acts.groupby(acts["op"].astype(str), sort=False)["wall_us"].max()
    rows = []
    for op in ops.sort_values(ascending=False, kind="stable").index:
        mine = acts[acts["op"].astype(str) == op]
        mine = mine.assign(_o=mine["level"].map(order)).sort_values(
            ["_o", "wall_us"], ascending=[True, False], kind="stable")
        for r in mine.itertuples(index=False):
            indent = "  " if r.level == "activity" else ""
            rows.append((indent + str(r.activity), r))
    return rows


def _stragglers(ranks: pd.DataFrame, run: pd.Series) -> RenderableType | None:
    """Who the others waited for: every compared negotiation (last, last share), and the
    steady state the finding judges (waited: last by 1 ms or more in a tensor's second
    negotiation or later). Red: the rank the ``negotiation_straggler`` finding names (the
    section's ``straggler`` column), and no other; start-up alone is never red."""
    n, ticked = int(run["negotiations"]), int(run["negotiations_with_ticks"])
    if not n:
        return None
    head = Text(f"{ticked:,} of {n:,} negotiations have rank-ready ticks")
    if ranks.empty:
        head.append("; none from 2+ ranks, so no rank can be called late", style="dim")
        return _labelled(("negotiation", head))
    compared = int(ranks["last"].sum())
    steady = int(ranks["steady_compared"].max())
    head.append(f"; {compared:,} with 2+ ranks are compared below")
    rows = [("negotiation", head), ("steady state", _steady_text(ranks, compared, steady))]
    cols = [Col("rank", KEY, "right"), Col("reported"), Col("last"), Col("last share")]
    if steady:
        cols += [Col("waited"), Col("waited share")]
    cols += [Col("bar", BAR, width=16, header=""), Col("mean lag"), Col("p95 lag"),
             Col("max lag")]
    table = _table("", cols, STRAGGLER_DROP)
    for r in _extremes(ranks).itertuples(index=False):
        if missing(r.rank):
            table.add_row("…")
            continue
        style = "bold red" if r.straggler is True else ""
        share = float(r.steady_waited_share) if steady else float(r.last_share)
        cells: list[str | Text | BarCell] = [Text(str(r.rank), style=style),
                                             f"{r.negotiations:,}", f"{r.last:,}",
                                             pct(r.last_share)]
        if steady:
            cells += [Text(f"{r.steady_waited:,}", style=style), pct(r.steady_waited_share)]
        cells += [BarCell(1.0, 0.0 if missing(share) else share, "red" if style else "green"),
                  human_time(r.mean_lag_us), human_time(r.p95_lag_us), human_time(r.max_lag_us)]
        table.add_row(*cells)
    return Group(_labelled(*rows), table)


def _steady_text(ranks: pd.DataFrame, compared: int, steady: int) -> Text:
    """What the steady state holds, and who it names (the finding's rank), in one line."""
    if not steady:
        return Text(f"none ticked: all {compared:,} are start-up (each tensor's first "
                    "negotiation: the broadcasts, the first step), warm-up that names no rank",
                    style="dim")
    since = ranks["steady_from_us"].dropna()
    text = Text(f"{steady:,} of them from {human_time(since.iloc[0])} on (a tensor's second "
                if len(since) else f"{steady:,} of them (a tensor's second ")
    text.append(f"negotiation or later); waited: last by {human_time(hv.WAIT_US)} or more "
                "there; ")
    named = ranks[ranks["straggler"].astype(bool)]
    if len(named):
        r = named.iloc[0]
        text.append(f"rank {r['rank']} is the straggler ({int(r['steady_waited']):,} of "
                    f"{steady:,})", style="bold red")
    else:
        text.append("no rank named (see the findings)", style="dim")
    return text


def _extremes(ranks: pd.DataFrame) -> pd.DataFrame:
    """All ranks up to MAX_RANKS; else the most often last and the least, with a gap."""
    if len(ranks) <= MAX_RANKS:
        return ranks
    gap = pd.DataFrame([{c: None for c in ranks.columns}])
    return pd.concat([ranks.head(MAX_RANKS - 4), gap, ranks.tail(3)], ignore_index=True)


def _fusion(fusion: pd.DataFrame, sizes: pd.DataFrame) -> RenderableType | None:
    if fusion.empty:
        return None
    lines: list[RenderableType] = [Text("fusion", style="bold")]
    for r in fusion.itertuples(index=False):
        bytes_ = (f"; per op mean {human_bytes(r.mean_bytes)}, median "
                  f"{human_bytes(r.median_bytes)}, max {human_bytes(r.max_bytes)}"
                  if not missing(r.mean_bytes) else "; sizes not recorded")
        copies = (f"; fusion-buffer copies {human_time(r.copy_wall_us)} = "
                  f"{pct(r.copy_share)} of op time" if r.copy_wall_us else "")
        lines.append(Padding(Text(f"{r.op}: {r.ops:,} ops carried {r.tensors:,} tensors "
                                  f"({r.tensors_per_op:.2f} per op, max {r.max_tensors}); "
                                  f"{r.fused_ops:,} fused 2+{bytes_}{copies}"), (0, 0, 0, 2)))
        dist = sizes[sizes["op"].astype(str) == str(r.op)]
        if len(dist) > 1:
            lines.append(Padding(Text("tensors per op: " + " · ".join(
                f"{span(d.min_tensors, d.max_tensors)}: {d.ops:,} ({pct(d.share)})"
                for d in dist.itertuples(index=False)), style="dim"), (0, 0, 0, 4)))
    return Group(*lines)


def _throughput(tp: pd.DataFrame, ranks: int) -> RenderableType | None:
    if tp.empty:
        return None
    if ranks == 1:
        return Text("throughput: one rank only, so nothing crosses the network; rates are in "
                    "--json but not shown", style="dim")
    table = _table("throughput by op size (fused ops)", [
        Col("op", KEY), Col("size", KEY), Col("ops"), Col("bytes"), Col("op time"),
        Col("op rate"), Col("comm time"), Col("comm rate")], THROUGHPUT_DROP)
    for r in tp.itertuples(index=False):
        size = bin_label(int(r.bin), int(r.hi_bytes))
        table.add_row(Text(str(r.op)), size, f"{r.ops:,}", human_bytes(r.bytes),
                      human_time(r.op_us), human_rate(r.op_bytes_per_s), human_time(r.comm_us),
                      human_rate(r.comm_bytes_per_s))
    return table


def _cycles(cycles: pd.DataFrame, gaps: pd.DataFrame) -> RenderableType | None:
    parts: list[RenderableType] = []
    if len(cycles) and cycles.iloc[0]["cycles"] < 2:
        parts.append(_labelled(("cycles", "1 CYCLE_START (no cycle time)")))
    elif len(cycles):
        c = cycles.iloc[0]
        parts.append(_labelled(("cycles", f"{int(c['cycles']):,} CYCLE_START; cycle time mean "
                                f"{human_time(c['mean_us'])}, p50 {human_time(c['p50_us'])}, "
                                f"p95 {human_time(c['p95_us'])}, max {human_time(c['max_us'])}")))
    if len(gaps):
        parts.append(Text("longest gaps with no op in flight: " + ", ".join(
            f"{human_time(g.dur_us)} at {human_time(g.start_us)}"
            for g in gaps.itertuples(index=False)), style="dim"))
    return Group(*parts) if parts else None


def _top_tensors(top: pd.DataFrame) -> FitTable | None:
    if top.empty:
        return None
    table = _table("top tensors by op time (shapes are float32 unless a dtype is named)", [
        Col("tensor", SHORT, floor=24), Col("op", KEY), Col("ops"),
        Col("op time"), Col("share"), Col("negotiating"), Col("size"),
        Col("shape", TEXT, floor=8)], TENSOR_DROP)
    for r in top.head(TOP_TENSORS).itertuples(index=False):
        size = "-" if missing(r.bytes) else human_bytes(float(r.bytes))
        shape = "" if missing(r.shape) else str(r.shape) if str(r.dtype) == "float32" else \
            f"{r.dtype} {r.shape}"
        table.add_row(Text(str(r.tensor)), Text(str(r.op)), f"{r.ops:,}",
                      human_time(r.total_us), pct(r.share), human_time(r.negotiate_us), size,
                      Text(shape))
    return table


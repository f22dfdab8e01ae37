"""The rich drawers of the mpitrace sections: communication per job, message sizes per
collective (the sections and their tables: :mod:`.sections`)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import pandas as pd
from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ...reports.fit import BAR, KEY, TEXT, BarCell, Col, FitTable
from ...reports.fmt import bin_label, count, human_bytes, human_rate, num, pct
from ...reports.model import Section
from . import communication as comm

#: ranks drawn per job before showing only the extremes
MAX_RANKS = 16
#: routines listed per job in the terminal (all are in --json)
TOP_ROUTINES = 8

# When a table does not fit the terminal (see :mod:`dptrace.reports.fit`), its bars and text
# shrink first, then these columns are hidden, first named first; the routine, rank, host and
# size-bin columns never are, and no cell is cut. A dim line names what was hidden.
#: the ranks table of a job
RANK_DROP = ("bar", "elapsed s", "host")
#: top routines: per-rank figures go first (the totals and the share stay)
ROUTINE_DROP = ("calls/rank", "time/rank s", "avg size", "ranks", "bytes")
#: message-size bins: busbw stays longest (it compares with nccl-tests)
BINS_DROP = ("calls/rank", "algbw", "bar", "calls")


# -- drawing -------------------------------------------------------------------------------

def _total(values: pd.Series) -> object:
    """The sum of ``values``, or None when one is missing (a partial sum would look whole)."""
    return None if values.isna().any() else values.sum()


def draw_communication(section: Section, opts: Mapping[str, Any] | None = None,
                       ) -> RenderableType:
    t = section.tables
    parts: list[RenderableType] = [Text(section.title, style="bold"),
                                   Text(section.caption, style="dim")]
    for job in t["jobs"]["job"].tolist() or t["routines"]["job"].unique().tolist():
        parts.append(_job_panel(job, t))
    for job in t["routines"]["job"].unique().tolist():
        if job not in set(t["jobs"]["job"]):
            parts.append(_job_panel(job, t))
    return Group(*parts)


def _job_panel(job: str, t: dict[str, pd.DataFrame]) -> Panel:
    body: list[RenderableType] = []
    jrow = t["jobs"][t["jobs"]["job"] == job]
    if len(jrow):
        body.append(_summary_text(jrow.iloc[0]))
        if jrow["ranks_listed"].iloc[0] > 1:
            body.append(_rank_table(t["ranks"][t["ranks"]["job"] == job]))
    small = t["small_messages"][t["small_messages"]["job"] == job]
    if len(small) and bool(small["dominated"].iloc[0]):
        s = small.iloc[0]
        body.append(Text(f"! {pct(s['small_share'])} of the MPI time is in Allreduces of "
                         f"<= {comm.SMALL_BYTES} B ({s['small_calls']:,} calls): with Horovod "
                         "that is tensor negotiation, not gradients; with NCCL the gradient "
                         "traffic is not in MPI at all.", style="yellow"))
    routines = t["routines"][t["routines"]["job"] == job]
    if len(routines):
        body.append(_routine_table(routines))
    return Panel(Group(*body), title=Text(f"job {job}", style="bold cyan"), title_align="left")


def _summary_text(j: pd.Series) -> Table:
    g = Table(box=None, show_header=False, pad_edge=False)
    g.add_column(style="bold")
    g.add_column()
    listed = f"{j['ranks_listed']} of {j['nranks']} ranks listed" if pd.notna(j["nranks"]) \
        else f"{j['ranks_listed']} ranks listed"
    if j["ranks_listed"] < 2:
        g.add_row("ranks", listed + ": no per-rank table, so no spread")
        g.add_row("comm", f"{num(j['comm_mean_s'])} s of {num(j['elapsed_max_s'])} s elapsed "
                  f"({pct(j['comm_share_mean'])})")
        return g
    g.add_row("ranks", listed + ("" if j["complete"] else " (not all: stats cover these)"))
    g.add_row("elapsed", f"{num(j['elapsed_max_s'], 2)} s (max over ranks)")
    g.add_row("comm per rank", f"mean {num(j['comm_mean_s'])} s; min {num(j['comm_min_s'])} "
              f"(rank {j['min_rank']}), median {num(j['comm_median_s'])} (rank "
              f"{j['median_rank']}), max {num(j['comm_max_s'])} (rank {j['max_rank']})")
    g.add_row("spread", f"COV {pct(j['comm_cov'])}, imbalance max/mean "
              f"{num(j['comm_imbalance'], 3)}")
    g.add_row("comm share", f"mean {pct(j['comm_share_mean'])} of elapsed (min "
              f"{pct(j['comm_share_min'])}, max {pct(j['comm_share_max'])})")
    return g


def _rank_table(rt: pd.DataFrame) -> FitTable:
    table = FitTable([Col("rank", KEY, "right"), Col("host", KEY), Col("comm s"),
                      Col("elapsed s"), Col("comm share"),
                      Col("bar", BAR, width=20, header=""), Col("role", TEXT, floor=18)],
                     RANK_DROP, pad_edge=False, show_edge=False)
    shown = _extremes(rt)
    top = float(rt["comm_share"].max()) if rt["comm_share"].notna().any() else 0.0
    for r in shown.itertuples(index=False):
        if pd.isna(r.rank):
            table.add_row("…")
            continue
        share = float(r.comm_share) if pd.notna(r.comm_share) else 0.0
        style = "bold red" if r.mismatch else ""
        table.add_row(Text(str(r.rank), style=style), str(r.host if pd.notna(r.host) else ""),
                      num(r.comm_time_s, 2), num(r.elapsed_s, 2), pct(r.comm_share),
                      BarCell(top or 1.0, share), _role(r.comm_role, bool(r.mismatch)))
    return table


def _role(role: object, mismatch: bool) -> Text:
    text = str(role) if pd.notna(role) else ""
    if mismatch:
        return Text.assemble(text, (" (own file differs)", "bold red"))
    return Text(text)


def _extremes(rt: pd.DataFrame) -> pd.DataFrame:
    """All ranks up to MAX_RANKS; else the 4 lowest and highest comm times and the roles."""
    if len(rt) <= MAX_RANKS:
        return rt
    s = rt.sort_values("comm_time_s", kind="stable")
    keep = pd.concat([s.head(4), s[s["comm_role"].notna()], s.tail(4)])
    keep = keep[~keep.index.duplicated()].sort_values("comm_time_s", kind="stable")
    gap = pd.DataFrame([{c: None for c in rt.columns}])
    with warnings.catch_warnings():  # pandas 2: all-null rows and dtypes (a display table)
        warnings.simplefilter("ignore", FutureWarning)
        return pd.concat([keep.head(4), gap, keep.iloc[4:-4], gap, keep.tail(4)],
                         ignore_index=True)


def _routine_table(routines: pd.DataFrame) -> FitTable:
    table = FitTable([Col("routine", KEY), Col("ranks"), Col("calls"), Col("calls/rank"),
                      Col("avg size"), Col("bytes"), Col("time s"), Col("time/rank s"),
                      Col("share")], ROUTINE_DROP, pad_edge=False, show_edge=False,
                     title=Text("top routines (summed over the ranks with a profile)",
                                style="dim"))
    for r in routines.head(TOP_ROUTINES).itertuples(index=False):
        table.add_row(str(r.routine), str(r.ranks), count(r.calls), num(r.calls_per_rank, 1),
                      human_bytes(r.avg_bytes), human_bytes(r.bytes), num(r.time_s),
                      num(r.time_s_per_rank), pct(r.time_share))
    if len(routines) > TOP_ROUTINES:
        rest = routines.iloc[TOP_ROUTINES:]
        table.add_row(Text(f"+{len(rest)} more", style="dim"), "", "", "", "", "",
                      num(rest["time_s"].sum()), "", pct(rest["time_share"].sum()))
    return table


def draw_message_sizes(section: Section, opts: Mapping[str, Any] | None = None,
                       ) -> RenderableType:
    bins = section.tables["bins"]
    parts: list[RenderableType] = [Text(section.title, style="bold"),
                                   Text(section.caption, style="dim")]
    for job, jb in bins.groupby("job", sort=False):
        parts.append(_sizes_panel(str(job), jb))
    return Group(*parts)


def _sizes_panel(job: str, jb: pd.DataFrame) -> Panel:
    totals = jb.groupby("routine", sort=False)["time_s"].sum().sort_values(ascending=False,
                                                                          kind="stable")
    body: list[RenderableType] = []
    minor = []
    for routine, total in totals.items():
        rb = jb[jb["routine"] == routine]
        if total <= 0 and routine not in comm.COLLECTIVES or total <= 0 and len(rb) <= 2:
            minor.append(f"{routine} ({count(_total(rb['calls']))} calls, "
                         f"{human_bytes(float(rb['avg_bytes'].mean()))})")
            continue
        body.append(_bins_table(str(routine), rb))
    if minor:
        body.append(Text("no measurable time: " + ", ".join(minor), style="dim"))
    n = jb["nranks"].max()
    sub = f"{n} ranks" if pd.notna(n) else ""
    return Panel(Group(*body), title=Text(f"job {job}", style="bold cyan"), title_align="left",
                 subtitle=Text(sub, style="dim"), subtitle_align="right")


def _bins_table(routine: str, rb: pd.DataFrame) -> FitTable:
    ranks = int(rb["ranks"].max())
    calls = count(_total(rb["calls"]))
    title = Text.assemble((routine, "bold"), f"  {calls} call{'s' if calls != '1' else ''}, "
                          f"{num(_total(rb['time_s']))} s over {ranks} rank profile"
                          f"{'s' if ranks > 1 else ''}")
    table = FitTable([Col("size", KEY), Col("calls"), Col("calls/rank"), Col("time s"),
                      Col("share"), Col("bar", BAR, width=24, header=""), Col("algbw"),
                      Col("busbw")], BINS_DROP, title=title, pad_edge=False, show_edge=False)
    top = float(rb["time_share"].max()) if rb["time_share"].notna().any() else 0.0
    for r in rb.itertuples(index=False):
        share = float(r.time_share) if pd.notna(r.time_share) else 0.0
        table.add_row(bin_label(int(r.bin), int(r.bin_hi_bytes)), count(r.calls),
                      num(r.calls_per_rank, 1), num(r.time_s), pct(r.time_share),
                      BarCell(top or 1.0, share), human_rate(r.algbw_bytes_per_s),
                      human_rate(r.busbw_bytes_per_s))
    return table


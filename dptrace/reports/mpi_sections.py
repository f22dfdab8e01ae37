"""Report sections for mpitrace profiles: communication per job, message sizes per collective.

Section functions (registered in :data:`dptrace.reports.model.SECTIONS`) return a
``Section`` only when the Dataset has mpitrace tables; :data:`DRAWERS` (registered in
:mod:`dptrace.reports.terminal`) draw them with rich. JSON output comes from the same
section tables.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ..analysis import communication as comm
from ..dataset import Dataset
from .fit import BAR, KEY, TEXT, BarCell, Col, FitTable

if TYPE_CHECKING:
    from .model import Section

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


def communication_section(ds: Dataset, opts: dict) -> Section | None:
    from .model import Section

    ranks, routines = ds["mpi_ranks"], ds["mpi_routines"]
    if ranks.empty and routines.empty:
        return None
    rt = comm.rank_times(ranks)
    return Section(
        "communication", "Communication (mpitrace)",
        "Per job: time in MPI per rank (comm) against its elapsed time; min/median/max ranks as "
        "mpitrace picks them; COV = std/mean and imbalance = max/mean of comm over the ranks "
        "listed. Routine totals cover the ranks that wrote a profile. mpitrace times include "
        "waiting at collectives: a high share often means imbalance elsewhere.",
        {"jobs": comm.job_summary(rt, ds["mpi_jobs"]), "ranks": rt,
         "routines": comm.top_routines(routines, n=None),
         "small_messages": comm.small_messages(ds["mpi_messages"], routines),
         "checks": comm.checks(ranks, rt)},
        figure_fn=_communication_figures,
    )


def message_sizes_section(ds: Dataset, opts: dict) -> Section | None:
    from .model import Section

    messages = ds["mpi_messages"]
    if messages.empty:
        return None
    return Section(
        "message_sizes", "Message sizes per collective (mpitrace)",
        "Power-of-two size bins (bin k holds sizes above the lower bound up to the upper), "
        "summed over the ranks with a profile. Bandwidth is an estimate in nccl-tests terms "
        "(algbw = size/time; busbw = algbw x 2(n-1)/n for Allreduce, (n-1)/n for Allgather, "
        "ReduceScatter and Alltoall, 1 for Bcast and Reduce); times include waiting, so it is "
        "a lower bound. Bins with under 10 ms get none (mpitrace prints ms).",
        {"bins": comm.message_sizes(messages)},
        figure_fn=_message_size_figures,
    )


def _communication_figures(section: Section) -> dict:
    from .figures_mpi import communication_figures

    return communication_figures(section.tables)


def _message_size_figures(section: Section) -> dict:
    from .figures_mpi import message_size_figures

    return message_size_figures(section.tables)


# -- drawing -------------------------------------------------------------------------------

def _missing(v: object) -> bool:
    """None, pd.NA, NaN (a float or a numpy float): shown as '-'."""
    if v is None or v is pd.NA:
        return True
    try:
        return bool(v != v)   # NaN is the one value not equal to itself
    except (TypeError, ValueError):
        return False


def _infinite(v: object) -> str | None:
    """'inf' or '-inf' for an infinite number (a sum that overflowed), else None."""
    if isinstance(v, float | np.floating) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return None


def human_bytes(n: float) -> str:
    """1536 -> '1.5 KiB' (binary units, as mpitrace's bins are powers of two); up to EiB, and
    beyond in EiB with an exponent (1e308 -> '8.67e+289 EiB'). Missing: '-'; infinite: 'inf'."""
    if _missing(n):
        return "-"
    inf = _infinite(n)
    if inf:
        return inf
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if abs(n) < 1024 or unit == "EiB":
            if abs(n) >= 1024:
                return f"{n:.3g} {unit}"
            return f"{n:.0f} {unit}" if n == int(n) else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


def bin_label(bin_: int, hi: int) -> str:
    """'0 B', '1-4 B', '5-8 B' ... '2-4 MiB': the range of sizes the bin holds."""
    if bin_ == 0:
        return "0 B"
    if bin_ == 1:
        return "1-4 B"
    lo_s, hi_s = human_bytes(hi // 2).split(), human_bytes(hi).split()
    if lo_s[1] == hi_s[1]:
        return f"{lo_s[0]}-{hi_s[0]} {hi_s[1]}"
    return f"{' '.join(lo_s)}-{' '.join(hi_s)}"


def human_rate(bps: float) -> str:
    """Bytes per second in decimal units (nccl-tests convention): '6.62 GB/s'. Missing: '-';
    infinite: 'inf'."""
    if _missing(bps):
        return "-"
    inf = _infinite(bps)
    if inf:
        return inf
    for unit, scale in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if bps >= scale:
            return f"{bps / scale:.3g} {unit}"
    return f"{bps:.3g} B/s"


#: above this a number is shown with an exponent (a 300-digit figure helps nobody)
_PLAIN_LIMIT = 1e15


def _num(v: object, digits: int = 3) -> str:
    """A number with thousands separators; missing '-', infinite 'inf'."""
    if _missing(v):
        return "-"
    inf = _infinite(v)
    if inf:
        return inf
    if isinstance(v, float | np.floating):
        return f"{v:,.{digits}f}" if abs(v) < _PLAIN_LIMIT else f"{v:.3g}"
    return f"{v:,}" if isinstance(v, int | np.integer) else str(v)


def _count(v: object) -> str:
    """A whole number with thousands separators ('97,896'); missing '-'."""
    if _missing(v):
        return "-"
    return f"{int(v):,}"  # type: ignore[call-overload]


def _total(values: pd.Series) -> object:
    """The sum of ``values``, or None when one is missing (a partial sum would look whole)."""
    return None if values.isna().any() else values.sum()


def _pct(v: object) -> str:
    """A share as a percentage; missing '-', infinite 'inf'."""
    if _missing(v):
        return "-"
    inf = _infinite(v)
    if inf:
        return inf
    pct = 100 * float(v)  # type: ignore[arg-type]
    if math.isinf(pct):   # a share near the float limit: 100 x overflows
        return "inf" if pct > 0 else "-inf"
    return f"{pct:.1f}%" if abs(pct) < _PLAIN_LIMIT else f"{pct:.3g}%"


def draw_communication(section: Section) -> RenderableType:
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
        body.append(Text(f"! {_pct(s['small_share'])} of the MPI time is in Allreduces of "
                         f"<= {comm.SMALL_BYTES} B ({s['small_calls']:,} calls): with Horovod "
                         "that is tensor negotiation, not gradients; with NCCL the gradient "
                         "traffic is not in MPI at all.", style="yellow"))
    routines = t["routines"][t["routines"]["job"] == job]
    if len(routines):
        body.append(_routine_table(routines))
    for r in t["checks"][t["checks"]["job"] == job].itertuples(index=False):
        body.append(Text(f"! {r.check}: {r.detail}", style="bold yellow"))
    return Panel(Group(*body), title=Text(f"job {job}", style="bold cyan"), title_align="left")


def _summary_text(j: pd.Series) -> Table:
    g = Table(box=None, show_header=False, pad_edge=False)
    g.add_column(style="bold")
    g.add_column()
    listed = f"{j['ranks_listed']} of {j['nranks']} ranks listed" if pd.notna(j["nranks"]) \
        else f"{j['ranks_listed']} ranks listed"
    if j["ranks_listed"] < 2:
        g.add_row("ranks", listed + ": no per-rank table, so no spread")
        g.add_row("comm", f"{_num(j['comm_mean_s'])} s of {_num(j['elapsed_max_s'])} s elapsed "
                  f"({_pct(j['comm_share_mean'])})")
        return g
    g.add_row("ranks", listed + ("" if j["complete"] else " (not all: stats cover these)"))
    g.add_row("elapsed", f"{_num(j['elapsed_max_s'], 2)} s (max over ranks)")
    g.add_row("comm per rank", f"mean {_num(j['comm_mean_s'])} s; min {_num(j['comm_min_s'])} "
              f"(rank {j['min_rank']}), median {_num(j['comm_median_s'])} (rank "
              f"{j['median_rank']}), max {_num(j['comm_max_s'])} (rank {j['max_rank']})")
    g.add_row("spread", f"COV {_pct(j['comm_cov'])}, imbalance max/mean "
              f"{_num(j['comm_imbalance'], 3)}")
    g.add_row("comm share", f"mean {_pct(j['comm_share_mean'])} of elapsed (min "
              f"{_pct(j['comm_share_min'])}, max {_pct(j['comm_share_max'])})")
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
                      _num(r.comm_time_s, 2), _num(r.elapsed_s, 2), _pct(r.comm_share),
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
        table.add_row(str(r.routine), str(r.ranks), _count(r.calls), _num(r.calls_per_rank, 1),
                      human_bytes(r.avg_bytes), human_bytes(r.bytes), _num(r.time_s),
                      _num(r.time_s_per_rank), _pct(r.time_share))
    if len(routines) > TOP_ROUTINES:
        rest = routines.iloc[TOP_ROUTINES:]
        table.add_row(Text(f"+{len(rest)} more", style="dim"), "", "", "", "", "",
                      _num(rest["time_s"].sum()), "", _pct(rest["time_share"].sum()))
    return table


def draw_message_sizes(section: Section) -> RenderableType:
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
            minor.append(f"{routine} ({_count(_total(rb['calls']))} calls, "
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
    calls = _count(_total(rb["calls"]))
    title = Text.assemble((routine, "bold"), f"  {calls} call{'s' if calls != '1' else ''}, "
                          f"{_num(_total(rb['time_s']))} s over {ranks} rank profile"
                          f"{'s' if ranks > 1 else ''}")
    table = FitTable([Col("size", KEY), Col("calls"), Col("calls/rank"), Col("time s"),
                      Col("share"), Col("bar", BAR, width=24, header=""), Col("algbw"),
                      Col("busbw")], BINS_DROP, title=title, pad_edge=False, show_edge=False)
    top = float(rb["time_share"].max()) if rb["time_share"].notna().any() else 0.0
    for r in rb.itertuples(index=False):
        share = float(r.time_share) if pd.notna(r.time_share) else 0.0
        table.add_row(bin_label(int(r.bin), int(r.bin_hi_bytes)), _count(r.calls),
                      _num(r.calls_per_rank, 1), _num(r.time_s), _pct(r.time_share),
                      BarCell(top or 1.0, share), human_rate(r.algbw_bytes_per_s),
                      human_rate(r.busbw_bytes_per_s))
    return table


DRAWERS = {"communication": draw_communication, "message_sizes": draw_message_sizes}

"""The rules: each a pure function from analysis tables to :class:`~dptrace.findings.Finding`.

Every rule but those new in issue 15 reproduces a check that dptrace already made somewhere,
with the same condition and threshold (:mod:`.thresholds`):

===========================  ========  ==========================================================
kind                         severity  condition (where it came from)
===========================  ========  ==========================================================
files_disagree               critical  a rank's own profile and rank 0's table differ by more than
                                       0.006 s (``communication.checks`` "files disagree")
role_claimed_twice           warning   2+ rank files claim one min/median/max role
                                       (``communication.checks`` "role claimed twice")
ranks_missing                warning   rank 0's table lists fewer ranks than the job has
                                       (``communication.checks`` "ranks missing")
small_message_allreduce      warning   Allreduces of <= 64 B hold more than 50% of a job's MPI
                                       time (``communication.small_messages.dominated``), or
                                       of a Horovod timeline's allreduce time
                                       (``horovod.small_allreduces``; new in issue 15)
throughput_straggler         warning   a series has instances more than 5% below its median
                                       (``throughput_summary``'s ``stragglers``; not for
                                       global figures, whose copies are checked below)
job_copies_disagree          warning   copies of a figure printed for the whole job differ by
                                       more than 5% within one run (``throughput.job``)
job_check_failed             warning   the job figure and another printed figure of the job (or
                                       the ranks' estimate) differ by more than the printed +-
                                       range, else 5% (``throughput.job``)
negotiation_straggler        warning   in a Horovod timeline's steady state (a tensor's second
                                       negotiation or later; 10+ of them with ticks from 2+
                                       ranks), one rank was last ready, >= 1 ms after the first,
                                       in >= 50% of them and more often than any other; one rank
                                       per run at most (issue 29: start-up is never judged)
unjudged_negotiations        info      a timeline whose ticks are start-up ones only (the response
                                       cache's steady state has none), or too few steady ones, or
                                       timelines of one run naming different ranks: no rank named
compute_straggler            warning   a rank's MPI time is below the other ranks' median by
                                       >= 2% of the elapsed time and >= 4 median absolute
                                       deviations of theirs (floor 0.005 s), 3+ ranks, and (where
                                       rank profiles show it) >= 50% of the others' extra MPI
                                       time is in collectives (new in issue 15: thresholds
                                       decided from real balanced and delayed runs)
waiting_rank                 warning   the other side of compute_straggler, with its thresholds:
                                       one rank's MPI time (mpitrace or mpiP) above the other
                                       ranks' median by >= 2% of the elapsed time and 4 MADs,
                                       above the next rank's by 2% too, and the others' median at
                                       most half of it: it waits for them (it has far less to
                                       compute; new in issue 29)
collective_straggler         warning   in PyTorch profiler traces of 2+ ranks of one job (same
                                       world size and backend, overlapping times), a rank's
                                       communication time is below the other ranks' median by
                                       >= 10% of the profiled span and is at most half of it
                                       (the others wait for it inside the collectives; new in
                                       issue 17)
cross_source_straggler       critical  2+ of compute_straggler, negotiation_straggler and
                                       throughput_straggler name one rank of a run: one finding
                                       replaces theirs, with all their evidence
truncated_input              warning   a timeline ends inside a record (``timeline_warnings``);
                                       a training log with its trainer's training lines but not
                                       the summary that trainer prints at the end (HF Trainer,
                                       Horovod benchmarks: ``job.end_summaries``; new in issue 15)
open_intervals               warning   a timeline has B records without an E (``timeline_warnings``)
idle_tiles                   warning   tiles idle in every snapshot (the tiles drawer)
unmatched_ends               info      E records that closed nothing (``timeline_warnings``)
cached_negotiations          info      negotiations without rank-ready ticks (``timeline_warnings``)
lowest_exec_instance         info      of 2+ SambaNova instances, the one with the lowest mean
                                       %exec (the tiles drawer)
comm_share_high              warning   a job's ranks spent more than 25% of their elapsed time
                                       in MPI on average (``communication.jobs``)
throughput_drift             warning   the last third of an instance's steady figures is more
                                       than 10% below the first third (``throughput.drift``)
unknown_world_size           info      a per-rank or per-device job figure in a run whose world
                                       size nothing states (``throughput.job``)
low_exec                     warning   a SambaNova instance's tiles executed less than 50% of the
                                       time on average (``tiles.instances``)
load_overhead                warning   a SambaNova instance's tiles spent more than 10% of the
                                       time loading program/arguments or checkpointing
low_busbw                    warning   a collective's bin of messages all over 1 MiB, with >= 1%
                                       of the job's time, below 50% of the busbw of the job's
                                       best bin (``communication.message_sizes``; new in issue 15)
long_warmup                  warning   a series printed per step (15+ figures) takes more than 25%
                                       of its steps to reach half its steady rate
                                       (``throughput.warmup_length``; new in issue 15)
below_system_busbw           warning   a large bin of the job's collectives (mpitrace or PyTorch
                                       profiler traces) with >= 5% of its collective time below
                                       50% of the busbw the run's nccl-tests measured at that
                                       size (``nccltests.job_vs_system``; new in issue 17)
nccl_socket_fallback         critical  NCCL chose TCP sockets on a job of several nodes (a warning
                                       when the nodes are unknown; none on one node)
                                       (``nccl.overview``; new in issue 17, :mod:`.nccl`)
nccl_mixed_networks          warning   processes of one run chose different NCCL networks
nccl_no_gdrdma               info      a multi-node job's channels through the network never use
                                       GPUDirect RDMA
nccl_timeout                 critical  PyTorch's NCCL watchdog timed out collectives
nccl_error                   critical  NCCL error codes in the log
===========================  ========  ==========================================================

``cross_source_stragglers`` is the one rule over findings (it runs last): it merges what
several sources say of one rank, tells where per-rank throughput lines cannot show a straggler
(synchronous data parallelism runs every rank at the slowest one's pace), and makes a symptom
(``small_message_allreduce``) point to a compute straggler of its job.

A rule takes the tables its section already shows (so ``evidence`` names rows a reader can find
in ``--json`` or the HTML) and never reads a face. :func:`run_rules` builds those tables once
from a Dataset and runs every rule.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..analysis import communication as comm
from ..analysis import horovod as hv
from ..analysis import job as jobfig
from ..analysis import nccl as nccl_analysis
from ..analysis import nccltests as nt
from ..analysis import throughput as thr
from ..analysis import tiles as tl
from ..analysis import torchtrace as tt
from . import Finding, nccl
from . import thresholds as th

if TYPE_CHECKING:
    from ..dataset import Dataset


# -- formatting (plain text: findings never import reports) -----------------------------------

def _na(v: Any) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and v != v)


def _int(v: Any) -> str:
    return "?" if _na(v) else f"{int(v):,}"


def _num(v: Any) -> str:
    """A measure for a sentence: 1,234 / 12.35 / 0.0123."""
    if _na(v):
        return "?"
    x = float(v)
    if not np.isfinite(x):
        return str(x)
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


def _pct(share: float) -> str:
    return f"{100 * share:g}%"


def _lines(first: Any, last: Any) -> str:
    """'line 2' or 'lines 10-250' (a tqdm bar's updates share one physical line)."""
    return f"line {_int(first)}" if _int(first) == _int(last) else \
        f"lines {_int(first)}-{_int(last)}"


def _pct1(share: float) -> str:
    """A measured share, to one decimal: 0.857 -> '85.7%'."""
    return f"{100 * share:.1f}%"


def _time_us(us: Any) -> str:
    """Microseconds for a sentence: '1.23 s', '12.3 ms', '45 µs'."""
    if _na(us):
        return "?"
    x = float(us)
    if abs(x) >= 1e6:
        return f"{x / 1e6:,.2f} s"
    if abs(x) >= 1e3:
        return f"{x / 1e3:.1f} ms"
    return f"{x:.0f} µs"


def _unit(metric: Any) -> str:
    """'samples_per_s' -> 'samples/s'."""
    m = "" if _na(metric) else str(metric)
    return m[: -len("_per_s")] + "/s" if m.endswith("_per_s") else m


def _rank_list(df: pd.DataFrame, limit: int = 8) -> str:
    """'1, 2, 3' (the first ``limit`` ranks, then '...'), as ``communication.checks`` lists them."""
    r = [str(x) for x in df["rank"].tolist()]
    return ", ".join(r[:limit]) + (", ..." if len(r) > limit else "")


def _count(v: Any) -> int:
    """A count from a table cell; a missing count is 0 (nothing to report)."""
    return 0 if _na(v) else int(v)


def _flag(v: Any) -> bool:
    return False if _na(v) else bool(v)


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


# -- communication (mpitrace) -----------------------------------------------------------------

def files_disagree(rt: pd.DataFrame) -> list[Finding]:
    """Per job: ranks whose own file differs from rank 0's table (``rank_times().mismatch``)."""
    out = []
    for job, g in rt.groupby("job", sort=False, observed=True):
        bad = g[g["mismatch"].astype(bool)]
        if not len(bad):
            continue
        ex = bad.iloc[0]
        out.append(Finding(
            "critical", "files_disagree", "job", f"job {job}",
            f"In job {job}, {_plural(len(bad), 'rank')} ({_rank_list(bad)}) have an own profile "
            f"that differs from rank 0's table by more than {th.TABLE_TOLERANCE_S:g} s, e.g. "
            f"rank {ex['rank']} elapsed {ex['own_elapsed_s']:.2f} s vs {ex['elapsed_s']:.2f} s "
            "in the table.",
            f"communication.ranks job={job} mismatch=True",
            "The profiles probably come from different runs with the same job id: keep one "
            "run's files per directory (rank 0's table is used meanwhile).",
            value=float(len(bad)), threshold=0.0))
    return out


def role_claimed_twice(ranks: pd.DataFrame) -> list[Finding]:
    """Per job and role: two or more rank files claiming the min/median/max communication time
    (``mpi_ranks`` rows of origin ``own``)."""
    own = ranks[ranks["origin"].astype(object) == "own"]
    out = []
    for job, g in own.groupby(own["job"].astype(object), sort=False):
        roles = g["comm_role"].dropna().astype(str)
        for role in ("minimum", "median", "maximum"):
            n = int(roles.str.contains(role).sum())
            if n > 1:
                out.append(Finding(
                    "warning", "role_claimed_twice", "job", f"job {job}",
                    f"In job {job}, {n} rank files say they had the {role} communication time, "
                    "which only one rank can have.",
                    f"mpi_ranks job={job} origin=own comm_role={role}",
                    "The directory probably mixes the profiles of several runs of the same job "
                    "id.", value=float(n), threshold=1.0))
    return out


def ranks_missing(rt: pd.DataFrame) -> list[Finding]:
    """Per job: rank 0's table listing fewer ranks than the job has (not a concise mpiP
    report, which names only the ranks of the largest and smallest times)."""
    out = []
    for job, g in rt.groupby("job", sort=False, observed=True):
        nr = g["nranks"].max()
        listed = int((g["origin"] != "own").sum())
        concise = bool(((g["origin"] == "mpip_report") & g["comm_role"].notna()).any())
        if listed and pd.notna(nr) and listed < nr and not concise:
            out.append(Finding(
                "warning", "ranks_missing", "job", f"job {job}",
                f"Rank 0's table of job {job} lists {listed} of {nr} ranks, so the spread of "
                "communication time covers those ranks only.",
                f"communication.ranks job={job} origin=rank0_table",
                "Check that rank 0's profile is complete (not cut) and from the same run.",
                value=float(listed), threshold=float(nr)))
    return out


def small_message_allreduce(small: pd.DataFrame, share: float = th.SMALL_SHARE,
                            limit_bytes: int = th.SMALL_BYTES) -> list[Finding]:
    """Per job: more than ``share`` of the MPI time in Allreduces of at most ``limit_bytes``
    (``communication.small_messages``, built with the same ``limit_bytes``), when those
    took at least :data:`.thresholds.SMALL_MIN_S_PER_RANK` per rank."""
    out = []
    for r in small.itertuples(index=False):
        s = r.small_share
        if _na(s) or not s > share:
            continue
        ranks = _count(r.ranks) or 1
        if _na(r.small_time_s) or r.small_time_s / ranks < th.SMALL_MIN_S_PER_RANK:
            continue   # a share of next to nothing (a one-rank run's local copies)
        out.append(Finding(
            "warning", "small_message_allreduce", "job", f"job {r.job}",
            f"{100 * s:.1f}% of job {r.job}'s MPI time ({r.small_time_s:.2f} s of "
            f"{r.mpi_time_s:.2f} s) is in Allreduces of at most {limit_bytes} bytes "
            f"({_int(r.small_calls)} calls).",
            f"communication.small_messages job={r.job}",
            "With Horovod these are its tensor negotiation, not gradients; with NCCL the "
            "gradient traffic is not in MPI at all.",
            value=100 * float(s), threshold=100 * share))
    return out


def small_horovod_allreduce(small: pd.DataFrame, share: float = th.SMALL_SHARE,
                            limit_bytes: int = th.SMALL_BYTES) -> list[Finding]:
    """Per Horovod timeline: more than ``share`` of the allreduce time in responses of at
    most ``limit_bytes`` (``horovod.small_allreduces``), when those took at least
    :data:`.thresholds.SMALL_MIN_S_PER_RANK`: the latency-bound side of Horovod (a scalar
    allreduced every step, gradients sent one by one with fusion off)."""
    out = []
    for r in small.to_dict("records"):
        s = r["small_share"]
        if _na(s) or not s > share or _na(r["small_s"]) or \
                r["small_s"] < th.SMALL_MIN_S_PER_RANK:
            continue
        n = int(r["small_responses"])
        out.append(Finding(
            "warning", "small_message_allreduce", "job", str(r["source"]),
            f"{100 * s:.1f}% of Horovod's allreduce time in {r['source']} "
            f"({_time_us(1e6 * r['small_s'])} of {_time_us(1e6 * r['allreduce_s'])}) is in "
            "responses of at most "
            f"{limit_bytes} bytes "
            f"({_plural(n, 'response')} of {_plural(int(r['small_tensors']), 'tensor')}, "
            f"{_time_us(r['small_us_each'])} each): latency, not bandwidth, sets "
            "their time.",
            f"horovod.small_allreduces source={r['source']}",
            "Send fewer, larger allreduces: keep tensor fusion on (HOROVOD_FUSION_THRESHOLD, "
            "default 64 MB; 0 turns it off) and give it time to fill (HOROVOD_CYCLE_TIME); "
            "average metrics every N steps, or stack the scalars into one tensor and "
            "allreduce that once.",
            value=100 * float(s), threshold=100 * share))
    return out


#: MPI routines that are collectives (a late rank makes the others wait inside them); the
#: routines of :data:`communication.COLLECTIVES` and the other blocking collectives mpitrace
#: wraps
COLLECTIVE_ROUTINES: frozenset[str] = frozenset(comm.COLLECTIVES) | frozenset({
    "MPI_Barrier", "MPI_Gather", "MPI_Gatherv", "MPI_Scatter", "MPI_Scatterv", "MPI_Scan",
    "MPI_Exscan", "MPI_Reduce_scatter_block", "MPI_Alltoallw"})


def _median_without(s: np.ndarray, p: int) -> float:
    """Median of the sorted array ``s`` without its element at position ``p`` (O(1))."""
    m = len(s) - 1

    def at(j: int) -> float:
        return float(s[j] if j < p else s[j + 1])

    return at((m - 1) // 2) if m % 2 else (at(m // 2 - 1) + at(m // 2)) / 2


@dataclass(frozen=True)
class _Wait:
    """Where the others' extra MPI time sits, from the rank profiles (per routine and bin)."""

    profiled: int                # other ranks with a profile
    extra_s: float               # sum over routines of max(0, others' median - the rank's)
    collective_s: float          # ... over collectives only
    routine: str | None = None   # the collective with the most extra time
    routine_s: float = 0.0
    bin: int | None = None       # its size bin with the most extra time
    bin_lo: int | None = None
    bin_hi: int | None = None


def _where_waited(rank: int, routines: pd.DataFrame, messages: pd.DataFrame,
                  above: bool = False) -> _Wait | None:
    """Compare ``rank``'s own profile with the other profiled ranks' median, routine by routine
    (a routine a rank does not list counts 0 s); None without both. The extra time is the
    others' over the rank's (the others waited for it), or with ``above`` the rank's over
    the others' (it waited for them: then the routine named is the one holding the most of
    it, collective or not)."""
    t = routines.pivot_table(index="rank", columns="routine", values="time_s", aggfunc="sum",
                             observed=True).fillna(0.0)
    if rank not in t.index or len(t.index) < 2:
        return None
    others = t.drop(index=rank)
    sign = -1.0 if above else 1.0
    extra = (sign * (others.median() - t.loc[rank])).clip(lower=0.0)
    coll = extra[[str(r) in COLLECTIVE_ROUTINES for r in extra.index]]
    w = _Wait(len(others), float(extra.sum()), float(coll.sum()))
    top = extra if above else coll
    if not len(top) or not top.max() > 0:
        return w
    routine = str(top.idxmax())
    m = messages[messages["routine"].astype(str) == routine]
    b = m.pivot_table(index="rank", columns="bin", values="time_s", aggfunc="sum",
                      observed=True).fillna(0.0)
    if rank not in b.index or len(b.index) < 2:
        return replace(w, routine=routine, routine_s=float(top.max()))
    by_bin = sign * (b.drop(index=rank).median() - b.loc[rank])
    at = int(by_bin.idxmax())
    lo_hi = m[m["bin"] == at].iloc[0]
    return replace(w, routine=routine, routine_s=float(top.max()), bin=at,
                   bin_lo=int(lo_hi["bin_lo_bytes"]), bin_hi=int(lo_hi["bin_hi_bytes"]))


def _bytes_range(lo: int | None, hi: int | None) -> str:
    if lo is None or hi is None:
        return ""
    return f" of {hi:,} bytes" if lo == hi else f" of {lo:,}-{hi:,} bytes"


def _of_job(t: pd.DataFrame, key: dict[str, Any]) -> pd.DataFrame:
    """The rows of ``t`` with these key values (a key column ``t`` lacks is not compared)."""
    keep = np.ones(len(t), dtype=bool)
    for c, v in key.items():
        if c in t.columns:
            keep &= (t[c].astype(object) == v).to_numpy(dtype=bool)
    return t[keep]


@dataclass(frozen=True)
class _Outlier:
    """A rank whose MPI time is an outlier against the other ranks of its job."""

    job: object
    rank: int
    ranks: int            # ranks of the job with an MPI time
    mine: float           # its MPI time (s)
    med: float            # the median of the other ranks' (s)
    gap: float            # how far from that median (s, >= 0)
    elapsed: float        # the job's elapsed time (s): the longest rank's
    mad: float            # the others' median absolute deviation (floored, s)
    world: int            # the job's world size
    wait: _Wait | None    # where the gap sits in the rank profiles


def _mpi_outliers(rt: pd.DataFrame, routines: pd.DataFrame, messages: pd.DataFrame,
                  share: float, mads: float, floor_s: float, min_ranks: int,
                  above: bool = False) -> list[_Outlier]:
    """Per job of ``communication.ranks`` (mpitrace's rank files and rank 0's table, or an
    mpiP report's task rows): ranks whose time in MPI is below (``above``: above) the median
    of the other ranks' by at least ``share`` of the job's elapsed time and by at least
    ``mads`` median absolute deviations of the others' times (floored at ``floor_s``), in
    jobs with ``min_ranks`` or more ranks; the largest gaps first. With ``above`` only the
    rank with the most MPI time can be one, and only when it also exceeds the next rank's
    time by ``share`` of the elapsed time (one rank alone waits for all the others)."""
    out: list[_Outlier] = []
    by = ["run", "job"] if "run" in rt.columns else ["job"]   # two runs may share a job id
    for key, g in rt.groupby(by, sort=False, observed=True):
        job = key[-1]
        g = g[g["comm_time_s"].notna() & g["elapsed_s"].notna()]
        if len(g) < min_ranks:
            continue
        elapsed = float(g["elapsed_s"].max())
        if not elapsed > 0:
            continue
        world = int(g["nranks"].max()) if g["nranks"].notna().any() else len(g)
        order = np.argsort(g["comm_time_s"].to_numpy(dtype="float64"), kind="stable")
        s = g["comm_time_s"].to_numpy(dtype="float64")[order]
        ranks = g["rank"].to_numpy()[order]
        mine_r, mine_m = (_of_job(t, dict(zip(by, key, strict=True)))
                          for t in (routines, messages))
        if "region" in mine_r and (mine_r["region"].astype(object) == "init_finalize").any():
            mine_r = mine_r[mine_r["region"].astype(object) == "init_finalize"]
        if above:   # the most MPI time only, clear of the next rank's
            places = [len(s) - 1] if len(s) > 1 and float(s[-1] - s[-2]) >= share * elapsed \
                else []
        else:       # least MPI time first: the largest gaps first
            places = list(range(len(s)))
        for p in places:
            med = _median_without(s, p)
            gap = (float(s[p]) - med) if above else (med - float(s[p]))
            if gap < share * elapsed:
                continue
            others = np.delete(s, p)
            mad = max(float(np.median(np.abs(others - med))), floor_s)
            if gap < mads * mad:
                continue
            r = int(ranks[p])
            out.append(_Outlier(job, r, len(s), float(s[p]), med, gap, elapsed, mad, world,
                                _where_waited(r, mine_r, mine_m, above)))
    return out


def compute_stragglers(rt: pd.DataFrame, routines: pd.DataFrame, messages: pd.DataFrame,
                       share: float = th.COMPUTE_GAP_SHARE, mads: float = th.COMPUTE_GAP_MADS,
                       floor_s: float = th.COMPUTE_MAD_FLOOR_S,
                       min_ranks: int = th.COMPUTE_MIN_RANKS,
                       collective_share: float = th.COLLECTIVE_SHARE) -> list[Finding]:
    """Per job of ``communication.ranks`` (``rank_times``: mpitrace's ranks, or an mpiP
    report's tasks): ranks whose time in MPI is below the
    median of the other ranks' by at least ``share`` of the job's elapsed time and by at least
    ``mads`` median absolute deviations of the others' times (floored at ``floor_s``), in jobs
    with ``min_ranks`` or more ranks (:func:`_mpi_outliers`). In synchronous data parallelism
    the others wait for a slow
    rank inside the next collective, so the slow rank is the one with the *least* MPI time.

    Where the rank and other ranks wrote profiles (``mpi_routines``/``mpi_messages``: mpitrace
    writes the min, median and max ranks', every rank's with SAVE_ALL_TASKS=yes), the others'
    extra time is compared routine by routine: a rank fires only if at least
    ``collective_share`` of it is in collectives, and the finding names the collective and
    size bin that hold the most. Without them it fires on the times alone and says so."""
    out: list[Finding] = []
    for o in _mpi_outliers(rt, routines, messages, share, mads, floor_s, min_ranks):
        w = o.wait
        if w is not None and w.extra_s > 0 and w.collective_s < collective_share * w.extra_s:
            continue                # the others' extra time is not in collectives
        out.append(_compute_finding(o.job, o.rank, o.ranks, o.mine, o.med, o.gap, o.elapsed,
                                    share, o.mad, w, o.world))
    return out


def waiting_ranks(rt: pd.DataFrame, routines: pd.DataFrame, messages: pd.DataFrame,
                  share: float = th.COMPUTE_GAP_SHARE, mads: float = th.COMPUTE_GAP_MADS,
                  floor_s: float = th.COMPUTE_MAD_FLOOR_S,
                  min_ranks: int = th.COMPUTE_MIN_RANKS,
                  ratio: float = th.WAITING_RATIO) -> list[Finding]:
    """The other side of :func:`compute_stragglers`, with its thresholds: the one rank whose
    MPI time is *above* the other ranks' median by at least ``share`` of the job's elapsed
    time and ``mads`` median absolute deviations of theirs, above the next rank's by
    ``share`` too, and at least 1 / ``ratio`` times that median. The others hardly waited
    (their MPI time is low), so its MPI time is its own waiting for them: it has far less to
    compute than they do (a manager or I/O rank, a smaller share of the domain or data). Not
    a straggler: the job runs at the others' pace and this rank idles."""
    out: list[Finding] = []
    for o in _mpi_outliers(rt, routines, messages, share, mads, floor_s, min_ranks,
                           above=True):
        if o.med > ratio * o.mine:
            continue                # the others waited too: a spread, not one idle rank
        w = o.wait
        where = ""
        if w is not None and w.routine is not None:
            where = (f", most in {w.routine}{_bytes_range(w.bin_lo, w.bin_hi)} ("
                     f"{_num(w.routine_s)} s more than the median of "
                     f"{_plural(w.profiled, 'other profile')} there)")
        of = 100 * o.med / o.elapsed
        out.append(Finding(
            "warning", "waiting_rank", "rank", f"rank {o.rank}",
            f"Rank {o.rank} spent {_num(o.gap)} s more in MPI than the median of the other "
            f"{o.ranks - 1} ranks of job {o.job} ({_num(o.mine)} s vs {_num(o.med)} s: "
            f"{100 * o.mine / o.elapsed:.1f}% of the {_num(o.elapsed)} s run against "
            f"{of:.1f}%, {o.gap / o.mad:.1f} times their spread){where}: it waited for them. "
            f"They spent far less time in MPI, so rank {o.rank} has far less to compute than "
            "they do: the job runs at their pace while it idles.",
            f"communication.ranks job={o.job} rank={o.rank}",
            f"If rank {o.rank} coordinates by design (a manager, I/O), count it out of the "
            "compute ranks; otherwise give it its share of the work (the domain "
            "decomposition, its data shard). The job's speed is the others' compute, not "
            "the network.",
            rank=o.rank, value=100 * o.gap / o.elapsed, threshold=100 * share,
            world_size=o.world, origin=f"job {o.job}"))
    return out


def _compute_finding(job: object, r: int, n: int, mine: float, med: float, gap: float,
                     elapsed: float, share: float, mad: float, w: _Wait | None,
                     world: int) -> Finding:
    where = ""
    evidence = f"communication.ranks job={job} rank={r}"
    if w is not None and w.routine is not None:
        where = (f", most in {w.routine}{_bytes_range(w.bin_lo, w.bin_hi)} ("
                 f"{_num(w.routine_s)} s more than rank {r} there, median of "
                 f"{_plural(w.profiled, 'other profile')})")
        at = f"{w.routine}{_bytes_range(w.bin_lo, w.bin_hi)}"
    else:
        where = (" (where needs this rank's profile and another's; mpitrace writes every "
                 "rank's with SAVE_ALL_TASKS=yes)")
        at = "the collectives"
    return Finding(
        "warning", "compute_straggler", "rank", f"rank {r}",
        f"Rank {r} spent {_num(gap)} s less in MPI than the median of the other {n - 1} ranks "
        f"of job {job} ({_num(mine)} s vs {_num(med)} s, {100 * gap / elapsed:.1f}% of the "
        f"{_num(elapsed)} s run, {gap / mad:.1f} times their spread): they waited for it"
        f"{where}.",
        evidence,
        f"Look at compute or data loading on rank {r} (the others wait for it in {at}): its "
        "node, its input shard and loader workers, or work only it does (logging, evaluation, "
        "checkpoints).",
        rank=r, value=100 * gap / elapsed, threshold=100 * share, world_size=world,
        origin=f"job {job}")


# -- throughput (training logs) ---------------------------------------------------------------

def _instance_ranks(ranks: pd.DataFrame | None) -> dict[tuple[str, str], int]:
    """(source, instance) -> rank, for the printers of ``throughput`` rows that carry exactly
    one rank (a launcher prefix, a per-rank file)."""
    if ranks is None or ranks.empty:
        return {}
    r = ranks[ranks["rank"].notna() & ranks["instance"].notna()]
    r = r[["source", "instance", "rank"]].drop_duplicates()  # by codes: then few rows to text
    r = pd.DataFrame({"source": r["source"].astype(str), "instance": r["instance"].astype(str),
                      "rank": r["rank"].astype("int64")}).drop_duplicates()
    one = r.groupby(["source", "instance"])["rank"].transform("size") == 1
    return {(a, b): int(c) for a, b, c in r[one].itertuples(index=False)}


def throughput_stragglers(instances: pd.DataFrame, ranks: pd.DataFrame | None = None,
                          straggler: float = th.STRAGGLER_FRACTION) -> list[Finding]:
    """Per series of ``throughput.instances`` (``per_instance``): instances more than
    ``straggler`` below the series median; one finding naming the slowest. With ``ranks``
    (``throughput`` rows: source, instance, rank), the finding's ``rank`` is the slowest
    printer's rank where its lines carry one."""
    of_rank = _instance_ranks(ranks)
    if instances.empty:
        return []
    out = []
    instances = instances[instances["scope"].astype("object") != "global"]
    groups = instances.groupby(thr.SERIES, sort=False, dropna=False, observed=True)
    for key, g in groups:
        v = g["value"].astype("float64")
        below = g["below_median_pct"].astype("float64")
        named = g["instance"].notna()  # an unknown printer cannot be named
        n_slow = int(((below > straggler * 100.0) & named).sum())
        if not n_slow or not v.notna().any():
            continue
        slow = g.loc[v.where(named).idxmin()]
        k = dict(zip(thr.SERIES, key, strict=True))
        unit = _unit(k["metric"])
        label = f" ({k['label']})" if not _na(k["label"]) else ""
        out.append(Finding(
            "warning", "throughput_straggler", "instance", f"instance {slow['instance']}",
            f"Instance {slow['instance']} is the slowest of {_plural(len(g), 'instance')} of "
            f"'{k['name']}'{label} in {k['source']}: {_num(slow['value'])} {unit} after "
            f"warm-up, {slow['below_median_pct']:.1f}% below the median of {_num(v.median())} "
            f"{unit}; {_plural(n_slow, 'instance')} more than {_pct(straggler)} below.",
            f"throughput.instances source={k['source']} name={k['name']}"
            + (f" label={k['label']}" if label else "") + " straggler=True",
            "The job waits for its slowest instance at every synchronisation: compare that "
            "instance's node, data shard and input pipeline with the others.",
            rank=of_rank.get((str(k["source"]), str(slow["instance"]))),
            value=float(slow["below_median_pct"]), threshold=100.0 * straggler,
            world_size=len(g), origin=str(k["source"])))
    return out


def job_copies_disagree(job: pd.DataFrame) -> list[Finding]:
    """Runs whose job figure was printed more than once with values more than 5% apart."""
    out = []
    for _, r in job[job["copies_agree"].astype("object") == False].iterrows():  # noqa: E712
        unit = _unit(r["metric"])
        out.append(Finding(
            "warning", "job_copies_disagree", "job", f"run {r['run']}",
            f"Run {r['run']}: the figure printed for the whole job, '{r['name']}', comes in "
            f"copies that disagree ({r['rule'].split('; ')[-1]}); {_num(r['value'])} {unit} "
            "is shown. Copies of one job figure should be equal: these are different runs in "
            "one file, or a problem.",
            f"throughput.job run={r['run']} metric={r['metric']} copies_agree=False",
            "Split the file per run (or label each run's inputs: dptrace LABEL=PATH), or find "
            "which copy belongs to the run you mean; the per-series table lists every copy.",
            value=float(r["value"])))
    return out


def job_check_failed(job: pd.DataFrame) -> list[Finding]:
    """Runs whose job figure disagrees with the other evidence it was checked against."""
    out = []
    for _, r in job[job["check_agrees"].astype("object") == False].iterrows():  # noqa: E712
        unit = _unit(r["metric"])
        rng = r["check_range"]
        tol = f"the printed +-{_num(rng)}" if not _na(rng) else "5%"
        out.append(Finding(
            "warning", "job_check_failed", "job", f"run {r['run']}",
            f"Run {r['run']}: the job figure {_num(r['value'])} {unit} ({r['name']}) and "
            f"{r['check_name']} = {_num(r['check_value'])} {unit} differ by more than {tol}.",
            f"throughput.job run={r['run']} metric={r['metric']} check_agrees=False",
            "A per-device rate times the world size should match the printed total: a gap "
            "means the ranks did not all run at rank 0's rate (stragglers), or the world size "
            "or the figures belong to different runs.",
            value=float(r["check_value"]), threshold=float(r["value"])))
    return out


def throughput_drift(drifts: pd.DataFrame, drift: float = th.DRIFT_FRACTION,
                     min_rows: int = th.DRIFT_MIN_ROWS) -> list[Finding]:
    """Per series and instance (``analysis.throughput.drift``): the last third of the steady
    training figures slower than the first third by more than ``drift`` (medians), with at
    least ``min_rows`` steady figures. Global figures count (a whole job slowing down);
    an unknown printer too ("the printer"). When every instance of a series (two or more)
    slowed down, that is the job slowing down in lockstep: one finding for the series, with
    the range of their drops, not one per instance."""
    fired = [r for r in drifts.itertuples(index=False)
             if not _na(r.drop_pct) and r.drop_pct > drift * 100.0
             and _count(r.steady_rows) >= min_rows]
    series = ("run", "source", "name", "label")
    def key(r: Any) -> tuple:
        return tuple(str(getattr(r, c, "")) for c in series)
    total: dict[tuple, int] = {}
    for r in drifts.itertuples(index=False):
        if not _na(r.instance):
            total[key(r)] = total.get(key(r), 0) + 1
    groups: dict[tuple, list[Any]] = {}
    for r in fired:
        groups.setdefault(key(r), []).append(r)
    out = []
    for k, rows in groups.items():
        if len(rows) >= 2 and len(rows) == total.get(k, 0):
            out.append(_drift_of_all(rows, drift))
        else:
            out.extend(_drift_finding(r, drift) for r in rows)
    return out


_DRIFT_HINT = ("A job that slows down as it runs: look at what grows or heats up (thermal "
               "throttling, a filling disk or page cache, memory growth, a competing process on "
               "the node, data that gets slower to read later in the epoch).")


def _drift_finding(r: Any, drift: float) -> Finding:
    d = r.drop_pct
    who = (f"instance {r.instance}" if not _na(r.instance)
           else "the job" if str(r.scope) == "global" else "the printer")
    unit = _unit(r.metric)
    label = f" ({r.label})" if not _na(r.label) else ""
    return Finding(
        "warning", "throughput_drift", "instance" if not _na(r.instance) else "job",
        who if who != "the printer" else f"{r.name}",
        f"'{r.name}'{label} of {who} in {r.source} slowed down during the run: the last "
        f"third of its {_int(r.steady_rows)} steady figures has a median of "
        f"{_num(r.last_median)} {unit}, {d:.1f}% below the first third's "
        f"{_num(r.first_median)} {unit} ({_lines(r.first_lineno, r.last_lineno)}).",
        f"throughput.instances source={r.source} name={r.name}"
        + (f" label={r.label}" if label else "") + f" instance={r.instance}",
        _DRIFT_HINT, value=float(d), threshold=100.0 * drift)


def _span(lo: float, hi: float) -> str:
    a, b = _num(lo), _num(hi)
    return a if a == b else f"{a}-{b}"


def _drift_of_all(rows: list[Any], drift: float) -> Finding:
    """One finding for a series whose every instance slowed down (lockstep: the job)."""
    r = max(rows, key=lambda x: float(x.drop_pct))
    drops = [float(x.drop_pct) for x in rows]
    unit = _unit(r.metric)
    label = f" ({r.label})" if not _na(r.label) else ""
    firsts = [float(x.first_median) for x in rows]
    lasts = [float(x.last_median) for x in rows]
    return Finding(
        "warning", "throughput_drift", "job", f"{len(rows)} instances",
        f"'{r.name}'{label} in {r.source} slowed down during the run on all {len(rows)} "
        f"instances together: the last third of their steady figures is "
        f"{min(drops):.1f}-{max(drops):.1f}% below the first third (medians "
        f"{_span(min(firsts), max(firsts))} -> {_span(min(lasts), max(lasts))} {unit}); in "
        "lockstep the whole job slowed down.",
        f"throughput.instances source={r.source} name={r.name}"
        + (f" label={r.label}" if label else "") + f" instance={r.instance}",
        _DRIFT_HINT, value=max(drops), threshold=100.0 * drift)


def long_warmup(warmups: pd.DataFrame, share: float = th.LONG_WARMUP_SHARE,
                min_rows: int = th.LONG_WARMUP_MIN_ROWS) -> list[Finding]:
    """Per training series and instance printed per step (``analysis.throughput.
    warmup_length``): the figures before the first that reaches half the steady rate (the
    median of the second half) cover more than ``share`` of the series' steps, with at least
    ``min_rows`` figures. The message also tells whether the averages' fixed warm-up
    (``dropped_rows``: the ``warmup`` option) covers it."""
    out = []
    for r in warmups.itertuples(index=False):
        s = r.warmup_step_share
        if _na(s) or not s > share or _count(r.rows) < min_rows:
            continue
        who = f"instance {r.instance}" if not _na(r.instance) else "the printer"
        unit = _unit(r.metric)
        label = f" ({r.label})" if not _na(r.label) else ""
        dropped = _count(r.dropped_rows)
        covered = (f"the averages drop only its first {_plural(dropped, 'figure')} as "
                   "warm-up, so they include slow warm-up steps"
                   if dropped < _count(r.warmup_rows) else
                   f"the averages drop its first {_plural(dropped, 'figure')} as warm-up")
        end = ("it never did" if _na(r.warmup_end_step)
               else f"it did at step {_int(r.warmup_end_step)}")
        out.append(Finding(
            "warning", "long_warmup", "instance" if not _na(r.instance) else "job",
            who if not _na(r.instance) else f"{r.name}",
            f"'{r.name}'{label} of {who} in {r.source} took "
            f"{_plural(_count(r.warmup_rows), 'figure')} of {_int(r.rows)} (steps "
            f"{_int(r.first_step)}-{_int(r.last_step)}: {_pct1(float(s))} of the steps, about "
            f"{_pct1(float(r.warmup_time_share))} of the time) to reach half its steady rate "
            f"of {_num(r.steady_median)} {unit} ({end}); {covered}.",
            f"throughput.instances source={r.source} name={r.name}"
            + (f" label={r.label}" if label else "") + f" instance={r.instance}",
            "A warm-up this long relative to the run: make the run longer before judging its "
            "speed, or drop the warm-up from the averages (dptrace report --warmup); look at "
            "what makes the first steps slow (compilation or graph building, autotuning, cold "
            "caches and data loader start-up) and at a rate that keeps rising (a growing batch "
            "size, a schedule).",
            value=100.0 * float(s), threshold=100.0 * share))
    return out


def truncated_log(summaries: pd.DataFrame) -> list[Finding]:
    """Training logs (or per-rank layouts) with their trainer's training lines but not the
    end-of-run summary it prints when training finishes (``analysis.job.end_summaries``,
    :data:`analysis.job.SUMMARIES`: HF Trainer, Horovod benchmarks): the job was killed or
    the log cut. Kind ``truncated_input``, as for a timeline cut inside a record."""
    out = []
    for r in summaries.itertuples(index=False):
        if _flag(r.summary):
            continue
        within = "" if str(r.input) == str(r.file) else f" (input {r.input})"
        out.append(Finding(
            "warning", "truncated_input", "input", str(r.file),
            f"The training log {r.file}{within} has {_plural(_count(r.lines), 'line')} of "
            f"{r.trainer} training ({_lines(r.first_lineno, r.last_lineno)}) but not "
            f"{r.expected}: the job was probably killed, or the log cut, before training "
            "finished.",
            f"inputs.sources source={r.file}",
            "Figures cover the logged part of the run only, and there is no end-of-run figure "
            "to check them against: look at the end of the log (and the scheduler's) for why "
            "the job stopped (time limit, out of memory, a crash on one rank).",
            value=float(_count(r.lines)), threshold=0.0))
    return out


def unknown_world_size(job: pd.DataFrame) -> list[Finding]:
    """Job figures made of per-rank or per-device figures (one printer, a sum or mean over
    the ranks that printed) in a run whose world size nothing states: the whole job's
    throughput is not known."""
    out = []
    partial = job[job["how"].astype("object").isin(("one_printer", "sum_of_ranks",
                                                    "mean_of_ranks"))
                  & job["scope"].astype("object").isin(("instance", "device"))
                  & job["world_size"].isna()
                  # every rank runs the same steps per second: the job's rate is any rank's
                  & ~job["metric"].astype("object").isin(jobfig.SYNCHRONOUS_METRICS)]
    for _, r in partial.iterrows():
        unit = _unit(r["metric"])
        printers = _count(r["printers"])
        out.append(Finding(
            "info", "unknown_world_size", "job", f"run {r['run']}",
            f"Run {r['run']}: the job figure of {r['input']} for {r['metric']} "
            f"({_num(r['value'])} {unit}, {r['how']}) covers the "
            f"{_plural(printers, 'printer')} in the log; nothing in the inputs says how many "
            "ranks the job had, so the whole job's throughput is not known.",
            f"throughput.job run={r['run']} input={r['input']} metric={r['metric']}",
            "Give dptrace every rank's log, or make the job print its world size (WORLD_SIZE, "
            "the launcher's banner, HF Trainer's 'Num processes').",
            value=float(r["value"])))
    return out


def comm_share_high(jobs: pd.DataFrame, routines: pd.DataFrame,
                    share: float = th.COMM_SHARE) -> list[Finding]:
    """Per mpitrace job: its ranks spent more than ``share`` of their elapsed time in MPI on
    average (``communication.jobs.comm_share_mean``); names the routine holding the most MPI
    time (``communication.routines``)."""
    out = []
    for r in jobs.itertuples(index=False):
        s = r.comm_share_mean
        if _na(s) or not s > share:
            continue
        top = ""
        mine = routines[routines["job"].astype(str) == str(r.job)] if len(routines) else routines
        if len(mine) and mine["time_s"].notna().any():
            t = mine.loc[mine["time_s"].astype("float64").idxmax()]
            top = (f"; {t['routine']} holds {_pct1(float(t['time_share']))} of the MPI time"
                   if not _na(t["time_share"]) else f"; most of it in {t['routine']}")
        spread = ("" if _na(r.comm_share_min) or _na(r.comm_share_max) else
                  f", {_pct1(float(r.comm_share_min))} to {_pct1(float(r.comm_share_max))} "
                  "across ranks")
        out.append(Finding(
            "warning", "comm_share_high", "job", f"job {r.job}",
            f"The ranks of job {r.job} spent {_pct1(float(s))} of their elapsed time in MPI on "
            f"average ({r.comm_mean_s:.2f} s of up to {r.elapsed_max_s:.2f} s{spread})"
            f"{top}.",
            f"communication.jobs job={r.job}",
            "Communication not hidden behind computation: fuse more and overlap (Horovod "
            "HOROVOD_FUSION_THRESHOLD / HOROVOD_CYCLE_TIME, DDP bucket_cap_mb), check the "
            "message-size table for slow bins; time the others spent waiting for a slow "
            "rank counts here too (see any straggler finding).",
            value=100.0 * float(s), threshold=100.0 * share))
    return out


def _bin_bytes(r: pd.Series) -> str:
    """' of 2,097,153-4,194,304 bytes' (a message-size bin)."""
    lo, hi = r["bin_lo_bytes"], r["bin_hi_bytes"]
    return "" if _na(lo) or _na(hi) else _bytes_range(int(lo), int(hi))


def below_system_busbw(jvs: pd.DataFrame, fraction: float = th.SYSTEM_BUSBW_FRACTION,
                       large_bytes: int = th.LARGE_BYTES,
                       min_share: float = th.SYSTEM_MIN_SHARE) -> list[Finding]:
    """Per run and kind of evidence (``nccltests.job_vs_system``): large bins of the job's
    collectives holding at least ``min_share`` of its collective time whose busbw is below
    ``fraction`` of what this system's nccl-tests measured at that size. One finding per
    run and evidence, naming the bin with the most time among them."""
    out: list[Finding] = []
    if jvs.empty:
        return out
    for evidence, g in jvs.groupby("evidence", sort=False):
        ratio = g["ratio"].astype("float64")
        slow = g[(g["bin_lo_bytes"].astype("float64") > large_bytes)
                 & (g["time_share"].astype("float64") >= min_share) & (ratio < fraction)]
        if slow.empty:
            continue
        worst = slow.loc[slow["time_s"].astype("float64").idxmax()]
        r = float(worst["ratio"])
        others = "" if len(slow) == 1 else \
            f"; {_plural(len(slow) - 1, 'more large bin')} below {_pct(fraction)} too"
        tested = "ranks unknown" if _na(worst["test_nranks"]) or _na(worst["test_nhosts"]) \
            else f"{_int(worst['test_nranks'])} ranks on " \
            f"{_plural(int(worst['test_nhosts']), 'host')}"
        beyond = (" (the job's size is above the largest the test ran: its busbw there)"
                  if bool(worst["beyond_tested"]) else "")
        run = f" run={worst['run']}" if "run" in g.columns else ""
        out.append(Finding(
            "warning", "below_system_busbw", "job", str(evidence),
            f"The job's {worst['collective']}{_bin_bytes(worst)} ({_int(worst['calls'])} "
            f"calls, {100 * float(worst['time_share']):.0f}% of its collective time in the "
            f"{evidence}) reached a bus bandwidth of {float(worst['busbw_gbps']):.3g} GB/s, "
            f"{100 * r:.1f}% of the {float(worst['system_busbw_gbps']):.3g} GB/s this "
            f"system's nccl-tests {worst['test']}_perf measured at that size{beyond} "
            f"({tested}; the job ran {_int(worst['nranks'])} ranks){others}.",
            f"nccl_tests.job_vs_system{run} collective={worst['collective']} "
            f"bin={int(worst['bin'])}",
            "nccl-tests time a collective with every rank ready at once; a job's collective "
            "time also holds its wait for the last rank to arrive, so look first for a "
            "straggler (the per-rank findings) and for compute that the collectives wait "
            "on; then for what differs from the test: the network NCCL chose (the NCCL "
            "setup section), a communicator over more nodes than the test's, or other "
            "traffic at the same time.",
            value=100.0 * r, threshold=100.0 * fraction))
    return out


def low_busbw(bins: pd.DataFrame, fraction: float = th.BUSBW_FRACTION,
              large_bytes: int = th.LARGE_BYTES,
              min_share: float = th.BUSBW_MIN_SHARE) -> list[Finding]:
    """Per mpitrace job (``communication.message_sizes``, the ``message_sizes.bins`` table):
    bins of collectives whose messages are all more than ``large_bytes`` and that hold at
    least ``min_share`` of the job's time in the table, with a bus bandwidth below
    ``fraction`` of the job's best bin's (any collective, any size: busbw is comparable
    across them, and the hardware peak is unknown). One finding per job, naming the
    slowest such bin against the best."""
    out: list[Finding] = []
    if bins.empty:
        return out
    by = [c for c in ("run", "job") if c in bins.columns]
    for key, g in bins.groupby(by, sort=False, observed=True):
        job = key[-1] if isinstance(key, tuple) else key
        bw = g["busbw_bytes_per_s"].astype("float64")
        if not bw.notna().any() or not bw.max() > 0:
            continue
        best = g.loc[bw.idxmax()]
        total = float(g["time_s"].astype("float64").sum())
        share = g["time_s"].astype("float64") / total if total > 0 else bw * np.nan
        large = g["bin_lo_bytes"].astype("float64") > large_bytes
        slow = g[large & (share >= min_share) & (bw < fraction * float(best["busbw_bytes_per_s"]))
                 & bw.notna()]
        if slow.empty:
            continue
        worst = slow.loc[slow["busbw_bytes_per_s"].astype("float64").idxmin()]
        ratio = float(worst["busbw_bytes_per_s"]) / float(best["busbw_bytes_per_s"])
        others = "" if len(slow) == 1 else \
            f"; {_plural(len(slow) - 1, 'more large bin')} below {_pct(fraction)} too"
        out.append(Finding(
            "warning", "low_busbw", "job", f"job {job}",
            f"{worst['routine']}{_bin_bytes(worst)} in job {job} reached a bus bandwidth of "
            f"{float(worst['busbw_bytes_per_s']) / 1e9:.3g} GB/s "
            f"({_int(worst['calls'])} calls, {_num(worst['time_s'])} s), {100 * ratio:.1f}% of "
            f"the job's best bin, {best['routine']}{_bin_bytes(best)} at "
            f"{float(best['busbw_bytes_per_s']) / 1e9:.3g} GB/s{others}.",
            f"message_sizes.bins job={job} routine={worst['routine']} bin={int(worst['bin'])}",
            "Large messages should move at least as fast as smaller ones. mpitrace counts the "
            "time ranks wait for a late rank inside a collective, so look first for a "
            "straggler; otherwise for a change of protocol or algorithm at this size (MPI "
            "eager/rendezvous limits, the collective algorithm's switch points), a transport "
            "that fell back (TCP instead of the fabric), or memory bandwidth within a node.",
            value=100.0 * ratio, threshold=100.0 * fraction))
    return out


# -- Horovod timelines ------------------------------------------------------------------------

def truncated_input(runs: pd.DataFrame) -> list[Finding]:
    """Timelines that end inside a record (``hvd_runs.truncated``)."""
    return [Finding(
        "warning", "truncated_input", "input", str(r["source"]),
        f"The timeline {r['source']} ends inside a record, so the job was probably killed "
        "while writing it; the events up to the cut are used.",
        f"horovod.runs source={r['source']} truncated=True",
        "Numbers cover the traced part of the run only.")
        for _, r in runs.iterrows() if _flag(r["truncated"])]


def open_intervals(runs: pd.DataFrame) -> list[Finding]:
    """Timelines with B records that never got their E (``hvd_runs.open_intervals``)."""
    return [Finding(
        "warning", "open_intervals", "input", str(r["source"]),
        f"{_plural(int(r['open_intervals']), 'interval')} of {r['source']} never closed "
        "(B without E); they are counted as open, with no duration.",
        f"horovod.runs source={r['source']} open_intervals={int(r['open_intervals'])}",
        "An op still in flight when the file ended: the job was killed or the timeline cut.",
        value=float(r["open_intervals"]), threshold=0.0)
        for _, r in runs.iterrows() if _count(r["open_intervals"])]


def unmatched_ends(runs: pd.DataFrame) -> list[Finding]:
    """Timelines with E records that closed nothing (``hvd_runs.unmatched_ends``)."""
    return [Finding(
        "info", "unmatched_ends", "input", str(r["source"]),
        f"{int(r['unmatched_ends']):,} E record(s) of {r['source']} closed nothing (the file "
        "was rewritten or cut at its start) and were ignored.",
        f"horovod.runs source={r['source']} unmatched_ends={int(r['unmatched_ends'])}",
        value=float(r["unmatched_ends"]), threshold=0.0)
        for _, r in runs.iterrows() if _count(r["unmatched_ends"])]


def cached_negotiations(runs: pd.DataFrame) -> list[Finding]:
    """Timelines where Horovod's response cache skipped the rank-ready ticks of some
    negotiations (``hvd_runs.negotiations_with_ticks`` < ``negotiations``)."""
    out = []
    for _, r in runs.iterrows():
        if _na(r["negotiations"]) or _na(r["negotiations_with_ticks"]):
            continue
        n, ticked = int(r["negotiations"]), int(r["negotiations_with_ticks"])
        if n and ticked < n:
            out.append(Finding(
                "info", "cached_negotiations", "input", str(r["source"]),
                f"Only {ticked:,} of {n:,} negotiations in {r['source']} have rank-ready ticks "
                "(Horovod's response cache skips them), so the straggler figures cover those "
                "only.",
                f"horovod.runs source={r['source']} negotiations_with_ticks={ticked}",
                value=float(ticked), threshold=float(n)))
    return out


def _ticked(runs: pd.DataFrame | None, src: str) -> tuple[int, int] | None:
    """(negotiations, negotiations with ticks) of the timeline ``src`` (``hvd_runs``)."""
    if runs is None or runs.empty:
        return None
    r = runs[runs["source"].astype(str) == src]
    if r.empty or _na(r["negotiations"].iloc[0]) or _na(r["negotiations_with_ticks"].iloc[0]):
        return None
    return int(r["negotiations"].iloc[0]), int(r["negotiations_with_ticks"].iloc[0])


def _named_last(steady: pd.DataFrame, share: float) -> Any | None:
    """The one rank of a timeline's steady state that the others waited for in at least
    ``share`` of the compared negotiations, strictly more often than any other rank (a tie
    names nobody); None when there is none."""
    if len(steady) < 2:
        return None
    top = steady.sort_values(["waited", "rank"], ascending=[False, True], kind="stable")
    first, second = top.iloc[0], top.iloc[1]
    if _na(first["waited_share"]) or not first["waited_share"] >= share \
            or not first["waited"] > second["waited"]:
        return None
    return first


def _startup_only(src: str, startup: pd.DataFrame, steady_n: int, min_steady: int,
                  runs: pd.DataFrame | None) -> Finding:
    """The info finding of a timeline whose ticks cannot name a rank: start-up only, or too
    few steady-state negotiations."""
    n, b = int(startup["compared"].max()), int(startup["broadcasts"].max())
    t0 = startup["steady_from_us"].iloc[0]
    top = startup.sort_values(["last", "rank"], ascending=[False, True], kind="stable")
    first = top.iloc[0]
    lead = (f"At start-up rank {first['rank']} was last in {int(first['last']):,} of {n:,} "
            f"(up to {_time_us(first['max_lag_us'])} behind the first rank): warm-up, not "
            "judged." if first["last"] > top.iloc[1]["last"] else
            f"At start-up no one rank was last most often ({int(first['last']):,} of {n:,} "
            "at most).")
    at = (f"before the second step began at {_time_us(t0)}" if not _na(t0) else
          "and no tensor is negotiated twice in the file (start-up only, or a cut-out of one "
          "step)")
    kinds = ([f"{_plural(b, 'broadcast')} of the initial state"] if b else []) + (
        [f"{_plural(n - b, 'first negotiation')} of a tensor (the first step, or a one-off "
         "tensor)"] if n - b else [])
    ticked = _ticked(runs, src)
    cache = ""
    if ticked is not None and ticked[1] < ticked[0]:
        cache = (f" The other {ticked[0] - ticked[1]:,} negotiations carry no ticks: "
                 "Horovod's response cache negotiates a cached tensor without them.")
    few = ("No steady-state negotiation" if not steady_n else
           f"Only {_plural(steady_n, 'steady-state negotiation')} (a tensor's second or later; "
           f"{min_steady} are needed)")
    return Finding(
        "info", "unjudged_negotiations", "input", src,
        f"{few} of {src} {'carries' if steady_n <= 1 else 'carry'} ticks from 2+ ranks, so "
        f"the timeline cannot name the rank the others wait for. Its "
        f"{_plural(n, 'compared negotiation')} {'is' if n == 1 else 'are'} start-up: "
        f"{' and '.join(kinds)}, {at}.{cache} {lead}",
        f"horovod.stragglers source={src}",
        "To see who the others wait for in the steady state, profile a run with "
        "HOROVOD_CACHE_CAPACITY=0 (every negotiation then carries ticks), or compare the "
        "ranks' step times.",
        value=float(steady_n), threshold=float(min_steady))


def negotiation_stragglers(stragglers: pd.DataFrame, runs: pd.DataFrame | None = None,
                           share: float = th.LAST_SHARE,
                           min_steady: int = th.NEGOTIATION_MIN_STEADY) -> list[Finding]:
    """Per timeline of ``horovod.stragglers`` (``phase_stragglers``), judged on its steady
    state only (a tensor's second negotiation or later): the rank the others waited for
    (last to report ready, :data:`~dptrace.analysis.horovod.WAIT_US` or more after the first
    rank) in at least ``share`` of the ``min_steady`` or more compared steady-state
    negotiations, strictly more often than any other rank. Start-up (the broadcasts of the
    initial state, the first step: with Horovod's response cache on, the only negotiations
    with ticks) is warm-up and names nobody; a timeline whose ticks are only start-up ones
    (or too few steady ones) gets an ``unjudged_negotiations`` info finding instead. One run
    never names two ranks: timelines of one run that name different ranks name none, and
    say so."""
    out: list[Finding] = []
    if stragglers.empty:
        return out
    by = ["run"] if "run" in stragglers.columns else []
    for _, of_run in stragglers.groupby(by or (lambda _: 0), sort=False, observed=True):
        named: list[tuple[str, Any, int]] = []
        for src, g in of_run.groupby(of_run["source"].astype(str), sort=False):
            phase = g["phase"].astype(str)
            steady, startup = g[phase == hv.STEADY], g[phase == hv.STARTUP]
            steady_n = int(steady["compared"].max()) if len(steady) else 0
            if steady_n >= min_steady:
                r = _named_last(steady, share)
                if r is not None:
                    named.append((str(src), r, len(steady)))
            elif len(startup) >= 2:
                out.append(_startup_only(str(src), startup, steady_n, min_steady, runs))
        if len({int(r["rank"]) for _, r, _ in named}) > 1:
            said = ", ".join(f"rank {r['rank']} in {src}" for src, r, _ in named)
            out.append(Finding(
                "info", "unjudged_negotiations", "input", named[0][0],
                f"The timelines of this run name different ranks as the one the others wait "
                f"for in the steady state ({said}), so none is named.",
                "; ".join(f"horovod.stragglers source={src} rank={r['rank']}"
                          for src, r, _ in named),
                "Give each job's timeline a run of its own (LABEL=PATH), or check that the "
                "files come from one job."))
            continue
        for src, r, world in named:
            out.append(Finding(
                "warning", "negotiation_straggler", "rank", f"rank {r['rank']}",
                f"Rank {r['rank']} was the last to report ready, {_time_us(hv.WAIT_US)} or "
                f"more after the first rank, in {int(r['waited']):,} of "
                f"{int(r['compared']):,} steady-state negotiations "
                f"({100 * r['waited_share']:.1f}%) of {src}, from {_time_us(r['steady_from_us'])} "
                "on (a tensor's second negotiation or later; start-up is left out); its ticks "
                f"came {_time_us(r['mean_lag_us'])} after the first rank's on average (max "
                f"{_time_us(r['max_lag_us'])}).",
                f"horovod.stragglers source={src} rank={r['rank']}",
                f"The other ranks wait for rank {r['rank']} before each collective: look at "
                "what it does between steps (data loading, uneven work, a slower node).",
                rank=int(r["rank"]), value=100 * float(r["waited_share"]),
                threshold=100 * share, world_size=world, origin=src))
    return out


# -- PyTorch profiler traces -------------------------------------------------------------------

def collective_stragglers(ranks: pd.DataFrame, share: float = th.COLLECTIVE_GAP_SHARE,
                          ratio: float = th.COLLECTIVE_RATIO) -> list[Finding]:
    """Per job of ``torchtrace.ranks`` (``analysis.torchtrace.rank_comm``: the traces of a run
    with one world size and backend, profiled at overlapping times, one per rank): a rank
    whose communication time is below the median of the other ranks' by at least ``share``
    of the job's span (the longest rank's) and at most ``ratio`` times that median: the
    others waited for it inside the collectives. Traces that cannot be one job's (several
    jobs' ranks in one directory) are not compared."""
    out: list[Finding] = []
    ranks = ranks[ranks["job"].notna() & ranks["communication_us"].notna()]
    if ranks.empty:
        return out
    by = ["run", "job"] if "run" in ranks.columns else ["job"]
    for key, g in ranks.groupby(by, sort=False, observed=True):
        run = str(key[0]) if "run" in ranks.columns else ""
        if len(g) < 2:
            continue
        span = float(g["span_us"].max())
        comm_us = g["communication_us"].to_numpy(dtype="float64")
        for p, r in enumerate(g.itertuples(index=False)):
            med = float(np.median(np.delete(comm_us, p)))
            mine = float(comm_us[p])
            gap = med - mine
            if not span > 0 or gap < share * span or mine > ratio * med:
                continue
            where = "collective kernels" if r.basis == "gpu" else "gloo:* collectives"
            of = f" of run {run}" if run else ""
            out.append(Finding(
                "warning", "collective_straggler", "rank", f"rank {r.rank}",
                f"Rank {r.rank} spent {_time_us(gap)} less in collectives than the median of "
                f"the other {len(g) - 1} profiled rank(s){of} ({_time_us(mine)} vs "
                f"{_time_us(med)} in {int(r.collectives):,} {where}; the gap is "
                f"{100 * gap / span:.1f}% of the {_time_us(span)} profiled): the others "
                "waited for it inside the collectives.",
                f"torchtrace.ranks run={run} rank={r.rank}",
                f"Look at what rank {r.rank} does before each collective (data loading, "
                "uneven work, a slower node or GPU); compare its ProfilerStep#N CPU time with "
                "the others'.",
                rank=int(r.rank), value=100 * gap / span, threshold=100 * share,
                run=run or None, world_size=int(r.world_size) if not _na(r.world_size)
                else len(g), origin=f"run {run}"))
    return out


# -- SambaNova tiles ----------------------------------------------------------------------------

def idle_tiles(idle: pd.DataFrame) -> list[Finding]:
    """Per source: tiles idle (>= 99.9 %idle, no PID) in every snapshot (``tiles.idle_tiles``)."""
    out: list[Finding] = []
    if idle.empty:
        return out
    always = idle[idle["always_idle"].astype(bool)]
    for src, g in always.groupby(always["source"].astype(str), sort=False):
        snaps = int(g["snapshots"].iloc[0])
        out.append(Finding(
            "warning", "idle_tiles", "tile", src,
            f"{len(g)} tile(s) of {src} were idle in every snapshot ({_plural(snaps, 'snapshot')}"
            f"): no process owned them and they were at least {th.IDLE_PCT:g}% idle.",
            f"tiles.idle_tiles source={src} always_idle=True",
            "Check that the job asked for every RDU it was given (more data-parallel "
            "instances), or release them for other work.",
            value=float(len(g))))
    return out


def lowest_exec_instance(instances: pd.DataFrame) -> list[Finding]:
    """Per source with 2+ instances (PIDs): the one with the lowest mean %exec
    (``tiles.instances.lowest``), against the instances' median."""
    out: list[Finding] = []
    if instances.empty:
        return out
    for src, g in instances.groupby(instances["source"].astype(str), sort=False):
        if len(g) < 2:
            continue
        lowest = g[g["lowest"].astype(bool)]
        if lowest.empty:        # no %exec at all (every mean missing): nothing is lowest
            continue
        low, med = lowest.iloc[0], g["exec_mean_pct"].median()
        out.append(Finding(
            "info", "lowest_exec_instance", "instance", f"PID {low['pid']}",
            f"PID {low['pid']} has the lowest mean %exec of the {len(g)} instances in {src}: "
            f"{low['exec_mean_pct']:.1f}% (instances' median {med:.1f}%).",
            f"tiles.instances source={src} pid={low['pid']} lowest=True",
            value=float(low["exec_mean_pct"])))
    return out


def low_exec(instances: pd.DataFrame, pct: float = th.LOW_EXEC_PCT) -> list[Finding]:
    """SambaNova instances (``tiles.instances``) whose tiles executed less than ``pct`` % of
    the time on average: the instance is not training most of the time."""
    out = []
    for r in instances.itertuples(index=False):
        e = r.exec_mean_pct
        if _na(e) or not e < pct:
            continue
        busy = _busy(r)
        out.append(Finding(
            "warning", "low_exec", "instance", f"PID {r.pid}",
            f"PID {r.pid} in {r.source} executed only {e:.1f}% of the time on average over "
            f"its {_plural(_count(r.tiles), 'tile')} and {_plural(_count(r.snapshots), 'snapshot')}"
            f"{busy}.",
            f"tiles.instances source={r.source} pid={r.pid}",
            "A SambaNova instance that is not executing is loading, checkpointing or waiting "
            "for input: look at the host side (data loading, the other instances it "
            "synchronises with) and at the snapshots' timing (program load at start-up).",
            value=float(e), threshold=float(pct)))
    return out


def load_overhead(instances: pd.DataFrame, pct: float = th.LOAD_PCT) -> list[Finding]:
    """SambaNova instances whose tiles spent more than ``pct`` % of the time loading the
    program (``%pload``) or arguments (``%aload``) or checkpointing (``%chkpt``)."""
    out = []
    for r in instances.itertuples(index=False):
        known = _load_parts(r)
        total = sum(v for _, v in known)
        if not known or not total > pct:
            continue
        detail = ", ".join(f"{n} {v:.1f}%" for n, v in known)
        out.append(Finding(
            "warning", "load_overhead", "instance", f"PID {r.pid}",
            f"PID {r.pid} in {r.source} spent {total:.1f}% of its tiles' time loading or "
            f"checkpointing ({detail}).",
            f"tiles.instances source={r.source} pid={r.pid}",
            "Program load belongs to start-up: a long capture of a training run should "
            "show it once; frequent checkpoints or argument loads cost steps (SambaFlow "
            "checkpoint interval, arguments kept on the device).",
            value=total, threshold=float(pct)))
    return out


#: the columns of ``tiles.instances`` that hold time not spent executing, as messages name them
_LOAD_COLUMNS = (("program load", "pload_mean_pct"), ("argument load", "aload_mean_pct"),
                 ("checkpoint", "chkpt_mean_pct"))


def _load_parts(r: Any) -> list[tuple[str, float]]:
    """(name, mean %) of an instance's load and checkpoint columns that are known."""
    values = [(n, getattr(r, c, np.nan)) for n, c in _LOAD_COLUMNS]
    return [(n, float(v)) for n, v in values if not _na(v)]


def _busy(r: Any) -> str:
    """' (program load 11.2%, argument load 1.8%)' for the non-zero load/checkpoint means."""
    shown = [f"{n} {v:.1f}%" for n, v in _load_parts(r) if v > 0]
    return f" ({', '.join(shown)})" if shown else ""


# -- one rank named by several sources ------------------------------------------------------------

#: the rules that name a slow rank, each from its own source (what the message calls it)
STRAGGLER_SOURCES: dict[str, str] = {
    "compute_straggler": "the MPI profiles",
    "negotiation_straggler": "the Horovod timeline",
    "throughput_straggler": "the throughput lines",
}


def _lockstep(instances: pd.DataFrame | None, ranks: pd.DataFrame | None,
              straggler: float) -> tuple[str, str, int] | None:
    """(sentence, evidence, ranks) when the log has a per-rank throughput series (2+ printers
    that are ranks, per-step lines preferred) in which no rank is a straggler: in synchronous
    data parallelism every rank runs at the slowest one's pace, so those lines cannot show
    it."""
    if instances is None or instances.empty:
        return None
    of_rank = _instance_ranks(ranks)
    inst = instances[(instances["scope"].astype(object) != "global")
                     & instances["instance"].notna()]
    best: tuple[int, int, Any, pd.DataFrame] | None = None
    logs: set[str] = set()
    for i, (key, g) in enumerate(inst.groupby(thr.SERIES, sort=False, dropna=False,
                                              observed=True)):
        k = dict(zip(thr.SERIES, key, strict=True))
        named = [of_rank.get((str(k["source"]), str(x))) for x in g["instance"]]
        if len(g) < 2 or any(r is None for r in named) or g["value"].isna().all():
            continue
        logs.add(str(k["source"]))
        if best is None or int(g["rows"].sum()) > best[0]:
            best = (int(g["rows"].sum()), i, k, g)
    if best is None or len(logs) > 1:
        return None                 # none, or several logs: which one is the job's?
    _, _, k, g = best
    below = g["below_median_pct"].astype("float64")
    if (below > 100.0 * straggler).any():
        return None                 # the lines do single one out: not lockstep-equal
    spread = float(below.abs().max())
    return (f"The per-rank throughput lines cannot show it: the {len(g)} ranks' '{k['name']}' "
            f"are within {spread:.2g}% of their median, as every rank of synchronous data "
            "parallelism runs at the slowest one's pace.",
            f"throughput.instances source={k['source']} name={k['name']}", len(g))


_JOB_OF = re.compile(r"communication\.ranks job=(.*?) rank=")


def cross_source_stragglers(found: list[Finding], instances: pd.DataFrame | None = None,
                            ranks: pd.DataFrame | None = None, sources: int = th.CROSS_SOURCES,
                            straggler: float = th.STRAGGLER_FRACTION) -> list[Finding]:
    """The findings of one run, with every rank that ``sources`` or more different straggler
    rules name (:data:`STRAGGLER_SOURCES`: MPI profiles, Horovod timeline, throughput lines),
    from sources that saw the same number of ranks (a directory of unrelated jobs is one run
    too: a 32-rank mpitrace job and a 4-rank timeline are not one job) and that each come
    from one job or file of the run (with two mpitrace jobs, which one is the timeline's?),
    merged into one ``cross_source_straggler`` finding of severity critical that carries all
    their messages and evidence. A compute or negotiation straggler whose run also has
    per-rank throughput lines that are all equal says that those lines cannot show it when
    those lines come from one log with as many ranks as its
    job has, and the run has one such log and one mpitrace job with a straggler; a symptom in
    the straggler's job (``small_message_allreduce``) points to it."""
    lock = _lockstep(instances, ranks, straggler)
    origins: dict[str, set[str | None]] = {}
    for f in found:
        if f.kind in STRAGGLER_SOURCES:
            origins.setdefault(f.kind, set()).add(f.origin)
    # a kind whose findings come from two jobs or files of the run cannot be paired
    single = {k for k, o in origins.items() if len(o) == 1 and None not in o}
    if len(origins.get("compute_straggler", set())) > 1:
        lock = None
    by_rank: dict[int, list[Finding]] = {}
    for f in found:
        if f.kind in single and f.rank is not None:
            by_rank.setdefault(int(f.rank), []).append(f)
    merged: dict[int, Finding] = {}
    by_rank_merged: set[int] = set()
    for r, fs in by_rank.items():
        kinds = list(dict.fromkeys(f.kind for f in fs))
        worlds = {f.world_size for f in fs}
        if len(kinds) < sources or len(worlds) != 1 or None in worlds:
            continue                # fewer sources, or sources of jobs of different sizes
        by_rank_merged.add(r)
        named = [STRAGGLER_SOURCES[k] for k in kinds]
        said = " ".join(f.message for f in fs)
        ev = "; ".join(f.evidence for f in fs)
        if lock and "throughput_straggler" not in kinds and lock[2] in worlds:
            said, ev = f"{said} {lock[0]}", f"{ev}; {lock[1]}"
        lead = next((f for f in fs if f.kind == "compute_straggler"), fs[0])
        merged[r] = Finding(
            "critical", "cross_source_straggler", "rank", f"rank {r}",
            f"Rank {r} is the straggler by {len(kinds)} sources, "
            f"{', '.join(named[:-1])} and {named[-1]}. {said}",
            ev, lead.hint, rank=r, value=float(len(kinds)), threshold=float(sources))
    out: list[Finding] = []
    slow_in: dict[str, list[int]] = {}      # job -> its compute stragglers
    for f in found:
        if f.kind == "compute_straggler" and (job_of := _JOB_OF.match(f.evidence)):
            slow_in.setdefault(job_of.group(1), []).append(int(f.rank or 0))
    for f in found:
        if f.kind in STRAGGLER_SOURCES and f.rank is not None and int(f.rank) in merged:
            out.append(merged.pop(int(f.rank)))   # in the first named finding's place
            continue
        if f.rank is not None and f.kind in STRAGGLER_SOURCES and int(f.rank) in by_rank_merged:
            continue                        # already merged
        if f.kind in ("compute_straggler", "negotiation_straggler") and lock \
                and lock[2] == f.world_size:
            # the evidence stays the one row the finding rests on (the report links it)
            f = replace(f, message=f"{f.message} {lock[0]}")
        out.append(f)
    for i, f in enumerate(out):
        job = f.subject[len("job "):] if f.subject.startswith("job ") else None
        if f.kind == "small_message_allreduce" and job in slow_in:   # the others point too
            who = ", ".join(str(r) for r in slow_in[job])
            out[i] = replace(f, message=f"{f.message} Part of it is the other ranks waiting for "
                             f"rank {who}, a compute straggler (see that finding).")
    return out


# -- the rule list and the tables it reads ------------------------------------------------------

@dataclass(frozen=True)
class Rule:
    """A rule: the kinds it produces, the tables it reads (by name in :func:`tables`), and
    the function."""

    kinds: tuple[str, ...]
    needs: tuple[str, ...]
    fn: Callable[..., list[Finding]]


RULES: tuple[Rule, ...] = (
    Rule(("files_disagree",), ("communication.ranks",), files_disagree),
    Rule(("role_claimed_twice",), ("mpi_ranks",), role_claimed_twice),
    Rule(("ranks_missing",), ("communication.ranks",), ranks_missing),
    Rule(("small_message_allreduce",), ("communication.small_messages",),
         small_message_allreduce),
    Rule(("compute_straggler",), ("communication.ranks", "mpi_routines", "mpi_messages"),
         compute_stragglers),
    Rule(("waiting_rank",), ("communication.ranks", "mpi_routines", "mpi_messages"),
         waiting_ranks),
    Rule(("throughput_straggler",), ("throughput.instances", "throughput.ranks"),
         throughput_stragglers),
    Rule(("job_copies_disagree",), ("throughput.job",), job_copies_disagree),
    Rule(("job_check_failed",), ("throughput.job",), job_check_failed),
    Rule(("unknown_world_size",), ("throughput.job",), unknown_world_size),
    Rule(("throughput_drift",), ("throughput.drift",), throughput_drift),
    Rule(("comm_share_high",), ("communication.jobs", "communication.routines"),
         comm_share_high),
    Rule(("low_busbw",), ("communication.message_sizes",), low_busbw),
    Rule(("below_system_busbw",), ("nccltests.job_vs_system",), below_system_busbw),
    Rule(("long_warmup",), ("throughput.warmup",), long_warmup),
    Rule(("truncated_input",), ("throughput.end_summaries",), truncated_log),
    Rule(("truncated_input",), ("horovod.runs",), truncated_input),
    Rule(("open_intervals",), ("horovod.runs",), open_intervals),
    Rule(("unmatched_ends",), ("horovod.runs",), unmatched_ends),
    Rule(("cached_negotiations",), ("horovod.runs",), cached_negotiations),
    Rule(("negotiation_straggler", "unjudged_negotiations"), ("horovod.stragglers",
                                                               "horovod.runs"),
         negotiation_stragglers),
    Rule(("small_message_allreduce",), ("horovod.small_allreduces",), small_horovod_allreduce),
    Rule(("collective_straggler",), ("torchtrace.ranks",), collective_stragglers),
    Rule(("idle_tiles",), ("tiles.idle_tiles",), idle_tiles),
    Rule(("lowest_exec_instance",), ("tiles.instances",), lowest_exec_instance),
    Rule(("low_exec",), ("tiles.instances",), low_exec),
    Rule(("load_overhead",), ("tiles.instances",), load_overhead),
    Rule(("nccl_socket_fallback",), ("nccl.overview",), nccl.nccl_socket_fallback),
    Rule(("nccl_mixed_networks",), ("nccl.overview",), nccl.nccl_mixed_networks),
    Rule(("nccl_no_gdrdma",), ("nccl.overview",), nccl.nccl_no_gdrdma),
    Rule(("nccl_timeout", "nccl_error"), ("nccl.overview",), nccl.nccl_errors),
)

#: every kind a rule can produce
KINDS: tuple[str, ...] = tuple(dict.fromkeys(
    (*(k for r in RULES for k in r.kinds), "cross_source_straggler")))


def tables(ds: Dataset, names: set[str], **opts: Any) -> dict[str, pd.DataFrame]:
    """The analysis tables the rules read, built as their report sections build them; a table
    whose inputs ``ds`` lacks is left out (its rules do not run)."""
    out: dict[str, pd.DataFrame] = {}
    ranks = ds["mpi_ranks"]
    if names & {"communication.ranks"} and not ranks.empty:
        out["communication.ranks"] = comm.rank_times(ranks)
    if "mpi_ranks" in names and not ranks.empty:
        out["mpi_ranks"] = ranks
    for name in ("mpi_routines", "mpi_messages"):   # the rank profiles (may be empty)
        if name in names and not ranks.empty:
            out[name] = ds[name]
    if "communication.small_messages" in names and not ds["mpi_routines"].empty:
        out["communication.small_messages"] = comm.small_messages(ds["mpi_messages"],
                                                                  ds["mpi_routines"])
    if names & {"communication.jobs", "communication.routines"} and not ranks.empty:
        rt = out.get("communication.ranks")
        rt = comm.rank_times(ranks) if rt is None else rt
        out["communication.jobs"] = comm.job_summary(rt, ds["mpi_jobs"])
        out["communication.routines"] = comm.top_routines(ds["mpi_routines"], n=None)
    if "communication.message_sizes" in names and not ds["mpi_messages"].empty:
        out["communication.message_sizes"] = comm.message_sizes(ds["mpi_messages"])
    if "nccltests.job_vs_system" in names and not ds["nccl_tests"].empty:
        out["nccltests.job_vs_system"] = nt.job_vs_system(
            nt.job_bins(ds["mpi_messages"], ds["torch_events"], ds["torch_traces"]),
            ds["nccl_tests"], ds["nccl_tests_summary"])
    tp = ds["throughput"]
    if "throughput.warmup" in names and not tp.empty:
        out["throughput.warmup"] = thr.warmup_length(
            tp, th.WARMUP_REACH, float(opts.get("warmup", th.WARMUP_FRACTION)))
    if "throughput.end_summaries" in names and not (tp.empty and ds["train_metrics"].empty):
        out["throughput.end_summaries"] = jobfig.end_summaries(tp, ds["train_metrics"])
    if "throughput.drift" in names and not tp.empty:
        out["throughput.drift"] = thr.drift(tp, float(opts.get("warmup", th.WARMUP_FRACTION)))
    if "throughput.instances" in names and not tp.empty:
        fraction = float(opts.get("warmup", th.WARMUP_FRACTION))
        out["throughput.instances"] = thr.per_instance(tp, fraction)
    if "throughput.ranks" in names and not tp.empty:
        out["throughput.ranks"] = tp[["source", "instance", "rank"]]
    mllog = ds["mllog"] if "mllog" in ds.tables else None
    if "throughput.job" in names and not (tp.empty and mllog is None):
        fraction = float(opts.get("warmup", th.WARMUP_FRACTION))
        out["throughput.job"] = jobfig.job_figures(
            tp, ds.runs, fraction, jobfig.printed_ranges(ds["train_metrics"]),
            ds["train_metrics"], mllog)
    if "horovod.runs" in names and not ds["hvd_runs"].empty:
        out["horovod.runs"] = ds["hvd_runs"]
    if "horovod.small_allreduces" in names and not ds["hvd_runs"].empty:
        out["horovod.small_allreduces"] = hv.small_allreduces(
            hv.fusion_groups(ds["hvd_tensors"]))
    if "horovod.stragglers" in names and not ds["hvd_runs"].empty:
        out["horovod.stragglers"] = hv.phase_stragglers(ds["hvd_ready"], ds["hvd_activities"])
    if "nccl.overview" in names and not (ds["nccl_setup"].empty and ds["nccl_events"].empty):
        out["nccl.overview"] = nccl_analysis.overview(ds["nccl_setup"], ds["nccl_events"],
                                                      ds.runs)
    if "torchtrace.ranks" in names and not ds["torch_events"].empty:
        out["torchtrace.ranks"] = tt.rank_comm(ds["torch_events"], ds["torch_traces"])
    tiles = ds["tiles"]
    if "tiles.idle_tiles" in names and not tiles.empty:
        out["tiles.idle_tiles"] = tl.idle_tiles(tiles)
    if "tiles.instances" in names and not tiles.empty:
        out["tiles.instances"] = tl.instances(tiles)
    return out


def run_rules(ds: Dataset, thresholds: Mapping[str, float] | None = None,
              **opts: Any) -> list[Finding]:
    """Every rule whose tables ``ds`` has, in :data:`RULES` order. ``thresholds``: overrides
    by kind, in the unit of the findings' ``threshold`` column (checked by
    :func:`.thresholds.parse_overrides`; see :data:`.thresholds.OVERRIDABLE`)."""
    given = th.parse_overrides(thresholds or {})
    have = tables(ds, {n for r in RULES for n in r.needs}, **opts)
    out: list[Finding] = []
    for rule in RULES:
        if all(n in have for n in rule.needs):
            kwargs = {th.OVERRIDABLE[k].param: th.OVERRIDABLE[k].argument(v)
                      for k, v in given.items() if k in rule.kinds}
            out.extend(rule.fn(*(have[n] for n in rule.needs), **kwargs))
    # then the rule over findings: one rank named by several sources
    return cross_source_stragglers(out, have.get("throughput.instances"),
                                   have.get("throughput.ranks"))

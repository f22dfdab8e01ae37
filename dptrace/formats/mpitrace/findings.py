"""The findings rules of MPI profiles (mpitrace, and mpiP in the same tables): pure functions from
the derived tables of :mod:`.analyses` to :class:`~dptrace.findings.Finding` rows, registered
with their thresholds (:mod:`dptrace.findings.thresholds` holds the mechanism)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from ...findings import Finding, ev
from ...findings import text as tx
from ...findings import thresholds as th
from ...findings.rules import Rule, register_rules
from ...findings.thresholds import Threshold, register_thresholds
from . import communication as comm

# -- thresholds --------------------------------------------------------------------------------

#: mpitrace: a rank's own file and rank 0's table disagree beyond this (``rank_times``)
TABLE_TOLERANCE_S: float = comm.TABLE_TOLERANCE_S

# -- compute straggler (mpitrace): decided from real runs, not taken from an analysis module ---
#
# A rank is a compute straggler when its time in MPI is below the median of the other ranks'
# by a gap that is (1) large against the run: at least COMPUTE_GAP_SHARE of the job's elapsed
# time, and (2) an outlier against the others' spread: at least COMPUTE_GAP_MADS median
# absolute deviations of the others' MPI times (the deviation floored at COMPUTE_MAD_FLOOR_S,
# mpitrace's resolution), in a job of at least COMPUTE_MIN_RANKS ranks with an MPI time.
# Measured gaps (gap / elapsed; gap / MAD of the others), tests/fixtures/straggler/
# noise_runs.tsv:
# - 14 balanced 4-rank runs of tests/fixtures/straggler/dp_steps.c on a loaded 2-core VM (4
#   kept as fixtures, 10 more measured): gap at most 0.016 s, 0.2-1.2% of elapsed (0.4-3.2
#   MADs: with 4 ranks the spread alone does not tell noise from a straggler; the share does);
# - the same with one rank 3 ms slower per 40 ms step (22 steps): 3.0-5.0% and 5.2-13 MADs;
#   with 15 ms (delayed_r2): 0.33 s, 16.8%, 8.3 MADs;
# - real jobs without a lone slow rank: ThetaGPU cpu8 176429 (a continuous spread: 1.4%, 2.1
#   MADs), ThetaGPU gpu8 2475362 (a continuous spread of 3.6-8.4 s: 10.8% but 3.0 MADs), the
#   Polaris/ThetaGPU NCCL jobs (MPI at start-up only: gaps of 0.00-0.02 s, 0.0%);
# - real jobs with one (or two) ranks well below all others: Theta knl32 19013 rank 0 (7.0%,
#   11.5 MADs, the others' extra time in 8-byte Allreduces), Theta knl16 75877 rank 0 (10.6%,
#   16 MADs), ThetaGPU gpu8 163698 ranks 4 and 0 (35% and 32%, 6.1 and 5.6 MADs), the 16-rank
#   job of alcfws_MPI_README_from_docs.md ranks 0 and 2 (8.0% and 7.7%, 7.3 and 7.0 MADs).
#: compute straggler: the gap must be at least this share of the job's elapsed time
COMPUTE_GAP_SHARE: float = 0.02

#: compute straggler: ... and at least this many median absolute deviations of the others
COMPUTE_GAP_MADS: float = 4.0

#: compute straggler: the others' median absolute deviation is at least this (s): mpitrace
#: prints 0.001 s, rank 0's table 0.01 s (so a rounded time is within 0.005 s)
COMPUTE_MAD_FLOOR_S: float = 0.005

#: compute straggler: ranks with an MPI time a job needs (a median and a spread of the others)
COMPUTE_MIN_RANKS: int = 3

#: compute straggler: where rank profiles show it, at least this share of the others' extra
#: MPI time (over the straggler's, routine by routine) must be in collectives
COLLECTIVE_SHARE: float = 0.5

#: waiting rank (the other side: one rank with far MORE MPI time than the others, which
#: hardly wait: it waits for them) uses the compute straggler's gap thresholds, and the
#: others' median MPI time must be at most this fraction of the rank's. Real jobs where the
#: rank with the most MPI time is only the top of a spread, and must not fire: ThetaGPU gpu8
#: 2475362 rank 7 (8.35 s vs a median of 5.46 s, 0.65), tests/fixtures/straggler/delayed_r2
#: rank 1 (1.07 s vs 0.896 s, 0.84: the others wait for rank 2 too); one idle rank:
#: tests/fixtures/mpip/idle_r5 (mpiP, rank 5 with no compute: 4.71 s, 98.4% of its time, vs
#: a median of 0.648 s, 13.6%: 0.14; issue 29's report: 75.65% vs 0.4-1.6%, about 0.015)
WAITING_RATIO: float = 0.5

#: mpitrace: ranks spending more than this share of their elapsed time in MPI, on average over
#: the job's ranks (``communication.jobs.comm_share_mean``). Real jobs: Horovod on MPI with
#: CPU training 17% (ThetaGPU CPU, 8 ranks) to 81-87% (Theta KNL); NCCL jobs under 1%
COMM_SHARE: float = 0.25

# -- low bus bandwidth (mpitrace): a job-internal reference, the hardware peak is unknown -----
#
# Per bin of ``communication.message_sizes`` (collectives only, bins with >= 10 ms), busbw is
# nccl-tests' bus bandwidth: algbw = bytes / time (the collective's buffer: mpitrace's bytes x
# n for Allgather(v) and Alltoall(v)), busbw = algbw x 2(n-1)/n for Allreduce, (n-1)/n for
# Allgather, ReduceScatter and Alltoall, 1 for Bcast and Reduce: the figure comparable across
# collectives and sizes. mpitrace's times include waiting for late ranks, so every busbw is a
# lower bound and the job's best bin is the closest to what its network reached. A bin is
# large when all its messages are more than th.LARGE_BYTES (bandwidth-bound, not latency-bound),
# and it counts when it holds at least BUSBW_MIN_SHARE of the job's time in the table (a few
# start-up broadcasts of the weights, which also hold the ranks' start-up skew, are no
# finding). Measured ratios (a large bin's busbw / the job's best bin's, bins that count):
# - real jobs (shared/realdata/mpitrace): Theta KNL 32 ranks 19013 (and the 2021 README's copy)
#   MPI_Allreduce 2-4 MiB 0.83, 16-32 MiB 1.00, 32-64 MiB 0.94; Theta KNL 16 ranks 75877
#   0.66, 1.00, 0.92; ThetaGPU CPU 8 ranks 176429 0.87, 1.00, 0.98; the 16-rank job of
#   alcfws_MPI_README_from_docs.md: Allreduce 4-8 MiB 0.57 of a 3-call 4-8 MiB Bcast. The
#   start-up Bcasts left out by the share: 0.28-0.94. The ThetaGPU guide's profile
#   (tests/fixtures/mpitrace/seed_001_thetagpu_guide_from_docs.txt, 8 ranks): 50 Allreduces
#   of 4-8 MiB at 0.034 GB/s, 0.048 of its 16-32 MiB bin's 0.716 GB/s, and 32-64 MiB at 0.29;
# - this project's runs of tests/fixtures/busbw/allreduce_sizes.c on a shared 2-core VM
#   (shared memory, no network): with no delay (2 and 4 ranks, 4 runs,
#   tests/fixtures/busbw/noise_runs.tsv), 0.16-0.95 from run to run (memory bandwidth under
#   other jobs' load: single-node runs on a loaded VM are no reference for a network); with
#   rank 3 arriving 20 ms late at each allreduce of more than 1 MiB (the kept fixture
#   tests/fixtures/busbw/late_rank_r3): 4 MiB 0.17, 16 MiB 0.36.
# Half the best bin sits below the large bins of every real job but the guide's (0.57 and up)
# and above the guide's and the late-rank run's.
#: low_busbw: a large bin below this fraction of the job's best bin's busbw
BUSBW_FRACTION: float = 0.5

#: low_busbw: a large bin counts when it holds at least this share of the job's time in the
#: message-size table
BUSBW_MIN_SHARE: float = 0.01


register_thresholds(
    Threshold("comm_share_high", "share", 100.0 * COMM_SHARE, "%",
              "mean share of the ranks' elapsed time spent in MPI", scale=0.01),
    Threshold("low_busbw", "fraction", 100.0 * BUSBW_FRACTION, "%",
              f"a bin of collectives of more than {th.LARGE_BYTES:,} bytes reaching less than "
              "this share of the bus bandwidth of the job's best bin", scale=0.01),
    Threshold("compute_straggler", "share", 100.0 * COMPUTE_GAP_SHARE, "%",
              "a rank this share of the job's elapsed time below the other ranks' median MPI "
              f"time (and >= {COMPUTE_GAP_MADS:g} median absolute deviations of theirs)",
              scale=0.01),
)



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
            f"In job {job}, {tx.plural(len(bad), 'rank')} ({tx.rank_list(bad)}) have "
            f"an own profile "
            f"that differs from rank 0's table by more than {TABLE_TOLERANCE_S:g} s, e.g. "
            f"rank {ex['rank']} elapsed {ex['own_elapsed_s']:.2f} s vs {ex['elapsed_s']:.2f} s "
            "in the table.",
            ev("communication.ranks", job=job, mismatch=True),
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
                    ev("mpi_ranks", job=job, origin='own', comm_role=role),
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
                ev("communication.ranks", job=job, origin='rank0_table'),
                "Check that rank 0's profile is complete (not cut) and from the same run.",
                value=float(listed), threshold=float(nr)))
    return out


def small_message_allreduce(small: pd.DataFrame, share: float = th.SMALL_SHARE,
                            limit_bytes: int = th.SMALL_BYTES) -> list[Finding]:
    """Per job: more than ``share`` of the MPI time in Allreduces of at most ``limit_bytes``
    (``communication.small_messages``, built with the same ``limit_bytes``), when those
    took at least :data:`.th.SMALL_MIN_S_PER_RANK` per rank."""
    out = []
    for r in small.itertuples(index=False):
        s = r.small_share
        if tx.na(s) or not s > share:
            continue
        ranks = tx.count(r.ranks) or 1
        if tx.na(r.small_time_s) or r.small_time_s / ranks < th.SMALL_MIN_S_PER_RANK:
            continue   # a share of next to nothing (a one-rank run's local copies)
        out.append(Finding(
            "warning", "small_message_allreduce", "job", f"job {r.job}",
            f"{100 * s:.1f}% of job {r.job}'s MPI time ({r.small_time_s:.2f} s of "
            f"{r.mpi_time_s:.2f} s) is in Allreduces of at most {limit_bytes} bytes "
            f"({tx.integer(r.small_calls)} calls).",
            ev("communication.small_messages", job=r.job),
            "With Horovod these are its tensor negotiation, not gradients; with NCCL the "
            "gradient traffic is not in MPI at all.",
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
                       share: float = COMPUTE_GAP_SHARE, mads: float = COMPUTE_GAP_MADS,
                       floor_s: float = COMPUTE_MAD_FLOOR_S,
                       min_ranks: int = COMPUTE_MIN_RANKS,
                       collective_share: float = COLLECTIVE_SHARE) -> list[Finding]:
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
                  share: float = COMPUTE_GAP_SHARE, mads: float = COMPUTE_GAP_MADS,
                  floor_s: float = COMPUTE_MAD_FLOOR_S,
                  min_ranks: int = COMPUTE_MIN_RANKS,
                  ratio: float = WAITING_RATIO) -> list[Finding]:
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
            where = (f", most in {w.routine}{tx.bytes_range(w.bin_lo, w.bin_hi)} ("
                     f"{tx.num(w.routine_s)} s more than the median of "
                     f"{tx.plural(w.profiled, 'other profile')} there)")
        of = 100 * o.med / o.elapsed
        out.append(Finding(
            "warning", "waiting_rank", "rank", f"rank {o.rank}",
            f"Rank {o.rank} spent {tx.num(o.gap)} s more in MPI than the median of the other "
            f"{o.ranks - 1} ranks of job {o.job} ({tx.num(o.mine)} s vs {tx.num(o.med)} s: "
            f"{100 * o.mine / o.elapsed:.1f}% of the {tx.num(o.elapsed)} s run against "
            f"{of:.1f}%, {o.gap / o.mad:.1f} times their spread){where}: it waited for them. "
            f"They spent far less time in MPI, so rank {o.rank} has far less to compute than "
            "they do: the job runs at their pace while it idles.",
            ev("communication.ranks", job=o.job, rank=o.rank),
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
    evidence = ev("communication.ranks", job=job, rank=r)
    if w is not None and w.routine is not None:
        where = (f", most in {w.routine}{tx.bytes_range(w.bin_lo, w.bin_hi)} ("
                 f"{tx.num(w.routine_s)} s more than rank {r} there, median of "
                 f"{tx.plural(w.profiled, 'other profile')})")
        at = f"{w.routine}{tx.bytes_range(w.bin_lo, w.bin_hi)}"
    else:
        where = (" (where needs this rank's profile and another's; mpitrace writes every "
                 "rank's with SAVE_ALL_TASKS=yes)")
        at = "the collectives"
    return Finding(
        "warning", "compute_straggler", "rank", f"rank {r}",
        f"Rank {r} spent {tx.num(gap)} s less in MPI than the median of the other {n - 1} ranks "
        f"of job {job} ({tx.num(mine)} s vs {tx.num(med)} s, {100 * gap / elapsed:.1f}% of the "
        f"{tx.num(elapsed)} s run, {gap / mad:.1f} times their spread): they waited for it"
        f"{where}.",
        evidence,
        f"Look at compute or data loading on rank {r} (the others wait for it in {at}): its "
        "node, its input shard and loader workers, or work only it does (logging, evaluation, "
        "checkpoints).",
        rank=r, value=100 * gap / elapsed, threshold=100 * share, world_size=world,
        origin=f"job {job}")


def comm_share_high(jobs: pd.DataFrame, routines: pd.DataFrame,
                    share: float = COMM_SHARE) -> list[Finding]:
    """Per mpitrace job: its ranks spent more than ``share`` of their elapsed time in MPI on
    average (``communication.jobs.comm_share_mean``); names the routine holding the most MPI
    time (``communication.routines``)."""
    out = []
    for r in jobs.itertuples(index=False):
        s = r.comm_share_mean
        if tx.na(s) or not s > share:
            continue
        top = ""
        mine = routines[routines["job"].astype(str) == str(r.job)] if len(routines) else routines
        if len(mine) and mine["time_s"].notna().any():
            t = mine.loc[mine["time_s"].astype("float64").idxmax()]
            top = (f"; {t['routine']} holds {tx.pct1(float(t['time_share']))} of the MPI time"
                   if not tx.na(t["time_share"]) else f"; most of it in {t['routine']}")
        spread = ("" if tx.na(r.comm_share_min) or tx.na(r.comm_share_max) else
                  f", {tx.pct1(float(r.comm_share_min))} to {tx.pct1(float(r.comm_share_max))} "
                  "across ranks")
        out.append(Finding(
            "warning", "comm_share_high", "job", f"job {r.job}",
            f"The ranks of job {r.job} spent {tx.pct1(float(s))} of their elapsed time in MPI on "
            f"average ({r.comm_mean_s:.2f} s of up to {r.elapsed_max_s:.2f} s{spread})"
            f"{top}.",
            ev("communication.jobs", job=r.job),
            "Communication not hidden behind computation: fuse more and overlap (Horovod "
            "HOROVOD_FUSION_THRESHOLD / HOROVOD_CYCLE_TIME, DDP bucket_cap_mb), check the "
            "message-size table for slow bins; time the others spent waiting for a slow "
            "rank counts here too (see any straggler finding).",
            value=100.0 * float(s), threshold=100.0 * share))
    return out


def low_busbw(bins: pd.DataFrame, fraction: float = BUSBW_FRACTION,
              large_bytes: int = th.LARGE_BYTES,
              min_share: float = BUSBW_MIN_SHARE) -> list[Finding]:
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
            f"; {tx.plural(len(slow) - 1, 'more large bin')} below {tx.pct(fraction)} too"
        out.append(Finding(
            "warning", "low_busbw", "job", f"job {job}",
            f"{worst['routine']}{tx.bin_bytes(worst)} in job {job} reached a bus bandwidth of "
            f"{float(worst['busbw_bytes_per_s']) / 1e9:.3g} GB/s "
            f"({tx.integer(worst['calls'])} calls, {tx.num(worst['time_s'])} s), "
            f"{100 * ratio:.1f}% of "
            f"the job's best bin, {best['routine']}{tx.bin_bytes(best)} at "
            f"{float(best['busbw_bytes_per_s']) / 1e9:.3g} GB/s{others}.",
            ev("message_sizes.bins", job=job, routine=worst['routine'], bin=int(worst['bin'])),
            "Large messages should move at least as fast as smaller ones. mpitrace counts the "
            "time ranks wait for a late rank inside a collective, so look first for a "
            "straggler; otherwise for a change of protocol or algorithm at this size (MPI "
            "eager/rendezvous limits, the collective algorithm's switch points), a transport "
            "that fell back (TCP instead of the fabric), or memory bandwidth within a node.",
            value=100.0 * ratio, threshold=100.0 * fraction))
    return out


register_rules(
    Rule(("files_disagree",), ("communication.ranks",), files_disagree, 0),
    Rule(("role_claimed_twice",), ("mpi_ranks",), role_claimed_twice, 10),
    Rule(("ranks_missing",), ("communication.ranks",), ranks_missing, 20),
    Rule(("small_message_allreduce",), ("communication.small_messages",),
         small_message_allreduce, 30),
    Rule(("compute_straggler",), ("communication.ranks", "mpi_routines", "mpi_messages"),
         compute_stragglers, 40),
    Rule(("waiting_rank",), ("communication.ranks", "mpi_routines", "mpi_messages"),
         waiting_ranks, 50),
    Rule(("comm_share_high",), ("communication.jobs", "communication.routines"),
         comm_share_high, 110),
    Rule(("low_busbw",), ("communication.message_sizes",), low_busbw, 120),
)

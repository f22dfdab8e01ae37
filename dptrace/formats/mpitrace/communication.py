"""Communication from mpitrace tables: per-rank share, imbalance, top routines, message sizes.

Pure functions of the ``mpi_*`` tables (see :mod:`dptrace.schema`); each returns a new
DataFrame and names its columns in its docstring. Jobs are never mixed: every result is
per ``job``, and per ``run`` first when the tables have it (:mod:`.keys`; ``run`` is then the
first column of each result), so two runs that share a job id stay apart.

Reading the numbers:
- mpitrace times are wall time inside MPI calls, waiting included. A rank that arrives
  late at a collective makes the others wait, so high communication time often means
  load imbalance elsewhere, not a slow network; the bandwidths below are estimates.
- Routine and message tables exist only for ranks that wrote a profile (by default rank
  0 and the min/median/max ranks); sums are over those ranks, and means are per rank.
- A value the parser could not store (a count beyond int64, a size or time that was nan or
  inf, bytes that overflowed; each has a problem row) is missing, and so is every total
  that includes it: a sum over the values that remain would look complete and be too small.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...analysis.keys import RUN, keys, plain, run_first
from ...analysis.messages import COLLECTIVES, SMALL_BYTES, SMALL_SHARE
from ...analysis.messages import factor as _factor

#: ``mpi_ranks`` origins of a table of every rank: mpitrace's rank 0 table, an mpiP report
TABLE_ORIGINS = ("rank0_table", "mpip_report")
#: rank 0's table rounds to 0.01 s; a larger difference from the rank's own file is a mismatch
TABLE_TOLERANCE_S = 0.006
#: mpitrace prints times in ms; below this a bin's time is too coarse for a bandwidth
MIN_BW_TIME_S = 0.01

def _totals(df: pd.DataFrame, keys: list[str], cols: list[str]) -> pd.DataFrame:
    """Sums of ``cols`` per ``keys`` (in order of first appearance), missing where any
    summed value is missing (one vectorised pass each; no per-group Python)."""
    g = df.groupby(keys, sort=False, observed=True)
    sums = g[cols].sum()
    gaps = df[cols].isna()
    if gaps.to_numpy().any():
        any_gap = gaps.groupby([df[k] for k in keys], sort=False, observed=True).any()
        sums = sums.mask(any_gap.reindex(sums.index).to_numpy(dtype=bool))
    return sums


def _obj(df: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """Copy with categorical key columns (and ``run``) as plain objects (groupby/merge without
    surprises); :func:`.keys.run_first` makes ``run`` categorical again on the way out."""
    out = df.copy()
    for c in [RUN, *cols]:
        if c in out and isinstance(out[c].dtype, pd.CategoricalDtype):
            out[c] = out[c].astype(object)
    return out


def rank_times(ranks: pd.DataFrame) -> pd.DataFrame:
    """One row per (job, rank) from ``mpi_ranks``, merging a rank's own file with rank 0's table.

    An mpiP report's rows (origin ``mpip_report``) are such a table too.
    When both exist and agree (within rank 0's 0.01 s rounding), the own file's 3-decimal
    values are kept, with host, cpu and switches from the table. When they disagree the
    files come from different runs with the same job id: rank 0's table is kept (one run,
    all ranks) and ``mismatch`` is True.

    Columns: job, rank, nranks, host, cpu, comm_time_s, elapsed_s, comm_share
    (comm_time_s / elapsed_s), user_s, system_s, max_rss_mib, switches, comm_role,
    origin (own, rank0_table, mpip_report or own+ the table's), mismatch, own_comm_time_s,
    own_elapsed_s.
    """
    cols = ["nranks", "host", "cpu", "comm_time_s", "elapsed_s", "user_s", "system_s",
            "max_rss_mib", "switches", "comm_role"]
    df = _obj(ranks, ["job", "origin", "comm_role"])
    key = keys(df, "job", "rank")
    own = df[df["origin"] == "own"].drop_duplicates(key)
    tab = df[df["origin"].isin(TABLE_ORIGINS)].drop_duplicates(key)
    tab_origin = tab[key].assign(tab_origin=tab["origin"].astype(object))
    m = tab[key + cols].merge(own[key + cols], on=key, how="outer", suffixes=("_t", "_o"))
    m = m.merge(tab_origin, on=key, how="left")
    has_t, has_o = m["elapsed_s_t"].notna(), m["elapsed_s_o"].notna()
    diff = ((m["elapsed_s_t"] - m["elapsed_s_o"]).abs() > TABLE_TOLERANCE_S) | \
           ((m["comm_time_s_t"] - m["comm_time_s_o"]).abs() > TABLE_TOLERANCE_S)
    use_own = has_o & ~(has_t & diff)
    out = pd.DataFrame({c: m[c] for c in key})
    for c in cols:
        out[c] = m[f"{c}_o"].where(use_own & m[f"{c}_o"].notna(), m[f"{c}_t"])
    out["comm_share"] = out["comm_time_s"] / out["elapsed_s"]
    tab_name = m["tab_origin"].fillna("rank0_table").astype(str)
    out["origin"] = np.where(has_t & has_o, "own+" + tab_name, np.where(has_o, "own",
                                                                        tab_name))
    out["mismatch"] = (has_t & has_o & diff).astype(bool)
    out["own_comm_time_s"], out["own_elapsed_s"] = m["comm_time_s_o"], m["elapsed_s_o"]
    order = [*key, "nranks", "host", "cpu", "comm_time_s", "elapsed_s", "comm_share",
             "user_s", "system_s", "max_rss_mib", "switches", "comm_role", "origin",
             "mismatch", "own_comm_time_s", "own_elapsed_s"]
    out = run_first(out[order], ranks).sort_values(key, kind="stable").reset_index(drop=True)
    for c in ("rank", "nranks", "cpu", "switches"):
        out[c] = out[c].astype("Int64")
    return out


def job_summary(rt: pd.DataFrame, jobs: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per job from :func:`rank_times`: spread of communication time over ranks.

    With ``jobs`` (the ``mpi_jobs`` table), the min/median/max ranks mpitrace itself named
    replace the computed ones when their times agree (within rank 0's table rounding):
    mpitrace breaks ties with unrounded times.

    Columns: job, nranks, ranks_listed, complete (every rank listed), elapsed_max_s,
    comm_mean_s, comm_min_s, min_rank, comm_median_s, median_rank, comm_max_s, max_rank,
    comm_cov (population std / mean), comm_imbalance (max / mean), comm_share_mean (mean of
    comm/elapsed over ranks), comm_share_min, comm_share_max, mismatches.
    The median rank is mpitrace's: sorted by time, the ((n-1)//2)-th.
    """
    k = keys(rt, "job")
    rows = [[*key[:-1], *_job_row(key[-1], g)]
            for key, g in rt.groupby(k, sort=False, observed=True)]
    out = run_first(pd.DataFrame(rows, columns=[*k[:-1], *_JOB_COLS]), rt)
    return out if jobs is None or jobs.empty else _stated_ranks(out, jobs)


def _stated_ranks(out: pd.DataFrame, jobs: pd.DataFrame) -> pd.DataFrame:
    k = [c for c in keys(out, "job") if c in jobs.columns]
    stated = _obj(jobs, ["job"]).drop_duplicates(k).set_index(k)
    at = pd.MultiIndex.from_arrays([plain(out[c]) for c in k]) if len(k) > 1 else \
        pd.Index(plain(out["job"]))
    for key, rank_col in (("min", "min_rank"), ("median", "median_rank"), ("max", "max_rank")):
        said = stated[f"{key}_comm_rank"].reindex(at).set_axis(out.index)
        said_s = stated[f"{key}_comm_s"].reindex(at).set_axis(out.index)
        agree = said.notna() & ((said_s - out[f"comm_{key}_s"]).abs() <= TABLE_TOLERANCE_S)
        out[rank_col] = out[rank_col].where(~agree, said)
    return out


_JOB_COLS = ["job", "nranks", "ranks_listed", "complete", "elapsed_max_s", "comm_mean_s",
             "comm_min_s", "min_rank", "comm_median_s", "median_rank", "comm_max_s", "max_rank",
             "comm_cov", "comm_imbalance", "comm_share_mean", "comm_share_min",
             "comm_share_max", "mismatches"]


def _job_row(job: object, g: pd.DataFrame) -> list[object]:
    g = g[g["comm_time_s"].notna()].sort_values(["comm_time_s", "rank"], kind="stable")
    comm = g["comm_time_s"].astype("float64")
    n = len(g)
    nranks = g["nranks"].max() if n else pd.NA
    mean = comm.mean() if n else np.nan
    pick = (lambda i: (comm.iloc[i], g["rank"].iloc[i])) if n else (lambda i: (np.nan, pd.NA))
    (lo, lo_r), (med, med_r), (hi, hi_r) = pick(0), pick((n - 1) // 2), pick(n - 1)
    share = g["comm_share"].astype("float64")
    return [job, nranks, n, bool(n and nranks is not pd.NA and n == nranks),
            g["elapsed_s"].max(), mean, lo, lo_r, med, med_r, hi, hi_r,
            comm.std(ddof=0) / mean if mean else np.nan, hi / mean if mean else np.nan,
            share.mean(), share.min(), share.max(), int(g["mismatch"].sum())]


def top_routines(routines: pd.DataFrame, by: str = "time_s", n: int | None = 10,
                 ) -> pd.DataFrame:
    """Per job, routines ranked by total ``by`` (time_s, calls or bytes) over the ranks present.

    Columns: job, routine, ranks (rank profiles with the routine; a row of every rank,
    ``rank`` null, counts the job's nranks), calls, calls_per_rank,
    bytes, bytes_per_rank, avg_bytes (bytes / calls), time_s, time_s_per_rank, time_share
    (of the job's MPI time in these profiles), order (1 = top). ``n=None`` keeps all.
    """
    df = _obj(routines, ["job", "routine"])
    job = keys(df, "job")
    key = [*job, "routine"]
    # a row of every rank (an mpiP report without per-rank rows: rank null) counts nranks
    df["_ranks"] = df["nranks"].astype("Float64").where(df["rank"].isna(), 1).fillna(1)
    out = df.groupby(key, sort=False).agg(ranks=("_ranks", "sum")).join(
        _totals(df, key, ["calls", "bytes", "time_s"])).reset_index()
    out["ranks"] = out["ranks"].astype("int64")
    for c in ("calls", "bytes", "time_s"):
        out[f"{c}_per_rank"] = out[c] / out["ranks"]
    out["avg_bytes"] = out["bytes"] / out["calls"].where(out["calls"] > 0)
    out["time_share"] = out["time_s"] / out.groupby(job)["time_s"].transform("sum")
    out = run_first(out, routines)
    out = out.sort_values([*job, by], ascending=[True] * len(job) + [False], kind="stable")
    out["order"] = out.groupby(job, observed=True).cumcount() + 1
    if n is not None:
        out = out[out["order"] <= n]
    cols = [*job, "routine", "ranks", "calls", "calls_per_rank", "bytes", "bytes_per_rank",
            "avg_bytes", "time_s", "time_s_per_rank", "time_share", "order"]
    return out[cols].reset_index(drop=True)


def message_sizes(messages: pd.DataFrame) -> pd.DataFrame:
    """Per job, routine and size bin: calls, bytes and time over the ranks present, with bandwidth.

    Columns: job, routine, nranks, bin, bin_lo_bytes, bin_hi_bytes, ranks (rank profiles
    with this routine's distribution), calls, calls_per_rank (calls / ranks), bytes,
    avg_bytes, time_s, time_s_per_rank, time_share (of the routine's time over all bins),
    calls_share, algbw_bytes_per_s, busbw_bytes_per_s, busbw_factor.

    Bandwidth is an **estimate** in nccl-tests' terms: algbw = size / time, with size the
    collective's buffer (mpitrace's bytes x n for Allgather(v) and Alltoall(v), where it logs
    one rank's block), and busbw = algbw x 2(n-1)/n (Allreduce), (n-1)/n (Allgather,
    ReduceScatter, Alltoall) or 1 (Bcast, Reduce). mpitrace's times include waiting for
    late ranks, so these are lower bounds on what the network achieved. Other routines
    (point-to-point, non-blocking) and bins with less than 10 ms in total (printed to the
    ms) get no bandwidth.
    """
    df = _obj(messages, ["job", "routine"])
    routine = keys(df, "job", "routine")
    key = [*routine, "bin"]
    g = df.groupby(key, sort=False)   # rows without a bin (no size to bin) are left out
    out = g.agg(nranks=("nranks", "max"), bin_lo_bytes=("bin_lo_bytes", "first"),
                bin_hi_bytes=("bin_hi_bytes", "first")).join(
        _totals(df.dropna(subset=["bin"]), key, ["calls", "bytes", "time_s"])).reset_index()
    profiles = df.groupby(routine)["rank"].nunique(dropna=False).rename("ranks")
    out = run_first(out.join(profiles, on=routine), messages)
    out = out.sort_values(key, kind="stable").reset_index(drop=True)
    out["calls_per_rank"] = out["calls"] / out["ranks"]
    out["time_s_per_rank"] = out["time_s"] / out["ranks"]
    out["avg_bytes"] = out["bytes"] / out["calls"].where(out["calls"] > 0)
    per_routine = out.groupby(routine, observed=True)
    out["time_share"] = out["time_s"] / per_routine["time_s"].transform("sum").replace(0, np.nan)
    out["calls_share"] = out["calls"] / per_routine["calls"].transform("sum")
    _bandwidth(out)
    cols = [*routine, "nranks", "bin", "bin_lo_bytes", "bin_hi_bytes", "ranks", "calls",
            "calls_per_rank", "bytes", "avg_bytes", "time_s", "time_s_per_rank", "time_share",
            "calls_share", "algbw_bytes_per_s", "busbw_bytes_per_s", "busbw_factor"]
    return out[cols]


def _bandwidth(out: pd.DataFrame) -> None:
    n = out["nranks"].astype("float64")
    spec = out["routine"].map(COLLECTIVES)
    mult = [_factor(s[0], k) if isinstance(s, tuple) else np.nan for s, k in zip(spec, n,
                                                                                  strict=True)]
    fac = [_factor(s[1], k) if isinstance(s, tuple) else np.nan for s, k in zip(spec, n,
                                                                                 strict=True)]
    time = out["time_s"].astype("float64").where(out["time_s"] >= MIN_BW_TIME_S)
    out["algbw_bytes_per_s"] = out["bytes"].astype("float64") * np.array(mult) / time
    out["busbw_factor"] = np.array(fac, dtype="float64")
    out["busbw_bytes_per_s"] = out["algbw_bytes_per_s"] * out["busbw_factor"]


def small_messages(messages: pd.DataFrame, routines: pd.DataFrame,
                   limit_bytes: int = SMALL_BYTES, share: float = SMALL_SHARE) -> pd.DataFrame:
    """Per job: how much MPI time sits in Allreduces of at most ``limit_bytes`` bytes.

    Columns: job, ranks, mpi_time_s (all routines, ranks with a profile), small_time_s,
    small_calls, small_share (small_time_s / mpi_time_s), dominated (small_share > share).
    With Horovod, such Allreduces are its tensor negotiation, not gradients; with NCCL
    the gradient traffic never shows in MPI at all.
    """
    r = _obj(routines, ["job", "routine"])
    m = _obj(messages, ["job", "routine"])
    small = m[(m["routine"] == "MPI_Allreduce") & (m["bin_hi_bytes"] <= limit_bytes)]
    job = keys(r, "job")
    total = r.groupby(job).agg(ranks=("rank", "nunique"), mpi_time_s=("time_s", "sum"))
    part = small.groupby([c for c in job if c in small.columns]).agg(
        small_time_s=("time_s", "sum"), small_calls=("calls", "sum"))
    out = total.join(part, how="left").reset_index()
    out["small_time_s"] = out["small_time_s"].fillna(0.0)
    out["small_calls"] = out["small_calls"].fillna(0).astype("Int64")
    out["small_share"] = out["small_time_s"] / out["mpi_time_s"].where(out["mpi_time_s"] > 0)
    out["dominated"] = (out["small_share"] > share).fillna(False).astype(bool)
    out = run_first(out[[*job, "ranks", "mpi_time_s", "small_time_s", "small_calls",
                         "small_share", "dominated"]], routines)
    if RUN in out.columns:   # runs in their order (the groupby sorted their names)
        out = out.sort_values(RUN, kind="stable").reset_index(drop=True)
    return out


def checks(ranks: pd.DataFrame, rt: pd.DataFrame | None = None) -> pd.DataFrame:
    """Cross-file consistency per job: things a reader should know before trusting a number.

    ``ranks`` is ``mpi_ranks``; ``rt`` its :func:`rank_times` (computed when not given).
    Columns: job, check, detail. Checks: a rank's own file disagreeing with rank 0's table
    (files of different runs under one job id); two rank files claiming the same
    min/median/max role; rank 0's table listing fewer ranks than the job has.
    """
    rt = rank_times(ranks) if rt is None else rt
    own = _obj(ranks, ["job", "comm_role"])
    own = own[own["origin"] == "own"]
    k = keys(rt, "job")
    rows: list[tuple[object, ...]] = []
    for key, g in rt.groupby(k, sort=False, observed=True):
        *run, job = key
        mine = own[own["job"] == job]
        if run and RUN in mine.columns:
            mine = mine[mine[RUN] == run[0]]
        bad = g[g["mismatch"]]
        if len(bad):
            ex = bad.iloc[0]
            rows.append((*run, job, "files disagree",
                         f"{len(bad)} rank(s) ({_ranks(bad)}): own file and rank 0's table "
                         f"differ, e.g. rank {ex['rank']} elapsed "
                         f"{ex['own_elapsed_s']:.2f} s vs {ex['elapsed_s']:.2f} s: profiles "
                         "of different runs with the same job id?"))
        own_roles = mine["comm_role"].dropna().astype(str)
        for role in ("minimum", "median", "maximum"):
            n = int(own_roles.str.contains(role).sum())
            if n > 1:
                rows.append((*run, job, "role claimed twice", f"{n} rank files say they had the "
                             f"{role} communication time"))
        nr = g["nranks"].max()
        listed = int((g["origin"] != "own").sum())
        # a concise mpiP report names only the ranks of the largest and smallest times
        concise = bool(((g["origin"] == "mpip_report") & g["comm_role"].notna()).any())
        if listed and pd.notna(nr) and listed < nr and not concise:
            rows.append((*run, job, "ranks missing",
                         f"rank 0's table lists {listed} of {nr} ranks"))
    return run_first(pd.DataFrame(rows, columns=[*k, "check", "detail"]), rt)


def _ranks(df: pd.DataFrame, limit: int = 8) -> str:
    r = [str(x) for x in df["rank"].tolist()]
    return ", ".join(r[:limit]) + (", ..." if len(r) > limit else "")


def top_callsites(callsites: pd.DataFrame, n: int | None = 10) -> pd.DataFrame:
    """Per job, mpiP's callsites ranked by time (``mpi_callsites``): where in the program the
    MPI time is spent.

    A report with per-rank rows is summed over them; one without (concise, or rows left
    out by a threshold) uses its rows of every rank (``rank`` null).
    Columns: job, site, routine, function, where (file:line, or the address), ranks (ranks
    with rows at the site; for rows of every rank, mpiP's Tasks or nranks), calls (missing
    when unknown), time_s, time_share (of the job's time over all its callsites), bytes,
    order (1 = most time). ``n=None`` keeps all.
    """
    cols = [*keys(callsites, "job"), "site", "routine", "function", "where", "ranks", "calls",
            "time_s", "time_share", "bytes", "order"]
    if callsites.empty:
        return pd.DataFrame(columns=cols)
    df = _obj(callsites, ["job", "routine"])
    job = keys(df, "job")
    has_ranks = df.groupby(job, sort=False)["rank"].transform(lambda r: r.notna().any())
    df = df[df["rank"].notna() == has_ranks.astype(bool)].copy()
    line = df["line"].astype("Int64").astype("string")
    df["where"] = df["file"].astype("string").where(line.isna(), df["file"].astype("string")
                                                    + ":" + line)
    df["_ranks"] = df["tasks"].astype("Float64").fillna(
        df["nranks"].astype("Float64")).where(df["rank"].isna(), 1).fillna(1)
    key = [*job, "site"]
    out = df.groupby(key, sort=False).agg(
        routine=("routine", "first"), function=("function", "first"),
        where=("where", "first"), ranks=("_ranks", "sum")).join(
        _totals(df, key, ["calls", "time_s", "bytes"])).reset_index()
    out["ranks"] = out["ranks"].astype("int64")
    out["calls"] = out["calls"].astype("Int64")
    out["time_share"] = out["time_s"] / out.groupby(job)["time_s"].transform("sum")
    out = run_first(out, callsites)
    out = out.sort_values([*job, "time_s"], ascending=[True] * len(job) + [False],
                          kind="stable")
    out["order"] = out.groupby(job, observed=True).cumcount() + 1
    if n is not None:
        out = out[out["order"] <= n]
    return out[cols].reset_index(drop=True)

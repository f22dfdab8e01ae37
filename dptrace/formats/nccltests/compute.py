"""nccl-tests: what each test says of the system's bus bandwidth.

Functions take the ``nccl_tests`` and ``nccl_tests_summary`` tables. A test is one
(source, block) pair, per ``run`` first when the tables have it (:mod:`.keys`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...analysis.keys import keys, run_first
from ...analysis.messages import COLLECTIVES, bin_bounds, size_bin
from ...analysis.messages import factor as _factor
from ..mpitrace.communication import message_sizes


def overview(rows: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """One row per test: ``test``, ``nranks``, ``nhosts``, ``device``, ``sizes`` (distinct
    message sizes), ``peak_busbw_gbps`` (the highest busbw of any size and placement),
    ``peak_size_bytes`` and ``peak_placement`` (where it was reached; the smallest such
    size on a tie), ``avg_busbw_gbps`` (the average the test printed), ``wrong`` (sum of
    #wrong; null when not counted) and ``lineno`` (of its header)."""
    k = keys(summary, "source", "block")
    cols = [*k, "test", "nranks", "nhosts", "device", "sizes", "peak_busbw_gbps",
            "peak_size_bytes", "peak_placement", "avg_busbw_gbps", "wrong", "lineno"]
    if summary.empty:
        return pd.DataFrame(columns=cols)
    out = summary[[*k, "test", "nranks", "nhosts", "device", "avg_busbw_gbps",
                   "lineno"]].copy()
    measured = rows[rows["busbw_gbps"].notna()]
    if measured.empty:
        for c in ("sizes", "peak_busbw_gbps", "peak_size_bytes", "peak_placement", "wrong"):
            out[c] = pd.NA
        return run_first(out[cols].reset_index(drop=True), summary)
    g = measured.groupby(k, observed=True, sort=False)
    best = measured.sort_values([*k, "busbw_gbps", "size_bytes"],
                                ascending=[*([True] * len(k)), False, True], kind="stable") \
        .drop_duplicates(k)
    peaks = best[[*k, "busbw_gbps", "size_bytes", "placement"]].rename(columns={
        "busbw_gbps": "peak_busbw_gbps", "size_bytes": "peak_size_bytes",
        "placement": "peak_placement"})
    peaks["peak_placement"] = peaks["peak_placement"].astype("string")
    sizes = g["size_bytes"].nunique().rename("sizes").reset_index()
    wrong = g["wrong"].sum(min_count=1).rename("wrong").reset_index()
    out = out.merge(sizes, on=k, how="left").merge(peaks, on=k, how="left") \
        .merge(wrong, on=k, how="left")
    return run_first(out[cols].reset_index(drop=True), summary)


def curve(rows: pd.DataFrame) -> pd.DataFrame:
    """busbw by size for each test and placement: the columns the figure draws, sorted by
    size (``source``, ``block``, ``test``, ``placement``, ``size_bytes``, ``time_us``,
    ``algbw_gbps``, ``busbw_gbps``)."""
    k = keys(rows, "source", "block")
    cols = [*k, "test", "placement", "size_bytes", "time_us", "algbw_gbps", "busbw_gbps"]
    out = rows[cols].sort_values([*k, "placement", "size_bytes"], kind="stable")
    return run_first(out.reset_index(drop=True), rows)


#: a job's collective (mpitrace routine or torch trace collective) -> the nccl-tests test
#: that measures it
TEST_OF = {"MPI_Allreduce": "all_reduce", "MPI_Reduce_scatter": "reduce_scatter",
           "MPI_Allgather": "all_gather", "MPI_Allgatherv": "all_gather",
           "MPI_Alltoall": "alltoall", "MPI_Alltoallv": "alltoall",
           "MPI_Bcast": "broadcast", "MPI_Reduce": "reduce",
           "all_reduce": "all_reduce", "reduce_scatter": "reduce_scatter",
           "all_gather": "all_gather", "all_to_all": "alltoall", "broadcast": "broadcast",
           "reduce": "reduce"}
#: busbw factor formula of each test: the one its MPI routine has in
#: :data:`.communication.COLLECTIVES` (nccl-tests doc/PERFORMANCE.md)
_FORMULA = {TEST_OF[routine]: formula for routine, (_, formula) in COLLECTIVES.items()}

JOB_BIN_COLUMNS = ["evidence", "collective", "test", "bin", "bin_lo_bytes", "bin_hi_bytes",
                   "nranks", "calls", "avg_bytes", "time_s", "time_share", "busbw_gbps"]


def job_bins_mpitrace(message_sizes: pd.DataFrame) -> pd.DataFrame:
    """The collective bins of mpitrace jobs (:func:`.communication.message_sizes`) that
    nccl-tests measure, in the terms of :data:`JOB_BIN_COLUMNS`: busbw as that function
    estimates it (waiting for late ranks included: a lower bound)."""
    k = keys(message_sizes)
    m = message_sizes[message_sizes["routine"].astype(str).isin(TEST_OF)
                      & message_sizes["busbw_bytes_per_s"].notna()]
    if m.empty:
        return pd.DataFrame(columns=[*k, *JOB_BIN_COLUMNS])
    coll = m["routine"].astype(str)
    out = pd.DataFrame({
        **{c: m[c] for c in k},
        "evidence": "mpitrace job " + m["job"].astype(str),
        "collective": coll, "test": coll.map(TEST_OF), "bin": m["bin"],
        "bin_lo_bytes": m["bin_lo_bytes"], "bin_hi_bytes": m["bin_hi_bytes"],
        "nranks": m["nranks"], "calls": m["calls"],
        # nccl-tests' size is the whole buffer: mpitrace's bytes x n for Allgather(v) and
        # Alltoall(v) (one rank's block), as message_sizes' algbw takes it
        "avg_bytes": m["algbw_bytes_per_s"] * m["time_s"] / m["calls"],
        "time_s": m["time_s"], "busbw_gbps": m["busbw_bytes_per_s"] / 1e9})
    return _shares(out.reset_index(drop=True), k)


def job_bins_torch(events: pd.DataFrame, traces: pd.DataFrame) -> pd.DataFrame:
    """The collective kernels of PyTorch profiler traces with a size (``In msg nelems`` or
    ``Input Dims``), per run, collective and size bin over every rank's trace, in the terms
    of :data:`JOB_BIN_COLUMNS`: algbw = bytes / kernel time (x n for all_gather, whose
    size is one rank's input), busbw = algbw x the test's factor for the traces' world
    size. A kernel's time includes waiting for the other ranks to arrive."""
    k = keys(events)
    c = events[(events["role"].astype(object) == "communication")
               & events["size_bytes"].notna() & (events["dur_us"] > 0)]
    c = c[c["collective"].astype(object).isin(TEST_OF)]
    if c.empty or traces.empty:
        return pd.DataFrame(columns=[*k, *JOB_BIN_COLUMNS])
    world = traces[[*keys(traces, "source"), "world_size"]]
    c = c.merge(world, on=keys(traces, "source"), how="left")
    c = c[c["world_size"].notna() & (c["world_size"] > 1)]
    if c.empty:
        return pd.DataFrame(columns=[*k, *JOB_BIN_COLUMNS])
    coll = c["collective"].astype(str)
    n = c["world_size"].astype("float64")
    size = c["size_bytes"].astype("float64") * np.where(coll == "all_gather", n, 1.0)
    b = size_bin(size)
    lo, hi = bin_bounds(b)
    df = pd.DataFrame({**{x: c[x].astype(object) for x in k}, "collective": coll.to_numpy(),
                       "bin": b.to_numpy(dtype="int64"),
                       "bin_lo_bytes": lo.to_numpy(dtype="int64"),
                       "bin_hi_bytes": hi.to_numpy(dtype="int64"),
                       "nranks": c["world_size"].astype("int64").to_numpy(),
                       "bytes": size.to_numpy(), "time_s": (c["dur_us"] * 1e-6).to_numpy(),
                       "trace": c["source"].astype(str).to_numpy()})
    g = df.groupby([*k, "collective", "bin", "bin_lo_bytes", "bin_hi_bytes", "nranks"],
                   sort=True, observed=True)
    out = g.agg(calls=("bytes", "size"), bytes=("bytes", "sum"), time_s=("time_s", "sum"),
                traces=("trace", "nunique")).reset_index()
    out["test"] = out["collective"].map(TEST_OF)
    out["avg_bytes"] = out["bytes"] / out["calls"]
    factor = [_factor(_FORMULA[t], float(r))
              for t, r in zip(out["test"], out["nranks"], strict=True)]
    out["busbw_gbps"] = out["bytes"] / out["time_s"] * np.array(factor) / 1e9
    out["evidence"] = [f"PyTorch profiler trace{'s' if t > 1 else ''} ({t} rank"
                       f"{'s' if t > 1 else ''})" for t in out["traces"]]
    out = run_first(out, events) if k else out
    return _shares(out[[*k, *[c for c in JOB_BIN_COLUMNS if c != "time_share"]]], k)


def job_bins(mpi_messages: pd.DataFrame, torch_events: pd.DataFrame,
             torch_traces: pd.DataFrame) -> pd.DataFrame:
    """The job's collective bins that nccl-tests measure, from its mpitrace profiles
    (:func:`job_bins_mpitrace`) and its PyTorch profiler traces (:func:`job_bins_torch`)."""
    parts = []
    if not mpi_messages.empty:
        parts.append(job_bins_mpitrace(message_sizes(mpi_messages)))
    if not torch_events.empty:
        parts.append(job_bins_torch(torch_events, torch_traces))
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame(columns=JOB_BIN_COLUMNS)
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]


def _shares(out: pd.DataFrame, k: list[str]) -> pd.DataFrame:
    """``time_share``: a bin's share of its run's collective time (of one kind of evidence)."""
    total = out.groupby([*k, "evidence"], observed=True)["time_s"].transform("sum") \
        if k else out.groupby("evidence")["time_s"].transform("sum")
    out = out.assign(time_share=out["time_s"] / total.where(total > 0))
    return out[[*k, *JOB_BIN_COLUMNS]]


def job_vs_system(job_bins: pd.DataFrame, rows: pd.DataFrame,
                  summary: pd.DataFrame) -> pd.DataFrame:
    """How far below this system's own nccl-tests busbw each collective bin of the job runs.

    ``job_bins``: :func:`job_bins_mpitrace` and/or :func:`job_bins_torch` rows; ``rows``,
    ``summary``: ``nccl_tests``, ``nccl_tests_summary``. Within a run (never across runs),
    each bin's average size is placed on the out-of-place busbw curve of the run's test of
    that collective (the test with the most ranks, when there are several), linearly in
    log2(size) between the two sizes measured around it. A bin above the largest size
    tested takes that size's busbw (busbw flattens at large sizes; ``beyond_tested`` is
    True); a bin below the smallest gets none.

    Columns: run (when present), the job bin's columns, ``test_source``, ``test_block``
    (the test compared against), ``test_nranks``,
    ``test_nhosts``, ``system_busbw_gbps``, ``beyond_tested``, ``ratio`` (job busbw /
    system busbw).
    """
    k = keys(job_bins)
    cols = [*k, *JOB_BIN_COLUMNS, "test_source", "test_block", "test_nranks", "test_nhosts",
            "system_busbw_gbps", "beyond_tested", "ratio"]
    if job_bins.empty or rows.empty:
        return pd.DataFrame(columns=cols)
    oop = rows[(rows["placement"].astype(str) == "out-of-place") & rows["busbw_gbps"].notna()
               & rows["size_bytes"].notna() & (rows["size_bytes"] > 0)]
    sk = keys(summary, "source", "block")
    tests = summary[[*sk, "test", "nranks", "nhosts"]].copy()
    tests["order"] = -tests["nranks"].astype("float64").fillna(0)
    tests = tests.sort_values("order", kind="stable")
    curves: dict[tuple[str, ...], pd.Series] = {}   # each test's curve, made once
    out = []
    for rec in job_bins.to_dict("records"):
        match = tests[tests["test"].astype(str) == rec["test"]]
        if k:
            match = match[match[k[0]].astype(str) == str(rec[k[0]])]
        sys_bw, beyond, src, blk, tn, th = np.nan, False, None, pd.NA, pd.NA, pd.NA
        if not match.empty:
            t = match.iloc[0]
            key = tuple(str(t[c]) for c in sk)
            if key not in curves:
                sel = np.ones(len(oop), dtype=bool)
                for c, v in zip(sk, key, strict=True):
                    sel &= (oop[c].astype(str) == v).to_numpy()
                curves[key] = oop[sel].groupby("size_bytes")["busbw_gbps"].max().sort_index()
            src, blk, tn, th = str(t["source"]), t["block"], t["nranks"], t["nhosts"]
            sys_bw, beyond = _on_curve(curves[key], float(rec["avg_bytes"]))
        out.append({**rec, "test_source": src, "test_block": blk, "test_nranks": tn,
                    "test_nhosts": th,
                    "system_busbw_gbps": sys_bw, "beyond_tested": beyond})
    res = pd.DataFrame(out)
    system = res["system_busbw_gbps"].astype("float64")
    # nccl-tests print busbw to 0.01 GB/s: 0.00 at tiny sizes is no reference
    res["ratio"] = res["busbw_gbps"].astype("float64") / system.where(system > 0)
    res = res[res["test_source"].notna()]
    res = res.astype({"test_block": "Int64", "test_nranks": "Int64", "test_nhosts": "Int64"})
    return run_first(res[cols].reset_index(drop=True), job_bins) if k else \
        res[cols].reset_index(drop=True)


def _on_curve(curve: pd.Series, size: float) -> tuple[float, bool]:
    """busbw of ``curve`` (size -> GB/s) at ``size``: interpolated in log2(size)."""
    if curve.empty or not size > 0:
        return np.nan, False
    xs = np.log2(curve.index.to_numpy(dtype="float64"))
    ys = curve.to_numpy(dtype="float64")
    x = np.log2(size)
    if x > xs[-1]:
        return float(ys[-1]), True
    if x < xs[0]:
        return np.nan, False
    return float(np.interp(x, xs, ys)), False

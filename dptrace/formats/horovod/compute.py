"""Horovod timeline analyses: where the time goes, who makes the others wait, how well it fuses.

Inputs are the ``hvd_*`` tables (see :mod:`dptrace.formats.horovod.read`). Every function is
pure (DataFrame in, DataFrame out) and works per ``source`` (one timeline file), and per
``run`` first when the tables have it (:mod:`.keys`; ``run`` is then the first column of each
result), so two runs never mix even when their files or tensors share a name.

Wall time versus tensor time: each tensor of a fused op carries its own copy of the op's
activities (the 20 tensors fused into one NCCL_ALLREDUCE each have a 5 ms NCCL_ALLREDUCE
interval), so summing durations over tensors ("tensor time") overcounts the clock. "Wall
time" is the length of the union of the intervals: the time during which at least one
tensor was in that state. Shares of the traced span use wall time.

Open intervals (a killed job) have no duration: they are counted (``open``) but add no
time.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...analysis.keys import RUN, keys, run_first
from ...analysis.messages import SMALL_BYTES, bin_bounds, size_bin

#: activities that are the collective itself (bytes move during them)
COMM_PREFIXES = ("NCCL_", "MPI_", "GLOO_", "CCL_", "DDL_", "ADASUM_")
FUSION_COPIES = ("MEMCPY_IN_FUSION_BUFFER", "MEMCPY_OUT_FUSION_BUFFER")
#: a negotiation needs ticks from this many ranks before "last ready" means anything
MIN_RANKS = 2
#: a size bin needs this much time (µs) before a rate is given: timestamps have 1 µs
#: resolution, so shorter totals give rates that are mostly rounding
MIN_RATE_US = 1000.0


def union_us(start: np.ndarray, end: np.ndarray) -> float:
    """Length of the union of the intervals [start, end) (NaN ends are skipped)."""
    return float(sum(e - s for s, e in union_segments(start, end)))


def union_segments(start: np.ndarray, end: np.ndarray) -> list[tuple[float, float]]:
    """The union of the intervals as sorted disjoint (start, end) segments."""
    ok = ~(np.isnan(start) | np.isnan(end))
    s, e = np.asarray(start, float)[ok], np.asarray(end, float)[ok]
    if not s.size:
        return []
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    reach = np.maximum.accumulate(e)
    new = np.ones(len(s), bool)
    new[1:] = s[1:] > reach[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    return list(zip(s[first].tolist(), reach[last].tolist(), strict=True))


def _src(df: pd.DataFrame) -> list[str]:
    """The keys of a timeline file: ``source``, with ``run`` first when ``df`` has it."""
    return keys(df, "source")


def _by(df: pd.DataFrame, k: list[str]) -> list[pd.Series]:
    """Group keys of ``df``: ``source`` as text (as it always was), ``run`` kept categorical
    (so a sorted groupby puts the runs in their order)."""
    return [df[c] if c == RUN else df[c].astype(str) for c in k]


def _key_of(row: pd.Series, k: list[str]) -> tuple[str, ...]:
    return tuple(str(row[c]) for c in k)


def _rows_of(df: pd.DataFrame, key: tuple[str, ...], k: list[str]) -> pd.Series:
    """Boolean mask: the rows of ``df`` whose ``k`` columns (those ``df`` has) equal ``key``."""
    mask = pd.Series(True, index=df.index)
    for c, v in zip(k, key, strict=True):
        if c in df.columns:
            mask &= (df[c].astype(str) == v).to_numpy()
    return mask


def _at(df: pd.DataFrame, cols: list[str]) -> pd.Index:
    """An index of ``df``'s ``cols`` as text (lookups in a table grouped by them)."""
    if len(cols) == 1:
        return pd.Index(df[cols[0]].astype(str))
    return pd.MultiIndex.from_arrays([df[c].astype(str) if c in ("source", RUN) else df[c]
                                      for c in cols])


def _spans(runs: pd.DataFrame, k: list[str]) -> dict[tuple[str, ...], float]:
    return {_key_of(r, k): float(r["span_us"]) for _, r in runs.iterrows()}


def _end(df: pd.DataFrame) -> np.ndarray:
    return (df["start_us"] + df["dur_us"]).to_numpy(float)


def activity_breakdown(acts: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Time per activity and op type, per source.

    Columns: ``source``, ``level`` (negotiate, op, activity), ``op``, ``activity``,
    ``intervals``, ``open``, ``wall_us`` (union of the intervals), ``span_share``
    (wall_us / the file's span), ``tensor_us`` (durations summed over tensors),
    ``mean_us`` (tensor_us per closed interval with a duration: a closed interval whose
    times are unknown or go backwards has none). Sorted by source, level, wall_us desc.
    """
    k = _src(acts)
    cols = [*k, "level", "op", "activity", "intervals", "open", "wall_us", "span_share",
            "tensor_us", "mean_us"]
    if acts.empty:
        return run_first(pd.DataFrame(columns=cols), acts)
    rk = [c for c in k if c in runs.columns]
    spans, rows = _spans(runs, rk), []
    by = [acts[c].astype(str) for c in (*k, "level", "op", "activity")]
    for key, g in acts.groupby(by, sort=False):
        span = spans.get(tuple(key[k.index(c)] for c in rk))
        done = g[g["complete"]]
        wall = union_us(done["start_us"].to_numpy(float), _end(done))
        tensor = float(done["dur_us"].sum())
        timed = int(done["dur_us"].notna().sum())   # closed, with both times known
        rows.append([*key, len(g), len(g) - len(done), wall,
                     wall / span if span else np.nan, tensor,
                     tensor / timed if timed else np.nan])
    out = run_first(pd.DataFrame(rows, columns=cols), acts)
    rank = out["level"].map({"negotiate": 0, "op": 1, "activity": 2})
    return out.assign(_r=rank).sort_values([*k, "_r", "wall_us"],
                                           ascending=[True] * len(k) + [True, False],
                                           kind="stable").drop(columns="_r").reset_index(
                                               drop=True)


def negotiation_share(acts: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Per source: how much of the traced time some tensor was negotiating, or in an op.

    Columns: ``source``, ``span_us``, ``negotiate_wall_us``, ``negotiate_share``,
    ``op_wall_us``, ``op_share``, ``negotiations``, ``negotiations_with_ticks``, ``open``
    (intervals still open at the end).
    """
    k, rows = _src(runs), []
    for _, r in runs.iterrows():
        key = _key_of(r, k)
        a = acts[_rows_of(acts, key, k).to_numpy()]
        neg, ops = a[(a["level"] == "negotiate") & a["complete"]], a[(a["level"] == "op") &
                                                                      a["complete"]]
        span = float(r["span_us"])
        nw = union_us(neg["start_us"].to_numpy(float), _end(neg))
        ow = union_us(ops["start_us"].to_numpy(float), _end(ops))
        rows.append([*key, span, nw, nw / span if span else np.nan, ow,
                     ow / span if span else np.nan, int(r["negotiations"]),
                     int(r["negotiations_with_ticks"]), int(r["open_intervals"])])
    return run_first(pd.DataFrame(rows, columns=[*k, "span_us", "negotiate_wall_us",
                                                 "negotiate_share", "op_wall_us", "op_share",
                                                 "negotiations", "negotiations_with_ticks",
                                                 "open"]), runs)


def straggler_ranks(ready: pd.DataFrame) -> pd.DataFrame:
    """Per source and rank: how often it was the last to report a tensor ready, and its lag.

    Only negotiations with ticks from at least :data:`MIN_RANKS` ranks count. Columns:
    ``source``, ``rank``, ``negotiations`` (compared negotiations it reported in),
    ``last`` (times it was last), ``last_share`` (last / compared negotiations of the
    source), ``mean_lag_us``, ``p95_lag_us``, ``max_lag_us`` (behind the first rank ready).
    Sorted by source, then ``last`` descending.
    """
    k = _src(ready)
    cols = [*k, "rank", "negotiations", "last", "last_share", "mean_lag_us",
            "p95_lag_us", "max_lag_us"]
    cmp = ready[ready["ranks_ready"] >= MIN_RANKS]
    if cmp.empty:
        return run_first(pd.DataFrame(columns=cols), ready)
    by = [cmp[c].astype(str) for c in k]
    last = cmp["last_ready"]
    total = cmp[last].groupby([b[last] for b in by]).size()
    g = cmp.groupby([*by, cmp["rank"]], sort=True)
    out = pd.DataFrame({
        "negotiations": g.size(), "last": g["last_ready"].sum(),
        "mean_lag_us": g["lag_us"].mean(), "p95_lag_us": g["lag_us"].quantile(0.95),
        "max_lag_us": g["lag_us"].max(),
    }).reset_index()
    out.columns = [*k, "rank", *out.columns[len(k) + 1:]]
    out["last_share"] = out["last"] / total.reindex(_at(out, k)).to_numpy(float)
    out = run_first(out[cols], ready)
    out = out.sort_values([*k, "last", "rank"], ascending=[True] * len(k) + [False, True],
                          kind="stable")
    return out.reset_index(drop=True)


#: a last tick less than this (µs) after the first rank's is no wait: the coordinator reads
#: the requests of one cycle in rank order (its own first, then ranks 1, 2, ...: Horovod's
#: ``ComputeResponseList``), so within one cycle the highest rank is "last" by microseconds
#: (tests/fixtures/horovod_mpi/small: rank 1 last in 28 of 28 negotiations, median lag
#: 17 µs). Horovod's default cycle time is 1 ms (5 ms before 0.20)
WAIT_US = 1000.0
#: phases of a negotiation (:func:`negotiation_phases`)
STARTUP, STEADY = "startup", "steady"


def steady_from(acts: pd.DataFrame, ready: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per timeline: when its second step begins, ``steady_from_us``: the start of the first
    negotiation or op of a tensor seen before (``op_index`` >= 1); NaN when no tensor is
    negotiated or run twice (a file of start-up only, or a cut-out of one step). Ticks of
    such a negotiation (``ready``) count too: a cut file may have lost its B record.

    Columns: ``source`` (``run`` first when the tables have it), ``steady_from_us``.
    """
    k = _src(acts)
    a = acts[(acts["op_index"] >= 1).fillna(False).to_numpy(bool)
             & acts["level"].astype(str).isin(("negotiate", "op")).to_numpy(bool)]
    parts, srcs = [a[k].assign(_t=a["start_us"].to_numpy(float))], [acts[k]]
    if ready is not None and all(c in ready.columns for c in k):
        r = ready[(ready["op_index"] >= 1).fillna(False).to_numpy(bool)]
        parts.append(r[k].assign(_t=(r["ts_us"] - r["lag_us"].fillna(0.0)).to_numpy(float)))
        srcs.append(ready[k])
    text = {c: (lambda df, c=c: df[c].astype(str)) for c in k}
    every = pd.concat(srcs, ignore_index=True).assign(**text).drop_duplicates()
    first = (pd.concat(parts, ignore_index=True).assign(**text)
             .groupby(k, sort=False)["_t"].min().rename("steady_from_us").reset_index())
    return run_first(every.merge(first, on=k, how="left").reset_index(drop=True), acts)


def negotiation_phases(ready: pd.DataFrame) -> pd.Series:
    """Per tick of ``ready``: ``steady`` when its negotiation is of a tensor's second op or a
    later one (``op_index`` >= 1: the training loop, which negotiates the same tensors every
    step), ``startup`` otherwise: a tensor's first negotiation, i.e. the broadcasts of the
    initial state, the first step (which Horovod's response cache has not cached yet: with
    the cache on, the only negotiations with ticks) and one-off tensors (a metric
    allreduced once at the end; a tensor named anew at each call, which the cache never
    holds, is one of these too)."""
    later = (ready["op_index"] >= 1).fillna(False).to_numpy(bool)
    return pd.Series(np.where(later, STEADY, STARTUP), index=ready.index, dtype=object)


def phase_stragglers(ready: pd.DataFrame, acts: pd.DataFrame,
                     wait_us: float = WAIT_US) -> pd.DataFrame:
    """:func:`straggler_ranks` per phase of the run (:func:`negotiation_phases`: start-up,
    steady state), with the waits that count: a rank *waited for* in a negotiation is its
    last rank when that rank's tick came at least ``wait_us`` after the first rank's.

    Columns: ``source``, ``phase``, ``rank``, ``negotiations`` (compared negotiations it
    reported in), ``compared`` (compared negotiations of the source and phase: ticks from
    :data:`MIN_RANKS` ranks or more), ``broadcasts`` (of them, negotiations of a
    broadcast), ``last`` (times it was last), ``waited`` (times it was last by ``wait_us``
    or more), ``waited_share`` (waited / compared), ``mean_lag_us``, ``p95_lag_us``,
    ``max_lag_us``, ``steady_from_us``. Sorted by source, phase (start-up first), then
    ``waited`` descending.
    """
    k = _src(ready)
    cols = [*k, "phase", "rank", "negotiations", "compared", "broadcasts", "last", "waited",
            "waited_share", "mean_lag_us", "p95_lag_us", "max_lag_us", "steady_from_us"]
    cmp = ready[ready["ranks_ready"] >= MIN_RANKS]
    if cmp.empty:
        return run_first(pd.DataFrame(columns=cols), ready)
    kk = [c for c in k if c in acts.columns]
    t0 = steady_from(acts, ready)
    cmp = cmp.assign(phase=negotiation_phases(cmp),
                     _waited=cmp["last_ready"] & (cmp["lag_us"] >= wait_us),
                     _bcast=cmp["last_ready"] & cmp["op"].astype(str).str.upper().eq(
                         "BROADCAST"))
    by = [cmp[c].astype(str) for c in k] + [cmp["phase"]]
    last = cmp["last_ready"].to_numpy(bool)
    totals = cmp[last].groupby([b[last] for b in by])
    compared, bcasts = totals.size(), totals["_bcast"].sum()
    g = cmp.groupby([*by, cmp["rank"]], sort=True)
    out = pd.DataFrame({
        "negotiations": g.size(), "last": g["last_ready"].sum(), "waited": g["_waited"].sum(),
        "mean_lag_us": g["lag_us"].mean(), "p95_lag_us": g["lag_us"].quantile(0.95),
        "max_lag_us": g["lag_us"].max(),
    }).reset_index()
    out.columns = [*k, "phase", "rank", *out.columns[len(k) + 2:]]
    at = _at(out, [*k, "phase"])
    out["compared"] = compared.reindex(at).to_numpy(float)
    out["broadcasts"] = bcasts.reindex(at).to_numpy(float)
    out["waited_share"] = out["waited"] / out["compared"]
    t0 = t0.assign(**{c: t0[c].astype(str) for c in kk})
    out["steady_from_us"] = out[kk].astype(str).merge(
        t0[[*kk, "steady_from_us"]], on=kk, how="left")["steady_from_us"].to_numpy(float)
    for c in ("negotiations", "compared", "broadcasts", "last", "waited"):
        out[c] = out[c].fillna(0).astype("int64")
    out = run_first(out[cols], ready)
    order = out["phase"].map({STARTUP: 0, STEADY: 1})
    out = out.assign(_p=order).sort_values(
        [*k, "_p", "waited", "last", "rank"],
        ascending=[True] * len(k) + [True, False, False, True], kind="stable")
    return out.drop(columns="_p").reset_index(drop=True)


def fusion_groups(tensors: pd.DataFrame) -> pd.DataFrame:
    """One row per fused op (tensors started together in one response).

    Columns: ``source``, ``fusion_group``, ``op``, ``tensors``, ``bytes`` (sum; null when a
    member's size is unknown), ``start_us``, ``dur_us`` (first start to last end),
    ``complete``.
    """
    k = _src(tensors)
    cols = [*k, "fusion_group", "op", "tensors", "bytes", "start_us", "dur_us",
            "complete"]
    if tensors.empty:
        return run_first(pd.DataFrame(columns=cols), tensors)
    t = tensors.assign(_end=tensors["start_us"] + tensors["dur_us"],
                       _src=tensors["source"].astype(str), _op=tensors["op"].astype(str),
                       _nobytes=tensors["bytes"].isna(),
                       _bytes=tensors["bytes"].astype("float64"))
    g = t.groupby([*k[:-1], "_src", "fusion_group"], sort=True, observed=True)
    out = pd.DataFrame({
        "op": g["_op"].first(), "tensors": g.size(), "bytes": g["_bytes"].sum(),
        "_unknown": g["_nobytes"].any(), "start_us": g["start_us"].min(),
        "_end": g["_end"].max(), "complete": g["complete"].all(),
    }).reset_index().rename(columns={"_src": "source"})
    # summed as floats: an int64 sum of huge sizes would wrap around; beyond int64, unknown
    unknown = out["_unknown"] | ~(out["bytes"] < 2.0 ** 63)
    out["bytes"] = out["bytes"].where(~unknown, 0).astype("int64").astype("Int64").mask(unknown)
    out["dur_us"] = out["_end"].where(out["complete"]) - out["start_us"]
    return run_first(out[cols], tensors)




def small_allreduces(groups: pd.DataFrame, limit_bytes: int = SMALL_BYTES) -> pd.DataFrame:
    """Per timeline: how much of Horovod's allreduce time sits in responses (a fused op, or
    one tensor when nothing was fused) of at most ``limit_bytes`` bytes: latency-bound
    allreduces, such as a scalar metric averaged every step, or gradients sent one by one
    when fusion is off.

    Columns: ``source``, ``responses`` (complete allreduce responses of known size),
    ``allreduce_s`` (their op time, queueing and copies included), ``small_responses``,
    ``small_tensors``, ``small_s``, ``small_share`` (small_s / allreduce_s),
    ``small_us_each`` (mean op time of a small response).
    """
    k = _src(groups)
    cols = [*k, "responses", "allreduce_s", "small_responses", "small_tensors", "small_s",
            "small_share", "small_us_each"]
    g = groups[groups["op"].astype(str).str.upper().str.endswith("ALLREDUCE")
               & groups["complete"].astype(bool) & groups["dur_us"].notna()
               & groups["bytes"].notna()]
    if g.empty:
        return run_first(pd.DataFrame(columns=cols), groups)
    small = g["bytes"].astype("float64") <= limit_bytes
    t = g.assign(_src=g["source"].astype(str), _small=small,
                 _small_us=g["dur_us"].where(small, 0.0),
                 _small_tensors=g["tensors"].where(small, 0))
    by = t.groupby([*k[:-1], "_src"], sort=False, observed=True)
    out = pd.DataFrame({
        "responses": by.size(), "allreduce_s": by["dur_us"].sum() / 1e6,
        "small_responses": by["_small"].sum(),
        "small_tensors": by["_small_tensors"].sum(),
        "small_s": by["_small_us"].sum() / 1e6,
    }).reset_index().rename(columns={"_src": "source"})
    out["small_share"] = out["small_s"] / out["allreduce_s"].where(out["allreduce_s"] > 0)
    out["small_us_each"] = 1e6 * out["small_s"] / \
        out["small_responses"].where(out["small_responses"] > 0)
    for c in ("responses", "small_responses", "small_tensors"):
        out[c] = out[c].astype("Int64")
    return run_first(out[cols], groups)


def fusion_summary(groups: pd.DataFrame, acts: pd.DataFrame) -> pd.DataFrame:
    """Per source and op: tensors and bytes per fused op, and time in fusion-buffer copies.

    Columns: ``source``, ``op``, ``ops`` (fused ops), ``tensors``, ``fused_ops`` (ops of 2+
    tensors), ``tensors_per_op`` (mean), ``max_tensors``, ``mean_bytes``, ``median_bytes``,
    ``max_bytes`` (per op), ``op_wall_us``, ``copy_wall_us`` (MEMCPY_IN/OUT_FUSION_BUFFER,
    union), ``copy_share`` (copy_wall_us / op_wall_us).
    """
    k = [*_src(groups), "op"]
    cols = [*k, "ops", "tensors", "fused_ops", "tensors_per_op", "max_tensors",
            "mean_bytes", "median_bytes", "max_bytes", "op_wall_us", "copy_wall_us",
            "copy_share"]
    rows = []
    for key, g in groups.groupby(k, sort=True, observed=True):
        a = acts[_rows_of(acts, tuple(str(v) for v in key), k).to_numpy() & acts["complete"]]
        opw = a[a["level"] == "op"]
        cp = a[a["activity"].astype(str).isin(FUSION_COPIES)]
        ow = union_us(opw["start_us"].to_numpy(float), _end(opw))
        cw = union_us(cp["start_us"].to_numpy(float), _end(cp))
        b = g["bytes"].dropna().astype(float)
        rows.append([*key, len(g), int(g["tensors"].sum()), int((g["tensors"] > 1).sum()),
                     float(g["tensors"].mean()), int(g["tensors"].max()),
                     b.mean() if len(b) else np.nan, b.median() if len(b) else np.nan,
                     b.max() if len(b) else np.nan, ow, cw, cw / ow if ow else np.nan])
    return run_first(pd.DataFrame(rows, columns=cols), groups)


def fusion_sizes(groups: pd.DataFrame) -> pd.DataFrame:
    """Distribution of tensors per fused op in power-of-two bins (1, 2, 3-4, 5-8, ...).

    Columns: ``source``, ``op``, ``min_tensors``, ``max_tensors`` (the bin's bounds),
    ``ops``, ``share`` (of the source's and op's fused ops).
    """
    k = [*_src(groups), "op"]
    cols = [*k, "min_tensors", "max_tensors", "ops", "share"]
    if groups.empty:
        return run_first(pd.DataFrame(columns=cols), groups)
    n = np.ceil(np.log2(groups["tensors"].to_numpy(float))).astype(int)
    g = groups.assign(_k=n).groupby([*k, "_k"], sort=True, observed=True).size()
    out = g.rename("ops").reset_index()
    kf = out["_k"].to_numpy(float)
    out["max_tensors"] = (2.0 ** kf).astype(int)
    out["min_tensors"] = np.where(kf == 0, 1, 2.0 ** (kf - 1) + 1).astype(int)
    out["share"] = out["ops"] / out.groupby(k, observed=True)["ops"].transform("sum")
    return run_first(out[cols], groups)


def op_throughput(groups: pd.DataFrame, tensors: pd.DataFrame,
                  acts: pd.DataFrame) -> pd.DataFrame:
    """Bytes per second of fused ops, by power-of-two size bin (mpitrace's bins).

    The op rate counts the whole op (queueing and copies included); the comm rate counts
    only the collective activity itself (NCCL_*, MPI_*, GLOO_*, CCL_*: the longest one of
    the group's tensors). A rate is null when its bin has under :data:`MIN_RATE_US` of
    time. Columns: ``source``, ``op``, ``bin``, ``lo_bytes``, ``hi_bytes``,
    ``ops``, ``bytes``, ``op_us``, ``op_bytes_per_s``, ``comm_us``, ``comm_bytes_per_s``.
    """
    k = _src(groups)
    cols = [*k, "op", "bin", "lo_bytes", "hi_bytes", "ops", "bytes", "op_us",
            "op_bytes_per_s", "comm_us", "comm_bytes_per_s"]
    g = groups[groups["complete"] & groups["bytes"].notna()]
    if g.empty:
        return run_first(pd.DataFrame(columns=cols), groups)
    k = [c for c in k if c in tensors.columns and c in acts.columns]
    g = g.assign(comm_us=_comm_us(tensors, acts, k).reindex(
        _at(g, [*k, "fusion_group"])).to_numpy(),
        bin=size_bin(g["bytes"]), bytes=g["bytes"].astype(float))
    out = g.groupby([*_src(groups), "op", "bin"], sort=True, observed=True).agg(
        ops=("bytes", "size"), bytes=("bytes", "sum"), op_us=("dur_us", "sum"),
        comm_us=("comm_us", "sum")).reset_index()
    out["lo_bytes"], out["hi_bytes"] = bin_bounds(out["bin"])
    out["op_bytes_per_s"] = (out["bytes"] / (out["op_us"] / 1e6)).where(
        out["op_us"] >= MIN_RATE_US)
    out["comm_bytes_per_s"] = (out["bytes"] / (out["comm_us"] / 1e6)).where(
        out["comm_us"] >= MIN_RATE_US)
    return run_first(out[cols], groups)


def _comm_us(tensors: pd.DataFrame, acts: pd.DataFrame, k: list[str]) -> pd.Series:
    """Per (``k``: run and source, fusion_group): the longest collective activity among its
    tensors."""
    comm = acts[(acts["level"] == "activity") & acts["complete"] &
                acts["activity"].astype(str).str.startswith(COMM_PREFIXES)]
    on = [*k, "pid", "op_index"]
    text = {c: (lambda df, c=c: df[c].astype(str)) for c in k}
    m = comm[on + ["dur_us"]].assign(**text).merge(
        tensors[on + ["fusion_group"]].assign(**text), on=on, how="inner")
    return m.groupby([*k, "fusion_group"])["dur_us"].max()


def cycle_stats(cycles: pd.DataFrame) -> pd.DataFrame:
    """Per source: CYCLE_START count and cycle-time distribution.

    Columns: ``source``, ``cycles``, ``mean_us``, ``p50_us``, ``p95_us``, ``max_us``.
    """
    k = _src(cycles)
    cols = [*k, "cycles", "mean_us", "p50_us", "p95_us", "max_us"]
    if cycles.empty:
        return run_first(pd.DataFrame(columns=cols), cycles)
    g = cycles.groupby(_by(cycles, k), sort=True, observed=True)["dur_us"]
    out = pd.DataFrame({"cycles": g.size(), "mean_us": g.mean(), "p50_us": g.median(),
                        "p95_us": g.quantile(0.95), "max_us": g.max()})
    return run_first(out.rename_axis(k).reset_index()[cols], cycles)


def idle_gaps(acts: pd.DataFrame) -> pd.DataFrame:
    """Gaps with no op in flight, between the first op's start and the last op's end.

    Columns: ``source``, ``start_us``, ``dur_us``; longest first within each source.
    """
    k, rows = _src(acts), []
    ops = acts[(acts["level"] == "op") & acts["complete"]]
    for key, g in ops.groupby(_by(ops, k), sort=True, observed=True):
        segs = union_segments(g["start_us"].to_numpy(float), _end(g))
        rows += [(*key, e0, s1 - e0) for (_, e0), (s1, _) in zip(segs, segs[1:], strict=False)]
    out = run_first(pd.DataFrame(rows, columns=[*k, "start_us", "dur_us"]), acts)
    return out.sort_values([*k, "dur_us"], ascending=[True] * len(k) + [False],
                           kind="stable").reset_index(drop=True)


def longest_gaps(gaps: pd.DataFrame, n: int) -> pd.DataFrame:
    """The ``n`` longest of :func:`idle_gaps` per source (and run)."""
    return gaps.groupby(_src(gaps), sort=False, observed=True).head(n).reset_index(drop=True)


def idle_summary(gaps: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Per source: ``gaps``, ``idle_us`` (total), ``idle_share`` (of the span),
    ``longest_us``."""
    k, rows = _src(runs), []
    for _, r in runs.iterrows():
        key, span = _key_of(r, k), float(r["span_us"])
        d = gaps.loc[_rows_of(gaps, key, k).to_numpy(), "dur_us"]
        total = float(d.sum())
        rows.append([*key, len(d), total, total / span if span else np.nan,
                     float(d.max()) if len(d) else np.nan])
    return run_first(pd.DataFrame(rows, columns=[*k, "gaps", "idle_us", "idle_share",
                                                 "longest_us"]), runs)


def time_summary(acts: pd.DataFrame, runs: pd.DataFrame,
                 gaps: pd.DataFrame | None = None) -> pd.DataFrame:
    """:func:`negotiation_share` and :func:`idle_summary` side by side, one row per source
    (joined on run and source)."""
    gaps = idle_gaps(acts) if gaps is None else gaps
    return negotiation_share(acts, runs).merge(idle_summary(gaps, runs), on=_src(runs))


def top_tensors(tensors: pd.DataFrame, n: int | None = 10) -> pd.DataFrame:
    """Tensors by total op time, per source.

    Columns: ``source``, ``tensor``, ``op``, ``ops``, ``total_us`` (op durations summed),
    ``mean_us``, ``share`` (of the source's summed op time), ``negotiate_us`` (summed),
    ``bytes`` (per op), ``dtype``, ``shape``. ``n`` rows per source (all when None).
    """
    k = _src(tensors)
    cols = [*k, "tensor", "op", "ops", "total_us", "mean_us", "share", "negotiate_us",
            "bytes", "dtype", "shape"]
    if tensors.empty:
        return run_first(pd.DataFrame(columns=cols), tensors)
    t = tensors.assign(source=tensors["source"].astype(str), tensor=tensors["tensor"].astype(str),
                       op=tensors["op"].astype(str))
    g = t.groupby([*k, "tensor", "op"], sort=False, observed=True)
    out = pd.DataFrame({
        "ops": g.size(), "total_us": g["dur_us"].sum(), "mean_us": g["dur_us"].mean(),
        "negotiate_us": g["negotiate_us"].sum(), "bytes": g["bytes"].first(),
        "dtype": g["dtype"].first().astype(object), "shape": g["shape"].first(),
    }).reset_index()
    out["share"] = out["total_us"] / out.groupby(k, observed=True)["total_us"].transform("sum")
    out = run_first(out, tensors)
    out = out.sort_values([*k, "total_us"], ascending=[True] * len(k) + [False], kind="stable")
    if n is not None:
        out = out.groupby(k, sort=False, observed=True).head(n)
    return out[cols].reset_index(drop=True)


def timeline_warnings(runs: pd.DataFrame) -> pd.DataFrame:
    """What a reader must know before trusting the numbers, per source.

    Columns: ``source``, ``kind`` (truncated, open_intervals, unmatched_ends, no_ticks,
    cached), ``detail``.
    """
    k, rows = _src(runs), []
    for _, r in runs.iterrows():
        src = _key_of(r, k)
        if r["truncated"]:
            rows.append((*src, "truncated", "the file ends inside a record: the job was "
                         "probably killed while writing; events up to the cut are used"))
        if r["open_intervals"]:
            rows.append((*src, "open_intervals", f"{int(r['open_intervals'])} interval(s) "
                         "never closed (B without E): counted as open, no duration"))
        if r["unmatched_ends"]:
            rows.append((*src, "unmatched_ends", f"{int(r['unmatched_ends'])} E record(s) "
                         "closed nothing (file rewritten or cut at its start): ignored"))
        n, ticked = int(r["negotiations"]), int(r["negotiations_with_ticks"])
        if n and ticked < n:
            rows.append((*src, "cached", f"only {ticked:,} of {n:,} negotiations have "
                         "rank-ready ticks (Horovod's response cache skips them): straggler "
                         "figures cover those only"))
    return run_first(pd.DataFrame(rows, columns=[*k, "kind", "detail"]), runs)

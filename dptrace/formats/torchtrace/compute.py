"""PyTorch profiler traces: where each rank's time went, per step and per collective.

Functions take ``torch_events`` (one row per event, ``role`` saying what it is to the
breakdown) and return one row per (run, source) -- a trace is one rank's -- or finer.

Definitions follow HolisticTraceAnalysis (HTA)'s temporal breakdown and
communication/computation overlap, computed as unions of intervals (sort the starts,
carry the running maximum end: no per-event loop):

- the *span* of a rank is from the start of its first kernel to the end of its last (a
  trace without GPU kernels: of its CPU ops and backend collectives, ``basis`` "cpu");
- *computation* is the time at least one compute kernel runs (kernels whose name has no
  ``nccl``), *communication* the time at least one collective kernel runs, *memory* the time
  a memcpy/memset runs; overlapping kernels on several streams count once;
- *overlap* is the time computation and communication both run, and ``overlap_pct`` is
  HTA's comm/comp overlap: overlap as a share of communication;
- *exposed communication* is communication with no computation beside it (communication
  minus overlap): what the step waits for;
- *idle* is the span minus the time anything runs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...analysis.keys import keys, run_first


def union_us(starts: np.ndarray, ends: np.ndarray) -> float:
    """Length of the union of the intervals [start, end) (NaN ones ignored)."""
    ok = ~(np.isnan(starts) | np.isnan(ends))
    s, e = starts[ok], ends[ok]
    if s.size == 0:
        return 0.0
    order = np.argsort(s, kind="stable")
    s, e = s[order], np.maximum(e[order], s[order])
    reach = np.maximum.accumulate(e)
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    new[1:] = s[1:] > reach[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, s.size - 1)
    return float((reach[last] - s[first]).sum())


def _ends(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    s = df["ts_us"].to_numpy(dtype="float64")
    return s, s + df["dur_us"].fillna(0).to_numpy(dtype="float64")


def _parts(g: pd.DataFrame) -> tuple[str, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """basis, compute, communication and memory events of one trace."""
    role = g["role"].astype(object)
    on_device = g["device"].notna()
    kernel = on_device & role.isin(("compute", "communication"))
    if bool(kernel.any()):
        return ("gpu", g[on_device & (role == "compute")],
                g[on_device & (role == "communication")], g[on_device & (role == "memory")])
    comm = g[role == "communication"]
    comm_threads = set(comm["tid"].dropna().tolist())
    compute = g[(role == "cpu_op") & ~g["tid"].isin(comm_threads)]
    return "cpu", compute, comm, g.iloc[:0]


BREAKDOWN_COLUMNS = ["rank", "basis", "span_us", "compute_us", "communication_us",
                     "memory_us", "overlap_us", "exposed_comm_us", "idle_us", "compute_pct",
                     "communication_pct", "idle_pct", "overlap_pct", "collectives", "steps"]


def breakdown(events: pd.DataFrame) -> pd.DataFrame:
    """One row per trace: ``basis`` (gpu: kernels; cpu: CPU ops and backend collectives),
    ``span_us``, ``compute_us``, ``communication_us``, ``memory_us``, ``overlap_us``,
    ``exposed_comm_us``, ``idle_us`` (see the module's definitions), their shares of the
    span (``*_pct``), ``overlap_pct`` (of communication), ``collectives`` (communication
    events) and ``steps`` (ProfilerStep#N seen)."""
    k = keys(events, "source")
    if events.empty:
        return pd.DataFrame(columns=[*k, *BREAKDOWN_COLUMNS])
    rows = []
    for key, g in events.groupby(k, observed=True, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        basis, comp, comm, mem = _parts(g)
        cs, ce = _ends(comp)
        ms, me = _ends(comm)
        ys, ye = _ends(mem)
        all_s, all_e = np.concatenate([cs, ms, ys]), np.concatenate([ce, me, ye])
        span = float(np.nanmax(all_e) - np.nanmin(all_s)) if all_s.size else 0.0
        compute, communication, memory = union_us(cs, ce), union_us(ms, me), union_us(ys, ye)
        both = union_us(np.concatenate([cs, ms]), np.concatenate([ce, me]))
        overlap = max(compute + communication - both, 0.0)
        busy = union_us(all_s, all_e)
        rank = g["rank"].iloc[0]
        rows.append((*key, rank, basis, span, compute, communication, memory, overlap,
                     communication - overlap, max(span - busy, 0.0),
                     _pct(compute, span), _pct(communication, span),
                     _pct(max(span - busy, 0.0), span), _pct(overlap, communication),
                     len(comm), int((g["role"].astype(object) == "step").sum())))
    out = pd.DataFrame(rows, columns=[*k, *BREAKDOWN_COLUMNS])
    out["rank"] = out["rank"].astype("Int64")
    return run_first(out.sort_values([*k[:-1], "rank", k[-1]], kind="stable")
                     .reset_index(drop=True), events)


def _pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole > 0 else float("nan")


def steps(events: pd.DataFrame) -> pd.DataFrame:
    """One row per ProfilerStep#N of each trace: ``rank``, ``step``, ``ts_us``, ``dur_us``,
    and ``start_lag_us``: how much later than the earliest rank of its run the step
    started (the ranks' clocks must agree: Kineto writes the system clock)."""
    k = keys(events, "source")
    cols = [*k, "rank", "step", "ts_us", "dur_us", "start_lag_us"]
    s = events[events["role"].astype(object) == "step"]
    if s.empty:
        return pd.DataFrame(columns=cols)
    out = s[[*k, "rank", "step", "ts_us", "dur_us"]].copy()
    by = keys(events, "step")
    out["start_lag_us"] = out["ts_us"] - out.groupby(by, observed=True)["ts_us"].transform("min")
    return run_first(out.sort_values([*k, "step"], kind="stable").reset_index(drop=True),
                     events)


def collectives(events: pd.DataFrame) -> pd.DataFrame:
    """Communication per trace, collective and message size: ``calls``, ``total_us``,
    ``mean_us``, ``max_us`` (the events the breakdown counts as communication; sizes where
    the trace has them, else null)."""
    k = keys(events, "source")
    cols = [*k, "rank", "collective", "size_bytes", "elements", "calls", "total_us",
            "mean_us", "max_us"]
    c = events[(events["role"].astype(object) == "communication")]
    if c.empty:
        return pd.DataFrame(columns=cols)
    c = c.assign(collective=c["collective"].astype(object).fillna("?"))
    g = c.groupby([*k, "rank", "collective", "size_bytes", "elements"], observed=True,
                  dropna=False, sort=True)["dur_us"]
    out = g.agg(calls="size", total_us="sum", mean_us="mean", max_us="max").reset_index()
    out = out.sort_values([*k, "total_us"], ascending=[*([True] * len(k)), False],
                          kind="stable")
    return run_first(out[cols].reset_index(drop=True), events)


def rank_comm(events: pd.DataFrame, traces: pd.DataFrame) -> pd.DataFrame:
    """Per trace with a rank and collectives, what the collective straggler rule compares:
    ``job`` (the traces of one run that can be one job's: same world size and backend,
    profiled at overlapping times, one trace per rank; null for a trace that cannot be
    compared), ``world_size``, ``communication_us`` (union of the communication events),
    ``collectives`` (their count) and ``span_us``."""
    k = keys(events, "source")
    cols = [*k, "rank", "job", "world_size", "communication_us", "collectives", "span_us",
            "basis"]
    b = breakdown(events)
    b = b[b["rank"].notna() & (b["collectives"] > 0)]
    if b.empty or traces.empty:
        return pd.DataFrame(columns=cols)
    meta = traces[[*k, "world_size", "backend", "first_us", "last_us"]]
    b = b.merge(meta, on=k, how="left")
    b["job"] = pd.Series([None] * len(b), dtype="object")
    by = [c for c in ("run", "world_size", "backend") if c in b.columns]
    for key, g in b.groupby(by, observed=True, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        together = g["rank"].is_unique and float(g["first_us"].max()) < float(g["last_us"].min())
        if len(g) > 1 and together:
            b.loc[g.index, "job"] = " ".join(str(v) for v in key)
    return run_first(b[cols].reset_index(drop=True), events)

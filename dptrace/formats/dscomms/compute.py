"""DeepSpeed comms logger summaries: where the job's communication time went, per op.

Functions take the ``ds_comms`` table. A summary is one (source, block) pair, per ``run``
first when the table has it (:mod:`.keys`).
"""

from __future__ import annotations

import pandas as pd

from ...analysis.keys import keys, run_first


def by_op(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per summary and op (and caller, where printed): ``sizes`` (distinct message
    sizes), ``calls`` (sum of count), ``total_latency_s`` (sum over its sizes, seconds),
    ``latency_share`` (of the summary's total latency, 0-1), ``peak_busbw_gbps`` and
    ``peak_size_bytes`` (the highest busbw printed and at which size; the smallest size on a
    tie), in the order the ops were printed."""
    k = keys(rows, "source", "block")
    cols = [*k, "op", "caller", "sizes", "calls", "total_latency_s", "latency_share",
            "peak_busbw_gbps", "peak_size_bytes"]
    if rows.empty:
        return pd.DataFrame(columns=cols)
    g = [*k, "op", "caller"]
    grouped = rows.groupby(g, observed=True, sort=False, dropna=False)
    out = grouped.agg(sizes=("size_bytes", "nunique"), calls=("count", "sum"),
                      total_latency_s=("total_latency_s", "sum"),
                      first=("lineno", "min")).reset_index()
    total = out.groupby(k, observed=True, sort=False)["total_latency_s"].transform("sum")
    out["latency_share"] = (out["total_latency_s"] / total).where(total > 0)
    measured = rows[rows["busbw_gbps"].notna()]
    best = measured.sort_values([*g, "busbw_gbps", "size_bytes"],
                                ascending=[*([True] * len(g)), False, True],
                                kind="stable").drop_duplicates(g)
    peaks = best[[*g, "busbw_gbps", "size_bytes"]].rename(columns={
        "busbw_gbps": "peak_busbw_gbps", "size_bytes": "peak_size_bytes"})
    out = out.merge(peaks, on=g, how="left").sort_values([*k, "first"], kind="stable")
    out["caller"] = out["caller"].astype("string")     # the group key came back as NaN
    return run_first(out[cols].reset_index(drop=True), rows)


def curve(rows: pd.DataFrame) -> pd.DataFrame:
    """busbw and latency by message size for each summary and op, sorted by size: the
    columns the figure draws."""
    k = keys(rows, "source", "block")
    cols = [*k, "op", "caller", "size_bytes", "count", "avg_latency_us", "tput_gbps",
            "busbw_gbps"]
    out = rows[cols].sort_values([*k, "op", "size_bytes"], kind="stable")
    return run_first(out.reset_index(drop=True), rows)

"""nccl-tests: what each test says of the system's bus bandwidth.

Functions take the ``nccl_tests`` and ``nccl_tests_summary`` tables. A test is one
(source, block) pair, per ``run`` first when the tables have it (:mod:`.keys`).
"""

from __future__ import annotations

import pandas as pd

from .keys import keys, run_first


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

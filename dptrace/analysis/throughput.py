"""Throughput across instances: per instance, in total, spread, stragglers.

A *series* is one (source, pattern, name, label, metric, scope): e.g. the SambaFlow
``e2e samples_per_sec`` lines of one log, or DeepSpeed's ``CurrSamplesPerSec``.

Per-step series (rows with a ``step``) lose their warm-up before averaging: by default
the first 10% of each instance's steps, at least one, when it has 3 steps or more. Both
the steady-state and the all-steps figures are reported.

The job figure depends on ``scope``:
- ``instance``/``device``: rates of separate instances add up, so the job figure is the
  **sum** over instances. SambaNova's docs instead quote the **mean** over instances;
  it is reported beside it as ``mean``.
- ``global``: the line already covers the whole job (HF ``train_samples_per_second``,
  DeepSpeed ``SamplesPerSec``); copies printed by several ranks are **never summed**: the
  job figure is their mean.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pandas.core.groupby import DataFrameGroupBy

SERIES = ["source", "pattern", "name", "label", "metric", "scope"]
#: share of each instance's steps treated as warm-up
WARMUP_FRACTION = 0.1
#: an instance this far (fraction) below the median is a straggler
STRAGGLER_THRESHOLD = 0.05


def mark_warmup(tp: pd.DataFrame, fraction: float = WARMUP_FRACTION) -> pd.Series:
    """Boolean Series, True for the warm-up rows of each (series, instance).

    The first ``max(1, floor(fraction * n))`` steps (ordered by ``step``) of an instance
    with n >= 3 stepped rows are warm-up; rows without a step never are.
    """
    if tp.empty:
        return pd.Series(False, index=tp.index, dtype=bool)
    stepped = tp[tp["step"].notna()]
    ordered = stepped.assign(_s=stepped["step"].astype("float64")).sort_values("_s", kind="stable")
    groups = _group(ordered, SERIES + ["instance"])
    pos = groups.cumcount()
    size = groups["_s"].transform("size")
    cut = np.maximum(1, np.floor(size * fraction))
    warm = (size >= 3) & (pos < cut)
    return warm.reindex(tp.index, fill_value=False).astype(bool)


def per_instance(tp: pd.DataFrame, fraction: float = WARMUP_FRACTION,
                 straggler: float = STRAGGLER_THRESHOLD) -> pd.DataFrame:
    """One row per series and instance.

    Columns: the series columns, ``instance``, ``rows``, ``warmup_rows``, ``first_step``,
    ``last_step``, ``value_all`` (mean over all rows), ``value`` (mean after warm-up),
    ``below_median_pct`` (how far ``value`` is below the series median, in %), ``straggler``
    (more than ``straggler`` below the median), ``first_lineno``.
    """
    if tp.empty:
        return pd.DataFrame(columns=SERIES + ["instance", "rows", "warmup_rows", "first_step",
                                              "last_step", "value_all", "value",
                                              "below_median_pct", "straggler", "first_lineno"])
    df = tp.assign(_warm=mark_warmup(tp, fraction))
    df = df.assign(_steady=df["value"].where(~df["_warm"]))
    g = _group(df, SERIES + ["instance"])
    out = pd.DataFrame({
        "rows": g.size(),
        "warmup_rows": g["_warm"].sum(),
        "first_step": g["step"].min(),
        "last_step": g["step"].max(),
        "value_all": g["value"].mean(),
        "value": g["_steady"].mean(),
        "first_lineno": g["lineno"].min(),
    }).reset_index()
    median = _group(out, SERIES)["value"].transform("median")
    out["below_median_pct"] = (median - out["value"]) / median * 100.0
    out["straggler"] = out["below_median_pct"] > straggler * 100.0
    return out.sort_values(["source", "first_lineno"], kind="stable").reset_index(drop=True)


def throughput_summary(tp: pd.DataFrame, fraction: float = WARMUP_FRACTION,
                       straggler: float = STRAGGLER_THRESHOLD) -> pd.DataFrame:
    """One row per series: aggregates over its instances and the job figure with its rule.

    Columns: the series columns; ``instances``; ``rows``; ``sum``, ``mean``, ``hmean``,
    ``median``, ``min``, ``max``, ``std`` (sample, ddof=1), ``cv`` (std/mean) over the
    instances' steady-state values, all in the unit named by ``metric``;
    ``slowest_instance``, ``slowest_value``, ``slowest_below_median_pct``, ``stragglers``
    (count); ``job_value`` and ``job_rule`` (how the job figure was made);
    ``job_value_all_steps`` (the same rule over all steps, warm-up included); ``warmup_rows``.
    """
    inst = per_instance(tp, fraction, straggler)
    if inst.empty:
        return pd.DataFrame(columns=SERIES + _SUMMARY_COLS)
    rows = [_summarise(key, grp) for key, grp in _group(inst, SERIES)]
    return pd.DataFrame(rows, columns=SERIES + _SUMMARY_COLS)


_SUMMARY_COLS = ["instances", "rows", "sum", "mean", "hmean", "median", "min", "max", "std", "cv",
                 "slowest_instance", "slowest_value", "slowest_below_median_pct", "stragglers",
                 "job_value", "job_rule", "job_value_all_steps", "warmup_rows"]


def _summarise(key: tuple, grp: pd.DataFrame) -> list:
    v = grp["value"].astype("float64")
    n = len(grp)
    slow = grp.loc[v.idxmin()] if v.notna().any() else None
    mean = v.mean()
    hmean = n / (1.0 / v).sum() if (v > 0).all() else np.nan
    scope = key[SERIES.index("scope")]
    if scope == "global":
        job, job_all = mean, grp["value_all"].mean()
        rule = ("global figure; " + (f"mean of {n} copies, not summed" if n > 1 else "as printed"))
    else:
        job, job_all = v.sum(), grp["value_all"].sum()
        rule = f"sum over {n} {scope}{'s' if n > 1 else ''}"
    std = v.std(ddof=1)
    return [
        *[None if pd.isna(k) else k for k in key], n, int(grp["rows"].sum()), v.sum(), mean, hmean,
        v.median(), v.min(), v.max(), std, std / mean if mean else np.nan,
        None if slow is None else slow["instance"], None if slow is None else slow["value"],
        None if slow is None else slow["below_median_pct"], int(grp["straggler"].sum()),
        job, rule, job_all, int(grp["warmup_rows"].sum()),
    ]


def _group(df: pd.DataFrame, cols: list[str]) -> DataFrameGroupBy:
    """Group by ``cols`` in order of appearance, keeping null keys (a bar without a label)."""
    return df.groupby(cols, sort=False, dropna=False, observed=True)

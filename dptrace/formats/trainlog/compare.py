"""The training-log tables ``dptrace compare`` and ``scaling`` match across runs: the job
figure (the views' ``job`` role), each per-instance series after warm-up (``instances``),
and the global batch per step that the efficiency of a step time needs."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import pandas as pd

from ...analysis.compare import Measure, Metric, register_batches, register_measures
from ...analysis.keys import plain

#: the ``train_metrics`` name of the global batch per step (Megatron's ``global batch size``)
GLOBAL_BATCH = "global_batch_size"


def _per_instance(df: pd.DataFrame) -> pd.Series:
    """Training rows of per-instance series (a printed global figure is the job's row)."""
    keep = pd.Series(True, index=df.index)
    if "phase" in df.columns:
        phase = df["phase"].astype(object)
        keep &= phase.isna() | (phase == "train")
    if "scope" in df.columns:
        keep &= df["scope"].astype(object) != "global"
    return keep


def _text(v: object) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v)) and v is not pd.NA \
        and str(v) != ""


def _series(k: Mapping[str, object]) -> str:
    """``img/sec per CPU, instance 3``: a throughput series' printed name and the instance."""
    name = next((str(v) for v in (k.get("name"), k.get("label")) if _text(v)), "")
    return f"{name}, instance {k['instance']}" if name else f"instance {k['instance']}"


def global_batch(metrics: pd.DataFrame | None) -> dict[str, tuple[float | None, str]]:
    """Per run, the global batch per step its training lines print (``train_metrics`` rows
    named :data:`GLOBAL_BATCH`: Megatron's ``global batch size`` of each iteration line) and
    a note: (B, "") when every step printed the same B; (None, why) when the steps print
    different values (a batch-size ramp-up: a step's work is not one number). A run that
    prints none is absent."""
    if metrics is None or metrics.empty or "name" not in metrics.columns:
        return {}
    rows = metrics[(metrics["name"].astype(str) == GLOBAL_BATCH).to_numpy()]
    if "repeat" in rows.columns:
        rows = rows[~rows["repeat"].fillna(False).astype(bool).to_numpy()]
    if rows.empty:
        return {}
    runs = plain(rows["run"]).astype(str) if "run" in rows.columns else \
        pd.Series("run", index=rows.index)
    out: dict[str, tuple[float | None, str]] = {}
    for run, v in rows["value"].astype("float64").groupby(runs.to_numpy(), sort=False):
        vals = sorted(set(v.dropna().tolist()))
        if len(vals) == 1:
            out[str(run)] = (vals[0], "")
        elif vals:
            out[str(run)] = (None, f"the global batch per step varies over the run "
                                   f"({vals[0]:g} to {vals[-1]:g})")
    return out


def _batches(table: Callable[[str], pd.DataFrame | None]) -> dict[str, tuple[float | None, str]]:
    return global_batch(table("train_metrics"))


register_measures(
    Measure("throughput.job", ("metric",), (Metric("value", "first", "/s"),),
            lambda k: "job throughput", metric_key="metric", order=0, role="job"),
    Measure("throughput.instances", ("metric", "name", "label", "instance"),
            (Metric("value", "first", "/s"),), _series, metric_key="metric",
            where=_per_instance, order=50, role="instances"),
)
register_batches(_batches)

"""The training-log tables ``dptrace compare`` and ``scaling`` match across runs: the job
figure, and each per-instance series after warm-up."""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from ...analysis.compare import Measure, Metric, register_measures


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


register_measures(
    Measure("throughput.job", ("metric",), (Metric("value", "first", "/s"),),
            lambda k: "job throughput", metric_key="metric", order=0),
    Measure("throughput.instances", ("metric", "name", "label", "instance"),
            (Metric("value", "first", "/s"),), _series, metric_key="metric",
            where=_per_instance, order=50),
)

"""The derived tables of Horovod timelines."""

from __future__ import annotations

import pandas as pd

from ...analyses import Analyses, Derived, register_derived
from . import compute as hv


def _runs(a: Analyses) -> pd.DataFrame | None:
    return a.table("hvd_runs") if a.has("hvd_runs") else None


def _groups(a: Analyses) -> pd.DataFrame | None:
    if not a.has("hvd_runs"):
        return None
    return hv.fusion_groups(a.table("hvd_tensors"))


def _small_allreduces(a: Analyses) -> pd.DataFrame | None:
    groups = a["horovod.fusion_groups"]
    return None if groups is None else hv.small_allreduces(groups)


def _stragglers(a: Analyses) -> pd.DataFrame | None:
    if not a.has("hvd_runs"):
        return None
    return hv.phase_stragglers(a.table("hvd_ready"), a.table("hvd_activities"))


register_derived(
    Derived("horovod.runs", _runs, "one row per timeline (hvd_runs)"),
    Derived("horovod.fusion_groups", _groups, "tensors by the op that fused them"),
    Derived("horovod.small_allreduces", _small_allreduces, "small Allreduces per timeline"),
    Derived("horovod.stragglers", _stragglers, "the last rank ready per negotiation"),
)

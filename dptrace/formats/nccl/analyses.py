"""The derived table of NCCL logs: one row per process's setup and its events."""

from __future__ import annotations

import pandas as pd

from ...analyses import Analyses, Derived, register_derived
from . import compute as nccl_analysis


def _overview(a: Analyses) -> pd.DataFrame | None:
    if not (a.has("nccl_setup") or a.has("nccl_events")):
        return None
    return nccl_analysis.overview(a.table("nccl_setup"), a.table("nccl_events"), a.ds.runs)


register_derived(Derived("nccl.overview", _overview, "NCCL's choices and events per run",
                          per_run=True))

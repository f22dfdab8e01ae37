"""The derived table of PyTorch profiler traces: communication per rank."""

from __future__ import annotations

import pandas as pd

from ...analyses import Analyses, Derived, register_derived
from . import compute as tt


def _ranks(a: Analyses) -> pd.DataFrame | None:
    if not a.has("torch_events"):
        return None
    return tt.rank_comm(a.table("torch_events"), a.table("torch_traces"))


register_derived(Derived("torchtrace.ranks", _ranks, "collective time per rank and job",
                          per_run=True))

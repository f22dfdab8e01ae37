"""The derived table of nccl-tests results against the job's own collectives."""

from __future__ import annotations

import pandas as pd

from ...analyses import Analyses, Derived, register_derived
from . import compute as nt


def _job_vs_system(a: Analyses) -> pd.DataFrame | None:
    if not a.has("nccl_tests"):
        return None
    bins = nt.job_bins(a.table("mpi_messages"), a.table("torch_events"), a.table("torch_traces"))
    return nt.job_vs_system(bins, a.table("nccl_tests"), a.table("nccl_tests_summary"))


register_derived(Derived("nccltests.job_vs_system", _job_vs_system,
                         "the job's large collective bins against the busbw nccl-tests measured"))

"""What mpiP reports: the tasks tell the runs table (world size, nodes, launcher, job id), declared
with :func:`dptrace.runs.register_facts`."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ... import runs
from ...runs import Facts, Rows, register_facts


def _from_mpip(rows: Rows, ranks: pd.DataFrame | None) -> None:
    """An mpiP report's tasks (its ``MPI Task Assignment`` lines, else its task rows or
    file name ``<exe>.<ntasks>.<pid>.<k>.mpiP``)."""
    if ranks is None or "origin" not in ranks or not (ranks["origin"] == "mpip_report").any():
        return                          # no mpiP rows (mpitrace's): nothing per run to filter
    for run, g in runs.per_run(ranks):
        g = g[g["origin"] == "mpip_report"]
        runs.set_world_of(rows[run], runs.unique_values(g["nranks"]), "mpiP report tasks",
                          "mpiP reports disagree", "tasks")


def _step(rows: Rows, tables: Mapping[str, pd.DataFrame]) -> None:
    _from_mpip(rows, runs.columns(tables.get("mpi_ranks"), "nranks", "origin"))


register_facts(Facts("mpip", _step, 20))

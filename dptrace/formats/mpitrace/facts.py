"""What mpitrace profiles: the job's ranks (nranks), its id, and its hosts tell the runs table
(world size, nodes, launcher, job id), declared with :func:`dptrace.runs.register_facts`."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ... import runs
from ...runs import Facts, Rows, register_facts


def _from_mpitrace(rows: Rows, jobs: pd.DataFrame | None,
                   ranks: pd.DataFrame | None) -> None:
    for run, g in runs.per_run(jobs):
        sizes = runs.unique_values(g["nranks"])
        if len(sizes) == 1:
            runs.set_world(rows[run], sizes[0], "mpitrace nranks")
        elif sizes:
            rows[run]["world_size_from"] = ("mpitrace: the run's profiles disagree ("
                                            + ", ".join(map(str, sizes)) + " ranks)")
        job_ids = runs.unique_values(g["job"].astype("string"))
        if rows[run]["job_id"] is None and len(job_ids) == 1 and str(job_ids[0]).isdigit():
            rows[run]["job_id"] = str(job_ids[0])
    for run, g in runs.per_run(ranks):
        hosts = runs.unique_values(g["host"]) if "host" in g else []
        if hosts:
            rows[run]["nodes"] = len(hosts)


def _step(rows: Rows, tables: Mapping[str, pd.DataFrame]) -> None:
    _from_mpitrace(rows, tables.get("mpi_jobs"), runs.columns(tables.get("mpi_ranks"), "host"))


register_facts(Facts("mpitrace", _step, 10))

"""What NCCL logs: the largest communicator, the nodes tell the runs table (world size, nodes,
launcher, job id), declared with :func:`dptrace.runs.register_facts`."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ... import runs
from ...runs import Facts, Rows, register_facts


def _from_nccl(rows: Rows, setup: pd.DataFrame | None,
               env: pd.DataFrame | None) -> None:
    """Last: the NCCL lines of a run's logs. World size: the ranks of the largest
    communicator ('comm ... nranks 16'). Nodes: NCCL's own 'nNodes' (2.18+), else what a
    launcher line states (mpirun '--host a,b', SLURM_NNODES, torchrun '--nnodes'; one value),
    else the hosts that printed NCCL lines when there are several (a lower bound: often only
    one process per node prints)."""
    stated: dict[str, list[int]] = {}
    for run, g in runs.per_run(env):
        stated[run] = [int(v) for v in runs.unique_values(g["nodes"])]
    for run, g in runs.per_run(setup):
        sizes = runs.unique_values(g["nranks"])
        if sizes:
            runs.set_world(rows[run], max(sizes), "NCCL 'comm ... nranks' (largest communicator)")
        if rows[run]["nodes"] is not None:
            continue
        nodes = runs.unique_values(g["nodes"])
        hosts = runs.unique_values(g["host"])
        if nodes:
            rows[run]["nodes"] = int(max(nodes))
        elif len(stated.get(run, [])) == 1:
            rows[run]["nodes"] = stated[run][0]
        elif len(hosts) > 1:
            rows[run]["nodes"] = len(hosts)
    for run, values in stated.items():     # a log with the layout but no NCCL process line
        if rows[run]["nodes"] is None and len(values) == 1:
            rows[run]["nodes"] = values[0]


def _step(rows: Rows, tables: Mapping[str, pd.DataFrame]) -> None:
    _from_nccl(rows, runs.columns(tables.get("nccl_setup"), "host", "nranks", "nodes"),
               runs.columns(tables.get("nccl_env"), "name", "nodes"))


register_facts(Facts("nccl", _step, 80))

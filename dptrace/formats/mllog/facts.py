"""What MLPerf logs: what the log states of its size tell the runs table (world size, nodes,
launcher, job id), declared with :func:`dptrace.runs.register_facts`."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ... import runs
from ...runs import Facts, Rows, register_facts


def _from_mllog(rows: Rows, events: pd.DataFrame | None) -> None:
    """Last, when nothing else said it: what an MLPerf log states of its size
    (:func:`dptrace.formats.mllog.compute.world_of`: the ranks that printed :::MLLOG lines, the
    batch sizes, the launcher's lines, the platform) and the N of ``submission_platform``
    ('8xNVIDIA DGX A100': N systems). A number beyond int64 is never read."""
    from .compute import world_of

    for run, g in runs.per_run(events):
        world, why, nodes = world_of(g)
        if world is not None:
            runs.set_world(rows[run], world, str(why))
        if nodes is not None and rows[run]["nodes"] is None:
            rows[run]["nodes"] = nodes


def _step(rows: Rows, tables: Mapping[str, pd.DataFrame]) -> None:
    _from_mllog(rows, runs.columns(tables.get("mllog"), "key", "value", "rank"))


register_facts(Facts("mllog", _step, 90))

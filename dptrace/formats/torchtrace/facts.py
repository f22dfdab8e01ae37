"""What PyTorch profiler traces: distributedInfo.world_size tell the runs table (world size, nodes,
launcher, job id), declared with :func:`dptrace.runs.register_facts`."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ... import runs
from ...runs import Facts, Rows, register_facts


def _from_torchtrace(rows: Rows, traces: pd.DataFrame | None) -> None:
    """PyTorch profiler traces: distributedInfo.world_size, when the run's traces agree."""
    for run, g in runs.per_run(traces):
        runs.set_world_of(rows[run], runs.unique_values(g["world_size"]),
                          "PyTorch profiler distributedInfo", "PyTorch profiler traces disagree")


def _step(rows: Rows, tables: Mapping[str, pd.DataFrame]) -> None:
    _from_torchtrace(rows, runs.columns(tables.get("torch_traces"), "world_size"))


register_facts(Facts("torchtrace", _step, 40))

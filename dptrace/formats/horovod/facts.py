"""What Horovod timelines: the ranks tell the runs table (world size, nodes, launcher, job id),
declared with :func:`dptrace.runs.register_facts`."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ... import runs
from ...runs import Facts, Rows, register_facts


def _from_horovod(rows: Rows, timelines: pd.DataFrame | None) -> None:
    for run, g in runs.per_run(timelines):
        sizes = [int(v) for v in runs.unique_values(g["ranks"]) if int(v) > 0]
        runs.set_world_of(rows[run], sizes, "Horovod timeline ranks", "Horovod timelines disagree")


def _step(rows: Rows, tables: Mapping[str, pd.DataFrame]) -> None:
    _from_horovod(rows, tables.get("hvd_runs"))


register_facts(Facts("horovod", _step, 30))

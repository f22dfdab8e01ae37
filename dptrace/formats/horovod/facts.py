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
        if len(sizes) == 1:
            runs.set_world(rows[run], sizes[0], "Horovod timeline ranks")
        elif sizes and rows[run]["world_size"] is None:
            rows[run]["world_size_from"] = ("Horovod timelines disagree ("
                                            + ", ".join(map(str, sizes)) + " ranks)")


def _step(rows: Rows, tables: Mapping[str, pd.DataFrame]) -> None:
    _from_horovod(rows, tables.get("hvd_runs"))


register_facts(Facts("horovod", _step, 30))

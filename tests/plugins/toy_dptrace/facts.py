"""What a toy profile tells the runs table: its ranks are the world size."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from dptrace import runs
from dptrace.runs import Facts, Rows, register_facts


def _step(rows: Rows, tables: Mapping[str, pd.DataFrame]) -> None:
    for run, g in runs.per_run(tables.get("toy_ranks")):
        runs.set_world(rows[run], g["rank"].nunique(), "toy profile ranks")


register_facts(Facts("toy", _step, order=95))

"""What nccl-tests: the ranks and hosts of a run of benchmarks only tell the runs table (world
size, nodes, launcher, job id), declared with :func:`dptrace.runs.register_facts`."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ... import runs
from ...runs import Facts, Rows, register_facts


def _from_nccltests(rows: Rows, tests: pd.DataFrame | None) -> None:
    """Last, when nothing else said it: the ranks and hosts of a run's nccl-tests (a run
    of benchmarks only); tests of several sizes say nothing."""
    for run, g in runs.per_run(tests):
        sizes, hosts = runs.unique_values(g["nranks"]), runs.unique_values(g["nhosts"])
        if len(sizes) == 1:
            runs.set_world(rows[run], sizes[0], "nccl-tests '# Using devices' ranks")
        if len(hosts) == 1 and rows[run]["nodes"] is None:
            rows[run]["nodes"] = int(hosts[0])


def _step(rows: Rows, tables: Mapping[str, pd.DataFrame]) -> None:
    _from_nccltests(rows, runs.columns(tables.get("nccl_tests_summary"), "nranks", "nhosts"))


register_facts(Facts("nccltests", _step, 70))

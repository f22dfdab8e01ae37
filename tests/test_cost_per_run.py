"""Run-local derived tables (issue 33: the cost of a small run): a table declared
``per_run`` is sliced out of the report's table for each run's context, so each run's rows
there must be what the table computed on that run alone holds, to the last bit (a
finding's value is printed in full). Checked on the fixture folders that hold several runs
of MPI profiles, for the MPI tables declared run-local (``communication.message_sizes``
since this audit, ``communication.ranks`` and ``communication.jobs`` before), and the
reasons two are not: ``communication.routines`` (a run with routine rows but no rank rows)
and ``communication.small_messages`` (a run's sums in the whole table differ in the last
place)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace.analyses import Analyses, derived

FIXTURES = Path(__file__).resolve().parent / "fixtures"
#: folders of several runs with MPI profiles (mpitrace, mpiP, Horovod + mpitrace)
FOLDERS = ("mpitrace", "straggler", "mpip", "horovod_mpi")
RUN_LOCAL = ("communication.message_sizes", "communication.ranks", "communication.jobs")
OPTIONS = {"warmup": 0.1, "thresholds": {}, "view": "report"}


def _values(df: pd.DataFrame) -> pd.DataFrame:
    """``df``'s values as Python objects, every null None, on the index 0..n-1 (a run's
    slice of a typed table holds <NA> where its table alone may hold None or NaN)."""
    out = df.reset_index(drop=True).astype(object)
    return out.where(out.notna(), None)


@pytest.fixture(scope="module", params=FOLDERS)
def loaded(request: pytest.FixtureRequest) -> dptrace.Dataset:
    ds = dptrace.load(FIXTURES / request.param, executor="serial")
    assert len(ds.run_ids) >= 2, request.param
    return ds


def test_the_mpi_tables_are_declared_run_local() -> None:
    tables = derived(["mpi_ranks"])
    assert all(tables[name].per_run for name in RUN_LOCAL)
    assert not tables["communication.routines"].per_run
    assert not tables["communication.small_messages"].per_run


@pytest.mark.parametrize("name", RUN_LOCAL)
def test_each_run_context_holds_the_table_of_the_run_alone(loaded: dptrace.Dataset,
                                                          name: str) -> None:
    a = Analyses(loaded, OPTIONS)
    whole = a[name]
    parts = loaded.by_run()
    compared = 0
    for run, ctx in a.of_runs().items():
        mine, alone = ctx[name], Analyses(parts[run], OPTIONS)[name]
        assert (mine is None) == (alone is None), (name, run)
        if mine is None:
            continue
        assert list(mine.columns) == list(alone.columns), (name, run)
        pd.testing.assert_frame_equal(_values(mine), _values(alone), check_exact=True,
                                      obj=f"{name} {run}")
        compared += len(mine)
    if whole is not None:   # every row of the whole table was some run's
        assert compared == len(whole), name


def test_routines_are_not_run_local() -> None:
    """mpitrace's README example has routine tables and no rank table: alone, the run has
    no ``communication.routines`` (rank profiles are what the table needs), while the
    whole folder's table, made because other runs have rank profiles, holds its rows."""
    ds = dptrace.load(FIXTURES / "mpitrace", executor="serial")
    a = Analyses(ds, OPTIONS)
    whole = a["communication.routines"]
    assert whole is not None
    parts = ds.by_run()
    runs = set(whole["run"].astype(str))
    alone_none = [r for r in runs if Analyses(parts[r], OPTIONS)["communication.routines"]
                  is None]
    assert alone_none, "every run's routines stand alone: declare the table per_run"


def test_small_messages_are_not_run_local_to_the_last_bit() -> None:
    """The whole folder's small-Allreduce sums of a run differ from the run's own in the
    last place on pandas 3 (it sums the groups of several runs otherwise; pandas 2 gives
    the same sums, CI's Python 3.10 leg): slicing them would change a
    ``small_message_allreduce`` finding's value. Equal to the run's own but in the last
    places wherever they differ."""
    ds = dptrace.load(FIXTURES / "mpitrace", executor="serial")
    a = Analyses(ds, OPTIONS)
    whole = a["communication.small_messages"]
    assert whole is not None
    parts = ds.by_run()
    differ = []
    for run, mine in whole.groupby(whole["run"].astype(str), sort=False):
        alone = Analyses(parts[run], OPTIONS)["communication.small_messages"]
        assert alone is not None
        if mine["small_time_s"].tolist() != alone["small_time_s"].tolist():
            differ.append(run)
        pd.testing.assert_series_equal(mine["small_time_s"].reset_index(drop=True),
                                       alone["small_time_s"].reset_index(drop=True),
                                       check_exact=False, rtol=1e-12, check_dtype=False)
    if int(pd.__version__.split(".")[0]) >= 3:
        assert differ, "every run's sums stand alone: declare the table per_run"

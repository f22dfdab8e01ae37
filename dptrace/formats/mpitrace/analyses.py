"""The derived tables of MPI profiles (mpitrace, and mpiP's rows in the same tables), read
by the communication rules and sections through :class:`dptrace.analyses.Analyses`."""

from __future__ import annotations

import pandas as pd

from ...analyses import Analyses, Derived, register_derived
from . import communication as comm


def _profiled(a: Analyses) -> bool:
    return a.has("mpi_ranks")


def _raw(name: str) -> Derived:
    """A rank-profile table as the rules read it: present (maybe empty) when the Dataset has
    rank profiles at all."""
    def build(a: Analyses) -> pd.DataFrame | None:
        return a.table(name) if _profiled(a) else None
    return Derived(name, build, f"the {name} table, when the Dataset has rank profiles")


def _rank_times(a: Analyses) -> pd.DataFrame | None:
    return comm.rank_times(a.table("mpi_ranks")) if _profiled(a) else None


def _small_messages(a: Analyses) -> pd.DataFrame | None:
    if not a.has("mpi_routines"):
        return None
    return comm.small_messages(a.table("mpi_messages"), a.table("mpi_routines"))


def _jobs(a: Analyses) -> pd.DataFrame | None:
    rt = a["communication.ranks"]
    return None if rt is None else comm.job_summary(rt, a.table("mpi_jobs"))


def _routines(a: Analyses) -> pd.DataFrame | None:
    return comm.top_routines(a.table("mpi_routines"), n=None) if _profiled(a) else None


def _message_sizes(a: Analyses) -> pd.DataFrame | None:
    return comm.message_sizes(a.table("mpi_messages")) if a.has("mpi_messages") else None


register_derived(
    _raw("mpi_ranks"), _raw("mpi_routines"), _raw("mpi_messages"),
    Derived("communication.ranks", _rank_times, "MPI time per rank (analysis.communication."
            "rank_times)", per_run=True),
    # not run-local to the last bit: a run's sums of small Allreduces in the whole table
    # differ from its own in the last place (mpitrace's alcfws_theta_knl32: 694.2420000000001
    # s against 694.242 s; the finding's value would change)
    Derived("communication.small_messages", _small_messages, "small Allreduces per job"),
    Derived("communication.jobs", _jobs, "MPI share per job", per_run=True),
    # not run-local: a run with routine rows but no rank rows (mpitrace's README example:
    # its mpi_routines without mpi_ranks) has none alone (_profiled), rows in the whole
    Derived("communication.routines", _routines, "MPI routines by time, every one"),
    Derived("communication.message_sizes", _message_sizes, "bytes per collective and bin",
            per_run=True),
)
# run-local (per_run): message_sizes groups by the run first (analysis.keys) and sorts
# within it; a run's rows of the whole table equal, to the last bit, the table of the run
# alone on every realdata and fixture folder of several runs (tests/test_cost_per_run.py)

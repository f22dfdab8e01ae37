"""The mpiP format's own table, ``mpi_callsites``; mpiP also fills mpitrace's ``mpi_ranks``
and ``mpi_routines`` (:mod:`dptrace.formats.mpitrace.tables`), so every communication
analysis reads both tools."""

from __future__ import annotations

from ...schema import LINENO, SOURCE, Column, Table, register_table
from ..mpitrace import tables as _mpi  # noqa: F401  (mpi_ranks, mpi_routines registered)

_c = Column
_JOB = _c("job", "category", "the report: its file name without .mpiP (plus #k when a "
          "document holds several reports)")

MPI_CALLSITES = register_table(Table(
    "mpi_callsites",
    "mpiP: one row per callsite and rank ('Callsite Time statistics' and 'Callsite Message "
    "Sent statistics' of a full report), or per callsite with rank null (a concise report, "
    "or a full one whose per-rank rows were left out by a -t threshold), with where the "
    "call is from ('Callsites').",
    (
        SOURCE, _JOB,
        _c("rank", "Int64", "MPI rank of the row; null for a row of every rank"),
        _c("nranks", "Int64", "MPI ranks in the job (tasks of the report)"),
        _c("site", "Int64", "mpiP's callsite id (the report's own numbering)"),
        _c("routine", "category", "MPI routine with its MPI_ prefix, as mpitrace names it: "
           "MPI_Allreduce, ..."),
        _c("calls", "Int64", "calls made at the callsite (Count); null in a concise report"),
        _c("time_s", "float64", "time in the calls: Count x Mean of a full report, Tasks x "
           "Mean of a concise one (mpiP prints 3-4 significant digits)", "s"),
        _c("call_max_us", "float64", "longest call (full report): 'Callsite Time "
           "statistics' Max (ms) x 1000", "us"),
        _c("call_mean_us", "float64", "mean call (full report): 'Callsite Time statistics' "
           "Mean (ms) x 1000", "us"),
        _c("call_min_us", "float64", "shortest call (full report): 'Callsite Time "
           "statistics' Min (ms) x 1000", "us"),
        _c("app_pct", "float64", "time_s as a share of the rank's app time (App%)", "%"),
        _c("mpi_pct", "float64", "time_s as a share of the rank's MPI time (MPI%)", "%"),
        _c("tasks", "Int64", "concise report: tasks that called at the callsite"),
        _c("task_max_s", "float64", "concise report: the largest task's time there", "s"),
        _c("task_min_s", "float64", "concise report: the smallest task's time there", "s"),
        _c("max_rank", "Int64", "concise report: the rank with task_max_s (MaxRnk)"),
        _c("min_rank", "Int64", "concise report: the rank with task_min_s (MinRnk)"),
        _c("bytes", "float64", "bytes sent from the callsite (Sum; Tasks x Mean in a concise "
           "report; 4 significant digits); null where mpiP counts no sent bytes", "bytes"),
        _c("msg_max_bytes", "float64", "largest message sent (full report)", "bytes"),
        _c("msg_mean_bytes", "float64", "mean message sent (full report)", "bytes"),
        _c("msg_min_bytes", "float64", "smallest message sent (full report)", "bytes"),
        _c("file", "string", "source file of the call (level 0 of 'Callsites'), or its "
           "address when mpiP could not look it up"),
        _c("line", "Int64", "its line; null for an address"),
        _c("function", "string", "the function that made the call ([unknown] when mpiP "
           "could not name it)"),
        _c("call_path", "string", "every frame of the callsite, innermost first, as "
           "'function (file:line)' joined by ' < '"),
        LINENO,
    ),
    key=("job", "rank", "site"),
), place=31)

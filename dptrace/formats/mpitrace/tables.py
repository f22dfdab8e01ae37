"""The IBM mpitrace format's tables: ``mpi_*`` (see docs/mpitrace.md)."""

from __future__ import annotations

from ...schema import SOURCE, Column, Table, register_table

_c = Column

# --- IBM mpitrace profiles (mpi_profile.<job>.<rank>); see docs/mpitrace.md ---------------
_JOB = _c("job", "category",
          "job id from the file name mpi_profile.<job>.<rank> (<job>.<MMDDhhmmss> with "
          "ADD_TIMESTAMP); for a profile pasted in a document: the file name, plus #k when it "
          "holds several; for an mpiP report: its file name without .mpiP")
_RANK = _c("rank", "Int64", "MPI rank the profile (or row) is about; null when a pasted "
           "excerpt does not say, or (mpiP) for a row of every rank")
_NRANKS = _c("nranks", "Int64", "MPI ranks in the job (MPI_COMM_WORLD size)")
_ROUTINE = _c("routine", "category", "MPI routine as mpitrace labels it: MPI_Allreduce, ...")
_CALLS = _c("calls", "Int64", "number of calls")
_AVG = _c("avg_bytes", "float64", "average message size as printed (1 decimal)", "bytes")
_BYTES = _c("bytes", "float64", "calls x avg_bytes: total bytes (exact to 0.05 x calls)",
            "bytes")
_TIME = _c("time_s", "float64", "wall time spent in the calls, waiting included", "s")

MPI_ROUTINES = register_table(Table(
    "mpi_routines",
    "mpitrace: one row per MPI routine per rank profile (the flat 'MPI Routine #calls "
    "avg. bytes time(sec)' table). mpiP: one row per routine per rank (its callsite rows "
    "summed), or per routine of the job with rank null where the report has no whole "
    "per-rank rows (concise, or a -t threshold).",
    (SOURCE, _JOB, _RANK, _NRANKS, _ROUTINE, _CALLS, _AVG, _BYTES, _TIME,
     _c("region", "category", "what the times cover: init_finalize (MPI_Init to "
        "MPI_Finalize), pcontrol (MPI_Pcontrol(1) to (0)) or summary_start")),
    key=("job", "rank", "routine"),
), place=30)

MPI_MESSAGES = register_table(Table(
    "mpi_messages",
    "mpitrace: one row per message-size bin per routine per rank ('Message size "
    "distributions'). Bins are powers of two; mpitrace does not print them, so each row's "
    "bin is recovered from its average size.",
    (SOURCE, _JOB, _RANK, _NRANKS, _ROUTINE,
     _c("bin", "Int64", "mpitrace's bin: 0 = 0 bytes, 1 = 1-4 bytes, k >= 2 = "
        "(2^k, 2^(k+1)] bytes"),
     _c("bin_lo_bytes", "Int64", "smallest message size the bin holds (inclusive)", "bytes"),
     _c("bin_hi_bytes", "Int64", "largest message size the bin holds (inclusive)", "bytes"),
     _CALLS, _AVG, _BYTES, _TIME),
    key=("job", "rank", "routine", "bin"),
), place=30)

MPI_RANKS = register_table(Table(
    "mpi_ranks",
    "mpitrace: per-rank totals. A rank's own profile gives one row (origin 'own'); rank 0's "
    "'MPI timing summary for all ranks' gives one row per rank of the job (origin "
    "'rank0_table'), so a rank can have both; communication.rank_times() keeps one per rank.",
    (SOURCE, _JOB, _RANK, _NRANKS,
     _c("origin", "category", "own (the rank's own profile), rank0_table (rank 0's table "
        "of all ranks, 2 decimals) or mpip_report (an mpiP report's MPI Time row: AppTime "
        "as elapsed_s, MPITime as comm_time_s, 3 significant digits; a concise report's "
        "Task Time Statistics name the ranks of the largest and smallest times only)"),
     _c("host", "string", "host name (rank 0's table only)"),
     _c("cpu", "Int64", "CPU the rank ran on at the end (newer mpitrace, rank 0's table)"),
     _c("comm_time_s", "float64", "total communication time: time in MPI routines "
        "(plus synchronization time with COLLECTIVE_BARRIER)", "s"),
     _c("elapsed_s", "float64", "elapsed (wall) time of the profiled region", "s"),
     _c("user_s", "float64", "user CPU time", "s"),
     _c("system_s", "float64", "system CPU time", "s"),
     _c("max_rss_mib", "float64", "max resident set size, converted to MiB (mpitrace's "
        "'MBytes' are ru_maxrss/1024, i.e. MiB)", "MiB"),
     _c("switches", "Int64", "involuntary context switches (rank 0's table)"),
     _c("sync_time_s", "float64", "synchronization time measured by COLLECTIVE_BARRIER", "s"),
     _c("comm_role", "category", "minimum, median or maximum when the profile says this rank "
        "had that communication time")),
    key=("job", "rank", "origin"),
), place=30)

MPI_JOBS = register_table(Table(
    "mpi_jobs",
    "mpitrace: the job summary a profile states (rank 0's 'Summary for all tasks', and the "
    "'Rank N reported the largest ...' lines), one row per profile that has one.",
    (SOURCE, _JOB, _RANK, _NRANKS,
     _c("min_comm_rank", "Int64", "rank with the minimum communication time"),
     _c("min_comm_s", "float64", "its communication time", "s"),
     _c("median_comm_rank", "Int64", "rank with the median communication time"),
     _c("median_comm_s", "float64", "its communication time", "s"),
     _c("max_comm_rank", "Int64", "rank with the maximum communication time"),
     _c("max_comm_s", "float64", "its communication time", "s"),
     _c("max_rss_rank", "Int64", "rank that reported the largest memory utilization"),
     _c("max_rss_mib", "float64", "its max resident set size", "MiB"),
     _c("max_elapsed_rank", "Int64", "rank that reported the largest elapsed time"),
     _c("max_elapsed_s", "float64", "its elapsed time", "s")),
    key=("job", "rank"),
), place=30)

MPI_COMM_SIZES = register_table(Table(
    "mpi_comm_sizes",
    "mpitrace with PROFILE_BY_COMMUNICATOR: one row per routine per communicator-size bin "
    "('Data for communicator sizes a to b, avg size = ...').",
    (SOURCE, _JOB, _RANK, _NRANKS,
     _c("comm_size_lo", "Int64", "smallest communicator size in the bin"),
     _c("comm_size_hi", "Int64", "largest communicator size in the bin"),
     _c("comm_size_avg", "float64", "average communicator size of the calls in the bin"),
     _ROUTINE, _CALLS, _AVG, _TIME),
    key=("job", "rank", "comm_size_lo", "routine"),
), place=30)

MPI_CALL_STACKS = register_table(Table(
    "mpi_call_stacks",
    "mpitrace with PROFILE_BY_CALL_STACK: MPI time per call stack and routine. The "
    "addresses are not kept; a copy of the profile translated by mpitrace's util/translate.py "
    "(addr2line) adds the function names and file:line, and replaces the rows of its "
    "profile when both are read.",
    (SOURCE, _JOB, _RANK, _NRANKS,
     _c("stack", "Int64", "call stack index as printed"),
     _c("stack_time_s", "float64", "time in MPI routines from this call stack", "s"),
     _ROUTINE, _CALLS, _TIME,
     _c("function", "string", "translated profiles: the function at the top of the stack "
        "(the one that made the MPI call, at TRACEBACK_LEVEL); null when not translated or "
        "when addr2line printed ??"),
     _c("call_site", "string", "translated profiles: that function's file:line as addr2line "
        "printed it (without '(discriminator N)'); mpitrace records return addresses, so "
        "this is the line of the MPI call or the one after it; null when unknown"),
     _c("call_path", "string", "translated profiles: every frame of the stack, innermost "
        "first, as 'function (file:line)' joined by ' < '; ?? for a frame addr2line could "
        "not name")),
    key=("job", "rank", "stack", "routine"),
), place=30)

MPI_HISTOGRAM = register_table(Table(
    "mpi_histogram",
    "mpitrace above 32 ranks: rank 0's 'Histogram of times spent in MPI'.",
    (SOURCE, _JOB, _NRANKS,
     _c("comm_time_s", "float64", "bin centre as printed: communication time", "s"),
     _c("ranks", "Int64", "ranks whose communication time falls in the bin")),
    key=("job", "comm_time_s"),
), place=30)

"""Every table dptrace produces: its columns, dtypes, units and meaning.

This module is the single definition. Parsers build plain column lists and call
:func:`conform`; ``dptrace schema`` and the README's schema reference are generated
from :data:`TABLES`. Column names carry their unit (``_s``, ``_us``, ``_bytes``,
``_pct``, ``_per_s``); counts are bare.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd


@dataclass(frozen=True)
class Column:
    """One column: name, pandas dtype, unit ("" when dimensionless) and meaning."""

    name: str
    dtype: str
    doc: str
    unit: str = ""


@dataclass(frozen=True)
class Table:
    """A named table: its columns in order and the columns that identify a row."""

    name: str
    doc: str
    columns: tuple[Column, ...]
    key: tuple[str, ...] = field(default_factory=tuple)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def loaded_columns(self) -> tuple[Column, ...]:
        """The columns as ``load`` gives them: ``run`` first, then the parsers' columns."""
        return self.columns if "run" in self.names else (RUN, *self.columns)

    def empty(self) -> pd.DataFrame:
        """A zero-row frame with this table's columns and dtypes (``run`` first, as
        ``load`` gives every table)."""
        df = conform({c.name: [] for c in self.columns}, self)
        if "run" not in df.columns:
            df.insert(0, "run", pd.Categorical([]))
        return df


def _c(name: str, dtype: str, doc: str, unit: str = "") -> Column:
    return Column(name, dtype, doc, unit)


#: the column ``load`` puts first in every table: which run the row belongs to (see the
#: ``runs`` table); parsers do not fill it, the loader does from ``source``
RUN = _c("run", "category", "the run the row belongs to (see the runs table): the label given "
         "as LABEL=PATH, else the directory, job id or file it came from")
_SOURCE = _c("source", "string", "input path as given (a member of an archive: path::member)")
_INSTANCE = _c(
    "instance", "string",
    "who printed the line: the launcher prefix's rank (srun --label, mpirun --tag-output, "
    "torchrun [default7]:), else numbered 0, 1, ... in order of appearance",
)
_RANK_LOG = _c("rank", "Int64", "the process's rank in the job's world, where the launcher "
              "prefix says it: srun --label (3: ), mpirun --tag-output ([1,3]<stdout>:) and a "
              "bare [3] tag; null otherwise (torchrun's [default3]: is a local rank)")
_PATTERN = _c("pattern", "category", "recogniser that matched (sambaflow, hf_trainer, tqdm, ...)")
_STEP = _c("step", "Int64", "step or iteration number printed on the line, if any")
_EPOCH = _c("epoch", "float64", "epoch printed on the line, if any")
_LINENO = _c("lineno", "Int64", "1-based physical line number (\\r does not start a line)")
#: values of throughput.phase, in order of importance (training first)
PHASES = ("train", "eval", "setup")

THROUGHPUT = Table(
    "throughput",
    "One row per throughput figure printed in a training log.",
    (
        _SOURCE, _INSTANCE, _RANK_LOG, _PATTERN,
        _c("name", "string", "the key as printed: 'e2e samples_per_sec', 'CurrSamplesPerSec', ..."),
        _c("label", "string", "tqdm bar description, else null"),
        _c("metric", "category",
           "samples_per_s, sequences_per_s, images_per_s, tokens_per_s, iterations_per_s, "
           "steps_per_s or <unit>_per_s"),
        _c("value", "float64", "the rate, in the unit named by metric", "1/s"),
        _c("scope", "category",
           "instance (one process or SambaNova instance), device (one GPU) or global (whole job)"),
        _STEP, _EPOCH, _LINENO,
        _c("phase", "category",
           "what the figure measures: train (training steps), eval (a bar labelled as "
           "evaluation, validation or testing, or an eval_/test_ figure) or setup (a bar of "
           "work around training, told by its description: Downloading, Fetching # files, "
           "Loading checkpoint shards, Map, Tokenizing, Generating train split, ...). Only train "
           "is training throughput; reports show it first and setup last"),
    ),
    key=("source", "lineno", "name", "metric"),
)

TRAIN_METRICS = Table(
    "train_metrics",
    "Training metrics other than throughput (loss, learning rate, step time, ...).",
    (
        _SOURCE, _INSTANCE, _RANK_LOG, _PATTERN,
        _c("name", "string", "snake_case metric name with its unit: loss, lm_loss, "
           "learning_rate, grad_norm, iteration_time_s, ..."),
        _c("value", "float64", "the value, in the unit named by name"),
        _STEP, _EPOCH, _LINENO,
    ),
    key=("source", "lineno", "name"),
)

SOURCES = Table(
    "sources",
    "One row per input.",
    (
        _SOURCE,
        _c("format", "string", "detected (or forced) format, null when unknown"),
        _c("variant", "string", "format variant or generation, when the parser tells one"),
        _c("status", "string", "ok, partial (something skipped), empty (no records found), "
           "failed, unknown (no format recognised a file named on its own), skipped (a file "
           "of a directory or glob that no format recognises, e.g. a README: not a failure)"),
        _c("rows", "Int64", "rows the input contributed over all tables"),
        _c("size_bytes", "Int64", "size on disk", "bytes"),
        _c("message", "string", "why the status is not ok"),
    ),
    key=("source",),
)

PROBLEMS = Table(
    "problems",
    "Everything skipped or suspicious, with where it was found.",
    (
        _SOURCE,
        _c("line", "Int64", "1-based line, when known"),
        _c("severity", "string", "error (something was skipped), warning (kept, but "
           "suspicious) or info (noted, nothing lost: a file of a directory or glob that no "
           "format recognises, a FIFO or device found there, a symbolic-link loop not "
           "followed again, an input that took long; does not change the exit code)"),
        _c("message", "string", "what happened"),
    ),
)

_PCT = "share of the sampling interval the tile spent"
TILES = Table(
    "tiles",
    "SambaNova sntilestat: one row per tile per snapshot (a capture of `watch sntilestat` "
    "holds many snapshots).",
    (
        _SOURCE,
        _c("snapshot", "Int64", "0, 1, ... in order within the source"),
        _c("time", "datetime64[ns]", "when the snapshot was taken, from a `watch` header; "
           "else null"),
        _c("host", "string", "host named by a `watch` header; else null"),
        _c("xrdu", "Int64", "XRDU number from /XRDU_x/RDU_y/TILE_z"),
        _c("rdu", "Int64", "RDU number within the XRDU"),
        _c("tile", "Int64", "tile number within the RDU (SN10: 0-3, SN30: 0-7)"),
        _c("idle_pct", "float64", f"{_PCT} idle", "%"),
        _c("exec_pct", "float64", f"{_PCT} executing", "%"),
        _c("pload_pct", "float64", f"{_PCT} loading a program", "%"),
        _c("aload_pct", "float64", f"{_PCT} loading arguments", "%"),
        _c("chkpt_pct", "float64", f"{_PCT} checkpointing", "%"),
        _c("quiesce_pct", "float64", f"{_PCT} quiescing", "%"),
        _c("pid", "Int64", "process owning the tile; null for an idle tile"),
        _c("user", "string", "owner of the process; null for an idle tile"),
        _c("command", "string", "command, as sntilestat cut it (fixed width) or as wrapped in "
           "copies, joined"),
        _LINENO,
    ),
    key=("source", "snapshot", "xrdu", "rdu", "tile"),
)

RUNS = Table(
    "runs",
    "One row per run: one execution of a job, the inputs it left and what they say of it "
    "(how inputs group into runs: see the README).",
    (
        Column("run", "category", "the run's id: its label, made unique with #2, #3"),
        Column("label", "string", "the label the user gave (LABEL=PATH), else the "
                      "directory's name, 'job <id>' or the file's name"),
        Column("job_id", "string", "the job id that file names (slurm-<id>.out, "
                      "mpi_profile.<id>.<rank>) or the MPI profiles give; null when none"),
        Column("world_size", "Int64", "processes (ranks) in the job, where an input "
                      "says it; null when none does"),
        Column("nodes", "Int64", "distinct hosts the MPI profiles name; null when "
                      "unknown"),
        Column("launcher", "string", "srun, torchrun, horovodrun, sambaflow, ... where "
                      "a file name or a line says it; else null"),
        Column("sources", "Int64", "inputs in the run"),
        Column("world_size_from", "string", "where world_size came from: 'mpitrace "
                      "nranks', 'Horovod timeline ranks', 'Horovod benchmark: Total img/sec "
                      "on 4 device(s)', 'launcher prefixes: ranks 0-15 printed'; or why "
                      "it is unknown"),
    ),
    key=("run",),
)

TABLES: dict[str, Table] = {
    t.name: t for t in (THROUGHPUT, TRAIN_METRICS, TILES, SOURCES, PROBLEMS, RUNS)
}


def register_table(table: Table) -> Table:
    """Add a table definition (used by parser modules that bring new tables)."""
    TABLES[table.name] = table
    return table


def conform(data: pd.DataFrame | Mapping[str, Any], table: Table) -> pd.DataFrame:
    """Return ``data`` as a DataFrame with ``table``'s columns, in order, with its dtypes.

    Missing columns are added as nulls; extra columns are kept after the schema's.
    """
    df = data if isinstance(data, pd.DataFrame) else pd.DataFrame(dict(data))
    n = len(df)
    out: dict[str, Any] = {}
    for col in table.columns:
        values = df[col.name] if col.name in df else pd.Series([None] * n, dtype="object")
        out[col.name] = _as_dtype(values, col.dtype)
    extra = {k: df[k] for k in df.columns if k not in out}
    frame = pd.DataFrame({**out, **extra})
    return frame.reset_index(drop=True)


#: the one text dtype: Arrow-backed on every pandas (pandas 2 would keep whichever storage a
#: column arrived with, so the same table could come out in two dtypes by route)
STRING = pd.StringDtype("pyarrow")


def _as_dtype(values: Any, dtype: str) -> pd.Series:
    s = pd.Series(values).reset_index(drop=True)
    if dtype == "string":
        return s if s.dtype == STRING else s.astype(STRING)
    if str(s.dtype) == dtype:
        return s
    if dtype.startswith("datetime64"):
        return pd.to_datetime(s, errors="coerce").astype(dtype)
    if dtype == "float64":
        return pd.to_numeric(s, errors="coerce").astype("float64")
    if dtype == "Int64":
        if pd.api.types.is_integer_dtype(s.dtype):
            return s.astype("Int64")
        return pd.to_numeric(s, errors="coerce").astype("Int64")
    return s.astype(dtype)


def describe() -> pd.DataFrame:
    """The schema as a table: table, column, dtype, unit, doc."""
    rows = [
        (t.name, c.name, c.dtype, c.unit, c.doc) for t in TABLES.values()
        for c in t.loaded_columns
    ]
    return pd.DataFrame(rows, columns=["table", "column", "dtype", "unit", "doc"])


def markdown() -> str:
    """The schema reference as Markdown (what the README embeds)."""
    parts = []
    for t in TABLES.values():
        parts.append(f"### `{t.name}`\n\n{t.doc}\n\n| column | dtype | meaning |\n|---|---|---|")
        for c in t.loaded_columns:
            doc = c.doc.replace("|", "\\|")
            parts.append(f"| `{c.name}` | {c.dtype} | {doc} |")
        parts.append("")
    return "\n".join(parts)


# --- IBM mpitrace profiles (mpi_profile.<job>.<rank>); see docs/mpitrace.md ---------------
_JOB = _c("job", "category",
          "job id from the file name mpi_profile.<job>.<rank> (<job>.<MMDDhhmmss> with "
          "ADD_TIMESTAMP); for a profile pasted in a document: the file name, plus #k when it "
          "holds several")
_RANK = _c("rank", "Int64", "MPI rank the profile (or row) is about; null when a pasted "
           "excerpt does not say")
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
    "avg. bytes time(sec)' table).",
    (_SOURCE, _JOB, _RANK, _NRANKS, _ROUTINE, _CALLS, _AVG, _BYTES, _TIME,
     _c("region", "category", "what the times cover: init_finalize (MPI_Init to "
        "MPI_Finalize), pcontrol (MPI_Pcontrol(1) to (0)) or summary_start")),
    key=("job", "rank", "routine"),
))

MPI_MESSAGES = register_table(Table(
    "mpi_messages",
    "mpitrace: one row per message-size bin per routine per rank ('Message size "
    "distributions'). Bins are powers of two; mpitrace does not print them, so each row's "
    "bin is recovered from its average size.",
    (_SOURCE, _JOB, _RANK, _NRANKS, _ROUTINE,
     _c("bin", "Int64", "mpitrace's bin: 0 = 0 bytes, 1 = 1-4 bytes, k >= 2 = "
        "(2^k, 2^(k+1)] bytes"),
     _c("bin_lo_bytes", "Int64", "smallest message size the bin holds (inclusive)", "bytes"),
     _c("bin_hi_bytes", "Int64", "largest message size the bin holds (inclusive)", "bytes"),
     _CALLS, _AVG, _BYTES, _TIME),
    key=("job", "rank", "routine", "bin"),
))

MPI_RANKS = register_table(Table(
    "mpi_ranks",
    "mpitrace: per-rank totals. A rank's own profile gives one row (origin 'own'); rank 0's "
    "'MPI timing summary for all ranks' gives one row per rank of the job (origin "
    "'rank0_table'), so a rank can have both; communication.rank_times() keeps one per rank.",
    (_SOURCE, _JOB, _RANK, _NRANKS,
     _c("origin", "category", "own (the rank's own profile) or rank0_table (rank 0's table "
        "of all ranks, 2 decimals)"),
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
))

MPI_JOBS = register_table(Table(
    "mpi_jobs",
    "mpitrace: the job summary a profile states (rank 0's 'Summary for all tasks', and the "
    "'Rank N reported the largest ...' lines), one row per profile that has one.",
    (_SOURCE, _JOB, _RANK, _NRANKS,
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
))

MPI_COMM_SIZES = register_table(Table(
    "mpi_comm_sizes",
    "mpitrace with PROFILE_BY_COMMUNICATOR: one row per routine per communicator-size bin "
    "('Data for communicator sizes a to b, avg size = ...').",
    (_SOURCE, _JOB, _RANK, _NRANKS,
     _c("comm_size_lo", "Int64", "smallest communicator size in the bin"),
     _c("comm_size_hi", "Int64", "largest communicator size in the bin"),
     _c("comm_size_avg", "float64", "average communicator size of the calls in the bin"),
     _ROUTINE, _CALLS, _AVG, _TIME),
    key=("job", "rank", "comm_size_lo", "routine"),
))

MPI_CALL_STACKS = register_table(Table(
    "mpi_call_stacks",
    "mpitrace with PROFILE_BY_CALL_STACK: MPI time per call stack and routine. The "
    "addresses are not kept; a copy of the profile translated by mpitrace's util/translate.py "
    "(addr2line) adds the function names and file:line, and replaces the rows of its "
    "profile when both are read.",
    (_SOURCE, _JOB, _RANK, _NRANKS,
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
))

MPI_HISTOGRAM = register_table(Table(
    "mpi_histogram",
    "mpitrace above 32 ranks: rank 0's 'Histogram of times spent in MPI'.",
    (_SOURCE, _JOB, _NRANKS,
     _c("comm_time_s", "float64", "bin centre as printed: communication time", "s"),
     _c("ranks", "Int64", "ranks whose communication time falls in the bin")),
    key=("job", "comm_time_s"),
))


# --- Horovod timelines (HOROVOD_TIMELINE=timeline.json); see docs/horovod.md ------------------
_HVD_SRC = Column("source", "category",
                  "input path as given (a member of an archive: path::member)")
_TENSOR = Column("tensor", "category", "tensor name from the pid's process_name record; "
                 "'(pid N)' when the file has none")
_PID = Column("pid", "Int64", "the timeline's pid for the tensor (Horovod numbers tensors 1, 2, "
              "... in order of first appearance)")
_OP = Column("op", "category", "collective: ALLREDUCE, ALLGATHER, BROADCAST, REDUCESCATTER, "
             "ALLTOALL, JOIN, BARRIER, ADASUM, ERROR (for a negotiation: the op negotiated)")
_OP_INDEX = Column("op_index", "Int64", "0, 1, ... per tensor: which op instance; a "
                   "negotiation shares the index of the op that follows it; null when unknown")
_START = Column("start_us", "float64", "start, from the first event of the file", "us")

HVD_ACTIVITIES = Table(
    "hvd_activities",
    "Horovod timeline: one row per B...E interval of a tensor (closed or still open), in file "
    "order.",
    (_HVD_SRC, _TENSOR, _PID, _OP, _OP_INDEX,
     Column("activity", "category", "the B record's name: NEGOTIATE_ALLREDUCE, ALLREDUCE, QUEUE, "
            "MEMCPY_IN_FUSION_BUFFER, NCCL_ALLREDUCE, ..."),
     Column("level", "category", "negotiate (NEGOTIATE_<OP>), op (the collective itself) or "
            "activity (nested in an op)"),
     Column("depth", "Int64", "nesting depth: 0 for negotiations and ops, 1 for activities"),
     _START,
     Column("dur_us", "float64", "duration; null when the interval is open, a time is unknown or "
            "the E is earlier than the B (flagged)", "us"),
     Column("complete", "bool", "False for a B with no E (a killed job or a cut file)")),
    key=("source", "pid", "start_us", "depth"),
)

HVD_TENSORS = Table(
    "hvd_tensors",
    "Horovod timeline: one row per op instance of a tensor (a top-level interval that is not "
    "a negotiation).",
    (_HVD_SRC, _TENSOR, _PID, _OP, _OP_INDEX, _START,
     Column("dur_us", "float64", "op duration, activities included; null when open, a time is "
            "unknown or the E is earlier than the B (flagged)", "us"),
     Column("negotiate_us", "float64", "duration of the negotiation just before the op; null "
            "when there is none (or it is open)", "us"),
     Column("dtype", "category", "element type from the closing E: float32, int64, ... "
            "(HOROVOD_FLOAT32 in some builds)"),
     Column("shape", "string", "shape as written: '[64, 3, 3, 3]'"),
     Column("bytes", "Int64", "prod(shape) x sizeof(dtype); null when either is missing",
            "bytes"),
     Column("fusion_group", "Int64", "0, 1, ... per file: ops fused into one response (tensors "
            "started together) share it"),
     Column("fused_tensors", "Int64", "tensors in the fusion group"),
     Column("complete", "bool", "False when the op has no E")),
    key=("source", "pid", "op_index"),
)

HVD_READY = Table(
    "hvd_ready",
    "Horovod timeline: one row per rank-ready tick of a negotiation (X events named by rank).",
    (_HVD_SRC, _TENSOR, _PID, _OP, _OP_INDEX,
     Column("rank", "Int64", "the rank that reported the tensor ready"),
     Column("ts_us", "float64", "when rank 0 heard of it, from the first event", "us"),
     Column("lag_us", "float64", "delay behind the first rank ready in the same negotiation",
            "us"),
     Column("last_ready", "bool", "the last rank to report: the one the others waited for"),
     Column("ranks_ready", "Int64", "ticks in the negotiation (1 means no comparison)")),
    key=("source", "pid", "op_index", "rank"),
)

HVD_CYCLES = Table(
    "hvd_cycles",
    "Horovod timeline: one row per CYCLE_START marker (HOROVOD_TIMELINE_MARK_CYCLES=1).",
    (_HVD_SRC, Column("cycle", "Int64", "0, 1, ... in file order"),
     Column("ts_us", "float64", "marker time, from the first event", "us"),
     Column("dur_us", "float64", "time to the next marker; null for the last, or when the next "
            "marker is earlier (flagged)", "us")),
    key=("source", "cycle"),
)

HVD_RUNS = Table(
    "hvd_runs",
    "Horovod timeline: one row per file: counts, time span and how the file ended.",
    (_HVD_SRC,
     Column("layout", "string", "per-line (Horovod <= 0.20.0), packed (>= 0.20.1: many events "
            "per line) or sagemaker-debugger (rewritten key order)"),
     Column("events", "Int64", "trace events decoded"),
     Column("tensors", "Int64", "tensors (pids) with events"),
     Column("ranks", "Int64", "distinct ranks seen in rank-ready ticks"),
     Column("negotiations", "Int64", "NEGOTIATE_* intervals"),
     Column("negotiations_with_ticks", "Int64", "negotiations holding rank-ready ticks (the "
            "response cache skips them)"),
     Column("ops", "Int64", "op instances (rows of hvd_tensors)"),
     Column("open_intervals", "Int64", "B records without an E"),
     Column("unmatched_ends", "Int64", "E records with no open B in their pid (ignored)"),
     Column("cycles", "Int64", "CYCLE_START markers"),
     Column("span_us", "float64", "first to last event", "us"),
     Column("ts_offset_us", "float64", "raw ts of the first event (subtracted from every ts)",
            "us"),
     Column("start_epoch_us", "Int64", "pid 0's start_time_since_epoch_in_micros (Horovod >= "
            "0.20.1): add ts_offset_us + ts for wall-clock time", "us"),
     Column("closed", "bool", "the JSON array ends with ']'"),
     Column("truncated", "bool", "the file ends inside a record (the job was killed while "
            "writing)")),
    key=("source",),
)

for _table in (HVD_ACTIVITIES, HVD_TENSORS, HVD_READY, HVD_CYCLES, HVD_RUNS):
    register_table(_table)


# --- Findings (dptrace.findings): what a reader should look at first ----------------------------
#: severities of a finding, most severe first (the findings table is ordered so)
SEVERITIES = ("critical", "warning", "info")

FINDINGS = register_table(Table(
    "findings",
    "One row per finding: a check that fired on the other tables (a straggler, a warning about "
    "an input, a consistency check), with the numbers behind it and where to look. Ordered by "
    "severity, then kind, then value (largest first).",
    (
        _c("run", "category", "the run the finding is about (each run is judged on its own rows)"),
        _c("severity", "category", "critical (a number in the report may be wrong), warning "
           "(worth a look before trusting or tuning) or info (context for reading the numbers)"),
        _c("kind", "category", "stable identifier of the rule that fired: throughput_straggler, "
           "small_message_allreduce, files_disagree, role_claimed_twice, ranks_missing, "
           "truncated_input, open_intervals, unmatched_ends, cached_negotiations, "
           "negotiation_straggler, idle_tiles, lowest_exec_instance"),
        _c("scope", "category", "what the finding is about: job, rank, instance, tensor, tile "
           "or input"),
        _c("subject", "string", "who: 'rank 2', 'instance 0', 'PID 1234', a job id or a file "
           "name"),
        _c("rank", "Int64", "the rank, when the finding is about one; else null"),
        _c("value", "float64", "the measured value the rule compared, in the unit its message "
           "states (%, a count, ...); null when the rule is a yes/no"),
        _c("threshold", "float64", "the limit the value crossed, in the same unit; null when "
           "there is none"),
        _c("message", "string", "one plain sentence with the numbers and their units"),
        _c("evidence", "string", "the report table and rows behind it: "
           "'<section>.<table> key=value ...'"),
        _c("hint", "string", "what to try or check next; empty when there is nothing to add"),
    ),
    key=("run", "kind", "evidence"),
))

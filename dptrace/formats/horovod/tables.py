"""The Horovod timeline format's tables: ``hvd_*``."""

from __future__ import annotations

from ...schema import Column, Table, register_table

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
    register_table(_table, place=40)

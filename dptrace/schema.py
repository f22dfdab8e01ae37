"""Every table dptrace produces: its columns, dtypes, units and meaning.

This module holds :class:`Column`, :class:`Table`, the table registry (:data:`TABLES`) and
the tables every load has (``sources``, ``problems``), and imports neither pandas nor numpy:
``dptrace schema``, ``dptrace formats`` and each format's ``tables`` module stay light. What
needs pandas (:func:`conform`, :data:`STRING`, the column helpers) is in :mod:`dptrace.frames`
and is named here too: ``schema.conform`` imports it on first use. Each format
defines its own tables in ``dptrace/formats/<format>/tables.py`` and registers them here
with :func:`register_table`; the first look at :data:`TABLES` imports those modules (found
with :func:`dptrace.formats.names`), so the registry is complete whichever module asks.
Readers build plain column lists and call :func:`conform`; ``dptrace schema`` and the
README's schema reference are generated from :data:`TABLES`. Column names carry their unit
(``_s``, ``_us``, ``_bytes``, ``_pct``, ``_per_s``); counts are bare.
"""

from __future__ import annotations

import contextlib
import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from .frames import (  # noqa: F401  (names given here, imported on first use)
        _LOOKUP_CHUNK,
        _TEXT_INDEX,
        STRING,
        _as_category,
        _as_dtype,
        _categorical_strings,
        _default_index,
        _is_categorical,
        _nulls,
        _whole_floats,
        code_counts,
        combined_codes,
        concat,
        conform,
        factorize,
        first_rows,
        from_rows,
        isin,
        lookup,
        lookup_chunks,
        text_categories,
        union_categories,
        unite_categories,
    )


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
        ``load`` gives every table): made once per table, each caller given a shallow copy
        of it (copy-on-write: a change to one is never seen by another)."""
        made = _EMPTY.get(self)
        if made is None:
            import pandas as pd

            from .frames import conform

            made = conform({c.name: [] for c in self.columns}, self)
            if "run" not in made.columns:
                made.insert(0, "run", pd.Categorical([]))
            _EMPTY[self] = made
        return made.copy(deep=False)


#: each table's empty frame, made on first use (:meth:`Table.empty`)
_EMPTY: dict[Table, pd.DataFrame] = {}


def _c(name: str, dtype: str, doc: str, unit: str = "") -> Column:
    return Column(name, dtype, doc, unit)


#: the column ``load`` puts first in every table: which run the row belongs to (see the
#: ``runs`` table); parsers do not fill it, the loader does from ``source``
RUN = _c("run", "category", "the run the row belongs to (see the runs table): the label given "
         "as LABEL=PATH, else the directory, job id or file it came from")
#: columns several formats' tables share
SOURCE = _c("source", "string", "input path as given (a member of an archive: path::member)")
LINENO = _c("lineno", "Int64", "1-based physical line number (\\r does not start a line)")
#: values of throughput.phase, in order of importance (training first); here, not in the
#: trainlog format's tables, because analysis imports nothing of dptrace but this module
PHASES = ("train", "eval", "load", "download")

SOURCES = Table(
    "sources",
    "One row per input.",
    (
        SOURCE,
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
        SOURCE,
        _c("line", "Int64", "1-based line, when known"),
        _c("severity", "string", "error (something was skipped), warning (kept, but "
           "suspicious) or info (noted, nothing lost: a file of a directory or glob that no "
           "format recognises, a FIFO or device found there, a symbolic-link loop not "
           "followed again, an input that took long; does not change the exit code)"),
        _c("message", "string", "what happened"),
    ),
)

#: every table by name, in listing order (``dptrace schema``, the README's reference); read
#: it as :data:`TABLES` (or :func:`tables`), which first registers every format's tables
_TABLES: dict[str, Table] = {}
#: each table's place in that order (see :func:`register_table`)
_PLACES: dict[str, int] = {}
_FORMATS_LOADED = False
#: where the shared tables sit among the formats' tables: after the training-log and tile
#: tables, before the MPI and Horovod ones (each format's tables.py names its own place)
SHARED_PLACE = 20


def register_table(table: Table, place: int = 100) -> Table:
    """Add a table definition; formats call this from their ``tables`` module.

    ``place`` orders the listing (lower first; tables of one place in registration order),
    so the order of ``dptrace schema`` does not depend on which format was imported first.
    """
    _PLACES[table.name] = place
    _TABLES[table.name] = table
    ordered = sorted(_TABLES.values(), key=lambda t: _PLACES[t.name])   # stable
    _TABLES.clear()
    _TABLES.update((t.name, t) for t in ordered)
    return table


def tables() -> dict[str, Table]:
    """Every registered table by name (the shared ones and every format's), in listing order."""
    global _FORMATS_LOADED
    if not _FORMATS_LOADED:
        _FORMATS_LOADED = True
        from . import formats

        for name in formats.names():
            # a format whose package does not import has no tables to register (the
            # registry names the error: registry.UNAVAILABLE); the others still do
            with contextlib.suppress(Exception):
                importlib.import_module(f"{formats.module(name)}.tables")
        # the fleet's tables (dptrace survey), declared like a format's
        importlib.import_module("dptrace.fleet.tables")
    return _TABLES


if TYPE_CHECKING:
    TABLES: dict[str, Table]


#: the names of :mod:`dptrace.frames` this module gives (imported on first use)
_FRAMES = frozenset({
    "conform", "from_rows", "concat", "unite_categories", "union_categories", "first_rows",
    "factorize", "lookup", "lookup_chunks", "code_counts", "isin", "combined_codes",
    "text_categories", "STRING", "_TEXT_INDEX", "_LOOKUP_CHUNK", "_default_index",
    "_is_categorical", "_as_dtype", "_nulls", "_whole_floats", "_as_category",
    "_categorical_strings", "_conformed", "_is_dtype", "_text_dtype", "_coded", "_IN_PYTHON",
    "_arrow_text_category", "_recoded", "_all_none", "_OBJECT_TEXT", "_TEXT_DTYPES_MAX",
    "_object_text_category", "_TEXT_DTYPES", "_unite_by_columns", "_SMALL_TEXT"})


def __getattr__(name: str) -> Any:
    if name == "TABLES":   # complete on first use: the formats' tables register themselves
        return tables()
    if name in _FRAMES:    # the pandas side, imported when first asked for
        from . import frames

        value = globals()[name] = getattr(frames, name)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
        Column("nodes", "Int64", "nodes of the job: distinct hosts the MPI profiles name, "
                      "else nccl-tests' hosts, else NCCL's 'nNodes', a launcher line "
                      "(mpirun --host, SLURM_NNODES, --nnodes) or the hosts that printed "
                      "NCCL lines (when several); null when unknown"),
        Column("launcher", "string", "srun, torchrun, horovodrun, sambaflow, ... where "
                      "a file name or a line says it; else null"),
        Column("sources", "Int64", "inputs in the run"),
        Column("world_size_from", "string", "where world_size came from: 'mpitrace "
                      "nranks', 'mpiP report tasks', 'Horovod timeline ranks', 'Horovod "
                      "benchmark: Total img/sec on 4 device(s)', 'launcher prefixes: ranks "
                      "0-15 printed'; or why it is unknown"),
    ),
    key=("run",),
)

register_table(SOURCES, SHARED_PLACE)
register_table(PROBLEMS, SHARED_PLACE)
register_table(RUNS, SHARED_PLACE)


def describe() -> pd.DataFrame:
    """The schema as a table: table, column, dtype, unit, doc."""
    import pandas as pd

    rows = [
        (t.name, c.name, c.dtype, c.unit, c.doc) for t in tables().values()
        for c in t.loaded_columns
    ]
    return pd.DataFrame(rows, columns=["table", "column", "dtype", "unit", "doc"])


def markdown() -> str:
    """The schema reference as Markdown (what the README embeds)."""
    parts = []
    for t in tables().values():
        parts.append(f"### `{t.name}`\n\n{t.doc}\n\n| column | dtype | meaning |\n|---|---|---|")
        for c in t.loaded_columns:
            doc = c.doc.replace("|", "\\|")
            parts.append(f"| `{c.name}` | {c.dtype} | {doc} |")
        parts.append("")
    return "\n".join(parts)


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
        _c("message", "string", "one plain sentence with the numbers and their units"),
        _c("hint", "string", "what to try or check next; empty when there is nothing to add"),
        _c("kind", "category", "stable identifier of the rule that fired: throughput_straggler, "
           "small_message_allreduce, files_disagree, role_claimed_twice, ranks_missing, "
           "truncated_input, open_intervals, unmatched_ends, cached_negotiations, "
           "negotiation_straggler, unjudged_negotiations, idle_tiles, lowest_exec_instance, "
           "job_copies_disagree, job_check_failed, comm_share_high, throughput_drift, "
           "unknown_world_size, low_exec, load_overhead, compute_straggler, waiting_rank, "
           "cross_source_straggler, low_busbw, long_warmup, nccl_socket_fallback, "
           "nccl_mixed_networks, nccl_no_gdrdma, nccl_timeout, nccl_error, "
           "collective_straggler, below_system_busbw; "
           "in the compare and scaling reports: throughput_change, setup_change, "
           "dominant_change, comm_time_change, negative_scaling, scaling_efficiency, "
           "scaling_incomplete"),
        _c("scope", "category", "what the finding is about: job, rank, instance, tensor, tile "
           "or input"),
        _c("subject", "string", "who: 'rank 2', 'instance 0', 'PID 1234', a job id or a file "
           "name"),
        _c("rank", "Int64", "the rank, when the finding is about one; else null"),
        _c("value", "float64", "the measured value the rule compared, in the unit its message "
           "states (%, a count, ...); null when the rule is a yes/no"),
        _c("threshold", "float64", "the limit the value crossed, in the same unit; null when "
           "there is none"),
        _c("evidence", "string", "the report table and rows behind it, as text: "
           "'<section>.<table> key=value ...' (several joined by '; ')"),
        _c("evidence_table", "string", "the table of each evidence row ('<section>.<table>' "
           "of the report, or a Dataset table), joined by '; ' when the finding merges "
           "several sources' evidence"),
        _c("evidence_key", "string", "JSON: a list with one object per table of "
           "evidence_table, the values that pick its row ({\"job\": \"19013\", \"rank\": 0})"),
    ),
    key=("run", "kind", "evidence"),
))


# --- Saved datasets (dptrace.store): the tables as Arrow types -----------------------------------
#: version of the tables' columns and dtypes as a saved Dataset holds them (``Dataset.save``,
#: ``dptrace.open``, the fleet cache). Bump it when a column is renamed, removed or changes
#: dtype or meaning (a unit, a time base): ``open`` refuses a directory written with another
#: version, with an error that says so. Adding a table or a column at the end of one does not
#: need a bump (a saved table keeps the columns it was written with).
#: 2: one time unit per kind of column (totals in s, events and timestamps in µs; the
#: mpiP, DeepSpeed comms, NCCL and MLLOG columns that were in ms renamed)
SCHEMA_VERSION = 2

#: each schema dtype's Arrow type, by name (pyarrow is imported only when asked for one)
_ARROW_TYPES = {
    "Int64": "int64", "float64": "float64", "string": "large_string", "bool": "bool_",
    "boolean": "bool_", "datetime64[ns]": "timestamp[ns]", "category": "dictionary",
}


def arrow_type(dtype: str) -> Any:
    """The Arrow type a column of schema dtype ``dtype`` is stored as: ``Int64`` int64,
    ``float64`` float64, ``string`` large_string (what an Arrow-backed pandas string holds:
    no copy), ``bool``/``boolean`` bool, ``datetime64[ns]`` timestamp[ns], ``category``
    dictionary<int32, string> (an empty or all-null categorical is still a dictionary of
    strings, never of doubles or nulls). A ValueError for a dtype the schema does not use."""
    import pyarrow as pa

    name = _ARROW_TYPES.get(dtype)
    if name is None:
        raise ValueError(f"no Arrow type for schema dtype {dtype!r}")
    if name == "dictionary":
        return pa.dictionary(pa.int32(), pa.string())
    if name == "timestamp[ns]":
        return pa.timestamp("ns")
    return getattr(pa, name)()


def arrow_schema(table: Table | str) -> Any:
    """The explicit Arrow schema of ``table`` (a :class:`Table` or a registered name), its
    columns as ``load`` gives them (``run`` first): one field per column, typed by
    :func:`arrow_type`, nullable except ``bool`` columns, with the column's ``unit`` and
    ``doc`` as field metadata. What a saved table's Parquet file declares."""
    import pyarrow as pa

    t = tables()[table] if isinstance(table, str) else table
    return pa.schema([
        pa.field(c.name, arrow_type(c.dtype), nullable=c.dtype != "bool",
                 metadata={"unit": c.unit, "doc": c.doc})
        for c in t.loaded_columns
    ])

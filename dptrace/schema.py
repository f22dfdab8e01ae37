"""Every table dptrace produces: its columns, dtypes, units and meaning.

This module holds :class:`Column`, :class:`Table`, :func:`conform`, the table registry
(:data:`TABLES`) and the tables every load has (``sources``, ``problems``). Each format
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
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
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
    return _TABLES


if TYPE_CHECKING:
    TABLES: dict[str, Table]


def __getattr__(name: str) -> Any:
    if name == "TABLES":   # complete on first use: the formats' tables register themselves
        return tables()
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


def conform(data: pd.DataFrame | Mapping[str, Any], table: Table) -> pd.DataFrame:
    """Return ``data`` as a DataFrame with ``table``'s columns, in order, with its dtypes.

    Missing columns are added as nulls; extra columns are kept after the schema's.
    """
    df = data if isinstance(data, pd.DataFrame) else pd.DataFrame(dict(data))
    n = len(df)
    out: dict[str, Any] = {}
    for col in table.columns:
        out[col.name] = (_as_dtype(df[col.name], col.dtype) if col.name in df
                         else _nulls(n, col.dtype))
    extra = {k: df[k] for k in df.columns if k not in out}
    # no copy: the columns are new, or the caller's (copy-on-write shares them safely); a
    # copy made the peak memory of a large table three times its size
    frame = pd.DataFrame({**out, **extra}, copy=False)
    return frame if _default_index(frame) else frame.reset_index(drop=True)


def from_rows(rows: list[dict[str, Any]], table: Table) -> pd.DataFrame:
    """A reader's rows (dicts keyed by column; ``run`` is the loader's) as ``table``,
    conformed; the empty table with its columns when there are none."""
    cols = [c for c in table.names if c != "run"]
    df = pd.DataFrame(rows, columns=cols) if rows else table.empty().drop(columns="run")
    return conform(df, table)


def _default_index(data: pd.DataFrame | pd.Series) -> bool:
    """True when the index is 0..n-1 already: pandas 2's ``reset_index`` copies every
    column (on millions of rows, a copy of the table at its largest)."""
    index = data.index
    return isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1


def concat(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """The parts' rows in order. Parts with all-null columns are kept as they are; the
    schema sets each column's dtype afterwards (:func:`conform`), so pandas 2's
    FutureWarning about how such columns will count towards the result's dtype does not
    apply. Categorical columns stay categorical (:func:`unite_categories`): pandas makes
    objects of categoricals whose categories differ (two files' sources), a Python object
    per row that :func:`conform` would have to turn back."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return pd.concat(unite_categories(parts), ignore_index=True)


def _is_categorical(s: pd.Series) -> bool:
    return isinstance(s.dtype, pd.CategoricalDtype)


def unite_categories(frames: list[pd.DataFrame]) -> list[pd.DataFrame]:
    """``frames`` with one categorical dtype in each column that is categorical in every
    frame with rows (frames without rows may hold anything there: all-null objects), so
    that they concatenate into a categorical. Where the frames with rows agree, that dtype
    is kept (its categories keep their order: ``phase``'s is meaningful); otherwise the
    categories become the sorted union (what ``astype("category")`` gives the
    concatenated values). The codes are recoded, no value becomes an object."""
    full = [df for df in frames if len(df)]
    if len(frames) < 2 or not full:
        return frames
    cols = [c for c in full[0].columns
            if all(c in df.columns and _is_categorical(df[c]) for df in full)
            and all(c in df.columns for df in frames)]
    out = None
    for col in cols:
        if all(df[col].dtype == full[0][col].dtype for df in frames):
            continue
        dtype = full[0][col].dtype
        if not all(df[col].dtype == dtype for df in full):
            dtype = pd.CategoricalDtype(union_categories(
                [df[col].cat.categories for df in full]))
        if out is None:
            out = [df.copy(deep=False) for df in frames]
        for df in out:
            if df[col].dtype == dtype:
                continue
            df[col] = (df[col].cat.set_categories(dtype.categories) if _is_categorical(df[col])
                       else df[col].astype(dtype))
    return frames if out is None else out


def union_categories(categories: Sequence[pd.Index]) -> pd.Index:
    """The sorted union of several categoricals' categories (in order of appearance when
    they are of kinds that do not sort together): what ``astype("category")`` gives their
    concatenated values."""
    values = list(dict.fromkeys(v for c in categories for v in c.tolist()))
    with contextlib.suppress(TypeError):   # mixed kinds: in order of appearance
        values = sorted(values)
    return text_categories(values) if all(isinstance(v, str) for v in values) \
        else pd.Index(values)


def first_rows(codes: np.ndarray) -> np.ndarray:
    """The first row of each code 0..k-1 of ``codes`` (every code present)."""
    at = np.zeros(int(codes.max()) + 1 if len(codes) else 0, dtype=np.int64)
    at[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)
    return at


def factorize(s: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """(codes, values) of a column, -1 for null: a categorical's own codes and categories
    (unused ones too: a lookup table of the values is indexed by the codes), else
    ``pd.factorize``'s (a hash of every row)."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        return s.cat.codes.to_numpy(), s.cat.categories
    codes, values = pd.factorize(s, use_na_sentinel=True)
    return codes, pd.Index(values)


def lookup(table: np.ndarray, codes: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``table[codes]`` for small-integer ``codes`` (a categorical's, -1 the last entry of
    ``table``), into ``out`` when given, a chunk at a time (:func:`lookup_chunks`)."""
    if out is None:
        out = np.empty(len(codes), dtype=table.dtype)
    for _ in lookup_chunks(table, codes, out):
        pass
    return out


def lookup_chunks(table: np.ndarray, codes: np.ndarray, out: np.ndarray | None = None,
                  ) -> Iterator[tuple[int, np.ndarray]]:
    """``(lo, table[codes[lo:lo + m]])`` a chunk of :data:`_LOOKUP_CHUNK` codes at a time:
    written into ``out[lo:lo + m]`` when ``out`` is given, else into one buffer reused for
    every chunk (use each before taking the next). ``take`` is 3x faster than indexing with
    8-bit codes, but wants 64-bit indices (a whole column's cast would be 8 bytes a row of
    memory at a load's peak): each chunk's are cast into one buffer, and ``mode="wrap"``
    writes straight to the destination (take's default mode copies each chunk through a new
    temporary). No allocation per chunk, whose fresh pages cost as much as the lookup."""
    n = len(codes)
    index = np.empty(min(n, _LOOKUP_CHUNK), dtype=np.intp)
    reuse = out is None
    into = np.empty(len(index), dtype=table.dtype) if out is None else out
    for lo in range(0, n, _LOOKUP_CHUNK):
        m = min(_LOOKUP_CHUNK, n - lo)
        index[:m] = codes[lo:lo + m]
        at = 0 if reuse else lo
        dest = into[at:at + m]
        table.take(index[:m], out=dest, mode="wrap")  # -1: the last, as 'raise' takes it
        yield lo, dest


#: codes looked up at once by :func:`lookup` (its 64-bit copy of them: 512 KB)
_LOOKUP_CHUNK = 1 << 16


def code_counts(codes: np.ndarray, k: int) -> np.ndarray:
    """The rows of each code 0..k-1 of a categorical's ``codes`` (-1, null, not counted)."""
    if codes.dtype.kind == "i" and codes.dtype.itemsize <= 2:   # -1 in the top bin
        return np.bincount(codes.view(f"u{codes.dtype.itemsize}"), minlength=k)[:k]
    return np.bincount(codes[codes >= 0], minlength=k)[:k]


def isin(s: pd.Series, values: Any) -> np.ndarray:
    """``s.isin(values)`` as a bool array; a categorical's by its categories (one lookup of
    each row's code; none at all when no category is among ``values``)."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        hit = s.cat.categories.isin(list(values))
        if not hit.any():
            return np.zeros(len(s), dtype=bool)
        return lookup(np.append(hit, False), s.cat.codes.to_numpy())   # -1: the False
    return s.isin(values).to_numpy(dtype=bool)


def combined_codes(columns: Sequence[pd.Series]) -> np.ndarray:
    """One int64 code per row for the combination of ``columns`` (nulls are a value): each
    column's codes (a categorical's own, else ``factorize``) mixed into one number, in
    place (one array of the rows' length at a time)."""
    out: np.ndarray | None = None
    for col in columns:
        if isinstance(col.dtype, pd.CategoricalDtype):
            codes = col.cat.codes.to_numpy()
            n = len(col.cat.categories) + 1
        else:
            codes, uniques = pd.factorize(col, use_na_sentinel=True)
            n = len(uniques) + 1
        if out is None:
            out = codes.astype(np.int64)
        else:
            out *= n
            out += codes
        out += 1  # null (-1) is 0
        if out.max(initial=0) > (1 << 40):  # re-number before the product could overflow
            out = pd.factorize(out)[0].astype(np.int64)
    return np.zeros(0, dtype=np.int64) if out is None else out


def text_categories(values: Any) -> pd.Index:
    """Categories of text in the dtype pandas gives text categories by default (object on
    pandas 2, ``str`` on pandas 3), whatever they arrived as (Arrow strings, objects): so
    that the categoricals of two files or two routes compare equal and concatenate."""
    return pd.Index(list(values), dtype=_TEXT_INDEX)


#: the dtype of an Index of Python strings on this pandas
_TEXT_INDEX = pd.Index(["x"]).dtype


#: the one text dtype: Arrow-backed on every pandas (pandas 2 would keep whichever storage a
#: column arrived with, so the same table could come out in two dtypes by route)
STRING = pd.StringDtype("pyarrow")


def _as_dtype(values: Any, dtype: str) -> pd.Series:
    s = values if isinstance(values, pd.Series) else pd.Series(values)
    if not _default_index(s):
        s = s.reset_index(drop=True)
    if dtype == "string":
        if isinstance(s.dtype, pd.CategoricalDtype):
            return _categorical_strings(s)
        return s if s.dtype == STRING else s.astype(STRING)
    if dtype == "category":
        return _as_category(s)
    if str(s.dtype) == dtype:
        return s
    if dtype.startswith("datetime64"):
        return pd.to_datetime(s, errors="coerce").astype(dtype)
    if dtype == "float64":
        return pd.to_numeric(s, errors="coerce").astype("float64")
    if dtype == "Int64":
        if isinstance(s.dtype, np.dtype) and s.dtype == np.int64:
            # the values as they are, with a mask (astype copies them)
            return pd.Series(pd.arrays.IntegerArray(s.to_numpy(), np.zeros(len(s), dtype=bool)),
                             index=s.index, name=s.name, copy=False)
        if pd.api.types.is_integer_dtype(s.dtype):
            return s.astype("Int64")
        if isinstance(s.dtype, np.dtype) and s.dtype == np.float64:
            return _whole_floats(s)
        return pd.to_numeric(s, errors="coerce").astype("Int64")
    return s.astype(dtype)


def _nulls(n: int, dtype: str) -> pd.Series:
    """A column of ``n`` nulls of ``dtype``, made as that dtype (a list of ``n`` Nones
    converted took several times the column's size)."""
    if dtype == "Int64":
        return pd.Series(pd.arrays.IntegerArray(np.zeros(n, dtype=np.int64),
                                                np.ones(n, dtype=bool)), copy=False)
    if dtype == "float64":
        return pd.Series(np.full(n, np.nan), copy=False)
    if dtype == "category":
        return pd.Series(pd.Categorical.from_codes(np.full(n, -1, dtype=np.int8),
                                                   categories=text_categories([])), copy=False)
    return _as_dtype(pd.Series([None] * n, dtype="object"), dtype)


def _whole_floats(s: pd.Series) -> pd.Series:
    """A float64 column of whole numbers (NaN: missing) as Int64, with one integer array
    and the mask as temporaries (pandas' ``astype`` makes several of the column's size).
    Fractions and numbers beyond int64 go through ``astype``, which raises on them."""
    v = s.to_numpy()
    missing = np.isnan(v)
    if missing.all() or not (np.nanmin(v) >= -2.0 ** 63 and np.nanmax(v) < 2.0 ** 63):
        return s.astype("Int64")
    with np.errstate(invalid="ignore"):
        ints = v.astype(np.int64)
    exact = ints == v
    exact |= missing
    if not exact.all():
        return s.astype("Int64")
    ints[missing] = 0
    return pd.Series(pd.arrays.IntegerArray(ints, missing), index=s.index, name=s.name,
                     copy=False)


def _as_category(s: pd.Series) -> pd.Series:
    """``s`` as a categorical; text categories in one dtype (:func:`text_categories`)."""
    if not _is_categorical(s):
        s = s.astype("category")
    cats = s.cat.categories
    if cats.dtype == _TEXT_INDEX or not pd.api.types.is_string_dtype(cats.dtype) or (
            len(cats) and not all(isinstance(v, str) for v in cats.tolist())):
        return s
    dtype = pd.CategoricalDtype(text_categories(cats.tolist()), ordered=s.cat.ordered)
    return pd.Series(pd.Categorical.from_codes(s.cat.codes.to_numpy(), dtype=dtype),
                     index=s.index, name=s.name)


def _categorical_strings(s: pd.Series) -> pd.Series:
    """A categorical column of strings as :data:`STRING`: the categories converted once and
    taken by code in Arrow (``astype`` makes a Python object per row). Other categories
    (numbers, ...) go through ``astype``."""
    import pyarrow as pa  # a dependency of STRING

    categories = s.cat.categories
    if not (categories.empty or pd.api.types.is_string_dtype(categories.dtype)) or \
            categories.hasnans:
        return s.astype(STRING)
    codes = s.cat.codes.to_numpy()
    values = pa.array(categories.to_numpy(dtype=object, na_value=None), pa.large_string())
    taken = values.take(pa.array(codes, mask=codes < 0))
    return pd.Series(pd.array(taken, dtype=STRING), index=s.index, name=s.name)


def describe() -> pd.DataFrame:
    """The schema as a table: table, column, dtype, unit, doc."""
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
        _c("evidence", "string", "the report table and rows behind it: "
           "'<section>.<table> key=value ...'"),
    ),
    key=("run", "kind", "evidence"),
))


# --- Saved datasets (dptrace.store): the tables as Arrow types -----------------------------------
#: version of the tables' columns and dtypes as a saved Dataset holds them (``Dataset.save``,
#: ``dptrace.open``, the fleet cache). Bump it when a column is renamed, removed or changes
#: dtype or meaning (a unit, a time base): ``open`` refuses a directory written with another
#: version, with an error that says so. Adding a table or a column at the end of one does not
#: need a bump (a saved table keeps the columns it was written with).
SCHEMA_VERSION = 1

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

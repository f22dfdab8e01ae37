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
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

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

    def empty(self) -> pd.DataFrame:
        """A zero-row frame with this table's columns and dtypes."""
        return conform({c.name: [] for c in self.columns}, self)


def _c(name: str, dtype: str, doc: str, unit: str = "") -> Column:
    return Column(name, dtype, doc, unit)


#: columns several formats' tables share
SOURCE = _c("source", "string", "input path as given (a member of an archive: path::member)")
LINENO = _c("lineno", "Int64", "1-based physical line number (\\r does not start a line)")
#: values of throughput.phase, in order of importance (training first); here, not in the
#: trainlog format's tables, because analysis imports nothing of dptrace but this module
PHASES = ("train", "eval", "setup")

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
                importlib.import_module(f"{formats.__name__}.{name}.tables")
    return _TABLES


if TYPE_CHECKING:
    TABLES: dict[str, Table]


def __getattr__(name: str) -> Any:
    if name == "TABLES":   # complete on first use: the formats' tables register themselves
        return tables()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


register_table(SOURCES, SHARED_PLACE)
register_table(PROBLEMS, SHARED_PLACE)


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
        (t.name, c.name, c.dtype, c.unit, c.doc) for t in tables().values() for c in t.columns
    ]
    return pd.DataFrame(rows, columns=["table", "column", "dtype", "unit", "doc"])


def markdown() -> str:
    """The schema reference as Markdown (what the README embeds)."""
    parts = []
    for t in tables().values():
        parts.append(f"### `{t.name}`\n\n{t.doc}\n\n| column | dtype | meaning |\n|---|---|---|")
        for c in t.columns:
            doc = c.doc.replace("|", "\\|")
            parts.append(f"| `{c.name}` | {c.dtype} | {doc} |")
        parts.append("")
    return "\n".join(parts)



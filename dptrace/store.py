"""Saved Datasets: ``Dataset.save(DIR)`` and ``dptrace.open(DIR)`` on Parquet.

A saved Dataset is a directory (docs/data-model.md)::

    DIR/dptrace.json                       the manifest, written last
    DIR/tables/<table>/part-0.parquet      one file per table with rows, and sources,
                                           problems and runs (even when empty)

The manifest (JSON) says what wrote it (``dptrace_version``, ``schema_version``: see
:data:`dptrace.schema.SCHEMA_VERSION`), and lists the tables in the Dataset's order with
their rows and files. ``open`` refuses a directory of another schema version, one without a
manifest, and names the file that is missing, cut short or holds other rows than the
manifest says.

Each file declares the table's explicit Arrow schema (:func:`dptrace.schema.arrow_schema`:
a categorical is ``dictionary<int32, string>`` even when empty or all null, a string
``large_string``, a count ``int64`` with nulls), so pyarrow, DuckDB or Spark read it as
typed. What Arrow does not hold is in the file's ``dptrace`` metadata, one entry per
column: the pandas dtype, and for a categorical its categories in order (unused ones
included), ``ordered`` and the categories' own dtype. Reading back gives each table with
the dtypes it had: ``open(save(ds))`` equals ``ds`` table by table. Text categories come
back in the dtype text categories have on the reading pandas (``str`` on pandas 3, object
on pandas 2; :func:`dptrace.schema.text_categories`), as ``load`` would give them there.

A save is atomic: everything is written into a hidden directory beside ``DIR``
(``.DIR.tmp-...``), each file flushed to disk, the manifest last, and the directory then
renamed to ``DIR``. A crash leaves ``DIR`` as it was (or absent) and a hidden temporary
directory, never a ``DIR`` that looks complete and is not.

Reading is by table and by run: ``open(DIR, tables=[...], runs=[...])`` reads only the
files of those tables and only the rows of those runs (a row filter on ``run``, with the
row groups' statistics); :func:`read_table` reads one table, some columns. This is the base
of the fleet cache (more files per table, one per batch of runs, listed in the manifest).
The index of a table is not saved: every table of a Dataset is indexed 0..n-1.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import shutil
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from . import schema
from .errors import DptraceError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["FORMAT", "LAYOUT", "MANIFEST", "SHARED", "Stored", "arrow_table", "frame",
           "read", "read_manifest", "read_table", "save", "write_frame"]

#: the manifest's file name, in the saved directory
MANIFEST = "dptrace.json"
#: the manifest's ``format``: what kind of directory this is
FORMAT = "dptrace-dataset"
#: version of the directory's layout and the manifest's keys (not of the tables' columns:
#: that is :data:`dptrace.schema.SCHEMA_VERSION`)
LAYOUT = 1
#: the tables every saved Dataset has besides its parsed ones (``runs`` unless the Dataset
#: was made without one)
SHARED = ("sources", "problems", "runs")
#: the key of the dptrace metadata in each Parquet file's schema
META_KEY = b"dptrace"
#: Parquet compression: zstd (read by pyarrow, DuckDB, Spark, polars)
COMPRESSION = "zstd"


@dataclass
class Stored:
    """What :func:`read` gives: the parsed tables in their saved order, ``sources``,
    ``problems``, ``runs`` (None when the Dataset had none) and the manifest."""

    tables: dict[str, pd.DataFrame]
    sources: pd.DataFrame
    problems: pd.DataFrame
    runs: pd.DataFrame | None
    manifest: dict[str, Any]


# --- writing -------------------------------------------------------------------------------------

def save(tables: Mapping[str, pd.DataFrame], sources: pd.DataFrame, problems: pd.DataFrame,
         runs: pd.DataFrame | None, directory: str | os.PathLike[str], *,
         overwrite: bool = False) -> Path:
    """Write a Dataset's parts to ``directory`` atomically; return its path.

    ``directory`` must not exist, be empty, or (with ``overwrite``) hold a saved Dataset,
    which is then replaced; a directory holding anything else is never touched."""
    target = Path(directory)
    _check_target(target, overwrite)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        parts = {**tables, "sources": sources, "problems": problems}
        if runs is not None:
            parts["runs"] = runs
        entries = [_write_part(tmp, name, df) for name, df in parts.items()]
        _write_manifest(tmp, entries)
        _fsync(tmp)
        _replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _fsync(target.parent)
    return target


def _check_target(target: Path, overwrite: bool) -> None:
    """A usage error when ``target`` may not be written (see :func:`save`)."""
    if not target.exists():
        return
    if not target.is_dir():
        raise DptraceError(f"{target}: exists and is not a directory")
    if not any(target.iterdir()):
        return
    if not (target / MANIFEST).is_file():
        raise DptraceError(f"{target}: a directory that is not empty and holds no saved "
                           f"dataset ({MANIFEST}): not overwritten; choose a new directory")
    if not overwrite:
        raise DptraceError(f"{target}: holds a saved dataset already; pass overwrite=True "
                           "to replace it")


def _replace(tmp: Path, target: Path) -> None:
    """``tmp`` renamed to ``target``; an empty or saved ``target`` moved away first (and
    removed after), so that ``target`` is at every moment the old dataset, absent, or the
    new one."""
    if not target.exists():
        os.rename(tmp, target)
        return
    if not any(target.iterdir()):
        target.rmdir()
        os.rename(tmp, target)
        return
    old = target.parent / f".{target.name}.old-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    os.rename(target, old)
    os.rename(tmp, target)
    shutil.rmtree(old, ignore_errors=True)


def _write_part(root: Path, name: str, df: pd.DataFrame) -> dict[str, Any]:
    """One table as ``tables/<name>/part-0.parquet`` under ``root``; its manifest entry."""
    rel = f"tables/{name}/part-0.parquet"
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    write_frame(df, path, name)
    return {"name": name, "rows": len(df), "files": [rel]}


def _write_manifest(root: Path, entries: list[dict[str, Any]]) -> None:
    from . import __version__

    manifest = {
        "format": FORMAT,
        "layout": LAYOUT,
        "dptrace_version": __version__,
        "schema_version": schema.SCHEMA_VERSION,
        "written": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "pandas_version": pd.__version__,
        "tables": entries,
    }
    path = root / MANIFEST
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1, ensure_ascii=False)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())


def _fsync(directory: Path) -> None:
    """Flush a directory's entries (its new files' names) to disk, where the OS can."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_frame(df: pd.DataFrame, path: str | os.PathLike[str], table: str) -> Path:
    """``df`` (table ``table``: its explicit Arrow schema where registered) written to the
    Parquet file ``path``, flushed to disk. ``dptrace export --format parquet`` and
    :func:`save` write through here."""
    import pyarrow.parquet as pq

    out = Path(path)
    with open(out, "wb") as fh:
        pq.write_table(arrow_table(df, table), fh, compression=COMPRESSION)
        fh.flush()
        os.fsync(fh.fileno())
    return out


def arrow_table(df: pd.DataFrame, table: str) -> pa.Table:
    """``df`` as an Arrow table: each column of the registered table ``table`` typed as
    :func:`dptrace.schema.arrow_schema` says (where the column has the schema's dtype),
    any other column as pyarrow infers it; each column's pandas dtype (and a categorical's
    categories) in the schema's ``dptrace`` metadata, for :func:`frame`."""
    import pyarrow as pa

    if df.columns.has_duplicates:
        raise DptraceError(f"table {table!r}: duplicate column names cannot be saved")
    known = schema.tables().get(table)
    declared = schema.arrow_schema(known) if known is not None else None
    expected = {c.name: c.dtype for c in known.loaded_columns} if known is not None else {}
    arrays, fields, columns = [], [], {}
    for name in df.columns:
        field = None
        if declared is not None and name in expected and _is(df[name].dtype, expected[name]):
            field = declared.field(name)
        try:
            array, meta = _to_arrow(df[name], None if field is None else field.type)
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise DptraceError(f"table {table!r}, column {name!r}: cannot be stored as "
                               f"Parquet ({exc})") from None
        if field is None or field.type != array.type:   # inferred (or an ordered dictionary)
            field = pa.field(str(name), array.type, nullable=True,
                             metadata=None if field is None else field.metadata)
        arrays.append(array)
        fields.append(field)
        columns[str(name)] = meta
    meta_json = json.dumps({"table": table, "schema_version": schema.SCHEMA_VERSION,
                            "columns": columns}, ensure_ascii=False, default=str)
    metadata = {META_KEY: meta_json.encode("utf-8"), **_pandas_metadata(df)}
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=metadata))


def _pandas_metadata(df: pd.DataFrame) -> dict[bytes, bytes]:
    """pyarrow's ``pandas`` metadata of ``df``'s columns (made from its zero-row head), so
    that ``pandas.read_parquet`` of a file gives the pandas dtypes too (``Int64``, not
    float64 where a count has nulls); empty when pyarrow cannot make it."""
    import pyarrow as pa

    try:
        found = pa.Table.from_pandas(df.iloc[:0], preserve_index=False).schema.metadata
    except (pa.ArrowException, TypeError, ValueError):
        return {}
    return {b"pandas": found[b"pandas"]} if found and b"pandas" in found else {}


def _is(dtype: Any, expected: str) -> bool:
    """True when a column of pandas dtype ``dtype`` has the schema dtype ``expected``."""
    if expected == "category":
        return isinstance(dtype, pd.CategoricalDtype)
    if expected == "string":
        return isinstance(dtype, pd.StringDtype)
    return str(dtype) == expected


def _to_arrow(s: pd.Series, type_: pa.DataType | None) -> tuple[Any, dict[str, Any]]:
    """One column as an Arrow array (of ``type_`` when given) and its metadata entry."""
    import pyarrow as pa

    dtype = s.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return _categorical_to_arrow(s)
    meta = {"dtype": _dtype_name(dtype)}
    if type_ is not None:
        return pa.array(s, type=type_, from_pandas=True), meta
    return pa.array(s, from_pandas=True), meta


def _dtype_name(dtype: Any) -> str:
    """A dtype's name that :func:`pandas.api.types.pandas_dtype` reads back exactly (a
    string dtype's with its storage: ``string[pyarrow]``, not the ambiguous ``string``)."""
    if isinstance(dtype, pd.StringDtype) and str(dtype) == "string":
        return f"string[{dtype.storage}]"
    return str(dtype)


def _categorical_to_arrow(s: pd.Series) -> tuple[Any, dict[str, Any]]:
    """A categorical as ``dictionary<int32, string>``: its codes as the indices (null where
    missing), its categories (all, in order) as the dictionary; the categories again in
    the metadata, as JSON values of their own dtype."""
    import pyarrow as pa

    dtype = s.dtype
    cats = dtype.categories
    text = _is_text(cats)
    codes = s.cat.codes.to_numpy()
    missing = codes < 0
    indices = pa.array(codes.astype(np.int32), mask=missing if missing.any() else None)
    values = cats.to_numpy(dtype=object) if text else [str(v) for v in cats.tolist()]
    dictionary = pa.array(values, pa.string())
    array = pa.DictionaryArray.from_arrays(indices, dictionary, ordered=bool(dtype.ordered))
    meta = {"dtype": "category", "ordered": bool(dtype.ordered),
            "categories_dtype": "text" if text else str(cats.dtype),
            "categories": [str(v) for v in cats.tolist()] if text else cats.tolist()}
    return array, meta


def _is_text(index: pd.Index) -> bool:
    """True when ``index`` holds text: a string dtype, or objects that are all strings. An
    empty object index is text where text categories are objects (pandas 2: read on
    pandas 3 it becomes ``str``, as a load there gives it); on pandas 3 it is not."""
    if index.dtype == object:
        if not len(index):
            return bool(schema.text_categories([]).dtype == object)
        return all(isinstance(v, str) for v in index.tolist())
    return pd.api.types.is_string_dtype(index.dtype)


# --- reading -------------------------------------------------------------------------------------

def read_manifest(directory: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of a saved Dataset, checked: a DptraceError that says what is wrong
    when ``directory`` is not one, is incomplete, or has another schema version."""
    root = Path(directory)
    path = root / MANIFEST
    if not root.is_dir():
        raise DptraceError(f"{root}: no such directory (a saved dataset is a directory "
                           "that Dataset.save wrote)")
    if not path.is_file():
        raise DptraceError(f"{path}: missing: {root} is not a saved dptrace dataset, or its "
                           "save did not finish (Dataset.save writes the manifest last)")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DptraceError(f"{path}: not a readable manifest ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise DptraceError(f"{path}: not the manifest of a saved dptrace dataset")
    _check_versions(path, manifest)
    tables = manifest.get("tables")
    if not isinstance(tables, list) or not all(
            isinstance(t, dict) and isinstance(t.get("name"), str)
            and isinstance(t.get("files"), list) and isinstance(t.get("rows"), int)
            for t in tables):
        raise DptraceError(f"{path}: its table list is damaged (each table needs a name, "
                           "rows and files)")
    return manifest


def _check_versions(path: Path, manifest: dict[str, Any]) -> None:
    from . import __version__

    wrote = manifest.get("dptrace_version", "?")
    layout = manifest.get("layout")
    if layout != LAYOUT:
        raise DptraceError(
            f"{path}: written by dptrace {wrote} in directory layout {layout}; this dptrace "
            f"({__version__}) reads layout {LAYOUT}: load the inputs again and save")
    version = manifest.get("schema_version")
    if version != schema.SCHEMA_VERSION:
        raise DptraceError(
            f"{path}: written by dptrace {wrote} with table schema version {version}; this "
            f"dptrace ({__version__}) reads schema version {schema.SCHEMA_VERSION} (columns "
            "or dtypes changed between them): load the inputs again and save, or open it "
            f"with dptrace {wrote}")


def read(directory: str | os.PathLike[str], *, tables: Iterable[str] | None = None,
         runs: Iterable[str] | None = None) -> Stored:
    """A saved Dataset's parts. ``tables``: only these parsed tables (sources, problems and
    runs are always read); ``runs``: only the rows of these run ids in every table (the
    ``run`` categories stay whole, as :meth:`Dataset.run` keeps them)."""
    root = Path(directory)
    manifest = read_manifest(root)
    entries = {t["name"]: t for t in manifest["tables"]}
    wanted = _wanted_tables(root, entries, tables)
    run_ids = None if runs is None else [str(r) for r in ([runs] if isinstance(runs, str)
                                                          else runs)]
    parts = {name: _read_entry(root, entries[name], run_ids=run_ids)
             for name in entries if name in wanted or name in SHARED}
    if run_ids is not None and "runs" in parts:
        known = [str(r) for r in parts["runs"]["run"].cat.categories] if isinstance(
            parts["runs"]["run"].dtype, pd.CategoricalDtype) else []
        unknown = [r for r in run_ids if r not in known]
        if unknown:
            raise DptraceError(f"{root}: no run {', '.join(map(repr, unknown))}; runs: "
                               f"{', '.join(known) or 'none'}")
    for name in ("sources", "problems"):
        if name not in parts:
            raise DptraceError(f"{root / MANIFEST}: lists no {name} table (damaged manifest)")
    return Stored({k: v for k, v in parts.items() if k not in SHARED}, parts["sources"],
                  parts["problems"], parts.get("runs"), manifest)


def _wanted_tables(root: Path, entries: Mapping[str, Any],
                   tables: Iterable[str] | None) -> set[str]:
    if tables is None:
        return set(entries)
    wanted = {tables} if isinstance(tables, str) else set(tables)
    unknown = sorted(w for w in wanted if w not in entries and w not in schema.tables())
    if unknown:
        saved = [n for n in entries if n not in SHARED]
        raise DptraceError(f"{root}: no table {', '.join(map(repr, unknown))}; saved tables: "
                           f"{', '.join(saved) or 'none'}")
    return wanted


def read_table(directory: str | os.PathLike[str], name: str, *,
               columns: Sequence[str] | None = None,
               runs: Iterable[str] | None = None) -> pd.DataFrame:
    """One table of a saved Dataset (``columns``: only these, in this order; ``runs``: only
    these runs' rows). A table the Dataset had no rows of is its empty frame."""
    root = Path(directory)
    entries = {t["name"]: t for t in read_manifest(root)["tables"]}
    if name not in entries:
        if name in schema.tables() and name not in SHARED:
            empty = schema.tables()[name].empty()
            return empty if columns is None else empty[list(columns)]
        raise DptraceError(f"{root}: no table {name!r}; saved tables: {', '.join(entries)}")
    run_ids = None if runs is None else [str(r) for r in runs]
    return _read_entry(root, entries[name], columns=columns, run_ids=run_ids)


def _read_entry(root: Path, entry: Mapping[str, Any], *, columns: Sequence[str] | None = None,
                run_ids: list[str] | None = None) -> pd.DataFrame:
    """A manifest entry's files read and concatenated, rows checked against the manifest."""
    files = [str(f) for f in entry["files"]]
    rows = entry["rows"] if run_ids is None and len(files) == 1 else None
    parts = [_read_file(root / f, columns, run_ids, rows) for f in files]
    if len(parts) == 1:
        return parts[0]
    got = sum(len(p) for p in parts)
    if run_ids is None and got != entry["rows"]:
        raise DptraceError(f"{root}: table {entry['name']!r} has {got} rows in its files, "
                           f"the manifest says {entry['rows']}")
    return schema.concat(parts)


def _read_file(path: Path, columns: Sequence[str] | None, run_ids: list[str] | None,
               rows: int | None) -> pd.DataFrame:
    """One Parquet file of a saved table as pandas (see :func:`frame`); a DptraceError
    naming the file when it is missing, damaged or holds other rows than ``rows``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not path.is_file():
        raise DptraceError(f"{path}: missing (the saved dataset is incomplete: save it again)")
    try:
        pf = pq.ParquetFile(path)
        declared = pf.schema_arrow
        if rows is not None and pf.metadata.num_rows != rows:
            raise DptraceError(f"{path}: holds {pf.metadata.num_rows} rows, the manifest "
                               f"says {rows} (the saved dataset is damaged: save it again)")
        if columns is not None:
            absent = [c for c in columns if c not in declared.names]
            if absent:
                raise DptraceError(f"{path}: no column {', '.join(map(repr, absent))}; "
                                   f"columns: {', '.join(declared.names)}")
        if run_ids is not None and "run" in declared.names:
            wanted = list(columns) if columns is not None else None
            if wanted is not None and "run" not in wanted:
                wanted = [*wanted, "run"]
            table = pq.read_table(path, columns=wanted, filters=[("run", "in", run_ids)],
                                  schema=declared)
            if columns is not None and "run" not in columns:
                table = table.drop_columns(["run"])
        else:
            table = pf.read(columns=list(columns) if columns is not None else None)
    except (OSError, pa.ArrowException) as exc:
        raise DptraceError(f"{path}: cannot be read ({exc}): the saved dataset is damaged "
                           "or was cut short; save it again") from None
    return frame(table, declared.metadata, path)


def frame(table: pa.Table, metadata: Mapping[bytes, bytes] | None = None,
          path: str | os.PathLike[str] = "<table>") -> pd.DataFrame:
    """An Arrow table written by :func:`arrow_table` as the pandas frame it was: each
    column in its saved dtype (a categorical with its saved categories), index 0..n-1.
    ``metadata``: the schema metadata (default: the table's own)."""
    meta = _columns_meta(metadata if metadata is not None else table.schema.metadata, path)
    out = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        try:
            out[name] = _to_pandas(column, meta.get(name, {}))
        except (ValueError, TypeError, KeyError) as exc:
            raise DptraceError(f"{path}: column {name!r} cannot be read back ({exc})") from None
    return pd.DataFrame(out, index=pd.RangeIndex(table.num_rows), copy=False)


def _columns_meta(metadata: Mapping[bytes, bytes] | None, path: Any) -> dict[str, Any]:
    raw = (metadata or {}).get(META_KEY)
    if raw is None:
        return {}
    try:
        found = json.loads(raw)
        return dict(found["columns"])
    except (ValueError, KeyError, TypeError):
        raise DptraceError(f"{path}: its dptrace metadata is damaged") from None


def _to_pandas(column: pa.ChunkedArray, meta: Mapping[str, Any]) -> Any:
    """One Arrow column as the pandas array of its saved dtype (``meta``); without one,
    as pyarrow converts it."""
    name = meta.get("dtype")
    if name == "category":
        return _to_categorical(column, meta)
    if name is None:
        return column.to_pandas()
    try:
        dtype = pd.api.types.pandas_dtype(name)
    except TypeError:   # a dtype this pandas does not have (pandas 3's "str" on pandas 2)
        return column.to_pandas()
    from_arrow = getattr(dtype, "__from_arrow__", None)
    if from_arrow is not None:
        return from_arrow(column)
    values = column.to_pandas()
    return values if values.dtype == dtype else values.astype(dtype)


def _to_categorical(column: pa.ChunkedArray, meta: Mapping[str, Any]) -> pd.Categorical:
    """A dictionary column as the categorical it was written from: its saved categories,
    in order, in their saved dtype (text ones as :func:`schema.text_categories`), each
    row's code looked up by value (a reader may have rebuilt the dictionary)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    values = meta.get("categories", [])
    cats = (schema.text_categories(values) if meta.get("categories_dtype") == "text"
            else pd.Index(values, dtype=object).astype(meta.get("categories_dtype", "object")))
    dtype = pd.CategoricalDtype(cats, ordered=bool(meta.get("ordered", False)))
    keys = pd.Index([str(v) for v in cats.tolist()])
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column.cast(pa.string()))
    codes = [np.zeros(0, dtype=np.int32)]
    for chunk in column.chunks:
        dictionary = [str(v) for v in chunk.dictionary.to_pylist()]
        lookup = keys.get_indexer(dictionary) if dictionary != keys.tolist() else \
            np.arange(len(keys))
        if (lookup < 0).any():
            raise ValueError("values not among its saved categories")
        lookup = np.append(lookup, -1).astype(np.int32)   # null: the last
        index = pc.fill_null(chunk.indices.cast(pa.int32()), len(dictionary))
        codes.append(lookup[index.to_numpy(zero_copy_only=False)])
    return pd.Categorical.from_codes(np.concatenate(codes), dtype=dtype)

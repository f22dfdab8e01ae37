"""The fleet cache: a directory of Parquet files that a survey reads instead of the logs.

Layout (``CACHE/``)::

    cache.json                          what the directory is (format, layout, schema version)
    batches/<batch>.json                one batch's manifest: a row per job folder (its path,
                                        key, files, formats and their parser versions, the
                                        batch holding its tables and its derived tables,
                                        timings, status); written last, atomically
    tables/<table>/<batch>.parquet      the parsed tables (and sources, problems, runs) of a
                                        batch of job folders, a ``run_key`` column on every
                                        row; no file for a table the batch has no rows of
    derived/<table>/<batch>.parquet     the fleet tables and job figures of a batch
                                        (:mod:`dptrace.fleet.tables`)

Keys: a folder's **key** is the sha256 of the parser versions of the formats it holds and
each file's (relative path, size, content hash) (:func:`dptrace.fleet.discover.folder_key`);
a folder's tables are valid while the key is. Its **derived key** adds the analysis
version (:func:`dptrace.fleet.versions.analysis_version`), the warm-up and the thresholds:
the derived tables are valid while it is, so a new analysis reruns only the analysis, on
the cached tables.

Every Parquet file has the table's explicit Arrow schema (:func:`dptrace.store.arrow_table`;
``run_key`` is ``large_string``), so pandas, pyarrow.dataset and DuckDB read a table's
files as one (``read_parquet('CACHE/tables/throughput/*.parquet')``).

Writes are atomic per batch: each file is written under a temporary name and renamed, the
manifest last. A survey stopped at any point (Ctrl-C, a killed worker) leaves the cache
valid (a batch without a manifest is invisible, and :meth:`Cache.compact` removes its
files); the next survey reads what was finished and does the rest. When two manifests name
the same folder, the later one (its ``seq``) holds.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..errors import DptraceError

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from ..dataset import Dataset

#: cache.json's ``format``
FORMAT = "dptrace-fleet-cache"
#: version of this layout
LAYOUT = 1
#: the column that ties every cached row to its run: ``<folder key>/<run id>``
RUN_KEY = "run_key"
#: the tables of a Dataset besides its parsed ones
SHARED = ("sources", "problems", "runs")


def run_prefix(folder: str, key: str) -> str:
    """The start of the run keys of a job folder: its key, and a hash of its path (two
    folders with the same files have the same key, not the same runs):
    ``<key[:32]>-<sha256(path)[:12]>``; a run's key is ``<prefix>/<run id>``."""
    import hashlib

    where = hashlib.sha256(folder.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return f"{key[:32]}-{where}"


def _temp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")


@contextlib.contextmanager
def _atomic(path: Path, mode: str) -> Iterator[IO[Any]]:
    """A file to write ``path`` through, atomically: written under a temporary name,
    flushed to disk, then renamed over ``path``; on any error (Ctrl-C too) the temporary
    file is removed and ``path`` is left as it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_name(path)
    try:
        with open(tmp, mode, encoding=None if "b" in mode else "utf-8") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_table(df: pd.DataFrame, path: Path, table: str) -> int:
    """``df`` (with a ``run_key`` column) as the Parquet file ``path``, atomically (a
    temporary name, renamed): the table's explicit Arrow schema, ``run_key`` as
    large_string. Returns the rows written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .. import store

    keys = df[RUN_KEY].astype(object).tolist()
    arrow = store.arrow_table(df.drop(columns=[RUN_KEY]), table)
    arrow = arrow.append_column(pa.field(RUN_KEY, pa.large_string()),
                                pa.array(keys, pa.large_string()))
    with _atomic(path, "wb") as fh:
        pq.write_table(arrow, fh, compression=store.COMPRESSION)
    return len(df)


def _arrow(path: Path, keys: Any = None) -> pa.Table:
    """A cached file as Arrow, only the rows of ``keys`` (an Arrow array of run keys)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:
        raise DptraceError(f"{path}: cannot be read ({exc}): run `dptrace cache clear` "
                           "and survey again") from None
    if keys is not None:
        table = table.filter(pc.is_in(table[RUN_KEY], keys))
    return table


def _frame(table: pa.Table, metadata: Any, path: Any) -> pd.DataFrame:
    """An Arrow table of cached rows as pandas: saved dtypes, ``run_key`` a string."""
    import pandas as pd

    from .. import store

    rk = table[RUN_KEY]
    df = store.frame(table.drop_columns([RUN_KEY]), metadata, path)
    df[RUN_KEY] = pd.array(rk.to_pylist(), dtype="string")
    return df


def _key_array(keys: Sequence[str] | None) -> Any:
    import pyarrow as pa

    return None if keys is None else pa.array(list(keys), pa.large_string())


def read_file(path: Path, keys: Sequence[str] | None = None) -> pd.DataFrame:
    """A cached table file as pandas (its saved dtypes), ``run_key`` kept; only the rows of
    ``keys`` (run keys) when given."""
    table = _arrow(path, _key_array(keys))
    return _frame(table, table.schema.metadata, path)


def read_files(paths: Sequence[Path], keys: Sequence[str] | None = None) -> pd.DataFrame | None:
    """Cached files of one table as one frame (rows of ``keys`` only); None when none has
    rows. Files without categorical columns are joined as Arrow and converted once (the
    fleet tables: a warm survey of 10,000 runs reads ~160 files of each); the others one by
    one (each file's categories are its own), then concatenated."""
    import pyarrow as pa

    from .. import schema

    wanted = _key_array(keys)
    tables = [(p, t) for p in paths if (t := _arrow(p, wanted)).num_rows]
    if not tables:
        return None
    meta = tables[0][1].schema.metadata
    if len(tables) > 1 and not _has_categories(meta) and all(
            t.schema.equals(tables[0][1].schema, check_metadata=False) for _, t in tables):
        joined = pa.concat_tables([t for _, t in tables])
        return _frame(joined, meta, tables[0][0])
    frames = [_frame(t, t.schema.metadata, p) for p, t in tables]
    return frames[0] if len(frames) == 1 else schema.concat(frames)


def _has_categories(metadata: Any) -> bool:
    from .. import store

    raw = (metadata or {}).get(store.META_KEY)
    if raw is None:
        return True
    try:
        columns = json.loads(raw)["columns"]
    except (ValueError, KeyError, TypeError):
        return True
    return any(c.get("dtype") == "category" for c in columns.values())


@dataclass
class Entry:
    """One job folder's manifest row."""

    folder: str
    key: str
    files: list[list[Any]]           # [rel, size, mtime_ns, content hash]
    formats: dict[str, str]          # format -> parser version
    core: str
    tables_batch: str | None
    tables: dict[str, int]           # table -> rows in tables_batch
    derived_key: str | None
    derived_batch: str | None
    runs: list[str]
    status: str                      # ok / partial / failed / error
    error: str | None
    parse_s: float
    seq: int = 0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> Entry:
        fields = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in fields})

    def known_hashes(self) -> dict[str, tuple[int, int, str]]:
        return {str(f[0]): (int(f[1]), int(f[2]), str(f[3])) for f in self.files}

    @property
    def prefix(self) -> str:
        """The start of its runs' keys (:func:`run_prefix`)."""
        return run_prefix(self.folder, self.key)

    def run_keys(self) -> list[str]:
        """Its runs' keys, and ``<prefix>/`` (rows of no run, an error row)."""
        return [*(f"{self.prefix}/{r}" for r in self.runs), f"{self.prefix}/"]


def _shared(e: Entry, same: dict[str, str]) -> Entry:
    """``e`` with the strings that many entries repeat taken from ``same`` (one object per
    distinct value)."""
    def one(v: Any) -> Any:
        return same.setdefault(v, v) if isinstance(v, str) else v

    e.core, e.tables_batch, e.derived_batch = one(e.core), one(e.tables_batch), \
        one(e.derived_batch)
    e.status = one(e.status)
    e.formats = {one(k): one(v) for k, v in e.formats.items()}
    e.tables = {one(k): v for k, v in e.tables.items()}
    return e


class Cache:
    """A fleet cache directory (created on first use; one that holds anything else is
    refused)."""

    def __init__(self, directory: str | os.PathLike[str], *, create: bool = True) -> None:
        self.root = Path(directory)
        marker = self.root / "cache.json"
        if marker.is_file():
            try:
                meta = json.loads(marker.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise DptraceError(f"{marker}: not readable ({exc})") from None
            if meta.get("format") != FORMAT:
                raise DptraceError(f"{self.root}: not a dptrace fleet cache")
            if meta.get("layout") != LAYOUT or meta.get("schema_version") != _schema_version():
                raise DptraceError(
                    f"{self.root}: a fleet cache of layout {meta.get('layout')}, schema "
                    f"version {meta.get('schema_version')}; this dptrace writes layout "
                    f"{LAYOUT}, schema version {_schema_version()}: run `dptrace cache "
                    f"clear {self.root}` and survey again")
            return
        if not create:
            raise DptraceError(f"{self.root}: not a dptrace fleet cache (no cache.json)")
        if self.root.exists() and (not self.root.is_dir() or any(self.root.iterdir())):
            raise DptraceError(f"{self.root}: exists and is not an empty directory nor a "
                               "fleet cache: not used; choose a new directory")
        self.root.mkdir(parents=True, exist_ok=True)
        _write_json(marker, {"format": FORMAT, "layout": LAYOUT,
                             "schema_version": _schema_version()})

    # --- the manifests --------------------------------------------------------------------

    def manifests(self) -> list[Path]:
        d = self.root / "batches"
        return sorted(d.glob("*.json")) if d.is_dir() else []

    def entries(self) -> dict[str, Entry]:
        """The live entry of every folder the cache holds (the latest manifest's: of two
        with the same ``seq``, the later batch's). The manifests are read newest batch
        first, so that a folder's superseded rows (its task's batch, once a survey merged
        the derived rows) are skipped before an Entry is made of them; the strings many
        entries repeat (core and parser versions, batch ids, statuses, table names) are
        kept once (a warm survey of 3,000 folders: the driver's peak)."""
        out: dict[str, Entry] = {}
        same: dict[str, str] = {}
        for path in reversed(self.manifests()):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue   # a manifest being replaced: its batch is read next time
            seq = data.get("seq", 0)
            for row in data.get("entries", []):
                old = out.get(row.get("folder"))
                if old is None or seq > old.seq:
                    e = Entry.of({**row, "seq": seq})
                    out[e.folder] = _shared(e, same)
        return out

    def new_batch(self) -> str:
        """A new batch id: its time (ordered) and a random part."""
        return f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"

    def write_batch(self, batch: str, entries: Sequence[Entry],
                    tables: Mapping[str, pd.DataFrame],
                    derived: Mapping[str, pd.DataFrame]) -> None:
        """A batch's table files, then its manifest (the batch exists from that moment)."""
        for name, df in tables.items():
            if len(df):
                write_table(df, self.root / "tables" / name / f"{batch}.parquet", name)
        for name, df in derived.items():
            if len(df):
                write_table(df, self.root / "derived" / name / f"{batch}.parquet", name)
        seq = time.time_ns()
        _write_json(self.root / "batches" / f"{batch}.json",
                    {"batch": batch, "seq": seq, "entries": [e.as_dict() for e in entries]})

    # --- reading --------------------------------------------------------------------------

    def read(self, part: str, name: str, batches: Iterable[str],
             keys: Sequence[str] | None = None) -> pd.DataFrame | None:
        """Table ``name`` of ``part`` (tables or derived) from these batches (rows of
        ``keys`` only, when given); None when none of them has rows of it."""
        paths = [p for b in dict.fromkeys(batches)
                 if (p := self.root / part / name / f"{b}.parquet").is_file()]
        return read_files(paths, keys)

    def dataset(self, entries: Sequence[Entry], run_keys: Sequence[str] | None = None,
                ) -> Dataset:
        """The Dataset of these folders' runs from the cached tables (``run_keys``: only
        these runs): as ``load`` of each folder gave it, the folders concatenated (a run id
        two folders share is renamed ``id#2``, as :meth:`Dataset.concat` does)."""
        from .. import schema
        from ..dataset import Dataset

        parts = list(self.datasets(entries, run_keys).values())
        if not parts:
            return Dataset({}, schema.tables()["sources"].empty(),
                           schema.tables()["problems"].empty())
        return parts[0] if len(parts) == 1 else Dataset.concat(parts)

    def datasets(self, entries: Sequence[Entry], run_keys: Sequence[str] | None = None,
                 ) -> dict[str, Dataset]:
        """Each folder's Dataset (by folder) from the cached tables, each table file read
        once for all of them."""
        from .. import schema
        from ..dataset import Dataset

        keys = list(run_keys) if run_keys is not None else [
            k for e in entries for k in e.run_keys()]
        by_batch: dict[str, list[Entry]] = {}
        for e in entries:
            if e.tables_batch is not None:
                by_batch.setdefault(e.tables_batch, []).append(e)
        names: list[str] = []
        for e in entries:
            names.extend(n for n in e.tables if n not in names)
        read: dict[str, pd.DataFrame] = {}
        for name in names:
            df = self.read("tables", name, [b for b, es in by_batch.items()
                                            if any(name in e.tables for e in es)], keys)
            if df is not None:
                read[name] = df
        parts: dict[str, Dataset] = {}
        for e in entries:
            prefix = f"{e.prefix}/"

            def mine(df: pd.DataFrame | None, prefix: str = prefix) -> pd.DataFrame | None:
                if df is None:
                    return None
                sel = df[df[RUN_KEY].str.startswith(prefix).fillna(False).to_numpy()]
                return sel.drop(columns=[RUN_KEY]).reset_index(drop=True)

            tables = {n: t for n in names if n not in SHARED
                      and (t := mine(read.get(n))) is not None and len(t)}
            shared = {n: mine(read.get(n)) for n in SHARED}
            sources = shared["sources"] if shared["sources"] is not None else \
                schema.tables()["sources"].empty()
            problems = shared["problems"] if shared["problems"] is not None else \
                schema.tables()["problems"].empty()
            runs = shared["runs"]
            if runs is not None and run_keys is not None:
                runs = runs.reset_index(drop=True)
            parts[e.folder] = Dataset(tables, sources, problems, runs)
        return parts

    # --- maintenance ----------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        """What the cache holds: folders, runs, batches, files and bytes per part."""
        entries = self.entries()
        out: dict[str, Any] = {"path": str(self.root), "folders": len(entries),
                               "runs": sum(len(e.runs) for e in entries.values()),
                               "errors": sum(e.status == "error" for e in entries.values()),
                               "manifests": len(self.manifests())}
        for part in ("tables", "derived"):
            files = list((self.root / part).glob("*/*.parquet"))
            out[part] = {"tables": len({f.parent.name for f in files}), "files": len(files),
                         "bytes": sum(f.stat().st_size for f in files)}
        live = {b for e in entries.values() for b in (e.tables_batch, e.derived_batch) if b}
        stems = {f.stem for part in ("tables", "derived")
                 for f in (self.root / part).glob("*/*.parquet")}
        out["unreferenced_batches"] = len(stems - live)
        return out

    def compact(self, per_file: int = 2048) -> dict[str, int]:
        """Rewrite the live rows into batches of up to ``per_file`` folders each (one file
        per table per batch), then remove the old manifests and every file no live entry
        names (also those of interrupted batches). Atomic as a survey's writes: the new
        batches are complete before anything old goes."""
        entries = list(self.entries().values())
        old_manifests = self.manifests()
        written = 0
        for i in range(0, len(entries), per_file):
            group = entries[i: i + per_file]
            batch = self.new_batch()
            tables = self._gather("tables", group, lambda e: e.tables_batch,
                                  lambda e: list(e.tables))
            derived = self._gather("derived", group, lambda e: e.derived_batch, None)
            new = [Entry.of({**e.as_dict(),
                             "tables_batch": batch if e.tables_batch else None,
                             "derived_batch": batch if e.derived_batch else None})
                   for e in group]
            self.write_batch(batch, new, tables, derived)
            written += 1
        keep = {p.name for p in self.manifests()} - {p.name for p in old_manifests}
        for p in old_manifests:
            if p.name not in keep:
                with contextlib.suppress(OSError):
                    p.unlink()
        removed = self._remove_unreferenced()
        return {"folders": len(entries), "batches": written, "files_removed": removed}

    def _gather(self, part: str, group: Sequence[Entry], batch_of: Any,
                names_of: Any) -> dict[str, pd.DataFrame]:
        from .. import schema

        out: dict[str, pd.DataFrame] = {}
        by_batch: dict[str, list[Entry]] = {}
        for e in group:
            b = batch_of(e)
            if b:
                by_batch.setdefault(b, []).append(e)
        names = sorted({f.parent.name for f in (self.root / part).glob("*/*.parquet")})
        for name in names:
            frames = []
            for b, es in by_batch.items():
                keys = [k for e in es for k in e.run_keys()]
                df = self.read(part, name, [b], keys)
                if df is not None:
                    frames.append(df)
            if frames:
                out[name] = frames[0] if len(frames) == 1 else schema.concat(frames)
        return out

    def remove_derived(self, batches: Iterable[str | None]) -> int:
        """Remove the derived files of these batches that no live entry names."""
        live = {e.derived_batch for e in self.entries().values()}
        removed = 0
        for b in batches:
            if b is None or b in live:
                continue
            for f in (self.root / "derived").glob(f"*/{b}.parquet"):
                with contextlib.suppress(OSError):
                    f.unlink()
                    removed += 1
        return removed

    def _remove_unreferenced(self) -> int:
        live = {b for e in self.entries().values() for b in (e.tables_batch, e.derived_batch)
                if b}
        removed = 0
        for part in ("tables", "derived"):
            for f in list((self.root / part).glob("*/*")):
                if f.suffix == ".parquet" and f.stem in live:
                    continue
                with contextlib.suppress(OSError):
                    f.unlink()
                    removed += 1
        for f in (self.root / "batches").glob(".*"):   # interrupted manifests
            with contextlib.suppress(OSError):
                f.unlink()
        return removed

    def clear(self) -> int:
        """Remove everything the cache holds (the directory stays, as an empty cache)."""
        n = 0
        for part in ("batches", "tables", "derived"):
            d = self.root / part
            if d.exists():
                n += sum(1 for _ in d.rglob("*") if _.is_file())
                shutil.rmtree(d)
        return n


def _schema_version() -> int:
    from .. import schema

    return schema.SCHEMA_VERSION


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    with _atomic(path, "w") as fh:
        json.dump(data, fh, ensure_ascii=False, default=str)

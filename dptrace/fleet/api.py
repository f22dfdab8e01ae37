"""``dptrace.survey``: every run under some roots, one row each, through the fleet cache.

The survey finds the job folders (:mod:`.discover`), asks the cache which of them it holds
up to date (same files by size and mtime, same parser versions, same analysis version and
options: nothing to do), and hands the rest to the engine in tasks of ``batch`` folders
(:mod:`.work`: each task reads, analyses and writes its own batch of Parquet files, and
returns its manifest rows). The fleet tables are then read from the cache's ``derived/``.
Without a cache directory the survey uses a temporary one, removed at the end.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import discover, versions
from .cache import Cache, Entry
from .work import Done, Settings, Task, run_task

if TYPE_CHECKING:
    import pandas as pd

    from ..dataset import Dataset

#: job folders per task (the issue's measure: 32-128 runs a task amortise the engine)
BATCH = 64
#: progress callback: (counts so far: cached/parsed/analysed/failed, folders in all)
ProgressFn = Callable[[Mapping[str, int], int], None]


def run_tasks(fn: Callable[[Any], Any], tasks: Sequence[Any], *, engine: str = "auto",
              workers: int | None = None, config: Any = None,
              timeout: float | None = None) -> Iterator[tuple[Any, Any]]:
    """``(task, result or exception)`` per task, as they complete, on the engine
    (:func:`dptrace.fleet.engines.run_tasks`); a bad engine or config is a DptraceError."""
    from ..errors import DptraceError
    from .engines import run_tasks as on_engine

    try:
        results = on_engine(fn, tasks, engine=engine, workers=workers, config=config,
                            timeout=timeout)
    except (ValueError, ImportError) as exc:
        raise DptraceError(f"--engine {engine}: {exc}") from None
    yield from results


@dataclass
class Fleet:
    """A survey's result: ``fleet`` (one row per run), ``findings`` (``fleet_findings``),
    ``ranks`` (``fleet_ranks``), ``job_figures``, and what it took (``stats``).
    :meth:`dataset` gives the parsed tables of some runs from the cache, as ``load`` of
    their folders would, without parsing again."""

    fleet: pd.DataFrame
    findings: pd.DataFrame
    ranks: pd.DataFrame
    job_figures: pd.DataFrame
    cache_dir: str | None
    entries: dict[str, Entry] = field(repr=False, default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)

    def dataset(self, keys: Iterable[str] | None = None) -> Dataset:
        """The Dataset of the runs ``keys`` (run keys, the ``run_key`` column; default:
        every run) read from the cache (a survey with ``cache=``): ordinary tables, for
        :func:`dptrace.report`, :func:`dptrace.compare`, :func:`dptrace.scaling`."""
        from ..errors import DptraceError

        if self.cache_dir is None:
            raise DptraceError("Fleet.dataset reads the cache: survey with cache=DIR")
        wanted = list(keys) if keys is not None else self.fleet["run_key"].astype(
            object).tolist()
        by_key = {e.prefix: e for e in self.entries.values()}
        chosen: dict[str, Entry] = {}
        for k in wanted:
            e = by_key.get(str(k).split("/", 1)[0])
            if e is None or e.tables_batch is None:
                raise DptraceError(f"run key {k!r}: not in the cache (or its folder failed)")
            chosen.setdefault(e.prefix, e)
        return Cache(self.cache_dir, create=False).dataset(list(chosen.values()),
                                                           [str(k) for k in wanted])

    def summary(self) -> dict[str, Any]:
        """The terminal summary's content (:mod:`.summary`)."""
        from .summary import summary

        return summary(self)


#: a survey makes at least this many tasks where it has folders enough
MIN_TASKS = 16


def survey(roots: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] = (), *,
           cache: str | os.PathLike[str] | None = None, manifest: str | None = None,
           since: dt.datetime | str | None = None, engine: str = "auto",
           workers: int | None = None, batch: int = BATCH, warmup: float = 0.1,
           thresholds: Mapping[str, float] | None = None, timeout: float | None = None,
           max_decompressed: int | None = None, engine_config: Any = None,
           progress: ProgressFn | None = None) -> Fleet:
    """Survey every run under ``roots`` (directories: each job folder a run, split by the
    ``runs`` rules as ``dptrace report FOLDER`` splits it; see :mod:`.discover`), or the
    folders a ``manifest`` file lists; only those with a file modified since ``since``.
    ``cache``: the fleet cache directory (created when missing); a second survey reads it
    instead of the logs. ``engine``/``workers``: where tasks of ``batch`` folders run.
    ``warmup``, ``thresholds``: as for :func:`dptrace.report`. ``timeout``: seconds per
    folder (its row then says so; where a folder's timer cannot run, on a Dask worker's
    thread, the engine stops a task after ``timeout`` times its folders). A folder that
    fails is a row with its error. ``engine_config``: the engine's settings, a mapping or
    a TOML file (:func:`dptrace.fleet.engines.run_tasks`'s ``config``)."""
    from ..errors import DptraceError

    t0 = time.perf_counter()
    cpu0 = time.process_time()
    given = [roots] if isinstance(roots, (str, os.PathLike)) else list(roots)
    paths = [os.fspath(r) for r in given]
    for p in paths:
        if not os.path.exists(p):
            raise DptraceError(f"{p}: no such file or directory")
    when = _since(since)
    folders = discover.job_folders(paths, since=when) if paths else []
    if manifest is not None:
        listed = discover.from_manifest(manifest)
        if when is not None:
            listed = discover.job_folders(listed, since=when)
        folders = list(dict.fromkeys([*folders, *listed]))
    from .. import formats

    with _cache_dir(cache) as where:
        store = Cache(where)
        settings = Settings(where, versions.parser_versions(formats.names()),
                            versions.core_version(), versions.analysis_version(), warmup,
                            dict(thresholds or {}), timeout, max_decompressed)
        entries = store.entries()
        todo: list[tuple[str, dict[str, Any] | None]] = []
        counts = {"cached": 0, "parsed": 0, "analysed": 0, "failed": 0}
        live: dict[str, Entry] = {}
        for folder in folders:
            e = entries.get(folder)
            if e is not None and _up_to_date(e, folder, settings):
                live[folder] = e
                counts["cached"] += 1
            else:
                todo.append((folder, e.as_dict() if e is not None else None))
        if progress is not None:
            progress(counts, len(folders))
        # tasks of ``batch`` folders, smaller when there are few folders (at least
        # MIN_TASKS tasks where there are folders enough: the bar moves, the workers share
        # the work)
        size = max(1, min(int(batch), -(-len(todo) // MIN_TASKS)))
        tasks = [Task(tuple(todo[i: i + size]), settings) for i in range(0, len(todo), size)]
        backstop = None if timeout is None else timeout * size + 60
        # nothing to do (a warm survey): no engine started (a Dask cluster's start and
        # close cost 3 CPU-s and 10-20 s of a warm 1,000-run survey's wall)
        done = run_tasks(run_task, tasks, engine=engine, workers=workers,
                         config=engine_config, timeout=backstop) if tasks else iter(())
        for task, result in done:
            if isinstance(result, Done):
                for row, outcome in zip(result.entries, result.outcomes, strict=True):
                    live[row["folder"]] = Entry.of(row)
                    counts[outcome] += 1
            else:   # the whole task failed (a worker died): its folders' rows say why
                for folder, _ in task.items:
                    live[folder] = _failed(folder, settings, result)
                    counts["failed"] += 1
            if progress is not None:
                progress(counts, len(folders))
        ordered = [live[f] for f in folders if f in live]
        tables = _read_derived(store, ordered)
        if cache is not None:
            _merge_derived(store, ordered, tables)
        fleet = tables["fleet"]
        if counts["cached"]:   # rows of folders this survey took from the cache as they were
            hits = {entries[f].prefix for f in folders
                    if f in entries and live.get(f) is entries[f]}
            hit = fleet["run_key"].astype(object).map(
                lambda k: str(k).split("/", 1)[0] in hits).to_numpy(dtype=bool)
            fleet.loc[hit, "cache"] = "hit"
        stats = {"folders": len(folders), "runs": len(fleet), **counts,
                 "wall_s": time.perf_counter() - t0,
                 "cpu_s_main": time.process_time() - cpu0}
        return Fleet(fleet, tables["fleet_findings"], tables["fleet_ranks"],
                     tables["job_figures"], None if cache is None else str(where),
                     {e.folder: e for e in ordered}, stats)


def _up_to_date(e: Entry, folder: str, s: Settings) -> bool:
    """Whether the cache's entry holds for ``folder`` now: same files by (path, size,
    mtime), same parser versions of its formats, same core, same derived key."""
    if e.status in ("error", "timeout") or e.derived_batch is None or not e.key:
        return False
    if e.core != s.core or any(s.versions.get(f, "") != v for f, v in e.formats.items()):
        return False
    if e.derived_key != s.derived_key(e.key):
        return False
    found = discover.files(folder)
    return [[f.rel, f.size, f.mtime_ns] for f in found] == [x[:3] for x in e.files]


#: derived batches a survey reads before it merges them into one (a warm survey reads one
#: file per derived table per batch: 10,000 runs in tasks of 64 were ~640 files)
MERGE_DERIVED = 8


def _merge_derived(store: Cache, entries: Sequence[Entry],
                   tables: Mapping[str, pd.DataFrame]) -> None:
    """When the surveyed folders' derived rows lie in more than MERGE_DERIVED batches,
    write them (just read) as one batch and point the folders' entries at it, then remove
    the derived files no entry of the cache names any more. The parsed tables stay where
    they are. Atomic as any batch: the new manifest is written last."""
    kept = [e for e in entries if e.key and e.derived_batch and e.status not in (
        "error", "timeout")]
    old = {e.derived_batch for e in kept}
    if len(old) <= MERGE_DERIVED:
        return
    prefixes = {e.prefix for e in kept}
    rows = {}
    for name, df in tables.items():
        mine = df["run_key"].astype(object).map(
            lambda k: str(k).split("/", 1)[0] in prefixes).to_numpy(dtype=bool)
        # every row is a kept folder's in the usual case: no copy of the table (it was
        # the survey's peak: the tables read, a copy, and its Arrow table being written)
        rows[name] = df if mine.all() else df[mine].reset_index(drop=True)
    batch = store.new_batch()
    store.write_batch(batch, [Entry.of({**e.as_dict(), "derived_batch": batch}) for e in kept],
                      {}, rows)
    store.remove_derived(old)


def _failed(folder: str, s: Settings, exc: BaseException) -> Entry:
    """The entry of a folder whose task failed as a whole (not cached: written nowhere)."""
    return Entry(folder, "", [], {}, s.core, None, {}, None, None, [], "error",
                 f"{type(exc).__name__}: {exc}", 0.0)


def _read_derived(store: Cache, entries: Sequence[Entry]) -> dict[str, pd.DataFrame]:
    """The fleet tables of these entries from the cache, in their order; a folder whose
    task failed as a whole gets its error row here."""
    import pandas as pd

    from .. import schema
    from . import analyse
    from . import tables as ft

    keys = [k for e in entries if e.key for k in e.run_keys()]
    batches = [e.derived_batch for e in entries if e.derived_batch]
    out: dict[str, pd.DataFrame] = {}
    order = {e.prefix: i for i, e in enumerate(entries)}
    for name in ft.DERIVED:
        df = store.read("derived", name, batches, keys)
        table = schema.tables()[name]
        if df is None:
            df = table.empty()
            if "run_key" not in df.columns:
                df.insert(0, "run_key", pd.array([], dtype="string"))
        if name == "fleet":
            lost = [analyse.error_row(e.folder, e.prefix, e.status, e.error or "")
                    for e in entries if not e.key]
            if lost:
                df = schema.concat([df, *lost])
        folder_pos = df["run_key"].astype(object).map(
            lambda k: order.get(str(k).split("/", 1)[0], len(order)))
        df = df.assign(_pos=folder_pos.to_numpy()).sort_values("_pos", kind="stable").drop(
            columns="_pos").reset_index(drop=True)
        cols = [c.name for c in table.loaded_columns]
        out[name] = df[[c for c in cols if c in df.columns]]
    return out


def _since(value: dt.datetime | str | None) -> dt.datetime | None:
    if value is None or isinstance(value, dt.datetime):
        return value
    from ..errors import DptraceError

    try:
        when = dt.datetime.fromisoformat(str(value))
    except ValueError:
        raise DptraceError(f"--since {value!r}: a date (2026-11-01) or time "
                           "(2026-11-01T08:00)") from None
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)


@contextlib.contextmanager
def _cache_dir(cache: str | os.PathLike[str] | None) -> Iterator[str]:
    if cache is not None:
        yield os.fspath(cache)
        return
    tmp = tempfile.mkdtemp(prefix="dptrace-survey-")
    try:
        yield os.path.join(tmp, "cache")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

"""One task of a survey: a batch of job folders, read (or taken from the cache), analysed,
and written to the cache as one file per table by the process that did the work. What
goes back to the survey is small: the batch's manifest rows (:class:`~.cache.Entry`),
never the tables.

Inside a task everything runs in one process (``load(..., executor="serial")``): a task
may run in a pool's worker or on a Dask worker, where no further processes may start.
A folder that fails or runs out of time is an entry with its error and one fleet row that
says so; the task goes on with the next folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import signal
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import discover
from .cache import RUN_KEY, Cache, Entry, run_prefix


@dataclass(frozen=True)
class Settings:
    """What every task of one survey shares (picklable)."""

    cache: str
    versions: Mapping[str, str]        # every format's parser version
    core: str
    analysis: str                      # the analysis version
    warmup: float = 0.1
    thresholds: Mapping[str, float] = field(default_factory=dict)
    timeout: float | None = None       # seconds per folder (None: no limit)
    max_decompressed: int | None = None

    def derived_key(self, key: str) -> str:
        """A folder's derived key: its key, the analysis version and the options."""
        text = json.dumps([key, self.analysis, self.warmup, sorted(self.thresholds.items())])
        return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Task:
    """A batch of job folders, each with the cache's entry for it (or None)."""

    items: tuple[tuple[str, dict[str, Any] | None], ...]
    settings: Settings

    def __len__(self) -> int:
        return len(self.items)


@dataclass
class Done:
    """What a task gives back: its entries and, per folder, how it went."""

    entries: list[dict[str, Any]]
    outcomes: list[str]                # parsed / analysed / failed, per folder


class Timeout(Exception):
    """A folder took longer than the survey's --timeout."""


@contextlib.contextmanager
def _limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`Timeout` in this block after ``seconds`` (where a timer can interrupt
    it: the main thread of a process; elsewhere the block runs unlimited)."""
    if not seconds or threading.current_thread() is not threading.main_thread() or \
            not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise Timeout(f"took longer than {seconds:g} s (--timeout)")

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_task(task: Task) -> Done:
    """Do one task (see the module's docstring); the cache holds its batch when it returns."""
    import pandas as pd

    from .. import schema
    from . import analyse

    s = task.settings
    cache = Cache(s.cache)
    batch = cache.new_batch()
    tables: dict[str, list[pd.DataFrame]] = {}
    derived: dict[str, list[pd.DataFrame]] = {}
    entries: list[Entry] = []
    outcomes: list[str] = []
    stored = _stored(cache, task, s)
    for folder, old_raw in task.items:
        old = Entry.of(old_raw) if old_raw else None
        t0 = time.perf_counter()
        found = discover.files(folder)
        content = discover.hashes(folder, found, old.known_hashes() if old else None)
        files = [[f.rel, f.size, f.mtime_ns, content[f.rel]] for f in found]
        reuse = None
        if old is not None and old.tables_batch and old.status != "error":
            versions = {k: s.versions.get(k, "") for k in old.formats}
            if discover.folder_key(found, content, versions, s.core) == old.key:
                reuse = old
        try:
            with _limit(s.timeout):
                if reuse is not None:   # the files are those cached: analyse again only
                    ds = stored[folder] if folder in stored else cache.dataset([reuse])
                    key, fmts, parse_s = reuse.key, reuse.formats, reuse.parse_s
                    own_tables = None
                    outcome = "analysed"
                else:
                    ds, parse_s = _load(folder, s)
                    fmts = {str(f): s.versions.get(str(f), "")
                            for f in ds.sources["format"].dropna().unique()}
                    key = discover.folder_key(found, content, fmts, s.core)
                    own_tables = _with_keys(ds, run_prefix(folder, key))
                    outcome = "parsed"
                out = analyse.summarise(ds, folder, run_prefix(folder, key), warmup=s.warmup,
                                        thresholds=s.thresholds, parse_s=parse_s,
                                        cache=outcome)
        except Exception as exc:   # noqa: BLE001  (a folder's failure is its row, never the survey's)
            status = "timeout" if isinstance(exc, Timeout) else "error"
            key = discover.folder_key(found, content, {}, s.core)
            message = f"{type(exc).__name__}: {exc}"
            row = analyse.error_row(folder, run_prefix(folder, key), status, message,
                                    time.perf_counter() - t0)
            derived.setdefault("fleet", []).append(row)
            # the row of an error or a timeout is this survey's, never taken from the cache:
            # the next survey tries the folder again (a file made readable changes no mtime)
            entries.append(Entry(folder, key, files, {}, s.core, None, {}, None, batch, [],
                                 status, message, time.perf_counter() - t0))
            outcomes.append("failed")
            continue
        for name, df in out.items():
            derived.setdefault(name, []).append(df)
        table_rows: dict[str, int] = {}
        if own_tables is not None:
            for name, df in own_tables.items():
                tables.setdefault(name, []).append(df)
                table_rows[name] = len(df)
        fleet = out["fleet"]
        status = _worst(fleet["status"].astype(object).tolist())
        entries.append(Entry(
            folder, key, files, fmts, s.core,
            batch if own_tables is not None else (reuse.tables_batch if reuse else None),
            table_rows if own_tables is not None else (reuse.tables if reuse else {}),
            s.derived_key(key), batch, [str(r) for r in fleet["run"].astype(object)],
            status, None, parse_s))
        outcomes.append(outcome)
    cat = {n: (fs[0] if len(fs) == 1 else schema.concat(fs)) for n, fs in tables.items()}
    dcat = {n: (fs[0] if len(fs) == 1 else schema.concat(fs)) for n, fs in derived.items()}
    cache.write_batch(batch, entries, cat, dcat)
    return Done([e.as_dict() for e in entries], outcomes)


def _stored(cache: Cache, task: Task, s: Settings) -> dict[str, Any]:
    """The cached Datasets of the task's folders whose tables hold by size and mtime (the
    ones the survey sends back for analysis only), each table file read once; a folder
    whose files changed is checked again by content in the loop."""
    maybe = []
    for _, raw in task.items:
        if not raw or not raw.get("tables_batch") or raw.get("status") == "error":
            continue
        e = Entry.of(raw)
        if e.core == s.core and all(s.versions.get(k, "") == v for k, v in e.formats.items()):
            maybe.append(e)
    if not maybe:
        return {}
    try:
        return cache.datasets(maybe)
    except Exception:   # noqa: BLE001  (read again folder by folder, with its own error)
        return {}


def _load(folder: str, s: Settings) -> tuple[Any, float]:
    """``load`` of one job folder as ``dptrace report FOLDER`` reads it, in this process."""
    from .. import api

    t0 = time.perf_counter()
    ds = api.load(folder, executor="serial", max_decompressed=s.max_decompressed)
    return ds, time.perf_counter() - t0


def _with_keys(ds: Any, key: str) -> dict[str, Any]:
    """Every table of ``ds`` (parsed, sources, problems, runs) with its ``run_key``
    column: ``<key>/<run>`` (``<key>/`` for a row of no run)."""
    import pandas as pd

    out = {}
    parts = {**{n: ds[n] for n in ds.tables}, "sources": ds.sources, "problems": ds.problems,
             "runs": ds.runs}
    for name, df in parts.items():
        if not len(df):
            continue
        runs = df["run"].astype(object) if "run" in df.columns else pd.Series(
            [None] * len(df), dtype=object)
        keys = [f"{key}/" if r is None or r != r else f"{key}/{r}" for r in runs.tolist()]
        out[name] = df.assign(**{RUN_KEY: pd.array(keys, dtype="string")})
    return out


def _worst(statuses: Sequence[str]) -> str:
    for s in ("error", "timeout", "failed", "partial"):
        if s in statuses:
            return s
    return "ok"

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
import os
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
    #: False: each folder loaded and analysed on its own (what the joint read and analysis
    #: of a task's folders must equal: tests/test_fleet_joint_analysis.py)
    joint: bool = True

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
    from .engines import alarm

    with alarm(seconds, lambda: Timeout(f"took longer than {seconds:g} s (--timeout)")):
        yield


#: folders analysed through one analysis context (:func:`.analyse.summarise_many`)
ANALYSE_TOGETHER = 64


@dataclass
class _Read:
    """A folder of a task once read (parsed, or taken from the cache), before analysis."""

    folder: str
    t0: float
    files: list[list[Any]]
    found: list[Any]
    content: dict[str, str]
    ds: Any = None
    key: str = ""
    fmts: dict[str, str] = field(default_factory=dict)
    parse_s: float = 0.0
    own_tables: dict[str, Any] | None = None
    reuse: Entry | None = None
    outcome: str = "parsed"
    out: dict[str, Any] | None = None      # its own fleet tables (analysed alone)
    rows: list[dict[str, Any]] | None = None   # its fleet rows (analysed with others)
    error: BaseException | None = None
    joint: Any = None       # the task's load it is read from (a joint.Together), not cut
    slot: int = -1          # its number among the folders of ``joint``
    table_rows: dict[str, int] | None = None   # its rows per table (read from ``joint``)


def run_task(task: Task) -> Done:
    """Do one task (see the module's docstring); the cache holds its batch when it returns.

    Each folder is read as ``dptrace report FOLDER`` reads it: its cached tables, or its
    rows of one ``load`` of the task's folders (:func:`_load_together`: the rows of every
    folder that load can be cut for, one Dataset, cached and analysed as it is), or (a
    folder it cannot be cut for, every folder under a per-folder ``timeout``) a ``load``
    of its own. The joint load's folders are analysed through one analysis context; the
    others, whose run ids are distinct, :data:`ANALYSE_TOGETHER` at a time through one
    context each (what the fleet reads is per run, so each folder's rows are those it has
    alone: docs/fleet.md, "One analysis for many folders"). A folder whose read or
    analysis fails is its own error row. With a per-folder ``timeout``, or
    ``Settings.joint`` False, every folder is read and analysed alone."""
    import pandas as pd

    from .. import schema

    s = task.settings
    cache = Cache(s.cache)
    batch = cache.new_batch()
    stored = _stored(cache, task, s)
    done = [_prepare(folder, Entry.of(raw) if raw else None, s) for folder, raw in task.items]
    together = None
    if not s.timeout and s.joint:   # (with a timeout each folder is read under its timer)
        together = _load_together([r for r in done if r.reuse is None], s)
    for r in done:
        _read(r, stored, cache, s)
    tables: dict[str, list[pd.DataFrame]] = {}
    derived: dict[str, list[pd.DataFrame]] = {}
    if together is not None:
        together = _keep_together(together, [r for r in done if r.joint is together])
    if together is not None:
        for name, df in _joint_tables(together, [r for r in done if r.joint is together]
                                      ).items():
            tables.setdefault(name, []).append(df)
    for group_tables in _analyse([r for r in done if r.error is None], s, together):
        for name, df in group_tables.items():
            derived.setdefault(name, []).append(df)
    entries: list[Entry] = []
    outcomes: list[str] = []
    for r in done:
        if r.error is not None or (r.out is None and r.rows is None):
            exc = r.error if r.error is not None else RuntimeError("not analysed")
            status = "timeout" if isinstance(exc, Timeout) else "error"
            key = discover.folder_key(r.found, r.content, {}, s.core)
            message = f"{type(exc).__name__}: {exc}"
            from . import analyse

            row = analyse.error_row(r.folder, run_prefix(r.folder, key), status, message,
                                    time.perf_counter() - r.t0)
            derived.setdefault("fleet", []).append(row)
            # the row of an error or a timeout is this survey's, never taken from the cache:
            # the next survey tries the folder again (a file made readable changes no mtime)
            entries.append(Entry(r.folder, key, r.files, {}, s.core, None, {}, None, batch,
                                 [], status, message, time.perf_counter() - r.t0))
            outcomes.append("failed")
            continue
        if r.out is not None:
            for name, df in r.out.items():
                derived.setdefault(name, []).append(df)
            fleet_rows = r.out["fleet"][["run", "status"]].astype(object).to_dict("records")
        else:
            fleet_rows = r.rows or []
        table_rows: dict[str, int] | None = r.table_rows
        if r.own_tables is not None:
            table_rows = {}
            for name, df in r.own_tables.items():
                tables.setdefault(name, []).append(df)
                table_rows[name] = len(df)
        status = _worst([str(row["status"]) for row in fleet_rows])
        reuse = r.reuse
        entries.append(Entry(
            r.folder, r.key, r.files, r.fmts, s.core,
            batch if table_rows is not None else (reuse.tables_batch if reuse else None),
            table_rows if table_rows is not None else (reuse.tables if reuse else {}),
            s.derived_key(r.key), batch, [str(row["run"]) for row in fleet_rows],
            status, None, r.parse_s))
        outcomes.append(r.outcome)
    cat = {n: (fs[0] if len(fs) == 1 else schema.concat(fs)) for n, fs in tables.items()}
    dcat = {n: (fs[0] if len(fs) == 1 else schema.concat(fs)) for n, fs in derived.items()}
    cache.write_batch(batch, entries, cat, dcat)
    return Done([e.as_dict() for e in entries], outcomes)


def _prepare(folder: str, old: Entry | None, s: Settings) -> _Read:
    """One folder's files and their content hashes; ``reuse``: its cache entry when its
    files are those cached (by content) and the versions unchanged."""
    t0 = time.perf_counter()
    found = discover.files(folder)
    content = discover.hashes(folder, found, old.known_hashes() if old else None)
    r = _Read(folder, t0, [[f.rel, f.size, f.mtime_ns, content[f.rel]] for f in found],
              found, content)
    if old is not None and old.tables_batch and old.status != "error":
        versions = {k: s.versions.get(k, "") for k in old.formats}
        if discover.folder_key(found, content, versions, s.core) == old.key:
            r.reuse = old
    return r


def _read(r: _Read, stored: Mapping[str, Any], cache: Cache, s: Settings) -> None:
    """One folder's key and Dataset: its cached tables when ``reuse``, else the part of the
    task's joint load cut out for it (:func:`_load_together`), else its own load. A failure
    is kept in ``error``."""
    try:
        with _limit(s.timeout):
            if r.reuse is not None:   # the files are those cached: analyse again only
                folder = r.folder
                r.ds = stored[folder] if folder in stored else cache.dataset([r.reuse])
                r.key, r.fmts, r.parse_s = r.reuse.key, r.reuse.formats, r.reuse.parse_s
                r.outcome = "analysed"
            elif r.joint is not None:   # its fmts set by _load_together; its tables: the
                r.key = discover.folder_key(r.found, r.content, r.fmts, s.core)   # joint's
            else:
                if r.ds is None:
                    r.ds, r.parse_s = _load(r.folder, s)
                r.fmts = {str(f): s.versions.get(str(f), "")
                          for f in r.ds.sources["format"].dropna().unique()}
                r.key = discover.folder_key(r.found, r.content, r.fmts, s.core)
                r.own_tables = _with_keys(r.ds, run_prefix(r.folder, r.key))
            if s.timeout or not s.joint:   # analysed alone (under the folder's own timer)
                _analyse_alone(r, s)
    except Exception as exc:   # noqa: BLE001  (a folder's failure is its row, never the survey's)
        r.error = exc


def _load_together(reads: Sequence[_Read], s: Settings) -> Any:
    """Load the job folders of ``reads`` that are directories with one ``load`` (one
    argument each) and give it (:func:`.joint.together`: the rows of the folders it can
    be cut for, as one Dataset) to each folder it holds (``joint``, ``slot``; ``fmts``:
    the formats of its sources; ``parse_s``: the load's time shared out evenly). A folder
    the load cannot be cut for, and every folder when the load raises, keeps ``joint``
    None: it is loaded alone. (A folder that is a file is always loaded alone: the runs
    rules group file arguments across the load.)"""
    import pandas as pd

    from .. import api
    from . import joint

    dirs = [r for r in reads if os.path.isdir(r.folder)]
    if len(dirs) < 2:
        return None
    t0 = time.perf_counter()
    try:
        ds = api.load([r.folder for r in dirs], executor="serial",
                      max_decompressed=s.max_decompressed)
        together = joint.together(ds, [r.folder for r in dirs])
    except Exception:   # noqa: BLE001  (each folder alone: its failure is its row)
        return None
    del ds
    if together is None:
        return None
    share = (time.perf_counter() - t0) / len(dirs)
    slot = {f: k for k, f in enumerate(together.folders)}
    fmts: list[dict[str, str]] = [{} for _ in together.folders]
    sources = together.ds.sources
    for k, f in zip(together.slots["sources"].tolist(),
                    sources["format"].astype(object).tolist(), strict=True):
        if not pd.isna(f):
            fmts[k].setdefault(str(f), s.versions.get(str(f), ""))
    for r in dirs:
        if r.folder in slot:
            r.joint, r.slot, r.parse_s = together, slot[r.folder], share
            r.fmts = fmts[r.slot]
    return together


def _keep_together(together: Any, reads: Sequence[_Read]) -> Any:
    """``together`` when every folder of it was read from it without an error; else each
    such folder gets its own part of it (:func:`.joint.split`), and None."""
    from . import joint

    if all(r.error is None for r in reads):
        return together
    parts = joint.split(together.ds, together.folders)
    for r in reads:
        r.joint = None
        if r.error is None:
            r.ds = parts.get(r.folder)
            if r.ds is None:
                r.error = RuntimeError("not cut out of the task's load")
            else:
                r.own_tables = _with_keys(r.ds, run_prefix(r.folder, r.key))
    return None


def _joint_tables(together: Any, reads: Sequence[_Read]) -> dict[str, Any]:
    """Every table of ``together.ds`` with rows (parsed, sources, problems, runs), with
    its ``run_key`` column as :func:`_with_keys` gives each folder's (``<key>/<run>``,
    ``<key>/`` for a row of no run); each folder's rows per table in ``table_rows``."""
    import numpy as np
    import pandas as pd

    from . import joint

    ds = together.ds
    prefix = [""] * len(together.folders)
    counts: dict[int, dict[str, int]] = {}
    for r in reads:
        prefix[r.slot] = run_prefix(r.folder, r.key)
        r.table_rows = counts[r.slot] = {}
    out = {}
    parts = {**{n: ds[n] for n in ds.tables}, "sources": ds.sources, "problems": ds.problems,
             "runs": ds.runs}
    folder_of_run = {run: k for k, f in enumerate(together.folders)
                     for run in together.runs[f]}
    pre = np.array(prefix, dtype=object)
    for name, df in parts.items():
        if not len(df):
            continue
        slots = together.slots[name]
        codes, cats = joint.run_codes(df["run"])
        of_code = np.array([f"{prefix[folder_of_run[c]]}/{c}" for c in cats] + [""],
                           dtype=object)
        keys = of_code[codes]
        none = codes < 0
        if none.any():
            keys[none] = pre[slots[none]] + "/"
        out[name] = df.assign(**{RUN_KEY: pd.array(keys, dtype="string")})
        for k, n in enumerate(np.bincount(slots, minlength=len(prefix)).tolist()):
            if n and k in counts:
                counts[k][name] = n
    return out


def _analyse_alone(r: _Read, s: Settings) -> None:
    from . import analyse

    r.out = analyse.summarise(r.ds, r.folder, run_prefix(r.folder, r.key), warmup=s.warmup,
                              thresholds=s.thresholds, parse_s=r.parse_s, cache=r.outcome)


def _analyse(read: Sequence[_Read], s: Settings, together: Any = None,
             ) -> list[dict[str, Any]]:
    """Analyse every folder read and not yet analysed: those read from ``together`` (the
    task's joint load, :func:`_load_together`) through one analysis context of its
    Dataset; the others in groups of folders whose run ids are distinct, each group
    through one analysis context (the fleet tables returned, one per group; each
    folder's fleet rows in ``rows``); when a group's analysis fails, each of its folders
    alone (``out``; its own error then is its own row)."""
    from . import analyse

    out = []
    joint = [r for r in read if together is not None and r.joint is together]
    if joint:
        try:
            places = [(analyse.Place(r.folder, run_prefix(r.folder, r.key), r.parse_s, 0.0,
                                     r.outcome), together.runs[r.folder]) for r in joint]
            whole, rows = analyse.summarise_together(together.ds, places, warmup=s.warmup,
                                                     thresholds=s.thresholds)
        except Exception:   # noqa: BLE001  (each folder cut out of the load, as below)
            whole = None
            from .joint import split

            parts = split(together.ds, together.folders)
            for r in joint:
                r.joint, r.ds = None, parts.get(r.folder)
                if r.ds is None:
                    r.error = RuntimeError("not cut out of the task's load")
        if whole is not None:
            out.append(whole)
            for r in joint:
                r.rows = [rows[run] for run in together.runs[r.folder]]
    groups: list[list[_Read]] = []
    taken: list[set[str]] = []
    for r in read:
        if r.out is not None or r.rows is not None or r.error is not None:
            continue
        ids = set(r.ds.run_ids)
        for g, seen in zip(groups, taken, strict=True):
            if len(g) < ANALYSE_TOGETHER and not ids & seen:
                g.append(r)
                seen |= ids
                break
        else:
            groups.append([r])
            taken.append(set(ids))
    for g in groups:
        try:
            both = analyse.summarise_many(
                [(r.ds, r.folder, run_prefix(r.folder, r.key), r.parse_s, r.outcome)
                 for r in g], warmup=s.warmup, thresholds=s.thresholds)
        except Exception:   # noqa: BLE001  (each folder alone: its failure is its row)
            both = None
        if both is not None:
            out.append(both[0])
            for r, folder_rows in zip(g, both[1], strict=True):
                r.rows = folder_rows
            continue
        for r in g:
            try:
                _analyse_alone(r, s)
            except Exception as exc:   # noqa: BLE001
                r.error = exc
    return out


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

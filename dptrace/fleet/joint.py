"""Several job folders read by one ``load`` and cut back into each folder's own Dataset.

A load has a fixed cost (detection, grouping, conforming each table, the runs table) that
dominates a small folder's: 30-40 ms of a folder's 40-50 ms for a training log of tens of
KB. A task reads its folders with one ``load`` of all of them (one directory argument
each) and :func:`split` gives each folder the Dataset ``load(FOLDER)`` gives it, or says
that it cannot:

- the runs rules group a directory argument's inputs on their own (:func:`dptrace.runs.assign`:
  one run per job found in that directory), so no run spans two folders;
- but run ids are made unique across the whole load (``id#2``): a folder whose run labels
  or ids meet another folder's (the same folder name under two roots, one job id in two
  folders) is not cut out; it is loaded alone;
- a problem of a check across the load's inputs (two PyTorch traces of different folders
  that claim one rank) names the other folder's input: both folders are loaded alone;
- a run, source or problem that is not under exactly one folder (none is expected) makes
  every folder of the load be loaded alone.

Each folder's part: its rows of every table that has rows for it, of ``sources``,
``problems`` and ``runs``, in the load's order, index from 0, with the columns and dtypes
``load(FOLDER)`` gives, the ``run`` column categorical over the folder's run ids in order.
The other categorical columns keep the load's categories (a superset, in the load's
order: what :meth:`Dataset.concat` of the folders' Datasets and the cache's batch files
give them too; no rule reads a category that no row has). tests/test_fleet_joint.py
compares every table, column, dtype and value with ``load(FOLDER)`` for every kind of
fixture folder, two-job folders and same-named folders included.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from ..dataset import Dataset


def _owner(path: str, folders: Mapping[str, str]) -> str | None:
    """The folder (of ``folders``: absolute path -> folder as given) that holds ``path``."""
    p = os.path.abspath(str(path).split("::")[0])
    while True:
        if p in folders:
            return folders[p]
        parent = os.path.dirname(p)
        if parent == p:
            return None
        p = parent


def _column_owners(df: pd.DataFrame, folders: Mapping[str, str]) -> list[str | None]:
    """The folder of each row's ``source`` (one lookup per distinct source)."""
    srcs = df["source"].astype(object).tolist()
    seen: dict[Any, str | None] = {}
    out = []
    for s in srcs:
        if s not in seen:
            seen[s] = None if s is None or s != s else _owner(str(s), folders)
        out.append(seen[s])
    return out


@dataclass(frozen=True)
class _Owners:
    """The folder of each run (``folder_of``), and of each row of ``sources`` and
    ``problems`` (by position; None: under no folder)."""

    folder_of: dict[str, str]
    sources: list[str | None]
    problems: list[str | None]

    def loose(self, name: str) -> list[str | None] | None:
        """Each row's folder where a table's rows of no run have one (by their source)."""
        return {"sources": self.sources, "problems": self.problems}.get(name)


def _plan(ds: Dataset, folders: Sequence[str]) -> tuple[_Owners, list[str]] | None:
    """The owners of ``ds``'s rows and the folders that can be cut out, in order (see the
    module's docstring); None when none can."""
    by_abs = {os.path.abspath(f): f for f in folders}
    if len(by_abs) != len(folders):
        return None
    owners = _owners(ds, by_abs)
    if owners is None:
        return None
    clash = _clashes(ds, owners, by_abs, folders)
    keep = [f for f in folders if f not in clash]
    return (owners, keep) if keep else None


def _mine(ds: Dataset, owners: _Owners, folders: Sequence[str]) -> dict[str, list[str]]:
    """Each folder's run ids, in the load's order."""
    mine: dict[str, list[str]] = {f: [] for f in folders}
    for r in ds.run_ids:
        mine[owners.folder_of[r]].append(r)
    return mine


def _frames(ds: Dataset) -> dict[str, pd.DataFrame]:
    """Every table of ``ds`` by name, ``sources``, ``problems`` and ``runs`` included."""
    return {**{n: ds[n] for n in ds.tables}, "sources": ds.sources, "problems": ds.problems,
            "runs": ds.runs}


def _dataset(ds: Dataset, parts: Mapping[str, pd.DataFrame]) -> Dataset:
    """A Dataset of ``parts`` (cut from ``ds``'s tables of the same names)."""
    from ..dataset import Dataset

    return Dataset({n: parts[n] for n in ds.tables if n in parts}, parts["sources"],
                   parts["problems"], parts["runs"])


def split(ds: Dataset, folders: Sequence[str]) -> dict[str, Dataset]:
    """Each folder's own Dataset out of ``ds`` (the load of ``folders``, one argument
    each), for the folders it can be cut out for (see the module's docstring); the others
    are missing from the result and must be loaded alone."""
    plan = _plan(ds, folders)
    if plan is None:
        return {}
    owners, keep = plan
    mine = _mine(ds, owners, folders)
    slot = {f: k for k, f in enumerate(keep)}
    cut: dict[str, dict[str, pd.DataFrame]] = {f: {} for f in keep}
    for name, df in _frames(ds).items():
        for f, part in _cut(df, owners.folder_of, slot, mine, owners.loose(name)).items():
            cut[f][name] = part
    return {f: _dataset(ds, cut[f]) for f in keep}


@dataclass(frozen=True)
class Together:
    """The rows of a load that belong to the folders it can cut out, as one Dataset:
    ``ds`` is what :meth:`Dataset.concat` of those folders' :func:`split` parts gives
    (their rows folder by folder, each folder's in the load's order; ``run`` categorical
    over their run ids in that order), made by one ``take`` per table instead of a cut
    per folder and a concat. ``slots``: per table (``sources``, ``problems`` and ``runs``
    included) the number of each row's folder in ``folders``; ``runs``: each folder's
    run ids."""

    ds: Dataset
    folders: list[str]
    runs: dict[str, list[str]]
    slots: dict[str, np.ndarray]


def together(ds: Dataset, folders: Sequence[str]) -> Together | None:
    """The folders of ``folders`` that can be cut out of ``ds`` (their load), and their
    rows as one Dataset (:class:`Together`); None when none can (or a table without a
    ``run`` column has rows: whose they are is unknown)."""
    import numpy as np

    plan = _plan(ds, folders)
    if plan is None:
        return None
    owners, keep = plan
    frames = _frames(ds)
    if any(len(df) and "run" not in df.columns for df in frames.values()):
        return None
    mine = _mine(ds, owners, folders)
    slot = {f: k for k, f in enumerate(keep)}
    kept_runs = [r for f in keep for r in mine[f]]
    parts: dict[str, pd.DataFrame] = {}
    slots: dict[str, np.ndarray] = {}
    for name, df in frames.items():
        if "run" not in df.columns:
            parts[name], slots[name] = df, np.zeros(0, dtype=np.int64)
            continue
        if not len(df):
            parts[name], slots[name] = _own_runs(df, df["run"], kept_runs), \
                np.zeros(0, dtype=np.int64)
            continue
        where, codes, cats = _where(df, owners.folder_of, slot, owners.loose(name))
        order = np.argsort(where, kind="stable")
        rows = order[int(np.searchsorted(where[order], 0, side="left")):]
        parts[name] = _take(df, rows, codes, cats, kept_runs)
        slots[name] = where[rows]
    return Together(_dataset(ds, parts), keep, {f: mine[f] for f in keep}, slots)


def _owners(ds: Dataset, by_abs: Mapping[str, str]) -> _Owners | None:
    """Which folder each run, source and problem of ``ds`` belongs to; None when one of
    them is under no folder or a run under two (nothing is cut out then)."""
    sources, problems = ds.sources, ds.problems
    src_owner = _column_owners(sources, by_abs) if len(sources) else []
    prob_owner = _column_owners(problems, by_abs) if len(problems) else []
    # the folder of each run: that of its sources, else of the rows naming a source
    run_folders: dict[str, set[str | None]] = {r: set() for r in ds.run_ids}
    for run, owner in zip(sources["run"].astype(object).tolist(), src_owner, strict=True):
        if run is None or run != run:
            if owner is None:
                return None
            continue
        run_folders.setdefault(str(run), set()).add(owner)
    for r in ds.run_ids:
        if run_folders[r]:
            continue
        for name in ds.tables:   # a run that owns no input: a part of a file of several
            df = ds[name]
            if "source" in df.columns:
                rows = df[(df["run"].astype(object) == r).to_numpy()]
                run_folders[r].update(_column_owners(rows, by_abs))
    folder_of: dict[str, str] = {}
    for r, owners in run_folders.items():
        only = next(iter(owners)) if len(owners) == 1 else None
        if only is None:
            return None
        folder_of[r] = only
    for run, owner in zip(problems["run"].astype(object).tolist(), prob_owner, strict=True):
        if (run is None or run != run) and owner is None:
            return None
    return _Owners(folder_of, src_owner, prob_owner)


def _clashes(ds: Dataset, owners: _Owners, by_abs: Mapping[str, str],
             folders: Sequence[str]) -> set[str]:
    """The folders that must be loaded alone: those a problem of a check across the load's
    inputs ties to another folder (it names the other folder's input), and those whose run
    labels or ids meet another folder's (the load renamed one of them ``id#2``)."""
    clash: set[str] = set()
    p = ds.problems
    if len(p):
        spelled = [(f, (f, a)) for a, f in by_abs.items()]
        for owner, text in zip(owners.problems, p["message"].astype(object).tolist(),
                               strict=True):
            named = {f for f, names in spelled if f != owner
                     and any(n and n + os.sep in str(text) for n in names)}
            if named:
                clash.update(named)
                if owner is not None:
                    clash.add(owner)
    runs = ds.runs
    labels = dict(zip(runs["run"].astype(object).tolist(),
                      runs["label"].astype(object).tolist(), strict=True))
    names: dict[str, set[str]] = {f: set() for f in folders}
    for r, f in owners.folder_of.items():
        names[f].update({r, str(labels.get(r, r))})
    seen: dict[str, str] = {}
    for f in folders:
        for n in names[f]:
            other = seen.setdefault(n, f)
            if other != f:
                clash.update((f, other))
    return clash


def _cut(df: pd.DataFrame, folder_of: Mapping[str, str], slot: Mapping[str, int],
         mine: Mapping[str, list[str]], loose: Sequence[str | None] | None,
         ) -> dict[str, pd.DataFrame]:
    """Each kept folder's rows of ``df`` (``slot``: folder -> its number): the rows of its
    runs and, where ``loose`` gives each row's folder, its rows of no run; one pass over
    the table, then one ``take`` per folder. ``run`` becomes categorical over the folder's
    own run ids, as a load of the folder alone makes it."""
    import numpy as np

    if "run" not in df.columns:
        return dict.fromkeys(slot, df)
    run = df["run"]
    if not len(df):
        return {f: _own_runs(df, run, mine[f]) for f in slot}
    where, codes, cats = _where(df, folder_of, slot, loose)
    order = np.argsort(where, kind="stable")
    bounds = np.searchsorted(where[order], np.arange(len(slot) + 1), side="left")
    return {f: _take(df, order[bounds[k]:bounds[k + 1]], codes, cats, mine[f])
            for f, k in slot.items()}


def _where(df: pd.DataFrame, folder_of: Mapping[str, str], slot: Mapping[str, int],
           loose: Sequence[str | None] | None) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The number (``slot``) of the folder of each row of ``df`` (-1: none kept): that of
    its run, else, for a row of no run where ``loose`` gives each row's folder, that one;
    and the rows' run codes (-1: no run) with the run of each code. The rows grouped by
    run code, as :meth:`Dataset.by_run` groups them (dataset._split)."""
    import numpy as np

    codes, cats = run_codes(df["run"])
    of_code = np.array([slot.get(folder_of.get(c, ""), -1) for c in cats] + [-1],
                       dtype=np.int64)
    where = of_code[codes]          # code -1 (no run): the appended -1
    if loose is not None:
        none = codes < 0
        if none.any():
            where = where.copy()
            where[none] = [slot.get(loose[int(i)] or "", -1) for i in np.flatnonzero(none)]
    return where, codes, cats


def _take(df: pd.DataFrame, rows: np.ndarray, codes: np.ndarray, cats: Sequence[str],
          own: Sequence[str]) -> pd.DataFrame:
    """Rows ``rows`` of ``df``, index from 0; a categorical ``run`` over ``own`` (the runs
    of those rows, in order) only."""
    import numpy as np
    import pandas as pd

    part = df.take(rows).reset_index(drop=True)
    run = df["run"]
    if isinstance(run.dtype, pd.CategoricalDtype):
        pos = {r: i for i, r in enumerate(own)}
        remap = np.array([pos.get(c, -1) for c in cats] + [-1], dtype=np.int64)
        part["run"] = pd.Categorical.from_codes(
            remap[codes[rows]], categories=pd.Index(list(own), dtype=run.cat.categories.dtype))
    return part


def _own_runs(df: pd.DataFrame, run: pd.Series, own: list[str]) -> pd.DataFrame:
    """An empty ``df`` whose categorical ``run`` has ``own`` for its categories."""
    import pandas as pd

    part = df.iloc[:0].reset_index(drop=True)
    if isinstance(run.dtype, pd.CategoricalDtype):
        part["run"] = pd.Categorical([], categories=pd.Index(own, dtype=run.cat.categories.dtype))
    return part


def run_codes(run: Any) -> tuple[Any, list[str]]:
    """A run column's codes (-1: no run) and the run of each code, as strings: a
    categorical's own, else those of ``pd.factorize`` in order of appearance."""
    import pandas as pd

    if isinstance(run.dtype, pd.CategoricalDtype):
        return run.cat.codes.to_numpy(), [str(c) for c in run.cat.categories]
    codes, uniq = pd.factorize(run.astype(object))
    return codes, [str(c) for c in uniq]

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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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


def split(ds: Dataset, folders: Sequence[str]) -> dict[str, Dataset]:
    """Each folder's own Dataset out of ``ds`` (the load of ``folders``, one argument
    each), for the folders it can be cut out for (see the module's docstring); the others
    are missing from the result and must be loaded alone."""

    from ..dataset import Dataset

    by_abs = {os.path.abspath(f): f for f in folders}
    if len(by_abs) != len(folders):
        return {}
    sources = ds.sources
    runs = ds.runs
    ids = ds.run_ids
    # the folder of each run: that of its sources, else of the rows naming a source
    run_folders: dict[str, set[str | None]] = {r: set() for r in ids}
    src_owner = _column_owners(sources, by_abs) if len(sources) else []
    for run, owner in zip(sources["run"].astype(object).tolist(), src_owner, strict=True):
        if run is None or run != run:
            if owner is None:
                return {}
            continue
        run_folders.setdefault(str(run), set()).add(owner)
    for r in ids:
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
            return {}
        folder_of[r] = only
    clash: set[str] = set()
    if len(ds.problems):
        p = ds.problems
        p_owner = _column_owners(p, by_abs)
        spelled = [(f, (f, a)) for a, f in by_abs.items()]
        for run, owner, text in zip(p["run"].astype(object).tolist(), p_owner,
                                    p["message"].astype(object).tolist(), strict=True):
            if (run is None or run != run) and owner is None:
                return {}
            # a check across the load's inputs (two traces that claim one rank) that
            # names another folder's input: neither folder is cut out
            named = {f for f, names in spelled if f != owner
                     and any(n and n + os.sep in str(text) for n in names)}
            if named:
                clash.update(named)
                if owner is not None:
                    clash.add(owner)
    # names that the load's renaming (id#2) may have touched: labels and ids per folder
    labels = dict(zip(runs["run"].astype(object).tolist(),
                      runs["label"].astype(object).tolist(), strict=True))
    names: dict[str, set[str]] = {f: set() for f in folders}
    for r, f in folder_of.items():
        names[f].update({r, str(labels.get(r, r))})
    seen: dict[str, str] = {}
    for f in folders:
        for n in names[f]:
            other = seen.setdefault(n, f)
            if other != f:
                clash.update((f, other))
    mine: dict[str, list[str]] = {f: [] for f in folders}
    for r in ids:
        mine[folder_of[r]].append(r)
    keep = [f for f in folders if f not in clash]
    if not keep:
        return {}
    slot = {f: k for k, f in enumerate(keep)}
    loose = {"sources": src_owner,
             "problems": _column_owners(ds.problems, by_abs) if len(ds.problems) else []}
    cut: dict[str, dict[str, pd.DataFrame]] = {f: {} for f in keep}
    frames = {**{n: ds[n] for n in ds.tables}, "sources": sources, "problems": ds.problems,
              "runs": runs}
    for name, df in frames.items():
        for f, part in _cut(df, folder_of, slot, mine, loose.get(name)).items():
            cut[f][name] = part
    out = {}
    for f in keep:
        parts = cut[f]
        out[f] = Dataset({n: parts[n] for n in ds.tables if n in parts}, parts["sources"],
                         parts["problems"], parts["runs"])
    return out


def _cut(df: pd.DataFrame, folder_of: Mapping[str, str], slot: Mapping[str, int],
         mine: Mapping[str, list[str]], loose: Sequence[str | None] | None,
         ) -> dict[str, pd.DataFrame]:
    """Each kept folder's rows of ``df`` (``slot``: folder -> its number): the rows of its
    runs and, where ``loose`` gives each row's folder, its rows of no run; one pass over
    the table, then one ``take`` per folder. ``run`` becomes categorical over the folder's
    own run ids, as a load of the folder alone makes it."""
    import numpy as np
    import pandas as pd

    if "run" not in df.columns:
        return dict.fromkeys(slot, df)
    run = df["run"]
    if not len(df):
        return {f: _own_runs(df, run, mine[f]) for f in slot}
    if isinstance(run.dtype, pd.CategoricalDtype):
        codes = run.cat.codes.to_numpy()
        cats = [str(c) for c in run.cat.categories]
    else:
        codes, uniq = pd.factorize(run.astype(object))
        cats = [str(c) for c in uniq]
    of_code = np.array([slot.get(folder_of.get(c, ""), -1) for c in cats] + [-1],
                       dtype=np.int64)
    where = of_code[codes]          # code -1 (no run): the appended -1
    if loose is not None:
        none = codes < 0
        if none.any():
            where = where.copy()
            where[none] = [slot.get(loose[int(i)] or "", -1) for i in np.flatnonzero(none)]
    order = np.argsort(where, kind="stable")
    bounds = np.searchsorted(where[order], np.arange(len(slot) + 1), side="left")
    out = {}
    for f, k in slot.items():
        rows = order[bounds[k]:bounds[k + 1]]
        part = df.take(rows).reset_index(drop=True)
        if isinstance(run.dtype, pd.CategoricalDtype):
            own = mine[f]
            pos = {r: i for i, r in enumerate(own)}
            remap = np.array([pos.get(c, -1) for c in cats] + [-1], dtype=np.int64)
            part["run"] = pd.Categorical.from_codes(
                remap[codes[rows]], categories=pd.Index(own, dtype=run.cat.categories.dtype))
        out[f] = part
    return out


def _own_runs(df: pd.DataFrame, run: pd.Series, own: list[str]) -> pd.DataFrame:
    """An empty ``df`` whose categorical ``run`` has ``own`` for its categories."""
    import pandas as pd

    part = df.iloc[:0].reset_index(drop=True)
    if isinstance(run.dtype, pd.CategoricalDtype):
        part["run"] = pd.Categorical([], categories=pd.Index(own, dtype=run.cat.categories.dtype))
    return part

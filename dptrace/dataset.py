"""``Dataset``: tables parsed from a set of inputs, where they came from, what went wrong."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from . import schema
from .runs import RUNS


class Dataset(Mapping[str, pd.DataFrame]):
    """Tables by name (``ds["throughput"]``), plus ``sources`` and ``problems`` DataFrames.

    ``ds.tables`` lists the tables that have rows. Asking for a known table that no input
    filled returns an empty frame with the schema's columns; an unknown name is a KeyError.
    """

    def __init__(self, tables: Mapping[str, pd.DataFrame], sources: pd.DataFrame,
                 problems: pd.DataFrame, runs: pd.DataFrame | None = None) -> None:
        self._tables: Mapping[str, pd.DataFrame] = {k: v for k, v in tables.items() if len(v)}
        self.sources = sources
        self.problems = problems
        self._runs = runs

    @property
    def runs(self) -> pd.DataFrame:
        """One row per run (see :mod:`dptrace.runs`): label, job id, world size and where it
        came from, nodes, launcher, number of inputs."""
        if self._runs is None:
            return RUNS.empty()
        return self._runs

    @property
    def run_ids(self) -> list[str]:
        """The runs' ids, in order."""
        return [str(r) for r in self.runs["run"].tolist()]

    def run(self, name: str) -> Dataset:
        """The part of this Dataset that belongs to run ``name`` (its id or its label)."""
        runs = self.runs
        ids = self.run_ids
        if name not in ids:
            by_label = runs.loc[runs["label"] == name, "run"].astype(str).tolist()
            if len(by_label) != 1:
                raise KeyError(f"no run {name!r}; runs: {', '.join(ids) or 'none'}")
            name = by_label[0]
        return Dataset(
            {k: _only(v, name) for k, v in self._tables.items()},
            _only(self.sources, name), _only(self.problems, name),
            _only(runs, name))

    def by_run(self) -> dict[str, Dataset]:
        """One Dataset per run, by run id, in order. Problems that belong to no run (a path
        argument that matched nothing) are in none of them. A run's table is sliced from
        the whole table when it is first asked for (a run's findings read a few of its
        tables: slicing every table for each of 1,000 runs cost 1-3 ms a run); which
        tables a run has rows of is known at once."""
        ids = self.run_ids
        splits = {k: _Split(v, ids) for k, v in self._tables.items()}
        sources, problems = _split(self.sources, ids), _split(self.problems, ids)
        runs = _split(self.runs, ids)
        out = {}
        for r in ids:
            part = Dataset({}, sources[r], problems[r], runs[r])
            part._tables = _RunTables(splits, r)
            out[r] = part
        return out

    @classmethod
    def concat(cls, datasets: Iterable[Dataset]) -> Dataset:
        """One Dataset of several (each loaded on its own, or split by :meth:`by_run`):
        tables, sources, problems and runs concatenated. A run id already taken by an
        earlier Dataset is renamed ``id#2``, ``id#3``, ... everywhere in the later one."""
        parts = list(datasets)
        taken: set[str] = set()
        renamed: list[Dataset] = []
        for ds in parts:
            mapping: dict[str, str] = {}
            for r in ds.run_ids:
                new, k = r, 1
                while new in taken:
                    k += 1
                    new = f"{r}#{k}"
                taken.add(new)
                if new != r:
                    mapping[r] = new
            renamed.append(ds._renamed(mapping) if mapping else ds)
        order = [r for ds in renamed for r in ds.run_ids]
        names = [n for ds in renamed for n in ds._tables]
        tables = {n: _cat([ds._tables[n] for ds in renamed if n in ds._tables], order)
                  for n in dict.fromkeys(names)}
        return cls(tables, _cat([ds.sources for ds in renamed], order),
                   _cat([ds.problems for ds in renamed], order),
                   _cat([ds.runs for ds in renamed], order))

    def relabelled(self, label: str) -> Dataset:
        """This Dataset with its one run renamed ``label`` (id and label), as
        :func:`dptrace.compare` and :func:`dptrace.scaling` name the runs they are given.
        A Dataset of no run is returned as it is; one of several runs is a ValueError."""
        ids = self.run_ids
        if not ids:
            return self
        if len(ids) > 1:
            raise ValueError(f"{len(ids)} runs ({', '.join(ids)}): relabel one at a time")
        out = self._renamed({ids[0]: label}) if ids[0] != label else self
        runs = out.runs.copy()
        runs["label"] = label
        return Dataset(out._tables, out.sources, out.problems, runs)

    def _renamed(self, mapping: Mapping[str, str]) -> Dataset:
        def ren(df: pd.DataFrame) -> pd.DataFrame:
            if "run" not in df.columns:
                return df
            out = df.copy()
            out["run"] = out["run"].cat.rename_categories(
                {k: v for k, v in mapping.items() if k in out["run"].cat.categories})
            return out
        return Dataset({k: ren(v) for k, v in self._tables.items()}, ren(self.sources),
                       ren(self.problems), ren(self.runs))

    def save(self, directory: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write this Dataset to ``directory`` as Parquet (one file per table, with
        sources, problems and runs, and a manifest ``dptrace.json``); return the path.
        :func:`dptrace.open` reads it back equal, dtypes included (docs/data-model.md).

        The write is atomic: into a hidden directory beside ``directory``, renamed into
        place when complete. ``directory`` must not exist or be empty; one that holds a
        saved Dataset is replaced with ``overwrite=True``; anything else is an error."""
        from . import store

        return store.save(self._tables, self.sources, self.problems, self._runs, directory,
                          overwrite=overwrite)

    @classmethod
    def open(cls, directory: str | os.PathLike[str], *, tables: Iterable[str] | None = None,
             runs: Iterable[str] | None = None) -> Dataset:
        """The Dataset :meth:`save` wrote to ``directory`` (:func:`dptrace.open`).
        ``tables``: read only these parsed tables (sources, problems and runs always);
        ``runs``: only these run ids' rows, as :meth:`run` gives them."""
        from . import store

        stored = store.read(directory, tables=tables, runs=runs)
        return cls(stored.tables, stored.sources, stored.problems, stored.runs)

    @property
    def tables(self) -> list[str]:
        """Names of the tables that have at least one row."""
        return list(self._tables)

    def __getitem__(self, name: str) -> pd.DataFrame:
        if name in self._tables:
            return self._tables[name]
        if name in schema.TABLES:
            return schema.TABLES[name].empty()
        raise KeyError(f"no table {name!r}; known tables: {', '.join(schema.TABLES)}")

    def __iter__(self) -> Iterator[str]:
        return iter(self._tables)

    def __len__(self) -> int:
        return len(self._tables)

    @property
    def skipped(self) -> bool:
        """True when some input, or part of one, was skipped. Files of a directory or glob
        that no format recognises (status ``skipped``, an ``info`` problem) do not count."""
        return bool((self.problems["severity"] == "error").any()) or bool(
            (~self.sources["status"].isin(("ok", "skipped"))).any()
        )

    def __repr__(self) -> str:
        tables = ", ".join(f"{k}[{len(v)}]" for k, v in self._tables.items()) or "no tables"
        return f"<Dataset {len(self.sources)} sources; {tables}; {len(self.problems)} problems>"

    def _repr_html_(self) -> str:
        import html

        rows = "".join(
            f"<tr><td>{html.escape(k)}</td><td>{len(v)}</td></tr>" for k, v in self._tables.items()
        )
        # every cell comes from an input (file names, messages): pandas escapes them
        src = self.sources[["source", "format", "status", "rows"]].to_html(index=False,
                                                                             escape=True)
        probs = (
            self.problems.head(20).to_html(index=False, escape=True) if len(self.problems)
            else "<p>none</p>"
        )
        return (
            "<div class='dptrace-dataset'><h4>dptrace Dataset</h4>"
            f"<b>Sources</b>{src}<b>Tables</b><table><tr><th>table</th><th>rows</th></tr>"
            f"{rows}</table><b>Problems ({len(self.problems)})</b>{probs}</div>"
        )


def _only(df: pd.DataFrame, run: str) -> pd.DataFrame:
    """The rows of ``df`` that belong to ``run`` (categories kept, so splits concatenate)."""
    if "run" not in df.columns:
        return df
    return df[(df["run"] == run).fillna(False).to_numpy()].reset_index(drop=True)


class _Split:
    """One table's rows by run, for :meth:`Dataset.by_run`: the rows of each run counted at
    once; the table put in run order (as :func:`_split` does) the first time a run's rows
    are asked for, and each run's rows a slice of it when asked for."""

    def __init__(self, df: pd.DataFrame, ids: list[str]) -> None:
        self._df = df
        self._ids = ids
        self._parts: dict[str, pd.DataFrame] | None = None
        self._ordered: tuple[pd.DataFrame, dict[str, tuple[int, int]]] | None = None
        self._counts: dict[str, int] | None = None
        run = df["run"] if "run" in df.columns else None
        if run is None:
            self._counts = None   # (no run column: every run has the whole table)
        elif isinstance(run.dtype, pd.CategoricalDtype):
            codes = run.cat.codes.to_numpy()
            counts = np.bincount(codes[codes >= 0], minlength=len(run.cat.categories))
            self._counts = {str(c): int(n) for c, n in zip(run.cat.categories, counts,
                                                         strict=True)}
        else:   # (not a loaded table's: split at once, as before)
            self._parts = _split(df, ids)
            self._counts = {r: len(p) for r, p in self._parts.items()}

    def rows(self, run: str) -> int:
        """How many rows of the table belong to ``run``."""
        return len(self._df) if self._counts is None else self._counts.get(run, 0)

    def part(self, run: str) -> pd.DataFrame:
        """The rows of ``run``, as :func:`_split` gives them."""
        if self._parts is not None:
            return self._parts[run]
        if self._counts is None:
            return self._df
        if self._ordered is None:
            self._ordered = _ordered(self._df)
        df, at = self._ordered
        return df.iloc[slice(*at.get(run, (0, 0)))].reset_index(drop=True)


class _RunTables(Mapping[str, pd.DataFrame]):
    """One run's tables of a Dataset split by :meth:`Dataset.by_run` (those it has rows
    of), each sliced on first use and kept."""

    def __init__(self, splits: Mapping[str, _Split], run: str) -> None:
        self._splits = {k: s for k, s in splits.items() if s.rows(run)}
        self._run = run
        self._done: dict[str, pd.DataFrame] = {}

    def __getitem__(self, name: str) -> pd.DataFrame:
        df = self._done.get(name)
        if df is None:
            df = self._done[name] = self._splits[name].part(self._run)
        return df

    def __contains__(self, name: object) -> bool:
        return name in self._splits

    def __iter__(self) -> Iterator[str]:
        return iter(self._splits)

    def __len__(self) -> int:
        return len(self._splits)

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled as a plain dict of the run's own rows (not the whole tables it slices)."""
        return (dict, (dict(self.items()),))


def _ordered(df: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, tuple[int, int]]]:
    """``df`` (with a categorical ``run`` column) in run order (stably; as it is when it is
    in that order already) and each run's rows' bounds in it."""
    run = df["run"]
    codes = run.cat.codes.to_numpy()
    if len(codes) > 1 and not (codes[1:] >= codes[:-1]).all():
        order = np.argsort(codes, kind="stable")
        df, codes = df.take(order), codes[order]
    cats = [str(c) for c in run.cat.categories]
    bounds = np.searchsorted(codes, np.arange(len(cats) + 1), side="left").tolist()
    return df, {c: (bounds[k], bounds[k + 1]) for k, c in enumerate(cats)}


def _split(df: pd.DataFrame, ids: list[str]) -> dict[str, pd.DataFrame]:
    """:func:`_only` of each run of ``ids``: the rows of each run, from one grouping of the
    table (not a scan of the whole table per run: a folder of 1,000 runs). A categorical
    ``run`` column (every loaded table's) is put in run order once, stably (not at all
    when it is in that order already), and each run's rows are a slice of it."""
    if "run" not in df.columns:
        return dict.fromkeys(ids, df)
    run = df["run"]
    if not isinstance(run.dtype, pd.CategoricalDtype):
        groups = df.groupby(run.astype("object"), sort=False).indices
        pos = {str(r): p for r, p in groups.items()}
        return {r: (df.take(pos[r]) if r in pos else df.iloc[:0]).reset_index(drop=True)
                for r in ids}
    df, at = _ordered(df)
    return {r: df.iloc[slice(*at.get(r, (0, 0)))].reset_index(drop=True) for r in ids}


def _cat(frames: list[pd.DataFrame], order: list[str]) -> pd.DataFrame:
    """Frames concatenated, ``run`` kept categorical with the runs in ``order``."""
    frames = [f for f in frames if f is not None]
    if not frames:
        return pd.DataFrame()
    out = schema.concat(frames) if len(frames) > 1 else frames[0].copy()
    if "run" in out.columns:
        out["run"] = pd.Categorical(out["run"].astype("object"), categories=order)
    for col in out.columns:   # concatenated categoricals whose categories differ
        first = frames[0].get(col)
        if (col != "run" and first is not None and isinstance(first.dtype, pd.CategoricalDtype)
                and not isinstance(out[col].dtype, pd.CategoricalDtype)):
            out[col] = out[col].astype("category")
    return out

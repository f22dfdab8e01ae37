"""Runs: which inputs belong to one execution of a job, and what is known of it.

How inputs group into runs (the rule the README states):

1. The user says it: ``load({"base": "runs/a", "bigger buckets": "runs/b"})``, or on the
   command line ``LABEL=PATH`` arguments. Every input found under a labelled argument
   belongs to that run; arguments with the same label make one run.
2. Otherwise one path argument that is a directory is one run, labelled with the
   directory's name.
3. Other files (named on their own or matched by a glob) that share a job id make one run:
   ``slurm-<id>.out`` (``slurm-<id>_<task>.out``), ``mpi_profile.<id>.<rank>``, PBS
   ``<name>.o<id>``/``.e<id>``. A file without a job id that sits in the same directory as
   the files of exactly one such job joins it (a timeline beside its stdout).
4. A lone file is its own run, labelled with its file name.

A run's id (the ``run`` column of every table) is its label, made unique with ``#2``,
``#3``, ... when two runs would share one.

What the ``runs`` table says of each run (pure functions of the parsed tables):
``world_size`` from the MPI profiles' ``nranks`` (mpitrace, then mpiP), else the Horovod
timeline's ranks, else the PyTorch profiler traces' ``distributedInfo``, else a training
log's own statement (``Total img/sec on 4 GPU(s)``), else the launcher prefixes of a log
that every rank printed to (ranks 0..N-1 all present), else NCCL's lines; ``world_size_from``
says which. ``nodes`` from the profiles' host names (else nccl-tests, NCCL and launcher
lines); ``job_id`` from the file names (else the profiles' job); ``launcher`` where a file or
a line says it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from . import formats, jobs, schema
from .errors import Problem
from .names import COMPRESSED, rank_of_path
from .sources import Source, display_name

#: job ids in file names: slurm-<id>.out, slurm-<id>_<task>.out, mpi_profile.<id>[.<ts>].<rank>,
#: PBS <name>.o<id> / <name>.e<id>
_JOB_ID = (
    ("srun", re.compile(r"(?:^|[_.-])slurm-(\d+)(?:_\d+)?\.(?:out|err|log)$")),
    (None, re.compile(r"^mpi_profile\.(\d+)(?:\.\d{10})?\.\d+(?:\.[A-Za-z_].*)?$")),
    (None, re.compile(r"^[^.]+\.[oe](\d{3,})$")),
)
#: compression suffixes read through (sources.py decompresses them)
_COMPRESSED = COMPRESSED


@dataclass(frozen=True)
class Argument:
    """One path argument of ``load``: what it is, and the label the user gave it."""

    path: str
    label: str | None = None

    @property
    def is_dir(self) -> bool:
        try:
            return os.path.isdir(self.path)
        except (OSError, ValueError):
            return False


#: ``LABEL=PATH`` on the command line: a label without a path separator, then a path
_LABELLED = re.compile(r"^(?P<label>[^=/\\]+)=(?P<path>.+)$", re.S)


def command_line(items: Sequence[str]) -> list[Argument]:
    """Command-line path arguments, ``LABEL=PATH`` ones labelled. An argument that names an
    existing file or directory as written is a path, even with a ``=`` in it."""
    out = []
    for item in items:
        m = _LABELLED.match(item)
        if m and not os.path.lexists(item) and m["label"].strip():
            out.append(Argument(m["path"], m["label"].strip()))
        else:
            out.append(Argument(item))
    return out


def arguments(paths: object) -> list[Argument]:
    """The arguments of ``load``: a path, a list of paths (or of :class:`Argument`), or a
    mapping label -> path(s)."""
    if isinstance(paths, Argument):
        return [paths]
    if isinstance(paths, Mapping):
        out: list[Argument] = []
        for label, value in paths.items():
            items = [value] if isinstance(value, (str, bytes, os.PathLike)) else list(value)
            out.extend(Argument(os.fsdecode(v), str(label)) for v in items)
        return out
    if isinstance(paths, (str, bytes, os.PathLike)):
        return [Argument(os.fsdecode(paths))]
    return [p if isinstance(p, Argument) else Argument(os.fsdecode(p))
            for p in paths]  # type: ignore[attr-defined]


def given_twice(sources: Sequence[Source], origins: Sequence[int],
                repeats: Sequence[tuple[int, int]], args: Sequence[Argument]) -> list[Problem]:
    """A warning for each file that two runs the user labelled differently both name
    (``compare x=base y=base/train.log,cand``): a file is read once, for the first run that
    names it, and the other run goes without it."""
    out: list[Problem] = []
    for i, arg in repeats:
        first = args[origins[i]].label if origins[i] < len(args) else None
        again = args[arg].label if arg < len(args) else None
        if again is None or first is None or again == first:
            continue
        out.append(Problem(sources[i].name, f"given for run {again!r} too, but read once, "
                           f"for run {first!r} (the first that names it): run {again!r} goes "
                           "without it", severity="warning"))
    return out


@lru_cache(maxsize=1 << 16)   # asked 2-3 times per source by assign and runs_table
def job_id(name: str) -> tuple[str | None, str | None]:
    """(job id, launcher) that a file's name gives: ``slurm-123.out`` -> ("123", "srun")."""
    base = os.path.basename(name)
    for suffix in _COMPRESSED:
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    for launcher, pattern in _JOB_ID:
        m = pattern.search(base)
        if m:
            return m.group(1), launcher
    return None, None


def per_rank_root(path: str) -> str | None:
    """The absolute directory that holds a per-rank layout's files (see :func:`rank_of_path`)."""
    found = rank_of_path(path.split("::")[0])
    return os.path.abspath(found[1]) if found else None


def assign(names: Sequence[str], origins: Sequence[int], args: Sequence[Argument],
           facts: jobs.Facts | None = None) -> tuple[list[str], dict[str, str]]:
    """The run of each source (``names[i]`` found by argument ``origins[i]``), and each
    run's label. Runs are numbered in order of first appearance. ``facts``: what each
    source's content says of its job (:func:`source_facts`), for the grouping of
    :mod:`dptrace.jobs`; without it, names alone decide."""
    keys: list[tuple[str, ...]] = [("",)] * len(names)
    labels: dict[tuple[str, ...], str] = {}
    loose: list[int] = []          # sources of unlabelled file/glob arguments
    in_dir: dict[int, list[int]] = {}
    is_dir = [a.label is None and a.is_dir for a in args]   # one stat per argument
    for i, arg in enumerate(origins):
        a = args[arg] if arg < len(args) else Argument(names[i])
        if a.label is not None:
            key: tuple[str, ...] = ("label", a.label)
            labels[key] = a.label
            keys[i] = key
        elif arg < len(args) and is_dir[arg]:
            in_dir.setdefault(arg, []).append(i)
        else:
            loose.append(i)
    for arg, members in in_dir.items():   # a directory: one run per job found in it
        a = args[arg]
        dir_key = ("dir", os.path.abspath(a.path))
        units = jobs.group(names, members, a.path, _job_only, per_rank_root, facts)
        crowded = jobs.crowded_homes(units) if len(units) > 1 else frozenset()
        for u in units:
            key = dir_key if len(units) == 1 else (*dir_key, u.kind, u.key)
            labels[key] = (os.path.basename(os.path.normpath(a.path)) or a.path
                           if len(units) == 1
                           else jobs.label(u, units, a.path, names, crowded))
            for i in u.members:
                keys[i] = key
    if loose:   # files and globs: files of one job make one run
        root = _common_root([names[i] for i in loose])
        for u in jobs.group(names, loose, root, _job_only, per_rank_root, facts):
            if u.kind == "job":
                key, text = ("job", u.key), f"job {u.key}"
            elif u.kind == "ranks":
                key, text = ("ranks", u.key), os.path.basename(u.key) or u.key
            else:
                first = names[u.first]
                key, text = ("file", os.path.abspath(first)), os.path.basename(first) or first
            labels[key] = text
            for i in u.members:
                keys[i] = key
    ids: dict[tuple[str, ...], str] = {}
    labels = {k: display_name(v) for k, v in labels.items()}  # undecodable bytes: U+FFFD
    # the user's labels are theirs as given ('a#2=DIR' stays a#2); other runs' names are
    # made unique around them with #2, #3, ...
    used = {labels[k] for k in keys if k[0] == "label"}
    for key in keys:
        if key not in ids:
            label = labels[key]
            if key[0] == "label":
                ids[key] = label
                continue
            rid, n = label, 1
            while rid in used:
                n += 1
                rid = f"{label}#{n}"
            used.add(rid)
            ids[key] = rid
    runs = [ids[k] for k in keys]
    return runs, {ids[k]: labels[k] for k in ids}


def _job_only(name: str) -> str | None:
    return job_id(name)[0]


def _common_root(names: Sequence[str]) -> str:
    """The deepest directory holding every one of ``names``."""
    dirs = {os.path.dirname(os.path.abspath(n.split("::")[0])) for n in names}
    try:
        return os.path.commonpath(sorted(dirs))
    except ValueError:   # different drives: no common root
        return os.path.abspath(os.sep)


def source_facts(names: Sequence[str], sources: pd.DataFrame,
                 tables: Mapping[str, pd.DataFrame]) -> jobs.Facts:
    """What each source's content says of its job, by index in ``names`` (the sources'
    display names, as the tables' ``source`` column holds them): its formats, its PyTorch
    profiler trace, and (computed when a join asks) the world sizes it states, by the rules
    of :func:`runs_table` applied to the source alone; a world size only inferred from the
    ranks that printed is not a statement."""
    index = {n: i for i, n in enumerate(names)}
    formats: dict[int, frozenset[str]] = {}
    if len(sources) and "format" in sources:
        for name, fmt in zip(sources["source"].astype(str).tolist(), sources["format"].tolist(),
                             strict=True):
            if isinstance(fmt, str) and name in index:
                formats[index[name]] = frozenset(f.strip() for f in fmt.split("+"))
    traces: dict[int, jobs.Trace] = {}
    tt = tables.get("torch_traces")
    if tt is not None and len(tt):
        for r in tt.itertuples(index=False):
            i = index.get(str(r.source))
            if i is None:
                continue
            traces[i] = jobs.Trace(_int_or_none(r.rank), _int_or_none(r.world_size),
                                   _float_or_none(r.first_us), _float_or_none(r.last_us))

    def worlds(members: Sequence[int]) -> dict[int, frozenset[int]]:
        """Each covered source's stated world sizes (empty: none): ``members``' only when
        they are at most a quarter of the sources (a join in a load of many folders),
        else every source's at once (the runs table's fixed cost paid once)."""
        wanted = {names[i] for i in members}
        few = _FEW * len(wanted) <= len(set(names))
        found = _stated_worlds(names, sources, tables, members if few else None)
        covered = [i for i, n in enumerate(names) if n in wanted] if few else range(len(names))
        return {i: found.get(i, frozenset()) for i in covered}

    return jobs.Facts(formats, traces, worlds=worlds, mains=_own_rows(index, tables))


def _own_rows(index: Mapping[str, int], tables: Mapping[str, pd.DataFrame]) -> frozenset[int]:
    """The sources with rows of a process's own output: throughput figures, training
    metrics other than a stated world size, MLPerf records."""
    found: set[int] = set()
    for name, keep in (("throughput", None), ("train_metrics", "world_size"), ("mllog", None)):
        df = tables.get(name)
        if df is None or not len(df) or "source" not in df:
            continue
        source = df["source"]
        if keep is not None and "name" in df:   # the column's rows kept, not the table's
            other = (df["name"] != keep).fillna(True).to_numpy(dtype=bool)
            source = pd.Series(source.array[other], copy=False)
        for s in distinct(source):
            if (i := index.get(str(s))) is not None:
                found.add(i)
    return frozenset(found)


def _int_or_none(v: object) -> int | None:
    try:
        return None if pd.isna(v) else int(v)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return None


def _float_or_none(v: object) -> float | None:
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return f if np.isfinite(f) else None


#: ``world_size_from`` texts that infer a world size rather than read one stated
_INFERRED = ("ranks ", "per-rank files", "MLPerf :::MLLOG lines of ranks")


#: a join's world sizes are computed for the sources it asks about alone when they are at
#: most one in this many of the load's sources (:func:`source_facts`)
_FEW = 4


def _stated_worlds(names: Sequence[str], sources: pd.DataFrame,
                   tables: Mapping[str, pd.DataFrame],
                   members: Sequence[int] | None = None) -> dict[int, frozenset[int]]:
    """Per source index, the world size its content states (:func:`runs_table` with each
    source a run of its own). ``members``: only these sources' (the facts are found run by
    run, so a source's are those of its rows alone; the rows of the others are left out
    first: a join asks of two or three sources of a task's hundreds)."""
    if not names:
        return {}
    if members is not None:
        wanted = {names[i] for i in members}
        if len(wanted) < len(set(names)):
            tables = {k: _of_sources(v, wanted) for k, v in tables.items()}
            sources = _of_sources(sources, wanted)
            names = [n if n in wanted else "" for n in names]   # (indices kept)
    own = {n: n for n in names if n}
    order = list(dict.fromkeys(n for n in names if n))
    per = {k: add_run(v, own, order) for k, v in tables.items() if "source" in v.columns}
    src = add_run(sources, own, order) if "source" in sources.columns else sources
    table = runs_table(own, {n: n for n in order}, per, src)
    index = {n: i for i, n in enumerate(names) if n}
    out: dict[int, frozenset[int]] = {}
    for run, w, why in zip(table["run"].astype(str), table["world_size"],
                           table["world_size_from"], strict=True):
        if pd.notna(w) and not str(why).startswith(_INFERRED) and run in index:
            out[index[run]] = frozenset({int(w)})
    return out


def _of_sources(df: pd.DataFrame, wanted: set[str]) -> pd.DataFrame:
    """The rows of ``df`` whose ``source`` is one of ``wanted`` (``df`` itself when every
    row's is, or it has no ``source`` column)."""
    if "source" not in df.columns or not len(df):
        return df
    keep = schema.isin(df["source"], wanted)
    return df if keep.all() else df[keep].reset_index(drop=True)


def add_run(df: pd.DataFrame, run_of: Mapping[str, str], order: Sequence[str]) -> pd.DataFrame:
    """``df`` with a categorical ``run`` column first, from its ``source`` column (each
    distinct source looked up once: tables of millions of rows hold a few sources)."""
    if "source" not in df.columns:
        return df
    src = df["source"]
    if isinstance(src.dtype, pd.CategoricalDtype):
        codes, uniques = src.cat.codes.to_numpy(), src.cat.categories
    else:
        codes, uniques = pd.factorize(src, use_na_sentinel=True)
    index = {r: i for i, r in enumerate(order)}
    # the codes' dtype pandas would give (a wider one is copied down by from_codes)
    small = np.int8 if len(order) < 127 else np.int16 if len(order) < 32767 else np.int32
    # the uniques as Python objects at once: iterating an Arrow-backed array makes a scalar
    # per element (3.4 ms for 4,096 sources against 0.25 ms)
    per_unique = np.array([index.get(run_of.get(str(u), ""), -1) for u in uniques.tolist()]
                          + [-1], dtype=small)
    run = pd.Categorical.from_codes(schema.lookup(per_unique, np.asarray(codes)),
                                    categories=list(order))
    out = df.drop(columns=["run"]) if "run" in df.columns else df.copy(deep=False)
    out.insert(0, "run", run)
    return out


def split_parts(tables: dict[str, pd.DataFrame], order: list[str], labels: dict[str, str],
                ) -> tuple[dict[str, pd.DataFrame], list[str], dict[str, str], dict[str, str]]:
    """Runs inside one file: rows of a table's ``part`` k > 0 (a training log whose run
    headers repeat after training figures, see the trainlog format) move to a run of their
    own, placed right after their run: ``<run>/<k+1>`` when the run has that one input, else
    ``<run>/<file name>/<k+1>`` (a directory of several logs: each log's parts apart).
    Returns the tables, the run order, the labels and, for each new run, the run it was
    split from."""
    if not any(_has_parts(df) for df in tables.values()):
        return tables, order, labels, {}   # one part per file (a max, no copy of the rows)
    found: dict[str, dict[str, set[int]]] = {}   # run -> source -> parts > 0
    inputs: dict[str, set[str]] = {}             # run -> its sources (any table)
    for df in tables.values():
        if "run" not in df.columns or "source" not in df.columns or not len(df):
            continue
        pairs = df[["run", "source"]].drop_duplicates()
        for run, src in zip(pairs["run"].astype("object"), pairs["source"].astype("object"),
                            strict=True):
            inputs.setdefault(str(run), set()).add(str(src))
        if "part" not in df.columns:
            continue
        part = df["part"].fillna(0).to_numpy(dtype="int64")
        if not (part > 0).any():
            continue
        sub = df.loc[part > 0, ["run", "source", "part"]].drop_duplicates()
        for run, src, k in zip(sub["run"].astype("object"), sub["source"].astype("object"),
                               sub["part"], strict=True):
            found.setdefault(str(run), {}).setdefault(str(src), set()).add(int(k))
    if not found:
        return tables, order, labels, {}
    parent: dict[str, str] = {}
    new_order: list[str] = []
    new_labels = dict(labels)
    ids: dict[tuple[str, str, int], str] = {}
    for run in order:
        new_order.append(run)
        alone = len(inputs.get(run, ())) <= 1
        for src, parts in found.get(run, {}).items():
            for k in sorted(parts):
                tail = f"{k + 1}" if alone else f"{display_name(os.path.basename(src))}/{k + 1}"
                rid = f"{run}/{tail}"
                ids[(run, src, k)] = rid
                new_order.append(rid)
                new_labels[rid] = f"{labels.get(run, run)}/{tail}"
                parent[rid] = run
    out = {}
    for name, df in tables.items():
        if "part" in df.columns and "run" in df.columns and len(df):
            part = df["part"].fillna(0).to_numpy(dtype="int64")
            base = df["run"].astype("object").to_numpy()
            moved = part > 0
            if moved.any():  # only the rows of later parts are looked up
                src = df["source"].astype("object").to_numpy()[moved]
                base = base.copy()
                base[moved] = [ids.get((r, s, int(k)), r) for r, s, k in
                               zip(base[moved], src, part[moved], strict=True)]
            df = df.assign(run=pd.Categorical(base, categories=new_order))
        elif "run" in df.columns:
            df = df.assign(run=pd.Categorical(df["run"].astype("object"), categories=new_order))
        out[name] = df
    return out, new_order, {r: new_labels[r] for r in new_order}, parent


def _has_parts(df: pd.DataFrame) -> bool:
    """True when ``df`` has rows of a part after the first (see :func:`split_parts`)."""
    if "part" not in df.columns or "run" not in df.columns or not len(df):
        return False
    part = df["part"].array
    if isinstance(part, pd.arrays.IntegerArray):  # its values and mask (a masked max of
        above = part._data > 0                    # millions of rows costs 10x this)
        return bool(above.any() and (above & ~part._mask).any())
    top = df["part"].max()
    return bool(pd.notna(top) and top > 0)


# ---- what is known of each run ----------------------------------------------------------

#: the runs table's rows while they are made: run -> column -> value
Rows = dict[str, dict[str, object]]


@dataclass(frozen=True)
class Facts:
    """What one format tells the runs table: ``step(rows, tables)`` fills the rows' world
    size (with :func:`set_world`: the first step that states one wins), nodes, launcher or
    job id from the format's tables, run by run (:func:`per_run`). ``order``: when it runs
    (lower first; what the file names say of per-rank files comes at
    :data:`PER_RANK_FILES`)."""

    name: str
    step: Callable[[Rows, Mapping[str, pd.DataFrame]], None]
    order: int = 1000


_FACTS: dict[str, Facts] = {}
_FACTS_FOUND = False
#: the place of the per-rank files' step (ranks 0..N-1 named by the files) among the facts
PER_RANK_FILES = 60


def register_facts(*steps: Facts) -> None:
    """Declare what a format tells the runs table (by the format's name: again replaces)."""
    for step in steps:
        _FACTS[step.name] = step


def facts(tables: Iterable[str] | None = None) -> list[Facts]:
    """Every registered step, in order (the formats' ``facts`` modules imported on first
    use). ``tables``: the Dataset's tables; only the formats that read any of them
    (:func:`dptrace.formats.reading`) have their ``facts`` imported: a format's step reads
    its own tables and does nothing without them (a training log's report imports no
    MLPerf, NCCL or mpitrace facts). A step registered already runs in any case."""
    global _FACTS_FOUND
    if not _FACTS_FOUND:
        if tables is None:
            _FACTS_FOUND = True
        formats.import_parts("facts", tables)
    return sorted(_FACTS.values(), key=lambda f: f.order)


def _from_rank_files(rows: Rows, names_of: Mapping[str, list[str]]) -> None:
    """Per-rank files: ranks 0..N-1 all there."""
    for run, names in names_of.items():
        ranks = {r[0] for n in names if (r := rank_of_path(n)) is not None}
        if len(ranks) > 1 and ranks == set(range(len(ranks))):
            set_world(rows[run], len(ranks), f"per-rank files: ranks 0-{len(ranks) - 1}")


def unique_values(values: pd.Series) -> list:
    return sorted({v for v in values.dropna().tolist()})


def runs_table(run_of: Mapping[str, str], labels: Mapping[str, str],
               tables: Mapping[str, pd.DataFrame], sources: pd.DataFrame,
               parents: Mapping[str, str] | None = None,
               launchers_seen: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One row per run: label, job id, world size and where it came from, nodes, launcher,
    number of inputs. ``parents``: runs split from another (:func:`split_parts`): they
    count the inputs their rows came from and inherit the job id and launcher.
    ``launchers_seen``: by source, the launcher its lines' prefixes show
    (:func:`launcher_in`); where a run's sources show one, it beats the file names'."""
    order = list(labels)
    rows: dict[str, dict[str, object]] = {
        r: {"run": r, "label": labels[r], "job_id": None, "world_size": None, "nodes": None,
            "launcher": None, "sources": 0, "world_size_from": None} for r in order}
    names_of: dict[str, list[str]] = {r: [] for r in order}
    if len(sources):   # files nothing recognised in a directory are not the run's inputs
        status = (sources["status"].astype("object").tolist() if "status" in sources
                  else [None] * len(sources))
        for name, run, st in zip(sources["source"].tolist(), sources["run"].tolist(), status,
                                 strict=True):
            if isinstance(run, str) and run in rows:   # (a skipped rank file still names
                names_of[run].append(name)              # its rank and job)
                if st != "skipped":
                    rows[run]["sources"] = int(rows[run]["sources"]) + 1  # type: ignore[call-overload]
    for run, names in names_of.items():
        found = {job_id(n) for n in names} - {(None, None)}
        ids = sorted({j for j, _ in found if j is not None})
        if len(ids) == 1:
            rows[run]["job_id"] = ids[0]
        launchers = sorted({la for _, la in found if la})
        said = {la for n in names if (la := (launchers_seen or {}).get(n))}
        if len(said) == 1:   # the lines' own prefixes beat the file's name
            launchers = sorted(said)
        if len(launchers) == 1:
            rows[run]["launcher"] = launchers[0]
    for child, parent in (parents or {}).items():
        srcs: set[str] = set()
        for df in tables.values():
            if "source" in df.columns and "run" in df.columns and len(df):
                srcs.update(df.loc[df["run"] == child, "source"].astype(str).unique().tolist())
        rows[child]["sources"] = len(srcs)
        for key in ("job_id", "launcher"):
            rows[child][key] = rows[parent][key]
    per_rank_done = False
    for step in facts(tables):
        if step.order > PER_RANK_FILES and not per_rank_done:
            _from_rank_files(rows, names_of)
            per_rank_done = True
        step.step(rows, tables)
    if not per_rank_done:
        _from_rank_files(rows, names_of)
    _checked_counts(rows)
    return schema.conform(pd.DataFrame(list(rows.values()),
                                       columns=[c.name for c in RUNS.columns]), RUNS)


#: launcher prefixes at the start of a line, by the launcher that writes them
_PREFIXES = (
    ("mpirun", re.compile(rb"^\[\d{1,9},\d{1,9}\]<std(?:out|err|diag)>:", re.M)),
    ("horovodrun", re.compile(rb"^\[\d{1,6}\]<std(?:out|err)>:", re.M)),
    ("torchrun", re.compile(rb"^\[default\d{1,6}\]:", re.M)),
    ("srun", re.compile(rb"^ {0,5}\d{1,6}: ", re.M)),
)
#: lines a launcher's prefix must start, at least, to name it
_PREFIX_LINES = 3


def launcher_in(head: bytes) -> str | None:
    """The launcher whose prefixes start most lines of ``head`` (a log's first bytes):
    mpirun ``--tag-output`` (``[1,3]<stdout>:``), horovodrun (``[3]<stdout>:``), torchrun
    ``--tee`` (``[default3]:``), srun ``--label`` (``3: ``); None when none starts at least
    three lines and more than half of the prefixed ones."""
    counts = [(len(rx.findall(head)), name) for name, rx in _PREFIXES]
    total = sum(c for c, _ in counts)
    best, name = max(counts)
    if best >= _PREFIX_LINES and 2 * best > total:
        return name
    return None


def columns(df: pd.DataFrame | None, *cols: str) -> pd.DataFrame | None:
    """Only the columns a step reads (grouping a table of millions of rows by run copies
    whatever it holds)."""
    if df is None:
        return None
    return df[[c for c in ("run", *cols) if c in df.columns]]


def per_run(df: pd.DataFrame | None) -> list[tuple[str, pd.DataFrame]]:
    if df is None or df.empty or "run" not in df.columns:
        return []
    run = df["run"]
    if isinstance(run.dtype, pd.CategoricalDtype):
        codes = run.cat.codes.to_numpy()
        if codes[0] >= 0 and (codes == codes[0]).all():  # one run: the frame as it is (a
            return [(str(run.cat.categories[codes[0]]), df)]  # group would copy its rows)
    return [(str(r), g) for r, g in df.groupby("run", observed=True, sort=False)]


def distinct(values: pd.Series) -> list:
    """The distinct non-null values of a column, in no particular order (a categorical's
    from its codes; small non-negative integers, such as ranks, counted a chunk of rows at
    a time: no hash, no object and no copy of the column)."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        codes = values.cat.codes.to_numpy()
        seen = np.flatnonzero(schema.code_counts(codes, len(values.cat.categories)))
        return values.cat.categories[seen].tolist()
    if isinstance(values.array, pd.arrays.IntegerArray):
        arr, seen = values.array, np.zeros(_SMALL, dtype=bool)
        data, mask = arr._data, arr._mask
        for lo in range(0, len(arr), _CHUNK):   # (a load's peak memory is in this step)
            ints, null = data[lo:lo + _CHUNK], mask[lo:lo + _CHUNK]
            if null.any():   # copied out only where some are null
                ints = ints[~null]
                if not len(ints):
                    continue
            least, most = int(ints.min()), int(ints.max())
            if least < 0 or most >= _SMALL:
                return [v for v in values.unique().tolist() if not pd.isna(v)]
            if least == most:   # one value in the chunk (one rank's rows)
                seen[least] = True
                continue
            seen[:most + 1] |= np.bincount(ints) > 0
        return np.flatnonzero(seen).tolist()
    return [v for v in values.unique().tolist() if not pd.isna(v)]


#: rows of a column looked at at once by :func:`_distinct`, and the integers it counts
_CHUNK, _SMALL = 1 << 16, 1 << 16


#: the largest world size or node count the runs table takes: a count read from an input
#: is checked like any parsed value (a log's 'Total img/sec on 99999999999999999999 GPU(s)'
#: is no world size, and must not cost the report)
MAX_COUNT = (1 << 31) - 1


def count_of(n: object) -> int | None:
    """``n`` as a count the runs table can hold: a whole number from 1 to :data:`MAX_COUNT`,
    else None."""
    try:
        f = float(n)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None
    if not (f == f and 1 <= f <= MAX_COUNT) or not f.is_integer():
        return None
    return int(f)


def set_world(row: dict[str, object], n: object, why: str) -> None:
    if row["world_size"] is not None or n is None:
        return
    count = count_of(n)
    if count is None:   # said, but not a world size: where it came from says so
        if row["world_size_from"] is None:
            row["world_size_from"] = f"{why}: {_short(n)} is not a world size"
        return
    row["world_size"], row["world_size_from"] = count, why


def set_world_of(row: dict[str, object], sizes: Sequence[object], why: str,
                 disagree: str, unit: str = "ranks") -> None:
    """The world size a run's inputs of one kind state: the one size when they agree
    (``why``), else, when nothing stated one before, that they disagree
    (``"<disagree> (4, 8 ranks)"``)."""
    if len(sizes) == 1:
        set_world(row, sizes[0], why)
    elif sizes and row["world_size"] is None:
        row["world_size_from"] = f"{disagree} ({', '.join(map(str, sizes))} {unit})"


def _short(n: object) -> str:
    text = str(n)
    return text if len(text) <= 24 else f"{text[:12]}...({len(text)} characters)"


def _checked_counts(rows: dict[str, dict[str, object]]) -> None:
    """Node counts that are no counts (a platform string's huge N) are left out."""
    for row in rows.values():
        if row["nodes"] is not None and count_of(row["nodes"]) is None:
            row["nodes"] = None




















RUNS = schema.RUNS

"""The notebook API: ``load`` and one ``read_<format>`` per registered format (made from
the registry on first use: :func:`read_function`)."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import registry, runs
from .dataset import Dataset
from .errors import DptraceError, Problem
from .executor import ExecutorArg
from .loader import ProgressFn, load_sources
from .sources import Source, expand, resolve_max_decompressed

if TYPE_CHECKING:
    import pandas as pd

    from .reports.model import Report

__all__ = ["ProgressFn", "compare", "expand_arguments", "findings", "load", "load_sources",
           "open", "read_function", "report", "scaling"]

PathArg = str | bytes | os.PathLike[str] | Iterable[str | bytes | os.PathLike[str]]
#: the decompression limit: bytes (0: no limit), a size such as "32G", or None (the default)
SizeArg = int | str | None


def load(paths: PathArg | Mapping[str, PathArg], format: str = "auto", *,
         progress: ProgressFn | None = None,
         max_decompressed: SizeArg = None, executor: ExecutorArg = None) -> Dataset:
    """Parse every input under ``paths`` (files, globs, directories; .gz/.bz2/.xz) into a Dataset.

    ``paths`` is a path, a list of paths, or a mapping label -> path(s) that names the runs
    (``{"base": "runs/a", "bigger buckets": "runs/b"}``). Without labels a directory is one
    run and files that share a job id are one run (:mod:`dptrace.runs`); every table gets a
    ``run`` column and ``Dataset.runs`` says what each run is.

    ``format="auto"`` detects each file's format from its content; a format name forces it.
    Bad inputs never raise: they become rows of ``Dataset.problems`` and their
    ``Dataset.sources`` status says ``failed`` or ``unknown``. A file found in a directory
    or by a glob that no format recognises (a README, parameters, an empty file, a FIFO) is
    ``skipped`` with one ``info`` problem, which does not count as a failure.

    ``max_decompressed`` caps the bytes decompressed from one compressed input: bytes (0:
    no limit) or a size such as ``"32G"``; by default ``$DPTRACE_MAX_DECOMPRESSED``, else
    half the memory available, at most 16 GiB. Content past it is not read (an error
    problem says where it was cut); what came before is parsed.
    ``executor``: where readers run the pieces of a large input (:mod:`dptrace.executor`):
    ``"auto"`` (the default: up to 2 forked processes where the machine has the cores),
    ``"serial"``, a number of workers, or an :class:`~dptrace.executor.Executor`.
    """
    forced = None if format == "auto" else registry.get(format)
    sources, problems, args, origins = expand_arguments(
        paths, max_decompressed=resolve_max_decompressed(max_decompressed))
    return load_sources(sources, problems, forced, progress=progress, arguments=args,
                        origins=origins, executor=executor)


def expand_arguments(paths: PathArg | Mapping[str, PathArg] | Sequence[runs.Argument], *,
                     max_decompressed: int | None = None,
                     ) -> tuple[list[Source], list[Problem], list[runs.Argument], list[int]]:
    """``sources.expand`` of ``load``'s arguments (a path, paths, or label -> path(s)):
    the sources, the problems, the arguments and, per source, the argument that found it."""
    args = runs.arguments(paths)
    origins: list[int] = []
    repeats: list[tuple[int, int]] = []
    sources, problems = expand([a.path for a in args], max_decompressed=max_decompressed,
                               origins=origins, repeats=repeats)
    problems.extend(runs.given_twice(sources, origins, repeats, args))
    return sources, problems, args, origins


def read_function(name: str) -> Callable[..., Dataset]:
    """``read_<name>``: :func:`load` with the format forced to ``name`` (no detection), the
    paths first and keyword-only options, ``engine`` among them where the format has routes
    (``"auto"``, or one of its :attr:`registry.Spec.engines`). Made from the registry, so
    every format has one; ``dptrace.read_<name>`` is this function."""
    spec = registry.get(name).spec

    def read(paths: PathArg | Mapping[str, PathArg], *, progress: ProgressFn | None = None,
             max_decompressed: SizeArg = None, executor: ExecutorArg = None,
             **options: Any) -> Dataset:
        parser = registry.get(name).with_options(**options)
        sources, problems, args, origins = expand_arguments(
            paths, max_decompressed=resolve_max_decompressed(max_decompressed))
        return load_sources(sources, problems, parser, progress=progress, arguments=args,
                            origins=origins, executor=executor)

    kw = inspect.Parameter.KEYWORD_ONLY
    params = [inspect.Parameter("paths", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                annotation="PathArg")]
    if spec.engines:
        params.append(inspect.Parameter("engine", kw, default="auto", annotation="str"))
    params += [inspect.Parameter("progress", kw, default=None, annotation="ProgressFn | None"),
               inspect.Parameter("max_decompressed", kw, default=None, annotation="SizeArg"),
               inspect.Parameter("executor", kw, default=None, annotation="ExecutorArg")]
    read.__signature__ = inspect.Signature(params, return_annotation="Dataset")  # type: ignore[attr-defined]
    read.__name__ = read.__qualname__ = f"read_{name}"
    read.__module__ = __name__
    engines = ("\n\n``engine``: " + ", ".join(repr(e) for e in ("auto", *spec.engines)) +
               " (auto: the fast route where the input fits it; the routes give the same "
               "tables and problems)") if spec.engines else ""
    read.__doc__ = (f"Parse {spec.reads or spec.description}.{engines}\n\n"
                    f"The other options are :func:`load`'s; ``format`` is {name!r}.")
    return read


def __getattr__(attr: str) -> Any:
    """``read_<format>`` for every registered format, made on first use."""
    if attr.startswith("read_") and attr[5:] in registry.parsers():
        fn = globals()[attr] = read_function(attr[5:])
        return fn
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


def read_names() -> list[str]:
    """The ``read_<format>`` functions there are, one per registered format."""
    return [f"read_{name}" for name in registry.parsers()]


def report(ds: Dataset, *, warmup: float = 0.1,
           thresholds: Mapping[str, float] | None = None) -> Report:
    """The report of ``ds``, for notebooks: ``.tables``, ``.figures`` (plotly), ``.to_html(path)``,
    ``.to_json()``; Jupyter shows a compact summary. ``warmup`` is the share of each
    instance's steps dropped before averaging throughput (as ``dptrace report --warmup``);
    ``thresholds`` overrides the findings' thresholds by kind (as ``--threshold``; see
    :func:`findings`)."""
    from .reports import model

    return model.build(ds, warmup=warmup, thresholds=_thresholds(thresholds))


def open(directory: str | os.PathLike[str], *, tables: Iterable[str] | None = None,
         runs: Iterable[str] | None = None) -> Dataset:
    """The Dataset that :meth:`Dataset.save` wrote to ``directory``, equal to the one saved
    (every table with its dtypes, sources, problems, runs): no input is parsed again.

    ``tables``: read only these parsed tables (``sources``, ``problems`` and ``runs`` are
    always read); ``runs``: only the rows of these run ids, as :meth:`Dataset.run` gives
    them. A directory that is not a saved Dataset, was written with another table schema
    version (:data:`dptrace.schema.SCHEMA_VERSION`), or misses or has a damaged file is a
    DptraceError that names the directory or the file (docs/data-model.md)."""
    return Dataset.open(directory, tables=tables, runs=runs)


def findings(ds: Dataset | PathArg | Mapping[str, PathArg], *, warmup: float = 0.1,
             thresholds: Mapping[str, float] | None = None) -> pd.DataFrame:
    """The ``findings`` table of ``ds``: what the report says first (most severe first; cause
    before symptom), one row per finding with its message, hint, numbers and evidence
    (columns: ``dptrace schema findings``), the same table as the report's findings section.

    ``ds``: a Dataset; or what :func:`load` takes (paths, or label -> paths), loaded first;
    or the directory of a saved Dataset (:func:`open`), read back without parsing.

    ``thresholds``: overrides by kind, in the unit of the ``threshold`` column, e.g.
    ``{"throughput_straggler": 10}`` (10% below the median); the kinds that take one are
    ``dptrace.findings.thresholds.overridable()``. ``warmup`` as for :func:`report`."""
    from .findings import build

    return build(_dataset(ds), warmup=warmup, thresholds=_thresholds(thresholds))


def _dataset(given: Dataset | PathArg | Mapping[str, PathArg]) -> Dataset:
    """``given`` as a Dataset: itself, the saved Dataset of a directory that holds one
    (its manifest), else :func:`load` of the paths."""
    if isinstance(given, Dataset):
        return given
    if isinstance(given, (str, os.PathLike)) and (
            Path(os.fsdecode(given)) / _manifest()).is_file():
        return open(given)
    return load(given)


def _manifest() -> str:
    """The saved Dataset's manifest file name (:mod:`dptrace.store`, imported on use)."""
    from . import store

    return store.MANIFEST


def compare(base: Dataset, candidate: Dataset, *, labels: tuple[str, str] | None = None,
            warmup: float = 0.1, thresholds: Mapping[str, float] | None = None) -> Report:
    """Two runs side by side (as ``dptrace compare``): a :class:`Report` whose findings say
    what changed and whose ``compare`` section holds ``changes`` (the ten largest changes in
    time) and ``compare`` (every matching row of every report table both runs have, with
    absolute and relative change). ``base`` and ``candidate`` each hold one run (see
    :meth:`Dataset.run` to pick one); ``labels`` name them (default: their run labels, or
    ``"base"`` and ``"candidate"`` where those are equal). ``warmup`` and ``thresholds`` as
    for :func:`report`."""
    from .reports import model

    if labels is None:
        found = [_only_label(base, "base"), _only_label(candidate, "candidate")]
        labels = (found[0], found[1]) if found[0] != found[1] else ("base", "candidate")
    ds = _together({labels[0]: base, labels[1]: candidate})
    return model.build(ds, "compare", warmup=warmup, thresholds=_thresholds(thresholds),
                       base=labels[0], candidate=labels[1])


def scaling(runs: Mapping[str, Dataset] | Dataset, *, by: str = "ranks", strong: bool = False,
            warmup: float = 0.1, thresholds: Mapping[str, float] | None = None) -> Report:
    """Runs at several sizes (as ``dptrace scaling``): a :class:`Report` whose ``scaling``
    section holds the ``scaling`` table (workers, job throughput, speedup, efficiency and
    communication per run) and per-run tables of what grows with the workers.

    ``runs``: label -> Dataset of one run each (``{"1": ds1, "2": ds2, "4": ds4}``; a label
    that is a number states the workers where the data does not), or one Dataset whose
    runs are the points (``dptrace.load({"1": "run1/", "2": "run2/"})``). ``by``: count
    workers as ``"ranks"`` (the world size), ``"nodes"`` or ``"instances"``; ``strong``:
    the global batch is fixed (the same formula, read as strong scaling)."""
    from .analysis.scaling import BY
    from .reports import model

    if by not in BY:
        raise DptraceError(f"by={by!r}: one of {', '.join(BY)}")
    ds = runs if isinstance(runs, Dataset) else _together(runs)
    return model.build(ds, "scaling", warmup=warmup, thresholds=_thresholds(thresholds),
                       by=by, strong=strong)


def _only_label(ds: Dataset, default: str) -> str:
    labels = [str(v) for v in ds.runs["label"].tolist()] if len(ds.runs) else []
    return labels[0] if len(labels) == 1 else default


def _together(parts: Mapping[str, Dataset]) -> Dataset:
    """One Dataset of several, each part's single run renamed to its label (a part with
    more runs is a usage error that names them)."""
    renamed = []
    for label, ds in parts.items():
        if not isinstance(ds, Dataset):
            raise DptraceError(f"{label!r}: expected a Dataset (dptrace.load(...)), got "
                               f"{type(ds).__name__}")
        ids = ds.run_ids
        if len(ids) > 1:
            raise DptraceError(
                f"{label!r} holds {len(ids)} runs ({', '.join(ids)}): pass one, e.g. "
                f"ds.run({ids[0]!r})")
        renamed.append(ds.relabelled(str(label)))
    return Dataset.concat(renamed)


def _thresholds(given: Mapping[str, float] | None) -> dict[str, float]:
    """The findings' threshold overrides, checked (a usage error names what is wrong)."""
    from .findings.thresholds import parse_overrides

    try:
        return parse_overrides(given or {})
    except ValueError as exc:
        raise DptraceError(str(exc)) from None

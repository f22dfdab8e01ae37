"""The notebook API: ``load`` and one ``read_<format>`` per registered format (made from
the registry on first use: :func:`read_function`)."""

from __future__ import annotations

import inspect
import os
import time
import traceback
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from . import registry, runs, schema
from .dataset import Dataset
from .errors import Problem, UnknownFormatError
from .sources import HEAD_BYTES, Source, display_name, expand, resolve_max_decompressed

if TYPE_CHECKING:
    from .reports.model import Report

PathArg = str | bytes | os.PathLike[str] | Iterable[str | bytes | os.PathLike[str]]
#: called before each source is parsed: (source, index, total)
ProgressFn = Callable[[Source, int, int], None]
#: the decompression limit: bytes (0: no limit), a size such as "32G", or None (the default)
SizeArg = int | str | None
#: an input that takes longer than this (seconds) to read and parse gets an info problem
#: saying so (one parse is not interrupted: a watchdog thread cannot stop C code, and a
#: process per input costs more than most inputs take)
SLOW_INPUT_S = 30.0


@dataclass
class _Outcome:
    source: Source
    format: str | None
    variant: str | None
    status: str
    rows: int
    message: str


def load(paths: PathArg | Mapping[str, PathArg], format: str = "auto", *,
         progress: ProgressFn | None = None,
         max_decompressed: SizeArg = None) -> Dataset:
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
    """
    forced = None if format == "auto" else registry.get(format)
    sources, problems, args, origins = expand_arguments(
        paths, max_decompressed=resolve_max_decompressed(max_decompressed))
    return load_sources(sources, problems, forced, progress=progress, arguments=args,
                        origins=origins)


def expand_arguments(paths: PathArg | Mapping[str, PathArg] | Sequence[runs.Argument], *,
                     max_decompressed: int | None = None,
                     ) -> tuple[list[Source], list[Problem], list[runs.Argument], list[int]]:
    """``sources.expand`` of ``load``'s arguments (a path, paths, or label -> path(s)):
    the sources, the problems, the arguments and, per source, the argument that found it."""
    args = runs.arguments(paths)
    origins: list[int] = []
    sources, problems = expand([a.path for a in args], max_decompressed=max_decompressed,
                               origins=origins)
    return sources, problems, args, origins


def load_sources(sources: list[Source], problems: list[Problem],
                 format: str | registry.Parser | None = None, *,
                 progress: ProgressFn | None = None,
                 arguments: Sequence[runs.Argument] | None = None,
                 origins: Sequence[int] | None = None) -> Dataset:
    """:func:`load` of sources already expanded (``sources.expand``), with the problems
    found on the way; the CLI expands once to size its progress bar. ``arguments`` and
    ``origins`` (from :func:`expand_arguments`) group the sources into runs; without them
    each source is its own argument (files sharing a job id still make one run)."""
    forced = (registry.get(format) if isinstance(format, str) and format != "auto"
              else format if isinstance(format, registry.Parser) else None)
    problems = list(problems)
    frames: dict[str, list[pd.DataFrame]] = {}
    outcomes: dict[int, _Outcome] = {}
    batches: dict[str, list[int]] = {}
    for i, src in enumerate(sources):
        chosen = _choose(src, forced, outcomes, problems, i)
        if chosen and len(chosen) == 1 and chosen[0].parse_many and len(sources) > 1:
            batches.setdefault(chosen[0].name, []).append(i)
            continue
        if progress:
            progress(src, i, len(sources))
        if chosen:
            started = time.perf_counter()
            outcomes[i], found = _parse_all(src, chosen, frames)
            problems.extend(found)
            _note_slow(src, time.perf_counter() - started, problems)
        src.forget()
    for name, members in batches.items():
        group = [sources[i] for i in members]
        _parse_batch(registry.get(name), group, members, frames, outcomes, problems, progress)
        for src in group:
            src.forget()
    tables = {
        # one part (a batch's table): conform gives a fresh frame and index without a concat
        name: schema.conform(parts[0] if len(parts) == 1 else _concat(parts), schema.TABLES[name])
        if name in schema.TABLES else _concat(parts)
        for name, parts in frames.items()
    }
    settle = _Settle(problems, forced)
    ordered = [settle(outcomes[i]) for i in range(len(sources))]
    return _with_runs(tables, _sources_frame(ordered), _problems_frame(settle.problems()),
                      sources, arguments, origins)


def _with_runs(tables: dict[str, pd.DataFrame], sources_df: pd.DataFrame,
               problems_df: pd.DataFrame, sources: list[Source],
               arguments: Sequence[runs.Argument] | None,
               origins: Sequence[int] | None) -> Dataset:
    """The Dataset, with the run of each row (``run`` first in every table) and the
    ``runs`` table (see :mod:`dptrace.runs` for the rule)."""
    if arguments is None or origins is None or len(origins) != len(sources):
        arguments = [runs.Argument(os.fsdecode(src.path)) for src in sources]
        origins = list(range(len(sources)))
    names = [src.name for src in sources]
    run_ids, labels = runs.assign([os.fsdecode(src.path) for src in sources], origins,
                                  arguments)
    run_of = dict(zip(names, run_ids, strict=True))
    order = list(labels)
    tables = {k: runs.add_run(v, run_of, order) for k, v in tables.items()}
    sources_df = runs.add_run(sources_df, run_of, order)
    problems_df = runs.add_run(problems_df, run_of, order)
    table = runs.runs_table(run_of, labels, tables, sources_df)
    return Dataset(tables, sources_df, problems_df, table)


def _note_slow(src: Source, seconds: float, problems: list[Problem]) -> None:
    if seconds >= SLOW_INPUT_S:
        problems.append(Problem(src.name, f"took {seconds:,.0f} s to read and parse",
                                severity="info"))


def _unread(src: Source, outcomes: dict[int, _Outcome], problems: list[Problem],
            i: int) -> list[registry.Parser]:
    """A source ``expand`` found but that is not opened: a FIFO, socket or device found in
    a directory is skipped (``info``); named on its own, or a broken link or an unreadable
    path, it failed."""
    why = src.unreadable or ""
    if src.special and not src.explicit:
        outcomes[i] = _Outcome(src, None, None, "skipped", 0, why)
        problems.append(Problem(src.name, f"skipped: {why}", severity="info"))
    else:
        outcomes[i] = _Outcome(src, None, None, "failed", 0, why)
        problems.append(Problem(src.name, why, severity="error"))
    return []


def _choose(src: Source, forced: registry.Parser | None, outcomes: dict[int, _Outcome],
            problems: list[Problem], i: int) -> list[registry.Parser]:
    """The parsers for ``src``; on failure record why in ``outcomes[i]`` and return []."""
    if src.unreadable is not None:
        return _unread(src, outcomes, problems, i)
    try:
        if forced:
            return [forced]
        head = src.head()
        if head[:1].isspace() and len(head) < HEAD_BYTES and head.isspace():
            raise UnknownFormatError(f"empty file: only whitespace ({len(head):,} bytes of "
                                     "spaces, tabs and newlines)")
        return registry.detect_all(src, head)
    except UnknownFormatError as exc:
        notes = src.take_notes()   # e.g. damage that left nothing to decompress
        problems.extend(notes)
        damage = next((p for p in notes if p.severity == "error"), None)
        if damage is not None:
            outcomes[i] = _Outcome(src, None, None, "failed", 0, damage.message)
            return []
        outcomes[i] = _Outcome(src, None, None, "unknown", 0, str(exc))
        if src.explicit:
            problems.append(Problem(src.name, f"skipped: {exc}", severity="error"))
        # else: _Settle makes it "skipped" with one info problem
    except OSError as exc:   # the path is in the source column; say what went wrong
        why = f"cannot read: {exc.strerror or exc}"
        outcomes[i] = _Outcome(src, None, None, "failed", 0, why)
        problems.append(Problem(src.name, why, severity="error"))
    return []


#: what a parser's crash report starts with (see _parse_one); such a file is never skipped
_CRASH = "parser failed: "


class _Settle:
    """The outcome of a source that gave no rows, once it is known what it is.

    A file found in a directory or by a glob that no format recognises (nothing claimed it,
    or only a guess did and found nothing: a README, params.json, an empty file) becomes
    ``skipped``: its problems are replaced by one ``info`` row, and the exit code ignores
    it; so does one that a format was sure of but found nothing in, without an error (a
    script that prints an sntilestat header). A file named on its own keeps its error, with
    the format it looks like when it is one that dptrace knows but does not read yet (mpiP,
    nccl-tests, ...). Damaged files of a format that was sure of them, unreadable files and
    parser crashes keep their status.
    """

    def __init__(self, problems: list[Problem], forced: registry.Parser | None) -> None:
        self.all, self.forced = problems, forced
        self.dropped: set[str] = set()
        self.added: list[Problem] = []
        self._by_source: dict[str, list[Problem]] | None = None

    def problems(self) -> list[Problem]:
        """Every problem, those of the settled sources replaced."""
        kept = [p for p in self.all if p.source not in self.dropped] if self.dropped else self.all
        return kept + self.added

    def _of(self, name: str) -> list[Problem]:
        if self._by_source is None:   # built once, when a source first needs it
            self._by_source = {}
            for p in self.all:
                self._by_source.setdefault(p.source, []).append(p)
        return self._by_source.get(name, [])

    def __call__(self, o: _Outcome) -> _Outcome:
        src = o.source
        if o.rows or o.status == "ok":
            return o
        if o.format is None:    # nothing claimed it (unknown), or it was unreadable (failed)
            return self._skip(o, o.message) if o.status == "unknown" and not src.explicit else o
        mine = self._of(src.name)
        errors = [p.message for p in mine if p.severity == "error"]
        if any(_CRASH in e for e in errors):
            return o
        sure = _claimed(src, o)
        if sure and errors:    # a damaged file of a format that knows it: keep its errors
            return o
        other = _looks_like(src) if self.forced is None else None
        if src.explicit:
            if other is None or sure:
                return o
            self.dropped.add(src.name)
            self.added.append(Problem(src.name, f"skipped: {other}", severity="error"))
            return _Outcome(src, None, None, "unknown", 0, other)
        return self._skip(o, other or (errors[0] if errors else o.message if sure else
                                       "not recognised by any format (no records found)"))

    def _skip(self, o: _Outcome, why: str) -> _Outcome:
        self.dropped.add(o.source.name)
        self.added.append(Problem(o.source.name, f"skipped: {why}", severity="info"))
        return _Outcome(o.source, None, None, "skipped", 0, why)


def _head(src: Source) -> bytes:
    try:
        return src.head()
    except OSError:
        return b""


def _looks_like(src: Source) -> str | None:
    """"looks like an mpiP report, ..." for a file of a format dptrace does not read yet."""
    return registry.not_read_yet(_head(src))


def _claimed(src: Source, o: _Outcome) -> bool:
    """True when a format that gave ``o`` was sure of ``src`` (its sniff score): then the
    file is that format's, even if nothing could be read from it."""
    head = _head(src)
    known = registry.parsers()
    names = (o.format or "").split("+")
    return any(n in known and known[n].sniff(src, head) >= registry.SURE for n in names)


def _concat(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """The parts' rows in order. Parts with all-null columns are kept as they are; the
    schema sets each column's dtype afterwards, so pandas 2's FutureWarning about how such
    columns will count towards the result's dtype does not apply."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return pd.concat(parts, ignore_index=True)


def _parse_batch(parser: registry.Parser, group: list[Source], members: list[int],
                 frames: dict[str, list[pd.DataFrame]], outcomes: dict[int, _Outcome],
                 problems: list[Problem], progress: ProgressFn | None) -> None:
    """One call for all sources of a batch-capable format: each table built once."""
    assert parser.parse_many is not None
    tables, reports = parser.parse_many(group, problems, progress)
    for name, df in tables.items():
        if len(df):
            frames.setdefault(name, []).append(df)
    for i, rep in zip(members, reports, strict=True):
        late = rep.source.take_notes()
        problems.extend(late)
        outcomes[i] = _batch_outcome(rep.source, parser.name, rep.variant, rep.rows,
                                     [*rep.problems, *late], rep.failed)


def _parse_all(src: Source, chosen: list[registry.Parser],
               frames: dict[str, list[pd.DataFrame]]) -> tuple[_Outcome, list[Problem]]:
    results = [_parse_one(parser, src) for parser in chosen]
    # with what reading found and no parser took (damage seen by a parser that streams)
    problems = [p for r in results for p in r.problems] + src.take_notes()
    for result in results:
        for name, df in result.tables.items():
            if len(df):
                frames.setdefault(name, []).append(df)
    return _outcome(src, chosen, results, problems), problems


def _parse_one(parser: registry.Parser, src: Source) -> registry.ParseResult:
    """Run one parser; a crash becomes an error problem (a parser bug must not stop the report)."""
    try:
        return parser.parse(src)
    except Exception as exc:
        where = traceback.extract_tb(exc.__traceback__)[-1]
        msg = (f"{parser.name} {_CRASH}{type(exc).__name__}: {exc} "
               f"(at {os.path.basename(where.filename)}:{where.lineno}; please report)")
        return registry.ParseResult(problems=[Problem(src.name, msg, severity="error")],
                                    variant="failed")


def _outcome(src: Source, chosen: list[registry.Parser], results: list[registry.ParseResult],
             problems: list[Problem]) -> _Outcome:
    rows = sum(r.rows for r in results)
    # a companion parser that found nothing is not worth naming
    used = [(p, r) for p, r in zip(chosen, results, strict=True) if r.rows or r.problems] or \
        [(chosen[0], results[0])]
    fmt = "+".join(p.name for p, _ in used)
    variant = "; ".join(r.variant for _, r in used if r.variant) or None
    errors = [p for p in problems if p.severity == "error"]
    if any(r.variant == "failed" for _, r in used) and rows == 0:
        return _Outcome(src, fmt, variant, "failed", 0, errors[0].message)
    if errors:
        return _Outcome(src, fmt, variant, "partial", rows, errors[0].message)
    if rows == 0:
        return _Outcome(src, fmt, variant, "empty", 0, f"no {fmt} records found")
    return _Outcome(src, fmt, variant, "ok", rows, "")


def _sources_frame(outcomes: list[_Outcome]) -> pd.DataFrame:
    data = {
        "source": [o.source.name for o in outcomes],
        "format": [o.format for o in outcomes],
        "variant": [o.variant for o in outcomes],
        "status": [o.status for o in outcomes],
        "rows": [o.rows for o in outcomes],
        "size_bytes": [_size(o.source) for o in outcomes],
        # text that names a file can hold its name's undecodable bytes: never in Arrow
        "message": [display_name(o.message) for o in outcomes],
    }
    return schema.conform(data, schema.SOURCES)


def _size(src: Source) -> int | None:
    if src.unreadable is not None:
        return None
    try:
        return src.size()
    except OSError:
        return None


def _problems_frame(problems: list[Problem]) -> pd.DataFrame:
    data = {
        "source": [display_name(p.source) for p in problems],
        "line": [p.line for p in problems],
        "severity": [p.severity for p in problems],
        "message": [display_name(p.message) for p in problems],
    }
    return schema.conform(data, schema.PROBLEMS)


def read_function(name: str) -> Callable[..., Dataset]:
    """``read_<name>``: :func:`load` with the format forced to ``name`` (no detection), the
    paths first and keyword-only options, ``engine`` among them where the format has routes
    (``"auto"``, or one of its :attr:`registry.Spec.engines`). Made from the registry, so
    every format has one; ``dptrace.read_<name>`` is this function."""
    spec = registry.get(name).spec

    def read(paths: PathArg, *, progress: ProgressFn | None = None,
             max_decompressed: SizeArg = None, **options: Any) -> Dataset:
        parser = registry.get(name).with_options(**options)
        sources, problems = expand(paths,
                                   max_decompressed=resolve_max_decompressed(max_decompressed))
        return load_sources(sources, problems, parser, progress=progress)

    kw = inspect.Parameter.KEYWORD_ONLY
    params = [inspect.Parameter("paths", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                annotation="PathArg")]
    if spec.engines:
        params.append(inspect.Parameter("engine", kw, default="auto", annotation="str"))
    params += [inspect.Parameter("progress", kw, default=None, annotation="ProgressFn | None"),
               inspect.Parameter("max_decompressed", kw, default=None, annotation="SizeArg")]
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


def _batch_outcome(src: Source, fmt: str, variant: str | None, rows: int,
                   problems: list[Problem], failed: str | None = None) -> _Outcome:
    if failed:
        return _Outcome(src, fmt, None, "failed", 0, failed)
    errors = [p for p in problems if p.severity == "error"]
    status, message = ("partial", errors[0].message) if errors else ("ok", "")
    if rows == 0 and not errors:
        status, message = "empty", f"no {fmt} records found"
    return _Outcome(src, fmt, variant, status, rows, message)


def report(ds: Dataset, *, warmup: float = 0.1) -> Report:
    """The report of ``ds``, for notebooks: ``.tables``, ``.figures`` (plotly), ``.to_html(path)``,
    ``.to_json()``; Jupyter shows a compact summary. ``warmup`` is the share of each
    instance's steps dropped before averaging throughput (as ``dptrace report --warmup``)."""
    from .reports import model

    return model.build(ds, warmup=warmup)

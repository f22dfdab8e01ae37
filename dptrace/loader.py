"""The loader: sources in, one :class:`~dptrace.dataset.Dataset` out.

The flow, for the sources :func:`dptrace.sources.expand` found (see docs/architecture.md):

1. **detect** each source's format (:func:`dptrace.registry.detect_all`; a forced format
   skips it); unreadable, unrecognised and special files get their outcome here;
2. **group**: every source of a batch format (:attr:`dptrace.registry.Spec.batch`, e.g.
   thousands of mpitrace rank files) makes one group, read at once so each table is built
   once; any other source is a group of one, read with every format that claimed it
   (an embeddable companion: a doc page with a training log and an sntilestat listing);
3. **parse** each group through the one parser contract,
   :meth:`dptrace.registry.Parser.parse_group` (tables + one outcome per source), on this
   load's :class:`~dptrace.executor.Executor`: the loader owns it and hands it to the
   readers, which split a large input into pieces on it and never start processes of
   their own. Groups run one after another, in input order; a large plain file's
   companion formats are read in a process of their own beside its first format
   (:func:`_companions_begun`);
4. **status** of each source from its outcome, by one rule (:func:`status`), then settled
   (:class:`_Settle`: a file of a directory that nothing recognises is ``skipped``);
5. **conform** each table to the schema once, and put every row in its **run**
   (:mod:`dptrace.runs`).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from . import memory, registry, runs, schema
from .dataset import Dataset
from .errors import Problem, UnknownFormatError
from .executor import Executor, ExecutorArg, resolve
from .sources import HEAD_BYTES, Source, display_name, fewer_collections

#: a plain file at least this large is read by its companion formats in another process,
#: beside its first format (:func:`_companions_begun`)
OVERLAP_BYTES = 64 << 20
#: called before each source is parsed: (source, index, total)
ProgressFn = Callable[[Source, int, int], None]
#: an input that takes longer than this (seconds) to read and parse gets an info problem
#: saying so (one parse is not interrupted: a watchdog thread cannot stop C code, and a
#: process per input costs more than most inputs take)
SLOW_INPUT_S = 30.0
#: the cyclic garbage collector's first threshold while a load runs (Python's: 700)
LOAD_GC_THRESHOLD = 100_000


@dataclass
class _Outcome:
    source: Source
    format: str | None
    variant: str | None
    status: str
    rows: int
    message: str


def load_sources(sources: list[Source], problems: list[Problem],
                 format: str | registry.Parser | None = None, *,
                 progress: ProgressFn | None = None,
                 arguments: Sequence[runs.Argument] | None = None,
                 origins: Sequence[int] | None = None,
                 executor: ExecutorArg = None) -> Dataset:
    """:func:`dptrace.load` of sources already expanded (``sources.expand``), with the
    problems found on the way; the CLI expands once to size its progress bar. ``arguments``
    and ``origins`` (from :func:`dptrace.api.expand_arguments`) group the sources into runs;
    without them each source is its own argument (files sharing a job id still make one
    run). ``executor``: see :func:`dptrace.load`."""
    with _fewer_collections(), _system_arrow_pool():
        return _load_sources(sources, problems, format, progress=progress,
                             arguments=arguments, origins=origins, executor=executor)


def _fewer_collections() -> contextlib.AbstractContextManager[None]:
    """Python's cyclic garbage collector collected less often while a load runs (its first
    threshold raised to :data:`LOAD_GC_THRESHOLD`, then restored:
    :func:`dptrace.sources.fewer_collections`, which ``expand`` uses too). A load keeps a
    few objects per source for its whole length (the source, what its reader and the
    loader say of it) and makes almost no cycles: with the default threshold, the collector
    walked those thousands of objects again and again (a full collection per load of 4096
    rank files, 8% of its time). Cycles are still collected, every 100,000 allocations."""
    return fewer_collections(LOAD_GC_THRESHOLD)


@contextlib.contextmanager
def _system_arrow_pool() -> Iterator[None]:
    """Arrow's default memory pool set to the system allocator (malloc) while a load runs,
    then restored. Arrow's default pool (jemalloc or mimalloc) keeps the pages of freed
    buffers for reuse: a load makes and drops many short-lived Arrow buffers (the columns
    of each batch of rank files, each factorize) and those kept pages added ~0.6x the
    input to the peak RSS of a load of 4096 mpitrace rank files (3.2x -> 2.7x), at no cost
    in time. Each buffer remembers the pool it came from, so one made during the load and
    freed after is given back to the system allocator, as it should be."""
    try:
        import pyarrow as pa
    except ImportError:   # pragma: no cover - pyarrow is a dependency of the readers
        yield
        return
    old = pa.default_memory_pool()
    system = pa.system_memory_pool()
    if old.backend_name == system.backend_name:
        yield
        return
    pa.set_memory_pool(system)
    try:
        yield
    finally:
        pa.set_memory_pool(old)


def _load_sources(sources: list[Source], problems: list[Problem],
                  format: str | registry.Parser | None = None, *,
                  progress: ProgressFn | None = None,
                  arguments: Sequence[runs.Argument] | None = None,
                  origins: Sequence[int] | None = None,
                  executor: ExecutorArg = None) -> Dataset:
    forced = (registry.get(format) if isinstance(format, str) and format != "auto"
              else format if isinstance(format, registry.Parser) else None)
    pool = resolve(executor)
    problems = list(problems)
    frames: dict[str, list[pd.DataFrame]] = {}
    outcomes: dict[int, _Outcome] = {}
    batches: dict[str, list[int]] = {}
    launchers: dict[str, str] = {}
    small: list[int] = []   # small logs waiting to be read together (_read_small)
    small_parser: registry.Parser | None = None
    for i, src in enumerate(sources):
        chosen = _choose(src, forced, outcomes, problems, i)
        if chosen and (chosen[0].name in _LOGS or len(chosen) > 1 and
                       any(p.name in _LOGS for p in chosen)):
            seen = runs.launcher_in(_head(src))
            if seen:
                launchers[src.name] = seen
        if chosen and len(chosen) == 1 and chosen[0].spec.batch and len(sources) > 1:
            batches.setdefault(chosen[0].name, []).append(i)   # read with its batch, below
            continue
        if progress:
            progress(src, i, len(sources))
        if chosen and len(sources) > 1 and _small(chosen, src):
            if small and (small_parser != chosen[0] or len(small) >= SMALL_GROUP):
                _read_small(small_parser, small, sources, outcomes, frames, problems, pool)
            small.append(i)
            small_parser = chosen[0]
            continue
        if chosen:   # a group of one, read by its format and any sure companion
            if small:   # the small logs before it first: the tables' rows stay in order
                _read_small(small_parser, small, sources, outcomes, frames, problems, pool)
            started = time.perf_counter()
            outcomes[i] = _read_group(chosen, [src], frames, problems, pool)[0]
            _note_slow(src, time.perf_counter() - started, problems)
        src.forget()
    if small:
        _read_small(small_parser, small, sources, outcomes, frames, problems, pool)
    for name, members in batches.items():
        group = [sources[i] for i in members]
        results = _read_group([registry.get(name) if forced is None else forced], group,
                              frames, problems, pool, progress)
        for i, outcome in zip(members, results, strict=True):
            outcomes[i] = outcome
        for src in group:
            src.forget()
    return _finished(frames, outcomes, problems, forced, sources, arguments, origins,
                     launchers)


def _finished(frames: dict[str, list[pd.DataFrame]], outcomes: dict[int, _Outcome],
              problems: list[Problem], forced: registry.Parser | None,
              sources: list[Source], arguments: Sequence[runs.Argument] | None,
              origins: Sequence[int] | None, launchers: dict[str, str]) -> Dataset:
    """The Dataset of what was parsed: each table's parts conformed once, every source's
    outcome settled, the sources and problems tables, the runs."""
    tables = {
        # one part (a batch's table): conform gives a fresh frame and index without a concat
        name: schema.conform(parts[0] if len(parts) == 1 else schema.concat(parts),
                             schema.TABLES[name])
        if name in schema.TABLES else schema.concat(parts)
        for name, parts in frames.items()
    }
    memory.release(sum(len(df) for df in tables.values()))
    settle = _Settle(problems, forced)
    ordered = [settle(outcomes[i]) for i in range(len(sources))]
    return _with_runs(tables, _sources_frame(ordered), _problems_frame(settle.problems()),
                      sources, arguments, origins, launchers)


#: formats of a process's printed output: their lines' launcher prefixes name the launcher
_LOGS = frozenset({"trainlog", "mllog", "nccl", "nccltests", "dscomms"})
#: small logs read together at most (the rows of each group are gathered before its
#: tables are built; the reader bounds them too)
SMALL_GROUP = 4096


def _small(chosen: list[registry.Parser], src: Source) -> bool:
    """Whether ``src`` is read with the small inputs around it: one format claims it, its
    reader reads many small inputs at once (``parse_small``, for plain inputs under its
    ``SMALL_BYTES``: thousands of small logs, each its own job), and it is one of them."""
    if len(chosen) != 1:
        return False
    module = registry.reader(chosen[0].name)
    limit = getattr(module, "SMALL_BYTES", 0) if hasattr(module, "parse_small") else 0
    if not limit or not src.plain:
        return False
    try:
        return src.size() < limit
    except OSError:
        return False


def _read_small(parser: registry.Parser | None, members: list[int], sources: list[Source],
                outcomes: dict[int, _Outcome], frames: dict[str, list[pd.DataFrame]],
                problems: list[Problem], pool: Executor) -> None:
    """Read the small inputs ``members`` (indices into ``sources``, emptied) of ``parser``
    at once with its reader's ``parse_small``: each table built once for all of them, one
    outcome per source as :func:`_read_group` makes it (its problems, then the notes
    reading left). Should the batch itself fail, each is read on its own."""
    assert parser is not None
    group = [sources[i] for i in members]
    module = registry.reader(parser.name)
    found: list[Problem] = []
    try:
        assert module is not None   # _small found its parse_small
        tables, outs = module.parse_small(group, found, **dict(parser.options))
    except Exception:
        for i, src in zip(members, group, strict=True):
            outcomes[i] = _read_group([parser], [src], frames, problems, pool)[0]
            src.forget()
        members.clear()
        return
    for name, parts in tables.items():
        for df in parts:
            if len(df):
                frames.setdefault(name, []).append(df)
    for i, src, out in zip(members, group, outs, strict=True):
        problems.extend(out.problems)
        late = src.take_notes()
        problems.extend(late)
        outcomes[i] = status(src, [(parser.name, out)], list(out.problems) + late)
        src.forget()
    members.clear()


def _read_group(chosen: list[registry.Parser], group: list[Source],
                frames: dict[str, list[pd.DataFrame]], problems: list[Problem],
                pool: Executor, progress: ProgressFn | None = None) -> list[_Outcome]:
    """Read ``group`` with every format in ``chosen`` (the parser contract,
    :meth:`registry.Parser.parse_group`); its tables go to ``frames``, its problems to
    ``problems``; one outcome per source, in order."""
    said: list[list[tuple[str, registry.Outcome]]] = [[] for _ in group]
    found: list[Problem] = []
    later = _companions_begun(chosen, group, pool)
    for parser in chosen:
        alone = _waited(later.pop(parser.name)) if parser.name in later else None
        if alone is not None:   # read in another process meanwhile: its results, in turn
            tables, outs, theirs, notes = alone
            found.extend(theirs)
            group[0].keep_notes(notes)
        else:
            tables, outs = parser.parse_group(group, found, executor=pool, progress=progress)
        for name, df in tables.items():
            if len(df):
                frames.setdefault(name, []).append(df)
        for k, out in enumerate(outs):
            said[k].append((parser.name, out))
    problems.extend(found)
    results = []
    for src, used in zip(group, said, strict=True):
        # what reading found and no reader took (damage seen by a reader that streams)
        late = src.take_notes()
        problems.extend(late)
        mine = [p for _, o in used for p in o.problems] + late
        results.append(status(src, used, mine))
    return results


def _companions_begun(chosen: list[registry.Parser], group: list[Source], pool: Executor,
                      ) -> dict[str, Callable[[], _Alone]]:
    """The formats after the first that read a large plain file of one (an embeddable
    companion: the NCCL lines of a training log), each begun in a process of its own
    (``pool.start``) to run beside the first format's read (one that splits the file
    still splits it on the executor's workers); none when the executor cannot
    start work beside the caller, has a single worker, or the file is small or not plain
    (a decompressed or transcoded source is read once, by one format after another)."""
    start = getattr(pool, "start", None)
    if start is None or len(chosen) < 2 or len(group) != 1 or pool.workers < 2:
        return {}
    src = group[0]
    try:
        if not src.plain or src.size() < OVERLAP_BYTES:
            return {}
    except OSError:
        return {}
    begun: dict[str, Callable[[], _Alone]] = {}
    try:
        for parser in chosen[1:]:
            begun[parser.name] = start(_parse_alone, (parser, src, pool))
    except BaseException:
        for wait in begun.values():   # the processes begun are waited for, not left behind
            _waited(wait)
        raise
    return begun


#: what a companion read in another process sends back: its tables and outcomes, the
#: problems it found, and the source's notes it took
_Alone = tuple[dict[str, pd.DataFrame], list[registry.Outcome], list[Problem], list[Problem]]


def _waited(result: Callable[[], _Alone]) -> _Alone | None:
    """A companion's results; None when its process failed (killed, out of memory: then
    it is read here, as without the overlap). Its reader's own crashes come back as its
    outcomes (:meth:`registry.Parser.parse_group`)."""
    try:
        return result()
    except Exception:
        return None


def _parse_alone(job: tuple[registry.Parser, Source, Executor]) -> _Alone:
    """One companion format's read of a source, in its own process; a reader that splits
    the file still does so on the executor's workers (forked from this process)."""
    parser, src, pool = job
    found: list[Problem] = []
    tables, outs = parser.parse_group([src], found, executor=pool)
    return tables, outs, found, src.take_notes()


def status(src: Source, used: list[tuple[str, registry.Outcome]],
           problems: list[Problem]) -> _Outcome:
    """The one rule for a parsed source's status, from what each format that read it said
    (``used``: format name, outcome) and its problems: ``failed`` (a reader's verdict, or
    no rows and a reader that failed), ``partial`` (rows, and an error: something was
    skipped), ``empty`` (no records, no error) or ``ok``. A companion format that found
    nothing is not named in ``format``."""
    if len(used) == 1 and not problems:   # the usual source: one format, rows, nothing said
        name, o = used[0]
        if o.rows and not o.failed:
            return _Outcome(src, name, o.variant or None, "ok", o.rows, "")
    rows = sum(o.rows for _, o in used)
    named = [(n, o) for n, o in used if o.rows or o.problems] or used[:1]
    fmt = "+".join(n for n, _ in named)
    verdict = next((o.failed for _, o in named if o.failed), None)
    if verdict:
        return _Outcome(src, fmt, None, "failed", 0, verdict)
    variant = "; ".join(o.variant for _, o in named if o.variant) or None
    errors = [p for p in problems if p.severity == "error"]
    if any(o.variant == "failed" for _, o in named) and rows == 0:
        return _Outcome(src, fmt, variant, "failed", 0, errors[0].message)
    if errors:
        return _Outcome(src, fmt, variant, "partial", rows, errors[0].message)
    if rows == 0:
        return _Outcome(src, fmt, variant, "empty", 0, f"no {fmt} records found")
    return _Outcome(src, fmt, variant, "ok", rows, "")


def _with_runs(tables: dict[str, pd.DataFrame], sources_df: pd.DataFrame,
               problems_df: pd.DataFrame, sources: list[Source],
               arguments: Sequence[runs.Argument] | None,
               origins: Sequence[int] | None,
               launchers: Mapping[str, str] | None = None) -> Dataset:
    """The Dataset, with the run of each row (``run`` first in every table) and the
    ``runs`` table (see :mod:`dptrace.runs` for the rule)."""
    if arguments is None or origins is None or len(origins) != len(sources):
        arguments = [runs.Argument(os.fsdecode(src.path)) for src in sources]
        origins = list(range(len(sources)))
    names = [src.name for src in sources]
    facts = runs.source_facts(names, sources_df, tables)
    run_ids, labels = runs.assign([os.fsdecode(src.path) for src in sources], origins,
                                  arguments, facts)
    run_of = dict(zip(names, run_ids, strict=True))
    order = list(labels)
    tables = {k: runs.add_run(v, run_of, order) for k, v in tables.items()}
    tables, order, labels, parents = runs.split_parts(tables, order, labels)
    sources_df = runs.add_run(sources_df, run_of, order)
    problems_df = runs.add_run(problems_df, run_of, order)
    table = runs.runs_table(run_of, labels, tables, sources_df, parents, launchers)
    memory.release(sum(len(df) for df in tables.values()))   # the runs step's temporaries
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




class _Settle:
    """The outcome of a source that gave no rows, once it is known what it is.

    A file found in a directory or by a glob that no format recognises (nothing claimed it,
    or only a guess did and found nothing: a README, params.json, an empty file) becomes
    ``skipped``: its problems are replaced by one ``info`` row, and the exit code ignores
    it; so does one that a format was sure of but found nothing in, without an error (a
    script that prints an sntilestat header). A file named on its own keeps its error, with
    the format it looks like when it is one that dptrace knows but does not read yet
    (PyTorch profiler traces, NCCL debug logs, ...). Damaged files of a format that was
    sure of them, unreadable files and parser crashes keep their status.
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
        if any(registry.CRASH in e for e in errors):  # a reader crashed: never skipped
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
    """"looks like an NCCL debug log, ..." for a file of a format dptrace does not read yet."""
    return registry.not_read_yet(_head(src))


def _claimed(src: Source, o: _Outcome) -> bool:
    """True when a format that gave ``o`` was sure of ``src`` (its sniff score): then the
    file is that format's, even if nothing could be read from it."""
    head = _head(src)
    known = registry.parsers()
    names = (o.format or "").split("+")
    return any(n in known and known[n].sniff(src, head) >= registry.SURE for n in names)


def _sources_frame(outcomes: list[_Outcome]) -> pd.DataFrame:
    srcs = [o.source for o in outcomes]
    data = {
        "source": [s.name for s in srcs],
        "format": [o.format for o in outcomes],
        "variant": [o.variant for o in outcomes],
        "status": [o.status for o in outcomes],
        "rows": [o.rows for o in outcomes],
        # the size a plain file read whole remembers (no call per source), else _size
        "size_bytes": [s._size[0] if s._size and s.unreadable is None else _size(s)
                       for s in srcs],
        # text that names a file can hold its name's undecodable bytes: never in Arrow
        "message": [m if m.isascii() else display_name(m) for m in
                    (o.message for o in outcomes)],
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


def assemble(sources: list[Source],
             results: Sequence[Sequence[tuple[str, registry.ParseResult]] | None],
             problems: list[Problem], *,
             arguments: Sequence[runs.Argument] | None = None,
             origins: Sequence[int] | None = None,
             launchers: Mapping[str, str] | None = None,
             unread: str = "not read yet") -> Dataset:
    """The Dataset of ``results`` parsed elsewhere (``dptrace watch``'s incremental readers),
    by the loader's own steps after parsing: per source (in order) its (format, ParseResult)
    pairs, or None for a source not read (its outcome by the detection rules; a source they
    recognise is "empty" with the message ``unread``); then status, settle, conform, runs.
    ``launchers``: the launcher each log's head names (:func:`dptrace.runs.launcher_in`)."""
    problems = list(problems)
    frames: dict[str, list[pd.DataFrame]] = {}
    outcomes: dict[int, _Outcome] = {}
    for i, (src, got) in enumerate(zip(sources, results, strict=True)):
        if got is None:
            chosen = _choose(src, None, outcomes, problems, i)
            if i not in outcomes:
                outcomes[i] = _Outcome(src, "+".join(p.name for p in chosen) or None, None,
                                       "empty", 0, unread)
            src.forget()
            continue
        used = []
        for fmt, res in got:
            problems.extend(res.problems)
            for name, df in res.tables.items():
                if len(df):
                    frames.setdefault(name, []).append(df)
            used.append((fmt, registry.Outcome(src, res.variant, res.rows, list(res.problems))))
        outcomes[i] = status(src, used, [p for _, o in used for p in o.problems])
    return _finished(frames, outcomes, problems, None, sources, arguments, origins,
                     dict(launchers or {}))

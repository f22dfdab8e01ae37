"""The format registry: each format's spec (name, tables, sniffing rule) and its reader.

Formats are the packages of :mod:`dptrace.formats`, found with :mod:`pkgutil` (no list is
kept by hand: a new format is one new package). A package's ``__init__`` holds its
:class:`Spec` (``SPEC``) and imports nothing heavy; its reader, ``<package>.read`` (a
``parse`` function, and ``parse_many`` for a :attr:`Spec.batch` format), is imported the
first time an input of that format is read. When that import fails (a broken install, a
missing compiled dependency), the format's inputs are still recognised and each gets one
problem naming the import error, while every other format works as usual.

Detection reads content (the first KB of the decompressed input), not only names:
every format's ``sniff`` returns a confidence in [0, 1] and the highest wins. A tie
between the best two is an ambiguity error that asks for ``--format``. One pass over the
head finds which formats' :attr:`Spec.markers` it holds (an RE2 set); when one of those
formats is sure, or a training log with its keywords, the others are not asked (they
could not change the answer).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import re
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from . import formats
from .errors import Problem, UnknownFormatError
from .sources import HEAD_BYTES, Source

if TYPE_CHECKING:
    import pandas as pd

    from .executor import Executor

#: how far into an input :attr:`Spec.deep` markers are looked for (a bytes search, as fast
#: as the disk; a plain file this small is then read once for detection and parsing)
DEEP_BYTES = 16 << 20
#: a sniff score at or above this means "this is surely my format"
SURE = 0.9
#: below this a parser's claim is not enough to pick it
MIN_SCORE = 0.05
#: an embeddable parser this confident also runs beside the best match
COMPANION_SCORE = 0.5
#: an embeddable format that must run beside a training log scores from COMPANION_SCORE up
#: to this (the training log's score with its keywords in the head); as the best match it
#: lets every embeddable format that claims the input at all run too
COMPANION_BELOW = 0.6


class _LazyPattern:
    """A regular expression compiled on its first use (see :func:`lazy_pattern`)."""

    #: what is copied from the compiled pattern on first use, so that later look-ups are
    #: plain attribute reads (no __getattr__): as fast as the compiled pattern's methods
    _COPIED = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split",
               "scanner", "groups", "groupindex", "flags")

    def __init__(self, pattern: str | bytes, flags: int = 0) -> None:
        self.pattern = pattern
        self._flags = flags

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("pattern", "_flags"):   # (copy, pickle probes)
            raise AttributeError(name)
        compiled = re.compile(self.pattern, self._flags)
        for attr in self._COPIED:
            setattr(self, attr, getattr(compiled, attr))
        return getattr(compiled, name)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_LazyPattern, (self.pattern, self._flags))

    def __repr__(self) -> str:
        return f"lazy_pattern({self.pattern!r}, {self._flags})"


def lazy_pattern(pattern: str | bytes, flags: int = 0) -> Any:
    """``re.compile(pattern, flags)`` done on the pattern's first use: a module's patterns
    that a run never uses (a training log's recognisers of other tools, a sniff's pattern
    behind a cheaper test) cost nothing (compiling a regex is 0.05-1 ms; a module with
    dozens of them costs a small report ~10 ms at import). It has ``pattern`` at once and
    every method of a compiled pattern; it is not an ``re.Pattern`` (``re.compile`` and
    ``isinstance`` do not take it)."""
    return _LazyPattern(pattern, flags)


@dataclass
class ParseResult:
    """What a parser returns for one source: tables (already conformed), problems, variant."""

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    variant: str | None = None

    @property
    def rows(self) -> int:
        return sum(len(df) for df in self.tables.values())


@dataclass
class Outcome:
    """What a format's reader says of one source of a group it parsed: the loader makes the
    source's status from it (one rule for every format, :func:`dptrace.loader.status`)."""

    source: Source
    variant: str | None = None
    rows: int = 0
    problems: list[Problem] = field(default_factory=list)
    #: why the whole source failed (a batch reader's verdict), else None
    failed: str | None = None


#: what a parser's crash report says; such a source is never settled as "skipped"
CRASH = "parser failed: "


@dataclass
class SourceReport:
    """What a batch parser tells about each of its sources."""

    source: Source
    variant: str | None
    rows: int
    problems: list[Problem]
    failed: str | None = None


SniffFn = Callable[[Source, bytes], float]
ParseFn = Callable[[Source], ParseResult]
#: parse many sources of one format at once, building each table once: returns the tables
#: and one report per source, in order (thousands of rank files: no frame per file); a
#: reader may report with :class:`Outcome` itself (taken as it is)
ParseManyFn = Callable[[Sequence[Source], list[Problem], Any],
                       "tuple[dict[str, pd.DataFrame], Sequence[SourceReport | Outcome]]"]


@dataclass(frozen=True)
class Spec:
    """What the registry knows of a format without importing its reader."""

    name: str
    description: str
    tables: tuple[str, ...]
    sniff: SniffFn
    extensions: tuple[str, ...] = ()
    #: its records can sit inside other text (a log that also holds an sntilestat table, a doc
    #: page with several tools' output): it also runs beside the best match when it is sure
    embeddable: bool = False
    #: its reader has ``parse_many``, which ``load`` uses for a group of its sources
    batch: bool = False
    #: the routes its reader offers besides "auto" (``engine=`` of ``parse`` and
    #: ``read_<name>``), e.g. ("fast", "general"); () when it has one route
    engines: tuple[str, ...] = ()
    #: what ``read_<name>`` reads into which tables (its docstring: "Parse <reads>.")
    reads: str = ""
    #: its reader splits one large input into pieces run on the loader's executor: its
    #: ``parse`` takes ``executor=`` (:mod:`dptrace.executor`)
    splits: bool = False
    #: an embeddable format whose lines can start past the head (NCCL's lines come when
    #: the process group starts, after a long preamble): the bytes every such line holds.
    #: When the head has none, the first :data:`DEEP_BYTES` are searched for them and the
    #: format sniffs the text from the line of the first one.
    deep: bytes = b""
    #: what its sniff needs in a head to claim it: regular expressions (RE2 syntax, mostly
    #: escaped literals), one of which a head must hold for the sniff to score
    #: :data:`COMPANION_SCORE` or more (a head with none scores 0, or a log's weak guess,
    #: below it). Detection looks for every format's markers in one pass over the head (an
    #: RE2 set) and asks first the formats whose markers are there (and those without
    #: markers); when one of them scores COMPANION_BELOW or more, the others are not
    #: asked: they could neither tie it nor run beside it. () : the sniff is always asked.
    markers: tuple[bytes, ...] = ()


@dataclass(frozen=True)
class Parser:
    """A registered format: its spec, the reader imported on first use, and the keyword
    options (``engine``) passed to the reader (see :meth:`with_options`)."""

    spec: Spec
    options: tuple[tuple[str, Any], ...] = ()

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def description(self) -> str:
        return self.spec.description

    @property
    def tables(self) -> tuple[str, ...]:
        return self.spec.tables

    @property
    def extensions(self) -> tuple[str, ...]:
        return self.spec.extensions

    @property
    def embeddable(self) -> bool:
        return self.spec.embeddable

    def sniff(self, source: Source, head: bytes) -> float:
        return self.spec.sniff(source, head)

    def parse(self, source: Source, executor: Executor | None = None) -> ParseResult:
        """Parse one source (when the reader cannot be imported: one problem naming why).
        ``executor``: where a reader that splits large inputs runs the pieces."""
        module = reader(self.name)
        if module is None:
            msg = (f"looks like {self.name}, but dptrace's {self.name} reader could not be "
                   f"loaded ({UNAVAILABLE[self.name]}); reinstall dptrace "
                   "(pip install --force-reinstall dptrace)")
            return ParseResult(problems=[Problem(source.name, msg, severity="error")],
                               variant="failed")
        options = dict(self.options)
        if self.spec.splits and executor is not None:
            options["executor"] = executor
        result: ParseResult = module.parse(source, **options)
        return result

    def parse_group(self, sources: Sequence[Source], problems: list[Problem], *,
                    executor: Executor | None = None, progress: Any = None,
                    ) -> tuple[dict[str, pd.DataFrame], list[Outcome]]:
        """The one parser contract: parse a group of this format's sources; the tables and
        one :class:`Outcome` per source, in order. Every problem found is appended to
        ``problems`` as well. A batch format (:attr:`Spec.batch`) reads a group of several
        sources at once, building each table once; otherwise the group is read source by
        source (a single file is a group of one). A crash of the reader costs the group's
        sources, never the load."""
        many = self.parse_many if len(sources) > 1 else None
        if many is not None:
            try:
                tables, reports = many(sources, problems, progress)
            except Exception as exc:
                outcomes = []
                for src in sources:
                    p = _crash_problem(self.name, src, exc)
                    problems.append(p)
                    outcomes.append(Outcome(src, "failed", 0, [p]))
                return {}, outcomes
            return tables, [r if type(r) is Outcome else
                            Outcome(r.source, r.variant, r.rows, list(r.problems), r.failed)
                            for r in reports]
        parts: dict[str, list[pd.DataFrame]] = {}
        outcomes = []
        for i, src in enumerate(sources):
            if progress is not None and len(sources) > 1:
                progress(src, i, len(sources))
            try:
                result = self.parse(src, executor)
            except Exception as exc:   # a reader's bug must not stop the report
                result = ParseResult(problems=[_crash_problem(self.name, src, exc)],
                                     variant="failed")
            problems.extend(result.problems)
            for name, df in result.tables.items():
                parts.setdefault(name, []).append(df)
            outcomes.append(Outcome(src, result.variant, result.rows, list(result.problems)))
        return {k: v[0] if len(v) == 1 else _schema().concat(v) for k, v in parts.items()}, outcomes

    @property
    def parse_many(self) -> ParseManyFn | None:
        """The batch entry point of a :attr:`Spec.batch` format whose reader imports; else
        None (``load`` then parses source by source)."""
        module = reader(self.name) if self.spec.batch else None
        if module is None:
            return None
        fn: ParseManyFn = functools.partial(module.parse_many, **dict(self.options))
        return fn

    def with_options(self, **options: Any) -> Parser:
        """This format with keyword options for its reader: ``engine`` (one of
        ``"auto"`` and :attr:`Spec.engines`) where the format has routes."""
        engine = options.get("engine", "auto")
        if "engine" in options and not self.spec.engines:
            raise TypeError(f"the {self.name} reader has one route: no engine option")
        if engine not in ("auto", *self.spec.engines):
            raise ValueError(f"engine must be one of {', '.join(('auto', *self.spec.engines))}"
                             f" for {self.name}, not {engine!r}")
        return Parser(self.spec, tuple(sorted(options.items())))


_PARSERS: dict[str, Parser] = {}
_LOADED = False
#: formats whose reader (or spec) could not be imported: name -> the error, in one line
UNAVAILABLE: dict[str, str] = {}
#: each format's reader module once imported (None: the import failed, see UNAVAILABLE)
_READERS: dict[str, ModuleType | None] = {}


def _crash_problem(name: str, src: Source, exc: Exception) -> Problem:
    where = traceback.extract_tb(exc.__traceback__)[-1]
    return Problem(src.name, f"{name} {CRASH}{type(exc).__name__}: {exc} (at "
                   f"{os.path.basename(where.filename)}:{where.lineno}; please report)",
                   severity="error")


def _schema() -> ModuleType:
    """:mod:`dptrace.schema`, imported when a reader first needs it (it imports pandas)."""
    return importlib.import_module("dptrace.schema")


def parsers() -> dict[str, Parser]:
    """All formats by name, found as the packages of :mod:`dptrace.formats` on first use
    (their specs only: readers are imported when first needed, see :func:`reader`)."""
    global _LOADED
    if not _LOADED:
        for name in formats.names():
            _import_spec(name)
        _LOADED = True
    return dict(_PARSERS)


def _import_spec(name: str) -> None:
    """Register one format's spec; if even that cannot be imported, its inputs stay
    unrecognised (:func:`detect` names why)."""
    try:
        spec = importlib.import_module(formats.module(name)).SPEC
    except Exception as exc:  # any import-time failure: ImportError, a broken extension, ...
        UNAVAILABLE[name] = f"{type(exc).__name__}: {exc}"
        return
    if spec.name != name:   # its reader is found by the package's name
        UNAVAILABLE[name] = f"the package {name!r} holds the spec of {spec.name!r}"
        return
    _PARSERS[spec.name] = Parser(spec)


def reader(name: str) -> ModuleType | None:
    """The reader module of format ``name`` (``dptrace.formats.<name>.read``), imported on
    first use; None when its import fails (the error is kept in :data:`UNAVAILABLE`)."""
    if name not in _READERS:
        try:
            _READERS[name] = importlib.import_module(f"{formats.module(name)}.read")
        except Exception as exc:  # any import-time failure: ImportError, a broken extension
            UNAVAILABLE[name] = f"{type(exc).__name__}: {exc}"
            _READERS[name] = None
    return _READERS[name]


def get(name: str) -> Parser:
    """The parser called ``name``; raises UnknownFormatError listing the known ones."""
    known = parsers()
    if name not in known:
        raise UnknownFormatError(f"unknown format {name!r}; known: {', '.join(sorted(known))}")
    return known[name]


def detect(source: Source, head: bytes | None = None) -> Parser:
    """Pick the parser for ``source`` from its first bytes.

    Raises :class:`UnknownFormatError` when nothing claims it or two formats tie.
    """
    return detect_all(source, head)[0]


def detect_all(source: Source, head: bytes | None = None) -> list[Parser]:
    """The best parser for ``source``, then the embeddable ones that are also sure of it.

    A SambaNova doc page can hold both training-log lines and an sntilestat table; a slurm
    log can hold sntilestat output. Raises :class:`UnknownFormatError` when nothing claims
    the input or the two best non-embeddable formats tie.
    """
    if head is None:
        head = source.head()
    found = _PARSERS if _LOADED else parsers()   # read only here: no copy per source
    scores = _scores(source, head, found)
    scores = _deep_scores(source, head, scores, found)
    best_score, best = scores[0] if scores else (0.0, "")
    if best_score < MIN_SCORE:
        missing = [n for n in UNAVAILABLE if n not in found]
        note = (f" (the reader of {', '.join(missing)} could not be loaded: "
                f"{'; '.join(UNAVAILABLE[n] for n in missing)})") if missing else ""
        raise UnknownFormatError(_unknown_reason(head) + note)
    chosen = [found[best]]
    # an embeddable best match that is not sure (a companion-level score: a DeepSpeed comms
    # summary, MLPerf :::MLLOG lines) does not push out the other embeddable formats that
    # claim the input at all: the training log those lines sit in (scored 0.1 when its
    # keywords are past the head) is still read
    floor = MIN_SCORE if chosen[0].embeddable and best_score < COMPANION_BELOW \
        else COMPANION_SCORE
    for score, name in scores[1:]:
        both_embeddable = found[name].embeddable and chosen[0].embeddable
        if score == best_score and not both_embeddable:
            raise UnknownFormatError(
                f"ambiguous: looks like both {best!r} and {name!r}; pass --format")
        if both_embeddable and score >= floor:
            chosen.append(found[name])
    return chosen


def _scores(source: Source, head: bytes, found: dict[str, Parser]) -> list[tuple[float, str]]:
    """The sniff scores of ``head``, best first. The formats whose :attr:`Spec.markers` the
    head holds (and those without markers) are asked first. When one of them scores
    :data:`COMPANION_BELOW` or more (a sure profile, a training log with its keywords), the
    rest are not asked and score 0 here: without their markers they score below
    :data:`COMPANION_SCORE`, so they could neither tie that best nor be chosen beside it,
    and a format with :attr:`Spec.deep` markers is still scored on the text past the head
    (:func:`_deep_scores`), where only a score of COMPANION_SCORE or more counts: the
    answer of :func:`detect_all` is the one of asking every format. Otherwise, or when no
    marker is found, every format is asked."""
    scan = _marker_scan(found)
    plan = scan.first(head) if scan is not None else None
    if plan is None:
        return sorted(((p.sniff(source, head), p.name) for p in found.values()), reverse=True)
    first, rest, zeros = plan
    scores = [(p.sniff(source, head), p.name) for p in first]
    best = max(scores)[0]
    if best < COMPANION_BELOW:
        scores += [(p.sniff(source, head), p.name) for p in rest]
    elif best < SURE:   # the text past the head may still be theirs (_deep_scores)
        scores += zeros
    return sorted(scores, reverse=True)


class _MarkerScan:
    """Every format's :attr:`Spec.markers` in one RE2 set (one pass over a head finds
    which are there), and for each combination found, the formats to ask first."""

    def __init__(self, found: dict[str, Parser]) -> None:
        import re2  # google-re2, a dependency (the training log keyword scan uses it too)

        self.parsers = tuple(found.values())
        self.set = re2.Set.SearchSet()
        #: the format of each pattern of the set, by index
        self.owner: list[str] = []
        #: formats asked whatever the head holds: no markers, or one that RE2 refuses
        self.always: list[str] = []
        for name, parser in found.items():
            markers = parser.spec.markers
            try:
                for marker in markers:
                    re2.compile(marker)
            except Exception:   # a plugin's marker RE2 cannot compile: always asked
                markers = ()
            if not markers:
                self.always.append(name)
            for marker in markers:
                self.set.Add(marker)
                self.owner.append(name)
        self.set.Compile()
        # the compiled set's own Match (the wrapper's adds a call per head)
        self._match = getattr(self.set, "_set", self.set).Match
        self._first: dict[tuple[int, ...], _Plan] = {}

    def first(self, head: bytes) -> _Plan | None:
        """The formats to ask first of ``head`` (in registry order: those whose markers it
        holds and those always asked), the others, and the others' scores of 0; None when
        it holds no marker (or RE2 failed)."""
        hits = self._match(head)
        if not hits:
            return None
        key = tuple(hits)
        got = self._first.get(key)
        if got is None:
            named = {self.owner[i] for i in hits}.union(self.always)
            first = tuple(p for p in self.parsers if p.name in named)
            rest = tuple(p for p in self.parsers if p.name not in named)
            got = first, rest, tuple((0.0, p.name) for p in rest)
            if len(self._first) >= 1 << 10:
                self._first.clear()
            self._first[key] = got
        return got


#: :meth:`_MarkerScan.first`'s answer
_Plan = tuple[tuple[Parser, ...], tuple[Parser, ...], tuple[tuple[float, str], ...]]


#: the marker scan of the formats it was made for (rebuilt when they change); None when
#: RE2 is missing or refuses the set: detection then asks every format
_SCAN: tuple[tuple[Parser, ...], _MarkerScan | None] = ((), None)


def _marker_scan(found: dict[str, Parser]) -> _MarkerScan | None:
    global _SCAN
    specs = tuple(found.values())
    if specs != _SCAN[0] or not specs:   # the same objects: a quick comparison
        try:
            scan: _MarkerScan | None = _MarkerScan(found)
        except Exception:   # no google-re2 (a platform without its wheels), a set it refuses
            scan = None
        _SCAN = (specs, scan)
    return _SCAN[1]


def _deep_scores(source: Source, head: bytes, scores: list[tuple[float, str]],
                 found: dict[str, Parser]) -> list[tuple[float, str]]:
    """``scores`` with the embeddable formats that have :attr:`Spec.deep` markers scored
    again on the text from their first marker past the head, when the head is a text log
    (its best match embeddable and not sure: a training log) or nothing, and the file goes
    on past it."""
    best = scores[0] if scores else (0.0, "")
    # a profile, table or trace that its format is sure of is not a log with a preamble
    if len(head) < HEAD_BYTES or best[0] >= SURE or (
            best[0] >= MIN_SCORE and not found[best[1]].embeddable):
        return scores
    todo = [(k, found[name]) for k, (score, name) in enumerate(scores)
            if found[name].spec.deep and score < COMPANION_SCORE
            and found[name].spec.deep not in head]
    if not todo:
        return scores
    deep = source.head(DEEP_BYTES)
    out = list(scores)
    texts: dict[bytes, bytes | None] = {}
    far = []
    for _, parser in todo:
        marker = parser.spec.deep
        at = deep.find(marker, max(len(head) - len(marker), 0))
        if at >= 0:
            texts[marker] = deep[deep.rfind(b"\n", 0, at) + 1:][:HEAD_BYTES]
        elif len(deep) >= DEEP_BYTES:
            far.append(marker)
    if far:  # the rest of the file, once for all of them
        texts.update(_past(source, far, len(deep)))
    for k, parser in todo:
        text = texts.get(parser.spec.deep)
        if text is None:
            continue
        score = parser.sniff(source, text)
        if score > out[k][0]:
            out[k] = (score, parser.name)
    return sorted(out, reverse=True)


#: the rest of a file is searched for deep markers this many bytes at a time (each block's
#: pages handed back once searched: the search does not leave the file in the resident size)
_PAST_BLOCK = 16 << 20


def _past(source: Source, markers: Sequence[bytes], start: int) -> dict[bytes, bytes]:
    """The text from the line of each marker's first place past ``start`` in a plain file,
    by marker (those found); NCCL's watchdog timeouts, a DeepSpeed comms summary or MLPerf's
    last records come at the end of long jobs. One map of the file for all the markers,
    searched a block at a time (:data:`_PAST_BLOCK`) with the C library's ``memmem`` where
    there is one (a third of the CPU of ``mmap.find``; :func:`finder`), each block's pages
    handed back once searched. Nothing for an input that is not a plain file (a compressed
    one is searched in its first :data:`DEEP_BYTES` only)."""
    if not source.plain:
        return {}
    from . import memory
    try:
        with source.buffer() as mm, finder(mm) as find:
            n = len(mm)
            # where each marker is looked for next (a marker may end past ``start``)
            todo = {marker: max(start - len(marker), 0) for marker in markers}
            first: dict[bytes, int] = {}
            pos = min(todo.values(), default=n)
            while pos < n and todo:
                end = min(n, pos + _PAST_BLOCK)
                for marker, lo in list(todo.items()):
                    at = find(marker, lo, end)
                    if at >= 0:
                        first[marker] = at
                        del todo[marker]
                    else:
                        todo[marker] = max(lo, end - len(marker) + 1)
                memory.give_back(mm, pos, end)
                pos = end
            texts = {}
            for marker, at in first.items():
                line = mm.rfind(b"\n", 0, at) + 1
                texts[marker] = bytes(mm[line:line + HEAD_BYTES])
            return texts
    except (OSError, ValueError):
        return {}


@contextlib.contextmanager
def finder(buf: Any) -> Iterator[Callable[[bytes, int, int], int]]:
    """``find(needle, lo, hi)`` while the context lasts: where ``needle`` first starts in
    ``buf[lo:hi]`` (-1: not there), by the C library's ``memmem`` on ``buf``'s memory where
    it has one (glibc, macOS, musl: a third of the CPU of ``mmap.find`` on a long search),
    else ``buf.find``. ``buf``: bytes, or a map (its pages are read where they are)."""
    memmem = _memmem()
    if memmem is None:
        yield lambda needle, lo, hi: buf.find(needle, lo, hi)
        return
    import numpy as np  # the address of a read-only map (ctypes wants a writable buffer)
    view = np.frombuffer(buf, np.uint8)
    base, size = view.ctypes.data, len(view)

    def find(needle: bytes, lo: int, hi: int) -> int:
        lo, hi = max(lo, 0), min(hi, size)   # never past the map (buf.find clamps hi too)
        if hi - lo < len(needle):
            return -1
        at = memmem(base + lo, hi - lo, needle, len(needle))
        return -1 if at is None else at - base

    try:
        yield find
    finally:
        del view  # the map can close


_MEMMEM: list[Any] = []


def _memmem() -> Any:
    """The C library's ``memmem`` (None where it has none)."""
    if not _MEMMEM:
        try:
            import ctypes
            fn = ctypes.CDLL(None).memmem
            fn.restype = ctypes.c_void_p
            fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
            _MEMMEM.append(fn)
        except (OSError, AttributeError, TypeError):
            _MEMMEM.append(None)
    return _MEMMEM[0]


#: formats dptrace knows by sight but does not read yet: what a file looks like, and the test
#: of its first bytes (every test that matches is named: a doc page can hold several tools'
#: text). ``load`` names them for a file that no parser claimed or found any record in.
NOT_READ_YET: tuple[tuple[str, re.Pattern[bytes]], ...] = (
    # prof.key_averages().table(): "Name  Self CPU %  Self CPU  CPU total %  CPU total ..."
    ("a PyTorch profiler table (key_averages)", re.compile(
        rb"(?m)^\s*Name\s+Self CPU %\s+Self CPU\s+CPU total %")),
)


def not_read_yet(head: bytes) -> str | None:
    """"looks like a PyTorch profiler table (key_averages), which dptrace does not read yet"
    when ``head`` (the first bytes of a file) looks like a format of :data:`NOT_READ_YET`;
    None otherwise."""
    kinds = [kind for kind, test in NOT_READ_YET if test.search(head)]
    if not kinds:
        return None
    return f"looks like {' and '.join(kinds)}, which dptrace does not read yet"


def _unknown_reason(head: bytes) -> str:
    if not head:
        return "empty file"
    if looks_binary(head):
        return "binary data, not a text log or trace this tool reads (use --format to force)"
    known = not_read_yet(head)
    if known:
        return known
    return "format not recognised (use --format to force one; `dptrace formats` lists them)"


#: the last head looks_binary saw and its answer: several sniffers ask about the same head
_LAST_BINARY: tuple[bytes, bool] = (b"", False)


def looks_binary(head: bytes) -> bool:
    """True for content with NUL bytes all over, or mostly non-text bytes. A text file
    with a few holes of NUL bytes (a crash, Lustre padding) is text: its reader reads
    around them and flags them."""
    global _LAST_BINARY
    last, answer = _LAST_BINARY
    if last is head:
        return answer
    answer = _looks_binary(head)
    if type(head) is bytes:   # immutable: the answer stays right
        _LAST_BINARY = (head, answer)
    return answer


#: runs of NUL bytes: text files get them from a crash or a file system that padded a
#: file (Lustre writes a block of zeros where data never arrived)
_NUL_RUN = re.compile(rb"\0+")
#: control bytes that text does not hold (NUL aside): not tab, LF, CR, ESC, BS, FF
_CONTROLS = bytes(range(1, 8)) + b"\x0b\x0e\x0f" + bytes(range(16, 27)) + bytes(range(28, 32)) \
    + b"\x7f"


def _looks_binary(head: bytes) -> bool:
    if b"\0" in head:
        return _binary_with_nuls(head)
    return _binary_text(head)


def _binary_with_nuls(head: bytes) -> bool:
    """A head holding NUL bytes is binary unless they sit in a few runs (holes a crash or
    the file system left in a text file) and what is around them is text.

    Executables, core dumps, compressed or random bytes and UTF-16 text have NULs all
    over (a run every few bytes); a text log with a hole has one run or a handful. The
    bytes around the runs must look like text: a line break, at least 32 bytes, next to no
    control bytes, and UTF-8 as :func:`_binary_text` judges it.
    """
    limit = 8 + len(head) // 8192
    for runs, _ in enumerate(_NUL_RUN.finditer(head), 1):
        if runs > limit:
            return True
    text = bytes(head).replace(b"\0", b"")
    if len(text) < 32 or b"\n" not in text and b"\r" not in text:
        return True
    controls = len(text) - len(text.translate(None, _CONTROLS))
    return controls * 100 > len(text) or _binary_text(text)


def _binary_text(head: bytes) -> bool:
    """Mostly non-text bytes (a head without NUL bytes)."""
    sample = head[:4096]
    if not sample or sample.isascii():   # ASCII without NUL: text (and valid UTF-8)
        return False
    text = bytes(range(32, 127)) + b"\t\n\r\x1b\x08\x0c"
    odd = len(sample.translate(None, text))
    # UTF-8 multi-byte text (tqdm's block characters) is fine; raw binary is not
    try:
        sample.decode("utf-8")
        return False
    except UnicodeDecodeError as exc:
        return exc.start < len(sample) - 4 and odd > len(sample) * 0.3

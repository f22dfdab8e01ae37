"""IBM mpitrace profiles: ``mpi_profile.<job>.<rank>``, and copies pasted in documents.

``LD_PRELOAD=libmpitrace.so`` writes one text profile per selected rank (by default rank 0
and the ranks with the minimum, median and maximum communication time). Every generation
is read; real lines (from ``shared/realdata/mpitrace``) look like::

    Data for MPI rank 0 of 32:
    Times and statistics from MPI_Init() to MPI_Finalize().      # older (Theta, ThetaGPU)
    Times from MPI_Init() to MPI_Finalize().                     # newer (Polaris, IBM today)
    MPI Routine                        #calls     avg. bytes      time(sec)
    MPI_Allreduce                       47108       247017.5        250.492
    MPI task 0 of 32 had the minimum communication time.
    total communication time = 251.328 seconds.
    max resident set size    = 1177.191 MBytes.                  # newer: MiB; oldest: KBytes
    Rank 3 reported the largest memory utilization : 1177.88 MBytes
    Message size distributions:
    MPI_Allreduce             #calls    avg. bytes      time(sec)
                               45773           8.0        214.933
    Communication summary for all tasks:                         # newer: Summary for all tasks:
      median  communication time = 273.408 sec for task 26
    MPI timing summary for all ranks:
    taskid       hostname     comm(s)  elapsed(s)     user(s)   system(s)    size(MB)    switches
        26       nid00278     273.41      317.92     5410.44      146.34     1168.45      282140

Also read: ``Times from MPI_Pcontrol(1) to MPI_Pcontrol(0).``, ``(all communicators)``
with its ``Profile data by communicator size`` section, ``Profile by call stack``,
``synchronization time`` (COLLECTIVE_BARRIER), the ``Histogram of times spent in MPI``
(above 32 ranks) and the oldest ``MPI tasks sorted by communication time`` table. Copies
made by mpitrace's ``util/translate.py`` (each call-stack frame followed by ``function =``
and ``source = file:line``) give the call stacks their names; beside their profile they
replace its call-stack rows instead of repeating the profile (:meth:`_Many.stacked_files`).

The scanning is in :mod:`.general`; this module names jobs, recovers the size
bins, and builds the tables from columns (:class:`Rows`). ``api.load`` calls :func:`parse`
for a single file; :func:`parse_many` reads many files (``load``'s mpitrace files,
:func:`dptrace.read_mpitrace`) into one set of columns, converting plain rank files a
batch at a time (:class:`.fast.Plain`), and builds each table once.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from itertools import chain
from operator import and_, eq, le, mul
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
from pandas.api.extensions import ExtensionArray

from ... import memory, schema
from ...errors import Problem
from ...registry import Outcome, ParseResult
from ...sources import Source
from . import MARKERS, TABLES, fast
from . import general as scan
from .tables import MPI_JOBS

#: mpi_profile.<job>[.<MMDDhhmmss>].<rank>, and copies named after it (a call-stack
#: translation saved as mpi_profile.<job>.<rank>.translated.txt)
_NAME = re.compile(r"mpi_profile\.(\d+)(?:\.(\d{10}))?\.(\d+)(?:\.[A-Za-z_][^/]*)?$")
#: a profile with call stacks; translate.py's lines in one
_STACKS = b"Profile by call stack"
_TRANSLATED = re.compile(rb"^[ \t>]*(?:function|source) =(?: |$)", re.M)
_INT_DTYPES = ("Int64", "float64")


def parse(source: Source, *, engine: str = "auto") -> ParseResult:
    """Parse one file. Its frames have the schema's columns; ``load`` settles the dtypes.

    ``engine``: "fast" (and "auto") reads a plain rank profile with :mod:`.fast` (regexes
    over the whole text) and declines to the line scanner (:mod:`.general`) for anything
    else; "general" reads every file with the line scanner."""
    rows = Rows(use_fast=engine != "general")
    problems: list[Problem] = []
    variant = rows.add_source(source, problems)
    return ParseResult(rows.frames(conform=False), problems, variant)


def parse_many(sources: Sequence[Source], problems: list[Problem],
               progress: Callable[[Source, int, int], None] | None = None, *,
               engine: str = "auto") -> tuple[dict[str, pd.DataFrame], list[Parsed]]:
    """Parse many files into one set of columns and build each table once.

    Plain rank files (:class:`fast.Plain`) are gathered and converted together; the others
    are read one by one. Returns the conformed tables and, per source, what ``load``
    reports for it. A file that makes the parser fail is rolled back and reported; the
    others are kept. ``engine`` as for :func:`parse`; "general" converts no batch of plain
    files (each file takes the line scanner).
    """
    many = _Many(problems, use_fast=engine != "general")
    for i, src in enumerate(sources):
        if progress:
            progress(src, i, len(sources))
        many.add(src)
    many.flush()
    many.stacked_files()
    if not all(map(lambda p, src: p.source is src, many.parsed, sources)):
        order = {id(src): i for i, src in enumerate(sources)}
        many.parsed.sort(key=lambda p: order[id(p.source)])
    # the files' texts are freed by now, in holes between the parts, which the tables then
    # fill: not handed back to the system here (the pages came back at once, 2,700 page
    # faults and ~10 ms of system time a load of 4,096 rank files, the peak the same)
    return many.rows.frames(conform=True), many.parsed


#: plain files converted together at most (bounds the memory the batch holds)
BATCH = 256


class _Many:
    """:func:`parse_many`'s state: the columns, what is said per source, and the plain files
    taken but not yet added (with their content, for the files that need the scanner)."""

    def __init__(self, problems: list[Problem], use_fast: bool = True) -> None:
        self.use_fast = use_fast
        self.rows = Rows(use_fast)
        self.parsed: list[Parsed] = []
        self.problems = problems
        self.plain = fast.Plain()
        self.pending: list[tuple[Source, str, int | None, bytes]] = []
        #: files with call stacks, read last (:meth:`stacked_files`)
        self.stacked: list[tuple[Source, bytes, list[Problem]]] = []

    def add(self, src: Source) -> None:
        mine: list[Problem] = []
        try:
            data = src.read_all(mine)
        except Exception as exc:  # an unreadable file must not stop the batch
            self.flush()
            self._report(src, None, 0, mine, exc)
            return
        job, rank = _job_of(src)
        if len(self.plain) >= BATCH:
            self.flush()
        # a plain rank file first (most files): its layout holds no call stacks
        if self.use_fast and not mine and self.plain.take(data, rank):
            self.pending.append((src, job, rank, data))
            return
        # "Profile" first: a needle with spaces is a slow search in a text of spaces and
        # digits
        if b"Profile" in data and _STACKS in data:
            self.stacked.append((src, data, mine))
            return
        self.flush()
        self.one(src, data, mine)

    def one(self, src: Source, data: bytes, mine: list[Problem]) -> None:
        """Read one file with the line scanner (or :func:`fast.read`) into the lists."""
        mark = self.rows.mark()
        try:
            variant = self.rows.add_text(src, _decode(src, data, mine), mine)
        except Exception as exc:  # a parser bug must not stop the batch
            self.rows.rollback(mark)
            self._report(src, None, 0, mine, exc)
            return
        self._report(src, variant, self.rows.count() - sum(mark.values()), mine)

    def stacked_files(self) -> None:
        """Read the files with call stacks. A copy of a profile translated by mpitrace's
        util/translate.py (the same text, with "function = ..." and "source = ..." after
        each frame) is not read as a second profile when the profile is also read: its
        call-stack rows, which name the functions, replace those of the profile. Alone, it
        is read as the profile it copies."""
        originals: dict[bytes, Source] = {}
        copies = []
        for src, data, mine in self.stacked:
            if _TRANSLATED.search(data):
                copies.append((src, data, mine))
                continue
            originals.setdefault(_untranslated(data), src)
            self.one(src, data, mine)
        for src, data, mine in copies:
            original = originals.get(_untranslated(data))
            if original is None:
                self.one(src, data, mine)
            else:
                self._translation(src, data, mine, original)
        self.stacked = []

    def _translation(self, src: Source, data: bytes, mine: list[Problem],
                     original: Source) -> None:
        """The call stacks of ``src``, a translated copy of ``original``, in place of the
        original's; the rest of ``src`` repeats ``original`` and is not read again."""
        try:   # its problems are the original's, already reported
            blocks = scan.Scanner(_decode(src, data, mine), src.name, []).run()
            jobs = _job_names(original, blocks, [])
        except Exception as exc:  # a parser bug must not stop the batch
            self._report(src, None, 0, mine, exc)
            return
        removed = self.rows.drop_stacks(original.name)
        before = len(stacks := self.rows.cols["mpi_call_stacks"]["source"])
        for block, job in zip(blocks, jobs, strict=True):
            self.rows.add_stacks({"source": src.name, "job": job, "rank": block.rank,
                                  "nranks": block.nranks}, block)
        for parsed in self.parsed:
            if parsed.source is original:
                parsed.rows -= removed
        self._report(src, f"call-stack translation of {original.path.name} (translate.py)",
                     len(stacks) - before, mine)

    def _report(self, src: Source, variant: str | None, rows: int, mine: list[Problem],
                exc: Exception | None = None) -> None:
        failed = f"mpitrace parser failed: {type(exc).__name__}: {exc}" if exc else None
        if failed:
            mine.append(Problem(src.name, failed, severity="error"))
        self.parsed.append(Parsed(src, variant, rows, mine, failed))
        self.problems.extend(mine)

    def flush(self) -> None:
        """Add the pending plain files; those the checks single out take :meth:`one`, in
        their place among the others."""
        if not self.pending:
            return
        pending, plain = self.pending, self.plain
        self.pending, self.plain = [], fast.Plain()
        try:
            cols = plain.columns()
            bins = _bins(cols.message[:, 1])
            suspect = cols.suspect | _bins_out_of_order(cols, bins[0])
            tables = None if suspect.any() else _plain_tables(
                cols, bins, [src.name for src, _, _, _ in pending],
                [job for _, job, _, _ in pending])
        except Exception:  # a bug here: every file takes one()
            tables, suspect = None, np.ones(len(pending), dtype=bool)
        if tables is not None:
            for table, columns in tables.items():
                self.rows.add_columns(table, columns)
            rows = (cols.routine_rows + cols.message_rows + 1).tolist()
            # what _report says of a file without problems, without a call per file
            self.parsed.extend(map(Parsed, [src for src, _, _, _ in pending],
                                   map(_plain_variant, cols.times, cols.all_comms, cols.unit),
                                   rows))
            return
        for (src, job, rank, data), bad in zip(pending, suspect.tolist(), strict=True):
            if bad:
                self.flush()
                self.one(src, data, [])
            elif self.plain.take(data, rank):
                self.pending.append((src, job, rank, data))
        self.flush()


#: what :func:`parse_many` tells about each source (the loader takes it as it is)
Parsed = Outcome


_NO_BIN = (scan.NAN, scan.NAN, scan.NAN)


def bin_of(avg_bytes: float) -> tuple[float, float, float]:
    """mpitrace's size bin of a row with this average size: (bin, lo, hi), bounds inclusive.

    mpitrace bins each message: 0 bytes is bin 0; 1-4 bytes bin 1; then each doubling,
    bin k holding (2^k, 2^(k+1)] bytes. Sizes are whole bytes, so bin k >= 2 is
    [2^k + 1, 2^(k+1)], and a bin's average lies within its bounds. An average that is
    missing (NaN), inf or above 2^62 bytes (a bin whose bounds do not fit Int64) has no
    bin: (NaN, NaN, NaN); the scanner reported it.
    """
    if not avg_bytes <= scan.MAX_BIN_BYTES:
        return _NO_BIN
    if avg_bytes <= 0:
        return 0, 0, 0
    if avg_bytes <= 4:
        return 1, 1, 4
    mant, exp = math.frexp(avg_bytes)       # avg = mant * 2**exp, 0.5 <= mant < 1
    k = exp - 2 if mant == 0.5 else exp - 1
    return k, (1 << k) + 1, 1 << (k + 1)


class _BinCache(dict[float, tuple[float, float, float]]):
    """:func:`bin_of` by average size: rank files of one job repeat the same sizes."""

    def __missing__(self, avg: float) -> tuple[float, float, float]:
        if avg != avg:   # NaN: never equal to a key, so not kept
            return _NO_BIN
        if len(self) >= 1 << 16:
            self.clear()
        self[avg] = got = bin_of(avg)
        return got


_BINS = _BinCache()


class Codes(NamedTuple):
    """A category column as codes into its categories (-1: missing), each category used."""

    codes: np.ndarray
    categories: list[str]


class Repeated(NamedTuple):
    """A column of per-file ``values``, each repeated over its file's ``rows``: kept so in
    the parts and expanded when the table is built (:func:`_column`), one column at a
    time, instead of a row-long array per batch and column. ``values``: numbers (an
    array), or the file names of the ``source`` column (a list of str)."""

    values: Any
    rows: np.ndarray


class Rows:
    """Column lists for every mpitrace table, filled block by block, and parts given as
    whole columns (:meth:`add_columns`), kept in order."""

    def __init__(self, use_fast: bool = True) -> None:
        #: try :func:`fast.read` before the line scanner
        self.use_fast = use_fast
        self.cols: dict[str, dict[str, list[Any]]] = {
            t: {c.name: [] for c in schema.TABLES[t].columns} for t in TABLES}
        self.parts: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLES}

    def add_columns(self, table: str, columns: dict[str, Any]) -> None:
        """Rows of ``table`` as whole columns: float64 arrays for numbers, :class:`Codes`
        for categories, string arrays or lists for the rest."""
        cols = self.cols[table]
        if cols["source"]:
            self.parts[table].append(cols)
            self.cols[table] = {k: [] for k in cols}
        self.parts[table].append(columns)

    def count(self) -> int:
        return sum(len(c["source"]) for c in self.cols.values())

    def mark(self) -> dict[str, int]:
        return {t: len(c["source"]) for t, c in self.cols.items()}

    def rollback(self, mark: dict[str, int]) -> None:
        """Cut every list back to ``mark`` (after a failure in the middle of a file)."""
        for t, cols in self.cols.items():
            for values in cols.values():
                del values[mark[t]:]

    def add_source(self, source: Source, problems: list[Problem]) -> str | None:
        """Read one file into the lists; return its variant."""
        return self.add_text(source, _decode(source, source.read_all(problems), problems),
                             problems)

    def add_text(self, source: Source, text: str, problems: list[Problem]) -> str | None:
        """Read the content of ``source`` into the lists; return its variant."""
        block = fast.read(text) if self.use_fast else None
        blocks = [block] if block else scan.Scanner(text, source.name, problems).run()
        jobs = _job_names(source, blocks, problems)
        for block, job in zip(blocks, jobs, strict=True):
            scan.check_block(block, source.name, problems)
            self.add_block(source.name, job, block, problems)
        if not blocks and any(m.decode() in text for m in MARKERS):
            problems.append(Problem(source.name, "mpitrace header found but no profile could "
                                    "be read from it", None, "error"))
        return variant(blocks)

    def add_block(self, name: str, job: str, b: scan.Block, problems: list[Problem]) -> None:
        key = {"source": name, "job": job, "rank": b.rank, "nranks": b.nranks}
        if b.routines:
            r, calls, avg, t = zip(*b.routines, strict=True)
            self._extend("mpi_routines", key, routine=r, calls=calls, avg_bytes=avg,
                         bytes=_products(calls, avg), time_s=t, region=[b.region] * len(r))
        if b.messages:
            self._messages(key, b, name, problems)
        self._ranks(key, b)
        self._extras(key, b)

    def _extend(self, table: str, key: dict[str, Any], **values: Any) -> None:
        cols = self.cols[table]
        n = len(next(iter(values.values())))
        for k, v in key.items():
            if k in cols and k not in values:
                cols[k].extend([v] * n)
        for k, v in values.items():
            cols[k].extend(v)

    def _messages(self, key: dict[str, Any], b: scan.Block, name: str,
                  problems: list[Problem]) -> None:
        r, calls, avg, t = zip(*b.messages, strict=True)
        ks, lo, hi = zip(*map(_BINS.__getitem__, avg), strict=True)
        self._extend("mpi_messages", key, routine=r, bin=ks, bin_lo_bytes=lo, bin_hi_bytes=hi,
                     calls=calls, avg_bytes=avg, bytes=_products(calls, avg), time_s=t)
        if not any(map(and_, map(le, ks[1:], ks), map(eq, r[1:], r))):
            return
        for i in range(1, len(r)):
            if ks[i] <= ks[i - 1] and r[i] == r[i - 1]:
                problems.append(Problem(
                    name, f"{r[i]}: size bins out of order (avg {avg[i - 1]} then {avg[i]} "
                    "bytes): mpitrace's power-of-two bins do not explain them",
                    b.msg_lines.get(r[i]), "warning"))
                break

    def _ranks(self, key: dict[str, Any], b: scan.Block) -> None:
        own = b.own
        if own:
            self._extend(
                "mpi_ranks", key, origin=["own"], host=[None], cpu=[None],
                comm_time_s=[own.get("total communication time")],
                elapsed_s=[own.get("total elapsed time")], user_s=[own.get("user cpu time")],
                system_s=[own.get("system time")], max_rss_mib=[own.get("max_rss_mib")],
                switches=[None], sync_time_s=[own.get("synchronization time")],
                comm_role=["+".join(b.roles) or None])
        if b.table:
            roles = _roles_from_summary(b.summary)
            rank, host, cpu, comm, el, user, sys_, rss, sw = zip(*b.table, strict=True)
            self._extend("mpi_ranks", key, rank=rank, origin=["rank0_table"] * len(rank),
                         host=host, cpu=cpu, comm_time_s=comm, elapsed_s=el, user_s=user,
                         system_s=sys_, max_rss_mib=rss, switches=sw,
                         sync_time_s=[None] * len(rank),
                         comm_role=[roles.get(x) for x in rank])

    def _extras(self, key: dict[str, Any], b: scan.Block) -> None:
        if b.summary:
            self._extend("mpi_jobs", key, **{k: [b.summary.get(k)] for k in _JOB_COLS})
        if b.comm_sizes:
            lo, hi, avg_size, r, calls, avg, t = zip(*b.comm_sizes, strict=True)
            self._extend("mpi_comm_sizes", key, comm_size_lo=lo, comm_size_hi=hi,
                         comm_size_avg=avg_size, routine=r, calls=calls, avg_bytes=avg,
                         time_s=t)
        self.add_stacks(key, b)
        if b.histogram:
            x, n = zip(*b.histogram, strict=True)
            self._extend("mpi_histogram", key, comm_time_s=x, ranks=n)

    def add_stacks(self, key: dict[str, Any], b: scan.Block) -> None:
        if b.stacks:
            stack, stime, r, calls, t, fn, site, path = zip(*b.stacks, strict=True)
            self._extend("mpi_call_stacks", key, stack=stack, stack_time_s=stime, routine=r,
                         calls=calls, time_s=t, function=fn, call_site=site, call_path=path)

    def drop_stacks(self, name: str) -> int:
        """Remove the call-stack rows of source ``name``; returns how many there were.
        (Call stacks are only ever added row by row, never as whole-column parts.)"""
        cols = self.cols["mpi_call_stacks"]
        keep = [i for i, s in enumerate(cols["source"]) if s != name]
        removed = len(cols["source"]) - len(keep)
        if removed:
            for k, values in cols.items():
                cols[k] = [values[i] for i in keep]
        return removed

    def frames(self, conform: bool) -> dict[str, pd.DataFrame]:
        """One frame per non-empty table (conformed, or raw but cheap: see parse; raw only
        without parts). Conformed frames take the rows: the lists and parts are emptied."""
        out = {}
        for name, cols in self.cols.items():
            parts = self.parts[name] + ([cols] if cols["source"] else [])
            if not parts:
                continue
            table = schema.TABLES[name]
            if conform:
                # the columns are the schema's, in order: a frame on them as they are
                # (conform's constructor would copy each from the mapping)
                out[name] = pd.DataFrame(_columns(parts, table), copy=False)
                self.parts[name], self.cols[name] = [], {k: [] for k in cols}
            else:
                assert parts == [cols], "raw frames are built from the lists alone"
                out[name] = _raw_frame(cols, table)
        return out


_JOB_COLS = [c.name for c in MPI_JOBS.columns[4:]]


def _products(calls: Sequence[float], avg: Sequence[float]) -> list[float]:
    """calls x avg per row; one that overflows (reported by the scanner) becomes NaN. One
    ``sum`` tells whether any product is not finite."""
    out = list(map(mul, calls, avg))
    total = sum(out)
    if total - total != 0.0:
        out = [b if b - b == 0.0 else scan.NAN for b in out]
    return out


def _roles_from_summary(summary: dict[str, Any]) -> dict[int, str]:
    roles: dict[int, list[str]] = {}
    for role, key in (("minimum", "min"), ("median", "median"), ("maximum", "max")):
        rank = summary.get(f"{key}_comm_rank")
        if rank is not None:
            roles.setdefault(rank, []).append(role)
    return {k: "+".join(v) for k, v in roles.items()}


def _raw_frame(cols: dict[str, list[Any]], table: schema.Table) -> pd.DataFrame:
    """A frame built without dtype inference: numbers as float64, labels as object.

    ``DataFrame._from_arrays`` skips the per-column checks of the public constructor,
    which cost ~0.5 ms per frame, i.e. seconds over thousands of rank files.
    """
    arrays = [np.array(cols[c.name], dtype=np.float64 if c.dtype in _INT_DTYPES else object)
              for c in table.columns]
    n = len(arrays[0])
    try:
        return pd.DataFrame._from_arrays(arrays, columns=pd.Index(table.names),
                                         index=pd.RangeIndex(n), verify_integrity=False)
    except (AttributeError, TypeError):  # pragma: no cover - a pandas without the fast path
        return pd.DataFrame(dict(zip(table.names, arrays, strict=True)), copy=False)


def _columns(parts: list[dict[str, Any]], table: schema.Table) -> dict[str, pd.Series]:
    """Every column of ``table`` over all parts, in its schema dtype, made one at a time; a
    column's pieces leave the parts as soon as it is made, so that the parts and the table
    never both hold the rows whole (on thousands of rank files, the load's peak)."""
    out = {}
    made = 0
    for c in table.columns:
        got = _int64([part[c.name] for part in parts]) if c.dtype == "Int64" else None
        values = _column(parts, c) if got is None else got
        for part in parts:
            part[c.name] = None
        out[c.name] = schema._as_dtype(values, c.dtype)
        del values, got
        made += out[c.name].memory_usage(index=False)
        if made >= RELEASE_BYTES and len(parts) > 1:
            # the pieces freed are holes of the C heap, which the next columns (new
            # arrays of the table's length) do not fill: their pages go back to the system
            memory.release(memory.MIN_ROWS)
            made = 0
    return out


#: columns of this many bytes made, their pieces are handed back (:func:`memory.release`,
#: about a millisecond): the peak of building the largest table of 4,096 rank files drops
#: by a quarter
RELEASE_BYTES = 3 << 20


#: the float64 range that int64 holds
_INT64_LO, _INT64_HI = -2.0 ** 63, 2.0 ** 63


def _int64(values: list[Any]) -> pd.Series | None:
    """An Int64 column made from its parts' whole numbers (NaN, None: missing) straight
    into one int64 array and its mask, without a float64 copy of the whole column; None
    when a part holds a fraction or a number beyond int64 (then the schema's rule)."""
    n = sum(int(v.rows.sum()) if isinstance(v, Repeated) else len(v) for v in values)
    ints = np.empty(n, dtype=np.int64)
    missing = np.empty(n, dtype=bool)
    at = 0
    for v in values:
        got = v.values if isinstance(v, Repeated) else v
        if isinstance(got, np.ndarray) and got.dtype == np.int64:   # made whole: as it is
            part = np.repeat(got, v.rows) if isinstance(v, Repeated) else got
            ints[at:at + len(part)] = part
            missing[at:at + len(part)] = False
            at += len(part)
            continue
        f = np.asarray(got, dtype=np.float64)
        nan = np.isnan(f)
        with np.errstate(invalid="ignore"):
            whole = nan | ((f >= _INT64_LO) & (f < _INT64_HI) & (np.floor(f) == f))
        if not whole.all():
            return None
        part = np.where(nan, 0.0, f).astype(np.int64)
        if isinstance(v, Repeated):
            part, nan = np.repeat(part, v.rows), np.repeat(nan, v.rows)
        ints[at:at + len(part)] = part
        missing[at:at + len(part)] = nan
        at += len(part)
    return pd.Series(pd.arrays.IntegerArray(ints, missing), copy=False)


def _column(parts: list[dict[str, Any]], column: schema.Column) -> Any:
    """One column over all parts: a Categorical built from codes (categories in order of
    first appearance, as ``pd.factorize``), float64 for numbers, a pandas array for strings
    (what ``schema.conform`` would make of the list), else a list."""
    values = [part[column.name] for part in parts]
    if column.dtype == "category":
        return _categories(values)
    if column.dtype in _INT_DTYPES:
        arrays = [np.repeat(np.asarray(v.values, dtype=np.float64), v.rows)
                  if isinstance(v, Repeated) else np.asarray(v, dtype=np.float64)
                  for v in values]
        return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)
    if column.dtype == "string":
        made = _joined_strings(values)
        if made is not None:
            return made
        strings = [v if isinstance(v, ExtensionArray) else pd.array(
            list(np.repeat(np.array(v.values, dtype=object), v.rows))
            if isinstance(v, Repeated) else v, dtype="string") for v in values]
        return strings[0] if len(strings) == 1 else strings[0]._concat_same_type(strings)
    return values[0] if len(values) == 1 else list(chain.from_iterable(values))


def _categories(parts: list[Any]) -> pd.Categorical:
    index: dict[str, int] = {}
    codes = []
    for part in parts:
        if isinstance(part, Codes):
            part_codes, categories = part
        else:
            part_codes, categories = pd.factorize(np.array(part, dtype=object))
        remap = [index.setdefault(c, len(index)) for c in categories]
        codes.append(np.array([*remap, -1], dtype=np.int32)[part_codes])
    return pd.Categorical.from_codes(np.concatenate(codes),
                                     categories=np.array(list(index), dtype=object).astype(str))


def _coded(values: Sequence[str | None], rows: np.ndarray) -> Codes:
    """Per-file ``values`` repeated over each file's ``rows`` (None: missing)."""
    used = rows > 0
    codes, categories = pd.factorize(np.array(values, dtype=object)[used])
    return Codes(np.repeat(codes.astype(np.int32), rows[used]), list(categories))


def _joined_strings(parts: list[Any]) -> ExtensionArray | None:
    """A string column from its parts (:class:`Repeated` file names, lists of str), made
    once at its final size: the UTF-8 bytes of every row joined into one buffer, the
    offsets from the lengths, wrapped as Arrow's large_string without a copy (what
    ``pd.array(rows, dtype="string")`` holds). No piece per batch, no concatenation or
    take (which held the column twice, in Arrow's pool, at the load's peak). None when a
    part holds a missing value or another kind of array (then :func:`_column`'s rule)."""
    names: list[str] = []
    counts: list[np.ndarray] = []
    for part in parts:
        if isinstance(part, Repeated):
            names.extend(part.values)
            counts.append(np.asarray(part.rows, dtype=np.int64))
        elif isinstance(part, list):
            names.extend(part)
            counts.append(np.ones(len(part), dtype=np.int64))
        else:
            return None
    if not set(map(type, names)) <= {str}:
        return None
    try:
        raw = list(map(str.encode, names))   # UTF-8
    except UnicodeEncodeError:   # a lone surrogate: Arrow's own conversion says what
        return None
    rows = np.concatenate(counts) if counts else np.zeros(0, dtype=np.int64)
    n = int(rows.sum())
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.repeat(np.fromiter(map(len, raw), np.int64, len(raw)), rows), out=offsets[1:])
    data = b"".join(map(mul, raw, rows.tolist()))
    array = pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))
    return pd.array(array, dtype=schema.STRING)


def _bins(avg: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`bin_of` of every average size at once: (bin, lo, hi) as float64 (exact below
    2**53; files with larger sizes take the per-file path)."""
    mant, exp = np.frexp(avg)
    k = exp - np.where(mant == 0.5, 2, 1)
    small = avg <= 4
    with np.errstate(over="ignore"):
        lo = np.where(small, 1.0, np.ldexp(1.0, k) + 1)
        hi = np.where(small, 4.0, np.ldexp(1.0, k + 1))
    k = np.where(small, 1.0, k)
    zero = avg <= 0
    none = ~(avg <= scan.MAX_BIN_BYTES)   # no bin (bin_of); never in a batch (>= 2**53)
    for a in (k, lo, hi):
        a[zero] = 0.0
    if none.any():
        for a in (k, lo, hi):
            a[none] = np.nan
    return k, lo, hi


def _bins_out_of_order(cols: fast.PlainColumns, bins: np.ndarray) -> np.ndarray:
    """Files where a routine's bins do not increase (:meth:`Rows._messages` warns)."""
    heading = np.repeat(np.arange(len(cols.bin_rows)), cols.bin_rows)
    down = (bins[1:] <= bins[:-1]) & (heading[1:] == heading[:-1])
    out = np.zeros(len(cols.rank), dtype=bool)
    out[cols.heading_file[heading[1:][down]]] = True
    return out


def _plain_tables(cols: fast.PlainColumns, bins: tuple[np.ndarray, np.ndarray, np.ndarray],
                  names: list[str], jobs: list[str]) -> dict[str, dict[str, Any]]:
    """The rows :meth:`Rows.add_block` would add for these plain files, as whole columns."""
    nfiles = len(names)
    nan = np.full(nfiles, np.nan)

    rank, nranks = cols.rank.astype(np.int64), cols.nranks.astype(np.int64)

    def key(rows: np.ndarray) -> dict[str, Any]:
        return {"source": Repeated(names, rows), "job": _coded(jobs, rows),
                "rank": Repeated(rank, rows), "nranks": Repeated(nranks, rows)}

    r, m, one = cols.routine, cols.message, np.ones(nfiles, dtype=np.intp)
    codes, routines = pd.factorize(np.array(cols.routine_name, dtype=object))
    # counts, bins and ranks as int64 at once: whole numbers below 2**53 in a batch (files
    # with larger ones take the per-file path), which _int64 then takes as they are
    return {
        "mpi_routines": {
            **key(cols.routine_rows), "routine": Codes(codes.astype(np.int32), list(routines)),
            "calls": r[:, 0].astype(np.int64), "avg_bytes": r[:, 1],
            "bytes": r[:, 0] * r[:, 1], "time_s": r[:, 2],
            "region": _coded([region for _, region in cols.times], cols.routine_rows)},
        "mpi_messages": {
            **key(cols.message_rows), "routine": _coded(cols.heading_name, cols.bin_rows),
            "bin": bins[0].astype(np.int64), "bin_lo_bytes": bins[1].astype(np.int64),
            "bin_hi_bytes": bins[2].astype(np.int64),
            "calls": m[:, 0].astype(np.int64), "avg_bytes": m[:, 1], "bytes": m[:, 0] * m[:, 1],
            "time_s": m[:, 2]},
        "mpi_ranks": {
            **key(one), "origin": _coded(["own"] * nfiles, one), "host": [None] * nfiles,
            "cpu": nan, "comm_time_s": cols.totals[:, 0], "elapsed_s": cols.totals[:, 1],
            "user_s": cols.totals[:, 2], "system_s": cols.totals[:, 3],
            "max_rss_mib": cols.totals[:, 4], "switches": nan, "sync_time_s": nan,
            "comm_role": _coded(cols.roles, one)},
    }


@functools.cache
def _plain_variant(times: tuple[str, str], all_comms: bool, unit: str) -> str | None:
    """:func:`variant` of a plain file."""
    generation, region = times
    return variant([scan.Block(1, all_comms=all_comms, generation=generation, region=region,
                               mem_unit=unit)])


def _decode(source: Source, data: bytes, problems: list[Problem]) -> str:
    """The file's bytes as text (read whole: cheaper than mmap for small profiles, and a
    small file read for format detection is not read again)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        problems.append(Problem(source.name, "bytes that are not UTF-8 (first at this line) "
                                "were replaced by U+FFFD", line))
        return data.decode("utf-8", "replace")


def _untranslated(data: bytes) -> bytes:
    """The text of a profile without translate.py's lines and trailing blanks (translate.py
    copies every other line, right-stripped): a translated copy gives its profile's."""
    lines = (line.rstrip() for line in data.split(b"\n"))
    return b"\n".join(line for line in lines
                      if not _TRANSLATED.match(line)).rstrip()


def _job_of(source: Source) -> tuple[str, int | None]:
    """The job of a file with one profile, and the rank its name gives (None: no rank)."""
    m = _NAME.search(source.stem_name)
    if m is None:
        return source.stem_name, None
    return (f"{m[1]}.{m[2]}" if m[2] else m[1]), int(m[3])


def _job_names(source: Source, blocks: list[scan.Block], problems: list[Problem]) -> list[str]:
    """Job per block: mpi_profile.<job>[.<timestamp>].<rank> names one job; else the file."""
    m = _NAME.search(source.stem_name)
    if m and len(blocks) == 1:
        rank = blocks[0].rank
        if rank is not None and rank != int(m[3]):
            problems.append(Problem(source.name, f"the file name says rank {m[3]} but the "
                                    f"profile is for rank {rank}", blocks[0].start_line))
        return [f"{m[1]}.{m[2]}" if m[2] else m[1]]
    stem = source.stem_name
    return [stem] if len(blocks) == 1 else [f"{stem}#{k}" for k in range(1, len(blocks) + 1)]


def variant(blocks: list[scan.Block]) -> str | None:
    """E.g. 'times-from/MiB', 'times-and-statistics/MBytes', '2 pasted: ...'."""
    if not blocks:
        return None
    names: list[str] = []
    for b in blocks:
        gen = {"statistics": "times-and-statistics", "times": "times-from"}.get(
            b.generation or "", "no-header")
        flags = [f for f, on in (("pcontrol", b.region == "pcontrol"),
                                 ("all-communicators", b.all_comms),
                                 ("comm-sizes", bool(b.comm_sizes)),
                                 ("call-stacks", bool(b.stacks)),
                                 ("translated", b.translated),
                                 ("sync-time", "synchronization time" in b.own)) if on]
        name = "+".join([f"{gen}/{b.mem_unit}" if b.mem_unit else gen, *flags])
        if name not in names:
            names.append(name)
    text = ", ".join(names)
    pasted = len(blocks) > 1 or blocks[0].start_line > 1 or blocks[0].ended_by != "eof"
    return f"{len(blocks)} pasted: {text}" if pasted else text

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
(above 32 ranks) and the oldest ``MPI tasks sorted by communication time`` table.

The scanning is in :mod:`._mpitrace_scan`; this module names jobs, recovers the size
bins, and builds the tables from column lists (:class:`Rows`). ``api.load`` calls
:func:`parse` once per file; :func:`read_many` reads many files into one set of lists
and builds each table once, which is what :func:`dptrace.read_mpitrace` uses.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import and_, eq, le, mul
from typing import Any

import numpy as np
import pandas as pd

from .. import schema
from ..errors import Problem
from ..registry import Parser, ParseResult, register
from ..sources import Source
from . import _mpitrace_fast as fast
from . import _mpitrace_scan as scan

MARKERS = (b"Data for MPI rank", b"Times and statistics from MPI_Init", b"Times from MPI_Init",
           b"Times from MPI_Pcontrol")
_NAME = re.compile(r"mpi_profile\.(\d+)(?:\.(\d{10}))?\.(\d+)$")
TABLES = ("mpi_routines", "mpi_messages", "mpi_ranks", "mpi_jobs", "mpi_comm_sizes",
          "mpi_call_stacks", "mpi_histogram")
_INT_DTYPES = ("Int64", "float64")


def sniff(source: Source, head: bytes) -> float:
    """0.97 when the first 8 KB hold an mpitrace header; 0 otherwise."""
    if any(m in head for m in MARKERS):
        return 0.97
    i = head.find(b"MPI Routine")
    return 0.95 if i >= 0 and b"#calls" in head[i:i + 200] else 0.0


def parse(source: Source) -> ParseResult:
    """Parse one file. Its frames have the schema's columns; ``load`` settles the dtypes."""
    rows = Rows()
    problems: list[Problem] = []
    variant = rows.add_source(source, problems)
    return ParseResult(rows.frames(conform=False), problems, variant)


def read_many(sources: Sequence[Source], problems: list[Problem],
              progress: Callable[[Source, int, int], None] | None = None,
              ) -> tuple[dict[str, pd.DataFrame], list[Parsed]]:
    """Parse many files into one set of column lists and build each table once.

    Returns the conformed tables and, per source, what ``load`` reports for it. A file that
    makes the parser fail is rolled back and reported; the others are kept.
    """
    rows = Rows()
    parsed = []
    for i, src in enumerate(sources):
        if progress:
            progress(src, i, len(sources))
        mine: list[Problem] = []
        mark = rows.mark()
        try:
            variant, failed = rows.add_source(src, mine), None
        except Exception as exc:  # a parser bug or unreadable file must not stop the batch
            rows.rollback(mark)
            variant, failed = None, f"mpitrace parser failed: {type(exc).__name__}: {exc}"
            mine.append(Problem(src.name, failed, severity="error"))
        parsed.append(Parsed(src, variant, rows.count() - sum(mark.values()), mine, failed))
        problems.extend(mine)
    return rows.frames(conform=True), parsed


@dataclass
class Parsed:
    """What :func:`read_many` tells about one source."""

    source: Source
    variant: str | None
    rows: int
    problems: list[Problem]
    failed: str | None = None


def bin_of(avg_bytes: float) -> tuple[int, int, int]:
    """mpitrace's size bin of a row with this average size: (bin, lo, hi), bounds inclusive.

    mpitrace bins each message: 0 bytes is bin 0; 1-4 bytes bin 1; then each doubling,
    bin k holding (2^k, 2^(k+1)] bytes. Sizes are whole bytes, so bin k >= 2 is
    [2^k + 1, 2^(k+1)], and a bin's average lies within its bounds.
    """
    if avg_bytes <= 0:
        return 0, 0, 0
    if avg_bytes <= 4:
        return 1, 1, 4
    mant, exp = math.frexp(avg_bytes)       # avg = mant * 2**exp, 0.5 <= mant < 1
    k = exp - 2 if mant == 0.5 else exp - 1
    return k, (1 << k) + 1, 1 << (k + 1)


class _BinCache(dict[float, tuple[int, int, int]]):
    """:func:`bin_of` by average size: rank files of one job repeat the same sizes."""

    def __missing__(self, avg: float) -> tuple[int, int, int]:
        if len(self) >= 1 << 16:
            self.clear()
        self[avg] = got = bin_of(avg)
        return got


_BINS = _BinCache()


class Rows:
    """Column lists for every mpitrace table, filled block by block."""

    def __init__(self) -> None:
        self.cols: dict[str, dict[str, list[Any]]] = {
            t: {c.name: [] for c in schema.TABLES[t].columns} for t in TABLES}

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
        text = _read_text(source, problems)
        block = fast.read(text)
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
                         bytes=[c * a for c, a in zip(calls, avg, strict=True)], time_s=t,
                         region=[b.region] * len(r))
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
                     calls=calls, avg_bytes=avg, bytes=list(map(mul, calls, avg)), time_s=t)
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
        if b.stacks:
            stack, stime, r, calls, t = zip(*b.stacks, strict=True)
            self._extend("mpi_call_stacks", key, stack=stack, stack_time_s=stime, routine=r,
                         calls=calls, time_s=t)
        if b.histogram:
            x, n = zip(*b.histogram, strict=True)
            self._extend("mpi_histogram", key, comm_time_s=x, ranks=n)

    def frames(self, conform: bool) -> dict[str, pd.DataFrame]:
        """One frame per non-empty table (conformed, or raw but cheap: see parse)."""
        out = {}
        for name, cols in self.cols.items():
            if cols["source"]:
                table = schema.TABLES[name]
                out[name] = schema.conform(_categorical(cols, table), table) if conform \
                    else _raw_frame(cols, table)
        return out


_JOB_COLS = [c.name for c in schema.MPI_JOBS.columns[4:]]


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


def _categorical(cols: dict[str, list[Any]], table: schema.Table) -> dict[str, Any]:
    """Category columns built from codes (``pd.factorize``), numbers as float64 arrays."""
    out: dict[str, Any] = {}
    for c in table.columns:
        values = cols[c.name]
        if c.dtype == "category":
            codes, uniques = pd.factorize(np.array(values, dtype=object))
            out[c.name] = pd.Categorical.from_codes(codes, categories=uniques.astype(str))
        elif c.dtype in _INT_DTYPES:
            out[c.name] = np.array(values, dtype=np.float64)
        else:
            out[c.name] = values
    return out


def _read_text(source: Source, problems: list[Problem]) -> str:
    """The file as text: read whole (cheaper than mmap for small profiles, and a small file
    read for format detection is not read again)."""
    data = source.read_all(problems)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        problems.append(Problem(source.name, "bytes that are not UTF-8 (first at this line) "
                                "were replaced by U+FFFD", line))
        return data.decode("utf-8", "replace")


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
                                 ("sync-time", "synchronization time" in b.own)) if on]
        name = "+".join([f"{gen}/{b.mem_unit}" if b.mem_unit else gen, *flags])
        if name not in names:
            names.append(name)
    text = ", ".join(names)
    pasted = len(blocks) > 1 or blocks[0].start_line > 1 or blocks[0].ended_by != "eof"
    return f"{len(blocks)} pasted: {text}" if pasted else text


register(Parser(
    name="mpitrace",
    description="IBM mpitrace profiles mpi_profile.<job>.<rank> (every generation: Theta/"
                "ThetaGPU 'Times and statistics', Polaris 'Times from'), also pasted in docs",
    tables=TABLES,
    sniff=sniff,
    parse=parse,
    parse_many=read_many,
    embeddable=True,   # documents paste profiles next to training logs
))

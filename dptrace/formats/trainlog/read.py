"""Training logs: ``slurm-*.out``, per-rank stdout/stderr, and copies of them in docs.

Fills ``throughput`` and ``train_metrics`` (see :mod:`dptrace.schema`). The recognisers,
with the real lines they were written against, are in :mod:`.rules`.

How it stays fast on multi-GB logs: the file is memory-mapped and scanned once for a
small set of literals (:data:`KEYWORDS`) with RE2, a linear-time automaton that matches
all of them in one pass. Only the segment around a hit (its physical line, or its
``\\r``-separated tqdm update) is decoded and given to the recognisers. Line numbers are
counted between hits with ``bytes.count``. Tables are built once, columnar, at the end.

Launcher prefixes give the instance: ``srun --label`` (``3: ``), ``mpirun --tag-output``
(``[1,3]<stdout>:``, also after a ``\\r`` or, in flattened copies, after the text),
torchrun ``--tee`` (``[default3]:``) and a bare ``[3] `` rank tag. Lines without one are
numbered in order of appearance: the k-th repetition of the same (pattern, name, label,
step, epoch) in a source is instance ``k``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import mmap
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ... import memory, progress, schema
from ...errors import Problem
from ...executor import Executor, Processes, Serial, resolve
from ...registry import Outcome, ParseResult, _crash_problem
from ...runs import rank_of_path
from ...sources import Source
from . import fast, general, instances, rules
from .general import _NO_NEWLINE, WINDOW, _Scanner
from .tables import THROUGHPUT, TRAIN_METRICS

#: files at least this large are scanned in ranges of lines by the loader's executor, when it
#: has several workers (:mod:`dptrace.executor`)
PARALLEL_BYTES = 128 << 20
#: ranges of a parallel scan are at most about this large (a multiple of the workers of them,
#: so the workers stay evenly loaded): each finished range moves the progress bar
RANGE_BYTES = 64 << 20


def parse(source: Source, *, engine: str = "auto", executor: Executor | None = None,
          ) -> ParseResult:
    """Parse one training log into ``throughput`` and ``train_metrics``.

    ``engine``: "fast" (and "auto") reads the lines of tqdm updates all at once with
    pyarrow.compute (:mod:`.fast`), which declines to the Python reader any line it is
    unsure of; "general" reads every line in Python. Both give the same rows and problems.
    ``executor`` (the loader's; default: :func:`dptrace.executor.resolve`) scans a log of
    :data:`PARALLEL_BYTES` or more in ranges of lines when it has several workers (any
    executor for a plain file, whose pieces map it by path; a decompressed or transcoded
    one only on a forked pool, which inherits it); elsewhere its ranges are scanned and
    finished here, one after another, and joined as the workers' are."""
    use_fast = engine != "general"
    executor = executor if executor is not None else resolve()
    problems: list[Problem] = []
    with source.buffer(problems) as buf:
        n = len(buf)
        path = _piece_path(source)
        if n >= PARALLEL_BYTES:
            # in ranges on the executor's workers, or here one after another (each range's
            # rows finished before the next is scanned: the rows of the whole file are
            # never held raw and finished at once)
            spread = executor.workers > 1 and (path is not None or isinstance(executor, Processes))
            parts = _scan_parallel(buf, source.name, use_fast, executor if spread else Serial(),
                                   path)
            if all(isinstance(p, _Done) for p in parts):
                return _joined(buf, source.name, parts, problems)  # type: ignore[arg-type]
        else:
            parts = [_scan_range(buf, source.name, 0, n, last=True, use_fast=use_fast,
                                 give_back=path is not None)]
        tp, tm, headers = _merge(parts, problems)  # type: ignore[arg-type]
        del parts  # merged: the ranges' frames can go
        _flag_cut_number(buf, source.name, problems)
        context = _bars_after_setup_lines(buf, tp)
    variant = _variant(tp, tm)
    rows = len(tp) + len(tm)
    memory.release(rows)  # the ranges' frames and the scan's tables are gone
    # each table's rows go as soon as its frame is made (millions of rows in dense logs)
    throughput = _finish(tp, source.name, THROUGHPUT, problems, context)
    del tp
    memory.release(rows)
    tables = {"throughput": throughput,
              "train_metrics": _finish(tm, source.name, TRAIN_METRICS, problems)}
    del tm
    memory.release(rows)
    _split_parts(tables, headers)
    return ParseResult(tables, problems, variant)


#: a scanned range: its two frames, problems, newlines and run headers (prefix, line, kind)
_Header = tuple[str | None, int, str]
_Part = tuple[pd.DataFrame, pd.DataFrame, list[Problem], int, list[_Header]]


def _scan_range(buf: Any, name: str, start: int, end: int, last: bool,
                use_fast: bool = True, give_back: bool = False) -> _Part:
    """Scan ``buf[start:end]`` (which starts at a line start) into frames with local line numbers.

    Returns the two frames, the problems, and the number of newlines in the range. When
    the range ends the file without a newline, a number that touches the end is cut short
    (a killed job, a truncated copy): the scan stops before it (see :func:`_cut_number`).
    ``give_back``: ``buf`` maps a file (:func:`_piece_path`): the range's pages are handed
    back as they are read (:func:`dptrace.memory.give_back`; a dense log's scan touches every
    page of its range: they stayed in the RSS of the process that scanned it, the whole file
    in a serial load, under the frames made next).
    """
    rows = rules.Rows()
    found = fast.Found(give_back) if use_fast else None
    problems: list[Problem] = []
    if buf.find(b"\0", start, end) < 0:  # one memchr pass; holes of NULs are rare
        stop = _cut_number(buf, start, end) if last else end
        scanner = _Scanner(buf, name, rows, problems, start, stop, eof=end, found=found)
        scanner.run(last)
        newlines = scanner.newlines
    else:
        newlines = _scan_around_holes(buf, name, rows, problems, start, end, last, found)
    if give_back:
        memory.give_back(buf, start, end)
    tp = fast.frame(rows.tp, found, "tp", rules.TP_COLS)
    tm = fast.frame(rows.tm, found, "tm", rules.TM_COLS)
    return tp, tm, problems, newlines, list(getattr(rows, "headers", ()))


#: what a number cut by the end of the data may be: digits, a point, an exponent, a sign,
#: a unit glued to it ('7.5it', '3.96GB'); a run of these that holds a digit and touches the
#: end of a file without a final newline (or a hole of NULs) may be cut short
_NUMBER_BYTES = frozenset(b"0123456789.+-_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_DIGIT_BYTES = frozenset(b"0123456789")
#: longer runs are not a number (nor read as one by the recognisers)
_MAX_CUT = 400


def _cut_number(buf: Any, start: int, end: int) -> int:
    """Where the text of ``buf[start:end]`` stops being trustworthy: ``end``, or the start
    of a number that touches ``end`` on an unfinished line (``end`` is the end of the file
    or the start of a hole, and no newline precedes it).

    ``CurrSamplesPerSec=171.72`` cut to ``CurrSamplesPerSec=17`` would be read as 17; the
    recognisers never see the cut ``17``. Once per file (and per hole), not per line.
    """
    if end <= start or buf[end - 1] in (10, 13):  # '\n'; '\r' ends a tqdm update
        return end
    i = end
    floor = max(start, end - _MAX_CUT)
    while i > floor and buf[i - 1] in _NUMBER_BYTES:
        i -= 1
    if i == floor and floor > start:
        return end  # a very long word: not a number
    return i if _DIGIT_BYTES.intersection(buf[i:end]) else end


def _scan_around_holes(buf: Any, name: str, rows: rules.Rows, problems: list[Problem],
                       start: int, end: int, last: bool, found: fast.Found | None = None,
                       ) -> int:
    """Scan the text between the holes of NUL bytes in ``buf[start:end]`` and flag each hole.

    A hole is data the file lost (a node crashed while writing; Lustre pads such a file
    with zeros). The text before a hole is read up to it (a number it cuts is dropped, as
    at the end of a file); the rest of the line after it is not read: its start, with the
    launcher prefix and the key of any number on it, is lost. Returns the range's newlines.
    """
    seen_problems: list[Problem] = []  # the pieces' own problems: the first of each kind
    line, pos = 1, start
    holes = _holes(buf, start, end)
    for k, (lo, hi, nuls) in enumerate(holes):
        scanner = _Scanner(buf, name, rows, seen_problems, pos, _cut_number(buf, pos, lo),
                           line=line, found=found)
        scanner.run(last=False)
        line += scanner.newlines  # the hole's line: it holds no newline (see _holes)
        if k < MAX_HOLES:
            problems.append(Problem(name, _hole_message(buf, lo, hi, nuls, end), line, "error"))
        elif k == MAX_HOLES:
            problems.append(Problem(
                name, f"{len(holes) - MAX_HOLES} more holes of NUL bytes after this line "
                "(not listed one by one); the text between them was read", line, "error"))
        if hi >= end:
            newlines = line - 1
            break
        line, pos = line + 1, hi + 1
    else:
        scanner = _Scanner(buf, name, rows, seen_problems, pos,
                           _cut_number(buf, pos, end) if last else end, line=line, eof=end,
                           found=found)
        scanner.run(last)
        newlines = line - 1 + scanner.newlines
    seen: set[str] = set()
    for p in seen_problems:
        if p.message not in seen:
            seen.add(p.message)
            problems.append(p)
    return newlines


#: holes named one by one in a range; the rest are counted in one more problem
MAX_HOLES = 10
_NULS = re.compile(rb"\0+")


def _holes(buf: Any, start: int, end: int) -> list[tuple[int, int, int]]:
    """The holes of ``buf[start:end]``: (first NUL, end of its line, NUL bytes in it). Runs of
    NULs on one line make one hole, which ends at the newline after the last run (or at
    ``end``), so a hole never holds a newline."""
    out = []
    pos = buf.find(b"\0", start, end)
    while pos >= 0:
        lo, nuls = pos, 0
        while True:
            run = _NULS.match(buf, pos, end)
            assert run is not None
            nuls += run.end() - pos
            nl = buf.find(b"\n", run.end(), end)
            hi = nl if nl >= 0 else end
            pos = buf.find(b"\0", run.end(), hi)
            if pos < 0:
                break
        out.append((lo, hi, nuls))
        pos = buf.find(b"\0", hi, end) if hi < end else -1
    return out


def _hole_message(buf: Any, lo: int, hi: int, nuls: int, end: int) -> str:
    where = []
    if lo > 0 and buf[lo - 1] not in (10, 13):
        where.append("the text before it on this line was read up to it")
    if lo + nuls < hi:
        where.append("the rest of the line after it was not read")
    elif hi >= end:
        where.append("it runs to the end of the file")
    return (f"{nuls:,} NUL byte(s): a hole in the file (data lost: a node crashed while "
            f"writing, or the file system padded the file with zeros); "
            f"{'; '.join(where) or 'the lines around it were read'}")


def _flag_cut_number(buf: Any, name: str, problems: list[Problem]) -> None:
    """Once per file: when the last line ends in a number that may be cut short (see
    :func:`_cut_number`: the scan stopped before it, so no row holds it), the warning about
    the missing final newline becomes an error that names it and the figures that would
    have been read from it (a tqdm update torn in its rate gives none: only that update is
    lost, the earlier ones of its line are kept)."""
    n = len(buf)
    if not n or buf[n - 1] in (10, 13, 0):
        return
    stop = _cut_number(buf, max(0, n - 2 * _MAX_CUT), n)
    if stop == n:
        return
    lo = max(0, stop - WINDOW)
    line_start = buf.rfind(b"\n", lo, stop) + 1 or lo
    if buf.find(b"\0", line_start, stop) >= 0:
        return  # the rest of a line after a hole is not read (see _scan_around_holes)
    dropped = _rows_between(buf, name, line_start, n)
    for row in _rows_between(buf, name, line_start, stop):
        if row in dropped:
            dropped.remove(row)
    cut = bytes(buf[stop:n]).decode("utf-8", "replace")
    names = ", ".join(dict.fromkeys(r[1] for r in dropped))
    for k, p in enumerate(problems):
        if p.source == name and p.message.startswith(_NO_NEWLINE):
            problems[k] = Problem(
                name, f"{_NO_NEWLINE} the last line ends in a number that may be cut short "
                f"({cut!r}): dropped" + (f", with what would have been read from it ({names})"
                                         if names else ""), p.line, "error")
            return


def _rows_between(buf: Any, name: str, start: int, end: int) -> list[tuple[str, str, str]]:
    """The rows the recognisers find in ``buf[start:end]``, as (table, name, value) texts."""
    rows = rules.Rows()
    _Scanner(buf, name, rows, [], start, end).run(last=False)
    return [(kind, str(r[4]), repr(r[6] if kind == "tp" else r[5]))
            for kind, found in (("tp", rows.tp), ("tm", rows.tm)) for r in found]


#: the buffer a parallel scan's pieces read when they run in this process or in a process
#: forked from it while the scan runs (:class:`dptrace.executor.Processes`): (buffer, name,
#: use_fast, path); a piece run anywhere else maps its file by path (:func:`_piece_buffer`)
_FORKED: tuple[Any, str, bool, str | None] | None = None


def _piece_path(source: Source) -> str | None:
    """The file a piece of ``source`` can map by itself in any process: its path when the
    bytes on disk are its content (:attr:`Source.plain`); None for decompressed or
    transcoded content, which exists in this process only (an unlinked temporary file or
    memory): such a source is split only on a forked pool, which inherits it."""
    return os.fsdecode(source.path) if source.plain else None


@dataclass(frozen=True)
class _Piece:
    """One range of a parallel scan, self-contained (picklable: any executor can run it):
    the file's ``path`` (None: only a process that inherits the buffer can run it), its
    display ``name``, the route, the range and whether the worker finishes its tables."""

    path: str | None
    name: str
    use_fast: bool
    start: int
    end: int
    last: bool
    finish: bool


@contextlib.contextmanager
def _piece_buffer(piece: _Piece) -> Iterator[Any]:
    """The buffer ``piece`` reads: the one this process holds for its scan (the parent, or
    a worker forked from it: nothing pickled, nothing mapped again), else its file mapped
    read-only here (a spawned process, a Dask worker)."""
    held = _FORKED
    if held is not None and held[1] == piece.name and held[3] == piece.path:
        yield held[0]
        return
    if piece.path is None:
        raise RuntimeError(f"{piece.name}: a piece of content that exists only in the "
                           "process that read it, run in another process")
    with open(piece.path, "rb") as fh, \
            mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        yield mm


class _Done:
    """A range scanned and finished in its worker (:func:`_finish_range`): both tables as
    :func:`_finish` makes them, with the range's own line numbers, and what joining it to
    the ranges before it needs (``info``: see :func:`.instances.steps_and_repeats`)."""

    def __init__(self, tables: dict[str, pd.DataFrame], info: dict[str, dict],
                 problems: list[Problem], newlines: int, headers: list[_Header], bare: int,
                 counts: dict[str, list[tuple[str, int]]]):
        self.tables, self.info, self.problems = tables, info, problems
        self.newlines, self.headers, self.bare = newlines, headers, bare
        self.counts = counts


def _scan_piece(piece: _Piece) -> _Part | _Done | None:
    """One range scanned (and finished, when ``piece.finish``) wherever the executor runs
    it (:func:`_piece_buffer`)."""
    with _piece_buffer(piece) as buf:
        part = _scan_range(buf, piece.name, piece.start, piece.end, piece.last,
                           use_fast=piece.use_fast, give_back=piece.path is not None)
        return _finish_range(buf, piece.name, part) if piece.finish else part


#: steps beyond this are not exact as floats: such a range is not finished in its worker
_EXACT = float(2**53)


def _finish_range(buf: Any, name: str, part: _Part) -> _Part | _Done | None:
    """The range's tables finished in the worker that scanned it (the parent then only
    joins finished tables: :func:`_joined`), or, where what a range needs depends on the
    rest of the file in a way the join does not undo, the range as it is (the parent then
    merges and finishes the ranges as one table: :func:`_merge`), or None when that is only
    found once the range's frames were changed (the parent scans it again). Not finished
    here: a per-rank file (``rank3.log``: its rank fills missing prefixes), SambaFlow's
    documented instances without a prefix (numbered through the file), steps that are not
    exact as floats, a number that does not fit its column (its problem is counted per
    file), more bars without a description than the file looks at."""
    tp, tm, probs, newlines, heads = part
    if not _joinable(name, tp, tm):
        return part
    found: list[Problem] = []
    for df in (tp, tm):
        if len(df):
            _fit_numbers(df, name, found)
    if found:
        return None
    tp, tm = _tidy_categories(tp), _tidy_categories(tm)
    if "seg" in tm:
        del tm["seg"]
    bare = _bare_lines(tp)
    if bare > _MAX_CONTEXT_LINES:
        return None
    context = _bars_after_setup_lines(buf, tp)
    info: dict[str, dict] = {"throughput": {}, "train_metrics": {}}
    tables = {"throughput": _finish(tp, name, THROUGHPUT, found, context,
                                    info=info["throughput"], fitted=True)}
    del tp
    memory.release(len(tables["throughput"]))
    tables["train_metrics"] = _finish(tm, name, TRAIN_METRICS, found,
                                      info=info["train_metrics"], fitted=True)
    del tm
    memory.release(len(tables["train_metrics"]))
    if found:
        return None
    counts = {table: _pattern_counts(df) for table, df in tables.items()}
    for df in tables.values():
        for col in _MADE_IN_PARENT:  # one value, or given by another column
            if col in df:
                del df[col]
    return _Done(tables, info, probs, newlines, heads, bare, counts)


#: columns of a finished range's tables that the parent makes for the whole file instead of
#: receiving them (9 bytes a row each as Int64)
_MADE_IN_PARENT = ("source", "rank", "part")


def _pattern_counts(df: pd.DataFrame) -> list[tuple[str, int]]:
    """The rows of each pattern of a table, in order of first appearance (:func:`_variant`)."""
    if df.empty:
        return []
    s = df["pattern"]
    codes = s.cat.codes.to_numpy()
    per_code = schema.code_counts(codes, len(s.cat.categories))
    present = np.flatnonzero(per_code).tolist()
    if len(present) <= 16:   # a few patterns: each one's first row by a compare (no hash)
        seen = sorted(present, key=lambda c: int(np.argmax(codes == c)))
    else:
        seen = [c for c in pd.unique(codes).tolist() if c >= 0]
    return [(str(s.cat.categories[c]), int(per_code[c])) for c in seen]


def _joinable(name: str, tp: pd.DataFrame, tm: pd.DataFrame) -> bool:
    """Whether the range's tables can be finished in its worker (see :func:`_finish_range`):
    not a per-rank file's (its rank comes from the name, after the join), and
    :func:`finishable_alone`."""
    return rank_of_path(name) is None and finishable_alone(tp, tm)


def finishable_alone(tp: pd.DataFrame, tm: pd.DataFrame) -> bool:
    """Whether a range's rows (its throughput and metric tables) are final once finished on
    their own and joined to the ranges before them (here, and ``dptrace watch``'s parts):
    not SambaFlow's instances without a prefix (numbered through the file), steps exact as
    floats (the joins add them as such)."""
    for df in (tp, tm):
        if not len(df):
            continue
        documented = schema.isin(df["pattern"], instances.INSTANCE_PATTERNS)
        if documented.any() and (documented & df["prefix"].isna().to_numpy()).any():
            return False
        step = df["step"]
        if step.dtype == object:
            if step.notna().any():
                return False
            continue
        if len(step) and not _abs_sum(step) < _EXACT:
            return False
    return True


def _abs_sum(step: pd.Series) -> float:
    """The sum of the absolute values of a numeric column, nulls left out (0 when all are
    null), on one copy of it."""
    values = step.to_numpy(dtype="float64", na_value=np.nan, copy=True)
    np.abs(values, out=values)
    values[np.isnan(values)] = 0.0
    return float(values.sum())


def _joined(buf: Any, name: str, parts: list[_Done], problems: list[Problem]) -> ParseResult:
    """The ranges finished in their workers (:func:`_finish_range`) as one file's tables:
    line numbers shifted by the lines before each range, the steps of passes that cross a
    cut and the repeats of a row before the cut fixed (:func:`.instances.join_streams`),
    the columns concatenated (each range's column freed once copied; in this thread: the
    copies are bound by the kernel's page faults, and two threads of one process doubled
    its time in the kernel for the same wall time), then the run parts."""
    offset = 0
    headers: list[_Header] = []
    lines = []
    for part in parts:
        problems.extend(Problem(p.source, p.message, None if p.line is None else p.line + offset,
                                p.severity) for p in part.problems)
        headers.extend((pre, line + offset, kind) for pre, line, kind in part.headers)
        lines.append(offset)
        offset += part.newlines
    _flag_cut_number(buf, name, problems)
    memory.release(offset)  # what unpickling the ranges left in the heap
    counts: dict[str, int] = {}
    for table in ("throughput", "train_metrics"):  # as _variant counts the merged tables
        for part in parts:
            for pattern, k in part.counts[table]:
                counts[pattern] = counts.get(pattern, 0) + k
    variant = "+".join(sorted(counts, key=lambda k: -counts[k])) or None
    tables: dict[str, pd.DataFrame] = {}
    for table, schema_table in (("throughput", THROUGHPUT), ("train_metrics", TRAIN_METRICS)):
        frames = [p.tables.pop(table) for p in parts]
        infos = [p.info.pop(table) for p in parts]
        offsets, repeats = instances.join_streams(infos, lines)
        tables[table] = _join_tables(frames, infos, lines, offsets, repeats, name, schema_table)
        memory.release(len(tables[table]))
    _split_parts(tables, headers)
    return ParseResult(tables, problems, variant)


def _join_tables(frames: list[pd.DataFrame], infos: list[dict], lines: list[int],
                 offsets: list[np.ndarray], repeats: list[np.ndarray], source: str,
                 table: schema.Table) -> pd.DataFrame:
    """One table of the ranges' finished frames (emptied as their columns are copied): the
    line numbers shifted by ``lines``, ``offsets`` (per stream code of each range) added to
    the steps of rows with an epoch, ``repeats`` flagged; categoricals of different
    categories in the sorted union (what one scan's sorted categories are); ``source``,
    ``rank`` and ``part`` made here (see :data:`_MADE_IN_PARENT`)."""
    keep = [k for k, df in enumerate(frames) if len(df)]
    if not keep:
        return table.empty()
    bounds = np.cumsum([0] + [len(frames[k]) for k in keep])
    n = int(bounds[-1])
    adds: dict[int, _Add] = {}
    for k in keep:  # the steps to add, before the columns they need are taken
        stream, off = infos[k].get("stream"), offsets[k]
        if stream is not None and off.any():
            df = frames[k]
            adds[k] = (off.astype(np.int64), stream, _nulls(df["epoch"]) | _nulls(df["step"]))
    data: dict[str, Any] = {}
    tasks: list[tuple[str, list[Any]]] = []
    for col in [c.name for c in table.columns]:
        if col == "source":
            data[col] = pd.Categorical.from_codes(np.zeros(n, dtype=np.int8),
                                                  categories=schema.text_categories([source]))
            continue
        if col == "part":
            data[col] = pd.arrays.IntegerArray(np.zeros(n, dtype=np.int64),
                                               np.zeros(n, dtype=bool))
            continue
        if col == "rank":
            continue  # from instance's column, below
        tasks.append((col, [frames[k][col].array for k in keep]))
        for k in keep:
            del frames[k][col]

    rank = None
    for col, columns in tasks:
        data[col] = _join_column(col, columns, keep, bounds, lines, adds, repeats)
        columns.clear()
        memory.release(n)  # the ranges' column: its pages back before the next is made
        if col == "instance":
            rank = _rank_of_instance(data[col])
    tasks.clear()
    data["rank"] = rank
    df = pd.DataFrame({c.name: data.pop(c.name) for c in table.columns}, copy=False)
    return df


def _nulls(s: pd.Series) -> np.ndarray:
    """Where a column is null: a masked array's mask, a float's NaN (no copy of either)."""
    arr = s.array
    if isinstance(arr, pd.arrays.IntegerArray):
        return arr._mask
    if s.dtype == np.float64:
        return np.isnan(s.to_numpy())
    return s.isna().to_numpy()


def _join_column(col: str, columns: list[Any], keep: list[int], bounds: np.ndarray,
                 lines: list[int], adds: dict[int, _Add],
                 repeats: list[np.ndarray]) -> Any:
    """One column of the joined table from the ranges' ``columns`` (see
    :func:`_join_tables`)."""
    n = int(bounds[-1])
    first = columns[0]
    if isinstance(first, pd.Categorical):
        return _join_categoricals(columns, bounds)
    if isinstance(first, pd.arrays.IntegerArray):
        values = np.empty(n, dtype=np.int64)
        mask = np.empty(n, dtype=bool)
        for i, (k, arr) in enumerate(zip(keep, columns, strict=True)):
            lo, hi = bounds[i], bounds[i + 1]
            values[lo:hi] = arr._data
            mask[lo:hi] = arr._mask
            if col == "lineno":
                values[lo:hi] += lines[k]
            elif col == "step" and k in adds:
                _add_steps(values[lo:hi], *adds.pop(k))
        return pd.arrays.IntegerArray(values, mask)
    out = np.concatenate([np.asarray(a) for a in columns])
    if col == "repeat":
        for i, k in enumerate(keep):
            out[bounds[i] + repeats[k]] = True
    return out


#: the steps a range's rows add (see :func:`_add_steps`): per stream code, the codes, and
#: the rows that add nothing (no epoch, or no step)
_Add = tuple[np.ndarray, np.ndarray, np.ndarray]


def _add_steps(steps: np.ndarray, per_stream: np.ndarray, stream: np.ndarray,
               none: np.ndarray) -> None:
    """``steps += per_stream[stream]`` where not ``none``, in place and a chunk of rows at a
    time (no temporary of the rows' length: its fresh pages cost as much as the sum)."""
    for lo, part in schema.lookup_chunks(per_stream, stream):
        np.copyto(part, 0, where=none[lo:lo + len(part)])
        steps[lo:lo + len(part)] += part


def _rank_of_instance(instance: pd.Categorical) -> pd.arrays.IntegerArray:
    """:func:`.instances.prefix_rank` of a categorical instance (the prefix: see
    :func:`_joinable`), by its codes (no temporary of the rows' length)."""
    return instances.ranks_by_code(instance.codes, instance.categories.tolist())


def _codes_dtype(k: int) -> type:
    """The dtype pandas gives the codes of ``k`` categories (a categorical made of codes of
    another dtype copies them into this one)."""
    for dtype in (np.int8, np.int16, np.int32):
        if k < np.iinfo(dtype).max:
            return dtype
    return np.int64


def _join_categoricals(columns: list[pd.Categorical], bounds: np.ndarray) -> pd.Categorical:
    """Categoricals one after another: their dtype where they agree, else the sorted union
    of their categories (:func:`dptrace.schema.union_categories`), codes recoded."""
    dtype = columns[0].dtype
    if all(c.dtype == dtype for c in columns):
        codes = np.concatenate([c.codes for c in columns])
        return pd.Categorical.from_codes(codes, dtype=dtype)
    cats = schema.union_categories([c.categories for c in columns])
    codes = np.empty(int(bounds[-1]), dtype=_codes_dtype(len(cats)))
    for i, c in enumerate(columns):
        recode = np.append(cats.get_indexer(c.categories), -1).astype(codes.dtype)
        schema.lookup(recode, c.codes, out=codes[bounds[i]:bounds[i + 1]])  # -1: the last
    return pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(cats, columns[0].ordered))


def _scan_parallel(buf: Any, name: str, use_fast: bool, executor: Executor,
                   path: str | None = None) -> list[_Part] | list[_Done]:
    """Split at line boundaries into ranges (one per worker, or a multiple of the workers of
    at most about RANGE_BYTES each), scan them with ``executor``: each range is a
    :class:`_Piece` any executor can run (forked processes inherit the memory map; any
    other worker maps the file at ``path`` itself); progress is reported as the ranges
    finish, in order. The workers
    finish their ranges' tables (:func:`_finish_range`); where one cannot, the ranges are
    returned as scanned (those already finished are scanned again)."""
    global _FORKED
    n = len(buf)
    workers = executor.workers
    ranges = workers * max(1, -(-n // (workers * RANGE_BYTES)))
    cuts = general.line_cuts(buf, ranges)
    bounds = [_Piece(path, name, use_fast, cuts[i], cuts[i + 1], i == ranges - 1, True)
              for i in range(ranges)]
    _FORKED = (buf, name, use_fast, path)
    parts: list[Any] = []
    try:
        for piece, part in zip(bounds, executor.map(_scan_piece, bounds), strict=True):
            parts.append(part)
            progress.advance(piece.end, n)
        if all(isinstance(p, _Done) for p in parts) and \
                sum(p.bare for p in parts) <= _MAX_CONTEXT_LINES:
            return parts
        again = [k for k, p in enumerate(parts) if p is None or isinstance(p, _Done)]
        for k in again:
            parts[k] = None  # frees the finished range before it is scanned again
        redo = [dataclasses.replace(bounds[k], finish=False) for k in again]
        for k, part in zip(again, executor.map(_scan_piece, redo), strict=True):
            parts[k] = part
        return parts
    finally:
        _FORKED = None


def _merge(parts: list[_Part], problems: list[Problem],
           ) -> tuple[pd.DataFrame, pd.DataFrame, list[_Header]]:
    """Concatenate the ranges' frames and run headers, shifting line numbers by the lines
    before each range. Takes the frames out of ``parts`` (which it empties): each range's
    column is freed as soon as it is in the concatenated one (the ranges of a dense log
    hold millions of rows; a concat of whole frames held them twice)."""
    offset, tps, tms = 0, [], []
    headers: list[_Header] = []
    for tp, tm, probs, newlines, heads in parts:
        if offset:   # (the first range's numbers stand: a small log's one range)
            tp["lineno"] += offset
            tm["lineno"] += offset
        problems.extend(Problem(p.source, p.message, None if p.line is None else p.line + offset,
                                p.severity) for p in probs)
        headers.extend((pre, line + offset, kind) for pre, line, kind in heads)
        tps.append(tp)
        tms.append(tm)
        offset += newlines
    parts.clear()
    tp, tm = _concat_columns(tps), _concat_columns(tms)
    if "seg" in tm:
        del tm["seg"]  # the bars' segments are looked at in throughput only
    return _tidy_categories(tp), _tidy_categories(tm), headers


def _concat_columns(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The frames (same columns; the list is emptied) one after another, column by column:
    each range's column goes once it is copied. Ranges without rows are left out (their
    columns are all-null objects); the others' categoricals get one dtype first
    (:func:`dptrace.schema.unite_categories`), so they stay categorical."""
    full = [df for df in frames if len(df)] or frames[:1]
    frames.clear()
    if len(full) == 1:
        return full[0]
    full = schema.unite_categories(full)
    data: dict[str, pd.Series] = {}
    for col in list(full[0].columns):
        data[col] = pd.concat([df[col] for df in full], ignore_index=True)
        for df in full:
            del df[col]
    return pd.DataFrame(data, copy=False)


def _categorical(s: pd.Series) -> bool:
    return isinstance(s.dtype, pd.CategoricalDtype)


def _tidy_categories(df: pd.DataFrame) -> pd.DataFrame:
    """Categorical columns with only the values they hold, sorted: the categories pandas
    gives strings made categorical (what the schema makes of the general engine's)."""
    for col, dtype in zip(df.columns.tolist(), df.dtypes.tolist(), strict=True):
        if not isinstance(dtype, pd.CategoricalDtype):   # (its dtype, not the column: a
            continue                                     # lookup of each is ~15 us)
        s = df[col]
        cats = s.cat.categories
        codes = s.cat.codes.to_numpy()
        used = np.flatnonzero(schema.code_counts(codes, len(cats)))
        values = cats.tolist()
        keep = sorted(used.tolist(), key=values.__getitem__)   # codes, by their values
        if keep == list(range(len(cats))):   # all used, in order already
            continue
        # codes keep their dtype; the last entry: code -1 (null) stays -1
        recode = np.full(len(cats) + 1, -1, dtype=codes.dtype)
        recode[keep] = np.arange(len(keep))
        df[col] = pd.Series(pd.Categorical.from_codes(
            schema.lookup(recode, codes), dtype=pd.CategoricalDtype(
                pd.Index([values[i] for i in keep], dtype=cats.dtype), s.cat.ordered)),
            index=s.index)
    return df


def _finish(df: pd.DataFrame, source: str, table: schema.Table, problems: list[Problem],
            context: dict[int, str] | None = None, info: dict | None = None,
            fitted: bool = False) -> pd.DataFrame:
    """Resolve printers, repeats and global steps (:mod:`.instances`), add the source and the
    phase, and conform to the schema. ``context``: the phase of bars without a description,
    by line, from the line before them (:func:`_bars_after_setup_lines`). ``info``: see
    :func:`.instances.steps_and_repeats`; ``fitted``: :func:`_fit_numbers` was run."""
    if df.empty:
        return table.empty()
    if not _default_index(df):
        df = df.reset_index(drop=True)
    if not fitted:
        _fit_numbers(df, source, problems)
    df["instance"], prefix = instances.printer_and_prefix(df, source)
    if "label" in df:  # throughput: from the bar label and name, after the rows (C path too)
        df["phase"] = rules.phases(df["name"], df["label"], df["metric"])
        if context:
            hit = df["lineno"].isin(list(context)) & df["label"].isna()
            if hit.any():
                df["phase"] = df["phase"].astype("object")
                df.loc[hit, "phase"] = df.loc[hit, "lineno"].map(context)
                df["phase"] = pd.Categorical(df["phase"], categories=rules.PHASES)
    memory.release(len(df))  # the temporaries of the numbers' checks
    df["step"], df["repeat"] = instances.steps_and_repeats(df, df["instance"], info)
    df["rank"] = instances.prefix_rank(prefix)  # after the steps' temporaries are gone
    del prefix
    # one category: a Python string per row made a column of millions of objects
    df["source"] = pd.Categorical.from_codes(np.zeros(len(df), dtype=np.int8),
                                             categories=schema.text_categories([source]))
    # one run in the file until run headers say otherwise (_split_parts); zeros from calloc
    df["part"] = pd.arrays.IntegerArray(np.zeros(len(df), dtype=np.int64),
                                        np.zeros(len(df), dtype=bool))
    for col in ("prefix", "seg"):  # in place: pandas 2's drop copies every column
        if col in df:
            del df[col]
    return schema.conform(df, table)


def _default_index(df: pd.DataFrame) -> bool:
    """True when ``df``'s index is 0..n-1 already (pandas 2's reset_index copies the frame)."""
    index = df.index
    return isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1


#: train_metrics that state the job's shape, printed before training starts
_SHAPE_METRICS = ("world_size", "devices")


#: what the line before a bar without a description says it is: the datasets library's
#: 'Found cached dataset parquet (...)' / 'Loading cached processed dataset' before the bar of
#: its splits, 'Downloading ...' / 'Generating train split' lines
_SETUP_BEFORE = re.compile(
    rb"(?P<load>Found cached dataset|Loading cached|Loading (?:checkpoint|dataset|model)"
    rb"|Generating \w+ split|[Tt]okeniz|Preprocess)|(?P<download>Downloading|Fetching \d+ files)")
#: bars without a description looked at per file (each costs a look at one line)
_MAX_CONTEXT_LINES = 10_000


def _bare(tp: pd.DataFrame) -> pd.DataFrame:
    """The rows of bars without a description."""
    if tp.empty or "label" not in tp:
        return tp.iloc[:0]
    bare = schema.isin(tp["pattern"], ("tqdm",))
    if not bare.any():   # (no bar: no mask of the labels, no copy of the rows)
        return tp.iloc[:0]
    return tp[bare & tp["label"].isna().to_numpy(dtype=bool)]


def _bare_lines(tp: pd.DataFrame) -> int:
    """The number of lines with bars without a description."""
    bare = _bare(tp)
    return 0 if bare.empty else int(bare["lineno"].nunique())


def _bars_after_setup_lines(buf: Any, tp: pd.DataFrame) -> dict[int, str]:
    """The phase (load, download) of tqdm bars without a description whose previous line
    says what they do (the datasets library prints 'Found cached dataset parquet (...)' and
    then a bar of its splits, '2/2 [00:00<00:00, 354.85it/s]', with no description), by line
    number. Bars of training printed without a description (HF Trainer's) follow other lines."""
    bare = _bare(tp)
    if bare.empty:
        return {}
    first = bare.drop_duplicates("lineno").head(_MAX_CONTEXT_LINES)
    out: dict[int, str] = {}
    lo_phase = {"load", "download"} & set(rules.PHASES)
    for lineno, seg in zip(first["lineno"].tolist(), first["seg"].tolist(), strict=True):
        start = buf.rfind(b"\n", 0, int(seg)) + 1
        if start <= 0:
            continue
        prev = buf.rfind(b"\n", max(0, start - 1 - WINDOW), start - 1) + 1
        m = _SETUP_BEFORE.search(buf[prev:start - 1])
        if m and m.lastgroup in lo_phase:
            out[int(lineno)] = str(m.lastgroup)
    return out


def _split_parts(tables: dict[str, pd.DataFrame], headers: list[_Header]) -> None:
    """The ``part`` column of both tables: runs inside one file (:func:`.instances.part_starts`),
    0 everywhere unless run headers split the file."""
    tp, tm = tables["throughput"], tables["train_metrics"]
    starts: list[int] = []
    if headers and (len(tp) or len(tm)):
        # what a run prints while it trains: throughput of the train phase, and metrics
        # (loss, step time) but not the statements of the job's shape (world size)
        lines, printers, training = [], [], []
        for df, keep in ((tp, (tp["phase"] == "train") if len(tp) else None),
                         (tm, ~tm["name"].isin(_SHAPE_METRICS) if len(tm) else None)):
            if keep is None:
                continue
            lines.append(df["lineno"].to_numpy(dtype="int64", na_value=0))
            printers.append(df["instance"].astype("object").to_numpy(dtype=object, na_value=None))
            training.append((keep & ~df["repeat"]).to_numpy(dtype=bool))
        starts = instances.part_starts(headers, np.concatenate(lines),
                                       np.concatenate(printers), np.concatenate(training))
    if not starts:
        return  # one run: part 0 everywhere, as _finish made it
    for df in tables.values():
        if len(df):
            lines = df["lineno"].to_numpy(dtype="int64", na_value=0)
            part = np.searchsorted(np.asarray(starts, dtype="int64"), lines, side="right")
            df["part"] = pd.arrays.IntegerArray(part, np.zeros(len(part), dtype=bool))


#: a step at or beyond this does not fit Int64 (as a float: 2**63 - 1 rounds up to it)
_INT64_END = float(2**63)
#: rows named one by one per kind of bad number and table; the rest are counted
MAX_BAD_ROWS = 10


def _fit_numbers(df: pd.DataFrame, source: str, problems: list[Problem]) -> None:
    """Numbers that do not fit their column become missing, each with a problem naming its
    line: a step beyond Int64 ('99999999999999999999/3247' in a tqdm bar), an epoch or a
    value that is not finite ('2760.1e3080 img/sec' is inf as a float). A throughput of inf
    or NaN is no measurement (an error); ``inf`` among train_metrics (a grad norm after an
    fp16 overflow) is printed by trainers themselves (a warning). Vectorised, once per
    table and file."""
    step = df["step"]
    if step.dtype == object:   # Python ints, compared as ints (one of 352 digits is no float)
        bad = np.array([_beyond_int64(v) for v in step], dtype=bool)
    else:
        bad = (step.abs() >= _INT64_END).to_numpy()
    if bad.any():
        if step.dtype == object:  # Python ints: keep those that fit exactly
            df["step"] = pd.array([None if b else v for v, b in zip(step, bad, strict=True)],
                                  dtype="Int64")
        else:
            df["step"] = step.where(~bad)
        _bad_rows(df, bad, step, source, problems, "step {} does not fit a 64-bit integer: "
                  "the row is kept, its step is missing", "error")
    epoch = instances._floats(df["epoch"])
    bad = np.isinf(epoch)
    if bad.any():
        _bad_rows(df, bad, df["epoch"], source, problems, "epoch {} is not a finite number: the"
                  " row is kept, its epoch is missing", "error")
        df["epoch"] = df["epoch"].where(~bad)
    value = instances._floats(df["value"])
    throughput = "metric" in df
    bad = ~np.isfinite(value) if throughput else np.isinf(value)
    if bad.any():
        _bad_rows(df, bad, df["value"], source, problems,
                  "{name} = {} is not a finite number (too large for a float?): the row is "
                  "kept, its value is missing", "error" if throughput else "warning")
        df["value"] = df["value"].where(~bad)


def _beyond_int64(v: object) -> bool:
    """A step (a Python or numpy int, a float, or missing) that Int64 cannot hold."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return abs(int(v)) >= 2**63
    if isinstance(v, (float, np.floating)):
        return not math.isnan(v) and abs(v) >= _INT64_END
    return False


def _bad_rows(df: pd.DataFrame, bad: np.ndarray, col: pd.Series, source: str,
              problems: list[Problem], message: str, severity: str) -> None:
    where = np.flatnonzero(bad)
    for i in where[:MAX_BAD_ROWS].tolist():
        problems.append(Problem(source, message.format(col.iloc[i], name=df["name"].iloc[i]),
                                int(df["lineno"].iloc[i]), severity))
    if len(where) > MAX_BAD_ROWS:
        rest = df["lineno"].iloc[where[MAX_BAD_ROWS:]]
        problems.append(Problem(
            source, f"{len(rest)} more rows like the above (lines {rest.min()}-{rest.max()}): "
            + message.format("...", name=df["name"].iloc[where[MAX_BAD_ROWS]]),
            int(rest.min()), severity))


def _variant(tp: pd.DataFrame, tm: pd.DataFrame) -> str | None:
    """The patterns found, most rows first (ties: in order of appearance)."""
    patterns = [df["pattern"] for df in (tp, tm) if "pattern" in df]
    return _variant_of_codes(patterns)


def _variant_of_codes(patterns: list[pd.Series]) -> str | None:
    """:func:`_variant` of categorical columns, from their codes: what ``value_counts`` of
    the strings gives (in order of first appearance, then stably by count, descending)."""
    counts: dict[str, int] = {}
    for s in patterns:
        if not _categorical(s) and len(s) <= _COUNT_IN_PYTHON:
            for k in s.tolist():   # a small log's few rows: counted in Python (~0.5 ms less)
                if k is None or k is pd.NA or (isinstance(k, float) and k != k):
                    continue
                counts[str(k)] = counts.get(str(k), 0) + 1
            continue
        if not _categorical(s):  # in order of first appearance (pandas 2's value_counts
            # orders ties by hash: the engines would disagree on a tie)
            per = s.value_counts(sort=False)
            for k in pd.unique(s.dropna()):
                counts[str(k)] = counts.get(str(k), 0) + int(per[k])
            continue
        codes = s.cat.codes.to_numpy()
        codes = codes[codes >= 0]
        per_code = np.bincount(codes, minlength=len(s.cat.categories))
        for code in pd.unique(codes).tolist():
            name = str(s.cat.categories[code])
            counts[name] = counts.get(name, 0) + int(per_code[code])
    names = sorted(counts, key=lambda k: -counts[k])  # stable: ties keep their order
    return "+".join(names) or None


#: a column of patterns up to this many rows is counted in Python (:func:`_variant_of_codes`)
_COUNT_IN_PYTHON = 50_000


# --- many small logs at once ------------------------------------------------------------------

#: a plain log smaller than this, one of several inputs, is read with the others like it
#: (:func:`parse_small`): its lines scanned, its rows gathered, its tables built with theirs
SMALL_BYTES = 1 << 20
#: rows gathered from small logs before their tables are built (bounds a batch's memory)
BATCH_ROWS = 1 << 20
#: steps and numbers a batch takes as they are: beyond this a float is not exact
_EXACT_INT = 2**53


@dataclass
class _Small:
    """A small log's scanned rows (the scanner's tuples, :data:`rules.TP_COLS` and
    :data:`rules.TM_COLS`), run headers and problems, before any frame is made."""

    source: Source
    tp: list[tuple[Any, ...]]
    tm: list[tuple[Any, ...]]
    headers: list[_Header]
    problems: list[Problem]


def parse_small(sources: Sequence[Source], problems: list[Problem], *, engine: str = "auto",
                ) -> tuple[dict[str, list[pd.DataFrame]], list[Outcome]]:
    """Many small plain logs (each under :data:`SMALL_BYTES`) read at once: what
    :func:`parse` gives each of them, with each table built, finished and conformed once for
    all of them (a source column, per-file streams, parts and variants) instead of once per
    file (~50 ms of pandas per file). The tables are lists of frames, in the sources' order,
    that concatenate to the per-file tables concatenated; one outcome per source; every
    problem is also appended to ``problems``.

    A batch takes the common case only: a log with a hole of NUL bytes, bars without a
    description (their phase comes from the line before), SambaFlow's documented instances
    without a prefix, a number that does not fit its column, or a rank file whose lines mix
    prefixes and none, is read by :func:`parse` on its own, in its place. The lines are
    scanned by the general route (the fast route reads the same rows, and pays its setup
    per file)."""
    parts: dict[str, list[pd.DataFrame]] = {"throughput": [], "train_metrics": []}
    outcomes: list[Outcome] = []
    pending: list[_Small] = []
    rows = 0

    def flush() -> None:
        nonlocal rows
        if pending:
            for name, df in _small_tables(pending).items():
                parts[name].append(df)
            pending.clear()
            rows = 0

    for src in sources:
        small = None
        try:
            small = _small_rows(src)
        except Exception:   # read on its own below, where a crash is reported as such
            small = None
        if small is not None:
            pending.append(small)
            rows += len(small.tp) + len(small.tm)
            outcomes.append(Outcome(src, _variant_of_rows(small), len(small.tp) + len(small.tm),
                                    small.problems))
            problems.extend(small.problems)
            if rows >= BATCH_ROWS:
                flush()
            continue
        flush()
        try:
            result = parse(src, engine=engine, executor=Serial())
        except Exception as exc:   # a reader's bug must not stop the report
            result = ParseResult(problems=[_crash_problem("trainlog", src, exc)],
                                 variant="failed")
        for name, df in result.tables.items():
            parts.setdefault(name, []).append(df)
        problems.extend(result.problems)
        outcomes.append(Outcome(src, result.variant, result.rows, list(result.problems)))
    flush()
    return parts, outcomes


def _small_rows(source: Source) -> _Small | None:
    """A small log's rows as the scanner gives them, or None when it is not for a batch
    (see :func:`parse_small`)."""
    name = source.name
    probs: list[Problem] = []
    rows = rules.Rows()
    with source.buffer(probs) as buf:
        n = len(buf)
        if buf.find(b"\0") >= 0:
            return None
        _Scanner(buf, name, rows, probs, 0, _cut_number(buf, 0, n), eof=n).run(True)
        _flag_cut_number(buf, name, probs)
    if not _plain_rows(rows.tp, True) or not _plain_rows(rows.tm, False):
        return None
    if any(r[3] == "tqdm" and r[10] is None for r in rows.tp):   # bars without a description
        return None
    if any(r[0] is None and r[3] in instances.INSTANCE_PATTERNS for r in (*rows.tp, *rows.tm)):
        return None
    found = rank_of_path(name)
    tp, tm = rows.tp, rows.tm
    if found is not None:
        with_prefix = sum(r[0] is not None for r in (*tp, *tm))
        if with_prefix and with_prefix < len(tp) + len(tm):
            return None
        if not with_prefix:   # the file's rank is the printer of every line
            label = str(found[0])
            tp = [(label, *r[1:]) for r in tp]
            tm = [(label, *r[1:]) for r in tm]
    return _Small(source, tp, tm, list(rows.headers), probs)


def _plain_number(v: object, finite: bool) -> bool:
    """A number a batch takes as it is: a float (NaN only when not ``finite``; never inf),
    or an int exact as a float."""
    if type(v) is float:
        return math.isfinite(v) or (not finite and v != v)
    return type(v) is int and abs(v) < _EXACT_INT


def _plain_rows(found: list[tuple[Any, ...]], throughput: bool) -> bool:
    """True when every value, step and epoch of the rows fits its column as it is (what
    :func:`_fit_numbers` would find nothing in) and survives a column of several files
    (no int beyond a float's exact range): a throughput's value is finite, a metric's
    is not inf, a step a whole number, an epoch finite."""
    at = (6, 8, 9) if throughput else (5, 6, 7)
    value, step, epoch = at
    for r in found:
        if not _plain_number(r[value], throughput):
            return False
        s = r[step]
        if s is not None and not (_plain_number(s, True) and float(s).is_integer()):
            return False
        e = r[epoch]
        if e is not None and not _plain_number(e, True):
            return False
    return True


def _variant_of_rows(small: _Small) -> str | None:
    """:func:`_variant` of a small log's rows: patterns by rows, most first (ties: in order
    of first appearance, throughput before metrics)."""
    counts: dict[str, int] = {}
    for r in small.tp:
        counts[r[3]] = counts.get(r[3], 0) + 1
    for r in small.tm:
        counts[r[3]] = counts.get(r[3], 0) + 1
    return "+".join(sorted(counts, key=lambda k: -counts[k])) or None


def _small_tables(batch: list[_Small]) -> dict[str, pd.DataFrame]:
    """The batch's two tables, each made once: the rows of every log in order, finished as
    :func:`_finish` finishes one log's (streams, repeats and global steps per log), the
    ``source`` column from each row's log, and the run parts per log
    (:func:`_split_parts`)."""
    tables = {}
    for table, key, columns in (("throughput", "tp", rules.TP_COLS),
                                ("train_metrics", "tm", rules.TM_COLS)):
        found: list[tuple[Any, ...]] = []
        of: list[int] = []
        for k, small in enumerate(batch):
            part = getattr(small, key)
            found.extend(part)
            of.extend([k] * len(part))
        schema_table = THROUGHPUT if table == "throughput" else TRAIN_METRICS
        if not found:
            tables[table] = schema_table.empty()
            continue
        df = pd.DataFrame.from_records(found, columns=list(columns))
        del found
        tables[table] = _finish_batch(df, np.asarray(of, dtype=np.int64),
                                      [s.source.name for s in batch], schema_table)
    _split_batch_parts(tables, batch)
    return tables


def _finish_batch(df: pd.DataFrame, of: np.ndarray, names: list[str],
                  table: schema.Table) -> pd.DataFrame:
    """:func:`_finish` of the rows of several logs at once (``of``: each row's log, an
    index into ``names``; rows in the logs' order, each log's in file order): every rule
    of a log's rows sees that log's rows only."""
    prefix = df["prefix"].astype("object")
    df["instance"] = prefix
    if "label" in df:
        df["phase"] = rules.phases(df["name"], df["label"], df["metric"])
    df["step"], df["repeat"] = instances.steps_and_repeats(df, df["instance"], group=of)
    df["rank"] = instances.prefix_rank(prefix)
    del prefix
    present = np.flatnonzero(np.bincount(of, minlength=len(names)))
    order = sorted(present.tolist(), key=names.__getitem__)
    recode = np.full(len(names), -1, dtype=np.int64)
    recode[order] = np.arange(len(order))
    df["source"] = pd.Categorical.from_codes(
        recode[of].astype(_codes_dtype(len(order))),
        categories=schema.text_categories([names[i] for i in order]))
    df["part"] = pd.arrays.IntegerArray(np.zeros(len(df), dtype=np.int64),
                                        np.zeros(len(df), dtype=bool))
    df["_of"] = of
    for col in ("prefix", "seg"):
        del df[col]
    return schema.conform(df, table)


def _split_batch_parts(tables: dict[str, pd.DataFrame], batch: list[_Small]) -> None:
    """:func:`_split_parts` of each log of a batch that has run headers, on its rows."""
    tp, tm = tables["throughput"], tables["train_metrics"]
    if not any(s.headers for s in batch):
        for df in (tp, tm):
            if "_of" in df:
                del df["_of"]
        return
    cols: dict[str, tuple[Any, ...] | None] = {}
    for key, df in (("tp", tp), ("tm", tm)):
        if not len(df):
            cols[key] = None
            continue
        keep = (df["phase"] == "train") if key == "tp" else ~df["name"].isin(_SHAPE_METRICS)
        of = df["_of"].to_numpy()
        cols[key] = (np.searchsorted(of, np.arange(len(batch) + 1)),
                     df["lineno"].to_numpy(dtype="int64", na_value=0),
                     df["instance"].astype("object").to_numpy(dtype=object, na_value=None),
                     (keep & ~df["repeat"]).to_numpy(dtype=bool),
                     np.zeros(len(df), dtype=np.int64))
    for k, small in enumerate(batch):
        if not small.headers:
            continue
        lines, printers, training = [], [], []
        for got in cols.values():
            if got is not None:
                at, lineno, printer, train, _ = got
                lo, hi = at[k], at[k + 1]
                lines.append(lineno[lo:hi])
                printers.append(printer[lo:hi])
                training.append(train[lo:hi])
        if not sum(len(x) for x in lines):
            continue
        starts = instances.part_starts(small.headers, np.concatenate(lines),
                                       np.concatenate(printers), np.concatenate(training))
        if not starts:
            continue
        for got in cols.values():
            if got is not None:
                at, lineno, _, _, part = got
                lo, hi = at[k], at[k + 1]
                part[lo:hi] = np.searchsorted(np.asarray(starts, dtype="int64"),
                                              lineno[lo:hi], side="right")
    for key, df in (("tp", tp), ("tm", tm)):
        got = cols.get(key)
        if got is not None:
            df["part"] = pd.arrays.IntegerArray(got[4], np.zeros(len(df), dtype=bool))
        if "_of" in df:
            del df["_of"]

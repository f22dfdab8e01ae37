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

import math
import re
from typing import Any

import numpy as np
import pandas as pd

from ... import memory, progress, schema
from ...errors import Problem
from ...executor import Executor, resolve
from ...registry import ParseResult
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
    :data:`PARALLEL_BYTES` or more in ranges of lines when it has several workers."""
    use_fast = engine != "general"
    executor = executor if executor is not None else resolve()
    problems: list[Problem] = []
    with source.buffer(problems) as buf:
        n = len(buf)
        if n >= PARALLEL_BYTES and executor.workers > 1:
            parts = _scan_parallel(buf, source.name, use_fast, executor)
            if all(isinstance(p, _Done) for p in parts):
                return _joined(buf, source.name, parts, problems)  # type: ignore[arg-type]
        else:
            parts = [_scan_range(buf, source.name, 0, n, last=True, use_fast=use_fast)]
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
                use_fast: bool = True) -> _Part:
    """Scan ``buf[start:end]`` (which starts at a line start) into frames with local line numbers.

    Returns the two frames, the problems, and the number of newlines in the range. When
    the range ends the file without a newline, a number that touches the end is cut short
    (a killed job, a truncated copy): the scan stops before it (see :func:`_cut_number`).
    """
    rows = rules.Rows()
    found = fast.Found() if use_fast else None
    problems: list[Problem] = []
    if buf.find(b"\0", start, end) < 0:  # one memchr pass; holes of NULs are rare
        stop = _cut_number(buf, start, end) if last else end
        scanner = _Scanner(buf, name, rows, problems, start, stop, eof=end, found=found)
        scanner.run(last)
        newlines = scanner.newlines
    else:
        newlines = _scan_around_holes(buf, name, rows, problems, start, end, last, found)
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


_FORKED: tuple[Any, str, bool] | None = None


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


def _scan_forked(bounds: tuple[int, int, bool, bool]) -> _Part | _Done | None:
    assert _FORKED is not None
    buf, name, use_fast = _FORKED
    start, end, last, finish = bounds
    part = _scan_range(buf, name, start, end, last, use_fast=use_fast)
    return _finish_range(buf, name, part) if finish else part


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
    """Whether the range's tables can be finished in its worker (see :func:`_finish_range`)."""
    if rank_of_path(name) is not None:
        return False
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
        offsets, repeats = instances.join_streams(infos)
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
                   ) -> list[_Part] | list[_Done]:
    """Split at line boundaries into ranges (one per worker, or a multiple of the workers of
    at most about RANGE_BYTES each), scan them with ``executor`` (forked processes inherit
    the memory map); progress is reported as the ranges finish, in order. The workers
    finish their ranges' tables (:func:`_finish_range`); where one cannot, the ranges are
    returned as scanned (those already finished are scanned again)."""
    global _FORKED
    n = len(buf)
    workers = executor.workers
    ranges = workers * max(1, -(-n // (workers * RANGE_BYTES)))
    cuts = general.line_cuts(buf, ranges)
    bounds = [(cuts[i], cuts[i + 1], i == ranges - 1, True) for i in range(ranges)]
    _FORKED = (buf, name, use_fast)
    parts: list[Any] = []
    try:
        for (_, end, _, _), part in zip(bounds, executor.map(_scan_forked, bounds),
                                        strict=True):
            parts.append(part)
            progress.advance(end, n)
        if all(isinstance(p, _Done) for p in parts) and \
                sum(p.bare for p in parts) <= _MAX_CONTEXT_LINES:
            return parts
        again = [k for k, p in enumerate(parts) if p is None or isinstance(p, _Done)]
        for k in again:
            parts[k] = None  # frees the finished range before it is scanned again
        redo = [(s, e, last, False) for k, (s, e, last, _) in enumerate(bounds) if k in again]
        for k, part in zip(again, executor.map(_scan_forked, redo), strict=True):
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
    for col in df:
        s = df[col]
        if not _categorical(s):
            continue
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
    return tp[(tp["pattern"] == "tqdm") & tp["label"].isna()]


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

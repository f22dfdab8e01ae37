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

import multiprocessing as mp
import os
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np
import pandas as pd

from ... import progress, schema
from ...errors import Problem
from ...registry import ParseResult
from ...sources import Source
from . import KEYWORDS, rules
from . import RE_ENGINE as _re_engine
from . import SCAN as _SCAN
from .tables import THROUGHPUT, TRAIN_METRICS

#: files at least this large are scanned by WORKERS forked processes, each over a range of lines
PARALLEL_BYTES = 128 << 20
WORKERS = min(2, os.cpu_count() or 1)
#: ranges of a parallel scan are at most about this large (a multiple of WORKERS of them,
#: so the workers stay evenly loaded): each finished range moves the progress bar
RANGE_BYTES = 64 << 20
#: how far to look for a line or segment boundary before giving up (very long lines)
WINDOW = 1 << 16
#: recognisers see at most this much text either side of the keyword (bounds regex work)
MAX_SEGMENT = 1 << 13
_COUNT_CHUNK = 1 << 20
_NP_COUNT_MIN = 1 << 12
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-Za-z]")
_PREFIX = re.compile(
    r"^\s*(?:(?P<srun>\d{1,6}): "
    r"|\[(?P<job>\d+),(?P<rank>\d+)\]<std(?:out|err|diag)>:"
    r"|\[(?P<role>[A-Za-z_]+\d+)\]:"
    r"|\[(?P<bare>\d{1,6})\]\s)"
)
#: the keywords again, for text already decoded (one tqdm update at a time)
_SCAN_TEXT = re.compile("|".join(k.decode() for k in KEYWORDS))
_PREFIX_START = frozenset(" \t[0123456789")
_TAG_ANYWHERE = re.compile(r"\[\d+,(\d+)\]<std(?:out|err|diag)>:")


def parse(source: Source, *, engine: str = "auto") -> ParseResult:
    """Parse one training log into ``throughput`` and ``train_metrics``.

    ``engine``: "fast" (and "auto") reads lines of tqdm updates with the C extension
    (:mod:`.fast`) where it is built (and ``DPTRACE_PURE_PYTHON`` is not set), which
    declines to the Python reader on any line it is unsure of; "general" reads every line
    in Python. Both give the same rows and problems."""
    use_c = engine != "general"
    problems: list[Problem] = []
    with source.buffer(problems) as buf:
        n = len(buf)
        if n >= PARALLEL_BYTES and WORKERS > 1 and "fork" in mp.get_all_start_methods():
            parts = _scan_parallel(buf, source.name, use_c)
        else:
            parts = [_scan_range(buf, source.name, 0, n, last=True, use_c=use_c)]
        tp, tm = _merge(parts, problems)
        _flag_cut_number(buf, source.name, problems)
    tables = {
        "throughput": _finish(tp, source.name, THROUGHPUT, problems),
        "train_metrics": _finish(tm, source.name, TRAIN_METRICS, problems),
    }
    return ParseResult(tables, problems, _variant(tp, tm))


_Part = tuple[pd.DataFrame, pd.DataFrame, list[Problem], int]


def _scan_range(buf: Any, name: str, start: int, end: int, last: bool,
                use_c: bool = True) -> _Part:
    """Scan ``buf[start:end]`` (which starts at a line start) into frames with local line numbers.

    Returns the two frames, the problems, and the number of newlines in the range. When
    the range ends the file without a newline, a number that touches the end is cut short
    (a killed job, a truncated copy): the scan stops before it (see :func:`_cut_number`).
    """
    rows = rules.Rows()
    problems: list[Problem] = []
    if buf.find(b"\0", start, end) < 0:  # one memchr pass; holes of NULs are rare
        stop = _cut_number(buf, start, end) if last else end
        scanner = _Scanner(buf, name, rows, problems, start, stop, eof=end, use_c=use_c)
        scanner.run(last)
        newlines = scanner.newlines
    else:
        newlines = _scan_around_holes(buf, name, rows, problems, start, end, last, use_c)
    tp = pd.DataFrame.from_records(rows.tp, columns=rules.TP_COLS)
    tm = pd.DataFrame.from_records(rows.tm, columns=rules.TM_COLS)
    tp, tm = _collapse_tqdm_repeats(tp, tm)  # in the worker; _merge checks the boundaries
    return tp, tm, problems, newlines


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
                       start: int, end: int, last: bool, use_c: bool = True) -> int:
    """Scan the text between the holes of NUL bytes in ``buf[start:end]`` and flag each hole.

    A hole is data the file lost (a node crashed while writing; Lustre pads such a file
    with zeros). The text before a hole is read up to it (a number it cuts is dropped, as
    at the end of a file); the rest of the line after it is not read: its start, with the
    launcher prefix and the key of any number on it, is lost. Returns the range's newlines.
    """
    found: list[Problem] = []  # the pieces' own problems: the first of each kind is kept
    line, pos = 1, start
    holes = _holes(buf, start, end)
    for k, (lo, hi, nuls) in enumerate(holes):
        scanner = _Scanner(buf, name, rows, found, pos, _cut_number(buf, pos, lo), line=line,
                           use_c=use_c)
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
        scanner = _Scanner(buf, name, rows, found, pos,
                           _cut_number(buf, pos, end) if last else end, line=line, eof=end,
                           use_c=use_c)
        scanner.run(last)
        newlines = line - 1 + scanner.newlines
    seen: set[str] = set()
    for p in found:
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


def _scan_forked(bounds: tuple[int, int, bool]) -> _Part:
    assert _FORKED is not None
    return _scan_range(_FORKED[0], _FORKED[1], *bounds, use_c=_FORKED[2])


def _scan_parallel(buf: Any, name: str, use_c: bool = True) -> list[_Part]:
    """Split at line boundaries into ranges (WORKERS of them, or a multiple of WORKERS of at
    most about RANGE_BYTES each), scan them in forked processes; progress is reported as
    the ranges finish, in order."""
    global _FORKED
    n = len(buf)
    ranges = WORKERS * max(1, -(-n // (WORKERS * RANGE_BYTES)))
    cuts = [0]
    for k in range(1, ranges):
        nl = buf.find(b"\n", max(n * k // ranges, cuts[-1]))
        cuts.append(nl + 1 if nl >= 0 else n)
    cuts.append(n)
    bounds = [(cuts[i], cuts[i + 1], i == ranges - 1) for i in range(ranges)]
    _FORKED = (buf, name, use_c)
    parts: list[_Part] = []
    try:
        ctx = mp.get_context("fork")
        with ProcessPoolExecutor(WORKERS, mp_context=ctx) as pool:
            for (_, end, _), part in zip(bounds, pool.map(_scan_forked, bounds), strict=True):
                parts.append(part)
                progress.advance(end, n)
        return parts
    finally:
        _FORKED = None


def _merge(parts: list[_Part], problems: list[Problem]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Concatenate the ranges' frames, shifting line numbers by the lines before each range.

    Each range's tqdm repeats are already dropped; a bar's first update in a range is also
    dropped when it repeats the bar's last update in the ranges before.
    """
    offset, tps, tms = 0, [], []
    for tp, tm, probs, newlines in parts:
        tp["lineno"] += offset
        tm["lineno"] += offset
        problems.extend(Problem(p.source, p.message, None if p.line is None else p.line + offset,
                                p.severity) for p in probs)
        tps.append(tp)
        tms.append(tm)
        offset += newlines
    if len(parts) == 1:
        return tps[0], tms[0]
    drop = _boundary_repeats(tps)
    tp, tm = pd.concat(tps, ignore_index=True), pd.concat(tms, ignore_index=True)
    if drop:
        tp, tm = tp[~tp["seg"].isin(drop)], tm[~tm["seg"].isin(drop)]
    return tp, tm


_BAR = ["prefix", "label"]


def _boundary_repeats(tps: list[pd.DataFrame]) -> set[int]:
    """Segments whose tqdm update repeats (same count and rate) the last update of its bar
    in an earlier range: the rest of :func:`_collapse_tqdm_repeats` across range cuts."""
    drop: set[int] = set()
    last: pd.DataFrame | None = None
    for tp in tps:
        bar = tp[tp["pattern"] == "tqdm"]
        if bar.empty:
            continue
        groups = bar.groupby(_BAR, sort=False, dropna=False)
        if last is not None:
            first = groups.head(1).merge(last, on=_BAR, suffixes=("", "_before"))
            same = (first["step"] == first["step_before"]) & \
                (first["value"] == first["value_before"])
            drop.update(first.loc[same, "seg"].tolist())
            ends = groups.tail(1)[[*_BAR, "step", "value"]]
            last = pd.concat([last, ends]).drop_duplicates(_BAR, keep="last")
        else:
            last = groups.tail(1)[[*_BAR, "step", "value"]]
    return drop


class _Scanner:
    """One pass over a buffer: find keywords, cut segments, resolve prefixes, run recognisers."""

    def __init__(self, buf: Any, name: str, rows: rules.Rows, problems: list[Problem],
                 start: int, end: int, line: int = 1, eof: int | None = None,
                 use_c: bool = True) -> None:
        """Scan ``buf[start:end]``; ``start`` is the start of line ``line``. ``eof``: where
        the file ends, when the scan stops short of it (before a cut number). ``use_c``:
        try the C reader of tqdm lines (:data:`_FAST`) before the Python one."""
        self.cr_line = _FAST if use_c else None
        self.buf, self.name, self.rows, self.problems = buf, name, rows, problems
        self.start, self.n = start, end
        self.eof = end if eof is None else eof
        self.line0 = line
        self.line, self.counted, self.newlines = line, start, 0
        self.bad_utf8: int | None = None
        self.long_line: int | None = None

    def run(self, last: bool = True) -> None:
        """The hot loop: kept flat, with locals, because dense logs have a hit on every line.

        ``last``: this range ends the file (check the final newline) rather than ending where
        another range starts (count its newlines for the next range's line numbers).
        """
        buf, start, n, rows = self.buf, self.start, self.n, self.rows
        rfind, find = buf.rfind, buf.find
        line, counted, next_free = self.line0, start, start
        hit = _keyword_finder()
        while (pos := hit(buf, next_free, n)) >= 0:
            line += _count_newlines(buf, counted, pos)
            counted = pos
            lo = pos - WINDOW if pos - WINDOW > start else start
            nl = rfind(b"\n", lo, pos)
            line_start = nl + 1 if nl >= 0 else self._long(lo, line, lo > start)
            hi = pos + WINDOW if pos + WINDOW < n else n
            line_end = find(b"\n", pos, hi)
            if line_end < 0:
                line_end = self._long(hi, line, hi < n)
            self.line = line
            if find(b"\r", line_start, line_end) >= 0:  # tqdm: many updates on one line
                next_free = max(self._cr_line(pos, line_start, line_end, line), pos + 1)
                continue
            seg_start, seg_end = line_start, line_end
            prefix, body = self._prefixed_text(pos, line_start, seg_start, seg_end)
            if "per iteration" in body and not body.rstrip().endswith("|"):
                more, seg_end = self._continuation(seg_end)
                body += more
            rows.seg = (prefix, line, seg_start)
            _recognise(body, rows)
            next_free = max(seg_end, pos + 1)
        self.line, self.counted = line, counted
        self._report(last)
        if not last:
            self.newlines = line - self.line0 + _count_newlines(buf, counted, n)

    def _cr_line(self, pos: int, line_start: int, line_end: int, line: int) -> int:
        """All ``\\r``-separated updates of one physical line: decoded once, prefix found once.

        Returns where the scan may go on. A line longer than the look-around window is cut
        at update boundaries, so no update is read in halves.
        """
        buf = self.buf
        whole_start = line_start == self.start or buf[line_start - 1:line_start] == b"\n"
        if not whole_start:
            line_start = buf.find(b"\r", line_start, pos) + 1 or line_start
        if line_end < self.n and buf[line_end:line_end + 1] != b"\n":
            cut = buf.rfind(b"\r", pos, line_end)
            line_end = cut if cut > pos else line_end
        raw = buf[line_start:line_end]
        if self.cr_line is not None and self.cr_line(raw, whole_start, line, line_start,
                                                       self.rows):
            return line_end  # the lines below, in C (_tqdm_fast.c); it declines when unsure
        text = self._decode(raw)
        line_prefix = _split_prefix(text)[0] if whole_start else None
        if "<std" not in text and _tqdm_updates(text, line_prefix, line, line_start, self.rows):
            return line_end
        rows, offset = self.rows, line_start
        whole_update = rules.TQDM_SEGMENT.fullmatch
        for seg in text.split("\r"):
            tq = whole_update(seg) if "[" in seg else None
            if tq is not None:  # the common case, kept cheap: one regex per update
                pre = tq["pre"]
                prefix, desc = _split_prefix(pre) if pre[:1] in _PREFIX_START else (None, pre)
                if prefix is None:
                    prefix = line_prefix if "<std" not in seg else _tag_or(seg, line_prefix)
                rows.seg = (prefix, line, offset)
                rules.tqdm_row(rows, desc, tq["n"], tq)
            elif seg and ("/s]" in seg or "s/it" in seg or _SCAN_TEXT.search(seg)):
                prefix, body = _split_prefix(seg) if seg[:1] in _PREFIX_START else (None, seg)
                if prefix is None:
                    prefix = line_prefix
                    if prefix is None and "<std" in seg:
                        tag = _TAG_ANYWHERE.search(seg)
                        prefix = tag.group(1) if tag else None
                rows.seg = (prefix, line, offset)
                _recognise(body, rows)
            offset += len(seg) + 1
        return line_end

    def _long(self, cut: int, line: int, is_long: bool) -> int:
        """Record a line longer than the look-around window; return where to cut it."""
        if is_long and self.long_line is None:
            self.long_line = line
        return cut

    def _prefixed_text(self, pos: int, line_start: int, seg_start: int, seg_end: int,
                       ) -> tuple[str | None, str]:
        """The launcher instance and the segment's text without the prefix."""
        lo = seg_start if pos - seg_start <= MAX_SEGMENT else pos - MAX_SEGMENT
        hi = seg_end if seg_end - pos <= MAX_SEGMENT else pos + MAX_SEGMENT
        text = self._decode(self.buf[lo:hi])
        prefix, body = _split_prefix(text) if lo == seg_start else (None, text)
        if prefix is None and seg_start != line_start:
            head = self.buf[line_start:min(line_start + 80, pos)]  # may cut a character
            prefix = _split_prefix(head.decode("utf-8", "ignore"))[0]
        if prefix is None and "<std" in text:
            tag = _TAG_ANYWHERE.search(text)
            prefix = tag.group(1) if tag else None
        return prefix, body

    def _continuation(self, end: int) -> tuple[str, int]:
        """Join up to 3 hard-wrapped lines of a Megatron iteration record (BLOOM chronicles)."""
        joined, pos = "", end
        for _ in range(3):
            if pos >= self.n or self.buf[pos:pos + 1] not in (b"\n", b"\r"):
                break
            nxt = self.buf.find(b"\n", pos + 1, min(self.n, pos + 1 + WINDOW))
            nxt = nxt if nxt >= 0 else min(self.n, pos + 1 + WINDOW)
            piece = self._decode(self.buf[pos + 1:nxt]).rstrip("\r")
            if _PREFIX.match(piece) or rules._MEG_ITER.search(piece) or not piece.strip():
                break
            joined, pos = joined + " " + piece.strip(), nxt
            if piece.rstrip().endswith("|"):
                return joined, pos
        return "", end

    def _decode(self, raw: bytes) -> str:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", errors="replace")
            if self.bad_utf8 is None:
                self.bad_utf8 = self.line
        return _ANSI.sub("", text) if "\x1b" in text else text

    def _report(self, last: bool) -> None:
        if self.bad_utf8 is not None:
            self.problems.append(Problem(
                self.name, "bytes that are not UTF-8 (first at this line) were replaced by U+FFFD;"
                " numbers around them were still read", self.bad_utf8))
        if self.long_line is not None:
            self.problems.append(Problem(
                self.name, f"line longer than {WINDOW // 1024} KiB without a newline: "
                "read in windows around each match", self.long_line))
        if last and self.eof > self.start and self.buf[self.eof - 1:self.eof] != b"\n":
            final = self.line + _count_newlines(self.buf, self.counted, self.n)
            self.problems.append(Problem(
                self.name, f"{_NO_NEWLINE} the last line was read as it is and may be cut "
                "short", final))


_NO_NEWLINE = "file does not end with a newline (job killed or file truncated?):"


#: every whole tqdm update of a line: TQDM_SEGMENT anchored at the line start or after a
#: ``\r``. Nothing in TQDM_SEGMENT crosses a ``\r`` and it ends with ``[^\r]*``, so each
#: match is the ``fullmatch`` of one ``\r`` segment, with the same groups
_UPDATES = re.compile(r"(?:^|(?<=\r))" + rules.TQDM_SEGMENT.pattern)
assert tuple(_UPDATES.groupindex) == ("pre", "n", "rate", "scale", "unit", "per", "post")
#: what precedes an update's count -> (its own launcher prefix, bar label, epoch)
_PRE: dict[str, tuple[str | None, str | None, float | None]] = {}
#: (scale, unit, per) of a rate -> (metric, factor, whether the rate is inverted) or None
_UNIT: dict[tuple[str, str, str], tuple[str, float, bool] | None] = {}


def _tqdm_updates(text: str, line_prefix: str | None, line: int, start: int,
                  rows: rules.Rows) -> bool:
    """Rows of a line made of whole tqdm updates only, found with one ``findall``.

    The first ``\r`` segment may instead be text without ``[`` or keywords (an ``srun``
    label before a leading ``\r``), which gives nothing. Gives exactly the rows of
    :func:`rules.tqdm_row` applied update by update; returns False, adding nothing, for any
    other line (the caller then reads it segment by segment).
    """
    found = _UPDATES.findall(text)
    parts = text.split("\r")
    skipped = len(parts) - parts.count("") - len(found)
    if skipped and (skipped > 1 or not parts[0] or "[" in parts[0] or _SCAN_TEXT.search(parts[0])):
        return False
    offsets, offset = [], start
    for part in parts:
        if part:
            offsets.append(offset)
        offset += len(part) + 1
    tp, tm = rows.tp, rows.tm
    for (pre, count, rate, scale, unit, per, post), seg in zip(found, offsets[skipped:],
                                                                strict=True):
        if not rate:  # '?it/s': no rate yet
            continue
        sig = (scale, unit, per)
        kind = _UNIT[sig] if sig in _UNIT else _UNIT.setdefault(sig, rules.rate_unit(*sig))
        if kind is None:
            continue
        metric, factor, inverse = kind
        value = float(rate)
        if inverse:
            if value == 0:
                continue
            value = 1.0 / value
        else:
            value *= factor
        info = _PRE.get(pre)
        if info is None:
            info = _pre_info(pre)
        own, label, epoch = info
        prefix = line_prefix if own is None else own
        step = int(count) if count.isdigit() else rules._tqdm_count(count)
        tp.append((prefix, line, seg, "tqdm", "tqdm", metric, value, "instance", step, epoch,
                   label))
        if "=" in post:
            for name, val in rules.postfix_pairs(post):
                tm.append((prefix, line, seg, "tqdm", name, val, step, epoch))
    return True


def _pre_info(pre: str) -> tuple[str | None, str | None, float | None]:
    prefix, desc = _split_prefix(pre) if pre[:1] in _PREFIX_START else (None, pre)
    info = (prefix, *rules._desc_label(desc))
    if len(_PRE) >= 1 << 16:
        _PRE.clear()
    _PRE[pre] = info
    return info


def _load_fast() -> Callable[[bytes, bool, int, int, rules.Rows], bool] | None:
    """The fast path of :meth:`_Scanner._cr_line` in C (``_tqdm_fast.c``), or None.

    ``cr_line(raw, whole_start, line, start, rows)`` decodes the line, finds its launcher
    prefix and adds the very rows :func:`_tqdm_updates` adds, or adds nothing and returns
    False when unsure (or for bytes that are not UTF-8, ANSI escapes, ``<std`` tags); the
    Python code then reads the line. None when the extension was not built (no compiler at
    install) or when the environment sets ``DPTRACE_PURE_PYTHON`` (to anything but ``0`` or
    nothing), read at import.
    """
    if os.environ.get("DPTRACE_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        from . import _tqdm_fast  # type: ignore[attr-defined]
    except ImportError:
        return None
    configure_fast(_tqdm_fast)
    fast: Callable[[bytes, bool, int, int, rules.Rows], bool] = _tqdm_fast.cr_line
    return fast


def configure_fast(module: Any) -> None:
    """Hand the C module the caches and the Python helpers it calls on cache misses, for
    ``1.5k`` counts, postfixes and an unmatched first segment."""
    module.configure(_PRE, _pre_info, _UNIT, rules.rate_unit, rules._tqdm_count,
                     rules.postfix_pairs, _SCAN_TEXT.search)


_FAST = _load_fast()


def _keyword_finder() -> Callable[[Any, int, int], int]:
    """``find(buf, pos, end)``: where the next keyword starts in ``buf[pos:end]``, or -1.

    With google-re2, its matcher is called directly: the Python wrapper around it (a match
    object per hit) costs about as much as the search itself between two nearby hits.
    """
    regexp = getattr(_SCAN, "_regexp", None)
    anchor = getattr(getattr(_re_engine, "_Anchor", None), "UNANCHORED", None)
    if regexp is not None and anchor is not None:
        match = regexp.Match

        def find_re2(buf: Any, pos: int, end: int) -> int:
            return int(match(anchor, buf, pos, end)[0][0])
        return find_re2

    def find(buf: Any, pos: int, end: int) -> int:
        m = _SCAN.search(buf, pos, end)
        return m.start() if m else -1
    return find


def _tag_or(text: str, default: str | None) -> str | None:
    tag = _TAG_ANYWHERE.search(text)
    return tag.group(1) if tag else default


def _split_prefix(text: str) -> tuple[str | None, str]:
    m = _PREFIX.match(text)
    if not m:
        return None, text
    label = m["srun"] or m["rank"] or m["role"] or m["bare"]
    return label, text[m.end():]


def _recognise(body: str, rows: rules.Rows) -> None:
    """The first specific recogniser that knows the segment reads it; else the fallbacks."""
    for guards, recogniser in rules.SPECIFIC:
        for g in guards:
            if g in body:
                if recogniser(body, rows):
                    return
                break
    for guards, fallback in rules.FALLBACK:
        if guards[0] in body:
            fallback(body, rows)


def _count_newlines(buf: Any, start: int, end: int) -> int:
    """Newlines in ``buf[start:end]``. Gaps of a few KB and more are counted by NumPy in
    place (slicing an mmap copies the bytes out first: ~35% slower), in blocks of
    :data:`_COUNT_CHUNK` to bound the temporary mask."""
    if end - start < _NP_COUNT_MIN:
        return int(buf[start:end].count(b"\n"))
    total = 0
    for lo in range(start, end, _COUNT_CHUNK):
        block = np.frombuffer(buf, np.uint8, min(end, lo + _COUNT_CHUNK) - lo, lo)
        total += int(np.count_nonzero(block == 10))
    return total


def _collapse_tqdm_repeats(tp: pd.DataFrame, tm: pd.DataFrame,
                           ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Drop a tqdm update identical (count and rate) to the previous one of the same bar.

    tqdm's close() redraws the last update. A redraw with a different rate is kept: without
    a launcher prefix it cannot be told from another rank's bar on the same line.
    """
    if tp.empty:
        return tp, tm
    bar = tp[tp["pattern"] == "tqdm"]
    if bar.empty:
        return tp, tm
    groups = bar.groupby(["prefix", "label"], sort=False, dropna=False)
    same = (bar["step"] == groups["step"].shift()) & (bar["value"] == groups["value"].shift())
    drop_segs = set(bar.loc[same, "seg"])
    if not drop_segs:
        return tp, tm
    return tp[~tp["seg"].isin(drop_segs)], tm[~tm["seg"].isin(drop_segs)]


_KEY = ("pattern", "name", "label", "metric", "step", "epoch")


def _finish(df: pd.DataFrame, source: str, table: schema.Table, problems: list[Problem],
            ) -> pd.DataFrame:
    """Resolve instances, add the source, and conform to the schema."""
    if df.empty:
        return table.empty()
    df = df.reset_index(drop=True)
    _fit_numbers(df, source, problems)
    key = [c for c in _KEY if c in df]
    order = df.groupby(key, sort=False, dropna=False).cumcount().astype(str)
    df["instance"] = df["prefix"].where(df["prefix"].notna(), order)
    df["source"] = source
    if "label" in df:  # throughput: from the bar label and name, after the rows (C path too)
        df["phase"] = rules.phases(df["name"], df["label"])
    out = schema.conform(df.drop(columns=["prefix", "seg"]), table)
    return out


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
    numeric = pd.to_numeric(step, errors="coerce") if step.dtype == object else step
    bad = (numeric.abs() >= _INT64_END).to_numpy()
    if bad.any():
        if step.dtype == object:  # Python ints: keep those that fit exactly
            df["step"] = pd.array([None if b else v for v, b in zip(step, bad, strict=True)],
                                  dtype="Int64")
        else:
            df["step"] = numeric.where(~bad)
        _bad_rows(df, bad, step, source, problems, "step {} does not fit a 64-bit integer: "
                  "the row is kept, its step is missing", "error")
    epoch = df["epoch"].to_numpy(dtype="float64", na_value=np.nan)
    bad = np.isinf(epoch)
    if bad.any():
        _bad_rows(df, bad, df["epoch"], source, problems, "epoch {} is not a finite number: the"
                  " row is kept, its epoch is missing", "error")
        df["epoch"] = df["epoch"].where(~bad)
    value = df["value"].to_numpy(dtype="float64", na_value=np.nan)
    throughput = "metric" in df
    bad = ~np.isfinite(value) if throughput else np.isinf(value)
    if bad.any():
        _bad_rows(df, bad, df["value"], source, problems,
                  "{name} = {} is not a finite number (too large for a float?): the row is "
                  "kept, its value is missing", "error" if throughput else "warning")
        df["value"] = df["value"].where(~bad)


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
    counts = pd.concat([tp.get("pattern", pd.Series(dtype=object)),
                        tm.get("pattern", pd.Series(dtype=object))]).value_counts()
    names: Sequence[str] = [str(k) for k in counts.index]
    return "+".join(names) or None

"""Training logs: ``slurm-*.out``, per-rank stdout/stderr, and copies of them in docs.

Fills ``throughput`` and ``train_metrics`` (see :mod:`dptrace.schema`). The recognisers,
with the real lines they were written against, are in :mod:`._trainlog_rules`.

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

import re
from collections.abc import Sequence
from typing import Any

import pandas as pd

from .. import schema
from ..errors import Problem
from ..registry import Parser, ParseResult, looks_binary, register
from ..sources import Source
from . import _trainlog_rules as rules

try:  # RE2 finds any of the keywords in one linear pass; stdlib re tries each at every byte
    import re2 as _re_engine
except ImportError:  # pragma: no cover - platforms without google-re2 wheels
    _re_engine = re

KEYWORDS = rules.KEYWORDS
_SCAN = _re_engine.compile(b"|".join(re.escape(k) for k in KEYWORDS))
#: how far to look for a line or segment boundary before giving up (very long lines)
WINDOW = 1 << 16
#: recognisers see at most this much text either side of the keyword (bounds regex work)
MAX_SEGMENT = 1 << 13
_COUNT_CHUNK = 1 << 24
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-Za-z]")
_PREFIX = re.compile(
    r"^\s*(?:(?P<srun>\d{1,6}): "
    r"|\[(?P<job>\d+),(?P<rank>\d+)\]<std(?:out|err|diag)>:"
    r"|\[(?P<role>[A-Za-z_]+\d+)\]:"
    r"|\[(?P<bare>\d{1,6})\]\s)"
)
_TAG_ANYWHERE = re.compile(r"\[\d+,(\d+)\]<std(?:out|err|diag)>:")
_NAME_HINT = re.compile(r"(slurm-\d+.*\.(out|err)|\.log|\.out|\.err|std(out|err))(\.|$)", re.I)


def sniff(source: Source, head: bytes) -> float:
    """Any text can be a training log; throughput keywords or log-like names raise the score."""
    if not head or looks_binary(head):
        return 0.0
    score = 0.6 if _SCAN.search(head) else 0.1
    if _NAME_HINT.search(source.stem_name):
        score += 0.2
    return score


def parse(source: Source) -> ParseResult:
    """Parse one training log into ``throughput`` and ``train_metrics``."""
    collector = rules.Rows()
    problems: list[Problem] = []
    with source.buffer(problems) as buf:
        _Scanner(buf, source.name, collector, problems).run()
    tp = pd.DataFrame(collector.tp)
    tm = pd.DataFrame(collector.tm)
    tp, tm = _collapse_tqdm_repeats(tp, tm)
    tables = {
        "throughput": _finish(tp, source.name, schema.THROUGHPUT),
        "train_metrics": _finish(tm, source.name, schema.TRAIN_METRICS),
    }
    return ParseResult(tables, problems, _variant(tp, tm))


class _Scanner:
    """One pass over a buffer: find keywords, cut segments, resolve prefixes, run recognisers."""

    def __init__(self, buf: Any, name: str, rows: rules.Rows, problems: list[Problem]) -> None:
        self.buf, self.name, self.rows, self.problems = buf, name, rows, problems
        self.n = len(buf)
        self.line, self.counted, self.segno = 1, 0, 0
        self.bad_utf8: int | None = None
        self.long_line: int | None = None

    def run(self) -> None:
        next_free = 0
        for m in _SCAN.finditer(self.buf):
            pos = m.start()
            if pos < next_free:
                continue
            self.line += _count_newlines(self.buf, self.counted, pos)
            self.counted = pos
            next_free = self._segment(pos)
        self._report()

    def _segment(self, pos: int) -> int:
        buf = self.buf
        line_start = self._line_start(pos)
        cr = buf.rfind(b"\r", line_start, pos)
        seg_start = cr + 1 if cr >= 0 else line_start
        seg_end = self._seg_end(pos)
        lo, hi = max(seg_start, pos - MAX_SEGMENT), min(seg_end, pos + MAX_SEGMENT)
        text = self._decode(buf[lo:hi])
        prefix, body = _split_prefix(text) if lo == seg_start else (None, text)
        if prefix is None and seg_start != line_start:
            prefix, _ = _split_prefix(self._decode(buf[line_start:min(line_start + 80, pos)]))
        if prefix is None:
            tag = _TAG_ANYWHERE.search(text)
            prefix = tag.group(1) if tag else None
        if "per iteration" in body and not body.rstrip().endswith("|"):
            more, seg_end = self._continuation(seg_end)
            body += more
        self.rows.seg = (prefix, self.line, self.segno)
        self.segno += 1
        _recognise(body, self.rows)
        return seg_end

    def _line_start(self, pos: int) -> int:
        lo = max(0, pos - WINDOW)
        nl = self.buf.rfind(b"\n", lo, pos)
        if nl >= 0:
            return nl + 1
        if lo > 0 and self.long_line is None:
            self.long_line = self.line
        return lo

    def _seg_end(self, pos: int) -> int:
        hi = min(self.n, pos + WINDOW)
        ends = [e for e in (self.buf.find(b"\n", pos, hi), self.buf.find(b"\r", pos, hi)) if e >= 0]
        if not ends and hi < self.n and self.long_line is None:
            self.long_line = self.line
        return min(ends) if ends else hi

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

    def _report(self) -> None:
        if self.bad_utf8 is not None:
            self.problems.append(Problem(
                self.name, "bytes that are not UTF-8 (first at this line) were replaced by U+FFFD;"
                " numbers around them were still read", self.bad_utf8))
        if self.long_line is not None:
            self.problems.append(Problem(
                self.name, f"line longer than {WINDOW // 1024} KiB without a newline: "
                "read in windows around each match", self.long_line))
        if self.n and self.buf[self.n - 1:self.n] != b"\n":
            last = self.line + _count_newlines(self.buf, self.counted, self.n)
            self.problems.append(Problem(
                self.name, "file does not end with a newline (job killed or file truncated?):"
                " the last line was read as it is and may be cut short", last))


def _split_prefix(text: str) -> tuple[str | None, str]:
    m = _PREFIX.match(text)
    if not m:
        return None, text
    label = m["srun"] or m["rank"] or m["role"] or m["bare"]
    return label, text[m.end():]


def _recognise(body: str, rows: rules.Rows) -> None:
    matched = False
    for recogniser in rules.SPECIFIC:
        matched = recogniser(body, rows) or matched
    if not matched:
        for fallback in rules.FALLBACK:
            fallback(body, rows)


def _count_newlines(buf: Any, start: int, end: int) -> int:
    total = 0
    for lo in range(start, end, _COUNT_CHUNK):
        total += buf[lo:min(end, lo + _COUNT_CHUNK)].count(b"\n")
    return total


def _collapse_tqdm_repeats(tp: pd.DataFrame, tm: pd.DataFrame,
                           ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Drop a tqdm update identical to the previous one of the same bar (tqdm's close() redraw)."""
    if tp.empty:
        return tp, tm
    bar = tp[tp["pattern"] == "tqdm"]
    if bar.empty:
        return tp, tm
    groups = bar.groupby([bar["prefix"].fillna("\0"), bar["label"].fillna("\0")], sort=False)
    same = (bar["step"] == groups["step"].shift()) & (bar["value"] == groups["value"].shift())
    drop_segs = set(bar.loc[same, "seg"])
    if not drop_segs:
        return tp, tm
    return tp[~tp["seg"].isin(drop_segs)], tm[~tm["seg"].isin(drop_segs)]


_KEY = ("pattern", "name", "label", "step", "epoch")


def _finish(df: pd.DataFrame, source: str, table: schema.Table) -> pd.DataFrame:
    """Resolve instances, add the source, and conform to the schema."""
    if df.empty:
        return table.empty()
    df = df.reset_index(drop=True)
    key = [df[c].astype("object").where(df[c].notna(), "\0") for c in _KEY if c in df]
    order = df.groupby(key, sort=False).cumcount().astype(str)
    df["instance"] = df["prefix"].where(df["prefix"].notna(), order)
    df["source"] = source
    out = schema.conform(df.drop(columns=["prefix", "seg"]), table)
    return out


def _variant(tp: pd.DataFrame, tm: pd.DataFrame) -> str | None:
    counts = pd.concat([tp.get("pattern", pd.Series(dtype=object)),
                        tm.get("pattern", pd.Series(dtype=object))]).value_counts()
    names: Sequence[str] = [str(k) for k in counts.index]
    return "+".join(names) or None


register(Parser(
    name="trainlog",
    description="training logs: slurm-*.out, per-rank stdout/stderr (SambaFlow, HF Trainer, "
                "DeepSpeed, Megatron, Horovod benchmarks, Keras, tqdm/Lightning bars)",
    tables=("throughput", "train_metrics"),
    sniff=sniff,
    parse=parse,
    extensions=(".out", ".err", ".log", ".txt"),
))

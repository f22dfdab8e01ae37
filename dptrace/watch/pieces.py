"""Incremental reading: the training-log and NCCL readers fed the complete lines appended to
a file, pass after pass, whose tables equal one read of the whole file so far.

The rule: only what the readers themselves do per range of lines happens at each pass; what
spans the whole file happens again at each snapshot, on rows (never on bytes).

- Training logs (:mod:`dptrace.formats.trainlog.read`): each appended buffer of complete
  lines is scanned as one range (``_scan_range``: what a parallel read does per range of
  lines), its rows kept with local line numbers (a *part*). A snapshot merges the parts
  (``_merge``: line numbers shifted by the lines before each part, the same as a parallel
  read's ranges) and finishes the rows of the whole file (``_finish``: printers, repeats,
  global steps, phases; ``_split_parts``: runs inside one file). The phase of a tqdm bar
  without a description comes from the line before it (``_bars_after_setup_lines``): each
  part is scanned in a buffer that starts with the last line of the part before, so that
  line is there. The parts are compacted into one at each snapshot (rows in columnar
  chunks; bytes are never kept).
- NCCL lines (:mod:`dptrace.formats.nccl.read`): the reader's state (``_Reader``: processes,
  events, lines seen) already spans ranges; each buffer's candidate lines are read into it
  in file order. A snapshot builds the tables from a copy of its processes (building them
  sets ranks that later lines could still change).

These call the readers' module-level functions of a range (underscored: the readers' own
seams for their parallel path); docs/watch.md names the public hook that would replace
them.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .. import schema
from ..errors import Problem
from ..registry import ParseResult

#: formats read incrementally; any other format is read whole once its file stops growing
INCREMENTAL = ("trainlog", "nccl")


def _trainlog() -> Any:
    from ..formats.trainlog import read
    return read


def _nccl() -> Any:
    from ..formats.nccl import read
    return read


@dataclass
class TrainlogState:
    """A training log read so far: rows of its parts, problems, and what spans parts."""

    name: str
    use_fast: bool = True
    #: parts not merged yet: (tp, tm, problems, newlines, headers), local line numbers
    parts: list[Any] = field(default_factory=list)
    #: the parts merged so far (global line numbers), or None
    merged: tuple[pd.DataFrame, pd.DataFrame, list[Any], int] | None = None
    problems: list[Problem] = field(default_factory=list)
    #: phase of bars without a description, by global line (read._bars_after_setup_lines)
    context: dict[int, str] = field(default_factory=dict)
    bare_lines: int = 0
    lines: int = 0
    #: the last complete line fed (the line before the next part's first line)
    prev_line: bytes = b""
    #: the context of the line being written (a snapshot's tail), by global line
    _tail_context: dict[int, str] = field(default_factory=dict)

    def feed(self, data: bytes) -> dict[str, int]:
        """Read ``data``: complete lines (it ends with a newline) that follow those fed. The
        rows found per launcher prefix (the rank that printed them; "" without one)."""
        if not data:
            return {}
        part, _ = self._scan(data, last=False)
        self.parts.append(part)
        self.lines += part[3]
        self.prev_line = _last_line(data, self.prev_line)
        printed: dict[str, int] = {}
        for df in part[:2]:
            if len(df) and "prefix" in df:
                pre = df["prefix"].astype("object").where(df["prefix"].notna(), "")
                for k, n in pre.value_counts(sort=False).items():
                    printed[str(k)] = printed.get(str(k), 0) + int(n)
            elif len(df):
                printed[""] = printed.get("", 0) + len(df)
        return printed

    def _scan(self, data: bytes, last: bool) -> tuple[Any, int]:
        read = _trainlog()
        buf = self.prev_line + data
        start = len(self.prev_line)
        tp, tm, problems, newlines, headers = read._scan_range(
            buf, self.name, start, len(buf), last, use_fast=self.use_fast)
        room = read._MAX_CONTEXT_LINES - self.bare_lines
        bare = read._bare(tp)
        nbare = int(bare["lineno"].nunique()) if len(bare) else 0
        if room > 0 and nbare:
            ctx = read._bars_after_setup_lines(buf, tp)
            keep = set(bare.drop_duplicates("lineno").head(room)["lineno"].tolist())
            if not last:
                self.context.update({int(k) + self.lines: v for k, v in ctx.items() if k in keep})
            else:
                self._tail_context = {int(k) + self.lines: v for k, v in ctx.items()
                                      if k in keep}
        if not last:
            self.bare_lines += nbare
        for df in (tp, tm):
            if "seg" in df:
                del df["seg"]
        return (tp, tm, problems, newlines, headers), nbare

    def _compact(self) -> None:
        """The parts merged into one (rows in one columnar chunk per table)."""
        if not self.parts:
            return
        read = _trainlog()
        parts = list(self.parts)
        self.parts.clear()
        if self.merged is not None:
            tp, tm, headers, newlines = self.merged
            parts.insert(0, (tp, tm, [], newlines, headers))
        total = sum(p[3] for p in parts)
        tp, tm, headers = read._merge(parts, self.problems)
        self.merged = (_numbers_float(_labels_categorical(tp)), _labels_categorical(tm),
                       headers, total)

    def result(self, tail: bytes = b"") -> ParseResult:
        """The tables of everything fed, and of ``tail`` (the start of the line being written,
        up to its last ``\\r``: tqdm updates already complete) as if the file ended there."""
        read = _trainlog()
        from ..formats.trainlog.tables import THROUGHPUT, TRAIN_METRICS

        self._compact()
        parts: list[Any] = []
        if self.merged is not None:
            tp, tm, headers, newlines = self.merged
            parts.append((tp.copy(), tm.copy(), [], newlines, list(headers)))
        context = dict(self.context)
        problems = list(self.problems)
        if tail:
            self._tail_context = {}
            part, _ = self._scan(tail, last=True)
            parts.append(part)
            context.update(self._tail_context)
        if not parts:
            return ParseResult({"throughput": THROUGHPUT.empty(),
                                "train_metrics": TRAIN_METRICS.empty()}, problems, None)
        tp, tm, headers = read._merge(parts, problems)
        variant = read._variant(tp, tm)
        tables = {"throughput": read._finish(tp, self.name, THROUGHPUT, problems, context)}
        del tp
        tables["train_metrics"] = read._finish(tm, self.name, TRAIN_METRICS, problems)
        del tm
        read._split_parts(tables, headers)
        return ParseResult(tables, problems, variant)

    def rows(self) -> int:
        n = sum(len(p[0]) + len(p[1]) for p in self.parts)
        if self.merged is not None:
            n += len(self.merged[0]) + len(self.merged[1])
        return n


#: the label columns of the scanned rows (strings; categorical from the fast route)
_LABELS = ("prefix", "pattern", "name", "metric", "scope", "label")


def _labels_categorical(df: pd.DataFrame) -> pd.DataFrame:
    """The label columns kept as categoricals (sorted categories: what the readers' own
    ``_tidy_categories`` makes): ranges read by the general route give Python strings,
    and their concatenation with categorical ranges gives a column of a string per row
    (~60 bytes a row, against 1-2 for codes)."""
    for col in _LABELS:
        if col in df and not isinstance(df[col].dtype, pd.CategoricalDtype):
            df[col] = pd.Categorical(df[col])
    return df


#: floats hold integers exactly up to here
_EXACT = 2**53


def _numbers_float(tp: pd.DataFrame) -> pd.DataFrame:
    """``step`` and ``epoch`` of the throughput rows as float64, the way the fast route
    holds them, when the general route's Python numbers (an object column: ~32 bytes a row)
    all fit exactly; a step beyond 2**53 keeps the column as it is."""
    import numpy as np

    for col in ("step", "epoch"):
        if col not in tp or tp[col].dtype != object:
            continue
        values = tp[col].to_numpy()
        if all(v is None or (isinstance(v, (int, float, np.integer, np.floating))
                             and not isinstance(v, bool)
                             and (v != v or abs(v) < _EXACT)) for v in values):
            tp[col] = pd.array([np.nan if v is None else float(v) for v in values],
                               dtype="float64")
    return tp


def _last_line(data: bytes, before: bytes) -> bytes:
    """The last complete line of ``before + data`` (``data`` ends with a newline), at most
    one reader window long (the readers look no further back)."""
    from ..formats.trainlog.general import WINDOW

    cut = data.rfind(b"\n", max(0, len(data) - WINDOW - 2), len(data) - 1)
    if cut >= 0:
        return data[cut + 1:]
    return (before + data)[-(WINDOW + 2):]


@dataclass
class NcclState:
    """The NCCL lines of a file read so far: the reader's own state, fed range by range."""

    name: str
    reader: Any = None
    first: int = 1

    def __post_init__(self) -> None:
        self.reader = _nccl()._Reader(self.name)

    def feed(self, data: bytes) -> dict[str, int]:
        """Read ``data``: complete lines that follow those fed."""
        if not data:
            return {}
        read = _nccl()
        found = read._candidates(data, 0, len(data))
        read._read(self.reader, found, self.first)
        self.first += data.count(b"\n")
        return {}

    def result(self, tail: bytes = b"") -> ParseResult:
        """The tables of what was fed (and of ``tail``, a line not finished yet, read in a
        copy of the state), as :func:`dptrace.formats.nccl.read.parse` builds them."""
        read = _nccl()
        from ..formats.nccl.tables import NCCL_ENV, NCCL_EVENTS, NCCL_SETUP
        from ..names import rank_of_path
        from ..numbers import note

        r = self.reader
        if tail:
            r = copy.deepcopy(r)
            read._read(r, read._candidates(tail, 0, len(tail)), self.first)
        problems: list[Problem] = []
        name = self.name
        file_rank = rank_of_path(name)
        procs = read._untorn(copy.deepcopy(list(r.procs.values())))
        if file_rank is not None and len({p.host for p in procs}) <= 1:
            for p in procs:
                if p.rank is None and len(procs) == 1:
                    p.rank, p.rank_from = file_rank[0], "file name"
        if r.torn:
            shown = ", ".join(map(str, r.torn[:read.MAX_NOTED]))
            more = ", ..." if len(r.torn) > read.MAX_NOTED else ""
            problems.append(Problem(
                name, f"{len(r.torn)} NCCL line(s) torn by another writer (another process's "
                f"text inside the message; lines {shown}{more}): skipped", r.torn[0], "error"))
        note(list(r.bad), name, problems)
        setup = [p.row(name, r.version) for p in procs]
        tables = {
            "nccl_setup": schema.from_rows(setup, NCCL_SETUP),
            "nccl_events": schema.from_rows(list(r.events), NCCL_EVENTS),
            "nccl_env": schema.from_rows(list(r.env), NCCL_ENV),
        }
        variant = f"NCCL {r.version}" if r.version else "NCCL (version not printed)"
        return ParseResult(tables, problems, variant)


def state_for(fmt: str, name: str, engine: str = "auto") -> TrainlogState | NcclState:
    """A new incremental state of format ``fmt`` (one of :data:`INCREMENTAL`)."""
    if fmt == "trainlog":
        return TrainlogState(name, use_fast=engine != "general")
    if fmt == "nccl":
        return NcclState(name)
    raise ValueError(f"{fmt} is not read incrementally")

"""Incremental reading: the training-log and NCCL readers fed the complete lines appended to
a file, pass after pass, whose tables equal one read of the whole file so far.

The rule: at each pass, only what the readers themselves do per range of lines, and the
join of that range to the ranges before it; a snapshot costs what was appended, not what was
read (then the ordinary analysis reads every row).

- Training logs (:mod:`dptrace.formats.trainlog.read`): each appended buffer of complete
  lines is scanned as one range (``_scan_range``: what a parallel read does per range of
  lines) in a buffer that starts with the last line fed (the phase of a tqdm bar without a
  description comes from the line before it, ``_bars_after_setup_lines``), finished at once
  (``_finish`` with the join's ``info``, as a parallel read's workers finish their ranges)
  and joined to the ranges before it by :class:`_Join` (line numbers, global steps, repeats
  across the cut), whose state spans the file in a few entries per stream. The finished
  rows are kept as columnar chunks, concatenated into one per table at a snapshot. Where a
  range cannot be finished on its own (:func:`_finishable`), the file is read again and each
  snapshot merges the scanned ranges and finishes the whole file (``_merge``, ``_finish``,
  ``_split_parts``), as one read does.
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
from typing import Any, Literal

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
    """A training log read so far.

    Each appended buffer of complete lines is scanned (a *part*) and, where the reader's
    own per-range finishing applies (what a parallel read's workers do: printers, repeats
    and global steps of the range, with what joining it to the ranges before it needs),
    finished at once and joined to the parts before it by :class:`_Join` (the streams'
    passes and last steps, the end-of-run figures seen, the last line of each global
    series): the rows of a part are final when it is fed. A snapshot concatenates the
    finished chunks (and finishes only the line being written). Where a range cannot be
    finished on its own (:func:`_finishable`: SambaFlow's instances numbered through the
    file, steps not exact as floats, a number that does not fit its column, more bars
    without a description than a file looks at), the file is read again from its start
    (``path``; else the bytes kept) and from then on every snapshot merges the scanned parts
    and finishes the whole file (the rows of the whole file, as one read does)."""

    name: str
    use_fast: bool = True
    #: the file (read again from its start when the file's rows cannot be finished part by
    #: part); None: the bytes fed are kept for that
    path: str | None = None
    #: parts finished as they are fed (False: merged and finished at each snapshot)
    incremental: bool = True
    #: incremental: finished chunks per table (global line numbers, final rows)
    done: dict[str, list[pd.DataFrame]] = field(
        default_factory=lambda: {"throughput": [], "train_metrics": []})
    joins: dict[str, Any] = field(default_factory=dict)
    #: incremental: rows per pattern of each table, in order of first appearance (the
    #: variant)
    counts: dict[str, dict[str, int]] = field(
        default_factory=lambda: {"throughput": {}, "train_metrics": {}})
    headers: list[Any] = field(default_factory=list)
    #: the bytes fed (kept only without a ``path``)
    fed: list[bytes] = field(default_factory=list)
    #: parts not merged yet: (tp, tm, problems, newlines, headers), local line numbers
    parts: list[Any] = field(default_factory=list)
    #: the parts merged so far (global line numbers), or None
    merged: tuple[pd.DataFrame, pd.DataFrame, list[Any], int] | None = None
    problems: list[Problem] = field(default_factory=list)
    #: phase of bars without a description, by global line (read._bars_after_setup_lines)
    context: dict[int, str] = field(default_factory=dict)
    bare_lines: int = 0
    lines: int = 0
    fed_bytes: int = 0
    #: the last complete line fed (the line before the next part's first line)
    prev_line: bytes = b""
    #: the context of the line being written (a snapshot's tail), by global line
    _tail_context: dict[int, str] = field(default_factory=dict)
    #: incremental: the committed throughput rows folded (``throughput.InstanceFold``: the
    #: per-instance figures without the rows), or None before the first
    fold: Any = None
    #: incremental: the few rows of each table a snapshot's job figure and runs table read
    #: besides the fold (:meth:`_keep_reduced`), per table
    reps: dict[str, list[pd.DataFrame]] = field(
        default_factory=lambda: {"throughput": [], "train_metrics": []})
    #: the keys whose first row :attr:`reps` holds, per table
    rep_seen: dict[str, set[tuple]] = field(
        default_factory=lambda: {"throughput": set(), "train_metrics": set()})
    #: incremental: the first line of a training row per printer (``read._split_parts``'
    #: rows: whether a run header splits the file, :func:`_splits`)
    first_train: dict[Any, int] = field(default_factory=dict)

    def feed(self, data: bytes) -> dict[str, int]:
        """Read ``data``: complete lines (it ends with a newline) that follow those fed. The
        rows found per launcher prefix (the rank that printed them; "" without one)."""
        if not data:
            return {}
        part, ctx = self._scan(data, last=False)
        printed = _printed_by(part)
        if self.incremental:
            if not self._finish_part(part, ctx, commit=True):
                self._whole_file_from_now(data)
                return printed
            if self.path is None:
                self.fed.append(data)
        else:
            self.parts.append(part)
        self.lines += part[3]
        self.fed_bytes += len(data)
        self.prev_line = _last_line(data, self.prev_line)
        return printed

    def _scan(self, data: bytes, last: bool) -> tuple[Any, dict[int, str]]:
        """``data`` scanned (after the last line fed, which the readers look back at), and
        the phases of its bars without a description, by local line."""
        read = _trainlog()
        buf = self.prev_line + data
        start = len(self.prev_line)
        tp, tm, problems, newlines, headers = read._scan_range(
            buf, self.name, start, len(buf), last, use_fast=self.use_fast)
        room = read._MAX_CONTEXT_LINES - self.bare_lines
        bare = read._bare(tp)
        nbare = int(bare["lineno"].nunique()) if len(bare) else 0
        local: dict[int, str] = {}
        if room > 0 and nbare:
            ctx = read._bars_after_setup_lines(buf, tp)
            keep = set(bare.drop_duplicates("lineno").head(room)["lineno"].tolist())
            local = {int(k): v for k, v in ctx.items() if k in keep}
            if not last:
                self.context.update({k + self.lines: v for k, v in local.items()})
            else:
                self._tail_context = {k + self.lines: v for k, v in local.items()}
        if not last:
            self.bare_lines += nbare
        for df in (tp, tm):
            if "seg" in df:
                del df["seg"]
        return (tp, tm, problems, newlines, headers), local

    # --- finished part by part -------------------------------------------------------------

    def _finish_part(self, part: Any, context: dict[int, str], commit: bool,
                     ) -> dict[str, Any] | None:
        """The part's tables finished and joined to the parts before it (kept when
        ``commit``; else returned with its problems, headers and pattern counts: the line
        being written). None when the part cannot be finished on its own."""
        read = _trainlog()
        from ..formats.trainlog.tables import THROUGHPUT, TRAIN_METRICS

        tp, tm, probs, newlines, heads = part
        tp, tm = _numbers_float(_labels_categorical(tp)), _numbers_float(_labels_categorical(tm))
        if not _finishable(self.name, tp, tm):
            return None
        found: list[Problem] = []
        for df in (tp, tm):
            if len(df):
                read._fit_numbers(df, self.name, found)
        if found:
            return None
        tp, tm = read._tidy_categories(tp), read._tidy_categories(tm)
        out: dict[str, Any] = {}
        for table, df, spec, ctx in (("throughput", tp, THROUGHPUT, context),
                                     ("train_metrics", tm, TRAIN_METRICS, None)):
            info: dict[str, Any] = {}
            fin = read._finish(df, self.name, spec, found, ctx, info=info, fitted=True)
            join = self.joins.setdefault(table, _Join())
            out[table] = join.add(fin, info, self.lines, commit)
        del tp, tm
        if found:
            return None
        counts = {t: read._pattern_counts(df) for t, df in out.items()}
        problems = [Problem(p.source, p.message, None if p.line is None else p.line + self.lines,
                            p.severity) for p in probs]
        headers = [(pre, line + self.lines, kind) for pre, line, kind in heads]
        if not commit:
            return {"tables": out, "problems": problems, "headers": headers, "counts": counts}
        for table, df in out.items():
            if len(df):
                self.done[table].append(df)
        self._keep_reduced(out)
        for table in out:
            seen = self.counts[table]
            for pattern, k in counts[table]:
                seen[pattern] = seen.get(pattern, 0) + k
        self.problems.extend(problems)
        self.headers.extend(headers)
        return out

    def _whole_file_from_now(self, current: bytes = b"") -> None:
        """The file's rows cannot be finished part by part: read it again from its start
        (and ``current``, the lines being fed) into parts merged and finished at each
        snapshot."""
        fed = b"".join(self.fed) if self.path is None else None
        size = self.fed_bytes
        self.incremental = False
        self.fold = None
        self.first_train = {}
        self.reps = {"throughput": [], "train_metrics": []}
        self.rep_seen = {"throughput": set(), "train_metrics": set()}
        self.done = {"throughput": [], "train_metrics": []}
        self.joins.clear()
        self.counts = {"throughput": {}, "train_metrics": {}}
        self.headers.clear()
        self.fed.clear()
        self.problems, self.context, self.parts, self.merged = [], {}, [], None
        self.bare_lines = self.lines = self.fed_bytes = 0
        self.prev_line = b""
        if fed is not None:
            chunks: Any = [fed] if fed else []
        else:
            from .follow import _chunks
            chunks = _chunks(self.path, 0, size)
        for chunk in chunks:
            self.feed(chunk)
        self.feed(current)

    def _tail_part(self, tail: bytes) -> dict[str, Any] | None | Literal[False]:
        """The line being written (``tail``) finished against the parts before it, not
        kept (:meth:`_finish_part`); None for no tail, False when it cannot be finished on
        its own."""
        if not tail:
            return None
        self._tail_context = {}
        part, ctx = self._scan(tail, last=True)
        extra = self._finish_part(part, ctx, commit=False)
        return False if extra is None else extra

    def _joined(self, tail: bytes) -> ParseResult | None:
        """The tables of the finished chunks (concatenated into one each, kept so), and of
        ``tail`` finished against them; None when ``tail`` cannot be finished on its own."""
        read = _trainlog()
        from ..formats.trainlog.tables import THROUGHPUT, TRAIN_METRICS

        extra = self._tail_part(tail)
        if extra is False:
            return None
        tables: dict[str, pd.DataFrame] = {}
        for table, spec in (("throughput", THROUGHPUT), ("train_metrics", TRAIN_METRICS)):
            chunks = self.done[table]
            if len(chunks) > 1:
                chunks[:] = [_concat(chunks, table)]
            # (shallow copies: the concatenation takes the columns out of its frames)
            frames = [df.copy(deep=False) for df in chunks]
            if extra is not None and len(extra["tables"][table]):
                frames.append(extra["tables"][table])
            # one frame: the kept chunk's columns, not a copy of them (the loader's steps and
            # the analysis put new columns in: runs, part; they never write into one)
            tables[table] = _concat(frames, table) if frames else spec.empty()
        problems, variant = self._meta(extra)
        headers = list(self.headers) + (extra["headers"] if extra is not None else [])
        read._split_parts(tables, headers)
        return ParseResult(tables, problems, variant)

    # --- what a refresh's job figure reads: the fold and a few rows ------------------------

    def _keep_reduced(self, out: dict[str, pd.DataFrame]) -> None:
        """A committed part's rows folded (:attr:`fold`) and those of them a snapshot's
        reduced tables keep (:func:`reduced_rows`)."""
        from ..formats.trainlog import throughput as thr

        if self.fold is None:
            self.fold = thr.InstanceFold()
        for table, df in out.items():
            if not len(df):
                continue
            if table == "throughput":
                self.fold.add(df)
            _first_training(table, df, self.first_train)
            keep = reduced_rows(table, df, self.rep_seen[table], self.fold)
            if keep.any():
                self.reps[table].append(df[keep])
            if len(self.reps[table]) > 64:   # (few rows each: one frame now and then)
                self.reps[table][:] = [_concat(self.reps[table], table)]

    def reduced(self, tail: bytes = b"") -> tuple[ParseResult, Any, dict[str, int]] | None:
        """What a refresh's job figure reads of the file (the tables :meth:`result` gives, but
        only the rows :func:`reduced_rows` keeps; and the line being written, ``tail``,
        whole), the fold of the throughput rows with ``tail``'s folded in (a branch: the
        fold itself is left as it is), and the rows :meth:`result` would give per table.
        None when the file is not read part by part, names several runs (run headers: a
        later one may move earlier rows to another run), or the fold cannot give the
        figures (an instance's lines going back)."""
        from ..formats.trainlog import throughput as thr
        from ..formats.trainlog.tables import THROUGHPUT, TRAIN_METRICS

        if not self.incremental:
            return None
        extra = self._tail_part(tail)
        if extra is False:
            return None
        headers = list(self.headers) + (extra["headers"] if extra is not None else [])
        if headers:
            firsts = dict(self.first_train)
            for table, df in (extra["tables"].items() if extra is not None else ()):
                _first_training(table, df, firsts)
            if _splits(headers, firsts):
                return None
        fold = self.fold if self.fold is not None else thr.InstanceFold()
        tables: dict[str, pd.DataFrame] = {}
        full: dict[str, int] = {}
        for table, spec in (("throughput", THROUGHPUT), ("train_metrics", TRAIN_METRICS)):
            # (shallow copies: the concatenation takes the columns out of its frames)
            frames = [df.copy(deep=False) for df in self.reps[table]]
            full[table] = sum(len(df) for df in self.done[table])
            more = extra["tables"][table] if extra is not None else None
            if more is not None and len(more):
                frames.append(more)
                full[table] += len(more)
                if table == "throughput":
                    fold = fold.branch()
                    fold.add(more, copy=True)
            tables[table] = schema.conform(_concat(frames, table), spec) if frames \
                else spec.empty()
        if not fold.ok:
            return None
        problems, variant = self._meta(extra)
        return ParseResult(tables, problems, variant), fold, full

    def _meta(self, extra: dict[str, Any] | None) -> tuple[list[Problem], str | None]:
        """The problems and the variant (as ``read._variant`` counts them: throughput's
        patterns first, then train_metrics') of the parts committed and ``extra``."""
        counts: dict[str, int] = {}
        for table in ("throughput", "train_metrics"):
            per = dict(self.counts[table])
            for pattern, k in (extra["counts"][table] if extra is not None else ()):
                per[pattern] = per.get(pattern, 0) + k
            for pattern, k in per.items():
                counts[pattern] = counts.get(pattern, 0) + k
        problems = list(self.problems) + (extra["problems"] if extra is not None else [])
        return problems, "+".join(sorted(counts, key=lambda k: -counts[k])) or None

    # --- merged and finished at each snapshot ----------------------------------------------

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
        if self.incremental:
            got = self._joined(tail)
            if got is not None:
                return got
            self._whole_file_from_now()
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
        n = sum(len(df) for chunks in self.done.values() for df in chunks)
        n += sum(len(p[0]) + len(p[1]) for p in self.parts)
        if self.merged is not None:
            n += len(self.merged[0]) + len(self.merged[1])
        return n


#: the columns whose every distinct combination keeps its first row in the reduced tables
#: (what the runs table's facts, the job figure's inputs and series look at)
_REDUCED_KEYS = {
    "throughput": ["source", "instance", "rank", "pattern", "name", "label", "metric",
                   "scope", "phase", "repeat", "part"],
    "train_metrics": ["source", "instance", "rank", "pattern", "name", "repeat", "part"],
}
#: train_metrics names whose first row of each value is kept (a run's stated world size and
#: device count, the +- range printed beside a Horovod total)
_VALUE_NAMES = ("world_size", "devices", "total_img_sec_ci")
#: train_metrics names whose every row is kept (the step times the job figure averages, the
#: running average it takes the last of)
_ALL_NAMES = ("step_time_s", "step_time_avg_s")


def reduced_rows(table: str, df: pd.DataFrame, seen: set[tuple], fold: Any) -> Any:
    """Which rows of ``df`` (a committed part of ``table``, rows that follow those seen) a
    refresh keeps for its job figure and runs table instead of every row: the first row of
    each distinct combination of :data:`_REDUCED_KEYS` (``seen``: those kept before; it
    learns this part's), so each (series, instance) has its first row and every fact the
    runs table reads of a column's distinct values is there; the first row of each value of
    :data:`_VALUE_NAMES` (the first statement of a world size, by line, is among them);
    every row of :data:`_ALL_NAMES`; and every row of a throughput series without a step so
    far (``fold``: whose series have one), whose rows the job figure reads (an end-of-run
    figure's copies). The rows kept keep their order, so firsts stay first."""
    import numpy as np

    from ..formats.trainlog import throughput as thr

    keep = _firsts(df, _REDUCED_KEYS[table], seen, "")
    if table == "train_metrics":
        name = df["name"].astype("object")
        valued = name.isin(_VALUE_NAMES).to_numpy(dtype=bool)
        if valued.any():
            pos = np.flatnonzero(valued)
            sub = df.iloc[pos]
            keep[pos[_firsts(sub, [*_REDUCED_KEYS[table], "value"], seen, "value")]] = True
        keep |= name.isin(_ALL_NAMES).to_numpy(dtype=bool)
        return keep
    rows = thr.phased(df)   # (the rows without repeats, in order, a phase on each)
    at = (np.flatnonzero(~df["repeat"].fillna(False).to_numpy(dtype=bool))
          if len(rows) < len(df) else np.arange(len(df)))
    if len(rows):
        cols = thr.SERIES
        ids = thr.group_ids(rows, cols)
        first = schema.first_rows(ids)
        keys = thr.fold_keys(rows, cols, first)
        unstepped = np.array([fold.series.get(k, 0) == 0 for k in keys], dtype=bool)
        if unstepped.any():
            keep[at[unstepped[ids]]] = True
    return keep


def _first_training(table: str, df: pd.DataFrame, firsts: dict[Any, int]) -> None:
    """``firsts`` (the first line of a training row per printer, the instance; None without
    one) learns ``df``'s, the rows ``read._split_parts`` counts as training: throughput of
    the train phase, metrics but the job's shape, no repeats."""
    import numpy as np

    from ..formats.trainlog.read import _SHAPE_METRICS

    if not len(df):
        return
    keep = ~df["repeat"].fillna(False).to_numpy(dtype=bool)
    if table == "throughput":
        keep &= (df["phase"] == "train").fillna(False).to_numpy(dtype=bool)
    else:
        keep &= ~df["name"].isin(_SHAPE_METRICS).to_numpy(dtype=bool)
    if not keep.any():
        return
    sub = pd.DataFrame({"p": df["instance"].astype("object").to_numpy()[keep],
                        "l": df["lineno"].to_numpy(dtype="int64", na_value=0)[keep]})
    for printer, line in sub.groupby("p", dropna=False, sort=False)["l"].min().items():
        key = None if printer is None or printer != printer else printer
        firsts[key] = min(int(line), firsts.get(key, np.iinfo(np.int64).max))


def _splits(headers: list[Any], firsts: dict[Any, int]) -> bool:
    """Whether a run header splits the file (``instances.part_starts`` finds a start: a
    header after training rows, of its printer or, for a printer with none, of any),
    from the first training line per printer (``firsts``) instead of every row."""
    if not firsts:
        return False
    earliest = min(firsts.values())
    for prefix, line, _kind in headers:
        if prefix is not None and prefix in firsts:
            if firsts[prefix] < line:
                return True
        elif earliest < line:
            return True
    return False


def _firsts(df: pd.DataFrame, cols: list[str], seen: set[tuple], tag: str) -> Any:
    """The rows of ``df`` that are the first of their combination of ``cols`` (those it
    has) not in ``seen``; ``seen`` learns them (tagged ``tag``)."""
    import numpy as np

    from ..formats.trainlog import throughput as thr

    cols = [c for c in cols if c in df]
    ids = thr.group_ids(df, cols)
    first = schema.first_rows(ids)
    keep = np.zeros(len(df), dtype=bool)
    for pos, key in zip(first.tolist(), thr.fold_keys(df, cols, first), strict=True):
        key = (tag, *key)
        if key not in seen:
            seen.add(key)
            keep[pos] = True
    return keep


def _concat(frames: list[pd.DataFrame], table: str) -> pd.DataFrame:
    """Frames of one table's rows, in order, as one (the readers' own concatenation)."""
    from ..formats.trainlog.tables import THROUGHPUT, TRAIN_METRICS

    if len(frames) == 1:
        return frames[0]
    read = _trainlog()
    spec = THROUGHPUT if table == "throughput" else TRAIN_METRICS
    return schema.conform(read._concat_columns(list(frames)), spec)


def _printed_by(part: Any) -> dict[str, int]:
    """The rows of a scanned part per launcher prefix ("" without one)."""
    printed: dict[str, int] = {}
    for df in part[:2]:
        if len(df) and "prefix" in df:
            pre = df["prefix"].astype("object").where(df["prefix"].notna(), "")
            for k, n in pre.value_counts(sort=False).items():
                printed[str(k)] = printed.get(str(k), 0) + int(n)
        elif len(df):
            printed[""] = printed.get("", 0) + len(df)
    return printed


def _finishable(name: str, tp: pd.DataFrame, tm: pd.DataFrame) -> bool:
    """Whether a part's rows are final once finished on their own and joined
    (:class:`_Join`): the reader's rule (:func:`~dptrace.formats.trainlog.read.finishable_alone`).
    A per-rank file's rank (from its name) is the same in every part, so unlike a parallel
    read's ranges a per-rank file's parts are finished alone too."""
    from ..formats.trainlog.read import finishable_alone

    return finishable_alone(tp, tm)


class _Join:
    """One table's parts joined as they come: a
    :class:`dptrace.formats.trainlog.instances.StreamJoin` kept across passes (what
    :func:`~dptrace.formats.trainlog.instances.join_streams` folds a parallel read's
    ranges through: per stream key its completed passes, last step and epoch; the
    end-of-run global figures seen; each global series's last row), applied to the part's
    rows: line numbers of the file, global steps, repeats across the cut. The parts before
    are never looked at again."""

    def __init__(self) -> None:
        from ..formats.trainlog import instances

        self.join = instances.StreamJoin()

    def add(self, df: pd.DataFrame, info: dict[str, Any], lines_before: int,
            commit: bool) -> pd.DataFrame:
        """``df`` (a part's finished table, local line numbers, ``info`` from its finishing)
        as rows of the whole file: line numbers shifted, global steps, repeats across the
        cut. ``commit``: the join takes the part in (else: the line being written, looked
        at and forgotten)."""
        import numpy as np

        if not len(df):
            return df
        stream = info.get("stream")
        df["lineno"] = df["lineno"] + lines_before
        off, repeat = self.join.add(info, lines_before, commit)
        if stream is not None and off.any():
            add = off.astype(np.int64)[stream]
            add[(df["epoch"].isna() | df["step"].isna()).to_numpy()] = 0
            df["step"] = df["step"] + add
        if len(repeat):
            flags = df["repeat"].to_numpy(dtype=bool, copy=True)
            flags[repeat] = True
            df["repeat"] = flags
        return df


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
        found = read._candidates(tail, 0, len(tail)) if tail else None
        if found is not None and len(found.ids):
            # (a copy of the reader only for a tail with NCCL lines: the reader holds every
            # distinct line read, and a tqdm bar being redrawn is a tail at most refreshes)
            r = copy.deepcopy(r)
            read._read(r, found, self.first)
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


def state_for(fmt: str, name: str, engine: str = "auto",
              path: str | None = None) -> TrainlogState | NcclState:
    """A new incremental state of format ``fmt`` (one of :data:`INCREMENTAL`) of the file
    at ``path`` (shown as ``name``)."""
    if fmt == "trainlog":
        return TrainlogState(name, use_fast=engine != "general", path=path)
    if fmt == "nccl":
        return NcclState(name)
    raise ValueError(f"{fmt} is not read incrementally")

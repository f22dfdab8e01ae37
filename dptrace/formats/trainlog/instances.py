"""Who printed each row, which rows repeat another, where steps restart, where runs start.

Run once per file on the finished rows of both tables (:func:`resolve`), vectorised: a dense
log has millions of rows and a handful of distinct printers, patterns and labels, so every
key is reduced to integer codes first (:func:`dptrace.schema.combined_codes`).

- **Printer** (``instance``, ``rank``): the launcher prefix (``3: ``, ``[1,3]<stdout>:``,
  ``[rank3]:``, ``[default3]:``), else the rank a per-rank file's path gives
  (:func:`dptrace.names.rank_of_path`), else unknown (null). SambaFlow's ``e2e
  samples_per_sec`` lines are the one documented exception: one line per SambaNova
  instance, so the k-th such line of a file is instance ``k``.
- **Repeats** (``repeat``): a row of the same kind (pattern, name, label, metric, epoch)
  from the same printer at the same step as an earlier row of its pass (tqdm's close()
  redraws the last count with the whole-bar average rate; Lightning writes each step twice;
  several ranks printing one rank's line without a prefix). A global end-of-run figure
  printed without a step (:data:`COPY_PATTERNS`) repeats an earlier copy with the same value
  (each rank printing HF's ``train_samples_per_second``). Any other global figure without a
  step is a series printed every N steps (DeepSpeed-Chat's ``|E2E latency=3.91s |...
  |CurSamplesPerSec=16.35 |AvgSamplesPerSec=12.28``, one line per step): equal values are
  no copies, and a line repeats only when it is printed again at once, all its figures
  equal to the line right before it. Repeats stay in the table, flagged; analyses skip them.
- **Passes and steps**: a printer's series whose step goes down has restarted (a progress
  bar per epoch, or, without a launcher prefix, another rank's bar); where the rows give
  their epoch (``Epoch 3`` in a bar's label), ``step`` becomes the global step (the steps
  of the earlier epochs added), so that a per-step chart and the warm-up follow the whole
  run, not each epoch's first steps. A restart without an epoch keeps its printed steps.
- **Parts** (``part``): runs inside one file. A run header (``***** Running training
  *****``, a Horovod benchmark's ``Number of GPUs``, ...) starts a new part when training
  figures of its printer (any printer, when it has none) came since the previous part
  began. The loader makes each part after the first a run of its own.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ... import schema
from ...names import rank_of_path

#: patterns whose repeated lines are distinct instances by documentation
INSTANCE_PATTERNS = frozenset({"sambaflow"})
#: patterns whose global figures without a step are printed once per printer at the end of a
#: run (HF Trainer's dict and metrics table, the transformers hook, Horovod's Total img/sec,
#: TF's final stats dict): a later copy with the same value is the same figure again
#: (:data:`dptrace.formats.trainlog.job.END_OF_RUN_PATTERNS`, which the analysis cannot import from
#: here). Other global figures without a step are a series printed every N steps
COPY_PATTERNS = frozenset({"hf_trainer", "hf_metrics_table", "transformers_hook",
                           "horovod_benchmark", "py_dict"})

def shown(instance: object) -> str:
    """An instance as reports show it: '?' when no prefix or path said who printed the line."""
    return "?" if instance is None or pd.isna(instance) else str(instance)


def _dense(codes: np.ndarray) -> np.ndarray:
    """``codes`` (non-negative) renumbered 0..k-1 in the order of their values, in the
    smallest unsigned dtype that holds them: the order of the rows by these numbers is the
    order by ``codes``, and a stable sort of 8 or 16 bits is a radix sort (linear), which a
    dense log's streams fit (a few printers times a few kinds of line)."""
    if not len(codes):
        return codes
    top = int(codes.max())
    if top <= 4 * len(codes) + 4096:  # a table of every possible code: no sort, no hash
        present = np.zeros(top + 1, dtype=bool)
        present[codes] = True
        remap = np.cumsum(present, dtype=np.int64) - 1
        return remap.astype(_uint_for(int(remap[-1]) + 1))[codes]
    uniques, inverse = np.unique(codes, return_inverse=True)
    return inverse.reshape(-1).astype(_uint_for(len(uniques)))


def _uint_for(k: int) -> type:
    """The smallest unsigned integer dtype that holds 0..k-1."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if k <= np.iinfo(dtype).max + 1:
            return dtype
    return np.uint64


def _floats(s: pd.Series) -> np.ndarray:
    """A column as float64 with NaN for missing; float64 columns as they are (no copy)."""
    if isinstance(s.dtype, np.dtype) and s.dtype == np.float64:
        return s.to_numpy()
    if pd.api.types.is_numeric_dtype(s.dtype):
        return s.to_numpy(dtype="float64", na_value=np.nan)
    return pd.to_numeric(s, errors="coerce").to_numpy(dtype="float64", na_value=np.nan)


def printers(df: pd.DataFrame, source: str) -> tuple[pd.Series, pd.Series]:
    """(instance, rank) of each row: the launcher prefix, else the file's rank, else null;
    SambaFlow's k-th line of a kind is instance k (documented instances). A categorical
    ``prefix`` (the fast engine's) stays categorical: dense logs have millions of rows and
    a handful of prefixes."""
    instance, prefix = printer_and_prefix(df, source)
    return instance, prefix_rank(prefix)


def printer_and_prefix(df: pd.DataFrame, source: str) -> tuple[pd.Series, pd.Series]:
    """(instance, the prefix with the file's rank where there is none) of each row: what
    :func:`printers` gives, the rank left to :func:`prefix_rank` (a reader of millions of
    rows makes that column when it needs it)."""
    prefix = df["prefix"]
    found = rank_of_path(source)
    documented = schema.isin(df["pattern"], INSTANCE_PATTERNS) & prefix.isna().to_numpy()
    if isinstance(prefix.dtype, pd.CategoricalDtype) and not documented.any():
        if found is not None and prefix.isna().any():
            label = str(found[0])
            if label not in prefix.cat.categories:
                prefix = prefix.cat.add_categories([label])
            prefix = prefix.fillna(label)
        return prefix, prefix
    prefix = prefix.astype("object")
    if found is not None:
        prefix = prefix.where(prefix.notna(), str(found[0]))
    instance = prefix.copy()
    if documented.any():
        sub = df.loc[documented]
        cols = [c for c in ("pattern", "name", "label", "metric", "step", "epoch") if c in sub]
        order = sub.groupby(cols, sort=False, dropna=False, observed=True).cumcount()
        instance.loc[documented] = order.astype(str).to_numpy()
    return instance, prefix


def prefix_rank(prefix: pd.Series) -> pd.Series:
    """The rank a launcher prefix gives: srun's ``3``, mpirun's ``[1,3]`` -> ``3``, a bare
    ``[3]``, ``[rank3]:``; a torchrun role (``default3``: the local rank) and no prefix give
    null. Each distinct prefix is looked at once."""
    codes, uniques = schema.factorize(prefix)
    return pd.Series(ranks_by_code(codes, uniques), index=prefix.index)


def ranks_by_code(codes: np.ndarray, prefixes: Sequence[object]) -> pd.arrays.IntegerArray:
    """:func:`prefix_rank` of the rows whose ``codes`` index ``prefixes`` (-1: no prefix),
    each distinct prefix looked at once."""
    ranks = [rank_of_prefix(p) for p in prefixes] + [None]
    values = np.array([0 if r is None else r for r in ranks], dtype=np.int64)
    missing = np.array([r is None for r in ranks], dtype=bool)
    return pd.arrays.IntegerArray(schema.lookup(values, codes), schema.lookup(missing, codes))


def rank_of_prefix(prefix: object) -> int | None:
    """:func:`prefix_rank` of one prefix (the digits the scan kept of it), else None."""
    return int(prefix) if isinstance(prefix, str) and prefix.isdigit() and len(prefix) <= 9 \
        else None


def steps_and_repeats(df: pd.DataFrame, instance: pd.Series, info: dict | None = None,
                      group: np.ndarray | None = None) -> tuple[pd.Series, np.ndarray]:
    """(step, repeat) of each row (see the module's docstring); ``df`` in file order.

    Linear in the rows (they are millions in dense logs): the rows of each stream (kind and
    printer) are put together in file order with a radix sort (:func:`_dense`), then
    every rule compares a row with the one before it in its stream. A pass (a restart of the
    stream's count) is a run of rows between two places where the step goes down.

    ``info``: when given (a range of a file scanned in parallel), filled with what joining
    this range to the ranges before it needs (:func:`join_streams`): each row's stream, each
    stream's key, and per stream with steps its first and last rows and the steps of its
    completed passes; the global figures without a step.

    ``group``: the rows of several files at once (each row's file, non-decreasing): every
    stream is one file's, and lines are compared within a file only; each file's rows get
    what they get on their own."""
    n = len(df)
    repeat = np.zeros(n, dtype=bool)
    step = df["step"]
    if n == 0:
        return step, repeat
    kind_cols = [c for c in ("pattern", "name", "label", "metric") if c in df]
    columns = [df[c] for c in kind_cols] + [instance]
    keyed = columns if group is None else [*columns, pd.Series(group, index=df.index)]
    stream = _dense(schema.combined_codes(keyed))
    if info is not None:
        info["stream"] = stream
        info["keys"] = _stream_keys(stream, columns)
        info["streams"] = None
        info["glob"] = None
    documented = schema.isin(df["pattern"], INSTANCE_PATTERNS)
    step_f = _floats(step)
    stepped = ~np.isnan(step_f)
    epoch = _floats(df["epoch"])
    new_step = step
    if stepped.any():
        # the stepped rows of each stream together, in file order; arrays of the rows'
        # length are freed as soon as they are used (millions of rows)
        order = np.argsort(stream, kind="stable")            # radix: file order in a stream
        pos = order if stepped.all() else order[stepped[order]]   # the stepped rows
        del order
        first = np.ones(len(pos), dtype=bool)                 # a stream's first row
        st = stream[pos]
        np.not_equal(st[1:], st[:-1], out=first[1:])
        del st
        sp = step_f[pos]
        down = np.zeros(len(sp), dtype=bool)                  # the count restarts
        np.less(sp[1:], sp[:-1], out=down[1:])
        down &= ~first
        if info is not None:
            info["streams"] = _stream_ends(stream, pos, first, down, sp, epoch)
        # repeats: same stream, pass, step and epoch as the row before in the stream (within
        # a pass the step never goes down, so equal steps are neighbours; a row equal to the
        # one before it does not start a pass). Epochs are compared where the steps agree.
        same = np.zeros(len(sp), dtype=bool)
        np.equal(sp[1:], sp[:-1], out=same[1:])
        same &= ~first
        at = np.flatnonzero(same)
        e1, e0 = epoch[pos[at]], epoch[pos[at - 1]]
        same[at] = (e1 == e0) | (np.isnan(e1) & np.isnan(e0))
        repeat[pos] = same
        del same, at
        # global steps: the earlier passes' last steps added, where the rows say which
        # epoch they are in (a count restarting without an epoch may be another rank's bar)
        bar_like = ~np.isnan(epoch)[pos] if down.any() else None
        if bar_like is not None and bar_like.any():
            starts = np.flatnonzero(first | down)             # each pass's first row
            pass_max = np.maximum.reduceat(sp, starts)
            owner = np.cumsum(first[starts]) - 1              # each pass's stream
            del first, down
            # steps before each pass: its stream's earlier passes' last steps, summed in
            # order per stream (as pandas' groupby cumsum)
            before = (pd.Series(pass_max).groupby(owner).cumsum() - pass_max).to_numpy()
            off = np.repeat(before, np.diff(np.append(starts, len(sp))))
            off[~bar_like] = 0
            sp += off
            del off, bar_like
            values = step_f.copy()
            values[pos] = sp
            del sp, pos
            new_step = _int64(values, df.index)
    if "scope" in df:  # global figures without a step
        glob = (~stepped & (df["scope"] == "global").to_numpy() & ~documented)
        if glob.any():
            copies = glob & schema.isin(df["pattern"], COPY_PATTERNS)
            value = df["value"].to_numpy(dtype="float64", na_value=np.nan)
            if copies.any():  # a copy with the same value repeats
                gi = np.flatnonzero(copies)
                repeat[gi] = _duplicated(stream[gi], np.zeros(len(gi), np.int64), value[gi],
                                         epoch[gi])
                if info is not None:
                    info["glob"] = (gi, stream[gi], value[gi], epoch[gi])
            series = np.flatnonzero(glob & ~copies)
            if len(series):  # a line printed again at once repeats
                lineno = (df["lineno"].to_numpy(dtype="float64", na_value=np.nan)[series]
                          if "lineno" in df else series.astype("float64"))  # a row a line
                if group is not None:   # one file's lines never meet another's
                    lineno = lineno + group[series].astype("float64") * float(1 << 32)
                repeat[series] = _redrawn(stream[series], lineno, value[series], epoch[series])
                if info is not None:   # the first line after a cut may repeat the last before
                    info["series"] = (series, stream[series], lineno, value[series],
                                      epoch[series])
    repeat[documented] = False
    return new_step, repeat


def _redrawn(stream: np.ndarray, lineno: np.ndarray, value: np.ndarray,
             epoch: np.ndarray) -> np.ndarray:
    """Rows of global series without a step (in file order): True where a line's figures are
    all those of the previous line of their streams, printed on the line right before it (the
    same line printed again at once: by another rank without a launcher prefix, or twice).
    Equal figures further apart are a series that did not change (DeepSpeed-Chat's
    ``CurSamplesPerSec=17.07`` four lines after another ``17.07``), never copies."""
    n = len(stream)
    if n < 2:
        return np.zeros(n, dtype=bool)
    order = np.argsort(stream, kind="stable")  # file order within a stream
    s, line, v, e = stream[order], lineno[order], value[order], epoch[order]
    same = np.zeros(n, dtype=bool)
    same[1:] = ((s[1:] == s[:-1]) & (line[1:] == line[:-1] + 1)
                & ((v[1:] == v[:-1]) | (np.isnan(v[1:]) & np.isnan(v[:-1])))
                & ((e[1:] == e[:-1]) | (np.isnan(e[1:]) & np.isnan(e[:-1]))))
    found = np.zeros(n, dtype=bool)
    found[order] = same
    # a line is printed again only when all its figures are
    _, at = np.unique(lineno, return_inverse=True)
    whole = np.ones(int(at.max()) + 1, dtype=bool)
    np.logical_and.at(whole, at, found)
    return whole[at]


def _stream_keys(stream: np.ndarray, columns: Sequence[pd.Series]) -> list[tuple]:
    """The values (None for null) of ``columns`` that make each stream code 0..k-1: the
    same stream in another range has another code but the same key."""
    at = schema.first_rows(stream)
    return list(zip(*(_values_at(col, at) for col in columns), strict=True))


def _values_at(col: pd.Series, at: np.ndarray) -> list:
    """The values (None for null) of ``col`` at the rows ``at``; a categorical's from its
    codes (no categorical of the rows made to read a few hundred of them)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        cats = [None if pd.isna(v) else v for v in col.cat.categories.tolist()] + [None]
        return [cats[c] for c in col.cat.codes.to_numpy()[at].tolist()]   # -1: the last
    return [None if pd.isna(v) else v for v in col.iloc[at].tolist()]


#: per stream with steps (rows in the order of the stream codes): code, first row, its step
#: and epoch, last step and its epoch, the sum of the last steps of the completed passes
StreamEnds = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                   np.ndarray]


def _stream_ends(stream: np.ndarray, pos: np.ndarray, first: np.ndarray, down: np.ndarray,
                 sp: np.ndarray, epoch: np.ndarray) -> StreamEnds:
    """What :func:`join_streams` needs of a range's streams with steps (``pos``: the stepped
    rows, grouped by stream in file order; ``first``, ``down``: a stream's first row and a
    restart of its count; ``sp``: their printed steps). Within a pass the step never goes
    down, so a pass's largest step is its last."""
    heads = np.flatnonzero(first)
    tails = np.append(heads[1:] - 1, len(pos) - 1)
    starts = np.flatnonzero(first | down)
    pass_max = np.maximum.reduceat(sp, starts)
    owner = np.cumsum(first[starts]) - 1
    total = np.bincount(owner, weights=pass_max, minlength=len(heads))
    return (stream[pos[heads]].astype(np.int64), pos[heads], sp[heads], epoch[pos[heads]],
            sp[tails], epoch[pos[tails]], total - sp[tails])


def join_streams(parts: Sequence[dict], lines: Sequence[int] | None = None,
                 ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Join the ranges of one table scanned one by one (each range's ``info`` from
    :func:`steps_and_repeats`, in file order) into what one pass over the whole table
    gives: per range, the number to add to each stream's global steps (the completed
    passes of its stream in the ranges before it; 0 where none) and the rows that repeat a
    row of an earlier range (a stream's first row with the step and epoch of its last row
    before the cut; an end-of-run global figure without a step (:data:`COPY_PATTERNS`) equal
    to an earlier copy; given ``lines``, the newlines before each range, a global series's
    line printed again right after a cut). The ranges are folded one after another by one
    :class:`StreamJoin`.

    The steps add only to rows with an epoch and only where some stream's count went down
    (as :func:`steps_and_repeats`); ``offsets`` are per stream code of each range."""
    join = StreamJoin()
    offsets, repeats = [], []
    for k, info in enumerate(parts):
        off, rep = join.add(info, None if lines is None else lines[k])
        offsets.append(off)
        repeats.append(rep)
    return offsets, repeats


class StreamJoin:
    """The parts of one table (ranges of a file, or the parts of a growing file that
    ``dptrace watch`` finishes as they come) joined one after another, in file order, as
    one pass over the whole table reads them; only what the parts after need is kept (never
    rows): per stream key the completed passes, last step and epoch (:func:`fold_streams`);
    the end-of-run global figures without a step seen (:data:`COPY_PATTERNS`: key, value,
    epoch, each once); per global series without a step, its last row's line, value and
    epoch (a line whose figures are all those of the line right before it, across a cut,
    repeats: see :func:`_redrawn`)."""

    def __init__(self) -> None:
        self.state: dict[tuple, tuple[float, float, float]] = {}
        #: a number per stream key of the copies (their rows compared as numbers)
        self._ids: dict[tuple, int] = {}
        #: the copies seen: key number, value, epoch (each distinct one once)
        self._copies = (np.zeros(0, np.int64), np.zeros(0), np.zeros(0))
        #: per global series key: its last row's line (of the file), value and epoch
        self._series: dict[tuple, tuple[float, float, float]] = {}

    def add(self, info: dict, lines_before: int | None = None, commit: bool = True,
            ) -> tuple[np.ndarray, np.ndarray]:
        """The next part (``info`` from its :func:`steps_and_repeats`; ``lines_before``: the
        newlines of the file before it, None to leave the global series' rule out): the
        number to add to each of its streams' global steps (per stream code) and its rows
        (sorted) that repeat a row of an earlier part. ``commit``: the join takes the part
        in (else it is looked at and forgotten: the line being written of a growing file)."""
        state = self.state if commit else dict(self.state)
        off, rep = fold_streams(state, info)
        rows = [np.asarray(rep, dtype=np.int64)]
        keys = info.get("keys", ())
        if info.get("glob") is not None:
            rows.append(self._copies_of(info["glob"], keys, commit))
        if info.get("series") is not None and lines_before is not None:
            rows.append(self._redrawn(info["series"], keys, lines_before, commit))
        return off, np.unique(np.concatenate(rows))

    def _copies_of(self, glob: tuple, keys: Sequence[tuple], commit: bool) -> np.ndarray:
        """The rows of end-of-run global figures equal (key, value, epoch; NaN equal to
        NaN) to an earlier one, of this part or one before (:func:`_duplicated`)."""
        at, codes, value, epoch = glob
        ids = np.array([self._ids.setdefault(keys[c], len(self._ids)) for c in codes.tolist()],
                       dtype=np.int64)
        seen_ids, seen_value, seen_epoch = self._copies
        before = len(seen_ids)
        all_ids = np.concatenate([seen_ids, ids])
        all_value = np.concatenate([seen_value, value])
        all_epoch = np.concatenate([seen_epoch, epoch])
        dup = _duplicated(all_ids, np.zeros(len(all_ids), np.int64), all_value, all_epoch)
        if commit:   # each distinct copy once (those seen before are the first of theirs)
            self._copies = (all_ids[~dup], all_value[~dup], all_epoch[~dup])
        return np.asarray(at, dtype=np.int64)[dup[before:]]

    def _redrawn(self, series: tuple, keys: Sequence[tuple], lines_before: int,
                 commit: bool) -> np.ndarray:
        """:func:`_redrawn` across the cut: the part's first line of global series figures
        repeats when every figure on it is that of its series's last row before the cut,
        printed on the line right before it (within a part :func:`steps_and_repeats` found
        the others; a figure's predecessor one line up is in the part before only on this
        line)."""
        at, codes, lineno, value, epoch = series
        line = lineno + float(lines_before)
        first = line == line[0]
        hit, seen = True, set()
        for i in np.flatnonzero(first).tolist():
            key = keys[int(codes[i])]
            prev = self._series.get(key)
            hit = hit and key not in seen and prev is not None and prev[0] == line[i] - 1 \
                and _same_float(prev[1], value[i]) and _same_float(prev[2], epoch[i])
            seen.add(key)
        if commit:
            for i in range(len(at)):   # each series's last row stays
                self._series[keys[int(codes[i])]] = (float(line[i]), float(value[i]),
                                                     float(epoch[i]))
        return np.asarray(at, dtype=np.int64)[first] if hit else np.zeros(0, np.int64)


def fold_streams(state: dict[tuple, tuple[float, float, float]],
                 info: dict) -> tuple[np.ndarray, list[int]]:
    """One range's streams folded into ``state`` (per stream key: the completed passes, the
    last step and epoch of the ranges before; updated in place): the number to add to each
    stream's global steps (per stream code of the range) and the rows that repeat the
    stream's last row before the cut. :class:`StreamJoin` folds a parallel read's ranges,
    ``dptrace watch`` the parts of a growing file as they come."""
    keys = info.get("keys", ())  # none: a range without rows in this table
    off = np.zeros(len(keys), dtype=np.float64)
    rep: list[int] = []
    if info.get("streams") is not None:
        for code, row, f_step, f_epoch, l_step, l_epoch, completed in zip(
                *(a.tolist() for a in info["streams"]), strict=True):
            key = keys[code]
            done = 0.0
            if key in state:
                done, last, last_epoch = state[key]
                if f_step < last:  # the count restarted at the cut: a pass ended there
                    done += last
                elif f_step == last and (f_epoch == last_epoch or (
                        f_epoch != f_epoch and last_epoch != last_epoch)):
                    rep.append(row)
            off[code] = done
            state[key] = (done + completed, l_step, l_epoch)
    return off, rep


def _same_float(a: float, b: float) -> bool:
    """Equal, NaN equal to NaN."""
    return bool(a == b or (a != a and b != b))


def _int64(values: np.ndarray, index: pd.Index) -> pd.Series:
    """Whole floats (NaN: missing) as an Int64 column, made from ``values`` in place."""
    missing = np.isnan(values)
    values[missing] = 0
    if np.abs(values).max(initial=0) >= 2.0 ** 63:
        values[missing] = np.nan
        return pd.Series(values, index=index).astype("Int64")
    return pd.Series(pd.arrays.IntegerArray(values.astype(np.int64), missing), index=index)


def _duplicated(stream: np.ndarray, passes: np.ndarray, step: np.ndarray,
                epoch: np.ndarray) -> np.ndarray:
    """True where (stream, pass, step, epoch) equals that of an earlier row (NaN equal to
    NaN): one lexsort, then neighbours compared."""
    n = len(stream)
    if n < 2:
        return np.zeros(n, dtype=bool)
    ep = np.where(np.isnan(epoch), -np.inf, epoch)  # NaN equal to NaN
    sp = np.where(np.isnan(step), -np.inf, step)
    order = np.lexsort((np.arange(n), ep, sp, passes, stream))
    same = np.ones(n, dtype=bool)
    same[0] = False
    for col in (stream, passes, sp, ep):
        c = col[order]
        same[1:] &= c[1:] == c[:-1]
    out = np.zeros(n, dtype=bool)
    out[order] = same
    return out


def part_starts(headers: Sequence[tuple[str | None, int, str]], lineno: np.ndarray,
                printer: np.ndarray, training: np.ndarray) -> list[int]:
    """The lines where parts 1, 2, ... start, from the run headers (prefix, line, kind) and
    the throughput rows (``lineno``, ``printer``); empty when the file holds one run.
    ``training``: rows that are training figures (not repeats); only those make a header
    start a new part."""
    if not headers:
        return []
    train_lines = lineno[training]
    train_printer = printer[training]
    starts: list[int] = []
    last = 0
    for prefix, line, _kind in sorted(headers, key=lambda h: h[1]):
        between = (train_lines >= last) & (train_lines < line)
        if prefix is not None:
            mine = between & (train_printer == prefix)
            hit = bool(mine.any()) or (not (train_printer == prefix).any() and bool(between.any()))
        else:
            hit = bool(between.any())
        if hit:
            starts.append(line)
            last = line
    return starts

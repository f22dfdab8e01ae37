"""Who printed each row, which rows repeat another, where steps restart, where runs start.

Run once per file on the finished rows of both tables (:func:`resolve`), vectorised: a dense
log has millions of rows and a handful of distinct printers, patterns and labels, so every
key is reduced to integer codes first (:func:`_codes`).

- **Printer** (``instance``, ``rank``): the launcher prefix (``3: ``, ``[1,3]<stdout>:``,
  ``[rank3]:``, ``[default3]:``), else the rank a per-rank file's path gives
  (:func:`dptrace.runs.rank_of_path`), else unknown (null). SambaFlow's ``e2e
  samples_per_sec`` lines are the one documented exception: one line per SambaNova
  instance, so the k-th such line of a file is instance ``k``.
- **Repeats** (``repeat``): a row of the same kind (pattern, name, label, metric, epoch)
  from the same printer at the same step as an earlier row of its pass (tqdm's close()
  redraws the last count with the whole-bar average rate; Lightning writes each step twice;
  several ranks printing one rank's line without a prefix). A global figure printed without
  a step repeats an earlier copy with the same value (each rank printing HF's
  ``train_samples_per_second``). Repeats stay in the table, flagged; analyses skip them.
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

from ...runs import rank_of_path

#: patterns whose repeated lines are distinct instances by documentation
INSTANCE_PATTERNS = frozenset({"sambaflow"})

def shown(instance: object) -> str:
    """An instance as reports show it: '?' when no prefix or path said who printed the line."""
    return "?" if instance is None or pd.isna(instance) else str(instance)


def _codes(df: pd.DataFrame, cols: Sequence[str]) -> np.ndarray:
    """One int64 code per row for the combination of ``cols`` (nulls are a value)."""
    out = np.zeros(len(df), dtype=np.int64)
    for c in cols:
        col = df[c]
        if isinstance(col.dtype, pd.CategoricalDtype):
            codes = col.cat.codes.to_numpy().astype(np.int64) + 1
            n = len(col.cat.categories) + 1
        else:
            codes, uniques = pd.factorize(col, use_na_sentinel=True)
            codes = codes.astype(np.int64) + 1
            n = len(uniques) + 1
        out = out * n + codes
        if out.max(initial=0) > (1 << 40):  # re-number before the product could overflow
            out = pd.factorize(out)[0].astype(np.int64)
    return out


def printers(df: pd.DataFrame, source: str) -> tuple[pd.Series, pd.Series]:
    """(instance, rank) of each row: the launcher prefix, else the file's rank, else null;
    SambaFlow's k-th line of a kind is instance k (documented instances). A categorical
    ``prefix`` (the fast engine's) stays categorical: dense logs have millions of rows and
    a handful of prefixes."""
    prefix = df["prefix"]
    found = rank_of_path(source)
    documented = (df["pattern"].isin(INSTANCE_PATTERNS) & prefix.isna()).to_numpy()
    if isinstance(prefix.dtype, pd.CategoricalDtype) and not documented.any():
        if found is not None and prefix.isna().any():
            label = str(found[0])
            if label not in prefix.cat.categories:
                prefix = prefix.cat.add_categories([label])
            prefix = prefix.fillna(label)
        return prefix, _prefix_rank(prefix)
    prefix = prefix.astype("object")
    if found is not None:
        prefix = prefix.where(prefix.notna(), str(found[0]))
    instance = prefix.copy()
    if documented.any():
        sub = df.loc[documented]
        cols = [c for c in ("pattern", "name", "label", "metric", "step", "epoch") if c in sub]
        order = sub.groupby(cols, sort=False, dropna=False, observed=True).cumcount()
        instance.loc[documented] = order.astype(str).to_numpy()
    return instance, _prefix_rank(prefix)


def _prefix_rank(prefix: pd.Series) -> pd.Series:
    """The rank a launcher prefix gives: srun's ``3``, mpirun's ``[1,3]`` -> ``3``, a bare
    ``[3]``, ``[rank3]:``; a torchrun role (``default3``: the local rank) and no prefix give
    null. Each distinct prefix is looked at once."""
    codes, uniques = pd.factorize(prefix, use_na_sentinel=True)
    ranks = [int(u) if isinstance(u, str) and u.isdigit() and len(u) <= 9 else None
             for u in uniques]
    lookup = pd.array([*ranks, None], dtype="Int64")
    return pd.Series(lookup[codes], index=prefix.index)


def steps_and_repeats(df: pd.DataFrame, instance: pd.Series) -> tuple[pd.Series, np.ndarray]:
    """(step, repeat) of each row (see the module's docstring); ``df`` in file order."""
    n = len(df)
    repeat = np.zeros(n, dtype=bool)
    step = df["step"]
    if n == 0:
        return step, repeat
    kind_cols = [c for c in ("pattern", "name", "label", "metric") if c in df]
    frame = df[kind_cols].assign(_printer=instance.set_axis(df.index))
    stream = _codes(frame, [*kind_cols, "_printer"])
    documented = df["pattern"].isin(INSTANCE_PATTERNS).to_numpy()
    step_f = pd.to_numeric(step, errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    stepped = ~np.isnan(step_f)
    epoch = df["epoch"].to_numpy(dtype="float64", na_value=np.nan)
    new_step = step
    if stepped.any():
        idx = np.flatnonzero(stepped)
        s_stream, s_step = stream[idx], step_f[idx]
        order = np.argsort(s_stream, kind="stable")          # file order within a stream
        st, sp = s_stream[order], s_step[order]
        first = np.ones(len(st), dtype=bool)
        first[1:] = st[1:] != st[:-1]
        down = np.zeros(len(st), dtype=bool)
        down[1:] = (sp[1:] < sp[:-1]) & ~first[1:]
        # pass number within the stream: restarts so far
        csum = np.cumsum(down)
        start_of_stream = np.maximum.accumulate(np.where(first, np.arange(len(st)), 0))
        passes = csum - csum[start_of_stream]
        # repeats: same stream, pass, step and epoch as an earlier row. Within a pass the
        # step never goes down, so equal steps are neighbours in stream order: one pass of
        # comparisons, no sort (millions of rows in dense logs)
        ep = epoch[idx][order]
        same = np.zeros(len(st), dtype=bool)
        same[1:] = (~first[1:] & (passes[1:] == passes[:-1]) & (sp[1:] == sp[:-1])
                    & ((ep[1:] == ep[:-1]) | (np.isnan(ep[1:]) & np.isnan(ep[:-1]))))
        rep = np.zeros(len(st), dtype=bool)
        rep[order] = same
        repeat[idx] = rep
        # global steps: the earlier passes' last steps added, where the rows say which
        # epoch they are in (a count restarting without an epoch may be another rank's bar)
        bar_like = ~np.isnan(ep)
        if (passes > 0).any() and bar_like.any():
            pass_max = pd.Series(sp).groupby([st, passes]).max()
            offsets = pass_max.groupby(level=0).cumsum() - pass_max   # steps before the pass
            off = offsets.reindex(pd.MultiIndex.from_arrays([st, passes])).to_numpy()
            shifted = np.where(bar_like, sp + off, sp)
            g = np.empty(len(st), dtype="float64")
            g[order] = shifted
            values = step_f.copy()
            values[idx] = g
            new_step = pd.Series(values, index=df.index).astype("Int64")
    if "scope" in df:  # global figures without a step: a copy with the same value repeats
        glob = (~stepped & (df["scope"] == "global").to_numpy() & ~documented)
        if glob.any():
            gi = np.flatnonzero(glob)
            value = df["value"].to_numpy(dtype="float64", na_value=np.nan)[gi]
            repeat[gi] = _duplicated(stream[gi], np.zeros(len(gi), np.int64), value,
                                     epoch[gi])
    repeat[documented] = False
    return new_step, repeat


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

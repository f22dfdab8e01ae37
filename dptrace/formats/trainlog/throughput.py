"""Throughput across instances: per instance, in total, spread, stragglers.

A *series* is one (source, pattern, name, label, metric, scope, phase): e.g. the SambaFlow
``e2e samples_per_sec`` lines of one log, or DeepSpeed's ``CurrSamplesPerSec``. ``phase``
(train, eval, load, download) follows from the label and name, so it never splits a series; it is in
the key so that every table built on series carries it.

Per-step series (rows with a ``step``) lose their warm-up before averaging: by default
the first 10% of each instance's steps, at least one, when it has 3 steps or more. Both
the steady-state and the all-steps figures are reported.

The job figure depends on ``scope``:
- ``instance``/``device``: rates of separate instances add up, so the job figure is the
  **sum** over instances. SambaNova's docs instead quote the **mean** over instances;
  it is reported beside it as ``mean``.
- ``global``: the line already covers the whole job (HF ``train_samples_per_second``,
  DeepSpeed ``SamplesPerSec``); copies printed by several ranks are **never summed**: the
  job figure is their mean.

Series come in order of importance (:func:`series_order`; :func:`throughput_summary` and
:func:`per_instance` return them so, hence the JSON report, and the terminal): training
before eval before loading and downloads; job-level figures of known trainers before
other named lines before tqdm bars; the best figure of each log before a second figure of
the same log; then the larger job first (more instances, then more rows). Instances come
in rank order (:func:`rank_keys`: 0, 1, 2, ..., 10, not 0, 1, 10, 2).

When the table has ``run`` (every table :func:`dptrace.load` returns does), a series is also
per run: ``run`` is the first key and the first column of every result, and the runs come
one after the other, in their order (:mod:`.keys`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd
from pandas.core.groupby import DataFrameGroupBy

from ...analysis.keys import RUN, keys, run_first
from ...schema import PHASES, combined_codes, first_rows

SERIES = ["source", "pattern", "name", "label", "metric", "scope", "phase"]
#: :data:`SERIES` with ``run`` first: what names a series in a table that has ``run``
RUN_SERIES = [RUN, *SERIES]
#: patterns whose lines are job-level figures of a known trainer (HF Trainer, the SambaNova
#: transformers hook, DeepSpeed, Megatron, SambaFlow, Horovod/tf_cnn benchmarks, MXNet's
#: Speedometer)
TRAINER_PATTERNS = ("hf_trainer", "hf_metrics_table", "transformers_hook", "deepspeed",
                    "deepspeed_flops", "megatron", "sambaflow", "horovod_benchmark",
                    "mxnet_speedometer")
#: patterns of generic progress bars: shown after every named line
BAR_PATTERNS = ("tqdm",)
#: metrics that make a log's headline figure, before tokens and before steps/iterations
_HEADLINE_METRICS = ("samples_per_s", "sequences_per_s", "images_per_s")
#: share of each instance's steps treated as warm-up
WARMUP_FRACTION = 0.1
#: an instance this far (fraction) below the median is a straggler
STRAGGLER_THRESHOLD = 0.05


def mark_warmup(tp: pd.DataFrame, fraction: float = WARMUP_FRACTION) -> pd.Series:
    """Boolean Series, True for the warm-up rows of each (series, instance).

    The first ``max(1, floor(fraction * n))`` steps (ordered by ``step``) of an instance
    with n >= 3 stepped rows are warm-up. In a series that prints no step, the rows count
    in order of appearance (a figure printed every N steps without its step); rows without
    a step in a series that has steps never are warm-up.
    """
    if tp.empty:
        return pd.Series(False, index=tp.index, dtype=bool)
    tp = phased(tp)
    # rows without a step count in order of appearance (a line printed every N steps
    # without its step), within series that print no step at all
    step = tp["step"].astype("float64").to_numpy()
    series = group_ids(tp, keys(tp, *SERIES))
    stepped_series = np.bincount(series, weights=~np.isnan(step)) > 0
    order = np.where(stepped_series[series], step, tp["lineno"].astype("float64").to_numpy())
    warm = np.zeros(len(tp), dtype=bool)
    rows = np.flatnonzero(~np.isnan(order))
    if len(rows):
        # (the groups of all rows, then of these: no copy of the table's rows)
        inst = pd.factorize(group_ids(tp, keys(tp, *SERIES, "instance"))[rows])[0]
        by = _by_group_then(inst, order[rows])
        size = np.bincount(inst)
        start = np.concatenate(([0], np.cumsum(size)[:-1]))
        pos = np.empty(len(rows), dtype=np.int64)
        pos[by] = np.arange(len(rows)) - np.repeat(start, size)
        n = size[inst]
        cut = np.maximum(1, np.floor(n * fraction))
        warm[rows] = (n >= 3) & (pos < cut)
    return pd.Series(warm, index=tp.index)


def _by_group_then(group: np.ndarray, order: np.ndarray) -> np.ndarray:
    """The positions sorted by ``group``, then ``order``, then position (a stable lexsort).
    Printers print their steps in order: sorted by group alone (a radix sort of small
    codes) is then sorted by both; only if it is not does the full sort run."""
    small = group.astype(np.uint16) if len(group) and group.max() < 1 << 16 else group
    by = np.argsort(small, kind="stable")
    o, g = order[by], group[by]
    if np.any((o[1:] < o[:-1]) & (g[1:] == g[:-1])):
        by = np.lexsort((order, group))
    return by


def group_ids(df: pd.DataFrame, cols: list[str]) -> np.ndarray:
    """The group of each row of ``df`` by ``cols`` as codes 0, 1, ... in order of first
    appearance, a missing value a value of its own (``groupby(cols, sort=False,
    dropna=False)``), from one factorisation of the combined column codes
    (:func:`dptrace.schema.combined_codes`): a groupby on nine key columns factorised each
    of them, over millions of rows, each time."""
    if not cols:
        return np.zeros(len(df), dtype=np.int64)
    columns = [df[c] for c in cols]
    if not all(isinstance(c.dtype, pd.CategoricalDtype) for c in columns):
        return pd.factorize(combined_codes(columns))[0]
    # every key categorical (the loaded tables'): their codes read off the arrays, mixed
    # into one number while the product of the sizes fits (else combined_codes renumbers)
    out = np.zeros(len(df), dtype=np.int64)
    bound = 1
    for col in columns:
        n = len(col.dtype.categories) + 1
        bound *= n
        if bound > 1 << 62:
            return pd.factorize(combined_codes(columns))[0]
        out *= n
        out += col.array.codes
        out += 1  # null (-1) is 0
    return pd.factorize(out)[0]


def per_instance(tp: pd.DataFrame, fraction: float = WARMUP_FRACTION,
                 straggler: float = STRAGGLER_THRESHOLD,
                 warm: pd.Series | None = None) -> pd.DataFrame:
    """One row per series and instance.

    Columns: the series columns, ``instance``, ``rows``, ``warmup_rows``, ``first_step``,
    ``last_step``, ``value_all`` (mean over all rows), ``value`` (mean after warm-up),
    ``below_median_pct`` (how far ``value`` is below the series median, in %), ``straggler``
    (more than ``straggler`` below the median, for a named printer in a series that is not
    a global figure), ``first_lineno``. Series come in
    :func:`series_order`; the instances of a series in rank order (:func:`rank_keys`).
    ``warm``: :func:`mark_warmup` of ``tp`` with ``fraction``, when the caller has it.
    """
    if tp.empty:
        return _no_instances(tp)
    tp = phased(tp)
    df = tp.assign(_warm=mark_warmup(tp, fraction) if warm is None else warm)
    df = df.assign(_steady=df["value"].where(~df["_warm"]))
    cols = keys(df, *SERIES, "instance")
    ids = group_ids(df, cols)
    first = first_rows(ids)
    g = df[["_warm", "step", "value", "_steady", "lineno"]].groupby(ids, sort=True)
    stats = pd.DataFrame({
        "rows": g.size(),
        "warmup_rows": g["_warm"].sum(),
        "first_step": g["step"].min(),
        "last_step": g["step"].max(),
        "value_all": g["value"].mean(),
        "value": g["_steady"].mean(),
        "first_lineno": g["lineno"].min(),
    }).reset_index(drop=True)
    return _instances_of(df[cols].iloc[first].reset_index(drop=True), stats, tp, straggler)


def _no_instances(tp: pd.DataFrame) -> pd.DataFrame:
    """:func:`per_instance` of an empty table."""
    return run_first(pd.DataFrame(columns=keys(
        tp, *SERIES, "instance", "rows", "warmup_rows", "first_step", "last_step",
        "value_all", "value", "below_median_pct", "straggler", "first_lineno")), tp)


def _instances_of(head: pd.DataFrame, stats: pd.DataFrame, tp: pd.DataFrame,
                  straggler: float) -> pd.DataFrame:
    """:func:`per_instance`'s table from each group's key columns (``head``: the group's
    first row, groups in order of first appearance) and its figures (``stats``: ``rows``,
    ``warmup_rows``, ``first_step``, ``last_step``, ``value_all``, ``value``,
    ``first_lineno``): the series median, the stragglers, the order. ``tp``: the rows (for
    the ``run`` column's dtype)."""
    out = pd.concat([head, stats], axis=1)
    median = _group_median(group_ids(out, keys(out, *SERIES)),
                           out["value"].to_numpy(dtype="float64", na_value=np.nan))
    out["below_median_pct"] = (median - out["value"]) / median * 100.0
    # a straggler is a printer the log names (a rank, an instance), in a series whose
    # printers are separate processes: copies of a global figure are no stragglers (the job
    # figure compares them), and an unknown printer cannot be named
    named = out["instance"].notna() & (out["scope"].astype("object") != "global")
    out["straggler"] = (out["below_median_pct"] > straggler * 100.0) & named
    return _in_order(run_first(out, tp))


def _group_median(ids: np.ndarray, values: np.ndarray) -> pd.Series:
    """The median of each row's group (``ids``: codes 0..k-1) over its known values, on
    every row (a group without one: NaN), as ``groupby(...).transform("median")`` gives it:
    the middle value, or the mean of the two middle ones."""
    order = np.argsort(ids, kind="stable")
    cuts = np.cumsum(np.bincount(ids))[:-1]
    medians = np.empty(len(cuts) + 1 if len(ids) else 0, dtype=np.float64)
    for i, pos in enumerate(np.split(order, cuts) if len(ids) else ()):
        known = values[pos]
        known = known[~np.isnan(known)]
        medians[i] = np.median(known) if len(known) else np.nan
    return pd.Series(medians[ids] if len(ids) else np.empty(0))


# --- per_instance as a fold: what a growing table costs per row appended -----------------

#: a missing step among a group's compact steps (int32 offsets from its first step)
_NO_STEP = np.iinfo(np.int32).min
#: the largest offset from a group's first step the compact steps hold
_MAX_OFFSET = np.iinfo(np.int32).max


class _Buf:
    """A growing 1-D array: its capacity grows by a quarter (~12% unused on average)."""

    __slots__ = ("arr", "n")

    def __init__(self, dtype: Any, fill: Any = None, n: int = 0) -> None:
        self.arr = np.empty(n + 16, dtype=dtype)
        if n:
            self.arr[:n] = fill
        self.n = n

    def extend(self, values: np.ndarray) -> None:
        need = self.n + len(values)
        if need > len(self.arr):
            grown = np.empty(max(need, len(self.arr) + len(self.arr) // 4 + 16),
                             dtype=self.arr.dtype)
            grown[:self.n] = self.arr[:self.n]
            self.arr = grown
        self.arr[self.n:need] = values
        self.n = need

    def view(self) -> np.ndarray:
        return self.arr[:self.n]

    def copy(self) -> _Buf:
        out = _Buf(self.arr.dtype)
        out.arr, out.n = self.arr[:self.n].copy(), self.n
        return out


class _FoldGroup:
    """One (series, instance) of :class:`InstanceFold`: its values in row order (float64),
    its steps (int32 offsets from its first step, :data:`_NO_STEP` where missing; float64
    once an offset does not fit; none while every step is missing), and the scalars."""

    __slots__ = ("values", "steps", "base", "known", "in_order", "last_known", "first_step",
                 "last_step", "first_line", "last_line")

    def __init__(self) -> None:
        self.values = _Buf(np.float64)
        self.steps: _Buf | None = None
        self.base = 0.0
        #: rows with a step; whether every row has one and they never decrease (then the
        #: warm-up rows are the first ones)
        self.known, self.in_order = 0, True
        self.last_known = -np.inf
        self.first_step, self.last_step, self.first_line = np.nan, np.nan, np.nan
        self.last_line = -np.inf

    def add(self, value: np.ndarray, step: np.ndarray, line: np.ndarray) -> None:
        before = self.values.n
        self.values.extend(value)
        has = ~np.isnan(step)
        k = int(has.sum())
        self.first_line = float(np.fmin(self.first_line, line.min()))
        self.last_line = float(line[-1])
        if k < len(step):
            self.in_order = False
        if not k:
            if self.steps is not None:
                self.steps.extend(np.full(len(step), _NO_STEP if self._compact() else np.nan,
                                          dtype=self.steps.arr.dtype))
            return
        known = step[has]
        if self.steps is None:
            self.base = float(known[0])
            self.steps = _Buf(np.int32, _NO_STEP, before)
        if self.in_order and (known[0] < self.last_known or bool(np.any(known[1:] < known[:-1]))):
            self.in_order = False
        self.last_known = float(known[-1])
        self.known += k
        self.first_step = float(np.fmin(self.first_step, known.min()))
        self.last_step = float(np.fmax(self.last_step, known.max()))
        if self._compact():
            off = step - self.base
            fits = np.abs(off[has]) < _MAX_OFFSET
            if bool(fits.all()) and bool((np.trunc(off[has]) == off[has]).all()):
                self.steps.extend(np.where(has, off, _NO_STEP).astype(np.int32))
                return
            self._widen()
        self.steps.extend(step)

    def _compact(self) -> bool:
        return self.steps is not None and self.steps.arr.dtype == np.int32

    def _widen(self) -> None:
        """The steps as float64 (an offset beyond int32, or not whole)."""
        assert self.steps is not None
        out = _Buf(np.float64)
        out.extend(self.step_values())
        self.steps = out

    def step_values(self) -> np.ndarray:
        """Each row's step as float64 (NaN: missing)."""
        if self.steps is None:
            return np.full(self.values.n, np.nan)
        got = self.steps.view()
        if not self._compact():
            return got
        out = got.astype(np.float64) + self.base
        out[got == _NO_STEP] = np.nan
        return out

    def copy(self) -> _FoldGroup:
        out = _FoldGroup()
        for name in self.__slots__:
            setattr(out, name, getattr(self, name))
        out.values = self.values.copy()
        out.steps = None if self.steps is None else self.steps.copy()
        return out


_ZEROS = np.zeros(0, dtype=np.intp)


def _kahan_mean(values: np.ndarray) -> float:
    """The mean of ``values`` as a pandas group mean makes it (``groupby(...).mean()``: a
    Kahan-compensated sum in row order over the known values, over their count; what
    :func:`per_instance` gives each group), on the array itself."""
    global _ZEROS
    if len(_ZEROS) < len(values):
        _ZEROS = np.zeros(max(len(values), len(_ZEROS) * 2), dtype=np.intp)
    try:
        from pandas._libs.groupby import group_mean

        out = np.empty((1, 1), dtype=np.float64)
        group_mean(out, np.zeros(1, dtype=np.int64),
                   np.ascontiguousarray(values, dtype=np.float64).reshape(-1, 1),
                   _ZEROS[:len(values)], min_count=-1, is_datetimelike=False,
                   mask=None, result_mask=None)
        return float(out[0, 0])
    except (ImportError, TypeError):   # (another pandas: its public groupby, the same loop)
        return float(pd.Series(values, dtype="float64").groupby(
            _ZEROS[:len(values)]).mean().iloc[0]) if len(values) else float("nan")


class InstanceFold:
    """:func:`per_instance` of a table given in pieces of rows (in table order), kept as a
    fold: per (series, instance) its values and steps in row order as compact arrays
    (~13 bytes a row: float64 values, int32 steps from the instance's first step), its row
    count, first and last step, first line; per series whether any row has a step. The
    figures (:meth:`figures`) are those :func:`per_instance` makes of the rows so far: the
    warm-up cut (:func:`mark_warmup`: the first ``max(1, floor(n * fraction))`` of the n
    rows with a step, by step then row, of an instance with n >= 3; by row in a series
    without steps) moved as the rows come, and the means as pandas' group mean sums them
    (:func:`_kahan_mean` over the kept values in row order, without the warm-up rows).

    ``ok``: False once an instance's line numbers went back (the warm-up of a series
    without steps is by line; the fold reads it by row), a line number is missing, or a
    piece lacked a column or had other key columns: then the fold does not give the
    figures."""

    def __init__(self) -> None:
        self.groups: dict[tuple, _FoldGroup] = {}
        #: rows with a step per series (the group key without the instance)
        self.series: dict[tuple, int] = {}
        self.ok = True
        self.cols: list[str] | None = None

    def add(self, df: pd.DataFrame, *, copy: bool = False) -> None:
        """Fold in ``df``, the rows that follow those folded (repeats are skipped, as
        :func:`per_instance` skips them). ``copy``: the groups ``df`` touches are copied
        first (a fold made with :meth:`branch`)."""
        if not self.ok or df.empty:
            return
        if any(c not in df for c in (*SERIES, "instance", "step", "value", "lineno")):
            self.ok = False
            return
        tp = phased(df)
        if tp.empty:
            return
        cols = keys(tp, *SERIES, "instance")
        if self.cols is None:
            self.cols = cols
        elif cols != self.cols:
            self.ok = False
            return
        line = tp["lineno"].to_numpy(dtype="float64", na_value=np.nan)
        if np.isnan(line).any():
            self.ok = False
            return
        ids = group_ids(tp, cols)
        first = first_rows(ids)
        step = tp["step"].to_numpy(dtype="float64", na_value=np.nan)
        value = tp["value"].to_numpy(dtype="float64", na_value=np.nan)
        order = np.argsort(ids, kind="stable")
        cuts = np.cumsum(np.bincount(ids))[:-1]
        for key, pos in zip(fold_keys(tp, cols, first), np.split(order, cuts), strict=True):
            g = self.groups.get(key)
            if g is None:
                g = self.groups[key] = _FoldGroup()
            elif copy:
                g = self.groups[key] = g.copy()
            lines = line[pos]
            if lines[0] < g.last_line or bool(np.any(lines[1:] < lines[:-1])):
                self.ok = False   # (pos: the group's rows in row order)
                return
            known = g.known
            g.add(value[pos], step[pos], lines)
            self.series[key[:-1]] = self.series.get(key[:-1], 0) + g.known - known

    def branch(self) -> InstanceFold:
        """A fold that shares this one's groups until :meth:`add` with ``copy=True``
        touches them (the line being written, folded for one snapshot and forgotten)."""
        out = InstanceFold()
        out.groups, out.series = dict(self.groups), dict(self.series)
        out.ok, out.cols = self.ok, self.cols
        return out

    def rows(self) -> int:
        """The rows folded (repeats skipped)."""
        return sum(g.values.n for g in self.groups.values())

    def figures(self, fraction: float = WARMUP_FRACTION) -> dict[tuple, tuple]:
        """Per group key (the :data:`SERIES` values, then the instance; missing values
        None): (rows, warm-up rows, first step, last step, mean over all rows, mean after
        warm-up, first line), as :func:`per_instance` makes them."""
        out = {}
        for key, g in self.groups.items():
            values = g.values.view()
            stepped = self.series.get(key[:-1], 0) > 0
            n = g.known if stepped else len(values)
            cut = int(min(n, max(1.0, np.floor(np.float64(n) * fraction)))) if n >= 3 else 0
            if not cut:
                steady = values
            elif not stepped or g.in_order:
                steady = values[cut:]
            else:   # the warm-up rows by step, then row (mark_warmup's sort)
                steps = g.step_values()
                rows = np.flatnonzero(~np.isnan(steps))
                warm = rows[np.argsort(steps[rows], kind="stable")[:cut]]
                steady = values.copy()
                steady[warm] = np.nan
            out[key] = (len(values), cut, g.first_step, g.last_step, _kahan_mean(values),
                        _kahan_mean(steady), g.first_line)
        return out


def _fold_key(v: object) -> object:
    """A key value as :class:`InstanceFold` holds it: every missing value one (None)."""
    return None if v is None or v is pd.NA or (isinstance(v, float) and v != v) else v


def fold_keys(df: pd.DataFrame, cols: list[str], rows: np.ndarray) -> list[tuple]:
    """The keys of ``df``'s ``rows`` (positions) over ``cols`` as :class:`InstanceFold`
    holds them (:func:`_fold_key`: every missing value None), one tuple a row."""
    values = [[_fold_key(v) for v in df[c].take(rows).to_numpy(dtype=object)] for c in cols]
    return list(zip(*values, strict=True))


def per_instance_folded(tp: pd.DataFrame, figures: Callable[[tuple], tuple | None],
                        straggler: float = STRAGGLER_THRESHOLD) -> pd.DataFrame | None:
    """:func:`per_instance` of a table whose groups' figures were folded
    (:meth:`InstanceFold.figures`): ``tp`` holds at least the first row of each (series,
    instance) (in the table's order: their order of first appearance is the table's), and
    ``figures(key)`` gives each group's, by its key without ``run``. None when a group has
    no figures."""
    if tp.empty:
        return _no_instances(tp)
    tp = phased(tp)
    cols = keys(tp, *SERIES, "instance")
    ids = group_ids(tp, cols)
    first = first_rows(ids)
    head = tp[cols].iloc[first].reset_index(drop=True)
    own = [c for c in cols if c != RUN]
    found = []
    for key in fold_keys(head, own, np.arange(len(head))):
        got = figures(key)
        if got is None:
            return None
        found.append(got)
    names = ["rows", "warmup_rows", "first_step", "last_step", "value_all", "value",
             "first_lineno"]
    arrays = list(zip(*found, strict=True)) if found else [()] * len(names)
    stats = pd.DataFrame({
        "rows": np.asarray(arrays[0], dtype=np.int64),
        "warmup_rows": np.asarray(arrays[1], dtype=np.int64),
        "first_step": _like(arrays[2], tp["step"]),
        "last_step": _like(arrays[3], tp["step"]),
        "value_all": np.asarray(arrays[4], dtype=np.float64),
        "value": np.asarray(arrays[5], dtype=np.float64),
        "first_lineno": _like(arrays[6], tp["lineno"]),
    })
    return _instances_of(head, stats, tp, straggler)


def _like(values: tuple, col: pd.Series) -> Any:
    """``values`` (floats, NaN missing) as the dtype a group minimum of ``col`` has."""
    v = np.asarray(values, dtype=np.float64)
    if pd.api.types.is_float_dtype(col.dtype):
        return v
    return pd.array(v, dtype="float64").astype(col.dtype)


def drift(tp: pd.DataFrame, fraction: float = WARMUP_FRACTION,
          warm: pd.Series | None = None) -> pd.DataFrame:
    """One row per series and instance of training figures: how the steady figures (after
    warm-up, :func:`mark_warmup`; repeats skipped) changed from the first third of the run to
    the last, in the order the instance printed them (by step where there is one).

    Columns: the series columns, ``instance``, ``steady_rows``, ``first_median``,
    ``last_median`` (medians of the first and last third), ``drop_pct`` (how much lower the
    last third is, in % of the first; negative: it got faster), ``first_lineno``,
    ``last_lineno``. Medians, so one slow step (a checkpoint) does not make a drift.
    ``warm``: :func:`mark_warmup` of ``tp`` with ``fraction``, when the caller has it.
    """
    cols = [*SERIES, "instance", "steady_rows", "first_median", "last_median", "drop_pct",
            "first_lineno", "last_lineno"]
    if tp.empty:
        return run_first(pd.DataFrame(columns=keys(tp, *cols)), tp)
    tp = phased(tp)
    tp = tp[(tp["phase"].astype("object") == "train")]
    # (the warm-up rows of the training series are the same marked in the whole table:
    # phase is a series key, so a series' rows are all kept or all dropped here)
    dropped = mark_warmup(tp, fraction) if warm is None else warm
    df = tp[~dropped.reindex(tp.index, fill_value=False).to_numpy()]
    rows = []
    by = keys(df, *SERIES, "instance")
    df = df[[*by, "step", "lineno", "value"]]  # each group a copy of these only
    for key, g in _each_group(df, by, ("step", "lineno", "value")):
        if isinstance(g, pd.DataFrame):
            g = g.sort_values(["step", "lineno"], kind="stable", na_position="last") \
                if g["step"].notna().all() else g.sort_values("lineno", kind="stable")
            v = g["value"].to_numpy(dtype="float64", na_value=np.nan)
            line_of = g["lineno"].to_numpy()
        else:   # (columns as arrays: lines known, steps integers or missing)
            step, line_of, v = g
            order = (np.lexsort((line_of, step)) if not np.isnan(step).any()
                     else np.argsort(line_of, kind="stable"))
            v, line_of = v[order], line_of[order]
        ok = np.isfinite(v)
        v, lines = v[ok], line_of[ok]
        n = len(v)
        third = n // 3
        first = float(np.median(v[:third])) if third else np.nan
        last = float(np.median(v[-third:])) if third else np.nan
        drop = (first - last) / first * 100.0 if third and first > 0 else np.nan
        rows.append((*key, n, first, last, drop, int(lines[0]) if n else None,
                     int(lines[-1]) if n else None))
    return pd.DataFrame(rows, columns=[*by, *cols[len(SERIES) + 1:]])


def _text_mask(s: pd.Series, test: Callable[[pd.Series], pd.Series]) -> np.ndarray:
    """``test`` of each value of ``s`` as text (a null as ``"nan"``), as a bool array; a
    categorical's by its categories (millions of rows, a few distinct values)."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        cats = pd.Series(s.cat.categories.astype("object"), dtype="object").astype(str)
        hit = np.append(test(cats).to_numpy(dtype=bool),
                        bool(test(pd.Series(["nan"], dtype="object")).iloc[0]))
        return hit[s.cat.codes.to_numpy()]  # -1 (null): the last
    return test(s.astype("object").astype(str)).to_numpy(dtype=bool)


#: :func:`warmup_length`: a step is warm-up until the rate first reaches this share of the
#: steady rate (the median of the second half of the instance's figures)
WARMUP_REACH = 0.5


def warmup_length(tp: pd.DataFrame, reach: float = WARMUP_REACH,
                  fraction: float = WARMUP_FRACTION,
                  warm: pd.Series | None = None) -> pd.DataFrame:
    """One row per training series and instance printed per step: how long its warm-up was,
    measured from its figures (not the fixed share :func:`mark_warmup` drops).

    The figures are rates (``*_per_s``), ordered by step (repeats skipped). The steady rate is
    the median of the second half of the figures; the warm-up is the figures before the first
    one that reaches ``reach`` of it. A figure stands for the steps since the previous one
    (the first for the median interval), which took steps / rate: with a constant batch, the
    time of a step is proportional to 1 / rate, so ``warmup_time_share`` (the warm-up's share
    of the summed steps / rate) estimates the share of the run's time, whatever the metric.

    Columns: the series columns, ``instance``, ``rows``, ``warmup_rows``, ``first_step``,
    ``warmup_end_step`` (the step of the first figure at ``reach``), ``last_step``,
    ``steady_median``, ``warmup_median`` (median of the warm-up figures), ``warmup_step_share``
    (of the steps from the first figure's interval to the last step),
    ``warmup_time_share``, ``first_lineno``, ``end_lineno`` (the line of the first figure at
    ``reach``), ``dropped_rows`` (the figures :func:`mark_warmup` drops with ``fraction``, as
    the averages do).
    """
    cols = [*SERIES, "instance", "rows", "dropped_rows", "warmup_rows", "first_step",
            "warmup_end_step",
            "last_step", "steady_median", "warmup_median", "warmup_step_share",
            "warmup_time_share", "first_lineno", "end_lineno"]
    if tp.empty:
        return run_first(pd.DataFrame(columns=keys(tp, *cols)), tp)
    tp = phased(tp)
    tp = tp.assign(_dropped=mark_warmup(tp, fraction) if warm is None else warm)
    tp = tp[(tp["phase"].astype("object") == "train") & tp["step"].notna()
            & _text_mask(tp["metric"], lambda text: text.str.endswith("_per_s"))]
    rows = []
    by = keys(tp, *SERIES, "instance")
    tp = tp[[*by, "step", "lineno", "value", "_dropped"]]  # each group a copy of these only
    for key, g in _each_group(tp, by, ("step", "lineno", "value", "_dropped")):
        if isinstance(g, pd.DataFrame):
            g = g.sort_values(["step", "lineno"], kind="stable").drop_duplicates("step",
                                                                                keep="last")
            v = g["value"].to_numpy(dtype="float64", na_value=np.nan)
            step_of = g["step"].to_numpy(dtype="float64")
            line_of = g["lineno"].to_numpy()
            dropped_of = g["_dropped"].to_numpy(dtype=bool)
        else:   # (columns as arrays: steps and lines known integers)
            step_of, line_of, v, dropped_of = g
            order = np.lexsort((line_of, step_of))
            step_of, line_of, v, dropped_of = (step_of[order], line_of[order], v[order],
                                               dropped_of[order])
            last = np.append(step_of[1:] != step_of[:-1], True)   # the last row of a step
            step_of, line_of, v, dropped_of = (step_of[last], line_of[last], v[last],
                                               dropped_of[last])
        ok = np.isfinite(v) & (v > 0)
        v = v[ok]
        step = step_of[ok]
        lines = line_of[ok]
        n = len(v)
        if n < 3:
            continue
        steady = float(np.median(v[n // 2:]))
        reached = np.flatnonzero(v >= reach * steady)
        end = int(reached[0]) if len(reached) else n
        gaps = np.diff(step)
        first_gap = float(np.median(gaps)) if len(gaps) else 1.0
        interval = np.concatenate([[first_gap], gaps])
        time = interval / v
        dropped = int(dropped_of[ok].sum())
        rows.append((*key, n, dropped, end, float(step[0]), float(step[end]) if end < n else np.nan,
                     float(step[-1]), steady, float(np.median(v[:end])) if end else np.nan,
                     float(interval[:end].sum() / interval.sum()),
                     float(time[:end].sum() / time.sum()), int(lines[0]),
                     int(lines[end]) if end < n else None))
    return pd.DataFrame(rows, columns=[*by, *cols[len(SERIES) + 1:]])


#: how :func:`_each_group` gives a column: ``step`` float64 of integers (exact) or NaN,
#: ``float`` float64 (a missing value NaN), ``int`` int64 (none missing), ``bool``, ``object``
_KINDS = {"step": "step", "lineno": "int", "value": "float", "value_all": "float",
          "below_median_pct": "float", "_dropped": "bool", "straggler": "bool",
          "rows": "int", "warmup_rows": "int", "instance": "object"}


def _each_group(df: pd.DataFrame, by: list[str], cols: tuple[str, ...],
                ) -> Iterator[tuple[tuple, pd.DataFrame | tuple[np.ndarray, ...]]]:
    """``(key, rows)`` of each group of ``df`` by ``by`` as :func:`_group` iterates them (in
    order of appearance, a missing key a group of its own, each group's rows in order).
    When every key column is categorical and each of ``cols`` converts exactly as
    :data:`_KINDS` says, the rows are those columns as arrays, sliced from one conversion
    of the table (a folder of 1,000 runs: thousands of small groups, no frame made for
    each); else each group's frame, as :func:`_group` gives it."""
    if df.empty:
        return
    arrays = _arrays(df, cols) if all(isinstance(df[c].dtype, pd.CategoricalDtype)
                                      for c in by) else None
    if arrays is None:
        yield from _group(df, by)
        return
    ids = group_ids(df, by)
    first = first_rows(ids)
    key_values = [list(df[c].take(first)) for c in by]
    order = np.argsort(ids, kind="stable")
    cuts = np.cumsum(np.bincount(ids))[:-1]
    for i, pos in enumerate(np.split(order, cuts)):
        yield tuple(k[i] for k in key_values), tuple(a[pos] for a in arrays)


def _arrays(df: pd.DataFrame, cols: tuple[str, ...]) -> list[np.ndarray] | None:
    """``cols`` of ``df`` as :data:`_KINDS` says, or None when one does not convert exactly."""
    out = []
    for c in cols:
        col, kind = df[c], _KINDS[c]
        if kind == "int":
            if not pd.api.types.is_integer_dtype(col.dtype) or col.isna().any():
                return None
            out.append(col.to_numpy(dtype="int64"))
        elif kind == "step":
            if not _integers(col):
                return None
            out.append(col.to_numpy(dtype="float64", na_value=np.nan))
        elif kind == "float":
            if not (pd.api.types.is_float_dtype(col.dtype)
                    or pd.api.types.is_integer_dtype(col.dtype)):
                return None
            out.append(col.to_numpy(dtype="float64", na_value=np.nan))
        elif kind == "bool":
            if not pd.api.types.is_bool_dtype(col.dtype) or col.isna().any():
                return None
            out.append(col.to_numpy(dtype=bool))
        else:
            out.append(col.to_numpy(dtype=object))
    return out


def _integers(step: pd.Series) -> bool:
    """Whether the known values of ``step`` are integers below 2**53 (exact as float64)."""
    if not pd.api.types.is_integer_dtype(step.dtype):
        return False
    known = step.dropna()
    return known.empty or bool(known.abs().max() < 2 ** 53)


def _in_order(inst: pd.DataFrame) -> pd.DataFrame:
    """Rows of :func:`per_instance`: series in :func:`series_order`, instances by rank.

    One sort of the rows in Python (a stable sort by series place, then the rank keys of
    :func:`rank_keys` with a missing number last, then ``first_lineno``, missing last): a
    table of a few series and instances is sorted without a frame made for its keys."""
    ids = group_ids(inst, keys(inst, *SERIES))
    first = first_rows(ids)
    rows = inst["rows"].to_numpy(dtype="float64", na_value=np.nan)
    line = inst["first_lineno"].to_numpy(dtype="float64", na_value=np.nan)
    k = len(first)
    lowest = np.full(k, np.inf)
    np.fmin.at(lowest, ids, line)
    columns = {c: inst[c].take(first) for c in ("pattern", "name", "metric", "phase", RUN,
                                                 "source") if c in inst}
    columns["instances"] = np.bincount(ids, minlength=k)
    columns["rows"] = np.bincount(ids, weights=np.nan_to_num(rows), minlength=k)
    columns["first_lineno"] = np.where(np.isinf(lowest), np.nan, lowest)
    place = np.empty(k, dtype=np.int64)  # series (numbered as they appear) -> place
    place[_order_of(columns)] = np.arange(k)
    ranked = rank_sort_keys(inst["instance"])
    if ranked is None:
        frame = rank_keys(inst["instance"])
        number = frame["number"].to_numpy(dtype="float64", na_value=np.nan)
        ranked = list(zip(frame["text"].tolist(),
                          zip(np.isnan(number).tolist(), np.nan_to_num(number).tolist(),
                              strict=True),
                          frame["rest"].tolist(), strict=True))
    key = list(zip(place[ids].tolist(), ranked, np.isnan(line).tolist(),
                   np.nan_to_num(line).tolist(), strict=True))
    order = sorted(range(len(inst)), key=key.__getitem__)
    return inst.iloc[order].reset_index(drop=True)


_RANK_LABEL = re.compile(r"^(\D*)(\d+)(.*)$")   # (rank_keys' pattern)


def rank_sort_keys(instance: pd.Series) -> list[tuple] | None:
    """:func:`rank_keys` of each label as one sort key, ``(text, (no number, number),
    rest)``, made in Python over the distinct labels; None (use :func:`rank_keys`) when a
    label is not text, not ASCII or holds a line break (where pandas' regular expression
    engine and Python's may differ), or its number has more than 15 digits (a float's)."""
    if isinstance(instance.dtype, pd.CategoricalDtype):
        labels, codes = instance.cat.categories.tolist(), instance.array.codes
    else:
        codes, uniques = pd.factorize(instance, use_na_sentinel=True)
        labels = list(uniques)
    keys: list[tuple] = []
    for label in labels:
        if not isinstance(label, str) or not label.isascii() or "\n" in label \
                or "\r" in label:
            return None
        m = _RANK_LABEL.match(label)
        if m is None:
            keys.append((label, (True, 0), ""))
            continue
        digits = m.group(2)
        if len(digits) > 15:
            return None
        keys.append((m.group(1), (False, int(digits)), m.group(3)))
    keys.append(("", (True, 0), ""))   # a missing label (code -1)
    return [keys[c] for c in codes.tolist()]


def rank_keys(instance: pd.Series) -> pd.DataFrame:
    """Sort keys that put instance labels in rank order: ``text`` (what precedes the first
    number, or the whole label), ``number`` (that number, as a number) and ``rest``.

    Labels that are numbers sort numerically (0, 1, 2, ..., 10, 11); ``default3`` (torchrun)
    sorts among ``default<N>`` by N.
    """
    label = instance.astype("string")
    parts = label.str.extract(r"^(\D*)(\d+)(.*)$")
    return pd.DataFrame({
        "text": parts[0].fillna(label).fillna(""),
        "number": pd.to_numeric(parts[1], errors="coerce"),
        "rest": parts[2].fillna(""),
    }, index=instance.index)


def throughput_summary(tp: pd.DataFrame, fraction: float = WARMUP_FRACTION,
                       straggler: float = STRAGGLER_THRESHOLD,
                       inst: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per series: aggregates over its instances and the job figure with its rule.

    Columns: the series columns; ``instances``; ``rows``; ``sum``, ``mean``, ``hmean``,
    ``median``, ``min``, ``max``, ``std`` (sample, ddof=1), ``cv`` (std/mean) over the
    instances' steady-state values, all in the unit named by ``metric``;
    ``slowest_instance``, ``slowest_value``, ``slowest_below_median_pct``, ``stragglers``
    (count); ``job_value`` and ``job_rule`` (how the job figure was made);
    ``job_value_all_steps`` (the same rule over all steps, warm-up included); ``warmup_rows``.
    """
    if inst is None:
        inst = per_instance(tp, fraction, straggler)
    k = keys(inst, *SERIES)
    if inst.empty:
        return run_first(pd.DataFrame(columns=k + _SUMMARY_COLS), tp)
    scope = k.index("scope")
    rows = [_summarise(key, grp, key[scope]) if isinstance(grp, pd.DataFrame)
            else _summarise_arrays(key, grp, key[scope])
            for key, grp in _each_group(inst, k, _SUMMARISED)]
    return series_order(run_first(pd.DataFrame(rows, columns=k + _SUMMARY_COLS), inst))


def series_order(summary: pd.DataFrame) -> pd.DataFrame:
    """``summary`` (rows of :func:`throughput_summary`) sorted by importance, most first.

    The keys, in turn:

    0. ``run``, when the frame has it: the runs in their order (a categorical's, else as
       they first appear), each run's series together.
    1. ``phase``: train, then eval, then load (checkpoint loading, preprocessing bars),
       then download;
       a missing phase counts as train.
    2. the kind of line: job-level figures of known trainers (:data:`TRAINER_PATTERNS`),
       then other named lines (Keras, generic ``samples/sec``), then progress bars
       (:data:`BAR_PATTERNS`).
    3. the best figure of each log before a log's second figure of the same phase and kind,
       so that a short view covers as many logs as it can. A log's best figure is its
       headline: samples, sequences or images per second before tokens before steps or
       iterations, DeepSpeed's ``Curr`` rate before its running average, Horovod's totals
       before per-GPU figures; then the larger series.
    4. the size of the job: more instances first, then more rows.
    5. the headline rank of (3) again, then where the series starts (source, then
       ``first_lineno`` when the frame has it), then the order given.

    Pure: returns a new frame with a fresh index; the rows themselves are unchanged. Also
    accepts any frame with the :data:`SERIES` columns and ``instances`` and ``rows``
    (and ``run`` or not).
    """
    if summary.empty:
        return summary.reset_index(drop=True)
    return summary.iloc[_order(summary)].reset_index(drop=True)


def _order(summary: pd.DataFrame) -> np.ndarray:
    """Positions of ``summary``'s rows in :func:`series_order`."""
    return _order_of({c: summary[c] for c in ("pattern", "name", "metric", "phase", RUN,
                                              "source", "instances", "rows", "first_lineno")
                      if c in summary})


def _missing(v: object) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and v != v)


def _texts(col: pd.Series) -> list[object]:
    """A key column's values as Python objects, a missing one as None."""
    return [None if _missing(v) else v for v in col.astype("object").tolist()]


def _negated(col: object, n: int) -> list[float]:
    """``-col`` as numbers, a missing one 0 (the sort keys of counts: larger first)."""
    if col is None:
        return [0.0] * n
    values = pd.to_numeric(pd.Series(col)).to_numpy(dtype="float64", na_value=np.nan)
    return (-np.nan_to_num(values, nan=0.0)).tolist()


def _order_of(cols: dict[str, Any]) -> np.ndarray:
    """:func:`_order` of series given as columns (Series or arrays of equal length):
    ``pattern``, ``name``, ``metric``, ``source``, ``instances``, ``rows``, and when known
    ``phase``, ``run``, ``first_lineno``. Two stable sorts in Python over the series' keys
    (a report has a few series; a folder of runs, a few per run)."""
    pattern = _texts(cols["pattern"])
    n = len(pattern)
    name = ["" if v is None else str(v) for v in _texts(cols["name"])]
    metric = _texts(cols["metric"])
    rank = {p: i for i, p in enumerate(PHASES)}
    phases = (_texts(cols["phase"]) if "phase" in cols
              else [None] * n)
    phase = [rank.get(str(v), 0) if v is not None else 0 for v in phases]
    headline = [(0 if m in _HEADLINE_METRICS else 1 if m == "tokens_per_s" else 2) * 2
                + int(nm.startswith("RunningAvg") or (
                    p == "horovod_benchmark" and not nm.lower().startswith("total")))
                for p, nm, m in zip(pattern, name, metric, strict=True)]
    run_col = cols.get(RUN)
    if run_col is None:
        run = [0] * n
    elif isinstance(getattr(run_col, "dtype", None), pd.CategoricalDtype):
        run = run_col.cat.codes.tolist()
    else:
        run = pd.factorize(pd.Series(run_col).astype(object), use_na_sentinel=False)[0].tolist()
    source = ["" if v is None else v for v in _texts(cols["source"])]
    kind = [0 if p in TRAINER_PATTERNS else 2 if p in BAR_PATTERNS else 1 for p in pattern]
    instances = _negated(cols["instances"], n)
    rows = _negated(cols["rows"], n)
    line = ((-np.array(_negated(cols["first_lineno"], n))).tolist()
            if "first_lineno" in cols else [0.0] * n)
    best = sorted(range(n), key=lambda i: (headline[i], instances[i], rows[i], line[i]))
    lead = [0] * n
    seen: dict[tuple, int] = {}
    for i in best:   # each log's best figure first: its place among its log's (phase, kind)
        group = (run[i], source[i], phase[i], kind[i])
        lead[i] = seen.get(group, 0)
        seen[group] = lead[i] + 1
    return np.array(sorted(range(n), key=lambda i: (
        run[i], phase[i], kind[i], lead[i], instances[i], rows[i], headline[i], source[i],
        line[i])), dtype=np.int64)


_SUMMARY_COLS = ["instances", "rows", "sum", "mean", "hmean", "median", "min", "max", "std", "cv",
                 "slowest_instance", "slowest_value", "slowest_below_median_pct", "stragglers",
                 "job_value", "job_rule", "job_value_all_steps", "warmup_rows"]


def _summarise(key: tuple, grp: pd.DataFrame, scope: object) -> list:
    v = grp["value"].astype("float64")
    n = len(grp)
    slow = grp.loc[v.idxmin()] if v.notna().any() else None
    mean = v.mean()
    hmean = n / (1.0 / v).sum() if (v > 0).all() else np.nan
    if scope == "global":
        job, job_all = mean, grp["value_all"].mean()
        rule = ("global figure; " + (f"mean of {n} copies, not summed" if n > 1 else "as printed"))
    else:
        job, job_all = v.sum(), grp["value_all"].sum()
        rule = f"sum over {n} {scope}{'s' if n > 1 else ''}"
    std = v.std(ddof=1)
    return [
        *[None if pd.isna(k) else k for k in key], n, int(grp["rows"].sum()), v.sum(), mean, hmean,
        v.median(), v.min(), v.max(), std, std / mean if mean else np.nan,
        None if slow is None else slow["instance"], None if slow is None else slow["value"],
        None if slow is None else slow["below_median_pct"], int(grp["straggler"].sum()),
        job, rule, job_all, int(grp["warmup_rows"].sum()),
    ]


#: the columns :func:`_summarise_arrays` reads, in its order
_SUMMARISED = ("value", "value_all", "rows", "straggler", "warmup_rows", "instance",
               "below_median_pct")


def _summarise_arrays(key: tuple, arrays: tuple[np.ndarray, ...], scope: object) -> list:
    """:func:`_summarise` of one series' instances given as arrays (:data:`_SUMMARISED`),
    with pandas' own arithmetic (``pandas.core.nanops``: a sum over the values with the
    missing ones as 0, a mean that sum over the count, the two-pass variance), so that each
    figure is the very float the Series methods give."""
    value, value_all, rows, straggler, warmup_rows, instance, below = arrays
    n = len(value)
    known = ~np.isnan(value)
    count = int(known.sum())
    filled = np.where(known, value, 0.0)
    total = filled.sum(dtype=np.float64)
    mean = total / count if count > 0 else np.nan
    if count:
        at = int(np.nanargmin(value))
        slow: tuple[object, object, object] | None = (instance[at], value[at], below[at])
        vmin, vmax = np.nanmin(value), np.nanmax(value)
        median = np.median(value[known])
    else:
        slow, vmin, vmax, median = None, np.nan, np.nan, np.nan
    hmean = n / (1.0 / value).sum() if (value > 0).all() else np.nan
    if count > 1:
        sqr = (total / count - filled) ** 2
        sqr[~known] = 0
        std = np.sqrt(sqr.sum(dtype=np.float64) / (count - 1))
    else:
        std = np.nan
    known_all = ~np.isnan(value_all)
    sum_all = np.where(known_all, value_all, 0.0).sum(dtype=np.float64)
    if scope == "global":
        n_all = int(known_all.sum())
        job, job_all = mean, (sum_all / n_all if n_all > 0 else np.nan)
        rule = ("global figure; " + (f"mean of {n} copies, not summed" if n > 1 else "as printed"))
    else:
        job, job_all = total, sum_all
        rule = f"sum over {n} {scope}{'s' if n > 1 else ''}"
    return [
        *[None if pd.isna(k) else k for k in key], n, int(rows.sum()), total, mean, hmean,
        median, vmin, vmax, std, std / mean if mean else np.nan,
        None if slow is None else slow[0], None if slow is None else slow[1],
        None if slow is None else slow[2], int(straggler.sum()),
        job, rule, job_all, int(warmup_rows.sum()),
    ]


def phased(tp: pd.DataFrame) -> pd.DataFrame:
    """``tp`` without its repeats (``repeat``: tqdm's closing redraw, a line printed twice)
    and with a phase on every row: rows built without one (by hand) are training. ``tp``
    itself when it has neither (so a second call costs a look at two columns)."""
    if "repeat" in tp and tp["repeat"].any():
        tp = tp[~tp["repeat"].fillna(False).astype(bool)]
    if "phase" in tp and tp["phase"].notna().all():
        return tp
    phase = tp["phase"].astype("object") if "phase" in tp else pd.Series(None, index=tp.index,
                                                                            dtype="object")
    return tp.assign(phase=pd.Categorical(phase.where(phase.notna(), "train"),
                                          categories=PHASES))


def _group(df: pd.DataFrame, cols: list[str]) -> DataFrameGroupBy:
    """Group by ``cols`` in order of appearance, keeping null keys (a bar without a label)."""
    return df.groupby(cols, sort=False, dropna=False, observed=True)

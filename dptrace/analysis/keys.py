"""Keys shared by the analyses: ``run`` first, when the input has it.

Every table :func:`dptrace.load` returns starts with a categorical ``run`` column (one
execution of a job), so an analysis keyed by a source, a job or a series groups by
``(run, source)``, ``(run, job)``, ...: two runs never mix, even when they share a job id, a
file name or a tensor name. Frames built by hand without ``run`` keep working: the keys are
then the bare columns, as before.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import pandas as pd

RUN = "run"


def keys(df: pd.DataFrame | Sequence[Hashable], *cols: str) -> list[str]:
    """``cols`` with ``run`` in front when ``df`` (a frame, or its column names) has it."""
    names = df.columns if isinstance(df, pd.DataFrame) else df
    return ([RUN] if RUN in names and RUN not in cols else []) + list(cols)


def run_first(out: pd.DataFrame, like: pd.DataFrame) -> pd.DataFrame:
    """``out`` with its ``run`` column first and of ``like``'s dtype (the categorical of the
    input, so the runs keep their order); ``out`` unchanged when either lacks ``run``."""
    if RUN not in out.columns or RUN not in like.columns:
        return out
    dtype = like[RUN].dtype
    run = out[RUN]
    if isinstance(dtype, pd.CategoricalDtype):
        if _same_categories(run.dtype, dtype):
            if out.columns[0] == RUN:   # already the input's categorical, first
                return out
        else:
            # the input's categories, then the values outside them as they first come (a
            # missing value none): codes found in Python over the few rows of a result
            cats = dtype.categories.tolist()   # (one conversion, not one per value)
            place = {c: i for i, c in enumerate(cats)}
            values = run.to_numpy(dtype=object)
            for v in values:
                if v not in place and not _missing(v):
                    place[v] = len(place)
            codes = np.array([place.get(v, -1) for v in values], dtype=np.int64)
            run = pd.Categorical.from_codes(
                codes, dtype=pd.CategoricalDtype(list(place), ordered=dtype.ordered))
    out = out.assign(**{RUN: run})
    return out[[RUN, *(c for c in out.columns if c != RUN)]]


def _missing(v: object) -> bool:
    """A missing value, as ``dropna`` drops it (None, NaN, NA, NaT)."""
    return v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and v != v)


def _same_categories(given: object, dtype: pd.CategoricalDtype) -> bool:
    """Whether a column of dtype ``given`` is already what :func:`run_first` makes of it:
    a categorical with ``dtype``'s categories in their order, of the dtype a list of them
    gives, and its ordering (no value outside them: nothing to add)."""
    if not isinstance(given, pd.CategoricalDtype) or given.ordered != dtype.ordered:
        return False
    cats = dtype.categories
    return (cats.dtype != object and given.categories.dtype == cats.dtype
            and given.categories.equals(cats))


def plain(s: pd.Series) -> pd.Series:
    """A key column as plain Python objects (merges and lookups across tables whose
    categoricals may differ)."""
    return s.astype(object) if isinstance(s.dtype, pd.CategoricalDtype) else s

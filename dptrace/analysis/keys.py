"""Keys shared by the analyses: ``run`` first, when the input has it.

Every table :func:`dptrace.load` returns starts with a categorical ``run`` column (one
execution of a job), so an analysis keyed by a source, a job or a series groups by
``(run, source)``, ``(run, job)``, ...: two runs never mix, even when they share a job id, a
file name or a tensor name. Frames built by hand without ``run`` keep working: the keys are
then the bare columns, as before.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

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
        cats = dtype.categories
        extra = [c for c in pd.unique(run.dropna().astype(object)) if c not in set(cats)]
        run = pd.Categorical(run.astype(object), categories=[*cats, *extra],
                             ordered=dtype.ordered)
    out = out.assign(**{RUN: run})
    return out[[RUN, *(c for c in out.columns if c != RUN)]]


def plain(s: pd.Series) -> pd.Series:
    """A key column as plain Python objects (merges and lookups across tables whose
    categoricals may differ)."""
    return s.astype(object) if isinstance(s.dtype, pd.CategoricalDtype) else s

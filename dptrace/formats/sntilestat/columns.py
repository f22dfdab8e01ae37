"""Columns of the ``tiles`` table built directly in their schema dtype.

Users, commands, hosts and the source name repeat on every row: each distinct value is
decoded once and the column is an Arrow ``take`` of those few values, so
:func:`dptrace.schema.conform` has nothing left to convert.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa


def strings(values: Sequence[bytes], codes: np.ndarray) -> pd.arrays.ArrowStringArray:
    """``values[codes]`` decoded as UTF-8 (bad bytes replaced); empty values become missing."""
    return labels([v.decode("utf-8", "replace") or None for v in values], codes)


def labels(values: Sequence[str | None], codes: np.ndarray) -> pd.arrays.ArrowStringArray:
    """``values[codes]`` as a string column; a code of -1 (or a None value) is missing."""
    table = pa.array(list(values) or [None], type=pa.large_string())
    missing = codes < 0
    indices = pa.array(codes, type=pa.int64(), mask=missing if missing.any() else None)
    return pd.arrays.ArrowStringArray(table.take(indices))


def repeated(value: str, n: int) -> pd.arrays.ArrowStringArray:
    """``value`` on each of ``n`` rows."""
    return labels([value], np.zeros(n, dtype=np.int64))


def ints(values: np.ndarray) -> pd.arrays.IntegerArray:
    """An Int64 column without missing values."""
    return pd.arrays.IntegerArray(values.astype(np.int64, copy=False),
                                  np.zeros(len(values), dtype=bool))


def first_codes(codes: np.ndarray) -> np.ndarray:
    """Where each code first occurs, for codes numbered in order of first appearance."""
    if not len(codes):
        return np.zeros(0, dtype=np.int64)
    seen = np.maximum.accumulate(codes)
    return np.flatnonzero(np.r_[True, codes[1:] > seen[:-1]])

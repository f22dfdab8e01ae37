"""frames.code_counts: the rows of each code, by bincount or (one code in every row) by the
least and greatest code alone: the same counts, dtype and length either way."""

from __future__ import annotations

import numpy as np
import pytest

from dptrace import frames


def _expected(codes: np.ndarray, k: int) -> np.ndarray:
    return np.bincount(codes[codes >= 0].astype(np.int64), minlength=k)[:k]


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
@pytest.mark.parametrize("values,k", [
    ([], 3), ([0] * 7, 1), ([0] * 7, 4), ([2] * 5, 3), ([-1] * 6, 2), ([1, 2, -1, 1], 3),
    ([0, 0, 1], 2), ([-1, 0], 1), ([3] * 4, 3)])
def test_counts_as_bincount(dtype: type, values: list[int], k: int) -> None:
    codes = np.array(values, dtype=dtype)
    got = frames.code_counts(codes, k)
    want = _expected(codes, k)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()


def test_random_codes() -> None:
    rng = np.random.default_rng(31)
    for _ in range(200):
        k = int(rng.integers(1, 40))
        codes = rng.integers(-1, k, size=int(rng.integers(0, 50))).astype(np.int8)
        assert frames.code_counts(codes, k).tolist() == _expected(codes, k).tolist()

"""Per-instance rows are put in rank order by keys made in Python (issue 32), the order
:func:`rank_keys` (pandas) gives; labels where the two could differ fall back to it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dptrace.formats.trainlog import throughput as thr


def _pandas_order(s: pd.Series) -> list[int]:
    keys = thr.rank_keys(s).assign(_pos=np.arange(len(s)))
    return keys.sort_values(["text", "number", "rest"], kind="stable")["_pos"].tolist()


@pytest.mark.parametrize("labels", [
    ["3", "1", "10", "2", "0"],
    ["default3", "default10", "default2", None, "x", "rank1b", "rank1a", "", "007", "7"],
    ["a b 3 c", "a b 12", "  4", "4", "-1", "1.5", "1e3"],
    ["123456789012345", "2", "1"],
])
def test_python_keys_sort_as_rank_keys(labels):
    for s in (pd.Series(pd.Categorical(labels)), pd.Series(labels, dtype=object)):
        keys = thr.rank_sort_keys(s)
        assert keys is not None
        assert sorted(range(len(s)), key=keys.__getitem__) == _pandas_order(s)


@pytest.mark.parametrize("labels", [
    ["١2", "3", "0"],                     # a non-ASCII digit
    ["rank1\n", "rank0"],                  # a line break: the engines' '$' differ
    ["12345678901234567890", "2", "1"],    # more digits than a float holds
    [3, 1, 2],                             # not text
])
def test_labels_the_engines_may_read_differently_fall_back(labels):
    assert thr.rank_sort_keys(pd.Series(pd.Categorical(labels))) is None

"""``throughput.InstanceFold`` (per_instance as a fold, what ``dptrace watch`` keeps between
refreshes) against the ordinary ``throughput.per_instance`` over random tables: many series
and instances, steps that go back, restart and go missing, series without steps, NaN
values, repeats, values whose sum depends on its order, folded in pieces of random sizes
with the figures taken after each piece (the warm-up cut moves as the rows come). Equal
frame for frame, float for float (``check_exact``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dptrace.formats.trainlog import throughput as thr
from dptrace.formats.trainlog.tables import THROUGHPUT
from dptrace.schema import conform

PATTERNS = ["deepspeed", "tqdm", "hf_trainer", "megatron", "horovod_benchmark"]


def random_table(rng: np.random.Generator, n: int, *, runs: bool) -> pd.DataFrame:
    """Rows of a few files (a run per file when ``runs``), in line order per file."""
    sources = [f"job/{s}.log" for s in rng.choice(list("abcd"), size=rng.integers(1, 4),
                                                   replace=False)]
    series = []
    for _ in range(rng.integers(2, 9)):
        series.append((rng.choice(sources), str(rng.choice(PATTERNS)),
                       str(rng.choice(["SamplesPerSec", "it/s", "tokens", "x"])),
                       None if rng.random() < 0.5 else str(rng.choice(["Train", "Eval"])),
                       str(rng.choice(["samples_per_s", "tokens_per_s"])),
                       str(rng.choice(["global", "instance", "device"])),
                       None if rng.random() < 0.3 else str(rng.choice(["train", "eval"])),
                       rng.random() < 0.25,        # a series without steps
                       rng.random() < 0.3))        # steps that go back or restart
    rows = []
    step_of: dict[tuple, int] = {}
    big = 10.0 ** rng.integers(6, 17)
    for _ in range(n):
        s = series[rng.integers(len(series))]
        inst = None if rng.random() < 0.1 else str(rng.integers(0, 12))
        key = (s, inst)
        step = step_of.get(key, int(rng.integers(0, 50)))
        if s[8] and rng.random() < 0.15:
            step -= int(rng.integers(1, 30))           # back (a resumed run, a restart)
        else:
            step += int(rng.integers(0, 3))            # sometimes the same step again
        step_of[key] = step
        if s[7]:
            st = None
        elif rng.random() < 0.05:
            st = None                                  # a row of a stepped series without one
        else:
            st = step
        # values whose Kahan sum differs from a plain or pairwise one
        v = float(rng.choice([big, 1.0, -big, rng.random() * 1e-3, 3.0 + rng.random()]))
        if rng.random() < 0.05:
            v = np.nan
        rows.append({"source": s[0], "instance": inst, "rank": None if inst is None else
                     int(inst), "pattern": s[1], "name": s[2], "label": s[3],
                     "metric": s[4], "value": v, "scope": s[5], "step": st, "epoch": None,
                     "phase": s[6], "repeat": bool(rng.random() < 0.05), "part": 0})
    df = pd.DataFrame(rows)
    # line numbers per file, non-decreasing in row order (several rows share a line)
    df["lineno"] = df.groupby("source").cumcount() // 2 + 1
    df = df.sort_values(["source", "lineno"], kind="stable").reset_index(drop=True)
    df = conform(df, THROUGHPUT)
    if runs:
        run = pd.Categorical(df["source"].astype(str).str.slice(4, 5),
                             categories=sorted({s[4:5] for s in sources}))
        df.insert(0, "run", run)
    return df


def folded(fold: thr.InstanceFold, tp: pd.DataFrame, fraction: float) -> pd.DataFrame | None:
    figs = fold.figures(fraction)
    return thr.per_instance_folded(tp, figs.get)


@pytest.mark.parametrize("seed", range(40))
def test_fold_equals_per_instance(seed: int) -> None:
    rng = np.random.default_rng(seed)
    tp = random_table(rng, int(rng.integers(50, 1500)), runs=seed % 4 != 0)
    fraction = float(rng.choice([0.1, 0.1, 0.25, 0.5, 0.05]))
    fold = thr.InstanceFold()
    cuts = np.sort(rng.choice(np.arange(1, len(tp)), size=min(12, len(tp) - 1),
                              replace=False))
    start = 0
    for end in [*cuts.tolist(), len(tp)]:
        piece = tp.iloc[start:end].drop(columns=["run"], errors="ignore")
        fold.add(piece.reset_index(drop=True))
        start = end
        prefix = tp.iloc[:end].reset_index(drop=True)
        got = folded(fold, prefix, fraction)
        want = thr.per_instance(prefix, fraction)
        assert got is not None
        pd.testing.assert_frame_equal(got, want, check_exact=True)


@pytest.mark.parametrize("seed", range(10))
def test_fold_branch_leaves_the_fold(seed: int) -> None:
    """The line being written folded into a branch for one snapshot: the branch equals the
    table with it, the fold still the table without it."""
    rng = np.random.default_rng(100 + seed)
    tp = random_table(rng, 600, runs=True)
    cut = int(rng.integers(300, 590))
    fold = thr.InstanceFold()
    fold.add(tp.iloc[:cut].drop(columns=["run"]).reset_index(drop=True))
    branch = fold.branch()
    branch.add(tp.iloc[cut:].drop(columns=["run"]).reset_index(drop=True), copy=True)
    pd.testing.assert_frame_equal(folded(branch, tp, 0.1), thr.per_instance(tp, 0.1),
                                  check_exact=True)
    head = tp.iloc[:cut].reset_index(drop=True)
    pd.testing.assert_frame_equal(folded(fold, head, 0.1), thr.per_instance(head, 0.1),
                                  check_exact=True)


def test_kahan_mean_is_the_group_mean() -> None:
    """The mean of the kept values is pandas' group mean (compensated, in row order), not
    numpy's pairwise one: values where the two differ."""
    v = np.array([1e16, 1.0, 1.0, 1.0, -1e16, 3.0, np.nan] * 50)
    group = pd.Series(v).groupby(np.zeros(len(v), dtype=int)).mean().iloc[0]
    assert thr._kahan_mean(v) == group
    assert np.nanmean(v) != group     # (the order and compensation matter here)


def test_lines_going_back_stop_the_fold() -> None:
    rng = np.random.default_rng(7)
    tp = random_table(rng, 200, runs=False)
    fold = thr.InstanceFold()
    fold.add(tp.iloc[100:])
    fold.add(tp.iloc[:100])
    assert not fold.ok

"""Small runs (issue 32): the shortcuts that make a folder of many small runs cheap give the
very tables and findings the long way gives.

- the per-group array paths of the summary, drift and warm-up tables equal the frame-per-group
  path (pandas' own arithmetic: the same floats, not close ones);
- a printer's copies sorted in rank order in Python as ``rank_keys`` sorts them;
- rules asked once over the report's tables whether anything could fire: a folder of copies of
  a log judges each copy as the log alone is judged, and a run's context computes nothing for
  rules that no run can fire;
- the job figures taken from the report's per-instance table equal those made from scratch.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dptrace
from dptrace.analyses import Analyses
from dptrace.formats.trainlog import job as jobfig
from dptrace.formats.trainlog import throughput as thr

FIX = Path(__file__).parent / "fixtures"
STRAGGLER = FIX / "straggler"
LOGS = [FIX / "trainlog" / "andrewor14_tf_keras_rank0_stderr.log",
        STRAGGLER / "balanced" / "train.log", STRAGGLER / "delayed_r2" / "train.log"]


def _frames_per_group(monkeypatch: pytest.MonkeyPatch) -> None:
    def slow(df, by, cols):  # the long way: one frame per group
        yield from thr._group(df, by)
    monkeypatch.setattr(thr, "_each_group", slow)


@pytest.mark.parametrize("path", [FIX / "trainlog", STRAGGLER], ids=lambda p: p.name)
def test_array_paths_equal_the_frame_per_group_path(path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    tp = thr.phased(dptrace.load(str(path))["throughput"])
    inst = thr.per_instance(tp)
    fast = [thr.throughput_summary(tp, inst=inst), thr.drift(tp), thr.warmup_length(tp)]
    assert len(fast[0]) > 15 and len(fast[1]) > 15   # many series: the test means something
    _frames_per_group(monkeypatch)
    slow = [thr.throughput_summary(tp, inst=inst), thr.drift(tp), thr.warmup_length(tp)]
    for a, b in zip(fast, slow, strict=True):
        pd.testing.assert_frame_equal(a, b, check_exact=True)


def test_summary_arrays_keep_pandas_arithmetic() -> None:
    """Missing values, one instance, a zero rate, many instances (pairwise sums)."""
    rng = np.random.default_rng(3)
    values = [np.array([1.5, np.nan, 2.25]), np.array([np.nan]), np.array([3.0]),
              np.array([0.0, 4.0]), rng.random(300) * 1e4, np.array([np.nan, np.nan])]
    for scope in ("instance", "global"):
        for v in values:
            n = len(v)
            grp = pd.DataFrame({
                "value": v, "value_all": v * 1.01, "rows": np.arange(n) + 3,
                "straggler": np.arange(n) % 2 == 0, "warmup_rows": np.ones(n, dtype=np.int64),
                "instance": [str(i) for i in range(n)], "below_median_pct": v / 7.0})
            arrays = tuple(grp[c].to_numpy(dtype=object) if c == "instance" else
                           grp[c].to_numpy() for c in thr._SUMMARISED)
            key = ("run", "src", "p", "n", None, "samples_per_s", scope, "train")
            got = thr._summarise_arrays(key, arrays, scope)
            want = thr._summarise(key, grp, scope)
            assert len(got) == len(want)
            for g, w in zip(got, want, strict=True):
                if isinstance(w, float) and np.isnan(w):
                    assert isinstance(g, float) and np.isnan(g)
                else:
                    assert g == w and type(g) is type(w) or float(g) == float(w)


@pytest.mark.parametrize("labels", [
    ["3", "1", "10", "2", "0"],
    ["default3", "default10", "default2", None, "x", "rank1b", "rank1a"],
    ["١2", "3", "0"],                      # a non-ASCII digit: the pandas way
    ["12345678901234567890", "2", "1"],    # more digits than a float holds
])
def test_copies_in_rank_order_as_rank_keys_sorts(labels: list[str | None]) -> None:
    rows = pd.DataFrame({"instance": pd.Categorical(labels),
                         "lineno": pd.array(np.arange(len(labels))[::-1] + 1, dtype="Int64"),
                         "value": np.arange(len(labels), dtype=float)})
    series = jobfig._Rows.maker(rows)(np.arange(len(rows)))   # (a series' rows, as arrays)
    assert jobfig._by_rank(series).tolist() == jobfig._by_rank_keys(rows).tolist()


def _folder(tmp_path: Path, log: Path, n: int) -> Path:
    """``n`` copies of ``log``, each in a job folder of its own under its own name (a name
    can say a rank: ``..._rank0_stderr.log``)."""
    for i in range(n):
        (tmp_path / f"job{i}").mkdir()
        shutil.copyfile(log, tmp_path / f"job{i}" / log.name)
    return tmp_path


def _judged(findings: pd.DataFrame, run: str) -> list[tuple]:
    """What each finding says, its run's name (in a subject: 'run job0') left out."""
    cols = ["kind", "severity", "subject", "value", "threshold"]
    rows = findings[cols].astype(str).to_numpy().tolist()
    return sorted(tuple(str(v).replace(run, "<run>") for v in r) for r in rows)


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.parent.name + "/" + p.name)
def test_each_copy_in_a_folder_is_judged_as_the_log_alone(tmp_path: Path, log: Path) -> None:
    one = dptrace.load(str(log))
    alone = _judged(dptrace.findings(one), one.run_ids[0])
    ds = dptrace.load(str(_folder(tmp_path, log, 4)))
    assert len(ds.run_ids) == 4
    every = dptrace.findings(ds)
    for run in ds.run_ids:
        assert _judged(every[every["run"].astype(str) == run], run) == alone


def test_rules_no_run_can_fire_compute_nothing_in_a_run(tmp_path: Path) -> None:
    ds = dptrace.load(str(_folder(tmp_path, STRAGGLER / "balanced" / "train.log", 3)))
    a = Analyses(ds)
    from dptrace.findings.rules import run_rules
    runs = a.of_runs()
    assert len(runs) == 3
    assert [run_rules(part) for part in runs.values()] == [[], [], []]
    for part in runs.values():   # the balanced log fires nothing: no run slices a table
        assert [n for n in part.computed() if n.startswith("throughput.")] == []
    assert a.memo["findings.candidates"]   # asked once, over the report's tables


def test_job_figures_from_the_reports_tables_equal_those_made_alone() -> None:
    for path in (FIX / "trainlog", STRAGGLER, LOGS[0]):   # (a per-rank name: renamed series)
        ds = dptrace.load(str(path))
        a = Analyses(ds)
        metrics = ds["train_metrics"]
        alone = jobfig.job_figures(ds["throughput"], ds.runs, a.warmup,
                                   jobfig.printed_ranges(metrics), metrics)
        pd.testing.assert_frame_equal(a["throughput.job"], alone, check_exact=True)
        series = jobfig.series_figures(a["throughput.summary"], ds["throughput"], ds.runs,
                                       a.warmup)
        pd.testing.assert_frame_equal(a["throughput.series"], series, check_exact=True)


@pytest.mark.parametrize("path", [STRAGGLER, FIX / "trainlog", FIX / "mpitrace", FIX / "nccl"],
                         ids=lambda p: p.name)
def test_by_run_slices_on_use_give_each_runs_rows(path: Path) -> None:
    """``Dataset.by_run`` slices a run's table when it is first asked for: each run's
    tables (which ones, and their rows), sources, problems and runs are those of
    :meth:`Dataset.run`, the scan of every table for the run."""
    ds = dptrace.load(path)
    parts = ds.by_run()
    assert list(parts) == ds.run_ids and len(parts) > 1
    for run, part in parts.items():
        alone = ds.run(run)
        assert part.tables == alone.tables
        assert list(part) == list(alone) and len(part) == len(alone)
        for name in reversed(alone.tables):   # (asked in another order than listed)
            pd.testing.assert_frame_equal(part[name], alone[name])
            assert part[name] is part[name]   # sliced once
        for got, want in ((part.sources, alone.sources), (part.problems, alone.problems),
                          (part.runs, alone.runs)):
            pd.testing.assert_frame_equal(got, want)
        assert "no_such_table" not in part.tables


def test_by_run_of_a_table_without_run_rows_and_an_unsorted_one() -> None:
    """A table whose ``run`` column is out of run order is put in order once, stably; a run
    with no rows of a table does not list it; a frame without a ``run`` column is every
    run's."""
    ds = dptrace.load(STRAGGLER)
    ids = ds.run_ids
    thr_ = ds["throughput"]
    shuffled = thr_.iloc[np.random.default_rng(0).permutation(len(thr_))]
    only_first = thr_[thr_["run"] == ids[0]]
    plain = pd.DataFrame({"x": [1, 2]})
    mixed = dptrace.Dataset({"throughput": shuffled, "train_metrics": only_first,
                             "other": plain}, ds.sources, ds.problems, ds.runs)
    parts = mixed.by_run()
    for run in ids:
        want = shuffled[(shuffled["run"] == run).to_numpy()].reset_index(drop=True)
        pd.testing.assert_frame_equal(parts[run]["throughput"], want)
        assert ("train_metrics" in parts[run].tables) == (run == ids[0])
        assert parts[run]["other"] is plain


def test_a_run_of_by_run_pickles_its_own_rows_only() -> None:
    """A run's part of ``by_run`` pickles as a Dataset of its own rows (not the whole tables
    its slices come from), equal to :meth:`Dataset.run`'s."""
    import pickle

    ds = dptrace.load(STRAGGLER)
    run = ds.run_ids[0]
    part = ds.by_run()[run]
    back = pickle.loads(pickle.dumps(part))
    alone = ds.run(run)
    assert back.tables == alone.tables
    for name in alone.tables:
        pd.testing.assert_frame_equal(back[name], alone[name])
    assert len(pickle.dumps(part)) < len(pickle.dumps(ds))

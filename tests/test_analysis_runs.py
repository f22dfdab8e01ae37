"""Analyses keyed by run (issue 13): every result keyed by a source, a job, a series, a rank,
an instance, a tensor or a tile has ``run`` first when its input has it, and two runs never
mix, even when they share a job id, a file name and every tensor name.

Two runs that share everything are the same input loaded twice under two labels and put
together (``Dataset.concat``): each run's rows must then equal the one-run result, and no
sum may double. The same functions on frames without ``run`` (built by hand, or from a
notebook) give the one-run result without the column.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace.analysis.keys import keys, run_first
from dptrace.dataset import Dataset
from dptrace.formats.horovod import compute as hv
from dptrace.formats.mpitrace import communication as comm
from dptrace.formats.sntilestat import compute as tl
from dptrace.formats.trainlog import throughput as thr

FIX = Path(__file__).resolve().parent / "fixtures"
MPI_DIR = FIX / "mpitrace" / "alcfws_theta_knl32"
MPI_CHECKS_DIR = FIX / "mpitrace" / "mlprof_polaris_run4"      # its files disagree: checks
TIMELINE = FIX / "horovod" / "andrewor14_horovod_timeline_2019_4rank.json"
TIMELINE_OPEN = FIX / "horovod" / "synthetic_killed_open_b.json"
TILESTAT = FIX / "sntilestat" / "watch_sntilestat_sn30.typescript"
TILESTAT_IDLE = FIX / "sntilestat" / "ug_sn30_miscellaneous_idle_from_docs.md"
TRAINLOG = FIX / "trainlog" / "sambanova_dataparallel_seed003.txt"

Tables = dict[str, pd.DataFrame]
Analyses = dict[str, Callable[[Tables], pd.DataFrame]]


def _mpi(d: Tables) -> dict[str, pd.DataFrame]:
    rt = comm.rank_times(d["mpi_ranks"])
    return {
        "rank_times": rt,
        "job_summary": comm.job_summary(rt, d["mpi_jobs"]),
        "job_summary_no_jobs": comm.job_summary(rt),
        "top_routines": comm.top_routines(d["mpi_routines"], n=None),
        "top_routines_3": comm.top_routines(d["mpi_routines"], by="calls", n=3),
        "message_sizes": comm.message_sizes(d["mpi_messages"]),
        "small_messages": comm.small_messages(d["mpi_messages"], d["mpi_routines"]),
        "checks": comm.checks(d["mpi_ranks"]),
    }


def _horovod(d: Tables) -> dict[str, pd.DataFrame]:
    acts, tensors, runs = d["hvd_activities"], d["hvd_tensors"], d["hvd_runs"]
    groups, gaps = hv.fusion_groups(tensors), hv.idle_gaps(acts)
    return {
        "activity_breakdown": hv.activity_breakdown(acts, runs),
        "negotiation_share": hv.negotiation_share(acts, runs),
        "straggler_ranks": hv.straggler_ranks(d["hvd_ready"]),
        "fusion_groups": groups,
        "fusion_summary": hv.fusion_summary(groups, acts),
        "fusion_sizes": hv.fusion_sizes(groups),
        "op_throughput": hv.op_throughput(groups, tensors, acts),
        "cycle_stats": hv.cycle_stats(d["hvd_cycles"]),
        "idle_gaps": gaps,
        "longest_gaps": hv.longest_gaps(gaps, 2),
        "idle_summary": hv.idle_summary(gaps, runs),
        "time_summary": hv.time_summary(acts, runs, gaps),
        "top_tensors": hv.top_tensors(tensors, 3),
        "top_tensors_all": hv.top_tensors(tensors, None),
        "timeline_warnings": hv.timeline_warnings(runs),
    }


def _tiles(d: Tables) -> dict[str, pd.DataFrame]:
    t = d["tiles"]
    return {"instances": tl.instances(t), "idle_tiles": tl.idle_tiles(t),
            "overview": tl.overview(t), "exec_series": tl.exec_series(t), "grid": tl.grid(t)}


def _throughput(d: Tables) -> dict[str, pd.DataFrame]:
    tp = d["throughput"]
    summary = thr.throughput_summary(tp)
    return {"per_instance": thr.per_instance(tp), "throughput_summary": summary,
            "series_order": thr.series_order(summary.iloc[::-1]),
            "warmup": tp.assign(warmup=thr.mark_warmup(tp))[keys(tp, "source", "warmup")]}


CASES = [
    pytest.param(MPI_DIR, _mpi, id="mpitrace"),
    pytest.param(MPI_CHECKS_DIR, _mpi, id="mpitrace-checks"),
    pytest.param(TIMELINE, _horovod, id="horovod"),
    pytest.param(TIMELINE_OPEN, _horovod, id="horovod-open"),
    pytest.param(TILESTAT, _tiles, id="sntilestat"),
    pytest.param(TILESTAT_IDLE, _tiles, id="sntilestat-idle"),
    pytest.param(TRAINLOG, _throughput, id="trainlog"),
]

_LOADED: dict[Path, tuple[Dataset, Dataset]] = {}


def _load(path: Path) -> tuple[Dataset, Dataset]:
    """(one run ``a``, runs ``a`` and ``b`` of the same input: same sources, same job ids)."""
    if path not in _LOADED:
        one = dptrace.load({"a": str(path)})
        both = Dataset.concat([one, dptrace.load({"b": str(path)})])
        assert both.run_ids == ["a", "b"]
        _LOADED[path] = one, both
    return _LOADED[path]


def _without_run(ds: Dataset) -> Tables:
    return {name: ds[name].drop(columns="run") for name in ds.tables}


def _same(got: pd.DataFrame, want: pd.DataFrame, what: str) -> None:
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True),
                                  check_categorical=False, obj=what)


@pytest.mark.parametrize(("path", "analyses"), CASES)
def test_every_output_has_run_first_and_each_run_equals_the_one_run_result(path, analyses):
    one, both = _load(path)
    single, double = analyses(one), analyses(both)
    assert any(len(df) for df in single.values()), "the fixture gives no rows"
    for name, got in double.items():
        want = single[name]
        assert got.columns[0] == "run", f"{name}: {list(got.columns)}"
        assert want.columns[0] == "run", f"{name}: {list(want.columns)}"
        assert isinstance(got["run"].dtype, pd.CategoricalDtype), name
        assert len(got) == 2 * len(want), f"{name}: {len(got)} rows for 2 x {len(want)}"
        runs = got["run"].astype(str).tolist()
        assert runs == ["a"] * len(want) + ["b"] * len(want), f"{name}: runs mixed or missing"
        for run in ("a", "b"):
            part = got[(got["run"] == run).to_numpy()].drop(columns="run")
            _same(part, want.drop(columns="run"), f"{name} run {run}")


@pytest.mark.parametrize(("path", "analyses"), CASES)
def test_frames_without_run_give_the_one_run_result_without_the_column(path, analyses):
    one, _ = _load(path)
    bare, single = analyses(_without_run(one)), analyses(one)
    for name, got in bare.items():
        assert "run" not in got.columns, name
        _same(got, single[name].drop(columns="run"), name)


def test_communication_never_adds_up_two_runs_of_one_job_id():
    one, both = _load(MPI_DIR)
    rt = comm.rank_times(both["mpi_ranks"])
    jobs = comm.job_summary(rt, both["mpi_jobs"])
    assert jobs["run"].astype(str).tolist() == ["a", "b"]
    assert jobs["job"].nunique() == 1            # one job id, two rows
    one_job = comm.job_summary(comm.rank_times(one["mpi_ranks"]), one["mpi_jobs"]).iloc[0]
    for _, row in jobs.iterrows():
        assert row["ranks_listed"] == one_job["ranks_listed"] == 32
        assert row["comm_mean_s"] == one_job["comm_mean_s"]
        assert row["mismatches"] == 0            # the copy is no "other run" of the job
    small = comm.small_messages(both["mpi_messages"], both["mpi_routines"])
    ref = comm.small_messages(one["mpi_messages"], one["mpi_routines"]).iloc[0]
    assert len(small) == 2
    assert (small["mpi_time_s"] == ref["mpi_time_s"]).all()
    assert (small["ranks"] == ref["ranks"]).all()
    routines = comm.top_routines(both["mpi_routines"], n=None)
    assert routines.groupby("run", observed=True)["time_share"].sum().round(9).eq(1).all()


def test_rank_times_joins_own_files_and_rank0_table_within_a_run():
    """Rank 0's table of run b must not be matched with run a's own files (the join is on
    run, job and rank): every rank has one row per run, with the same origin."""
    one, both = _load(MPI_DIR)
    rt = comm.rank_times(both["mpi_ranks"])
    assert not rt.duplicated(["run", "job", "rank"]).any()
    ref = comm.rank_times(one["mpi_ranks"])
    for run in ("a", "b"):
        mine = rt[(rt["run"] == run).to_numpy()]
        assert mine["origin"].tolist() == ref["origin"].tolist()


def test_horovod_tensors_of_two_runs_stay_apart():
    one, both = _load(TIMELINE)
    top = hv.top_tensors(both["hvd_tensors"], None)
    ref = hv.top_tensors(one["hvd_tensors"], None)
    assert top.groupby("run", observed=True)["ops"].sum().tolist() == [ref["ops"].sum()] * 2
    assert top.groupby("run", observed=True)["share"].sum().round(9).eq(1).all()
    stragglers = hv.straggler_ranks(both["hvd_ready"])
    assert stragglers.groupby("run", observed=True)["last_share"].sum().round(9).eq(1).all()
    time = hv.time_summary(both["hvd_activities"], both["hvd_runs"])
    assert list(time.columns[:2]) == ["run", "source"] and len(time) == 2


def test_tiles_instances_are_numbered_per_run():
    one, both = _load(TILESTAT)
    grid, ref = tl.grid(both["tiles"]), tl.grid(one["tiles"])
    for run in ("a", "b"):
        mine = grid[(grid["run"] == run).to_numpy()]
        assert mine["instance"].tolist() == ref["instance"].tolist()
    over = tl.overview(both["tiles"])
    assert over["instances"].tolist() == [ref["instance"].max()] * 2


def test_throughput_series_are_per_run_and_runs_come_in_their_order():
    one, both = _load(TRAINLOG)
    summary = thr.throughput_summary(both["throughput"])
    ref = thr.throughput_summary(one["throughput"])
    assert summary["run"].astype(str).tolist() == ["a"] * len(ref) + ["b"] * len(ref)
    # the instances of one series are never counted twice
    assert summary["instances"].tolist() == ref["instances"].tolist() * 2
    # the runs' order is the categorical's, not the labels' alphabet
    flipped = both["throughput"].assign(run=both["throughput"]["run"].cat.reorder_categories(
        ["b", "a"]))
    assert thr.throughput_summary(flipped)["run"].astype(str).tolist()[0] == "b"


def test_keys_helper():
    with_run = pd.DataFrame({"run": pd.Categorical(["x"]), "source": ["f"]})
    bare = pd.DataFrame({"source": ["f"]})
    assert keys(with_run, "source", "job") == ["run", "source", "job"]
    assert keys(bare, "source", "job") == ["source", "job"]
    assert keys(["run", "a"], "a") == ["run", "a"]
    assert keys(with_run, "run", "source") == ["run", "source"]
    out = run_first(pd.DataFrame({"n": [1], "run": ["x"]}), with_run)
    assert list(out.columns) == ["run", "n"]
    assert isinstance(out["run"].dtype, pd.CategoricalDtype)
    assert run_first(bare, with_run) is bare


def test_hand_built_frames_without_run():
    """The functions still take the small frames a notebook user types."""
    tp = pd.DataFrame({
        "source": ["log"] * 4, "pattern": ["sambaflow"] * 4, "name": ["e2e"] * 4,
        "label": [None] * 4, "metric": ["samples_per_s"] * 4, "scope": ["instance"] * 4,
        "instance": ["0", "1", "0", "1"], "step": pd.array([1, 1, 2, 2], dtype="Int64"),
        "value": [10.0, 8.0, 10.0, 8.0], "lineno": [1, 2, 3, 4]})
    s = thr.throughput_summary(tp)
    assert "run" not in s.columns and s["job_value"].tolist() == [18.0]
    tiles = pd.DataFrame({
        "source": ["t"] * 2, "snapshot": [0, 0], "time": [None, None], "xrdu": [0, 0],
        "rdu": [0, 0], "tile": [0, 1], "pid": pd.array([7, None], dtype="Int64"),
        "user": ["u", None], "command": ["c", None], "idle_pct": [0.0, 100.0],
        "exec_pct": [90.0, 0.0], "pload_pct": [1.0, 0.0], "aload_pct": [1.0, 0.0],
        "chkpt_pct": [0.0, 0.0]})
    assert tl.overview(tiles)[["source", "instances", "idle_tiles"]].values.tolist() == [
        ["t", 1, 1]]
    assert tl.grid(tiles)["instance"].tolist() == [1, pd.NA]

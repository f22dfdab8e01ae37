"""Many mpitrace rank files at once (issue 32): the batch route builds each table a column
at a time from its parts and converts the numbers in Arrow; its rows are the files' own
numbers and the general route's, whatever a file holds. Speed and memory are measured in
benchmarks/bench_mpitrace.py, not here."""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dptrace
from dptrace import jobs, runs
from dptrace.formats.mpitrace import fast, read

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("gen_mpitrace",
                                               ROOT / "benchmarks" / "gen_mpitrace.py")
assert _spec and _spec.loader
gen_mpitrace = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen_mpitrace)

NRANKS = 300   # more than one batch (read.BATCH) of plain files


@pytest.fixture(scope="module")
def job(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("mpitrace") / "job"
    gen_mpitrace.generate(folder, NRANKS, job=777)
    return folder


def _same(a: dptrace.Dataset, b: dptrace.Dataset) -> None:
    assert set(a.keys()) == set(b.keys())
    for name in a:
        pd.testing.assert_frame_equal(a[name], b[name], check_exact=True, obj=name)
    pd.testing.assert_frame_equal(a.problems, b.problems)


def _routines_stated(path: Path) -> dict[str, tuple[int, float, float]]:
    """The flat routine table as the file prints it: name -> (calls, avg bytes, time)."""
    text = path.read_text()
    body = text.split("MPI Routine")[1].split("\n-")[1].split("\n-")[0]
    out = {}
    for line in body.splitlines()[1:]:
        name, calls, avg, t = line.split()
        out[name] = (int(calls), float(avg), float(t))
    return out


def test_a_job_of_300_rank_files_gives_each_files_own_numbers(job):
    ds = dptrace.load(job)
    assert len(ds.sources) == NRANKS and set(ds.sources["status"]) == {"ok"}
    own = ds["mpi_ranks"][ds["mpi_ranks"]["origin"] == "own"]
    assert sorted(own["rank"].tolist()) == list(range(NRANKS))
    assert set(ds["mpi_routines"]["job"]) == {"777"}
    for rank in (1, 150, NRANKS - 1):   # plain files, read in batches
        path = job / f"mpi_profile.777.{rank}"
        rows = ds["mpi_routines"][ds["mpi_routines"]["rank"] == rank]
        assert set(rows["source"]) == {str(path)}
        got = {r.routine: (r.calls, r.avg_bytes, r.time_s) for r in rows.itertuples()}
        assert got == _routines_stated(path)
        total = float(re.search(r"total communication time = ([\d.]+)",
                                path.read_text())[1])
        assert own[own["rank"] == rank]["comm_time_s"].item() == total
    assert ds.runs["world_size"].tolist() == [NRANKS]


def test_the_batch_route_gives_the_general_routes_tables(job):
    _same(dptrace.read_mpitrace(job, engine="fast"), dptrace.read_mpitrace(job,
                                                                          engine="general"))


def test_a_number_too_long_for_the_batch_takes_the_general_route(job, tmp_path):
    folder = tmp_path / "job"
    shutil.copytree(job, folder)
    path = folder / "mpi_profile.777.42"
    text = path.read_text()
    bin_row = re.search(r"\n( +\d+ +[\d.]+ +)([\d.]+)\n", text)
    path.write_text(text[:bin_row.start(2)] + "9" * 400 + ".5" + text[bin_row.end(2):])
    fast_ds = dptrace.read_mpitrace(folder, engine="fast")
    _same(fast_ds, dptrace.read_mpitrace(folder, engine="general"))
    assert len(fast_ds.sources) == NRANKS
    said = fast_ds.problems[fast_ds.problems["source"] == str(path)]
    assert said["message"].str.contains("not a finite number").tolist() == [True]


@pytest.mark.parametrize("words", [
    ["1.5", "0.1", "123456789012345678.25", "2.675", "9007199254740993.0"],
    ["9" * 400 + ".5", "1.0"],               # beyond float: inf, as float() gives
    ["0.30000000000000004", "4.35", "1e3"],  # not the layout's, still float()'s value
])
def test_floats_are_floats_values(words):
    got = fast._floats(words)
    assert got.dtype == np.float64
    assert got.tolist() == [float(w) for w in words]


def test_conformed_frames_take_the_parts(job):
    many = read._Many([])
    sources, _ = dptrace.sources.expand([str(job)])
    for src in sources:
        many.add(src)
    many.flush()
    rows = many.rows
    assert rows.parts["mpi_messages"]
    frames = rows.frames(conform=True)
    assert len(frames["mpi_messages"]) > 0
    assert all(not parts for parts in rows.parts.values())
    assert all(not values for cols in rows.cols.values() for values in cols.values())


def test_a_jobs_directory_is_the_common_one_of_its_files(tmp_path):
    paths = [str(tmp_path / "a" / "x" / "mpi_profile.5.0"),
             str(tmp_path / "a" / "x" / "mpi_profile.5.1"),
             str(tmp_path / "a" / "y" / "mpi_profile.5.2"),
             str(tmp_path / "a" / "x" / "mpi_profile.5.3")]
    units = jobs.group(paths, range(len(paths)), str(tmp_path), runs._job_only,
                       runs.per_rank_root, None)
    assert len(units) == 1 and units[0].home == str(tmp_path / "a")
    one = jobs.group(paths[:2], range(2), str(tmp_path), runs._job_only, runs.per_rank_root,
                     None)
    assert one[0].home == str(tmp_path / "a" / "x")


def test_int64_columns_are_made_from_the_parts_whole_numbers():
    got = read._int64([np.array([1.0, np.nan]), read.Repeated(np.array([3.0, 7.0]),
                                                              np.array([2, 1])), [None, 5]])
    assert got.dtype == "Int64"
    assert got.tolist() == [1, pd.NA, 3, 3, 7, pd.NA, 5]
    assert read._int64([np.array([1.5])]) is None           # a fraction: the schema's rule
    assert read._int64([np.array([2.0 ** 63])]) is None     # beyond int64
    assert read._int64([np.array([np.inf])]) is None


def test_the_collector_runs_less_often_during_a_load_and_as_before_after(job, monkeypatch):
    import gc

    from dptrace import loader

    before = gc.get_threshold()
    seen = []
    dptrace.load(job, progress=lambda src, i, n: seen.append(gc.get_threshold()[0]))
    assert seen and set(seen) == {max(before[0], loader.LOAD_GC_THRESHOLD)}
    assert gc.get_threshold() == before

    def fail(*args, **kwargs):
        raise RuntimeError("runs step failed")

    monkeypatch.setattr(loader, "_with_runs", fail)
    with pytest.raises(RuntimeError):   # restored when the load fails too
        dptrace.load(job)
    assert gc.get_threshold() == before

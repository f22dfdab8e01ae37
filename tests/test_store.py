"""Saved Datasets (issue 31 §4): ``Dataset.save(DIR)`` / ``dptrace.open(DIR)`` on Parquet.

``open(save(ds))`` equals ``ds`` table by table, dtypes included (``assert_frame_equal``
with ``check_dtype``), on every real fixture and on a Dataset made to hold every awkward
case: empty tables, all-null columns of each dtype, unused and ordered categories, a
categorical whose (empty) categories are floats, nullable ints and booleans, datetimes, a
table the schema does not know, a Dataset without a runs table. Then the manifest's
refusals, partial reads, atomic writes, and the explicit Arrow schema of each file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import _cache
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

import dptrace
from dptrace import schema, store
from dptrace.dataset import Dataset
from dptrace.errors import DptraceError

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures"
REAL = ROOT.parent / "shared" / "realdata"
#: every fixture folder of inputs (fleet/ holds the script that copies the others into a
#: fleet of job folders, and a job-script snapshot: no input of its own)
FIXTURE_DIRS = sorted(p.name for p in FIX.iterdir() if p.is_dir() and p.name != "fleet")
REAL_DIRS = sorted(p.name for p in REAL.iterdir() if p.is_dir()) if REAL.is_dir() else []


def assert_same(got: Dataset, want: Dataset) -> None:
    """Every table, sources, problems and runs equal, with their dtypes and order."""
    assert got.tables == want.tables
    for name in want.tables:
        pd.testing.assert_frame_equal(got[name], want[name], check_dtype=True,
                                      check_exact=True, obj=name)
    for name in ("sources", "problems", "runs"):
        pd.testing.assert_frame_equal(getattr(got, name), getattr(want, name),
                                      check_dtype=True, check_exact=True, obj=name)
    assert (got._runs is None) == (want._runs is None)


def roundtrip(ds: Dataset, tmp_path: Path) -> Dataset:
    saved = ds.save(tmp_path / "saved")
    assert saved == tmp_path / "saved"
    return dptrace.open(saved)


@pytest.mark.parametrize("name", FIXTURE_DIRS)
def test_every_fixture_folder_reads_back_equal(name, tmp_path):
    ds = _cache.load(FIX / name)   # read only: shared with the other modules
    assert ds.tables, name
    assert_same(roundtrip(ds, tmp_path), ds)


def test_examples_read_back_equal(tmp_path):
    ds = dptrace.load(ROOT / "examples" / "data")
    assert_same(roundtrip(ds, tmp_path), ds)


@pytest.mark.slow
@pytest.mark.parametrize("name", REAL_DIRS)
def test_every_realdata_folder_reads_back_equal(name, tmp_path):
    ds = _cache.load(REAL / name)   # read only: shared with the other modules
    assert ds.tables, name
    assert_same(roundtrip(ds, tmp_path), ds)


def _awkward() -> Dataset:
    """A Dataset of every case a round trip can lose."""
    runs_order = ["zeta", "alpha"]                     # not sorted: the order is the runs'
    run = pd.Categorical(["zeta", "alpha", "zeta"], categories=runs_order)
    routines = schema.conform({
        "source": ["a.out", None, "c.out"],
        "routine": pd.Categorical(["MPI_Send", None, "MPI_Send"],
                                  categories=["MPI_Send", "MPI_Unused"]),
        "calls": pd.array([1, None, 3], dtype="Int64"),
    }, schema.tables()["mpi_routines"])
    routines.insert(0, "run", run)   # its other columns: all null, in their schema dtypes
    ranks = schema.conform({"source": ["x"] * 2, "rank": [0, 1]}, schema.tables()["mpi_ranks"])
    ranks.insert(0, "run", pd.Categorical(["alpha", "alpha"], categories=runs_order))
    # an all-null categorical whose categories pandas typed as floats (what astype gives a
    # column of NaN), as mpi_ranks.comm_role can be after a load
    ranks["comm_role"] = pd.Series([np.nan, np.nan]).astype("category")
    custom = pd.DataFrame({
        "run": pd.Categorical(["alpha", None], categories=runs_order),
        "when": pd.to_datetime(["2024-01-02 03:04:05.123456789", None]),
        "flag": pd.array([True, None], dtype="boolean"),
        "ok": [True, False],
        "level": pd.Categorical(["high", "low"], categories=["low", "mid", "high"],
                                ordered=True),
        "size": pd.Categorical([4, 8], categories=[8, 4, 16]),
        "nothing": pd.Series([None, None], dtype=schema.STRING),
        "note": pd.Series(["a", "=b"], dtype=object),
        "x": [float("inf"), -0.0],
    })
    sources = schema.conform({"source": ["a.out", "c.out"], "format": ["mpitrace", None],
                              "status": ["ok", "partial"], "rows": [2, None]}, schema.SOURCES)
    sources.insert(0, "run", pd.Categorical(["zeta", "zeta"], categories=runs_order))
    problems = schema.tables()["problems"].empty()
    runs = schema.conform({"run": pd.Categorical(runs_order, categories=runs_order),
                           "label": runs_order, "world_size": [None, 4]}, schema.RUNS)
    return Dataset({"mpi_routines": routines, "mpi_ranks": ranks, "my_table": custom},
                   sources, problems, runs)


def test_awkward_dataset_reads_back_equal(tmp_path):
    ds = _awkward()
    back = roundtrip(ds, tmp_path)
    assert_same(back, ds)
    assert list(back["mpi_routines"]["routine"].cat.categories) == ["MPI_Send", "MPI_Unused"]
    assert back["my_table"]["level"].cat.ordered
    assert back["mpi_ranks"]["comm_role"].cat.categories.dtype == np.float64
    assert back.run_ids == ["zeta", "alpha"]
    assert len(back.problems) == 0 and list(back.problems.columns) == \
        list(ds.problems.columns)


def test_dataset_without_runs_and_without_anything(tmp_path):
    ds = Dataset({}, pd.DataFrame(), pd.DataFrame())
    back = roundtrip(ds, tmp_path)
    assert back._runs is None and back.tables == [] and back.sources.shape == (0, 0)
    assert_same(back, ds)


def test_manifest_says_what_wrote_it(tmp_path):
    ds = dptrace.load(FIX / "straggler")
    saved = ds.save(tmp_path / "s")
    manifest = json.loads((saved / store.MANIFEST).read_text())
    assert manifest["format"] == "dptrace-dataset"
    assert manifest["schema_version"] == schema.SCHEMA_VERSION
    assert manifest["dptrace_version"] == dptrace.__version__
    names = [t["name"] for t in manifest["tables"]]
    assert names == [*ds.tables, "sources", "problems", "runs"]
    rows = {t["name"]: t["rows"] for t in manifest["tables"]}
    assert rows["mpi_ranks"] == len(ds["mpi_ranks"]) and rows["runs"] == len(ds.runs)
    for t in manifest["tables"]:
        for f in t["files"]:
            assert pq.ParquetFile(saved / f).metadata.num_rows == t["rows"]


def test_each_file_declares_the_schema_s_arrow_types(tmp_path):
    """An empty categorical is dictionary<int32, string> (not of doubles), a string column
    large_string, a count int64, whichever rows the table holds."""
    ds = _awkward()
    saved = ds.save(tmp_path / "s")
    for name in ("mpi_routines", "mpi_ranks", "sources", "problems", "runs"):
        got = pq.read_schema(saved / "tables" / name / "part-0.parquet")
        want = schema.arrow_schema(name)
        assert got.names == want.names, name
        assert got.types == want.types, name
    # pyarrow.dataset reads a table's folder typed (the fleet cache's readers)
    table = pads.dataset(saved / "tables" / "problems", format="parquet").to_table()
    assert table.num_rows == 0 and table.schema.types == schema.arrow_schema("problems").types
    ranks = pads.dataset(saved / "tables" / "mpi_ranks", format="parquet").to_table()
    assert ranks.schema.field("comm_role").type == pa.dictionary(pa.int32(), pa.string())


def test_pandas_reads_a_saved_file_with_its_dtypes(tmp_path):
    saved = dptrace.load(FIX / "straggler").save(tmp_path / "s")
    back = pd.read_parquet(saved / "tables" / "mpi_ranks" / "part-0.parquet")
    assert str(back["rank"].dtype) == "Int64"
    assert isinstance(back["run"].dtype, pd.CategoricalDtype)


def test_open_some_tables_and_some_runs(tmp_path):
    ds = dptrace.load(FIX / "straggler")
    saved = ds.save(tmp_path / "s")
    some = dptrace.open(saved, tables=["mpi_ranks"])
    assert some.tables == ["mpi_ranks"]
    pd.testing.assert_frame_equal(some["mpi_ranks"], ds["mpi_ranks"])
    assert len(some["throughput"]) == 0   # a table not read is its empty frame
    assert len(ds.run_ids) > 2
    for run in ds.run_ids[:3]:
        assert_same(dptrace.open(saved, runs=[run]), ds.run(run))
    part = store.read_table(saved, "mpi_ranks", columns=["rank", "comm_time_s"],
                            runs=[ds.run_ids[1]])
    want = ds.run(ds.run_ids[1])["mpi_ranks"][["rank", "comm_time_s"]]
    pd.testing.assert_frame_equal(part, want)
    with pytest.raises(DptraceError, match="no run 'nope'"):
        dptrace.open(saved, runs=["nope"])
    with pytest.raises(DptraceError, match="no table 'nope'; saved tables: .*mpi_ranks"):
        dptrace.open(saved, tables=["nope"])
    with pytest.raises(DptraceError, match="no column 'nope'"):
        store.read_table(saved, "mpi_ranks", columns=["nope"])


def test_a_schema_version_not_ours_is_refused(tmp_path):
    saved = dptrace.load(FIX / "dscomms").save(tmp_path / "s")
    path = saved / store.MANIFEST
    manifest = json.loads(path.read_text())
    manifest["schema_version"] = schema.SCHEMA_VERSION + 1
    manifest["dptrace_version"] = "9.9"
    path.write_text(json.dumps(manifest))
    with pytest.raises(DptraceError, match=r"dptrace 9\.9 with table schema version "
                       rf"{schema.SCHEMA_VERSION + 1}.*reads schema version "
                       rf"{schema.SCHEMA_VERSION}"):
        dptrace.open(saved)


def test_missing_damaged_or_partial_files_are_named(tmp_path):
    ds = dptrace.load(FIX / "straggler")
    saved = ds.save(tmp_path / "s")
    part = saved / "tables" / "mpi_ranks" / "part-0.parquet"
    data = part.read_bytes()
    part.write_bytes(data[: len(data) // 2])       # cut short
    with pytest.raises(DptraceError, match=f"{part}: cannot be read"):
        dptrace.open(saved)
    dptrace.open(saved, tables=["mpi_jobs"])       # the other tables still read
    part.unlink()
    with pytest.raises(DptraceError, match=f"{part}: missing"):
        dptrace.open(saved)
    # a file of another table put in its place: other rows than the manifest says
    os.link(saved / "tables" / "mpi_jobs" / "part-0.parquet", part)
    with pytest.raises(DptraceError, match=f"{part}: holds {len(ds['mpi_jobs'])} rows, the "
                       f"manifest says {len(ds['mpi_ranks'])}"):
        dptrace.open(saved)
    (saved / store.MANIFEST).write_text('{"format": "dptrace-dataset", "lay')
    with pytest.raises(DptraceError, match="dptrace.json: not a readable manifest"):
        dptrace.open(saved)
    (saved / store.MANIFEST).unlink()
    with pytest.raises(DptraceError, match="dptrace.json: missing: .* not a saved dptrace"):
        dptrace.open(saved)
    with pytest.raises(DptraceError, match="no such directory"):
        dptrace.open(tmp_path / "nowhere")


def test_save_is_atomic_and_never_overwrites_by_accident(tmp_path, monkeypatch):
    ds = dptrace.load(FIX / "straggler")
    target = tmp_path / "s"
    calls = []
    real = store.write_frame

    def failing(df, path, table):
        calls.append(table)
        if len(calls) == 3:
            raise KeyboardInterrupt   # as a Ctrl-C in the middle of a save
        return real(df, path, table)

    monkeypatch.setattr(store, "write_frame", failing)
    with pytest.raises(KeyboardInterrupt):
        ds.save(target)
    assert not target.exists() and list(tmp_path.iterdir()) == []   # nothing half-written
    monkeypatch.setattr(store, "write_frame", real)

    ds.save(target)
    first = (target / store.MANIFEST).read_text()
    with pytest.raises(DptraceError, match="holds a saved dataset already; pass overwrite"):
        ds.save(target)
    other = dptrace.load(FIX / "dscomms")
    other.save(target, overwrite=True)
    assert (target / store.MANIFEST).read_text() != first
    assert_same(dptrace.open(target), other)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]      # no temporary left

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(DptraceError, match="holds no saved dataset"):
        ds.save(mine, overwrite=True)
    assert (mine / "notes.txt").read_text() == "keep me"
    (tmp_path / "file").write_text("x")
    with pytest.raises(DptraceError, match="not a directory"):
        ds.save(tmp_path / "file")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_same(dptrace.open(ds.save(empty)), ds)


def test_a_crash_before_the_rename_leaves_no_dataset(tmp_path, monkeypatch):
    """The manifest is written last and the directory renamed into place after it: a
    process killed before the rename leaves only a hidden temporary directory."""
    ds = dptrace.load(FIX / "dscomms")
    monkeypatch.setattr(store, "_replace", lambda tmp, target: None)   # killed before it
    ds.save(tmp_path / "s")
    assert not (tmp_path / "s").exists()
    left = list(tmp_path.iterdir())
    assert len(left) == 1 and left[0].name.startswith(".s.tmp-")
    with pytest.raises(DptraceError, match="no such directory"):
        dptrace.open(tmp_path / "s")


def test_a_table_in_several_parts_reads_as_one(tmp_path):
    """The fleet cache's layout: a table as several part files listed in the manifest."""
    ds = dptrace.load(FIX / "straggler")
    saved = ds.save(tmp_path / "s")
    ranks = ds["mpi_ranks"]
    half = len(ranks) // 2
    folder = saved / "tables" / "mpi_ranks"
    store.write_frame(ranks.iloc[:half].reset_index(drop=True), folder / "part-0.parquet",
                      "mpi_ranks")
    store.write_frame(ranks.iloc[half:].reset_index(drop=True), folder / "part-1.parquet",
                      "mpi_ranks")
    path = saved / store.MANIFEST
    manifest = json.loads(path.read_text())
    entry = next(t for t in manifest["tables"] if t["name"] == "mpi_ranks")
    entry["files"] = ["tables/mpi_ranks/part-0.parquet", "tables/mpi_ranks/part-1.parquet"]
    path.write_text(json.dumps(manifest))
    assert_same(dptrace.open(saved), ds)
    last = ds.run_ids[-1]
    assert_same(dptrace.open(saved, runs=[last]), ds.run(last))
    table = pads.dataset(folder, format="parquet").to_table()
    assert table.num_rows == len(ranks)
    assert table.schema.types == schema.arrow_schema("mpi_ranks").types
    entry["rows"] += 1
    path.write_text(json.dumps(manifest))
    with pytest.raises(DptraceError, match=f"table 'mpi_ranks' has {len(ranks)} rows in its "
                       f"files, the manifest says {len(ranks) + 1}"):
        dptrace.open(saved)


def test_a_column_arrow_cannot_hold_is_a_clear_error(tmp_path):
    mixed = pd.DataFrame({"run": pd.Categorical(["a", "a"]), "odd": [1, "x"]})
    ds = Dataset({"my_table": mixed}, schema.SOURCES.empty(), schema.PROBLEMS.empty())
    with pytest.raises(DptraceError, match="table 'my_table', column 'odd': cannot be stored"):
        ds.save(tmp_path / "s")
    assert list(tmp_path.iterdir()) == []

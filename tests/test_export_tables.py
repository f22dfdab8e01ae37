"""``dptrace export`` writes the runs and findings tables too (issue 31 §4), and its Parquet
files declare each table's explicit Arrow schema (an empty table is typed as well)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import dptrace
from dptrace import schema, store
from dptrace.cli import main
from dptrace.reports import export

FIX = Path(__file__).parent / "fixtures"
THETA = FIX / "mpitrace" / "alcfws_theta_knl32"          # 3 findings, one run
DSCOMMS = FIX / "dscomms"


@pytest.fixture(scope="module")
def theta():
    ds = dptrace.load(THETA)
    return ds, dptrace.findings(ds)


def test_parquet_export_holds_runs_and_findings_equal(tmp_path, theta):
    ds, found = theta
    assert len(found) == 3 and len(ds.runs) == 1
    assert main(["export", str(THETA), "--to", str(tmp_path), "--format", "parquet"]) == 0
    names = sorted(p.stem for p in tmp_path.iterdir())
    assert names == sorted([*ds.tables, "sources", "problems", "runs", "findings"])
    for name, want in (("findings", found), ("runs", ds.runs), ("mpi_ranks", ds["mpi_ranks"])):
        path = tmp_path / f"{name}.parquet"
        assert pq.read_schema(path).types == schema.arrow_schema(name).types, name
        got = store.frame(pq.read_table(path))
        pd.testing.assert_frame_equal(got, want, check_dtype=True, obj=name)
    # pandas alone reads the pandas dtypes back
    back = pd.read_parquet(tmp_path / "findings.parquet")
    assert str(back["rank"].dtype) == "Int64"
    assert back["kind"].astype(str).tolist() == found["kind"].astype(str).tolist()


def test_csv_and_json_exports_hold_runs_and_findings(tmp_path, theta):
    ds, found = theta
    assert main(["export", str(THETA), "--to", str(tmp_path / "c")]) == 0
    csv = pd.read_csv(tmp_path / "c" / "findings.csv")
    assert list(csv.columns) == list(found.columns)
    assert csv["message"].tolist() == found["message"].tolist()
    runs = pd.read_csv(tmp_path / "c" / "runs.csv")
    assert runs["run"].tolist() == ds.run_ids and list(runs.columns) == schema.RUNS.names
    assert main(["export", str(THETA), "--to", str(tmp_path / "j"), "--format", "json"]) == 0
    records = json.loads((tmp_path / "j" / "findings.json").read_text(encoding="utf-8"))
    assert [r["kind"] for r in records] == found["kind"].astype(str).tolist()
    assert json.loads((tmp_path / "j" / "runs.json").read_text())[0]["run"] == ds.run_ids[0]


def test_no_findings_is_an_empty_typed_table(tmp_path):
    ds = dptrace.load(DSCOMMS)
    given = schema.FINDINGS.empty()
    written = export.export(ds, tmp_path, "parquet", findings=given)
    assert tmp_path / "findings.parquet" in written
    table = pq.read_table(tmp_path / "findings.parquet")
    assert table.num_rows == 0 and table.schema.types == schema.arrow_schema("findings").types
    pd.testing.assert_frame_equal(store.frame(table), given, check_dtype=True)


def test_export_takes_thresholds(theta):
    """A communication share of 85.7% passes a threshold of 99%: that finding is gone."""
    ds, found = theta
    assert "comm_share_high" in found["kind"].astype(str).tolist()
    pd.testing.assert_frame_equal(export.tables(ds)["findings"], found)
    raised = export.tables(ds, thresholds={"comm_share_high": 99})["findings"]
    assert raised["kind"].astype(str).tolist() == ["compute_straggler",
                                                   "small_message_allreduce"]

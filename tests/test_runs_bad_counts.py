"""A count that reaches the runs table is checked like a parsed value (issue 30): a real
log with one number changed never costs the report."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace import runs
from dptrace.cli import main

BAGUA = Path(__file__).parent / "fixtures" / "trainlog" / "bagua_net_synthetic_benchmark_from_docs.md"


@pytest.mark.parametrize("count", ["99999999999999999999", "9" * 5000, "0"])
def test_a_world_size_that_is_no_count_is_left_out_and_said(tmp_path, count, capsys):
    text = BAGUA.read_text()
    assert "Total img/sec on 32 GPU(s)" in text
    bad = tmp_path / "bagua.md"
    bad.write_text(text.replace("Total img/sec on 32 GPU(s)", f"Total img/sec on {count} GPU(s)"))
    ds = dptrace.load(bad)
    assert main(["report", str(bad), "--width", "100"]) in (0, 1)
    capsys.readouterr()
    first = ds.runs.iloc[0]
    # the count is named as no world size (or, beyond a float, a problem of its line), never
    # taken
    assert pd.isna(first["world_size"])
    assert "is not a world size" in str(first["world_size_from"]) or \
        (ds.problems["line"] == 23).any()


def test_counts():
    assert runs.count_of(8) == 8 and runs.count_of(8.0) == 8 and runs.count_of("16") == 16
    for bad in (0, -1, 2.5, float("nan"), float("inf"), 1e20, "x", None, 2 ** 31):
        assert runs.count_of(bad) is None, bad


def test_a_log_with_step_times_and_no_rate_renders_every_face(tmp_path):
    """The fuzzer's case (seed 12, trainlog 62): 16 NUL bytes inside the real ThetaGPU DDP
    log; with its rate lines cut away, its only job figure is a step time, and the HTML's
    facts asked the empty series summary for a count (ValueError: NaN to integer)."""
    log = Path(__file__).parent / "fixtures" / "trainlog" / "mlprof_ddp_thetagpu_16gpu.log"
    data = log.read_bytes()
    bad = tmp_path / "nul.log"
    bad.write_bytes(data[:9463] + b"\0" * 16 + data[9463:])
    html, js = tmp_path / "r.html", tmp_path / "r.json"
    assert main(["report", str(bad), "--html", str(html), "--json", str(js)]) == 1
    assert html.stat().st_size and js.stat().st_size

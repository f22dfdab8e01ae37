"""The job's collectives against this system's nccl-tests (issue 17, item 4): a run holding
nccl-tests output beside an mpitrace profile or PyTorch profiler traces places each of the
job's collective size bins on the test's busbw curve. Checked by hand against what the
files themselves hold: the trace's NCCL kernels (sizes from 'In msg nelems', durations),
the profile's message-size table, the test's printed rows.

The pairs are real files from comparable systems, not one machine: HTA's A100 NCCL 2-rank
trace and the ThetaGPU guide's mpitrace profile (DGX A100 nodes), each beside superbench's
nccl-tests all_reduce_perf on 8 A100s of one node."""

from __future__ import annotations

import gzip
import json
import math
import re
import shutil
from pathlib import Path

import pytest

import dptrace
from dptrace.formats.nccltests import compute as nt
from dptrace.reports.evidence import first, locate

HERE = Path(__file__).parent
REAL = HERE.parent.parent / "shared" / "realdata"
pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason="shared/realdata is not beside the clone")
TRACE = REAL / "torch_trace" / "hta_nccl_data_2rank.json.gz"
TESTS = REAL / "nccl" / "superbench_nccltests_allreduce_1n8gpu_a100.log"
PROFILE = HERE / "fixtures" / "mpitrace" / "seed_001_thetagpu_guide_from_docs.txt"
ROW = re.compile(r"^\s+(\d+)\s+(\d+)\s+float\s+sum\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s")


def _run(tmp_path: Path, *files: Path) -> Path:
    d = tmp_path / "run"
    d.mkdir()
    for f in files:
        shutil.copy(f, d / f.name)
    return d


def _system_curve() -> dict[int, float]:
    """size -> out-of-place busbw, as the test printed them."""
    out = {}
    for line in TESTS.read_text().splitlines():
        m = ROW.match(line)
        if m and int(m.group(1)) > 0:
            out[int(m.group(1))] = float(m.group(3))
    return out


def _by_hand(size: float) -> float:
    """The printed busbw at ``size``, linear in log2(size) between the sizes around it."""
    curve = _system_curve()
    lo = max(s for s in curve if s <= size)
    hi = min(s for s in curve if s >= size)
    if lo == hi:
        return curve[lo]
    f = (math.log2(size) - math.log2(lo)) / (math.log2(hi) - math.log2(lo))
    return curve[lo] + f * (curve[hi] - curve[lo])


def _kernels() -> list[tuple[int, float]]:
    """(bytes, seconds) of the trace's allreduce kernels, read with json alone."""
    doc = json.loads(gzip.decompress(TRACE.read_bytes()))
    out = []
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel" and "AllReduce" in e.get("name", ""):
            a = e["args"]
            assert a["dtype"] == "Float"
            out.append((int(a["In msg nelems"]) * 4, e["dur"] * 1e-6))
    return out


def test_trace_bins_against_the_test_by_hand(tmp_path):
    ds = dptrace.load(_run(tmp_path, TRACE, TESTS))
    jvs = nt.job_vs_system(nt.job_bins(ds["mpi_messages"], ds["torch_events"],
                                       ds["torch_traces"]),
                           ds["nccl_tests"], ds["nccl_tests_summary"])
    ar = jvs[jvs["collective"] == "all_reduce"].set_index("bin")
    kernels = _kernels()
    assert int(ar["calls"].sum()) == len(kernels) == 15
    for b, r in ar.iterrows():
        mine = [(n, t) for n, t in kernels if 2 ** b < n <= 2 ** (b + 1)]
        assert r["calls"] == len(mine)
        nbytes, secs = sum(n for n, _ in mine), sum(t for _, t in mine)
        # busbw of an allreduce over 2 ranks: algbw x 2(n-1)/n = algbw
        assert r["busbw_gbps"] == pytest.approx(nbytes / secs / 1e9, rel=1e-9)
        assert r["avg_bytes"] == pytest.approx(nbytes / len(mine))
        assert r["system_busbw_gbps"] == pytest.approx(_by_hand(nbytes / len(mine)), rel=1e-9)
        assert r["ratio"] == pytest.approx(r["busbw_gbps"] / r["system_busbw_gbps"])
        assert r["nranks"] == 2 and r["test_nranks"] == 8 and r["test_nhosts"] == 1
    # 16-32 MiB: 9 kernels, most of the time; about 8.7 GB/s against about 150 GB/s
    assert ar.loc[24, "calls"] == 9 and ar.loc[24, "time_share"] > 0.6
    assert ar.loc[24, "busbw_gbps"] == pytest.approx(8.69, abs=0.01)
    assert ar.loc[24, "system_busbw_gbps"] == pytest.approx(150.0, abs=0.1)
    # broadcasts: the run has no broadcast_perf, so no row
    assert set(jvs["collective"]) == {"all_reduce"}


def test_the_finding_names_the_bin_with_the_most_time(tmp_path):
    ds = dptrace.load(_run(tmp_path, TRACE, TESTS))
    f = dptrace.findings(ds)
    mine = f[f["kind"] == "below_system_busbw"]
    assert len(mine) == 1
    r = mine.iloc[0]
    assert r["severity"] == "warning" and r["run"] == "run"
    assert "all_reduce of 16,777,217-33,554,432 bytes" in r["message"]
    assert "8.69 GB/s" in r["message"] and "150 GB/s" in r["message"]
    assert "8 ranks on 1 host; the job ran 2 ranks" in r["message"]
    assert r["evidence"] == "nccl_tests.job_vs_system run=run collective=all_reduce bin=24"
    report = dptrace.report(ds)
    sec, table, row = locate(report.tables, *first(r), r["run"])
    assert (sec, table) == ("nccl_tests", "job_vs_system") and row is not None
    assert report.tables["nccl_tests.job_vs_system"].iloc[row]["bin"] == 24
    assert r["value"] == pytest.approx(100 * 8.6934 / 149.986, rel=1e-3)
    assert r["threshold"] == 50.0
    # a threshold below every ratio: no finding
    quiet = dptrace.findings(ds, thresholds={"below_system_busbw": 1})
    assert not (quiet["kind"] == "below_system_busbw").any()


def test_mpitrace_bins_against_the_test_by_hand(tmp_path):
    ds = dptrace.load(_run(tmp_path, PROFILE, TESTS))
    jvs = nt.job_vs_system(nt.job_bins(ds["mpi_messages"], ds["torch_events"],
                                       ds["torch_traces"]),
                           ds["nccl_tests"], ds["nccl_tests_summary"])
    r = jvs.set_index("bin").loc[25]
    # the profile's own row for MPI_Allreduce 32-64 MiB, summed over the ranks it holds
    m = ds["mpi_messages"]
    rows = m[(m["routine"] == "MPI_Allreduce") & (m["bin"] == 25)]
    nbytes, secs, calls = rows["bytes"].sum(), rows["time_s"].sum(), rows["calls"].sum()
    assert r["calls"] == calls == 50
    assert r["avg_bytes"] == pytest.approx(nbytes / calls)
    assert r["busbw_gbps"] == pytest.approx(nbytes / secs * 2 * 7 / 8 / 1e9, rel=1e-9)
    assert r["system_busbw_gbps"] == pytest.approx(_by_hand(nbytes / calls), rel=1e-9)
    # sizes where the test printed 0.00 GB/s have no ratio (no reference)
    tiny = jvs[jvs["bin"] <= 4]
    assert len(tiny) == 2 and tiny["ratio"].isna().all()
    kinds = dptrace.findings(ds)["kind"].tolist()
    assert "below_system_busbw" in kinds and "low_busbw" in kinds


def test_no_comparison_across_runs(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    shutil.copy(TRACE, a / TRACE.name)
    shutil.copy(TESTS, b / TESTS.name)
    ds = dptrace.load({"job": a, "system": b})
    assert not (dptrace.findings(ds)["kind"] == "below_system_busbw").any()
    section = dptrace.report(ds).section("nccl_tests")
    assert section is not None and "job_vs_system" not in section.tables


def test_beyond_the_largest_size_tested():
    import pandas as pd

    curve = pd.Series([10.0, 20.0], index=[1 << 20, 1 << 22])
    assert nt._on_curve(curve, 1 << 21) == (15.0, False)
    assert nt._on_curve(curve, 1 << 23) == (20.0, True)
    v, beyond = nt._on_curve(curve, 1 << 10)
    assert math.isnan(v) and not beyond


def test_section_terminal_json_and_figure(tmp_path):
    run = _run(tmp_path, TRACE, TESTS)
    out = tmp_path / "r.json"
    html = tmp_path / "r.html"
    from dptrace.cli import main

    assert main(["report", str(run), "--json", str(out), "--html", str(html),
                 "--width", "140"]) in (0, 1)
    doc = json.loads(out.read_text())
    jvs = doc["sections"]["nccl_tests"]["tables"]["job_vs_system"]
    assert len(jvs) == 3 and {r["bin"] for r in jvs} == {22, 23, 24}
    page = html.read_text()
    assert "job: PyTorch profiler trace (1 rank)" in page

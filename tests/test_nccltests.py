"""nccl-tests output (dptrace.formats.nccltests) on real files, checked against what each
file itself prints (tests/fixtures/nccltests, PROVENANCE.tsv there; the larger Polaris runs
in ../shared/realdata/scaling), and on damaged copies: problems naming file and line, never
other numbers."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace.formats.nccltests import sniff
from dptrace.registry import detect_all
from dptrace.sources import Source

HERE = Path(__file__).parent
FIX = HERE / "fixtures" / "nccltests"
REAL = HERE.parent.parent / "shared" / "realdata"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="shared/realdata is not beside the clone")
FILES = sorted(p for p in FIX.iterdir() if p.suffix in (".log", ".dat", ".md"))
TAG = re.compile(r"\[\d+,\d+\]<stdout>:")
AVG = re.compile(r"# Avg bus bandwidth\s*:\s*([\d.]+)")


def _rows(path: Path) -> pd.DataFrame:
    ds = dptrace.load(path)
    assert ds.sources["format"].item().startswith("nccltests"), ds.sources
    return ds["nccl_tests"]


def _fields(path: Path, lineno: int) -> list[str]:
    """The fields of line ``lineno`` of the file, tags removed (the file's own text)."""
    line = path.read_text().split("\n")[lineno - 1]
    return TAG.sub("", line).split()


# -- hand-picked rows, as the files print them ---------------------------------------------

#: (file, line, size_bytes, out-of-place (time_us, algbw, busbw), in-place (...), #wrong)
PICKED = [
    ("superbench_nccltests_allreduce_1n8gpu_a100.log", 50, 8589934592,
     (63896, 134.44, 235.26), (63959, 134.30, 235.03), None),
    ("superbench_nccltests_allreduce_1n8gpu_a100.log", 33, 65536,
     (37.82, 1.73, 3.03), (37.25, 1.76, 3.08), None),
    ("superbench_nccltests_alltoall_1n8gpu_a100.log", 49, 8589934592,
     (33508, 256.36, 224.31), (33234, 258.47, 226.16), None),
    ("p5_efa_nccltests_allreduce_2n16gpu_tagoutput.log", 2936, 17179869184,
     (66023, 260.21, 487.90), (65990, 260.34, 488.14), 0),
    ("p5_efa_nccltests_allreduce_2n16gpu_tagoutput.log", 2905, 8,
     (85.70, 0.00, 0.00), (74.97, 0.00, 0.00), 0),
    ("polaris_nccltests_allreduce_n2x4gpu.dat", 44, 1073741824,
     (51310, 20.93, 36.62), (51227, 20.96, 36.68), 0),
    ("oci_horovod_nccltests_8gpu_vs_16gpu_from_docs.md", 22, 10737418240,
     (79751, 134.64, 235.61), (79750, 134.64, 235.62), 0),
    ("oci_horovod_nccltests_8gpu_vs_16gpu_from_docs.md", 55, 10737418240,
     (90330, 118.87, 222.88), (91945, 116.78, 218.96), 0),
]


@pytest.mark.parametrize(("name", "line", "size", "out", "inp", "wrong"), PICKED)
def test_hand_picked_rows(name, line, size, out, inp, wrong):
    rows = _rows(FIX / name)
    mine = rows[rows["lineno"] == line]
    assert mine["placement"].tolist() == ["out-of-place", "in-place"]
    assert (mine["size_bytes"] == size).all()
    for (_, r), want in zip(mine.iterrows(), (out, inp), strict=True):
        assert (r["time_us"], r["algbw_gbps"], r["busbw_gbps"]) == pytest.approx(want)
        assert (r["wrong"] if pd.notna(r["wrong"]) else None) == wrong


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_row_is_its_line(path):
    """Each row equals the fields of the line it names (split by whitespace, tags removed):
    size, count, type, and time/algbw/busbw of its placement."""
    rows = _rows(path)
    assert len(rows)
    for (lineno, placement), r in rows.set_index(["lineno", "placement"]).iterrows():
        f = _fields(path, lineno)
        assert (int(f[0]), int(f[1]), f[2]) == (r["size_bytes"], r["count"], r["type"])
        tail = f[-8:] if placement == "out-of-place" else f[-4:]
        assert [float(x) for x in tail[:3]] == [r["time_us"], r["algbw_gbps"], r["busbw_gbps"]]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_printed_average_and_the_rows_agree(path):
    """The summary keeps each '# Avg bus bandwidth' as printed, and it is the mean of the
    test's busbw column (each value printed to 0.01)."""
    ds = dptrace.load(path)
    printed = [float(x) for x in AVG.findall(path.read_text())]
    summary = ds["nccl_tests_summary"]
    assert summary["avg_busbw_gbps"].tolist() == printed
    for block, g in ds["nccl_tests"].groupby("block"):
        assert abs(g["busbw_gbps"].mean() - printed[block]) <= 0.005


@pytest.mark.parametrize(("name", "rows", "nranks", "nhosts", "test", "redop"), [
    ("superbench_nccltests_allreduce_1n8gpu_a100.log", 68, 8, 1, "all_reduce", "sum"),
    ("superbench_nccltests_alltoall_1n8gpu_a100.log", 68, 8, 1, "alltoall", None),
    ("p5_efa_nccltests_allreduce_2n16gpu_tagoutput.log", 64, 16, 2, "all_reduce", "sum"),
    ("polaris_nccltests_allreduce_n2x4gpu.dat", 58, 8, 2, "all_reduce", "sum"),
    ("polaris_nccltests_allreduce_n8x4gpu.dat", 58, 32, 8, "all_reduce", "sum"),
])
def test_counts_ranks_hosts(name, rows, nranks, nhosts, test, redop):
    ds = dptrace.load(FIX / name)
    t, s = ds["nccl_tests"], ds["nccl_tests_summary"]
    assert len(t) == rows
    assert set(t["nranks"]) == {nranks}
    assert (s["nranks"].item(), s["nhosts"].item(), s["test"].item()) == (nranks, nhosts, test)
    assert set(t["test"]) == {test}
    assert set(t["redop"].dropna()) == ({redop} if redop else set())
    assert ds.problems.empty, ds.problems


def test_na_and_counted_wrong():
    old = _rows(FIX / "superbench_nccltests_allreduce_1n8gpu_a100.log")
    assert old["wrong"].isna().all() and old["root"].isna().all()     # N/A, no root column
    new = _rows(FIX / "polaris_nccltests_allreduce_n2x4gpu.dat")
    assert (new["wrong"] == 0).all() and (new["root"] == -1).all()


def test_markdown_page_with_two_runs_and_a_training_log():
    path = FIX / "oci_horovod_nccltests_8gpu_vs_16gpu_from_docs.md"
    ds = dptrace.load(path)
    assert ds.sources["format"].item() == "nccltests+trainlog"
    s = ds["nccl_tests_summary"]
    assert s[["block", "ngpus", "nranks", "nhosts"]].values.tolist() == [[0, 8, 8, 1],
                                                                        [1, 1, 16, 2]]
    assert len(ds["throughput"]) > 0          # the Horovod benchmark lines are still read
    assert ds.sources["variant"].item() == "plain; horovod_benchmark"   # its tables: untagged


@needs_real
@pytest.mark.parametrize(("name", "nranks", "nhosts"), [
    ("polaris_nccltests_allreduce_n256x4gpu.dat", 1024, 256),
    ("polaris_nccltests_allreduce_n540x4gpu.dat", 2160, 540),
])
def test_polaris_large_runs(name, nranks, nhosts):
    path = REAL / "scaling" / name
    ds = dptrace.load(path)
    s = ds["nccl_tests_summary"]
    assert (s["nranks"].item(), s["nhosts"].item()) == (nranks, nhosts)
    assert s["avg_busbw_gbps"].tolist() == [float(x) for x in AVG.findall(path.read_text())]
    assert len(ds["nccl_tests"]) == 58


@needs_real
def test_only_nccl_tests_outputs_are_claimed():
    """Among every real input, the sniffer claims exactly the nccl-tests outputs (training
    logs full of NCCL INFO lines are not claimed)."""
    claimed = []
    for p in sorted(REAL.rglob("*")):
        if p.is_file() and p.suffix not in (".tsv",):
            src = Source(str(p), p)
            if sniff(src, src.head()) > 0:
                claimed.append(p.name)
    assert claimed and all("nccltests" in n for n in claimed), claimed
    assert len(claimed) == 8


def test_mentions_of_nccl_are_not_claimed(tmp_path):
    p = tmp_path / "train.log"
    p.write_text("host:1:1 [0] NCCL INFO nThread 4 nGpus 1\nwe ran all_reduce_perf: busbw "
                 "was 200 GB/s\n# size count type\nstep 1 loss 2.0\n")
    src = Source(str(p), p)
    assert sniff(src, src.head()) == 0
    # the NCCL INFO line is NCCL's own: the nccl format reads it beside the training log
    assert [x.name for x in detect_all(src)] == ["nccl", "trainlog"]


# -- bad input -----------------------------------------------------------------------------

def _write(tmp_path: Path, text: str, name: str = "all_reduce.log") -> Path:
    p = tmp_path / name
    p.write_bytes(text.encode())
    return p


def _lines(name: str) -> list[str]:
    return (FIX / name).read_text().split("\n")


def test_truncated_mid_row(tmp_path):
    lines = _lines("polaris_nccltests_allreduce_n2x4gpu.dat")
    cut = "\n".join(lines[:43]) + "\n" + lines[43][:70]          # line 44 cut, no newline
    ds = dptrace.load(_write(tmp_path, cut))
    t = ds["nccl_tests"]
    clean = _rows(FIX / "polaris_nccltests_allreduce_n2x4gpu.dat")
    assert t["lineno"].max() == 43
    cols = ["size_bytes", "placement", "time_us", "busbw_gbps", "lineno"]
    pd.testing.assert_frame_equal(t[cols], clean[clean["lineno"] <= 43][cols])
    msgs = ds.problems[["line", "message"]].values.tolist()
    assert any(line == 44 and "cut" in m for line, m in msgs), msgs
    assert ds.problems["source"].eq(str(tmp_path / "all_reduce.log")).all()


@pytest.mark.parametrize("damage", ["drop", "extra", "na_time"])
def test_row_with_wrong_fields_is_skipped(tmp_path, damage):
    lines = _lines("polaris_nccltests_allreduce_n2x4gpu.dat")
    f = lines[30].split()                                            # line 31
    if damage == "drop":
        f.pop(6)
    elif damage == "extra":
        f.append("7")
    else:
        f[5] = "N/A"
    lines[30] = "  " + "  ".join(f)
    ds = dptrace.load(_write(tmp_path, "\n".join(lines)))
    t = ds["nccl_tests"]
    assert 31 not in set(t["lineno"]) and len(t) == 56
    p = ds.problems
    assert p[["line", "severity"]].values.tolist() == [[31, "error"]]
    assert "not a whole nccl-tests row" in p["message"].item()


def test_torn_row_of_two_ranks(tmp_path):
    lines = _lines("p5_efa_nccltests_allreduce_2n16gpu_tagoutput.log")
    row = lines[2919]                                               # line 2920, 262144 B
    first, rest = row.split("[1,0]<stdout>:", 2)[1:]
    lines[2919] = ("[1,0]<stdout>:" + first + "[1,3]<stdout>:test-nccl-worker-0:28:70 [3] "
                   "NCCL INFO comm destroyed")
    lines.insert(2920, "[1,0]<stdout>:" + rest)
    ds = dptrace.load(_write(tmp_path, "\n".join(lines), "p5_allreduce.log"))
    t = ds["nccl_tests"]
    assert 262144 not in set(t["size_bytes"]) and len(t) == 62
    every = ds.problems[["line", "message"]].values.tolist()
    # the NCCL reader beside it names the same line: an NCCL line torn into the row
    msgs = [m for m in every if "NCCL line(s) torn" not in m[1]]
    assert [m[0] for m in every if m not in msgs] == [2920], every
    assert [m[0] for m in msgs] == [2920, 2921], msgs
    assert "several ranks" in msgs[0][1]
    # the rows after it keep their numbers (line numbers one later)
    big = t[t["size_bytes"] == 17179869184]
    assert big["busbw_gbps"].tolist() == [487.90, 488.14]


def test_number_too_large_is_missing(tmp_path):
    lines = _lines("polaris_nccltests_allreduce_n2x4gpu.dat")
    lines[30] = lines[30].replace("131072", "99999999999999999999", 1)
    ds = dptrace.load(_write(tmp_path, "\n".join(lines)))
    t = ds["nccl_tests"]
    r = t[t["lineno"] == 31]
    assert len(r) == 2 and r["size_bytes"].isna().all()
    assert ds.problems["line"].tolist() == [31]
    assert ds.problems["severity"].tolist() == ["error"]


def test_cut_run_without_average(tmp_path):
    lines = _lines("polaris_nccltests_allreduce_n2x4gpu.dat")[:40]
    ds = dptrace.load(_write(tmp_path, "\n".join(lines) + "\n"))
    assert len(ds["nccl_tests"]) == 2 * (40 - 15)
    s = ds["nccl_tests_summary"]
    assert s["avg_busbw_gbps"].isna().all()
    assert "does not end with '# Avg bus bandwidth'" in ds.problems["message"].item()


def test_srun_labels(tmp_path):
    lines = _lines("polaris_nccltests_allreduce_n2x4gpu.dat")
    labelled = "\n".join(f"0: {ln}" for ln in lines if ln)
    ds = dptrace.load(_write(tmp_path, labelled + "\n"))
    clean = _rows(FIX / "polaris_nccltests_allreduce_n2x4gpu.dat")
    cols = ["size_bytes", "placement", "time_us", "busbw_gbps", "nranks"]
    pd.testing.assert_frame_equal(ds["nccl_tests"][cols], clean[cols])


def test_report_section(tmp_path):
    rep = dptrace.report(dptrace.load(FIX / "p5_efa_nccltests_allreduce_2n16gpu_tagoutput.log"))
    sec = rep.section("nccl_tests")
    # "tagged output", then the NCCL reader's variant (the log's NCCL INFO lines)
    assert rep.dataset.sources["variant"].item() == "tagged output; NCCL 2.22.3+cuda12.2"
    o = sec.tables["tests"].iloc[0]
    assert (o["test"], o["nranks"], o["nhosts"], o["sizes"]) == ("all_reduce", 16, 2, 32)
    assert (o["peak_busbw_gbps"], o["peak_size_bytes"], o["peak_placement"]) == \
        (488.14, 17179869184, "in-place")
    assert o["avg_busbw_gbps"] == 124.584
    fig = sec.figures["test1_busbw"]
    assert fig.layout.xaxis.type == "log"
    assert [tr.name for tr in fig.data] == ["out-of-place", "in-place"]
    assert list(fig.data[1].y)[-1] == 488.14


def test_runs_table_takes_world_size_and_nodes_when_nothing_else_says():
    alone = dptrace.load(FIX / "p5_efa_nccltests_allreduce_2n16gpu_tagoutput.log").runs
    assert alone[["world_size", "nodes"]].values.tolist() == [[16, 2]]
    assert alone["world_size_from"].item() == "nccl-tests '# Using devices' ranks"
    # a doc page whose training log states its world size: the log's word stands
    page = dptrace.load(FIX / "oci_horovod_nccltests_8gpu_vs_16gpu_from_docs.md").runs
    assert page["world_size_from"].str.startswith("Horovod benchmark").all()

"""PyTorch profiler (Kineto) traces (dptrace.formats.torchtrace): HolisticTraceAnalysis' real
sample traces (../shared/realdata/torch_trace, PROVENANCE.tsv there) checked against counts
made here with json and gzip alone, the 2-rank gloo runs made for this project
(tests/fixtures/torchtrace: one with rank 1 slowed, one balanced), sniffing against Horovod
timelines, and cut traces."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import _cache
import numpy as np
import pytest

import dptrace
from dptrace import registry
from dptrace.findings import build
from dptrace.formats.torchtrace import compute as tt
from dptrace.formats.torchtrace.read import collective_of
from dptrace.sources import Source

HERE = Path(__file__).parent
FIX = HERE / "fixtures" / "torchtrace"
SLOW, BALANCED = FIX / "slow_rank1", FIX / "balanced"
ONE = FIX / "one_step"
REAL = HERE.parent.parent / "shared" / "realdata" / "torch_trace"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="shared/realdata is not beside the clone")
_NCCL_KERNEL = re.compile(r"^nccl(?:Dev)?Kernel_([A-Za-z]+)_")


def _json(path: Path) -> dict:
    with gzip.open(path) as fh:
        return json.load(fh)


def _kernel_counts(doc: dict) -> dict[str, int]:
    """Collective kernels per NCCL op name, counted here without dptrace."""
    out: dict[str, int] = {}
    for e in doc["traceEvents"]:
        m = _NCCL_KERNEL.match(str(e.get("name", "")))
        if e.get("ph") == "X" and e.get("cat") == "kernel" and m:
            out[m.group(1)] = out.get(m.group(1), 0) + 1
    return out


#: file, rank, world size, backend, NCCL kernels by op (counted by hand with zcat | grep -c,
#: and again in the test with json)
REAL_TRACES = [
    ("hta_nccl_data_2rank.json.gz", 0, 2, "nccl", {"AllReduce": 15, "Broadcast": 6}),
    ("hta_trace_diff_control_rank3_ws8.json.gz", 3, 8, "nccl",
     {"SendRecv": 42, "AllReduce": 18}),
    ("hta_sampled_rank-0_ws128.json.gz", 0, 128, "nccl", {"SendRecv": 10}),
    ("hta_sampled_rank-1_ws128.json.gz", 1, 128, "nccl", {"SendRecv": 10}),
    ("hta_rank0_ws16_alltoall.json.gz", 0, 16, "nccl", {"SendRecv": 80}),
    ("hta_df_index_resolver_rank1_ws2.json.gz", 1, 2, "nccl", {"AllReduce": 2020}),
    ("hta_ns_resolution_rank-0.pt.trace.json.gz", 0, 1, "nccl", {}),
]
_CANON = {"AllReduce": "all_reduce", "Broadcast": "broadcast", "SendRecv": "send_recv"}


@needs_real
@pytest.mark.parametrize(("name", "rank", "world", "backend", "kernels"), REAL_TRACES,
                         ids=[t[0] for t in REAL_TRACES])
def test_real_traces_rank_world_and_collective_kernels(name, rank, world, backend, kernels):
    path = REAL / name
    ds = _cache.load(path)   # read only: shared with test_chrome_block_boundaries
    assert ds.sources["format"].item() == "torchtrace"
    assert ds.sources["status"].item() == "ok", ds.problems
    tr = ds["torch_traces"].iloc[0]
    assert (tr["rank"], tr["world_size"], tr["backend"]) == (rank, world, backend)
    doc = _json(path)
    assert doc["distributedInfo"]["rank"] == rank
    assert _kernel_counts(doc) == kernels                     # the literal numbers hold
    ev = ds["torch_events"]
    comm = ev[(ev["role"] == "communication")]
    got = comm.groupby(comm["collective"].astype(str)).size().to_dict()
    assert got == {_CANON[k]: n for k, n in kernels.items()}
    assert (ev["rank"] == rank).all()
    assert int(tr["kernels"]) == sum(1 for e in doc["traceEvents"]
                                     if e.get("ph") == "X" and e.get("cat") == "kernel")
    assert ds.runs["world_size"].item() == world


@needs_real
def test_sizes_from_in_msg_nelems():
    """hta_nccl_data_2rank: the AllReduce kernels carry 'In msg nelems' and dtype Float."""
    path = REAL / "hta_nccl_data_2rank.json.gz"
    want = sorted(e["args"]["In msg nelems"] * 4 for e in _json(path)["traceEvents"]
                  if e.get("cat") == "kernel" and "AllReduce" in e.get("name", ""))
    ev = dptrace.load(path)["torch_events"]
    k = ev[(ev["role"] == "communication") & (ev["collective"] == "all_reduce")]
    assert sorted(k["size_bytes"].astype(int).tolist()) == want
    assert 26550272 in want                                  # 6,637,568 floats
    coll = tt.collectives(ev)
    ar = coll[(coll["collective"] == "all_reduce") & (coll["size_bytes"] == 26550272)]
    assert ar["calls"].item() == 3


@needs_real
def test_sizes_from_input_dims():
    """hta_sampled_rank-1: nccl:all_to_all's Input Dims (e.g. [[339738624]]) on the CPU op."""
    path = REAL / "hta_sampled_rank-1_ws128.json.gz"
    want = sorted(int(np.prod(e["args"]["Input Dims"][0])) for e in _json(path)["traceEvents"]
                  if e.get("name") == "nccl:all_to_all")
    ev = dptrace.load(path)["torch_events"]
    a2a = ev[(ev["name"] == "nccl:all_to_all")]
    assert len(a2a) == 4 and (a2a["collective"] == "all_to_all").all()
    assert (a2a["role"] == "comm_op").all()                 # a GPU trace: the kernel is the work
    assert sorted(a2a["elements"].astype(int)) == want
    assert 339738624 in want


@pytest.mark.parametrize(("name", "want"), [
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "all_reduce"),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "all_gather"),
    ("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(...)", "reduce_scatter"),
    ("nccl:all_reduce", "all_reduce"), ("gloo:all_reduce", "all_reduce"),
    ("c10d::allreduce_", "all_reduce"), ("c10d::_allgather_base_", "all_gather"),
    ("c10d::alltoall_base_", "all_to_all"), ("nccl:_reduce_scatter_base", "reduce_scatter"),
    ("c10d::broadcast_", "broadcast"), ("aten::mm", None),
])
def test_collective_names(name, want):
    assert collective_of(name) == want


def _gloo_intervals(path: Path) -> list[tuple[float, float]]:
    return sorted((e["ts"], e["ts"] + e["dur"]) for e in _json(path)["traceEvents"]
                  if e.get("ph") == "X" and str(e.get("name")).startswith("gloo:"))


def test_per_rank_communication_time_by_hand():
    """The slowed run: communication is the gloo:all_reduce work on gloo's threads; they do
    not overlap one another, so each rank's time is their plain sum."""
    b = tt.breakdown(dptrace.load(SLOW)["torch_events"]).set_index("rank")
    for rank in (0, 1):
        iv = _gloo_intervals(SLOW / f"rank{rank}.pt.trace.json.gz")
        assert len(iv) == 3 and all(a[1] <= b_[0] for a, b_ in zip(iv, iv[1:], strict=False))
        by_hand = sum(e - s for s, e in iv)
        assert b.loc[rank, "communication_us"] == pytest.approx(by_hand, abs=1e-6)
        assert b.loc[rank, "basis"] == "cpu" and b.loc[rank, "collectives"] == 3
        assert b.loc[rank, "steps"] == 3
    # by hand from the files: 53,726.898 + 53,082.718 + 51,476.603 us on rank 0
    assert b.loc[0, "communication_us"] == pytest.approx(158286.219, abs=0.01)
    assert b.loc[1, "communication_us"] == pytest.approx(1280.715 + 1997.27 + 1346.147,
                                                         abs=0.01)


def test_breakdown_adds_up():
    for d in (SLOW, BALANCED):
        b = tt.breakdown(dptrace.load(d)["torch_events"])
        for r in b.itertuples():
            assert r.exposed_comm_us == pytest.approx(r.communication_us - r.overlap_us)
            busy = r.compute_us + r.communication_us - r.overlap_us
            assert r.idle_us == pytest.approx(r.span_us - busy, abs=1e-3)
            assert 0 <= r.overlap_pct <= 100


def test_union_of_intervals():
    s = np.array([0.0, 5.0, 2.0, 20.0, 21.0])
    e = np.array([3.0, 10.0, 6.0, 22.0, 21.5])
    assert tt.union_us(s, e) == 12.0                         # [0, 10) and [20, 22)


def test_steps_and_world_size_of_the_fixture():
    ds = dptrace.load(SLOW)
    st = tt.steps(ds["torch_events"])
    assert st.groupby("rank")["step"].apply(list).to_dict() == {0: [2, 3, 4], 1: [2, 3, 4]}
    assert ds.runs[["world_size", "world_size_from"]].values.tolist() == [
        [2, "PyTorch profiler distributedInfo"]]
    ev = ds["torch_events"]
    assert ev.loc[ev["role"] == "communication", "size_bytes"].eq(262912 * 4).all()


def test_the_slowed_rank_is_named():
    found = build(dptrace.load(SLOW))
    f = found[found["kind"] == "collective_straggler"]
    assert f["subject"].tolist() == ["rank 1"]
    assert f["rank"].tolist() == [1]
    assert "Rank 1 spent" in f["message"].item() and "158.3 ms" in f["message"].item()
    assert f["evidence"].item() == "torchtrace.ranks run=slow_rank1 rank=1"


def test_no_straggler_in_the_balanced_run():
    found = build(dptrace.load(BALANCED))
    assert found[found["kind"] == "collective_straggler"].empty


def test_no_straggler_with_one_rank():
    found = build(dptrace.load(SLOW / "rank0.pt.trace.json.gz"))
    assert found[found["kind"] == "collective_straggler"].empty


@needs_real
def test_traces_of_different_jobs_are_not_compared():
    """HTA's samples: ranks of five jobs in one directory. Only the two ranks of the sampled
    128-rank job (same world size and backend, overlapping times) are compared; their
    collectives take 396.2 ms and 379.1 ms: no straggler."""
    ds = _cache.load(REAL)   # read only: shared with the other modules
    rc = tt.rank_comm(ds["torch_events"], ds["torch_traces"])
    job = rc[rc["job"].notna()]
    assert sorted(job["source"].map(lambda s: Path(s).name)) == [
        "hta_sampled_rank-0_ws128.json.gz", "hta_sampled_rank-1_ws128.json.gz"]
    assert job["communication_us"].round(0).tolist() == [396199.0, 379053.0]
    assert build(ds).query("kind == 'collective_straggler'").empty
    # one run per job: the two ranks of the 128-rank job are one run, each other trace its own
    runs = ds.runs.set_index("run")
    assert len(runs) == 6
    pair = ds.sources.loc[ds.sources["source"].str.contains("hta_sampled_rank"), "run"]
    assert pair.nunique() == 1 and runs.loc[pair.iloc[0], "world_size"] == 128


# -- sniffing: torch traces vs Horovod timelines ------------------------------------------------

HOROVOD = HERE / "fixtures" / "horovod"


@pytest.mark.parametrize(("path", "fmt"), [
    (SLOW / "rank0.pt.trace.json.gz", "torchtrace"),
    (HOROVOD / "hta_sampled_rank-1_ws128.json.gz", "torchtrace"),
    (HOROVOD / "cipherdoc_horovod_pytorch_bcast_only.json", "horovod"),
    (HOROVOD / "andrewor14_horovod_timeline_2019_4rank.json", "horovod"),
    (HOROVOD / "smdebug_horovod_timeline_small.json", "horovod"),
])
def test_sniffing_both_ways(path, fmt):
    src = Source(str(path), path)
    assert registry.detect(src).name == fmt
    other = "horovod" if fmt == "torchtrace" else "torchtrace"
    assert registry.get(other).sniff(src, src.head()) < registry.get(fmt).sniff(src, src.head())


def test_metadata_after_the_events(tmp_path):
    """export_chrome_trace of some versions writes distributedInfo after traceEvents."""
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10,
               "dur": 5, "args": {}},
              {"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 1,
               "tid": 2, "ts": 20, "dur": 7, "args": {"Input Dims": [[8]]}}]
    doc = {"schemaVersion": 1, "traceEvents": events,
           "distributedInfo": {"backend": "gloo", "rank": 3, "world_size": 4,
                               "pg_config": [{"ranks": [0, 1, 2, 3]}]}, "traceName": "x"}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc, indent=1))
    ds = dptrace.load(path)
    assert ds["torch_traces"][["rank", "world_size"]].values.tolist() == [[3, 4]]
    assert len(ds["torch_events"]) == 2 and ds.problems.empty


def test_empty_events_array(tmp_path):
    path = tmp_path / "t.json"
    path.write_text('{"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": 2, '
                    '"world_size": 4}, "traceEvents": [], "traceName": "x"}')
    ds = dptrace.load(path)
    assert ds["torch_traces"][["rank", "world_size", "events"]].values.tolist() == [[2, 4, 0]]
    assert ds.problems[["severity"]].values.tolist() == [["warning"]]
    assert "no events" in ds.problems["message"].item()


# -- cut traces (killed jobs) -------------------------------------------------------------------

def _whole_events(path: Path) -> int:
    return len(dptrace.load(path)["torch_events"])


@pytest.mark.parametrize("fraction", [0.3, 0.6, 0.95])
def test_cut_json_is_read_up_to_the_cut(tmp_path, fraction):
    raw = gzip.decompress((SLOW / "rank0.pt.trace.json.gz").read_bytes())
    cut = tmp_path / "rank0.pt.trace.json"
    cut.write_bytes(raw[:int(len(raw) * fraction)])
    ds = dptrace.load(cut)
    ev = ds["torch_events"]
    assert ds.sources["format"].item() == "torchtrace"
    assert 0 < len(ev) < _whole_events(SLOW / "rank0.pt.trace.json.gz")
    msgs = ds.problems["message"].tolist()
    assert any("killed" in m for m in msgs), msgs
    assert set(ds.problems["source"].astype(str)) == {str(cut)}
    assert ds["torch_traces"]["cut"].item() and ds["torch_traces"]["rank"].item() == 0


def test_cut_gzip_is_read_up_to_the_cut(tmp_path):
    data = (SLOW / "rank1.pt.trace.json.gz").read_bytes()
    cut = tmp_path / "rank1.pt.trace.json.gz"
    cut.write_bytes(data[:len(data) // 2])
    ds = dptrace.load(cut)
    assert ds.sources["format"].item() == "torchtrace"
    ev = ds["torch_events"]
    assert 0 < len(ev) < _whole_events(SLOW / "rank1.pt.trace.json.gz")
    assert (ds.problems["severity"] == "error").any()
    assert all(str(cut) in s for s in ds.problems["source"].astype(str))
    assert ds["torch_traces"]["cut"].item()


def test_cut_before_the_events(tmp_path):
    raw = gzip.decompress((SLOW / "rank0.pt.trace.json.gz").read_bytes())
    cut = tmp_path / "t.pt.trace.json"
    cut.write_bytes(raw[:raw.index(b'"traceEvents"')])
    ds = dptrace.load(cut, format="torchtrace")
    assert ds["torch_events"].empty
    assert "no traceEvents" in " ".join(ds.problems["message"].tolist())


# -- the report section -------------------------------------------------------------------------

def test_report_section_terminal_and_figures(tmp_path):
    import io

    from rich.console import Console

    from dptrace.formats.torchtrace.terminal import draw_torch_profile

    rep = dptrace.report(dptrace.load(SLOW))
    sec = rep.section("torch_profile")
    ranks = sec.tables["ranks"]
    assert ranks["rank"].tolist() == [0, 1]
    assert ranks["communication_us"].round(3).tolist() == [158286.219, 4624.132]
    fig = sec.figures["run1_breakdown"]
    assert [t.name for t in fig.data] == ["compute + communication", "compute only",
                                          "exposed communication", "memory only", "idle"]
    for i in range(2):                         # the stacked parts add up to the span (ms)
        total = sum(float(t.y[i]) for t in fig.data)
        assert total == pytest.approx(ranks["span_us"].iloc[i] / 1e3, rel=1e-9)
    steps = sec.figures["run1_steps"]
    assert [t.name for t in steps.data] == ["rank 0", "rank 1"]
    assert list(steps.data[0].x) == [2, 3, 4]
    buf = io.StringIO()
    Console(file=buf, width=140, color_system=None).print(draw_torch_profile(sec))
    out = buf.getvalue()
    assert "PyTorch profiler" in out and "158.3 ms" in out and "4.6 ms" in out
    assert "all_reduce" in out and "1.0 MiB" in out


def test_cli_report_with_html_and_json(tmp_path):
    from dptrace.cli import main

    html, js = tmp_path / "r.html", tmp_path / "r.json"
    assert main(["report", str(BALANCED), "--html", str(html), "--json", str(js),
                 "--width", "100"]) == 0
    doc = json.loads(js.read_text())
    assert "torch_profile" in json.dumps(doc)
    assert "Temporal breakdown per rank" in html.read_text()


def test_metadata_that_does_not_decode_is_named(tmp_path):
    # a byte that is not UTF-8 in the metadata (found by the fuzzer: it raised
    # UnicodeDecodeError out of the reader): the events are read, a warning names the file
    raw = (ONE / "rank0.pt.trace.json").read_bytes()
    bad = raw.replace(b'"schemaVersion"', b'"schema\xffVersion"', 1)
    assert bad != raw
    path = tmp_path / "rank0.pt.trace.json"
    path.write_bytes(bad)
    ds = dptrace.load(path, format="torchtrace")
    assert len(ds["torch_events"]) == len(dptrace.load(ONE / "rank0.pt.trace.json")["torch_events"])
    msgs = ds.problems[ds.problems["source"].astype(str) == str(path)]["message"].tolist()
    assert any("metadata before traceEvents does not decode" in m for m in msgs), msgs
    # distributedInfo itself is still read
    assert ds["torch_traces"]["rank"].item() == 0

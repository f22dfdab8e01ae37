"""NCCL debug lines (dptrace.formats.nccl) on real job logs, checked against what each log
itself prints (counted by hand with grep, repeated here where a short independent count
can be), and the findings they give: sockets on a multi-node job (critical), never on the
InfiniBand, IBext and libfabric logs; timeouts; no GPUDirect RDMA."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import dptrace
from dptrace.formats.nccl import sniff
from dptrace.registry import detect_all
from dptrace.sources import Source

HERE = Path(__file__).parent
FIX = HERE / "fixtures" / "nccl"
REAL = HERE.parent.parent / "shared" / "realdata"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="shared/realdata is not beside the clone")
POLARIS = FIX / "polaris_resnet50_ddp_2n8gpu_OFI_TIMEOUT_2025-06-26.log"
TF4 = FIX / "tflogs_4rank_j8_rank.0_stderr.log"
BIGSCIENCE = FIX / "bigscience_n1_16gb_all_reduce_bench.txt"


def _findings(ds, prefix="nccl_"):
    f = dptrace.findings(ds)
    return f[f["kind"].astype(str).str.startswith(prefix)]


def test_polaris_processes_hosts_ranks_and_network():
    ds = dptrace.load(POLARIS)
    assert "nccl" in ds.sources["format"].item()
    s = ds["nccl_setup"].sort_values("rank")
    # 8 processes (grep -oE '^x[0-9a-z]+:[0-9]+' | sort -u), 4 on each of 2 hosts
    assert len(s) == 8 and s["host"].value_counts().to_dict() == {
        "x3006c0s1b1n0": 4, "x3006c0s25b0n0": 4}
    # 'comm 0x562079afbfb0 rank 1 nRanks 8' is pid 1436706's; 852386's is rank 5
    by_pid = dict(zip(s["pid"].tolist(), s["rank"].tolist(), strict=True))
    assert by_pid[1436706] == 1 and by_pid[852386] == 5 and by_pid[852388] == 7
    assert s["rank"].tolist() == list(range(8))
    assert set(s["rank_from"]) == {"NCCL comm line"} and set(s["nranks"]) == {8}
    assert set(s["network"]) == {"AWS Libfabric"} and set(s["provider"]) == {"cxi"}
    assert set(s["plugin"]) == {"AWS Libfabric"} and set(s["version"]) == {"2.20.5+cuda12.4"}
    # lines per process of the kinds read, as grep -E counts them; 1436708 also has the line
    # whose host lost its first 3 characters to the line before ('06c0s1b1n0:1436708:...',
    # line 465)
    text = POLARIS.read_text()
    kinds = (r"NCCL (WARN|INFO (NCCL version|NET/|Using network|comm |Channel [0-9/]+ : [0-9]"
             r"|[0-9]+ coll channels|NCCL_))")
    for pid, extra in ((1436705, 0), (1436706, 0), (852385, 0), (852386, 0), (1436708, 1),
                       (852388, 0)):
        want = len(re.findall(rf"(?m)^x3006c0s\w+:{pid}:\d+ \[\d\] {kinds}", text)) + extra
        assert s.loc[s["pid"] == pid, "lines"].item() == want, pid
    assert s.loc[s["pid"] == 1436705, "lines"].item() == 22       # by hand
    # channels through the network: 4 processes, all GPUDirect RDMA
    net = s[s["net_channels"] > 0]
    assert net["rank"].tolist() == [1, 3, 5, 7] and net["gdrdma"].all()
    runs = ds.runs
    assert runs["world_size"].item() == 8 and runs["nodes"].item() == 2


def test_polaris_timeouts_one_per_rank_and_the_torn_line_named():
    ds = dptrace.load(POLARIS)
    e = ds["nccl_events"]
    t = e[e["kind"] == "timeout"]
    # 24 'Watchdog caught' lines: 3 per rank (the catch, the exit message, a torn copy)
    assert POLARIS.read_text().count("Watchdog caught collective operation timeout") == 24
    assert sorted(t["rank"].tolist()) == list(range(8))
    assert set(t["op"]) == {"ALLGATHER"} and set(t["timeout_s"]) == {120.0}
    # each timeout is its line's 'Timeout(ms)=120000' / 1000 (read here with a regex)
    lines = POLARIS.read_text().splitlines()
    for r in t.itertuples():
        stated = re.search(r"Timeout\(ms\)=(\d+)", lines[r.lineno - 1])
        assert stated and r.timeout_s == int(stated.group(1)) / 1000 == 120.0, r.lineno
    p = ds.problems
    torn = p[p["message"].str.contains("torn by another writer")]
    assert len(torn) == 1 and torn["source"].item() == str(POLARIS)
    f = _findings(ds)
    assert f["kind"].tolist() == ["nccl_timeout"] and f["severity"].tolist() == ["critical"]
    assert "8 rank(s)" in f["message"].item() and "ALLGATHER" in f["message"].item()
    assert "after 120 s" in f["message"].item()


def test_socket_fallback_on_a_four_node_job_is_critical():
    ds = dptrace.load(TF4)
    s = ds["nccl_setup"]
    assert s[["host", "pid", "network", "net_devices", "plugin", "warnings"]].values.tolist() \
        == [["8603225c1c76", 3111, "Socket", "eth0:10.0.1.6<0>", "none", 1]]
    env = ds["nccl_env"].set_index("name")
    assert env.loc["--host", "nodes"] == 4
    assert env.loc["NCCL_SOCKET_IFNAME", "value"] == "^lo,docker0,eth1"
    assert ds.runs["nodes"].item() == 4
    f = _findings(ds)
    assert f[["severity", "kind"]].values.tolist() == [["critical", "nccl_socket_fallback"]]
    msg = f["message"].item()
    assert "4-node job" in msg and "NET/Socket on eth0" in msg and "libibverbs" in msg


@needs_real
@pytest.mark.parametrize(("job", "nodes", "ranks"), [
    ("tflogs_mpirun_outfile_4rank_j8", 4, 4), ("tflogs_mpirun_outfile_18rank_hetero_d4a", 6, 18)])
def test_socket_fallback_on_the_real_per_rank_jobs(job, nodes, ranks):
    ds = dptrace.load(REAL / "perrank" / job)
    assert ds.runs[["world_size", "nodes"]].values.tolist() == [[ranks, nodes]]
    assert ds["nccl_setup"]["rank"].tolist() == [0]      # rank.0/stderr: the file's rank
    f = dptrace.findings(ds)
    first = f.iloc[0]
    assert (first["severity"], first["kind"]) == ("critical", "nccl_socket_fallback")
    assert f"{nodes}-node job" in first["message"] and "rank 0 " in first["message"]


@needs_real
@pytest.mark.parametrize("name", [
    "scaling/mlperf2.0_azure_nd96amsr_ssd_n1_8gpu_ncclinfo.txt",
    "scaling/mlperf2.0_azure_nd96amsr_ssd_n2_16gpu_ncclinfo.txt",
    "scaling/mlperf2.0_azure_nd96amsr_ssd_n8_64gpu_ncclinfo.txt",
    "nccl/bigscience_all_reduce_bench-32gb-n4.txt",
    "nccl/bigscience_all_reduce_bench-a100-n4.txt",
    "nccl/bigscience_n16_32gb_all_reduce_bench.txt",
    "nccl/bigscience_n1_16gb_all_reduce_bench.txt",
    "nccl/bigscience_n1_32gb_all_reduce_bench.txt",
    "nccl/p5_efa_nccltests_allreduce_2n16gpu_tagoutput.log",
])
def test_no_socket_finding_on_infiniband_and_fabric_logs(name):
    ds = dptrace.load(REAL / name)
    s = ds["nccl_setup"]
    assert len(s) and not (s["network"] == "Socket").any()
    assert set(s["network"].dropna()) <= {"IB", "IBext", "AWS Libfabric"}
    assert "nccl_socket_fallback" not in set(dptrace.findings(ds)["kind"].astype(str))


@needs_real
def test_azure_two_nodes_sixteen_ranks_over_ibext_with_gdrdma():
    ds = dptrace.load(REAL / "scaling" / "mlperf2.0_azure_nd96amsr_ssd_n2_16gpu_ncclinfo.txt")
    s = ds["nccl_setup"]
    assert sorted(s["rank"].tolist()) == list(range(16)) and set(s["nranks"]) == {16}
    assert s["host"].nunique() == 2 and set(s["network"]) == {"IBext"}
    assert s["gdrdma"].all() and set(s["version"]) == {"2.12.10+cuda11.6"}
    # 16 'NET/IB :SHARP coll init error' warnings, one per process, and one more
    text = (REAL / "scaling" / "mlperf2.0_azure_nd96amsr_ssd_n2_16gpu_ncclinfo.txt").read_text()
    assert int(s["warnings"].sum()) == text.count("NCCL WARN")
    assert ds.runs["nodes"].item() == 2


def test_one_node_infiniband_job_bare_version_line():
    ds = dptrace.load(BIGSCIENCE)
    s = ds["nccl_setup"]
    assert len(s) == 4 and set(s["network"]) == {"IB"} and set(s["version"]) == {"2.7.8+cuda10.2"}
    assert s["host"].nunique() == 1 and ds.runs["nodes"].isna().all()
    assert _findings(ds).empty                # one node: no channel through the network


@needs_real
def test_no_gdrdma_on_omnipath():
    ds = dptrace.load(REAL / "nccl" / "bigscience_all_reduce_bench-32gb-n4.txt")
    f = _findings(ds)
    assert f[["severity", "kind"]].values.tolist() == [["info", "nccl_no_gdrdma"]]
    assert ds.runs["nodes"].item() == 4


def test_sockets_with_unknown_nodes_is_a_warning(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("node1:10:10 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
                   "node1:10:10 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1 - "
                   "Init COMPLETE\n")
    f = _findings(dptrace.load(log))
    assert f[["severity", "kind"]].values.tolist() == [["warning", "nccl_socket_fallback"]]
    (tmp_path / "one.log").write_text(log.read_text() + "SLURM_NNODES=1\n")
    assert _findings(dptrace.load(tmp_path / "one.log")).empty      # one node: harmless


def test_mixed_networks(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("a:1:1 [0] NCCL INFO Using network IB\n"
                   "b:2:2 [0] NCCL INFO Using network Socket\n"
                   "b:2:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.2<0>\n")
    f = _findings(dptrace.load(log))
    assert set(f["kind"]) == {"nccl_mixed_networks", "nccl_socket_fallback"}
    # two hosts printed: two nodes at least, so the fallback is critical
    assert f.set_index("kind").loc["nccl_socket_fallback", "severity"] == "critical"


def test_launcher_prefixes_give_the_rank(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("[1,3]<stderr>:h:7:7 [0] NCCL INFO Using network IB\n"
                   "5: g:8:8 [1] NCCL INFO Using network IB\n"
                   "[default2]:f:9:9 [2] NCCL INFO Using network IB\n"
                   "[rank1]:e:6:6 [3] NCCL INFO comm 0x1 rank 0 nranks 4 cudaDev 3 busId 1 - "
                   "Init COMPLETE\n")
    s = dptrace.load(log)["nccl_setup"].set_index("pid")
    assert s["rank"].to_dict() == {7: 3, 8: 5, 9: 2, 6: 1}    # the prefix over the comm line
    assert set(s["rank_from"]) == {"launcher prefix"}


def test_torn_and_cut_lines_are_never_read_into_values(tmp_path):
    log = tmp_path / "job.log"
    log.write_bytes(b"a:1:1 [0] NCCL INFO Using network IB[rank2]:[E ProcessGroupNCCL.cpp:1] x\n"
                    b"junk a:1:1 [0] NCCL INFO Using network Socket\n"
                    b"a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:1.2.3.4<0>\n"
                    b"a:1:1 [0] NCCL INFO Channel 00 : 0[1] -> 1[2] [send] via")
    ds = dptrace.load(log)
    s = ds["nccl_setup"]
    assert s[["network", "network_from", "net_channels"]].values.tolist() == [
        ["IB", "'NET/IB : Using' line", 0]]
    torn = ds.problems[ds.problems["message"].str.contains("torn")]
    assert torn["line"].tolist() == [1] and "lines 1, 2" in torn["message"].item()


def test_sniff_needs_nccls_own_prefix():
    def score(text: bytes) -> float:
        return sniff(Source("x.log", Path("x.log")), text)
    assert score(b"r7i4n1:77231:77231 [0] NCCL INFO Using network IB\n") > 0.5
    assert score(b"[1,0]<stdout>:h:1:1 [0] NCCL INFO NET/Plugin: x\n") > 0.5
    assert score(b"export NCCL_DEBUG=INFO\nHOROVOD_GPU_OPERATIONS=NCCL\n") == 0.0
    assert score(b"we use NCCL INFO lines\n") == 0.0
    assert score(b"\x00\x01 a:1:1 [0] NCCL INFO \x00\x00" * 50) == 0.0


def test_a_training_log_with_nccl_lines_gives_both_formats():
    names = [p.name for p in detect_all(Source(str(TF4), TF4))]
    assert names[:2] == ["trainlog", "nccl"] or set(names) == {"trainlog", "nccl"}
    ds = dptrace.load(TF4)
    assert not ds["throughput"].empty and not ds["nccl_setup"].empty


def test_report_section_in_every_face(tmp_path):
    from dptrace.cli import main

    out = tmp_path / "r.json"
    html = tmp_path / "r.html"
    assert main(["report", str(TF4), "--json", str(out), "--html", str(html)]) in (0, 1)
    import json
    d = json.loads(out.read_text())
    o = d["sections"]["nccl"]["tables"]["overview"]
    assert o[0]["networks"] == "Socket x1" and o[0]["nodes"] == 4
    assert "NCCL setup" in html.read_text()


# -- NCCL lines past the head (issue 17: the 64 KB sniff window) ----------------------------------

@pytest.mark.skipif(not REAL.is_dir(), reason="shared/realdata is not beside the clone")
def test_nccl_lines_that_start_past_the_head_are_read():
    # a 16-node Megatron-DeepSpeed log whose first NCCL line is at byte 135,448: before, the
    # head held none and NCCL's 4,433 lines were never read
    path = REAL / "trainlog" / "bigscience_meg_ds_zero_n16.out"
    raw = path.read_bytes()
    assert raw.find(b"NCCL INFO") > 64 * 1024
    ds = dptrace.load(path)
    assert ds.sources["format"].item() == "nccl+trainlog"
    setup = ds["nccl_setup"]
    # the log's own lines: one 'NET/IB : Using' per process
    using = {ln.split(b" NCCL INFO")[0] for ln in raw.splitlines()
             if b"NCCL INFO NET/IB : Using" in ln}
    assert len(setup) == len(using) == 64
    assert set(setup["network"].astype(str)) == {"IB"}
    assert not ds["train_metrics"].empty        # the training log is still read


def test_a_long_preamble_then_nccl_lines(tmp_path):
    # the Polaris 2-node job: libfabric plugin, then the watchdog's timeout
    src = (FIX / "polaris_resnet50_ddp_2n8gpu_OFI_TIMEOUT_2025-06-26.log").read_bytes()
    pre = b"".join(b"Collecting package %d ... done\n" % i for i in range(8000))
    assert len(pre) > 200 * 1024
    path = tmp_path / "job.out"
    path.write_bytes(pre + src)
    alone = tmp_path / "alone.out"
    alone.write_bytes(src)
    got, want = dptrace.load(path)["nccl_setup"], dptrace.load(alone)["nccl_setup"]
    assert len(got) == len(want) > 0
    assert got["network"].astype(str).tolist() == want["network"].astype(str).tolist()
    # lines on the same bytes within a non-log (a Horovod timeline) are never searched
    # for: the deep search runs only when the head is a text log or nothing
    from dptrace.registry import _deep_scores, parsers

    found = parsers()
    sure = [(0.95, "horovod"), (0.0, "nccl")]
    assert _deep_scores(Source(str(path), path), pre[:65536], sure, found) == sure


@needs_real
@pytest.mark.parametrize("name", [
    "nccl/polaris_resnet50_ddp_2n8gpu_OFI_TIMEOUT_2025-06-26.log",
    "nccl/bigscience_all_reduce_bench-32gb-n4.txt",
    "scaling/mlperf2.0_azure_nd96amsr_ssd_n2_16gpu_ncclinfo.txt"])
def test_a_large_log_searched_on_workers_reads_the_same(monkeypatch, name):
    """The search for NCCL lines split over forked workers (ranges of a few KB, windows of
    about 1 KB given back to the page cache) gives the very tables, problems and line
    numbers of one search in this process."""
    from dptrace.executor import Processes
    from dptrace.formats.nccl import read

    path = REAL / name
    if not path.exists():
        pytest.skip(f"{name} is not in realdata")
    one = read.parse(Source(str(path), path))
    monkeypatch.setattr(read, "PARALLEL_BYTES", 1)
    monkeypatch.setattr(read, "WINDOW", 997)
    split = read.parse(Source(str(path), path), executor=Processes(3))
    assert sum(len(df) for df in one.tables.values()) > 0
    for table, df in one.tables.items():
        assert df.equals(split.tables[table]), table
    assert [(p.message, p.line) for p in one.problems] == \
        [(p.message, p.line) for p in split.problems]
    # without google-re2's matcher (each match, then its line): the same again
    monkeypatch.setattr(read, "_search", read._search_re)
    plain = read.parse(Source(str(path), path))
    for table, df in one.tables.items():
        assert df.equals(plain.tables[table]), table


@needs_real
def test_repeated_lines_read_once_give_what_reading_every_line_gives(tmp_path, monkeypatch):
    """A log whose real NCCL lines (INFO, WARN, watchdog timeouts, a torn line, exports)
    come back many times in a shuffled order: the reader reads each distinct line once and
    counts the repeats of lines that change nothing when read again, but reads every
    warning; its tables (events in line order, line counts per process) equal those of
    reading every candidate line one by one, in one process and on workers."""
    import random

    from dptrace.executor import Processes
    from dptrace.formats.nccl import read

    lines = [line for name in ("nccl/polaris_resnet50_ddp_2n8gpu_OFI_TIMEOUT_2025-06-26.log",
                               "scaling/mlperf2.0_azure_nd96amsr_ssd_n2_16gpu_ncclinfo.txt")
             for line in (REAL / name).read_bytes().splitlines(keepends=True)]
    rng = random.Random(7)
    log = tmp_path / "repeats.log"
    log.write_bytes(b"".join(lines + [rng.choice(lines) for _ in range(30_000)]))

    def one_by_one(path):
        r = read._Reader(path.name)
        data = path.read_bytes()
        found: list[int] = []
        read._search_re(data, 0, len(data), found)
        for start, end in zip(found[::2], found[1::2], strict=True):
            read._read_line(r, data[start:end], data.count(b"\n", 0, start) + 1)
        return r

    want = one_by_one(log)
    kinds = {e["kind"] for e in want.events}
    assert {"warn", "timeout"} <= kinds   # warnings and timeouts are repeated, too
    assert len(want.events) > 100
    got = read.parse(Source(str(log), log))
    monkeypatch.setattr(read, "PARALLEL_BYTES", 1)
    monkeypatch.setattr(read, "WINDOW", 4093)
    split = read.parse(Source(str(log), log), executor=Processes(3))
    for result in (got, split):
        events = result.tables["nccl_events"]
        assert events["lineno"].tolist() == [e["lineno"] for e in want.events]
        assert events["message"].tolist() == [e["message"] for e in want.events]
        setup = result.tables["nccl_setup"]
        assert sorted(setup["lines"].tolist()) == sorted(p.lines for p in want.procs.values())
        assert result.tables["nccl_env"]["lineno"].tolist() == [e["lineno"] for e in want.env]


def test_one_search_per_alternative_finds_the_lines_of_one_search_for_all():
    """The candidate lines are searched for one alternative at a time (google-re2 finds
    each one's leading literal first): the lines found, in order and once each, are those
    of one search for all the alternatives, on lines holding none, one, several and the
    same alternative twice, at the start and end of the buffer and without a final
    newline."""
    import random

    from dptrace.formats.nccl import read

    if read._search is read._search_re:
        pytest.skip("google-re2 is not installed: one search for all is the only one")
    pieces = [b"h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB", b"WorkNCCL(SeqNum=3)",
              b"ncclSystemError: x", b"NCCL communicator was aborted", b"mpirun -H a,b",
              b"srun --hosts=a,b", b"SLURM_NNODES=2", b"torchrun --nnodes 2",
              b"export NCCL_DEBUG=INFO", b"NCCL version 2.18.1", b"h:1:2 [0] NCCL WARN x",
              b"NCCL INFO Channel 19/32 :    0   1", b"nccl", b"--host", b"-Hx", b"plain"]
    rng = random.Random(11)
    for _ in range(200):
        lines = [b" ".join(rng.choice(pieces) for _ in range(rng.randint(0, 3)))
                 for _ in range(rng.randint(1, 40))]
        data = b"\n".join(lines) + rng.choice([b"", b"\n"])
        each: list[int] = []
        read._search_re2(data, 0, len(data), each)
        one: list[int] = []
        read._search_re(data, 0, len(data), one)
        assert each == one, data


def test_line_numbers_when_the_first_ranges_hold_no_nccl_line(tmp_path, monkeypatch):
    """A range without NCCL lines does not count its newlines unless a later range holds
    some: the line numbers of a log whose NCCL lines all sit in its last part (searched on
    workers, in ranges and small windows) are those of one search in this process."""
    from dptrace.executor import Processes
    from dptrace.formats.nccl import read

    noise = [f"{i % 7}: step {i} loss 0.5 samples/sec 12.5\n" for i in range(3000)]
    nccl = [f"nid{k:03d}:{100 + k}:{200 + k} [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; "
            f"OOB ib0:10.0.0.{k}<0>\n" for k in range(8)]
    warn = ["nid001:101:201 [0] NCCL WARN NET/IB : Got completion with error 12\n"]
    log = tmp_path / "late.log"
    log.write_text("".join(noise + nccl + noise[:50] + warn))
    one = read.parse(Source(str(log), log))
    assert one.tables["nccl_events"]["lineno"].tolist() == [3000 + 8 + 50 + 1]
    monkeypatch.setattr(read, "PARALLEL_BYTES", 1)
    monkeypatch.setattr(read, "WINDOW", 1021)
    split = read.parse(Source(str(log), log), executor=Processes(4))
    for table, df in one.tables.items():
        assert df.equals(split.tables[table]), table

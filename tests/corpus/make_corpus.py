#!/usr/bin/env python3
"""Build the bad-input corpus (tests/corpus/files/) and its expectations (expected.tsv).

Every class is a real fixture copied and damaged in one way (see README.md). Run from the
repository root: ``python tests/corpus/make_corpus.py``. The output is committed; rerunning
gives the same bytes. Classes marked ``generated`` are built by tests/test_corpus.py in a
temporary directory (too big, or not storable in git: FIFOs, symlinks, odd names, modes).

The expected outcome is what issue 12's rule says SHOULD happen, not what today's code
does: a bad record costs that record (a problem row with file and line), a bad file costs
that file, nothing costs the report; a number that does not fit its column becomes
missing with a problem row; a cut number at the end of a truncated file is flagged or
dropped, never kept as a different value. ``rows`` counts come from the clean base file
(parsed by dptrace: the clean fixtures are covered by the other tests).

Columns of expected.tsv:
  class         the class name (one file per class)
  file          path under files/, or @generated (built at test time by test_corpus.py)
  format        auto, or a format to force (--format)
  status        accepted sources.status values, |-separated
  rows          sources.rows: =N exact, >=N at least
  problem       regex (case-insensitive) that some problem message, or the sources message,
                must match; empty: no requirement
  exit          accepted exit codes of `dptrace report`, |-separated
  check         extra assertion run by the test (see test_corpus.CHECKS), or empty
  known_failing issue12 when today's code fails the row (the test xfails it, strictly)
  description   what the class is
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FIX = ROOT / "tests" / "fixtures"
OUT = HERE / "files"
MAX_BYTES = 50_000

sys.path.insert(0, str(ROOT))


def fx(rel: str) -> bytes:
    return (FIX / rel).read_bytes()


def lines(data: bytes, a: int, b: int) -> bytes:
    """Lines a..b (1-based, inclusive) of ``data``."""
    return b"".join(data.splitlines(keepends=True)[a - 1:b])


# --- base files (real fixtures or excerpts of them) --------------------------------------
BAGUA = fx("trainlog/bagua_net_synthetic_benchmark_from_docs.md")   # Horovod img/sec lines
MULTINODE = fx("trainlog/ug_sn30_multinode_from_docs.md")           # SambaFlow + tiles + tqdm
SAMBAFLOW = lines(MULTINODE, 79, 89)                                 # 8 e2e samples_per_sec
TQDM = lines(MULTINODE, 225, 236)                                    # hook dict + tqdm bar
LISTING = lines(MULTINODE, 153, 217)                                 # sntilestat, 64 tiles
DSCHAT = lines(fx("trainlog/dschat_step1_opt1.3b_gbs128.log"), 1, 40)  # DeepSpeed lines
KNL16 = fx("mpitrace/alcfws_theta_knl16_mpi_profile.75877.0")        # rank 0 of 16
KNL16_NAME = "mpi_profile.75877.0"
HVD_CPU = fx("horovod/alcfws_timeline_cpu_n1.json")                  # packed, closed
POLARIS = fx("nccltests/polaris_nccltests_allreduce_n2x4gpu.dat")  # nccl-tests, 8 ranks
SUPERBENCH = fx("nccltests/superbench_nccltests_allreduce_1n8gpu_a100.log")  # #wrong N/A
P5 = fx("nccltests/p5_efa_nccltests_allreduce_2n16gpu_tagoutput.log")
TORCH = fx("torchtrace/one_step/rank0.pt.trace.json")  # Kineto trace, 1 step, gloo
P5_TABLE = lines(P5, 17, 33) + lines(P5, 2900, 2939)           # tagged header and table
NCCL_POLARIS = lines(fx("nccl/polaris_resnet50_ddp_2n8gpu_OFI_TIMEOUT_2025-06-26.log"), 1, 60)
MPIP = fx("mpip/default/dp_steps.4.16765.1.mpiP")                  # mpiP 3.5.0, 4 tasks
HVD_PERLINE = lines(fx("horovod/synthetic_v0200_per_line.json"), 1, 200)  # per line, open
DSDOCS = fx("dscomms/deepspeed_comms_logging_tutorial_from_docs.md")  # two comms summaries
DSSUMMARY = lines(DSDOCS, 14, 19)                                   # header, 2 ops, 3 rows
MLBERT = b"".join(ln for ln in fx("mllog/mlperf1.0_nv_bert_pytorch_n1_8gpu.txt")
                  .splitlines(keepends=True) if b":::MLLOG" in ln)  # 58 records, srun -l


def sub(data: bytes, old: bytes, new: bytes, count: int = 1) -> bytes:
    assert old in data, old
    return data.replace(old, new, count)


def nth_line_start(data: bytes, n: int) -> int:
    """Offset of the start of line n (1-based)."""
    pos = 0
    for _ in range(n - 1):
        pos = data.index(b"\n", pos) + 1
    return pos


def flip_at(data: bytes, frac: float) -> bytes:
    i = int(len(data) * frac)
    return data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1:]


def deep_json() -> bytes:
    head = HVD_CPU[:HVD_CPU.index(b"\n", 2000) + 1]
    return head + b'{"name": "deep", "ph": "X", "ts": 1, "pid": 1, "args": ' + b"[" * 200_00 \
        + b"]" * 200_00 + b"},\n" + HVD_CPU[HVD_CPU.index(b"\n", 2000) + 1:][:3000]


# class -> (file name, bytes builder, base for the row count, format, status, rows, problem,
#           exit, check, known_failing, description)
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\u202egnp.exe\u200b\u200d"
FORMULA = "=cmd|' /C calc'!A0"


def classes() -> list[dict]:
    c: list[dict] = []

    def add(name, file, data, *, base=None, fmt="auto", status, rows, problem="", exit,
            check="", known="", desc):
        c.append(dict(cls=name, file=file, data=data, base=base, format=fmt, status=status,
                      rows=rows, problem=problem, exit=exit, check=check, known=known,
                      desc=desc))

    add("empty", "empty.out", b"", status="unknown|empty|failed", rows="=0",
        problem="empty", exit="3", desc="a zero-byte file named on its own")
    add("whitespace_only", "whitespace.log", b"   \n\t\n  \r\n\n" * 20,
        status="unknown|empty|failed", rows="=0", problem="empty|blank|whitespace|no .*record",
        exit="3", desc="only spaces, tabs and newlines")
    add("binary", "core.1234", bytes(range(256)) * 40, status="unknown|failed", rows="=0",
        problem="binary", exit="3", desc="bytes 0-255 (a core dump named as a log)")
    add("utf16", "slurm-utf16.out", b"\xff\xfe" + SAMBAFLOW.decode().encode("utf-16-le"),
        base=SAMBAFLOW, status="ok|partial", rows="=base", problem="utf-16", exit="0|1",
        desc="a SambaFlow log saved as UTF-16 with a BOM (PowerShell `>`): read as UTF-16, or "
        "at least say so")
    add("latin1_bytes", "latin1.out", sub(SAMBAFLOW, b"The throughput",
                                          "Th\xe9 d\xe9bit \xb5s".encode("latin-1")),
        base=SAMBAFLOW, status="ok|partial", rows="=base", problem="utf-8", exit="0|1",
        desc="Latin-1 bytes on a text line before the numbers")
    add("nul_in_head", "nul-head.log", sub(SAMBAFLOW, b"instances.", b"instances.\0\0\0\0"),
        base=SAMBAFLOW, status="partial", rows="=base", problem="nul|binary", exit="1",
        desc="4 NUL bytes in a training log's first 64 KB (a bad record "
        "costs that record, not the file)")
    add("nul_padding_lustre", "nul-tail.log", SAMBAFLOW + b"\0" * 8192, base=SAMBAFLOW,
        status="partial", rows="=base", problem="nul|padding|binary", exit="1",
        desc="8 KB of NUL padding after the last line (a node crashed "
        "while writing to Lustre)")
    add("crlf", "crlf.log", SAMBAFLOW.replace(b"\n", b"\r\n"), base=SAMBAFLOW, status="ok",
        rows="=base", exit="0", desc="Windows line endings")
    add("cr_only_listing", "cr-only-sntilestat.txt", LISTING.replace(b"\n", b"\r"),
        base=LISTING, status="ok|partial", rows="=base", exit="0|1",
        desc="an sntilestat listing with old-Mac CR-only line endings")
    add("huge_single_line_100mb", "@generated", None, base=SAMBAFLOW, status="ok|partial",
        rows="=base", exit="0|1", desc="100 MB line without a newline between two good "
        "parts (generated in tmp_path)")
    add("mpitrace_cut_after_routines", "mpitrace_cut_after_routines/" + KNL16_NAME,
        KNL16[:KNL16.index(b"Message size distributions")], base=None, fmt="auto",
        status="partial", rows=">=7", problem="truncat|cut|incomplete|ends", exit="1",
        desc="mpitrace profile cut at the section boundary before the "
        "message-size distributions (the file's name keeps its job and rank)")
    add("mpitrace_cut_in_rank_table", "mpitrace_cut_in_rank_table/" + KNL16_NAME,
        KNL16[:nth_line_start(KNL16, 80)], status="partial", rows=">=43",
        problem="truncat|cut|incomplete|ends|missing", exit="1", desc="mpitrace rank 0 profile cut after 5 of the 16 rows of 'MPI timing summary for "
        "all ranks'")
    cut = HVD_CPU.index(b"},{", len(HVD_CPU) // 2) + 1
    add("horovod_cut_at_event", "timeline-cut.json", HVD_CPU[:cut], status="ok|partial",
        rows=">=50", problem="truncat|cut|ends|killed", exit="0|1",
        desc="packed Horovod timeline cut right after a complete event (no ']', no ',')")
    add("sntilestat_header_only", "sntilestat-header-only.txt", LISTING[:LISTING.index(b"\n")
                                                                        + 1],
        status="empty|partial|failed|unknown", rows="=0", problem="tile|header|no .*record",
        exit="3", desc="an sntilestat listing cut right after its header line")
    add("trainlog_cut_at_line", "dschat-cut-line.log", lines(DSCHAT, 1, 33),
        base=lines(DSCHAT, 1, 33), status="ok", rows="=base", exit="0",
        desc="a DeepSpeed log cut at a line boundary (nothing to flag, nothing lost)")
    add("trainlog_cut_mid_number", "dschat-cut-number.log",
        DSCHAT[:DSCHAT.index(b"CurrSamplesPerSec=171.72") + len(b"CurrSamplesPerSec=17")],
        status="partial", rows=">=1", problem="newline|truncat|cut", exit="1",
        check="cut:throughput.value=17@33",
        desc="a DeepSpeed log cut inside CurrSamplesPerSec=171.72 (-> '17' at the end)")
    add("sntilestat_cut_in_pid", "sntilestat-cut-pid.txt",
        LISTING[:LISTING.rindex(b"2750332") + 3], base=None, status="partial",
        rows=">=63", problem="newline|truncat|cut", exit="1", check="cut:tiles.pid=275@65",
        desc="an sntilestat listing cut inside the last row's PID (2750332 -> 275)")
    gz = gzip.compress(BAGUA, mtime=0)
    add("gz_flipped_byte", "bagua.out.gz", flip_at(gz, 0.9), status="partial",
        rows=">=0", problem="gz", exit="1|3", desc="gzip copy with one byte flipped at 90%")
    xz = lzma.compress(BAGUA)
    add("xz_flipped_byte", "bagua.out.xz", flip_at(xz, 0.9), status="partial|failed",
        rows=">=0", problem="xz", exit="1|3", desc="xz copy with one byte flipped at 90%")
    bz = bz2.compress(BAGUA)
    add("bz2_flipped_byte", "bagua.out.bz2", flip_at(bz, 0.9), status="partial|failed",
        rows=">=0", problem="bz2", exit="1|3", desc="bz2 copy with one byte flipped at 90%")
    add("bz2_truncated", "bagua-cut.out.bz2", bz[: len(bz) * 3 // 4], status="partial|failed",
        rows=">=0", problem="bz2", exit="1|3", desc="bz2 copy cut at 75% (bz2 has no "
        "independent blocks at this size: nothing may come out, but it must say why)")
    add("plain_named_gz", "plain-log.out.gz", BAGUA, base=BAGUA, status="ok|partial",
        rows="=base", problem="gz|gzip|compress", exit="0|1", desc="an uncompressed log named .gz: read as plain text, and say so")
    add("deep_json", "timeline-deep.json", deep_json(), status="partial", rows=">=10",
        problem="", exit="1", desc="a Horovod timeline with an event nested 20,000 levels "
        "deep in its args")
    add("mpitrace_switches_above_int64", "mpitrace_switches_above_int64/" + KNL16_NAME,
        sub(KNL16, b"1338620\n", b"99999999999999999999999\n"), base=KNL16, status="partial",
        rows="=base", problem="switches|int64|range|too large|overflow|fit", exit="1",
        check="na:mpi_ranks.switches", desc="rank 0 table: an int above int64 in the switches column")
    add("mpitrace_avg_bytes_1e308", "mpitrace_avg_bytes_1e308/" + KNL16_NAME,
        sub(KNL16, b"    772570.7  ", b"     1e308    "), base=KNL16, status="partial",
        rows="=base", problem="avg|bytes|range|overflow|fit|inf", exit="1",
        check="finite:mpi_routines.bytes", desc="avg. bytes 1e308: fits a float, but calls x avg overflows to inf")
    add("mpitrace_avg_bytes_1e999", "mpitrace_avg_bytes_1e999/" + KNL16_NAME,
        sub(KNL16, b"    772570.7  ", b"     1e999    "), base=KNL16, status="partial",
        rows="=base", problem="avg|bytes|range|overflow|fit|inf", exit="1",
        check="finite:mpi_routines.avg_bytes", desc="avg. bytes 1e999 (inf as a float)")
    add("trainlog_img_sec_1e3080", "bagua-1e3080.md",
        sub(BAGUA, b"Iter #8: 2760.0 img/sec", b"Iter #8: 2760.1e3080 img/sec"), base=BAGUA,
        status="partial", rows=">=base-1", problem="range|overflow|fit|inf|too large", exit="1",
        check="finite:throughput.value", desc="'2760.1e3080 img/sec per GPU': a rate that is inf as a float")
    add("horovod_pid_20_digits", "timeline-bigpid.json",
        HVD_CPU.replace(b'"pid": 3,', b'"pid": 99999999999999999999,'), status="partial",
        rows=">=100", problem="pid|int64|range|too large|overflow|fit", exit="1",
        desc="a 20-digit pid in a timeline (beyond int64)")
    add("sntilestat_pid_20_digits", "sntilestat-bigpid.txt",
        sub(LISTING, b" 2750333  vsastry", b" 99999999999999999999  vsastry"), base=LISTING,
        status="partial", rows="=base", problem="pid|int64|range|too large|overflow|fit",
        exit="1", check="na:tiles.pid", desc="a 20-digit PID in a tile row (beyond int64)")
    add("tqdm_step_beyond_int64", "tqdm-bigstep.log",
        sub(TQDM, b"247/3247", b"99999999999999999999/3247"), base=TQDM, status="partial",
        rows=">=base-1", problem="step|int64|range|too large|overflow|fit", exit="1",
        desc="a tqdm bar whose step is beyond int64")
    add("horovod_nan_infinity", "timeline-nan.json",
        HVD_CPU.replace(b'"ts": 3585426,', b'"ts": NaN,', 1)
        .replace(b'"ts": 3585424,', b'"ts": Infinity,', 1), status="partial", rows=">=100",
        problem="nan|infinity|invalid|skipp", exit="1",
        desc="NaN and Infinity tokens (not JSON) as timestamps")
    perl = HVD_PERLINE.splitlines(keepends=True)
    swapped = perl[:20] + perl[40:60] + perl[20:40] + perl[60:]
    neg = b"".join(swapped).replace(b'"ts": ', b'"ts": -', 5)
    add("horovod_out_of_order_negative_ts", "timeline-order.json", neg, status="ok|partial",
        rows=">=50", exit="0|1",
        desc="per-line timeline with two blocks of events swapped and negative timestamps")
    add("duplicate_json_keys", "timeline-dupkeys.json",
        HVD_CPU.replace(b'{"ph": "B", "name": "NEGOTIATE_BROADCAST", ',
                        b'{"ph": "B", "ph": "E", "name": "X", "name": "NEGOTIATE_BROADCAST", ',
                        3), status="ok|partial", rows=">=100", exit="0|1",
        desc="events with duplicate keys (last one wins in JSON parsers)")
    add("nccltests_cut_mid_row", "nccltests-cut.dat",
        POLARIS[:nth_line_start(POLARIS, 44) + 70], status="partial", rows=">=50",
        problem="newline|cut", exit="1",
        desc="nccl-tests output cut inside its last row (no final newline)")
    row31 = lines(POLARIS, 31, 31)
    add("nccltests_row_missing_field", "nccltests-short-row.dat",
        sub(POLARIS, row31, row31.replace(b"    0.35    0.62 ", b"    0.62 ", 1)),
        base=POLARIS, status="partial", rows="=base-2", problem="not a whole nccl-tests row",
        exit="1", desc="an nccl-tests row with one field torn out (its numbers would shift)")
    add("nccltests_size_20_digits", "nccltests-bigsize.dat",
        sub(POLARIS, b"      131072         32768", b"99999999999999999999   32768"),
        base=POLARIS, status="partial", rows="=base", problem="fit", exit="1",
        check="na:nccl_tests.size_bytes", desc="an nccl-tests size beyond int64")
    add("nccltests_wrong_na", "nccltests-na.log", SUPERBENCH, base=SUPERBENCH, status="ok",
        rows="=base", exit="0", desc="old nccl-tests columns: 'error' N/A (validation off), "
        "no root column, an NCCL INFO line inside the table")
    row = lines(P5_TABLE, 40, 40)
    first, rest = row.split(b"[1,0]<stdout>:")[1], b"[1,0]<stdout>:".join(
        row.split(b"[1,0]<stdout>:")[2:])
    torn = b"[1,0]<stdout>:" + first + b"[1,3]<stdout>:worker-0:28:70 [3] NCCL INFO x\n" \
        + b"[1,0]<stdout>:" + rest
    add("nccltests_torn_tagged_row", "nccltests-torn.log", sub(P5_TABLE, row, torn),
        base=P5_TABLE, status="partial", rows="=base-2", problem="several ranks", exit="1",
        desc="mpirun --tag-output: another rank's line written inside an nccl-tests row")
    using = b"x3006c0s1b1n0:1436706:1436806 [1] NCCL INFO Using network AWS Libfabric\n"
    add("nccl_torn_line", "nccl-torn.log",
        sub(NCCL_POLARIS, using, using[:-1] + b"[rank2]:[E ProcessGroupNCCL.cpp:563] x\n"),
        base=NCCL_POLARIS, status="partial", rows="=base", problem="torn by another writer",
        exit="1", desc="an NCCL INFO line with another process's text inside its message: "
        "skipped and counted, its network never read from it")
    add("torchtrace_killed_mid_event", "rank0.pt.trace.json", TORCH[:len(TORCH) * 2 // 5],
        status="partial", rows=">=50", problem="killed", exit="1",
        desc="a PyTorch profiler trace cut inside an event of traceEvents (a killed job)")
    add("torchtrace_gz_cut", "rank0.pt.trace.json.gz",
        (lambda z: z[:len(z) // 2])(gzip.compress(TORCH, mtime=0)), status="partial",
        rows=">=50", problem="gz|truncated|cut", exit="1",
        desc="a gzipped PyTorch profiler trace (use_gzip=True) cut in half")
    add("mpip_cut_mid_row", "mpip-cut.mpiP", MPIP[:MPIP.index(b"Allreduce           14    2")
                                                  + 40],
        status="partial", rows=">=24", problem="newline|cut", exit="1",
        desc="an mpiP report cut inside a row of its callsite statistics (no final newline)")
    add("mpip_row_missing_field", "mpip-short-row.mpiP",
        sub(MPIP, b"   1       9.11       1.01    11.13", b"   1       9.11       11.13"),
        base=MPIP, status="partial", rows="=base-1", problem="not a whole mpiP row", exit="1",
        desc="an mpiP MPI Time row with one field torn out (its numbers would shift)")
    dots = MPIP.index(b"Allreduce            9    2")
    add("mpip_dots_excerpt", "mpip-dots.mpiP",
        MPIP[:dots] + b"...\n" + MPIP[MPIP.index(b"Barrier              7    0"):],
        status="ok|partial", rows=">=20", problem=r"cut here \('\.\.\.'", exit="0|1",
        desc="an mpiP report whose copy left callsite rows out ('...' on a line)")
    ds_row = lines(DSDOCS, 17, 17)
    add("dscomms_row_missing_field", "dscomms-short-row.md",
        sub(DSDOCS, ds_row, ds_row.replace(b"8317.12             0.20", b"0.20", 1)),
        base=DSDOCS, status="partial", rows="=base-1", problem="not a whole comms logger row",
        exit="1", desc="a DeepSpeed comms logger row with one field torn out (its numbers "
        "would shift)")
    add("dscomms_cut_mid_row", "dscomms-cut.log", DSSUMMARY[:-40], status="partial",
        rows="=2", problem="newline|cut", exit="1",
        desc="a DeepSpeed comms summary cut inside its last row (no final newline)")
    rec = lines(MLBERT, 30, 30)
    add("mllog_torn_record", "mllog-torn.txt", sub(MLBERT, rec, rec[:70] + b"\n"),
        base=MLBERT, status="partial", rows="=base-1", problem="torn or cut", exit="1",
        desc="an MLPerf :::MLLOG record torn mid-JSON by another writer's newline")
    add("mllog_cut_last_record", "mllog-cut.txt", MLBERT[:-60], base=MLBERT,
        status="partial", rows="=base-1", problem="torn or cut", exit="1",
        desc="MLPerf :::MLLOG lines cut inside the last record (no final newline)")
    add("sntilestat_pid_without_user", "sntilestat-nouser.txt",
        LISTING.replace(b" 2750333  vsastry /opt/sambaflow/apps/nlp/transformers_on_rdu/venv/b",
                        b" 2750333", 1), base=LISTING, status="ok|partial", rows="=base",
        exit="0|1", desc="a tile row with a PID but no USER and COMMAND")
    hdr = KNL16.index(b"time(sec)\n")
    add("mpitrace_latin1_header", "mpitrace_latin1_header/" + KNL16_NAME,
        KNL16[:hdr + 9] + b"\xb5" + KNL16[hdr + 9:], base=KNL16, status="ok|partial",
        rows="=base", problem="utf-8", exit="0|1",
        desc="a Latin-1 byte at the end of the routine table's header line")
    add("hostile_routine_name", "hostile_routine_name/" + KNL16_NAME,
        sub(KNL16, b"MPI_Gatherv                 ",
            ("MPI_" + HOSTILE + "<script>alert(1)</script>").encode()), base=KNL16,
        status="ok|partial", rows=">=base-1", exit="0|1", check="safe_output",
        desc="terminal escapes, bidi override, zero-width chars and <script> in a routine "
        "name")
    add("hostile_host", "hostile_host/" + KNL16_NAME, sub(KNL16, b"nid00002 ",
                                                       (FORMULA + HOSTILE).encode()),
        base=KNL16, status="ok|partial", rows=">=base-1", problem="unparseable", exit="0|1", check="safe_output",
        desc="a formula-leading host name with escapes in rank 0's table "
        "(CSV export must not start a cell with '='); the name holds spaces, so its row is "
        "unparseable and costs that row")
    add("hostile_tensor_name", "timeline-hostile.json",
        HVD_CPU.replace(b"HorovodBroadcast_dense_1_kernel_0",
                        json.dumps(FORMULA + HOSTILE + "<img src=x onerror=alert(1)>")[1:-1]
                        .encode()),
        base=HVD_CPU, status="ok|partial", rows="=base", exit="0|1", check="safe_output",
        desc="escapes, bidi, zero-width, HTML and a formula in a tensor name")
    add("hostile_file_name", "@generated", None, base=SAMBAFLOW, status="ok", rows="=base",
        exit="0", check="safe_output", desc="a log whose file name holds ESC ] 0 ; title "
        "BEL, ESC [ 2 J, U+202E, zero-width chars and a formula")
    add("non_utf8_file_name", "@generated", None, base=SAMBAFLOW, status="ok", rows="=base",
        exit="0", desc="a log whose file name has the bytes 0xff 0xfe (not UTF-8)")
    add("fifo", "@generated", None, status="failed|unknown|skipped", rows="=0",
        problem="fifo|pipe|regular|special", exit="3", desc="a named pipe given as an input (opening it would block)")
    add("dangling_symlink", "@generated", None, status="failed|unknown", rows="=0",
        problem="symlink|link|no such|not exist|cannot read", exit="3", desc="a symlink to nothing, named on its own: one sources row saying so")
    add("symlink_loop_glob", "@generated", None, base=SAMBAFLOW, status="ok", rows="=base",
        exit="0", desc="dir/**/*.log where dir holds a good log and "
        "loop -> . : the log is read once")
    add("mode000_file", "@generated", None, status="failed", rows="=0",
        problem="permission", exit="3", desc="a file with mode 000 (skipped as root)")
    add("mode000_subdir", "@generated", None, base=SAMBAFLOW, status="ok", rows="=base",
        problem="permission", exit="1", desc="a directory with a good log and a mode-000 "
        "subdirectory (skipped as root)")
    return c


def main() -> None:
    import dptrace

    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir()
    rows = []
    tmp = HERE / ".base"
    tmp.mkdir(exist_ok=True)
    for k in classes():
        want = k["rows"]
        if "base" in want:
            assert k["base"] is not None, k["cls"]
            name = (k["file"] if k["file"] != "@generated" else "base.log")
            if name.endswith((".gz", ".xz", ".bz2")):
                name = name.rsplit(".", 1)[0]
            p = tmp / name
            p.parent.mkdir(exist_ok=True)
            p.write_bytes(k["base"])
            n = int(dptrace.load(str(p)).sources["rows"].iloc[0])
            shutil.rmtree(tmp)
            tmp.mkdir()
            want = want.replace("base-1", str(n - 1)).replace("base-2", str(n - 2)) \
                .replace("base", str(n))
        if k["file"] != "@generated":
            assert len(k["data"]) < MAX_BYTES, (k["cls"], len(k["data"]))
            (OUT / k["file"]).parent.mkdir(exist_ok=True)
            (OUT / k["file"]).write_bytes(k["data"])
        rows.append([k["cls"], k["file"], k["format"], k["status"], want, k["problem"],
                     k["exit"], k["check"], k["known"], k["desc"]])
    tmp.rmdir()
    head = ["class", "file", "format", "status", "rows", "problem", "exit", "check",
            "known_failing", "description"]
    for r in rows:
        assert all("\t" not in x and "\n" not in x for x in r), r
    text = "\t".join(head) + "\n" + "".join("\t".join(r) + "\n" for r in rows)
    (HERE / "expected.tsv").write_text(text, encoding="utf-8")
    print(f"{len(rows)} classes, {sum(1 for r in rows if r[1] != '@generated')} files")
    # the classes the fuzzers found (fuzz_found.py) live in the same files/ and expected.tsv
    import fuzz_found  # noqa: PLC0415 (it imports this module)

    fuzz_found.main()


if __name__ == "__main__":
    main()

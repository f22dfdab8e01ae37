"""Issue 30, 'one value costs the whole file': a field that is not a number of its column (a
5,000-digit integer, one above 2^63, '²' where a digit was expected, nan/inf/1e999 where a
finite number was) in NCCL logs, nccl-tests output, mpiP reports, DeepSpeed comms summaries
and MLPerf logs costs only that value, or the record it identifies, with an error naming
the file and line and what is wrong with the value.

Each case is a real fixture with one field changed, read twice: with a good value in the
field (``good``) and with the bad one (``bad``); the bad copy must have the rows of the good
one less the record it identifies (``lost``), and a problem at the field's line saying why.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

import dptrace

HERE = Path(__file__).parent
FIX = HERE / "fixtures"
BIG = "9" * 5000                        # Python refuses int() of more than 4,300 digits
E20 = "99999999999999999999"            # above 2^63
NCCL = b"".join((FIX / "nccl" / "polaris_resnet50_ddp_2n8gpu_OFI_TIMEOUT_2025-06-26.log")
                .read_bytes().splitlines(keepends=True)[:60])
NCCLTESTS = (FIX / "nccltests" / "polaris_nccltests_allreduce_n2x4gpu.dat").read_bytes()
MPIP = (FIX / "mpip" / "default" / "dp_steps.4.16765.1.mpiP").read_bytes()
MPIP_CONCISE = (FIX / "mpip" / "concise" / "dp_steps.4.16818.1.mpiP").read_bytes()
DSDOCS = (FIX / "dscomms" / "deepspeed_comms_logging_tutorial_from_docs.md").read_bytes()
MLBERT = (FIX / "mllog" / "mlperf1.0_nv_bert_pytorch_n1_8gpu.txt").read_bytes()

NCCL_USING = "x3006c0s1b1n0:1436706:1436806 [1] NCCL INFO Using network AWS Libfabric\n"
NCCL_COMM = "x3006c0s1b1n0:1436706:1436806 [1] NCCL INFO comm 0x562079afbfb0 rank {r} nranks 8"
NCCL_FIRST = "x3006c0s1b1n0:1436705:1436705 [0] NCCL INFO NCCL_SOCKET_IFNAME"
WATCHDOG = ("[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank {r}] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            "Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n")


def _sub(data: bytes, old: str, new: str) -> bytes:
    assert old.encode() in data, old
    return data.replace(old.encode(), new.encode(), 1)


def _line(data: bytes, marker: str) -> int:
    return data[:data.index(marker.encode())].count(b"\n") + 1


# (id, format, file name, base bytes, text with {} for the value, good value, bad value,
#  rows lost, problem regex, marker of the problem's line (in the bad copy))
CASES = [
    # --- NCCL ------------------------------------------------------------------------------
    ("nccl_pid_5000_digits", "nccl", "n.log", NCCL, "x3006c0s1b1n0:{}:1436806 [1] NCCL INFO "
     "Using network", "1436706", BIG, 0, r"pid '9+'… \(5,000 characters\) has 5,000 digits",
     "NCCL INFO Using network"),
    ("nccl_pid_above_int64", "nccl", "n.log", NCCL, "x3006c0s1b1n0:{}:1436806 [1] NCCL INFO "
     "Using network", "1436706", E20, 0, r"pid 9{20} has 20 digits: does not fit",
     "NCCL INFO Using network"),
    ("nccl_device_5000_digits", "nccl", "n.log", NCCL, "x3006c0s1b1n0:1436705:1436705 [{}] "
     "NCCL INFO NCCL_SOCKET_IFNAME", "0", BIG, 0, r"device .*5,000 digits", NCCL_FIRST[:10]),
    ("nccl_comm_rank_above_int64", "nccl", "n.log", NCCL, NCCL_COMM.replace("{r}", "{}"),
     "1", E20, 0, r"rank 9{20} has 20 digits", "rank 9999"),
    ("nccl_comm_rank_5000_digits", "nccl", "n.log", NCCL, NCCL_COMM.replace("{r}", "{}"),
     "1", BIG, 0, r"rank '9+'… .*5,000 digits", "rank 9999"),
    ("nccl_comm_nranks_above_int64", "nccl", "n.log", NCCL,
     "comm 0x562079afbfb0 rank 1 nranks {}", "8", E20, 0, r"nranks 9{20} has 20 digits",
     "nranks 9999"),
    ("nccl_nnodes_5000_digits", "nccl", "n.log", NCCL, "nRanks 8 nNodes {}", "2", BIG, 0,
     r"nNodes '9+'… .*5,000 digits", "nNodes 9999"),
    ("nccl_nnodes_superscript", "nccl", "n.log", NCCL, "nRanks 8 nNodes {}", "2", "2²", 0,
     r"nNodes 2² is not a number \('²' is not a digit 0-9\)", "nNodes 2²"),
    ("nccl_channels_5000_digits", "nccl", "n.log", NCCL + b"x3006c0s1b1n0:1436706:1436806 [1] "
     b"NCCL INFO @ coll channels, 2 nvls channels, 2 p2p channels, 2 p2p channels per peer\n",
     "NCCL INFO {} coll", "2", BIG, 0, r"coll channels .*5,000 digits", "coll channels"),
    ("nccl_slurm_nnodes_5000_digits", "nccl", "n.log", NCCL + b"SLURM_NNODES=@\n",
     "SLURM_NNODES={}", "2", BIG, 0, r"SLURM_NNODES .*5,000 digits", "SLURM_NNODES"),
    ("nccl_slurm_nnodes_above_int64", "nccl", "n.log", NCCL + b"SLURM_NNODES=@\n",
     "SLURM_NNODES={}", "2", E20, 0, r"SLURM_NNODES 9{20} has 20 digits", "SLURM_NNODES"),
    ("nccl_nnodes_option_5000_digits", "nccl", "n.log", NCCL + b"torchrun --nnodes @ t.py\n",
     "--nnodes {} ", "2", BIG, 0, r"--nnodes .*5,000 digits", "--nnodes"),
    ("nccl_prefix_rank_5000_digits", "nccl", "n.log", _sub(NCCL, NCCL_USING, "[rank@]:"
                                                            + NCCL_USING),
     "[rank{}]:", "3", BIG, 0, r"launcher prefix rank .*5,000 digits", "[rank"),
    ("nccl_prefix_rank_above_int64", "nccl", "n.log", _sub(NCCL, NCCL_USING, "[1,@]<stdout>:"
                                                            + NCCL_USING),
     "[1,{}]<stdout>:", "3", E20, 0, r"launcher prefix rank 9{20}", "[1,"),
    ("nccl_watchdog_rank_5000_digits", "nccl", "n.log", NCCL + WATCHDOG.replace("{r}", "@")
     .encode(), "[Rank {}]", "1", BIG, 0, r"watchdog rank .*5,000 digits", "Watchdog"),
    ("nccl_watchdog_rank_above_int64", "nccl", "n.log", NCCL + WATCHDOG.replace("{r}", "@")
     .encode(), "[Rank {}]", "1", E20, 0, r"watchdog rank 9{20}", "Watchdog"),
    # --- nccl-tests ------------------------------------------------------------------------
    ("nccltests_size_5000_digits", "nccltests", "t.dat", NCCLTESTS, "{}         32768",
     "      131072", BIG, 0, r"size '9+'… .*5,000 digits.*row is kept", "         32768"),
    ("nccltests_count_5000_digits", "nccltests", "t.dat", NCCLTESTS, "      131072 {}",
     "        32768", BIG, 0, r"count .*5,000 digits", "      131072 9"),
    ("nccltests_size_superscript", "nccltests", "t.dat", NCCLTESTS, "{}         32768",
     "      131072", "      1310²2", 0, r"size 1310²2 is not a number", "1310²2"),
    ("nccltests_wrong_5000_digits", "nccltests", "t.dat", NCCLTESTS, "0.62      {}    371.6",
     "0", BIG, 0, r"#wrong .*5,000 digits", "0.62      9"),
    ("nccltests_ngpus_5000_digits", "nccltests", "t.dat", NCCLTESTS, "nGpus {} ", "1", BIG, 0,
     r"nGpus .*5,000 digits", "nGpus"),
    ("nccltests_ngpus_above_int64", "nccltests", "t.dat", NCCLTESTS, "nGpus {} ", "1", E20, 0,
     r"nGpus 9{20}", "nGpus"),
    ("nccltests_maxbytes_above_int64", "nccltests", "t.dat", NCCLTESTS, "maxBytes {} ",
     "1073741824", E20, 0, r"maxBytes 9{20}", "maxBytes"),
    ("nccltests_device_rank_5000_digits", "nccltests", "t.dat", NCCLTESTS, "#  Rank  {} Group",
     "3", BIG, 0, r"Rank .*5,000 digits", "#  Rank  9"),
    ("nccltests_busbw_nan", "nccltests", "t.dat", NCCLTESTS, "0.35    {}      0    371.6",
     "0.62", " nan", 0, r"busbw nan is not finite: the row is kept", "0.35     nan"),
    ("nccltests_avg_busbw_1e999", "nccltests", "t.dat", NCCLTESTS, "# Avg bus bandwidth    : {}",
     "9.76937", "1e999", 0, r"Avg bus bandwidth 1e999 is not finite", "# Avg bus"),
    # --- mpiP ------------------------------------------------------------------------------
    ("mpip_task_5000_digits", "mpip", "dp_steps.4.16765.1.mpiP", MPIP,
     "{}       9.11       1.01", "   1", BIG, 1, r"task .*5,000 digits.*row is skipped",
     "       9.11       1.01"),
    ("mpip_task_superscript", "mpip", "dp_steps.4.16765.1.mpiP", MPIP,
     "{}       9.11       1.01", "   1", "   ¹", 1, r"task ¹ is not a number.*row is skipped",
     "       9.11       1.01"),
    ("mpip_site_5000_digits", "mpip", "dp_steps.4.16765.1.mpiP", MPIP,
     "Allreduce            {}    0      3", "2", BIG, 0, r"site .*5,000 digits.*skipped",
     "    0      3     4.38"),
    ("mpip_count_5000_digits", "mpip", "dp_steps.4.16765.1.mpiP", MPIP,
     # the site's per-rank counts no longer add up to its '*' row: mpi_routines is made per
     # job from the '*' rows (the documented rule), 9 rows fewer
     "Allreduce            2    0      {}", "3", BIG, 9, r"count .*5,000 digits.*kept",
     "Allreduce            2    0      9"),
    ("mpip_aggregate_count_5000_digits", "mpip", "dp_steps.4.16765.1.mpiP", MPIP,
     "18.24        {}", "600", BIG, 0, r"count .*5,000 digits.*kept", "18.24        9"),
    ("mpip_callsite_line_5000_digits", "mpip", "dp_steps.4.16765.1.mpiP", MPIP,
     "  2   0 dp_steps.c            {}", "64", BIG, 0, r"line .*5,000 digits.*kept",
     "  2   0 dp_steps.c            9"),
    ("mpip_callsites_count_5000_digits", "mpip", "dp_steps.4.16765.1.mpiP", MPIP,
     "@--- Callsites: {} ", "32", BIG, 0, r"Callsites: .*5,000 digits", "@--- Callsites"),
    ("mpip_callsites_count_above_int64", "mpip", "dp_steps.4.16765.1.mpiP", MPIP,
     "@--- Callsites: {} ", "32", E20, 0, r"Callsites: 9{20}", "@--- Callsites"),
    ("mpip_task_assignment_5000_digits", "mpip", "dp_steps.4.16765.1.mpiP", MPIP,
     "MPI Task Assignment      : {} vm", "2", BIG, 0, r"MPI Task Assignment .*5,000 digits",
     "MPI Task Assignment      : 9"),
    ("mpip_task_assignment_above_int64", "mpip", "dp_steps.4.16765.1.mpiP", MPIP,
     "MPI Task Assignment      : {} vm", "2", E20, 0, r"MPI Task Assignment 9{20}",
     "MPI Task Assignment      : 9"),
    # a call's time printed in ms that is a float but no float of microseconds (x 1000):
    # that value missing, with an error naming the line, the row kept
    ("mpip_call_mean_1e306_ms", "mpip", "dp_steps.4.16765.1.mpiP", MPIP,
     "Allreduce            6    0    600     3.44     {}    0.756", "1.24", "1e306", 0,
     r"mean_ms 1e\+306 x 10\^3 does not fit a 64-bit float.*kept", "600     3.44     1e306"),
    # --- DeepSpeed comms -------------------------------------------------------------------
    ("dscomms_avg_latency_1e306_ms", "dscomms", "c.md", DSDOCS,
     "146                 11.12               {}  ", "0.08", "1e306", 0,
     r"avg latency 1e\+306 x 10\^3 does not fit a 64-bit float.*kept", "11.12               1e306"),
    ("dscomms_count_5000_digits", "dscomms", "c.md", DSDOCS, "2.0 KB              {} ", "146",
     BIG, 0, r"count .*5,000 digits.*kept", "2.0 KB              9"),
    ("dscomms_count_superscript", "dscomms", "c.md", DSDOCS, "2.0 KB              {} ", "146",
     "14⁶", 0, r"count 14⁶ is not a number", "2.0 KB              14"),
    ("dscomms_size_1e300_yb", "dscomms", "c.md", DSDOCS, "{}            1   ", "98.25 MB",
     "1e300 YB", 1, r"message size '1e300 YB' does not fit .*row is skipped", "1e300 YB"),
    # --- MLPerf logs -----------------------------------------------------------------------
    ("mllog_srun_prefix_5000_digits", "mllog", "m.txt", MLBERT, '{}: :::MLLOG {{"namespace": '
     '"", "time_ms": 1621399928038', "0", BIG, 0, r"launcher prefix rank .*5,000 digits",
     '"time_ms": 1621399928038'),
    ("mllog_tag_prefix_above_int64", "mllog", "m.txt", _sub(
        MLBERT, '0: :::MLLOG {"namespace": "", "time_ms": 1621399928038',
        '[1,@]<stdout>: :::MLLOG {"namespace": "", "time_ms": 1621399928038'),
     '[1,{}]<stdout>: :::MLLOG {{"namespace": "", "time_ms": 1621399928038', "0", E20, 0,
     r"launcher prefix rank 9{20}", '"time_ms": 1621399928038'),
    ("mllog_epoch_num_2_63", "mllog", "m.txt", MLBERT, '"epoch_num": {}}}', "1",
     "9223372036854775808", 0, r"epoch_num 9223372036854775808 does not fit a 64-bit",
     '"epoch_num": 92'),
    ("mllog_epoch_num_minus_2_63_minus_1", "mllog", "m.txt", MLBERT, '"epoch_num": {}}}', "1",
     "-9223372036854775809", 0, r"epoch_num -9223372036854775809 does not fit",
     '"epoch_num": -92'),
    ("mllog_epoch_num_5000_digits", "mllog", "m.txt", MLBERT, '"epoch_num": {}}}', "1", BIG, 0,
     r"epoch_num .*5,000 digits", '"epoch_num": 99'),
    ("mllog_time_ms_5000_digits", "mllog", "m.txt", MLBERT, '"time_ms": {}, "event_type": '
     '"INTERVAL_START", "key": "epoch_start"', "1621399928038", BIG, 0,
     r"time_ms .*5,000 digits", '"time_ms": 99'),
    ("mllog_time_ms_1e307", "mllog", "m.txt", MLBERT, '"time_ms": {}, "event_type": '
     '"INTERVAL_START", "key": "epoch_start"', "1621399928038", "1e307", 0,
     r"time_ms 1e\+307 x 10\^3 does not fit a 64-bit float", '"time_ms": 1e307'),
    ("mllog_srun_ntasks_superscript", "mllog", "m.txt", MLBERT, "--ntasks={} --ntasks-per",
     "8", "8²", 1, r"srun --ntasks 8² is not a number", "--ntasks=8²"),
    ("mllog_slurm_nnodes_5000_digits", "mllog", "m.txt", MLBERT + b"SLURM_NNODES=@\n",
     "SLURM_NNODES={}", "1", BIG, 1, r"SLURM_NNODES .*5,000 digits", "SLURM_NNODES=9"),
]


def _read(tmp_path: Path, name: str, data: bytes, fmt: str, tag: str) -> dptrace.Dataset:
    d = tmp_path / tag
    d.mkdir()
    (d / name).write_bytes(data)
    return dptrace.load(str(d / name), format=fmt)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_bad_value_costs_only_its_value(case, tmp_path: Path) -> None:
    _, fmt, name, base, text, good, bad, lost, problem, marker = case
    slot = text.format("@")   # an appended line carries '@' where the field goes
    template = base if slot.encode() in base else _sub(base, text.format(good), slot)
    good_data = template.replace(slot.encode(), text.format(good).encode(), 1)
    bad_data = template.replace(slot.encode(), text.format(bad).encode(), 1)
    ok = _read(tmp_path, name, good_data, fmt, "good")
    got = _read(tmp_path, name, bad_data, fmt, "bad")
    src = got.sources.iloc[0]
    assert src["status"] in ("ok", "partial"), (src["status"], src["message"])
    assert int(src["rows"]) == int(ok.sources["rows"].iloc[0]) - lost
    probs = got.problems
    line = _line(bad_data, marker)
    hits = probs[probs["message"].str.contains(problem, regex=True)]
    assert len(hits), (problem, probs[["line", "message"]].to_string()[:2000])
    assert (hits["line"] == line).any(), (line, hits[["line", "message"]].to_string())
    assert (hits["severity"] == "error").all()
    assert all(len(m) < 400 for m in probs["message"])   # 5,000 digits never quoted whole
    assert not ok.problems["severity"].eq("error").any(), ok.problems.to_string()


def test_nccl_bad_comm_rank_leaves_the_rank_missing_not_wrong(tmp_path: Path) -> None:
    data = _sub(NCCL, NCCL_COMM.format(r=1), NCCL_COMM.format(r=E20))
    t = _read(tmp_path, "n.log", data, "nccl", "a")["nccl_setup"]
    proc = t[t["pid"] == 1436706].iloc[0]
    assert proc["nranks"] == 8      # the comm line's other fields are read
    assert pd.isna(proc["rank"])


def test_nccltests_bad_row_values_keep_the_row(tmp_path: Path) -> None:
    data = _sub(NCCLTESTS, "0.35    0.62      0    371.6", "0.35     nan      0    371.6")
    t = _read(tmp_path, "t.dat", data, "nccltests", "a")["nccl_tests"]
    row = t[(t["size_bytes"] == 131072) & (t["placement"] == "out-of-place")]
    assert len(row) == 1 and row["busbw_gbps"].isna().all() and row["algbw_gbps"].item() == 0.35
    s = _read(tmp_path, "t.dat", _sub(NCCLTESTS, ": 9.76937", ": 1e999"), "nccltests", "b")
    msgs = " | ".join(s.problems["message"])
    assert "does not end with" not in msgs
    assert s["nccl_tests_summary"]["avg_busbw_gbps"].isna().all()


def test_mpip_file_name_with_a_20_digit_task_count(tmp_path: Path) -> None:
    """``<exe>.<ntasks>.<pid>.<k>.mpiP``: a report without task lines takes its tasks from its
    name; a name whose count is not a number of tasks costs that count, not the report."""
    data = re.sub(rb"@ MPI Task Assignment.*\n", b"", MPIP_CONCISE)
    good = _read(tmp_path, "dp.4.16818.1.mpiP", data, "mpip", "good")
    bad = _read(tmp_path, f"dp.{E20}.16818.1.mpiP", data, "mpip", "bad")
    src = bad.sources.iloc[0]
    assert src["status"] in ("ok", "partial") and src["rows"] == good.sources["rows"].iloc[0]
    # the name's count is passed over: the tasks come from the next witness, the task time
    # statistics (Aggregate / Mean app time: 36.355052 / 9.088763 = 4)
    assert good["mpi_ranks"]["nranks"].eq(4).all() and bad["mpi_ranks"]["nranks"].eq(4).all()
    assert bad.problems["message"].str.contains(f"tasks {E20} has 20 digits").any()


def test_nccl_torn_line_in_a_cr_only_log_is_named_at_its_line(tmp_path: Path) -> None:
    """A log whose lines end with a lone CR: each CR starts a line, so a torn line is named
    at its own line, not at line 1 (issue 30, 'Messages')."""
    torn = _sub(NCCL, NCCL_USING, NCCL_USING[:-1] + "[rank2]:[E ProcessGroupNCCL.cpp:563] x\n")
    line = _line(torn, "NCCL INFO Using network")
    got = _read(tmp_path, "n.log", torn.replace(b"\n", b"\r"), "nccl", "cr")
    hit = got.problems[got.problems["message"].str.contains("torn by another writer")]
    assert hit["line"].tolist() == [line] and line > 1
    bad = _sub(NCCL, "nRanks 8 nNodes 2", "nRanks 8 nNodes " + E20).replace(b"\n", b"\r")
    got = _read(tmp_path, "n.log", bad, "nccl", "cr2")
    hit = got.problems[got.problems["message"].str.contains("nNodes 9")]
    assert hit["line"].tolist() == [_line(NCCL, "nRanks 8 nNodes 2")]


def test_mllog_deep_record_says_so(tmp_path: Path) -> None:
    """A record nested 1,000 deep is skipped as what it is, not as 'torn or cut'."""
    data = _sub(MLBERT, '"epoch_num": 1}', '"epoch_num": 1, "x": ' + "[" * 1000 + "]" * 1000
                + "}")
    got = _read(tmp_path, "m.txt", data, "mllog", "deep")
    msg = got.problems[got.problems["line"] == _line(data, '"x": [[')]["message"]
    assert msg.str.contains("nested deeper than Python decodes").any()
    assert not msg.str.contains("torn or cut").any()
    assert int(got.sources["rows"].iloc[0]) == int(
        _read(tmp_path, "m.txt", MLBERT, "mllog", "base").sources["rows"].iloc[0]) - 1

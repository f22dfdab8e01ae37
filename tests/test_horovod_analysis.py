"""Horovod analyses with hand-checked numbers from the real timelines.

Expected values were derived independently of dptrace, with the json module and a Python
list per pid as the B/E stack (the ``reference`` reader of test_horovod_parse.py), plus the
one-liners quoted next to each value; "union" is the length of the union of the intervals.
"""

from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace.formats.horovod import compute as hv

FIX = Path(__file__).parent / "fixtures" / "horovod"


@pytest.fixture(scope="module")
def four() -> dptrace.Dataset:
    return dptrace.load(FIX / "andrewor14_horovod_timeline_2019_4rank.json")


@pytest.fixture(scope="module")
def twelve() -> dptrace.Dataset:
    return dptrace.load(FIX / "andrewor14_horovod_timeline_2019_v2.json")


def test_union_of_intervals():
    start = pd.Series([0.0, 5.0, 20.0, 22.0, 40.0]).to_numpy()
    end = pd.Series([10.0, 8.0, 30.0, 25.0, float("nan")]).to_numpy()
    assert hv.union_us(start, end) == 20.0            # [0,10) + [20,30); the open one skipped
    assert hv.union_segments(start, end) == [(0.0, 10.0), (20.0, 30.0)]


def test_negotiation_share_of_wall_time(four, twelve):
    # union of all closed NEGOTIATE_* intervals: 143,113,586 us of a 189,808,515 us span
    # (last ts 1410678550022 - first ts 1410488741507); union of op intervals 47,723,384 us
    n = hv.negotiation_share(four["hvd_activities"], four["hvd_runs"]).iloc[0]
    assert (n["negotiate_wall_us"], n["span_us"], n["op_wall_us"]) == (
        143_113_586, 189_808_515, 47_723_384)
    assert n["negotiate_share"] == pytest.approx(0.753989, abs=1e-6)
    assert (n["negotiations"], n["negotiations_with_ticks"]) == (673, 673)
    # the 12-rank file: 142,958,555 of 212,509,747 us
    m = hv.negotiation_share(twelve["hvd_activities"], twelve["hvd_runs"]).iloc[0]
    assert (m["negotiate_wall_us"], m["span_us"]) == (142_958_555, 212_509_747)


def test_activity_breakdown(four):
    b = hv.activity_breakdown(four["hvd_activities"], four["hvd_runs"])
    row = b.set_index("activity").loc["NEGOTIATE_ALLREDUCE"]
    # tensor time = sum of the 660 NEGOTIATE_ALLREDUCE durations = 386,700,963 us
    assert (row["intervals"], row["open"], row["tensor_us"]) == (660, 0, 386_700_963)
    mem = b.set_index("activity").loc["MEMCPY_IN_FUSION_BUFFER"]
    # 214 copies summing to 135,475 us; a fused pair copies at once: union 67,848 us
    assert (mem["intervals"], mem["tensor_us"], mem["wall_us"]) == (214, 135_475, 67_848)
    assert mem["op"] == "ALLREDUCE" and mem["level"] == "activity"
    assert b["level"].tolist()[:2] == ["negotiate", "negotiate"]


def test_activity_breakdown_of_the_pytorch_broadcasts():
    ds = dptrace.load(FIX / "cipherdoc_horovod_pytorch_bcast_only.json")
    b = hv.activity_breakdown(ds["hvd_activities"], ds["hvd_runs"]).set_index("activity")
    # tensor time per activity (sum of E.ts - B.ts): WAIT_FOR_OTHER_TENSOR_DATA 25,540 us,
    # WAIT_FOR_DATA 852, MPI_BCAST 272, BROADCAST 28,776, NEGOTIATE_BROADCAST 377
    assert b["tensor_us"].to_dict() == {"NEGOTIATE_BROADCAST": 377, "BROADCAST": 28776,
                                        "WAIT_FOR_OTHER_TENSOR_DATA": 25540,
                                        "WAIT_FOR_DATA": 852, "MPI_BCAST": 272}
    assert b.loc["BROADCAST", "span_share"] == pytest.approx(28776 / 206857)


def test_straggler_ranks(four, twelve):
    # in every one of the 673 negotiations the last tick before E is rank 0
    # (for each negotiation: max ts tick); rank 0's lag behind the first rank ready
    # averages 634,565.81 us, at most 3,104,900 us; rank 1: 66,318.44, rank 2: 1,736.66
    s = hv.straggler_ranks(four["hvd_ready"]).set_index("rank")
    assert s.loc[0, "last"] == 673 and s.loc[0, "last_share"] == 1.0
    assert s.loc[[1, 2, 3], "last"].tolist() == [0, 0, 0]
    assert s.loc[0, "mean_lag_us"] == pytest.approx(634_565.8128, abs=1e-3)
    assert s.loc[0, "max_lag_us"] == 3_104_900
    assert s.loc[1, "mean_lag_us"] == pytest.approx(66_318.4428, abs=1e-3)
    assert s.loc[2, "mean_lag_us"] == pytest.approx(1_736.6642, abs=1e-3)
    assert s.index.tolist()[0] == 0                   # most often last comes first
    t = hv.straggler_ranks(twelve["hvd_ready"]).set_index("rank")
    assert len(t) == 12 and t.loc[0, "last"] == 673
    assert t.loc[9, "mean_lag_us"] == pytest.approx(16_848.6880, abs=1e-3)


def test_stragglers_need_two_ranks():
    # single-rank jobs tick only rank 0: nothing to compare
    ds = dptrace.load(FIX / "alcfws_timeline_gpu_n1.json")
    assert hv.straggler_ranks(ds["hvd_ready"]).empty


def test_straggler_ranks_of_the_killed_job():
    # make_synthetic.KILLED: compared negotiations A0 (rank 0 last, lag 59), B0 (rank 1 last,
    # lag 94), B1 (rank 0 last, lag 47); A1 has one tick and is not compared
    ds = dptrace.load(FIX / "synthetic_killed_open_b.json")
    s = hv.straggler_ranks(ds["hvd_ready"]).set_index("rank")
    assert s["last"].to_dict() == {0: 2, 1: 1}
    assert s.loc[0, "mean_lag_us"] == pytest.approx((59 + 0 + 47) / 3)
    assert s.loc[1, "mean_lag_us"] == pytest.approx((0 + 94 + 0) / 3)
    assert s.loc[0, "last_share"] == pytest.approx(2 / 3)


def test_fusion(four):
    g = hv.fusion_groups(four["hvd_tensors"])
    f = hv.fusion_summary(g, four["hvd_activities"]).set_index("op")
    # 660 ALLREDUCE tensors in 553 ops: 107 pairs (214 MEMCPY_IN_FUSION_BUFFER) + 446 singles
    a = f.loc["ALLREDUCE"]
    assert (a["ops"], a["tensors"], a["fused_ops"], a["max_tensors"]) == (553, 660, 107, 2)
    # fusion-buffer copies: union of MEMCPY_IN (67,848 us) and MEMCPY_OUT (81,387 us) = 149,235
    assert a["copy_wall_us"] == 149_235
    assert a["copy_share"] == pytest.approx(149_235 / 46_754_161)
    sizes = hv.fusion_sizes(g)
    al = sizes[sizes["op"] == "ALLREDUCE"]
    assert al[["min_tensors", "max_tensors", "ops"]].values.tolist() == [[1, 1, 446],
                                                                         [2, 2, 107]]


def test_fused_op_bytes_of_the_killed_job():
    # step 1 fuses grad_a (131,072 B) and grad_b (512 B): one op of 131,584 B, 102+1 us
    ds = dptrace.load(FIX / "synthetic_killed_open_b.json")
    g = hv.fusion_groups(ds["hvd_tensors"])
    first = g.iloc[0]
    assert (first["tensors"], first["bytes"], first["start_us"], first["dur_us"]) == (
        2, 131_584, 210, 103)                      # 310-100 .. 413-100
    assert not g.iloc[1]["complete"] and pd.isna(g.iloc[1]["dur_us"])


def test_op_throughput_by_size(four):
    g = hv.fusion_groups(four["hvd_tensors"])
    tp = hv.op_throughput(g, four["hvd_tensors"], four["hvd_activities"]).set_index("bin")
    # bin 23 holds (8, 16] MiB (mpitrace's bins: k holds (2^k, 2^(k+1)]): the ops of [4096, 1001] float32 = 16,400,384 B (AddN_1_0).
    # Grouping consecutive top-level "B ALLREDUCE" records of the raw file (json module,
    # per-pid stacks): 109 single ops plus one fused with the 688 B AddN_4_0, so
    # 110 ops, 110 * 16,400,384 + 688 = 1,804,042,928 B, first start to last end summed
    # 9,140,374 us; the MPI_ALLREDUCE inside them sums to 9,112,960 us
    b24 = tp.loc[23]
    assert (b24["ops"], b24["lo_bytes"], b24["hi_bytes"]) == (110, 8_388_609, 16_777_216)
    assert b24["bytes"] == 1_804_042_928
    assert b24["op_us"] == 9_140_374
    assert b24["op_bytes_per_s"] == pytest.approx(1_804_042_928 / 9.140374)
    assert b24["comm_us"] == 9_112_960


def test_size_bins_are_mpitraces():
    k = hv.size_bin(pd.Series([0, 1, 4, 5, 8, 9, 16_400_384, None]))
    assert k.tolist()[:7] == [0, 1, 1, 2, 2, 3, 23] and pd.isna(k.iloc[7])
    lo, hi = hv.bin_bounds(pd.Series([0, 1, 2, 23]))
    assert lo.tolist() == [0, 1, 5, 8_388_609] and hi.tolist() == [0, 4, 8, 16_777_216]


def test_top_tensors(four):
    # sum of ALLREDUCE op durations per tensor: AddN_5_0 34,833,362 us (71.9% of the
    # 48,454,049 us of op time), AddN_1_0 9,140,373 us, AddN_4_0 2,206,933 us
    top = hv.top_tensors(four["hvd_tensors"], 3)
    assert top["tensor"].str.rsplit("_", n=2).str[-2].tolist() == ["5", "1", "4"]
    assert top["total_us"].tolist() == [34_833_362, 9_140_373, 2_206_933]
    assert top["share"].iloc[0] == pytest.approx(34_833_362 / (47_484_826 + 969_223))
    assert (top["ops"].iloc[0], top["bytes"].iloc[0], top["shape"].iloc[0]) == (
        110, 106_355_856, "[154587, 172]")


def test_cycles_and_idle_gaps(four):
    # CYCLE_START: 13,999 markers, mean gap (1410678550022 - 1410488741507) / 13998
    c = hv.cycle_stats(four["hvd_cycles"]).iloc[0]
    assert c["cycles"] == 13_999
    assert c["mean_us"] == pytest.approx(189_808_515 / 13_998)
    assert c["p50_us"] == 9018
    # gaps between the merged op intervals: 565, 136,148,336 us in total; the longest
    # 1,000,499 us starting 6,876,182 us after the first event
    gaps = hv.idle_gaps(four["hvd_activities"])
    assert len(gaps) == 565 and gaps["dur_us"].sum() == 136_148_336
    assert (gaps["start_us"].iloc[0], gaps["dur_us"].iloc[0]) == (6_876_182, 1_000_499)
    s = hv.idle_summary(gaps, four["hvd_runs"]).iloc[0]
    assert s["idle_share"] == pytest.approx(136_148_336 / 189_808_515)


def test_gpu_cycle_time():
    # 22,784 CYCLE_START from ts 344 to 25,714,307: mean 25,713,963 / 22,783; median 1,058
    ds = dptrace.load(FIX / "alcfws_timeline_gpu_n1.json")
    c = hv.cycle_stats(ds["hvd_cycles"]).iloc[0]
    assert c["mean_us"] == pytest.approx(25_713_963 / 22_783)
    assert c["p50_us"] == 1058


def test_warnings():
    ds = dptrace.load([FIX / "synthetic_killed_open_b.json", FIX / "synthetic_cut_mid_record.json",
                       FIX / "smdebug_rotated_horovod_timeline.json"])
    w = hv.timeline_warnings(ds["hvd_runs"])
    kinds = {(Path(s).name, k) for s, k in zip(w["source"], w["kind"], strict=True)}
    assert ("synthetic_killed_open_b.json", "open_intervals") in kinds
    assert ("synthetic_cut_mid_record.json", "truncated") in kinds
    assert ("smdebug_rotated_horovod_timeline.json", "unmatched_ends") in kinds
    # the packed synthetic job caches half of its negotiations (no ticks)
    packed = dptrace.load(FIX / "synthetic_v0201_packed.json")
    cached = hv.timeline_warnings(packed["hvd_runs"])
    assert cached["kind"].tolist() == ["cached"]
    run = packed["hvd_runs"].iloc[0]
    assert f"only {run['negotiations_with_ticks']:,} of {run['negotiations']:,}" in \
        cached["detail"].item()


def test_empty_inputs():
    empty = dptrace.load(FIX / "smdebug_rotated_horovod_timeline_tiny.json")
    assert hv.activity_breakdown(empty["hvd_activities"], empty["hvd_runs"]).empty
    assert hv.fusion_groups(empty["hvd_tensors"]).empty
    assert hv.op_throughput(hv.fusion_groups(empty["hvd_tensors"]), empty["hvd_tensors"],
                            empty["hvd_activities"]).empty
    assert hv.top_tensors(empty["hvd_tensors"]).empty
    assert hv.idle_gaps(empty["hvd_activities"]).empty

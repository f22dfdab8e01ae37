"""Communication analyses on real mpitrace jobs, each number checked by hand.

Most checks use the Theta Horovod job 19013 (32 ranks; files of ranks 0, 26 and 28).
The awk lines in comments were run on tests/fixtures/mpitrace/alcfws_theta_knl32.
"""

from pathlib import Path

import pytest

import dptrace
from dptrace.formats.mpitrace import communication as comm

FIX = Path(__file__).parent / "fixtures" / "mpitrace"


@pytest.fixture(scope="module")
def knl32() -> dptrace.Dataset:
    return dptrace.load(FIX / "alcfws_theta_knl32")


def test_rank_times_merge_own_files_with_rank0_table(knl32):
    rt = comm.rank_times(knl32["mpi_ranks"])
    assert rt["rank"].tolist() == list(range(32))
    r0 = rt.iloc[0]
    # own file line 15 says 251.328 s, rank 0's table line 76 rounds it to 251.33: own kept
    assert (r0["comm_time_s"], r0["elapsed_s"], r0["origin"]) == (251.328, 317.922,
                                                                   "own+rank0_table")
    assert r0["host"] == "nid00102" and r0["switches"] == 634913    # from the table
    assert r0["comm_share"] == pytest.approx(251.328 / 317.922)      # 0.790534
    assert rt.loc[1, "origin"] == "rank0_table" and rt.loc[1, "comm_time_s"] == 267.30
    assert not rt["mismatch"].any()


def test_job_summary_numbers(knl32):
    j = comm.job_summary(comm.rank_times(knl32["mpi_ranks"])).iloc[0]
    assert (j["nranks"], j["ranks_listed"], j["complete"]) == (32, 32, True)
    # awk '$1~/^[0-9]+$/ && NF==8 {s+=$3} END {print s}' mpi_profile.19013.0 -> 8718.63;
    # ranks 0, 26, 28 use their own 3-decimal values (-0.002, -0.002, -0.004): 8718.622 / 32
    assert j["comm_mean_s"] == pytest.approx(8718.622 / 32)
    # the same min/median/max ranks as mpitrace's own summary (rank 0 file lines 69-71)
    assert (j["min_rank"], j["comm_min_s"]) == (0, 251.328)
    assert (j["median_rank"], j["comm_median_s"]) == (26, 273.408)
    assert (j["max_rank"], j["comm_max_s"]) == (28, 278.406)
    assert j["comm_imbalance"] == pytest.approx(278.406 / (8718.622 / 32))   # 1.021835
    # awk: population std / mean over the table's comm(s) column = 0.016857
    assert j["comm_cov"] == pytest.approx(0.016857, abs=2e-6)
    # awk '{s += $3/$4}' over the table = 0.856998 (own values change it by < 1e-6)
    assert j["comm_share_mean"] == pytest.approx(0.856998, abs=2e-6)
    assert j["comm_share_min"] == pytest.approx(251.328 / 317.922)


def test_top_routines_sum_and_mean_over_ranks_present(knl32):
    top = comm.top_routines(knl32["mpi_routines"])
    a = top.iloc[0]
    assert a["routine"] == "MPI_Allreduce" and a["ranks"] == 3
    assert a["calls"] == 3 * 47108                      # line 9 of each of the three files
    assert a["time_s"] == pytest.approx(250.492 + 272.501 + 277.508)   # 800.501
    assert a["time_s_per_rank"] == pytest.approx(800.501 / 3)
    # routine times of the three files (awk 'NR>=6 && NR<=12 {s+=$4}'): 251.327 + 273.408 + 278.405
    assert a["time_share"] == pytest.approx(800.501 / 803.140)
    by_calls = comm.top_routines(knl32["mpi_routines"], by="calls", n=2)
    assert by_calls["routine"].tolist() == ["MPI_Allreduce", "MPI_Bcast"]   # 141324, 783
    by_bytes = comm.top_routines(knl32["mpi_routines"], by="bytes", n=1)
    assert by_bytes["bytes"].item() == pytest.approx(3 * 47108 * 247017.5)


def test_message_sizes_largest_allreduce_bin_and_bandwidth(knl32):
    ms = comm.message_sizes(knl32["mpi_messages"])
    big = ms[(ms["routine"] == "MPI_Allreduce") & (ms["bin"] == 25)].iloc[0]
    # line 57 of the three files: 125 calls of 67108864.0 bytes, 24.563 + 24.567 + 24.557 s
    assert (big["calls"], big["ranks"], big["calls_per_rank"]) == (375, 3, 125.0)
    assert big["time_s"] == pytest.approx(73.687)
    assert big["bytes"] == 375 * 67108864
    assert big["algbw_bytes_per_s"] == pytest.approx(375 * 67108864 / 73.687)   # 341.5 MB/s
    assert big["busbw_factor"] == pytest.approx(2 * 31 / 32)
    assert big["busbw_bytes_per_s"] == pytest.approx(375 * 67108864 / 73.687 * 1.9375)
    ar = ms[ms["routine"] == "MPI_Allreduce"]
    assert ar["time_share"].sum() == pytest.approx(1.0)
    eight = ar[ar["bin"] == 2].iloc[0]             # line 46: 214.933 + 236.991 + 241.949 s
    assert eight["time_s"] == pytest.approx(693.873)
    assert eight["time_share"] == pytest.approx(693.873 / 800.504)   # bins add to 800.504 s


def test_allgather_bandwidth_uses_the_whole_buffer():
    ds = dptrace.load(FIX / "mlprof_thetagpu_deepspeed_mpi_profile.1830196.0")
    ag = comm.message_sizes(ds["mpi_messages"])
    row = ag[ag["routine"] == "MPI_Allgather"].iloc[0]
    # line 29: 1 call of 4 bytes (each rank's block) in 0.128 s, 16 ranks: 64-byte buffer
    assert row["algbw_bytes_per_s"] == pytest.approx(4 * 16 / 0.128)          # 500 B/s
    assert row["busbw_bytes_per_s"] == pytest.approx(500 * 15 / 16)


def test_small_message_dominance():
    ds = dptrace.load([FIX / "alcfws_theta_knl32", FIX / "alcfws_thetagpu_gpu8_mpi_profile.163698.0",
                       FIX / "alcfws_thetagpu_cpu8_mpi_profile.176429.0"])
    sm = comm.small_messages(ds["mpi_messages"], ds["mpi_routines"]).set_index("job")
    # 19013: Allreduce bins <= 64 B (4, 8, 40 bytes): 215.071 + 237.100 + 242.071 s of
    # 251.327 + 273.408 + 278.405 s of MPI time in the three files
    assert sm.loc["19013", "small_time_s"] == pytest.approx(694.242)
    assert sm.loc["19013", "small_share"] == pytest.approx(694.242 / 803.140)
    assert bool(sm.loc["19013", "dominated"])
    # Horovod on GPU (NCCL): 0.002 + 6.036 of 6.046 s, lines 34-35 and 9-16
    assert sm.loc["163698", "small_share"] == pytest.approx(6.038 / 6.046)
    assert bool(sm.loc["163698", "dominated"])
    # Horovod on CPU: gradients go over MPI; 8-byte Allreduce is 12.123 of 109.222 s
    assert sm.loc["176429", "small_share"] == pytest.approx(12.123 / 109.222)
    assert not bool(sm.loc["176429", "dominated"])


def test_checks_find_files_of_different_runs_under_one_job_id():
    ds = dptrace.load(FIX / "mlprof_polaris_run4")
    rt = comm.rank_times(ds["mpi_ranks"])
    # rank 1's own file says elapsed 103.223 s (its line 12); rank 0's table says 227.60
    r1 = rt[rt["rank"] == 1].iloc[0]
    assert bool(r1["mismatch"]) and r1["elapsed_s"] == 227.60 and r1["own_elapsed_s"] == 103.223
    assert rt["mismatch"].sum() == 4                     # ranks 1, 2, 3, 7
    c = comm.checks(ds["mpi_ranks"], rt)
    assert c["check"].tolist() == ["files disagree", "role claimed twice",
                                   "role claimed twice", "role claimed twice"]
    assert "1, 2, 3, 7" in c["detail"].iloc[0]
    assert "3 rank files say they had the maximum" in c["detail"].iloc[3]


def test_checks_missing_ranks_in_a_cut_table():
    ds = dptrace.load(FIX / "alcfws_MPI_README_2021_from_docs.md")
    c = comm.checks(ds["mpi_ranks"])
    assert c["detail"].tolist() == ["rank 0's table lists 4 of 32 ranks"]
    j = comm.job_summary(comm.rank_times(ds["mpi_ranks"]))
    assert j.set_index("job").loc["alcfws_MPI_README_2021_from_docs.md#1", "complete"] == \
        False  # noqa: E712

"""mpitrace profiles of every generation, with numbers checked by hand against the files.

Fixtures are real files from shared/realdata/mpitrace (provenance in
tests/fixtures/mpitrace/PROVENANCE.tsv). "line N" in a comment is the 1-based line of the
fixture the expected value was read from.
"""

from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace.formats.mpitrace import read as mpitrace
from dptrace.formats.mpitrace import sniff as mpitrace_sniff
from dptrace.sources import Source

FIX = Path(__file__).parent / "fixtures" / "mpitrace"
KNL32 = FIX / "alcfws_theta_knl32"
POLARIS = FIX / "mlprof_polaris_run4"


def _load(*names: str) -> dptrace.Dataset:
    return dptrace.load([FIX / n for n in names])


def _one(df: pd.DataFrame, **where: object) -> pd.Series:
    mask = pd.Series(True, index=df.index)
    for k, v in where.items():
        mask &= df[k] == v
    rows = df[mask]
    assert len(rows) == 1, rows
    return rows.iloc[0]


# -- older generation: Theta / ThetaGPU, "Times and statistics", MBytes --------------------

def test_theta_rank0_routine_table_and_totals():
    ds = _load("alcfws_theta_knl32/mpi_profile.19013.0")
    r = ds["mpi_routines"]
    assert r["routine"].tolist() == ["MPI_Comm_rank", "MPI_Comm_size", "MPI_Bcast",
                                     "MPI_Allreduce", "MPI_Gather", "MPI_Gatherv",
                                     "MPI_Allgather"]
    # line 9: "MPI_Allreduce  47108  247017.5  250.492"
    a = _one(r, routine="MPI_Allreduce")
    assert (a["job"], a["rank"], a["nranks"]) == ("19013", 0, 32)
    assert (a["calls"], a["avg_bytes"], a["time_s"]) == (47108, 247017.5, 250.492)
    assert a["bytes"] == pytest.approx(47108 * 247017.5)
    assert a["region"] == "init_finalize"
    own = _one(ds["mpi_ranks"], origin="own")
    # lines 15-19: comm 251.328, elapsed 317.922, user 8761.318, system 308.435, 1177.191 MBytes
    assert (own["comm_time_s"], own["elapsed_s"], own["user_s"], own["system_s"]) == \
        (251.328, 317.922, 8761.318, 308.435)
    assert own["max_rss_mib"] == 1177.191          # mpitrace's MBytes are ru_maxrss/1024 = MiB
    assert own["comm_role"] == "minimum"           # line 14
    assert ds.sources["variant"].item() == "times-and-statistics/MBytes"
    assert ds.problems.empty


def test_theta_allreduce_has_13_bins_and_the_largest_is_right():
    m = _load("alcfws_theta_knl32/mpi_profile.19013.0")["mpi_messages"]
    ar = m[m["routine"] == "MPI_Allreduce"]
    assert len(ar) == 13                            # lines 45-57
    big = ar.iloc[-1]                               # line 57: "125  67108864.0  24.563"
    assert (big["calls"], big["avg_bytes"], big["time_s"]) == (125, 67108864.0, 24.563)
    assert (big["bin"], big["bin_lo_bytes"], big["bin_hi_bytes"]) == (25, 2**25 + 1, 2**26)
    # the 13 bins hold all 47108 calls of the routine table (20 + 45773 + ... + 125)
    assert ar["calls"].sum() == 47108
    eight = ar.iloc[1]                              # line 46: "45773  8.0  214.933"
    assert (eight["calls"], eight["bin"], eight["bin_lo_bytes"], eight["bin_hi_bytes"]) == \
        (45773, 2, 5, 8)


def test_theta_zero_byte_and_absent_routines_have_no_bins():
    m = _load("alcfws_theta_knl32/mpi_profile.19013.0")["mpi_messages"]
    # Gatherv has 0.0 avg bytes on rank 0 (line 11) and no block; Comm_rank/size neither
    assert set(m["routine"]) == {"MPI_Bcast", "MPI_Allreduce", "MPI_Gather", "MPI_Allgather"}
    m26 = _load("alcfws_theta_knl32/mpi_profile.19013.26")["mpi_messages"]
    gv = m26[m26["routine"] == "MPI_Gatherv"]
    # rank 26 sends 77.7 bytes on average (line 11) and has 5 Gatherv bins (lines 63-67)
    assert gv["calls"].tolist() == [99, 1, 8, 1, 3] and gv["calls"].sum() == 112


def test_theta_rank0_summary_and_per_rank_table():
    ds = _load("alcfws_theta_knl32/mpi_profile.19013.0")
    j = ds["mpi_jobs"].iloc[0]
    # lines 69-71 and 21-22
    assert (j["min_comm_rank"], j["min_comm_s"]) == (0, 251.328)
    assert (j["median_comm_rank"], j["median_comm_s"]) == (26, 273.408)
    assert (j["max_comm_rank"], j["max_comm_s"]) == (28, 278.406)
    assert (j["max_rss_rank"], j["max_rss_mib"]) == (3, 1177.88)
    assert (j["max_elapsed_rank"], j["max_elapsed_s"]) == (0, 317.92)
    tab = ds["mpi_ranks"][ds["mpi_ranks"]["origin"] == "rank0_table"]
    assert tab["rank"].tolist() == list(range(32))
    r28 = _one(tab, rank=28)                        # line 104
    assert (r28["host"], r28["comm_time_s"], r28["elapsed_s"], r28["max_rss_mib"],
            r28["switches"]) == ("nid00279", 278.41, 317.92, 1166.20, 286544)
    assert pd.isna(r28["cpu"])                      # the older table has no cpu column
    assert r28["comm_role"] == "maximum"            # from the summary line 71


def test_thetagpu_ddp_job_files():
    ds = dptrace.load(FIX / "mlprof_thetagpu_ddp_run1")
    assert set(ds["mpi_routines"]["job"]) == {"1808955"}
    own = ds["mpi_ranks"][ds["mpi_ranks"]["origin"] == "own"].set_index("rank")
    # mpi_profile.1808955.5 lines 10-11: maximum, 0.154 s; .9 minimum; .12 median
    assert own.loc[5, "comm_role"] == "maximum" and own.loc[5, "comm_time_s"] == 0.154
    assert own.loc[9, "comm_role"] == "minimum" and own.loc[12, "comm_role"] == "median"
    assert ds.problems.empty


# -- newer generation: Polaris, "Times from", MiB, host + cpu ------------------------------

def test_polaris_rank0_newer_format():
    ds = dptrace.load(POLARIS / "mpi_profile.359819.0")
    assert ds.sources["variant"].item() == "times-from/MiB"
    own = _one(ds["mpi_ranks"], origin="own")
    assert (own["elapsed_s"], own["max_rss_mib"]) == (232.130, 4064.422)   # lines 11, 14
    assert pd.isna(own["comm_role"])               # rank 0 is none of min/median/max
    r4 = _one(ds["mpi_ranks"], origin="rank0_table", rank=4)   # line 41
    assert (r4["host"], r4["cpu"], r4["elapsed_s"], r4["max_rss_mib"], r4["switches"]) == \
        ("x3210c0s7b0n0", 0, 227.66, 4039.70, 209534784)
    m = ds["mpi_messages"]                          # lines 20-21: Bcast 4.0 and 29.0 bytes
    assert m["avg_bytes"].tolist() == [4.0, 29.0] and m["bin"].tolist() == [1, 4]
    j = ds["mpi_jobs"].iloc[0]                      # "Summary for all tasks" lines 25-32
    assert (j["min_comm_rank"], j["median_comm_rank"], j["max_comm_rank"]) == (6, 5, 4)
    assert ds.problems.empty


def test_horovod_nccl_empty_distribution_and_heading_at_eof():
    ds = _load("mlprof_polaris1n_horovod_mpi_profile.393718.0",
               "mlprof_polaris2n_horovod/mpi_profile.406118.2")
    assert ds["mpi_messages"].empty                 # only MPI_Comm_rank, zero bytes
    assert ds["mpi_routines"]["routine"].unique().tolist() == ["MPI_Comm_rank"]
    assert ds.problems.empty and (ds.sources["status"] == "ok").all()


def test_deepspeed_allgather_bins():
    m = _load("mlprof_thetagpu_deepspeed_mpi_profile.1830196.0")["mpi_messages"]
    ag = _one(m, routine="MPI_Allgather")          # line 29: "1  4.0  0.128"
    assert (ag["calls"], ag["time_s"], ag["nranks"]) == (1, 0.128, 16)


# -- profiles pasted in documents ----------------------------------------------------------

def test_docs_with_two_profiles_are_two_jobs():
    ds = _load("alcfws_MPI_README_from_docs.md")
    assert ds.sources["variant"].item() == "2 pasted: times-and-statistics/MBytes"
    jobs = ds["mpi_routines"].groupby("job", observed=True)["nranks"].first().to_dict()
    assert jobs == {"alcfws_MPI_README_from_docs.md#1": 16,
                    "alcfws_MPI_README_from_docs.md#2": 8}
    m = ds["mpi_messages"]
    ar = m[(m["job"] == "alcfws_MPI_README_from_docs.md#1") & (m["routine"] == "MPI_Allreduce")]
    # lines 82-90: 9 bins, the largest "236  4719155.9  4.400"
    assert len(ar) == 9 and ar["calls"].sum() == 8161
    assert tuple(ar.iloc[-1][["calls", "avg_bytes", "time_s"]]) == (236, 4719155.9, 4.4)
    tab = ds["mpi_ranks"][ds["mpi_ranks"]["origin"] == "rank0_table"]
    assert len(tab) == 16 + 8
    assert ds.problems.empty


def test_docs_2021_hand_cut_outputs_are_warned_not_misread():
    ds = _load("alcfws_MPI_README_2021_from_docs.md")
    assert ds["mpi_routines"]["job"].nunique() == 3
    p = ds.problems
    assert (p["severity"] == "warning").all()
    cut = p[p["message"].str.contains("lists 4 of 32 ranks")]
    assert cut["line"].tolist() == [118]            # the table stops at line 118
    gpu = p[p["message"].str.contains("no bins for MPI_Gather, MPI_Allgather")]
    assert gpu["line"].tolist() == [163, 225]       # both GPU/CPU excerpts stop after Allreduce
    m = ds["mpi_messages"]
    cpu = m[(m["job"] == "alcfws_MPI_README_2021_from_docs.md#3") &
            (m["routine"] == "MPI_Allreduce")]
    # the doubled '-----' before 'Message size distributions:' (lines 192-193) is harmless
    assert len(cpu) == 13 and cpu["calls"].sum() == 123445


def test_mlprof_readme_profile_inside_details_block():
    ds = _load("mlprof_README_from_docs.md")
    assert ds.sources["variant"].item() == "1 pasted: times-from/MiB"
    assert len(ds["mpi_ranks"][ds["mpi_ranks"]["origin"] == "rank0_table"]) == 8
    assert ds.problems.empty


def test_ibm_readme_elided_with_dots():
    ds = _load("ibm_mpitrace_mpi_examples_README_from_docs.txt")
    r = ds["mpi_routines"]                          # lines 24-25
    assert r[["routine", "calls", "avg_bytes"]].values.tolist() == [
        ["MPI_Comm_rank", 2, 0.0], ["MPI_Bcast", 1, 4.0]]
    prob = ds.problems.iloc[0]
    assert (prob["line"], prob["severity"]) == (27, "warning")
    assert "elided" in prob["message"]
    assert ds.sources["status"].item() == "ok"


def test_seed_with_collapsed_whitespace():
    ds = _load("seed_001_thetagpu_guide_from_docs.txt")
    a = _one(ds["mpi_routines"], routine="MPI_Allreduce")   # line 132 "MPI_Allreduce 24561 ..."
    assert (a["calls"], a["time_s"], a["nranks"]) == (24561, 162.08, 8)
    m = ds["mpi_messages"]
    assert m[m["routine"] == "MPI_Allreduce"]["calls"].sum() == 24561   # lines 160-167
    assert _one(ds["mpi_ranks"], origin="own")["comm_role"] == "maximum"


# -- bins, names, sniffing ----------------------------------------------------------------

@pytest.mark.parametrize(("avg", "expected"), [
    (0.0, (0, 0, 0)), (1.0, (1, 1, 4)), (4.0, (1, 1, 4)), (4.1, (2, 5, 8)), (8.0, (2, 5, 8)),
    (8.5, (3, 9, 16)), (16384.0, (13, 8193, 16384)), (163840.3, (17, 131073, 262144)),
    (67108864.0, (25, 33554433, 67108864)),
])
def test_bin_of(avg, expected):
    assert mpitrace.bin_of(avg) == expected


def test_every_real_row_lies_in_its_bin_and_bins_increase():
    m = dptrace.load(FIX)["mpi_messages"]
    assert len(m) > 300
    assert ((m["avg_bytes"] >= m["bin_lo_bytes"]) & (m["avg_bytes"] <= m["bin_hi_bytes"])).all()
    for _, g in m.groupby(["source", "job", "rank", "routine"], observed=True, dropna=False):
        assert g["bin"].is_monotonic_increasing and g["bin"].is_unique


def test_timestamped_name_and_rank_mismatch(tmp_path):
    text = (KNL32 / "mpi_profile.19013.26").read_text()
    (tmp_path / "mpi_profile.77.0522101530.26").write_text(text)
    (tmp_path / "mpi_profile.77.0522101530.5").write_text(text)   # says rank 26 inside
    ds = dptrace.load(tmp_path)
    assert set(ds["mpi_routines"]["job"]) == {"77.0522101530"}
    p = ds.problems
    assert p["message"].str.contains("file name says rank 5").tolist() == [True]
    assert p["line"].tolist() == [1]


def test_sniff():
    real = Source("x", KNL32 / "mpi_profile.19013.0")
    assert mpitrace_sniff(real, real.head()) >= 0.95
    assert mpitrace_sniff(real, b"0: e2e samples_per_sec: 563.9\n") == 0.0
    assert mpitrace_sniff(real, b"MPI Routine #calls avg. bytes time(sec)\n") >= 0.95


def test_load_and_read_mpitrace_give_the_same_tables():
    a, b = dptrace.load(FIX), dptrace.read_mpitrace(FIX)
    for name in ("mpi_routines", "mpi_messages", "mpi_ranks", "mpi_jobs"):
        x, y = a[name], b[name]
        assert list(x.dtypes) == list(y.dtypes), name
        pd.testing.assert_frame_equal(x.astype(object), y.astype(object), check_dtype=False)
    mpi = a.sources[a.sources["format"] == "mpitrace"]
    # 26 profiles, 4 documents, 1 seed, 4 call-stack profiles and their 4 translations; not
    # PROVENANCE.tsv or the script and program that made the call-stack profiles
    assert len(mpi) == 39
    prov = b.sources[b.sources["source"].str.endswith("PROVENANCE.tsv")]
    assert prov["rows"].tolist() == [0] and prov["status"].tolist() == ["skipped"]


CALLSTACKS = FIX / "ibm_mpitrace_callstack_4rank"


def test_call_stacks_of_a_real_profile_and_its_translation():
    """Real IBM mpitrace output (PROFILE_BY_CALL_STACK=yes, 4 ranks, make_fixture.sh) and its
    translate.py copy; values read by hand from the files."""
    plain = _load("ibm_mpitrace_callstack_4rank/mpi_profile.4242.3")["mpi_call_stacks"]
    assert len(plain) == 6 and plain["function"].isna().all()
    # rank 3 computes longest (dp_allreduce.c:35), so it waits least in the negotiation:
    # "time in MPI routines = 0.000 sec, call stack index = 3" / "MPI_Allreduce  20  0.000"
    row = _one(plain, stack=3)
    assert (row["routine"], row["calls"], row["time_s"]) == ("MPI_Allreduce", 20, 0.0)
    ds = dptrace.load(CALLSTACKS / "mpi_profile.4242.0.translated.txt")
    assert ds.problems.empty, ds.problems
    assert ds.sources["variant"].item() == "times-from/MiB+call-stacks+translated"
    stacks = ds["mpi_call_stacks"]
    # lines 45-62: stack 3, 0.063 s; frames negotiate, main, __libc_start_call_main, call_init
    row = _one(stacks, stack=3)
    assert (row["job"], row["rank"], row["routine"], row["calls"]) == ("4242", 0, "MPI_Allreduce",
                                                                       20)
    assert (row["function"], row["call_site"]) == ("negotiate", "/src/dp_allreduce.c:19")
    assert row["call_path"] == (
        "negotiate (/src/dp_allreduce.c:19) < main (/src/dp_allreduce.c:38) < "
        "__libc_start_call_main (./csu/../sysdeps/x86/libc-start.c:74) < "
        "call_init (./csu/../csu/libc-start.c:128)")
    grads = _one(stacks, stack=4)
    assert (grads["function"], grads["call_site"]) == ("allreduce_gradients",
                                                       "/src/dp_allreduce.c:24")
    # _start's "source = ??:?": the frame keeps its function, without a place
    assert _one(stacks, stack=5)["call_path"].endswith("call_init "
                                                       "(./csu/../csu/libc-start.c:128) < _start")


def test_translated_copies_replace_the_call_stacks_of_their_profiles_in_every_order(tmp_path):
    names = sorted(p.name for p in CALLSTACKS.glob("mpi_profile.*"))
    want = dptrace.load([CALLSTACKS / n for n in names])
    for order in (names, names[::-1]):
        got = dptrace.load([CALLSTACKS / n for n in order])
        assert got.problems.empty
        for table, key in (("mpi_routines", ["source", "routine"]),
                           ("mpi_ranks", ["source", "origin", "rank"]),
                           ("mpi_call_stacks", ["source", "stack", "routine"])):
            a, b = (ds[table].astype(object).sort_values(key).reset_index(drop=True)
                    for ds in (want, got))
            pd.testing.assert_frame_equal(a, b)
    rows = dict(zip(want.sources["source"].map(lambda s: s.rsplit("/", 1)[-1]),
                    want.sources["rows"], strict=True))
    assert rows["mpi_profile.4242.0.translated.txt"] == 6       # its 6 call-stack rows
    assert rows["mpi_profile.4242.0"] == 14                      # 20 rows less those 6
    # a copy with other names, whose profile differs, is a profile of its own
    other = tmp_path / "rank0_stacks.txt"
    other.write_text((CALLSTACKS / "mpi_profile.4242.0.translated.txt").read_text()
                     .replace("0.063 sec, call stack index = 3", "0.064 sec, call stack index = 3"))
    both = dptrace.load([CALLSTACKS / "mpi_profile.4242.0", other])
    assert set(both["mpi_call_stacks"]["source"]) == {str(CALLSTACKS / "mpi_profile.4242.0"),
                                                      str(other)}

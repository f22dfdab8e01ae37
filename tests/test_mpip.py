"""mpiP reports (dptrace.formats.mpip) on real reports, checked against what each report itself
prints (tests/fixtures/mpip, made by make_fixture.sh there: mpiP 3.5.0 on dp_steps.c, 4 ranks;
and the reports pasted in the mpiP user guides, ../shared/realdata/mpip), and on damaged
copies: problems naming file and line, never other numbers."""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace.cli import main
from dptrace.formats.mpip import sniff
from dptrace.registry import detect
from dptrace.sources import Source

HERE = Path(__file__).resolve().parent
FIX = HERE / "fixtures" / "mpip"
FULL = next((FIX / "default").glob("*.mpiP"))
CONCISE = next((FIX / "concise").glob("*.mpiP"))
REAL = HERE.parent.parent / "shared" / "realdata"
needs_real = pytest.mark.skipif(not (REAL / "mpip").is_dir(),
                                reason="shared/realdata is not beside the clone")


def _one(path: Path) -> dptrace.Dataset:
    ds = dptrace.load(path)
    assert ds.sources["format"].tolist() == ["mpip"], ds.sources
    return ds


def _section(text: str, title: str) -> list[list[str]]:
    """The rows of a report section, split into fields (read with a regex, not dptrace)."""
    body = text.split(f"@--- {title}")[1].split("\n@---")[0]
    return [ln.split() for ln in body.splitlines()[3:] if ln.strip() and
            not ln.startswith("---")]


@pytest.fixture(scope="module")
def full() -> dptrace.Dataset:
    return _one(FULL)


def test_mpi_time_per_task_is_the_reports_table(full):
    r = full["mpi_ranks"].set_index("rank")
    assert list(r.index) == [0, 1, 2, 3]
    # by hand, from the report: Task 0 9.11 1.03; Task 2 9.12 1.02
    assert (r.loc[0, "elapsed_s"], r.loc[0, "comm_time_s"]) == (9.11, 1.03)
    assert (r.loc[2, "elapsed_s"], r.loc[2, "comm_time_s"]) == (9.12, 1.02)
    assert set(r["origin"].astype(str)) == {"mpip_report"}
    assert set(r["host"]) == {"vm"} and set(r["nranks"]) == {4}
    rows = _section(FULL.read_text(), "MPI Time (seconds)")
    star = next(x for x in rows if x[0] == "*")
    # the per-task MPI times add up to the '*' row (4.09 s), the app times to 36.5 s (%.3g)
    assert math.isclose(r["comm_time_s"].sum(), float(star[2]), abs_tol=1e-9)
    assert abs(r["elapsed_s"].sum() - float(star[1])) <= 0.05 + 1e-9   # 36.45 vs 36.5
    assert full.problems.empty


def test_routines_per_rank_are_the_callsite_rows_summed(full):
    rt = full["mpi_routines"].set_index(["rank", "routine"])
    # rank 0's Allreduce callsites 1, 2, 4, 5, 6, 8: 200 + 3 + 3 + 1 + 600 + 1 calls;
    # Count x Mean: 200 x 1.32 + 3 x 3.03 + 3 x 1.8 + 1 x 5.42 + 600 x 1.24 + 1 x 2.65 ms
    a0 = rt.loc[(0, "MPI_Allreduce")]
    assert a0["calls"] == 808
    assert math.isclose(a0["time_s"], (264 + 9.09 + 5.4 + 5.42 + 744 + 2.65) / 1000)
    # sent bytes: 1600 + 3.146e6 + 3.146e6 + 8 + 6.291e8 + 8
    assert a0["bytes"] == 1600 + 2 * 3.146e6 + 16 + 6.291e8
    assert math.isclose(a0["avg_bytes"], a0["bytes"] / 808)
    b2 = rt.loc[(2, "MPI_Bcast")]   # Bcast site 11, rank 2: 1 call of 14.1 ms
    assert (b2["calls"], b2["time_s"], b2["bytes"]) == (1, 0.0141, 3.146e6)
    assert pd.isna(rt.loc[(1, "MPI_Barrier")]["bytes"])   # mpiP counts no bytes for it
    assert set(full["mpi_routines"]["region"].astype(str)) == {"init_finalize"}
    # every rank's routine rows against the report's own rows, read here with a regex
    rows = [x for x in _section(FULL.read_text(), "Callsite Time statistics") if x[2] != "*"]
    for rank in range(4):
        mine = [x for x in rows if int(x[2]) == rank]
        for routine in {x[0] for x in mine}:
            got = rt.loc[(rank, f"MPI_{routine}")]
            calls = sum(int(x[3]) for x in mine if x[0] == routine)
            ms = sum(int(x[3]) * float(x[5]) for x in mine if x[0] == routine)
            assert got["calls"] == calls and math.isclose(got["time_s"], ms / 1000)


def test_callsites_keep_every_row_and_where_the_call_is(full):
    cs = full["mpi_callsites"]
    per_rank, every = cs[cs["rank"].notna()], cs[cs["rank"].isna()]
    assert len(per_rank) == 32 == len(every)   # 'Callsite Time statistics ...: 32'
    s6 = per_rank[(per_rank["site"] == 6)].iloc[0]
    assert (s6["rank"], s6["routine"], s6["calls"], s6["call_mean_us"], s6["mpi_pct"]) == \
        (0, "MPI_Allreduce", 600, 1240.0, 71.83)      # Mean 1.24 ms
    assert math.isclose(s6["time_s"], 0.744)
    assert (s6["file"], s6["line"], s6["function"]) == ("dp_steps.c", 64, "step")
    assert s6["call_path"] == "step (dp_steps.c:64) < main (dp_steps.c:111)"
    assert (s6["bytes"], s6["msg_mean_bytes"]) == (6.291e8, 1.049e6)
    s9 = per_rank[(per_rank["site"] == 9)].iloc[0]   # rank 2's frames were not looked up
    assert (s9["file"], s9["function"], pd.isna(s9["line"])) == ("0x7f416bc10328",
                                                                 "[unknown]", True)
    # each callsite's '*' row holds what its rank rows hold
    for site, g in per_rank.groupby("site"):
        star = every[every["site"] == site].iloc[0]
        assert g["calls"].sum() == star["calls"]


def test_callsite_call_times_are_the_reports_ms_times_1000_in_us(full):
    """Max, Mean and Min of every 'Callsite Time statistics' row (printed in ms, read here
    with a regex) are call_max_us, call_mean_us and call_min_us: the printed decimal x 1000,
    to the float nearest it (0.0138 ms is 13.8 us, not 0.0138 * 1000 = 13.799999999999999)."""
    cs = full["mpi_callsites"]
    rows = _section(FULL.read_text(), "Callsite Time statistics")
    assert len(rows) == len(cs) == 64
    for x in rows:
        rank = None if x[2] == "*" else int(x[2])
        got = cs[(cs["site"] == int(x[1])) & (cs["rank"].isna() if rank is None
                                               else cs["rank"] == rank)].iloc[0]
        for col, text in zip(("call_max_us", "call_mean_us", "call_min_us"), x[4:7],
                             strict=True):
            assert got[col] == float(Decimal(text) * 1000), (x, col)


def test_concise_report():
    ds = _one(CONCISE)
    assert ds.sources["variant"].item() == "concise"
    r = ds["mpi_ranks"].set_index("rank")
    # Task Time Statistics: Max 9.091058 1.012447 (App Task 0, MPI Task 0);
    # Min 9.086558 0.963289 (App Task 1, MPI Task 3)
    assert list(r.index) == [0, 1, 3]
    assert (r.loc[0, "elapsed_s"], r.loc[0, "comm_time_s"], r.loc[0, "comm_role"]) == \
        (9.091058, 1.012447, "maximum")
    assert (r.loc[1, "elapsed_s"], pd.isna(r.loc[1, "comm_time_s"])) == (9.086558, True)
    assert (r.loc[3, "comm_time_s"], r.loc[3, "comm_role"]) == (0.963289, "minimum")
    assert set(r["nranks"]) == {4}   # from the file name dp_steps.4.<pid>.1.mpiP
    rt = ds["mpi_routines"].set_index("routine")
    assert rt["rank"].isna().all() and set(rt["nranks"]) == {4}
    # Bcast sites 27, 11, 3, 19: Tasks x Mean ms; each in Aggregate Time with Count 1
    assert math.isclose(rt.loc["MPI_Bcast", "time_s"], (11.32 + 8.756 + 7.248 + 6.174) / 1000)
    assert rt.loc["MPI_Bcast", "calls"] == 4
    assert rt.loc["MPI_Bcast", "bytes"] == 4 * 3.146e6
    # Allreduce sites 5, 8, 13, ... are not among Aggregate Time's top twenty: calls unknown
    assert pd.isna(rt.loc["MPI_Allreduce", "calls"])
    cs = ds["mpi_callsites"]
    assert len(cs) == 32 and cs["rank"].isna().all()
    s22 = cs[cs["site"] == 22].iloc[0]
    assert (s22["tasks"], s22["time_s"], s22["max_rank"]) == (1, 0.729, 1)
    # the run's world size comes from the report
    ds_dir = dptrace.load(FIX / "concise")
    assert ds_dir.runs["world_size"].tolist() == [4]
    # naming 3 of 4 ranks is what a concise report does: no 'ranks missing' finding
    f = dptrace.report(ds_dir).tables["findings.findings"]
    assert "ranks_missing" not in set(f["kind"].astype(str))


def test_truncated_report_is_read_up_to_the_cut(tmp_path):
    text = FULL.read_text()
    cut = text.index("Barrier             15    2")   # inside Callsite Time statistics
    p = tmp_path / FULL.name
    p.write_text(text[:cut])
    ds = dptrace.load(p)
    probs = ds.problems
    nlines = text[:cut].count("\n")
    assert (probs["line"] == nlines).any(), probs   # the report's last line is named
    assert probs["source"].str.endswith(FULL.name).all()
    assert any("End of Report" in m for m in probs["message"])
    # the task times before the cut are all there, unchanged
    assert ds["mpi_ranks"]["comm_time_s"].tolist() == [1.03, 1.01, 1.02, 1.03]
    # Allreduce (whole before the cut) is as in the clean report; Barrier, cut, is left
    # out of mpi_routines but its callsite rows read so far are kept
    clean = _one(FULL)["mpi_routines"]
    got = ds["mpi_routines"]
    assert set(got["routine"].astype(str)) == {"MPI_Allreduce"}
    past = ["run", "source", "bytes", "avg_bytes"]   # the sent statistics: past the cut
    pd.testing.assert_frame_equal(
        got.drop(columns=past).reset_index(drop=True),
        clean[clean["routine"] == "MPI_Allreduce"].drop(columns=past).reset_index(drop=True),
        check_categorical=False)
    assert got["bytes"].isna().all()
    assert 7 in set(ds["mpi_callsites"]["site"])   # Barrier site 7, before the cut


def test_row_cut_mid_line_is_not_read(tmp_path):
    text = FULL.read_text()
    cut = text.index("   2       9.12") + len("   2       9.1")
    p = tmp_path / FULL.name
    p.write_text(text[:cut])
    ds = dptrace.load(p)
    assert ds["mpi_ranks"]["rank"].tolist() == [0, 1]
    line = text[:cut].count("\n") + 1
    assert ((ds.problems["line"] == line) & (ds.problems["severity"] == "error")).any()


def test_torn_row_is_skipped_with_its_line(tmp_path):
    text = FULL.read_text().replace("   1       9.11       1.01    11.13",
                                    "   1       9.11       11.13")
    p = tmp_path / FULL.name
    p.write_text(text)
    ds = dptrace.load(p)
    assert ds["mpi_ranks"]["rank"].tolist() == [0, 2, 3]
    line = text[:text.index("   1       9.11       11.13")].count("\n") + 1
    bad = ds.problems[ds.problems["line"] == line]
    assert len(bad) == 1 and "not a whole mpiP row" in bad["message"].item()
    # and the '*' row no longer adds up: said, with its line
    assert any("not the sum" in m for m in ds.problems["message"])


def test_numbers_that_do_not_fit_are_missing_never_a_crash(tmp_path):
    text = FULL.read_text()
    p = tmp_path / FULL.name
    p.write_text(text.replace("Allreduce            6    0    600     3.44",
                              "Allreduce            6    0    99999999999999999999     3.44")
                 .replace("   3       9.11       1.03", "   99999999999999999999       9.11"
                          "       1.03")
                 .replace("Allreduce           22    3    600     4.31     1.24",
                          "Allreduce           22    3    600     4.31     1e999"))
    ds = dptrace.load(p)
    assert ds.sources["status"].item() == "partial"
    assert ds["mpi_ranks"]["rank"].tolist() == [0, 1, 2]   # task 1e20: not a rank, skipped
    cs = ds["mpi_callsites"].set_index(["rank", "site"])
    assert pd.isna(cs.loc[(0, 6), "calls"]) and pd.isna(cs.loc[(3, 22), "time_s"])
    msgs = " ".join(ds.problems["message"])
    assert "does not fit a 64-bit number" in msgs and "mean_ms 1e999 is not finite" in msgs
    assert ds.problems["line"].notna().all()


def test_empty_file_and_bare_header(tmp_path):
    e = tmp_path / "x.4.1.1.mpiP"
    e.write_text("")
    ds = dptrace.load(e)
    assert len(ds.sources) == 1 and ds["mpi_ranks"].empty
    h = tmp_path / "y.4.1.1.mpiP"
    h.write_text("@ mpiP\n@ Command : ./a.out\n")
    ds = dptrace.load(h)
    assert ds.sources["format"].item() == "mpip" and ds["mpi_routines"].empty


def test_sniffing_keeps_mpip_and_training_logs_apart():
    head = FULL.read_bytes()[:8192]
    assert sniff(Source(str(FULL), FULL), head) >= 0.9
    assert detect(Source(str(FULL), FULL)).name == "mpip"
    log = FIX / "default" / "train.log"
    assert sniff(Source(str(log), log), log.read_bytes()[:8192]) == 0.0
    assert detect(Source(str(log), log)).name == "trainlog"
    # a training log that mentions mpiP is not a report
    assert sniff(Source("a.log", None), b"loading mpiP (MPIP=-k 2)\n@ step 10 loss 1.2\n") == 0
    prof = FIX / "mpitrace" / "mpi_profile.7201.0"
    assert sniff(Source(str(prof), prof), prof.read_bytes()) == 0.0


def test_report_renders_the_communication_section():
    out = FIX / "default"
    ds = dptrace.load(out)
    r = dptrace.report(ds)
    sec = r.section("communication")
    assert sec is not None
    jobs = sec.tables["jobs"]
    assert jobs["ranks_listed"].tolist() == [4] and jobs["complete"].tolist() == [True]
    routines = sec.tables["routines"].set_index("routine")
    assert routines.loc["MPI_Allreduce", "ranks"] == 4
    assert routines.loc["MPI_Allreduce", "calls"] == 4 * 808
    top = r.section("mpi_callsites").tables["callsites"]
    # the report's Aggregate Time: sites 22, 30 and 6 at 747, 744, 743 ms (%.3g of the '*'
    # rows' Count x Mean: 600 x 1.24 = 744 ms each); Bcast 11 (14.1 ms) is 9th
    assert top["site"].tolist()[:3] == [6, 22, 30] and top["time_s"].tolist()[:3] == \
        [0.744, 0.744, 0.744]
    assert top.iloc[0]["where"] == "dp_steps.c:64" and top.iloc[0]["calls"] == 600
    assert top.set_index("site").loc[11, "order"] == 9
    assert math.isclose(top["time_share"].sum() + 0, top["time_s"].sum()
                        / full_time(ds), rel_tol=1e-9)


def full_time(ds: dptrace.Dataset) -> float:
    cs = ds["mpi_callsites"]
    return float(cs[cs["rank"].notna()]["time_s"].sum())


def test_cli_report_terminal_and_json(tmp_path, capsys):
    j = tmp_path / "r.json"
    assert main(["report", str(FIX / "default"), "--json", str(j), "--width", "100"]) == 0
    text = capsys.readouterr().out
    assert "Communication (mpitrace, mpiP)" in text and "MPI_Allreduce" in text
    assert "MPI callsites (mpiP)" in text and "dp_steps.c:64" in text
    data = json.loads(j.read_text())
    assert "communication" in json.dumps(data)


def test_compare_mpip_run_with_mpitrace_run(tmp_path, capsys):
    j = tmp_path / "c.json"
    code = main(["compare", f"mpip={FIX / 'default'}", f"mpitrace={FIX / 'mpitrace'}",
                 "--json", str(j), "--width", "100"])
    assert code in (0, 1)
    assert "MPI_Allreduce" in capsys.readouterr().out
    r = dptrace.compare(dptrace.load(FIX / "default"), dptrace.load(FIX / "mpitrace"),
                        labels=("mpip", "mpitrace"))
    t = r.tables["compare.compare"]
    ar = t[(t["table"] == "communication.routines") & (t["key"] == "MPI_Allreduce")]
    calls = ar[ar["metric"] == "calls_per_rank"].iloc[0]
    assert (calls["base"], calls["candidate"]) == (808, 808)   # both tools count 808 calls
    time = ar[ar["metric"] == "time_s_per_rank"].iloc[0]
    assert time[["base", "candidate"]].notna().all() and 0.5 < time["base"] < 2
    ranks = t[(t["table"] == "communication.ranks") & (t["metric"] == "comm_time_s")]
    assert sorted(ranks["key"]) == ["rank 0", "rank 1", "rank 2", "rank 3"]
    mpitrace_total = [float(re.search(r"total communication time = ([\d.]+)",
                                      p.read_text()).group(1))
                      for p in sorted((FIX / "mpitrace").glob("mpi_profile.*"))]
    got = ranks.set_index("key")["candidate"]
    assert [got[f"rank {i}"] for i in range(4)] == mpitrace_total


@needs_real
def test_whole_report_pasted_in_a_readme():
    """mpiP 3.4.1, 8 tasks, pasted in a course's README (no Count in Aggregate Time)."""
    ds = _one(REAL / "mpip" / "parkerm_hpc-mpip_README_from_docs.md")
    assert ds.problems.empty
    r = ds["mpi_ranks"].set_index("rank")
    assert len(r) == 8 and (r.loc[1, "comm_time_s"], r.loc[6, "comm_time_s"]) == (17.2, 14.0)
    assert math.isclose(r["comm_time_s"].sum(), 118, abs_tol=0.5)   # '*' row: 118
    rt = ds["mpi_routines"].set_index(["rank", "routine"])
    # rank 0's Wait: site 5, 1047618 calls of 0.00656 ms
    assert rt.loc[(0, "MPI_Wait"), "calls"] == 1047618
    assert math.isclose(rt.loc[(0, "MPI_Wait"), "time_s"], 1047618 * 0.00656 / 1000)
    # rank 1's Isend: site 9, 349206 calls, 7.181e+09 bytes sent
    assert rt.loc[(1, "MPI_Isend"), "bytes"] == 7.181e9
    assert dptrace.load(REAL / "mpip" / "parkerm_hpc-mpip_README_from_docs.md").runs[
        "world_size"].tolist() == [8]


@needs_real
def test_old_guide_threshold_report_gives_routines_per_job():
    """mpiP 2.8.2 with -t 10.0: rank rows below 10% MPI are left out, '*' rows are not."""
    ds = dptrace.load(REAL / "mpip" / "llnl_mpiP_UserGuide_old_from_docs.txt")
    r = ds["mpi_ranks"].set_index("rank")
    assert r["comm_time_s"].tolist() == [0.000243, 10, 10, 10]
    assert r.loc[2, "host"] == "mcr89"
    rt = ds["mpi_routines"]
    assert len(rt) == 1 and pd.isna(rt["rank"].item())
    # Barrier sites 1 and 2 ('*'): 4 x 0.137 ms + 4 x 7.5e+03 ms
    assert rt["calls"].item() == 8
    assert math.isclose(rt["time_s"].item(), (4 * 0.137 + 4 * 7.5e3) / 1000)
    assert any("-t threshold" in m for m in ds.problems["message"])


@needs_real
def test_mail_with_two_cut_excerpts():
    """Two 'MPI Time' sections quoted in a mail archive, each cut ('...', or prose)."""
    ds = dptrace.load(REAL / "mpip" / "ompi_users_2013_22860_mpiP_1node_vs_2nodes_from_docs.md")
    r = ds["mpi_ranks"]
    jobs = r.groupby("job", observed=True)["comm_time_s"].apply(list)
    assert len(jobs) == 2
    first, second = jobs.iloc[0], jobs.iloc[1]
    assert first == [661, 627, 700, 665, 702, 703, 740, 763]
    assert second[:2] == [1.06e4, 1.07e4] and len(second) == 9
    assert set(r[r["rank"] == 0]["elapsed_s"]) == {3610.0, 12700.0}
    assert any("'...'" in m for m in ds.problems["message"])


@needs_real
def test_guide_excerpts_give_no_partial_routine_totals():
    """The 3.5.0 guide shows 1 of 211 callsites: its rows are kept, no routine totals."""
    ds = dptrace.load(REAL / "mpip" / "llnl_mpiP_UserGuide_from_docs.md")
    assert ds["mpi_ranks"]["comm_time_s"].tolist() == [0.168, 0.168, 0.228, 0.219]
    assert ds["mpi_routines"].empty
    cs = ds["mpi_callsites"]
    site1 = cs[(cs["site"] == 1) & cs["rank"].notna()]
    assert site1["call_mean_us"].tolist() == [13.8, 13.8, 14.3, 13.0]   # 0.0138 ms, ...
    assert site1["function"].iloc[0] == "hypre_MPI_Allreduce"
    assert any("1 of 211 callsites" in m for m in ds.problems["message"])


@needs_real
def test_findings_read_mpip_ranks():
    """The old guide's example: ranks 1-3 wait 10 s at a Barrier for rank 0 (MPITime 10 vs
    0.000243 s): the straggler rule names rank 0 from the mpiP rows alone."""
    ds = dptrace.load(REAL / "mpip" / "llnl_mpiP_UserGuide_old_from_docs.txt")
    f = dptrace.report(ds).tables["findings.findings"]
    s = f[f["kind"].astype(str) == "compute_straggler"]
    assert len(s) == 1 and "Rank 0 " in s["message"].item()

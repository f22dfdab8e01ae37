"""The compute straggler and the cross-source straggler (issue 15), on real runs.

tests/fixtures/straggler/ holds real 4-rank runs of dp_steps.c under IBM mpitrace
(make_fixture.sh, PROVENANCE.tsv): ``delayed_r2`` (rank 2 sleeps 15 ms more per 40 ms step),
``small_delay_r1`` (rank 1, 3 ms more), four balanced runs. Numbers the tests expect are read
from the profiles' own text here (``total communication time``), not from dptrace's tables.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from horovod_ticks import negotiations

import dptrace
from dptrace import schema
from dptrace.cli import main
from dptrace.findings import Finding, build, frame
from dptrace.formats.mpitrace import findings as mpitrace_findings
from dptrace.formats.trainlog import findings as trainlog_findings

HERE = Path(__file__).resolve().parent
STRAG = HERE / "fixtures" / "straggler"
MPI = HERE / "fixtures" / "mpitrace"
REAL = HERE.parent.parent / "shared" / "realdata" / "mpitrace"
BALANCED = ["balanced", "balanced_2", "balanced_3", "balanced_4"]
STRAGGLER_KINDS = {"compute_straggler", "cross_source_straggler", "negotiation_straggler",
                   "throughput_straggler"}


def _mpi_times(run: Path) -> dict[int, tuple[float, float]]:
    """rank -> (total communication time, total elapsed time), from each profile's text."""
    out = {}
    for f in sorted(run.glob("mpi_profile.*")):
        t = f.read_text()
        rank = int(re.search(r"Data for MPI rank (\d+)", t).group(1))
        out[rank] = (float(re.search(r"total communication time = ([\d.]+)", t).group(1)),
                     float(re.search(r"total elapsed time\s+= ([\d.]+)", t).group(1)))
    return out


def _found(path: Path) -> pd.DataFrame:
    if not path.exists():
        pytest.skip(f"{path} not present")
    return build(dptrace.load(path))


def _of(found: pd.DataFrame, kind: str) -> pd.DataFrame:
    return found[found["kind"] == kind]


# -- the real runs ----------------------------------------------------------------------------

def test_the_fixture_runs_are_what_provenance_says():
    """The delayed rank has the least MPI time, 0.3 s below the next; the balanced runs' MPI
    times are within 0.05 s of each other."""
    times = _mpi_times(STRAG / "delayed_r2")
    assert min(times, key=lambda r: times[r][0]) == 2
    assert sorted(c for c, _ in times.values())[1] - times[2][0] > 0.28
    for run in BALANCED:
        comm = [c for c, _ in _mpi_times(STRAG / run).values()]
        assert len(comm) == 4 and max(comm) - min(comm) < 0.05, run
    prov = (STRAG / "PROVENANCE.tsv").read_text()
    for run in ["delayed_r2", "small_delay_r1", *BALANCED]:
        for f in (STRAG / run).iterdir():
            assert f"{run}/{f.name}\t" in prov


def test_compute_straggler_names_the_delayed_rank():
    found = _found(STRAG / "delayed_r2")
    # the straggler first; then the symptom: 44% of the run in MPI (the others waiting),
    # which names it as the likely cause
    assert found["kind"].tolist() == ["compute_straggler", "comm_share_high"]
    assert found["message"].iloc[1].endswith("Likely cause, listed above: rank 2 "
                                             "(compute_straggler).")
    f = found.iloc[0]
    times = _mpi_times(STRAG / "delayed_r2")
    others = np.median([c for r, (c, _) in times.items() if r != 2])
    gap = others - times[2][0]
    elapsed = max(e for _, e in times.values())
    assert (f["kind"], f["severity"], f["scope"], f["subject"], f["rank"]) == \
        ("compute_straggler", "warning", "rank", "rank 2", 2)
    assert f["value"] == pytest.approx(100 * gap / elapsed, abs=1e-9) and f["threshold"] == 2.0
    assert f"{gap:.3f} s less in MPI" in f["message"]
    assert f"{100 * gap / elapsed:.1f}% of the" in f["message"]
    # the others waited in the 8-byte loss Allreduce, the first collective after compute
    assert "most in MPI_Allreduce of 5-8 bytes" in f["message"]
    # the one row it rests on, which the report links to (the bin is in the message)
    assert f["evidence"] == "communication.ranks job=5001 rank=2"
    # every rank prints the same img/sec: in lockstep the lines cannot show the straggler
    assert "The per-rank throughput lines cannot show it: the 4 ranks' 'img/sec per CPU'" \
        in f["message"]
    assert f["hint"].startswith("Look at compute or data loading on rank 2 (the others wait "
                                "for it in MPI_Allreduce of 5-8 bytes)")


def test_a_small_real_delay_is_found_too():
    """3 ms more per 40 ms step (about the +-2 ms jitter) on rank 1: 3.9% of the run."""
    found = _found(STRAG / "small_delay_r1")
    found = found[found["kind"] != "comm_share_high"]   # 42% in MPI: every run here is over 25%
    assert found["kind"].tolist() == ["compute_straggler"] and found["rank"].tolist() == [1]


@pytest.mark.parametrize("run", BALANCED)
def test_no_straggler_on_balanced_runs(run):
    found = _found(STRAG / run)
    assert not set(found["kind"]) & STRAGGLER_KINDS
    assert found["rank"].isna().all()


#: real jobs without a lone slow rank: the rule must stay silent
REAL_QUIET = ["alcfws_thetagpu_cpu8_mpi_profile.176429.0",     # a continuous spread, 1.4%
              "alcfws_thetagpu_gpu8_mpi_profile.2475362.0",    # 3.6-8.4 s spread: 3.0 MADs
              "mlprof_polaris_run4", "mlprof_polaris2n_horovod", "mlprof_thetagpu_ddp_run1",
              "mlprof_polaris1n_horovod_mpi_profile.393718.0",  # NCCL jobs: MPI at start only
              "mlprof_polaris2n_deepspeed_mpi_profile.406142.0",
              "mlprof_thetagpu_deepspeed_mpi_profile.1830196.0"]


@pytest.mark.parametrize("name", REAL_QUIET)
def test_no_compute_straggler_on_real_jobs_without_one(name):
    assert _of(_found(REAL / name), "compute_straggler").empty


@pytest.mark.parametrize("name,ranks", [
    ("alcfws_theta_knl32", [0]), ("alcfws_theta_knl16_mpi_profile.75877.0", [0]),
    ("alcfws_thetagpu_gpu8_mpi_profile.163698.0", [4, 0])])
def test_compute_straggler_on_real_jobs_with_one(name, ranks):
    found = _of(_found(REAL / name), "compute_straggler")
    assert found["rank"].tolist() == ranks   # the largest gap first


def test_theta_knl32_rank0_others_wait_in_8_byte_allreduces():
    """Issue 15's story on the real Theta job: rank 0 has 22 s less MPI time (7% of 318 s);
    the profiled ranks 26 and 28 spent it in 8-byte Allreduces; the small-message finding
    points to rank 0."""
    found = _found(REAL / "alcfws_theta_knl32")
    f = _of(found, "compute_straggler").iloc[0]
    assert "Rank 0 spent 22.14 s less in MPI than the median of the other 31 ranks" in \
        f["message"]
    assert "most in MPI_Allreduce of 5-8 bytes" in f["message"]
    small = _of(found, "small_message_allreduce").iloc[0]
    assert "waiting for rank 0, a compute straggler" in small["message"]
    # cause before symptom
    assert found["kind"].tolist().index("compute_straggler") < \
        found["kind"].tolist().index("small_message_allreduce")


# -- the report --------------------------------------------------------------------------------

def _findings_text(out: str) -> str:
    """The terminal report's Findings section (up to the next section's title)."""
    return out.split("Findings", 1)[1].split("Inputs (", 1)[0]


def test_report_names_the_delayed_rank_first_and_no_other(capsys):
    run = STRAG / "delayed_r2"
    assert main(["report", str(run), "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = doc["sections"]["findings"]["tables"]["findings"]
    first = rows[0]
    assert (first["kind"], first["rank"]) == ("compute_straggler", 2)
    assert "communication.ranks" in first["evidence"] and "MPI_Allreduce" in first["message"]
    assert {r["rank"] for r in rows} - {None} == {2}
    assert main(["report", str(run), "--width", "120"]) == 0
    text = " ".join(_findings_text(capsys.readouterr().out).split())
    assert text.split("warning ", 1)[1].startswith("Rank 2 spent")
    assert set(re.findall(r"[Rr]ank (\d+)", text)) == {"2"}


def test_report_on_a_balanced_run_has_no_straggler(capsys):
    assert main(["report", str(STRAG / "balanced"), "--json", "-"]) == 0
    rows = json.loads(capsys.readouterr().out)["sections"]["findings"]["tables"]["findings"]
    assert not {r["kind"] for r in rows} & STRAGGLER_KINDS


# -- the rule at its thresholds, on small frames -------------------------------------------------

def _rt(comm: list[float], elapsed: float = 10.0) -> pd.DataFrame:
    return pd.DataFrame({"job": "j", "rank": pd.array(range(len(comm)), dtype="Int64"),
                         "nranks": pd.array([len(comm)] * len(comm), dtype="Int64"),
                         "comm_time_s": comm, "elapsed_s": elapsed})


def _none(name: str) -> pd.DataFrame:
    return schema.TABLES[name].empty()


@pytest.mark.parametrize("low,fires", [(0.79, True), (0.81, False)])
def test_gap_of_2_pct_of_elapsed(low, fires):
    """Others at 1.0 s in a 10 s run: the gap must reach 0.2 s."""
    found = mpitrace_findings.compute_stragglers(_rt([1.0, 1.0, 1.0, low]), _none("mpi_routines"),
                                     _none("mpi_messages"))
    assert bool(found) is fires
    if fires:
        assert found[0].rank == 3 and found[0].threshold == 2.0
        assert found[0].value == pytest.approx(100 * (1.0 - low) / 10.0)
        assert "where needs this rank's profile and another's" in found[0].message


@pytest.mark.parametrize("low,fires", [(0.39, True), (0.41, False)])
def test_gap_of_4_median_absolute_deviations(low, fires):
    """Others at 1.0, 1.2, 1.4 s (median 1.2, deviation 0.2): the gap must reach 0.8 s."""
    found = mpitrace_findings.compute_stragglers(_rt([1.0, 1.2, 1.4, low]), _none("mpi_routines"),
                                     _none("mpi_messages"))
    assert bool(found) is fires


def test_needs_three_ranks():
    assert not mpitrace_findings.compute_stragglers(_rt([1.0, 0.1]), _none("mpi_routines"),
                                        _none("mpi_messages"))
    assert mpitrace_findings.compute_stragglers(_rt([1.0, 1.0, 0.1]), _none("mpi_routines"),
                                    _none("mpi_messages"))


def _routines(rows: dict[int, dict[str, float]]) -> pd.DataFrame:
    out = [{"job": "j", "rank": r, "nranks": 4, "routine": k, "calls": 10, "time_s": v,
            "region": "init_finalize"} for r, d in rows.items() for k, v in d.items()]
    return schema.conform(pd.DataFrame(out), schema.TABLES["mpi_routines"])


@pytest.mark.parametrize("where,fires", [("MPI_Allreduce", True), ("MPI_Recv", False)])
def test_the_others_extra_time_must_be_in_collectives(where, fires):
    """With profiles, a rank fires only if the others' extra time is in collectives (half or
    more); extra time in point-to-point waits is another story."""
    prof = {r: {"MPI_Allreduce": 0.5, "MPI_Recv": 0.5} for r in range(3)}
    prof[3] = {"MPI_Allreduce": 0.5, "MPI_Recv": 0.5}
    prof[3][where] = 0.0
    found = mpitrace_findings.compute_stragglers(_rt([1.0, 1.0, 1.0, 0.5]), _routines(prof),
                                     _none("mpi_messages"))
    assert bool(found) is fires
    if fires:
        assert "most in MPI_Allreduce (0.5 s more than rank 3 there" in found[0].message


# -- one rank named by several sources ------------------------------------------------------------

def _steady_waits(timeline: Path, rank: int) -> tuple[int, int]:
    """(steady-state negotiations with ticks of 2+ ranks, of those where ``rank``'s tick came
    last, 1 ms or more after the first rank's), read with json: a tensor's (pid's) second
    NEGOTIATE_* interval or later, the X events named by rank inside it."""
    compared = waited = 0
    for _, nth, ticks in negotiations(timeline):
        if nth >= 1 and len({r for _, r in ticks}) >= 2:
            compared += 1
            last, first = max(ticks), min(ticks)
            waited += last[1] == rank and last[0] - first[0] >= 1000
    return compared, waited


def test_cross_source_merges_one_rank_of_one_job_size():
    """No real run on this machine has two sources that name one rank (Horovod is not
    installed here, and lockstep throughput lines never single out a rank). So the run is
    staged: the real 4-rank mpitrace job whose rank 3 computes longer, labelled as one run with
    a 4-rank Horovod timeline (synthetic, from tests/fixtures/horovod) whose rank 3 is last in
    every negotiation (1 ms or more after the first in most of the steady state); each
    finding comes from the rules, the merge is what is tested."""
    timeline = HERE / "fixtures" / "horovod" / "synthetic_v0201_packed.json"
    compared, waited = _steady_waits(timeline, 3)
    assert (compared, waited) == (150, 113)          # read from the file above
    ds = dptrace.load({"staged": [MPI / "ibm_mpitrace_callstack_4rank", timeline]})
    found = build(ds)
    assert not set(found["kind"]) & {"compute_straggler", "negotiation_straggler"}
    f = found.iloc[0]
    assert (f["kind"], f["severity"], f["rank"], f["value"]) == \
        ("cross_source_straggler", "critical", 3, 2.0)
    assert f["message"].startswith("Rank 3 is the straggler by 2 sources, the MPI profiles and "
                                   "the Horovod timeline. Rank 3 spent 0.06 s less in MPI")
    assert (f"in {waited} of {compared} steady-state negotiations "
            f"({100 * waited / compared:.1f}%)") in f["message"]
    assert f["evidence"].startswith("communication.ranks job=4242 rank=3; ")
    assert "; horovod.stragglers source=" in f["evidence"]
    small = _of(found, "small_message_allreduce").iloc[0]
    assert "waiting for rank 3" in small["message"]


def test_cross_source_keeps_jobs_of_different_sizes_apart():
    """examples/data is one run of unrelated inputs: the 32-rank Theta job's rank 0 and the
    4-rank Horovod timeline's rank 0 are not one rank."""
    found = _found(HERE.parent / "examples" / "data")
    assert _of(found, "cross_source_straggler").empty
    assert len(_of(found, "compute_straggler")) == 1
    assert len(_of(found, "negotiation_straggler")) == 1


def _f(kind: str, rank: int, world: int | None = 4, origin: str = "") -> Finding:
    return Finding("warning", kind, "rank", f"rank {rank}", f"{kind} of rank {rank}.",
                   f"{kind}.table rank={rank}", rank=rank, world_size=world,
                   origin=origin or f"{kind} file")


@pytest.mark.parametrize("kinds,merged", [
    (("compute_straggler", "throughput_straggler"), True),
    (("compute_straggler", "negotiation_straggler", "throughput_straggler"), True),
    (("compute_straggler",), False),
    (("negotiation_straggler", "negotiation_straggler"), False),   # one source, twice
])
def test_cross_source_needs_two_different_sources(kinds, merged):
    out = trainlog_findings.cross_source_stragglers([_f(k, 1) for k in kinds] + [_f("compute_straggler", 2)])
    got = [f.kind for f in out if f.rank == 1]
    assert (got == ["cross_source_straggler"]) is merged
    if merged:
        m = next(f for f in out if f.rank == 1)
        assert m.value == len(set(kinds)) and m.severity == "critical"
        assert all(f"{k}.table rank=1" in m.evidence for k in kinds)
    assert [f.kind for f in out if f.rank == 2] == ["compute_straggler"]


def test_cross_source_needs_one_job_size():
    out = trainlog_findings.cross_source_stragglers([_f("compute_straggler", 0, 32),
                                         _f("negotiation_straggler", 0, 4)])
    assert [f.kind for f in out] == ["compute_straggler", "negotiation_straggler"]
    out = trainlog_findings.cross_source_stragglers([_f("compute_straggler", 0, None),
                                         _f("negotiation_straggler", 0, None)])
    assert "cross_source_straggler" not in [f.kind for f in out]


def test_causes_come_before_symptoms():
    f = frame([Finding("warning", "small_message_allreduce", "job", "job 1", "M.", "e",
                       value=90.0),
               Finding("warning", "idle_tiles", "tile", "t", "M.", "e", value=99.0),
               Finding("warning", "compute_straggler", "rank", "rank 2", "M.", "e", rank=2,
                       value=0.1),
               Finding("critical", "files_disagree", "job", "job 1", "M.", "e"),
               Finding("critical", "cross_source_straggler", "rank", "rank 2", "M.", "e",
                       rank=2)])
    assert f["kind"].tolist() == ["cross_source_straggler", "files_disagree",
                                  "compute_straggler", "idle_tiles", "small_message_allreduce"]
    assert "world_size" not in f.columns


def test_two_runs_with_one_job_id_are_judged_apart():
    """Run a's ranks at 2.0 s, run b's at 1.0 s but rank 3 at 0.85 s (0.15 s: under 2% of
    10 s). Mixed, rank 3 of run b would sit 1.15 s below the others' median; apart, nothing
    fires."""
    rt = pd.concat([_rt([2.0, 2.0, 2.0, 2.0]).assign(run="a"),
                    _rt([1.0, 1.0, 1.0, 0.85]).assign(run="b")], ignore_index=True)
    assert not mpitrace_findings.compute_stragglers(rt, _none("mpi_routines"), _none("mpi_messages"))
    assert mpitrace_findings.compute_stragglers(rt.drop(columns="run"), _none("mpi_routines"),
                                    _none("mpi_messages"))


def test_cross_source_needs_one_job_or_file_per_source():
    """Two mpitrace jobs in one run (a directory of several runs' profiles) each with a
    straggler rank 1: which of them goes with the timeline's rank 1? None is merged."""
    out = trainlog_findings.cross_source_stragglers([_f("compute_straggler", 1, origin="job 1"),
                                         _f("compute_straggler", 1, origin="job 2"),
                                         _f("negotiation_straggler", 1)])
    assert [f.kind for f in out] == ["compute_straggler", "compute_straggler",
                                     "negotiation_straggler"]


def test_no_lockstep_note_when_the_run_has_several_logs():
    """tests/fixtures/straggler's six jobs labelled as one run: six jobs and six logs, so the
    delayed rank's finding cannot say which log is its job's."""
    ds = dptrace.load({"six": sorted(p for p in STRAG.iterdir() if p.is_dir())})
    assert ds.run_ids == ["six"]
    found = _of(build(ds), "compute_straggler")
    assert found["rank"].tolist() == [2, 1]
    assert not found["message"].str.contains("throughput lines").any()


def test_a_folder_of_jobs_gives_each_its_own_log():
    """tests/fixtures/straggler as one input is one run per job (its job id, its own log):
    each delayed rank's finding speaks of its own job's throughput lines."""
    found = _of(_found(STRAG), "compute_straggler")
    assert found["rank"].tolist() == [2, 1]
    assert found["run"].astype(str).tolist() == ["delayed_r2", "small_delay_r1"]
    assert found["message"].str.contains("The per-rank throughput lines cannot show it: the "
                                         "4 ranks' 'img/sec per CPU'").all()


def test_thresholds_sit_between_the_measured_noise_and_the_delays():
    """noise_runs.tsv (19 real runs: 14 balanced, 5 delayed) is the evidence for the 2% share:
    every balanced run's largest gap is below it and every delayed run's above; its rows of
    the kept runs are what their profiles print."""

    runs = pd.read_csv(STRAG / "noise_runs.tsv", sep="\t")
    assert len(runs) == 19
    balanced = runs[runs["delay"] == "none"]
    delayed = runs[runs["delay"] != "none"]
    assert len(balanced) == 14
    assert balanced["gap_pct_elapsed"].max() < 100 * mpitrace_findings.COMPUTE_GAP_SHARE
    assert delayed["gap_pct_elapsed"].min() > 100 * mpitrace_findings.COMPUTE_GAP_SHARE
    assert delayed["gap_mads"].min() > mpitrace_findings.COMPUTE_GAP_MADS
    assert (delayed["lowest_rank"] == delayed["delay"].str.extract(r"rank (\d)")[0]
            .astype(int)).all()
    for r in runs[~runs["run"].str.startswith("noise_")].itertuples():
        times = _mpi_times(STRAG / r.run)
        assert [r.comm_s_rank0, r.comm_s_rank1, r.comm_s_rank2, r.comm_s_rank3] == \
            [times[k][0] for k in range(4)]

"""Findings rules of issue 15, each on a real input where it fires and where it must not:
``comm_share_high`` (mpitrace), ``throughput_drift`` (training logs), ``unknown_world_size``
(job figures), and the order cause before symptom, with the symptom naming its cause."""

from __future__ import annotations

from pathlib import Path

import _cache
import pandas as pd
import pytest

import dptrace
from dptrace.formats.mpitrace import findings as mpitrace_findings
from dptrace.formats.trainlog import findings as trainlog_findings
from dptrace.formats.trainlog import throughput as thr

FIX = Path(__file__).parent / "fixtures"
REAL = Path(__file__).resolve().parents[2] / "shared" / "realdata"
DRIFT = FIX / "trainlog" / "generated" / "drift"


def _kinds(ds, **kw) -> list[str]:
    return dptrace.findings(ds, **kw)["kind"].astype(str).tolist()


def _only(ds, kind: str, **kw):
    f = dptrace.findings(ds, **kw)
    return f[f["kind"].astype(str) == kind]


# -- comm_share_high ---------------------------------------------------------------------------

def test_comm_share_high_fires_on_theta():
    """Theta KNL, 32 ranks of Horovod on MPI: mpitrace says the ranks spent 79.1% to 87.6%
    of their elapsed time in MPI (mean 272.46 s of up to 317.92 s), nearly all of it in
    MPI_Allreduce."""
    hit = _only(dptrace.load(FIX / "mpitrace" / "alcfws_theta_knl32"), "comm_share_high")
    assert len(hit) == 1
    r = hit.iloc[0]
    assert r["subject"] == "job 19013" and r["severity"] == "warning"
    assert r["value"] == pytest.approx(85.7, abs=0.05) and r["threshold"] == 25.0
    assert "MPI_Allreduce holds 99.7% of the MPI time" in r["message"]
    assert "272.46 s of up to 317.92 s" in r["message"]


@pytest.mark.parametrize("path", [
    "alcfws_thetagpu_cpu8_mpi_profile.176429.0",      # Horovod CPU, 16.6% on average
    "mlprof_polaris2n_deepspeed_mpi_profile.406142.0",  # NCCL does the gradients: ~0%
    "mlprof_thetagpu_ddp_run1",
    "mlprof_polaris_run4",
])
def test_comm_share_high_is_quiet_below_the_threshold(path):
    p = REAL / "mpitrace" / path
    if not p.exists():
        pytest.skip("shared/realdata is not beside the clone")
    ds = dptrace.load(p)
    jobs = dptrace.report(ds).tables["communication.jobs"]
    assert (jobs["comm_share_mean"] < mpitrace_findings.COMM_SHARE).all()
    assert "comm_share_high" not in _kinds(ds)


def test_comm_share_threshold_override():
    ds = dptrace.load(FIX / "mpitrace" / "alcfws_theta_knl32")
    assert "comm_share_high" not in _kinds(ds, thresholds={"comm_share_high": 90})
    assert "comm_share_high" in _kinds(ds, thresholds={"comm_share_high": 85})


def test_the_cause_comes_before_the_symptom_and_is_named():
    """Theta's MPI time is 86% small Allreduces (Horovod's negotiation): that finding comes
    first, and the communication share points to it."""
    f = dptrace.findings(dptrace.load(FIX / "mpitrace" / "alcfws_theta_knl32"))
    kinds = f["kind"].astype(str).tolist()
    assert kinds.index("small_message_allreduce") < kinds.index("comm_share_high")
    msg = f.loc[f["kind"] == "comm_share_high", "message"].iloc[0]
    # the compute straggler (rank 0: the others waited for it) is named first
    assert msg.endswith("Likely cause, listed above: rank 0 (compute_straggler); job 19013 "
                        "(small_message_allreduce).")
    assert kinds.index("compute_straggler") < kinds.index("small_message_allreduce")


def test_a_symptom_names_only_causes_of_its_own_job():
    if not (REAL / "mpitrace").is_dir():
        pytest.skip("shared/realdata is not beside the clone")
    f = dptrace.findings(_cache.load(REAL / "mpitrace"))
    share = f[f["kind"] == "comm_share_high"]
    assert len(share) >= 4
    for r in share.itertuples(index=False):
        named = r.message.split("Likely cause, listed above: ")[1]
        job = r.subject[len("job "):]
        slow = f[(f["kind"] == "compute_straggler")
                 & f["evidence"].str.startswith(f"communication.ranks job={job} rank=")]
        want = [f"{s} (compute_straggler)" for s in slow["subject"]]
        want.append(f"{r.subject} (small_message_allreduce)")
        assert named == "; ".join(want) + ".", r.message


# -- throughput_drift --------------------------------------------------------------------------

def test_drift_fires_on_a_run_that_slowed_down():
    """drift.log (make.sh): the reads of every batch take 1.6x longer after step 100 of 200;
    tqdm's rate goes from about 17-18 it/s to about 11-12 it/s."""
    ds = dptrace.load(DRIFT / "drift.log")
    d = thr.drift(ds["throughput"])
    assert len(d) == 1
    row = d.iloc[0]
    assert row["steady_rows"] >= trainlog_findings.DRIFT_MIN_ROWS
    assert 15 < row["first_median"] < 20 and 10 < row["last_median"] < 13.5
    hit = _only(ds, "throughput_drift")
    assert len(hit) == 1
    r = hit.iloc[0]
    assert r["value"] == pytest.approx(row["drop_pct"]) and r["value"] > 25
    assert r["threshold"] == 10.0 and "(Training)" in r["message"]
    assert "line 2)" in r["message"]       # every update of the bar is on physical line 2


def test_drift_is_quiet_on_a_steady_run():
    ds = dptrace.load(DRIFT / "steady.log")
    row = thr.drift(ds["throughput"]).iloc[0]
    assert abs(row["drop_pct"]) < 5
    assert "throughput_drift" not in _kinds(ds)


@pytest.mark.parametrize("name", ["trainlog", "perrank", "scaling"])
def test_drift_is_quiet_on_every_real_log(name):
    """Real logs drift by -5% to +4% (they speed up or hold): none crosses 10%."""
    if not (REAL / name).is_dir():
        pytest.skip("shared/realdata is not beside the clone")
    ds = _cache.load(REAL / name)
    d = thr.drift(ds["throughput"])
    judged = d[d["steady_rows"] >= trainlog_findings.DRIFT_MIN_ROWS]
    assert len(judged) >= 1
    assert (judged["drop_pct"].dropna() < 100 * trainlog_findings.DRIFT_FRACTION).all()
    assert "throughput_drift" not in _kinds(ds)


# -- unknown_world_size ------------------------------------------------------------------------

def test_unknown_world_size_fires_where_nothing_states_it():
    """torchtitan excerpt: two ranks print tokens/s ('[rank0]:', '[rank1]:'), nothing says
    how many ranks the job had; the Graphcore excerpt prints one process's samples/s."""
    p = FIX / "trainlog"
    names = ["torchtitan_multirank_duplicate_lines_from_issue.md",
             "alcfws_graphcore_resnet50_from_docs.md"]
    if not all((p / n).exists() for n in names):
        p = REAL / "trainlog"
    for n in names:
        hit = _only(dptrace.load(p / n), "unknown_world_size")
        assert len(hit) == 1, n
        assert hit.iloc[0]["severity"] == "info"
        assert "not known" in hit.iloc[0]["message"]


def test_unknown_world_size_is_quiet_where_the_log_states_it():
    gen = FIX / "trainlog" / "generated"
    for case in ("hf_trainer_torchrun2", "horovod_synthetic_benchmark", "ddp_samples_per_rank"):
        ds = dptrace.load(gen / case)
        assert "unknown_world_size" not in _kinds(ds), case


def test_unknown_world_size_skips_steps_per_second():
    """it/s is the same on every rank of a synchronous job: the world size does not change
    it (the SambaNova excerpt's tqdm bar, one printer)."""
    p = FIX / "trainlog" / "ug_sn30_multinode_from_docs.md"
    job = dptrace.report(dptrace.load(p)).tables["throughput.job"]
    assert ((job["metric"] == "iterations_per_s") & job["world_size"].isna()).any()
    assert "unknown_world_size" not in _kinds(dptrace.load(p))


# -- SambaNova: low_exec, load_overhead ----------------------------------------------------------

def test_low_exec_and_load_overhead_fire_on_an_instance_that_is_loading():
    """The SambaNova docs' sntilestat listing: PID 49880's four tiles show %exec 4.7-7.x
    (mean 6.2%) and %pload 11.2%, %aload 1.8% on average."""
    ds = dptrace.load(FIX / "sntilestat" / "aitbdocs_sambanova_Miscellaneous_from_docs.md")
    low = _only(ds, "low_exec")
    assert low["subject"].tolist() == ["PID 49880"]
    assert low["value"].iloc[0] == pytest.approx(6.225) and low["threshold"].iloc[0] == 50
    assert "6.2%" in low["message"].iloc[0]
    load = _only(ds, "load_overhead")
    assert load["subject"].tolist() == ["PID 49880"]
    assert load["value"].iloc[0] == pytest.approx(13.0)
    assert "program load 11.2%, argument load 1.8%" in load["message"].iloc[0]


@pytest.mark.parametrize("name", ["ug_sn30_multinode_from_docs.md", "ug_sn30_single_from_docs.md"])
def test_training_instances_are_not_low_or_loading(name):
    """16 instances at 89.9-92.1% %exec with 0.2-1.3% loading; one at 96.9%."""
    ds = dptrace.load(FIX / "sntilestat" / name)
    kinds = _kinds(ds)
    assert "low_exec" not in kinds and "load_overhead" not in kinds
    inst = dptrace.report(ds).tables["tiles.instances"]
    assert (inst["exec_mean_pct"] > 85).all()


def test_drift_of_every_rank_together_is_one_finding():
    """tests/fixtures/scaling/compare/cand (real, 4 ranks in lockstep, 8 MiB buckets): all
    four ranks' per-CPU figures fall 13.9-14.1% from the first third to the last: one
    finding for the job, not four."""
    fix = Path(__file__).resolve().parent / "fixtures" / "scaling" / "compare" / "cand"
    f = dptrace.findings(dptrace.load(fix))
    drift = f[f["kind"].astype(str) == "throughput_drift"]
    assert len(drift) == 1
    r = drift.iloc[0]
    assert r["subject"] == "4 instances" and r["scope"] == "job"
    assert "on all 4 instances together" in r["message"] and "13.9-14.1%" in r["message"]


def test_drift_of_some_ranks_stays_per_instance():
    """The rule as a pure function: two of three instances drifting are two findings."""

    rows = [{"run": "r", "source": "a.log", "name": "s", "label": None, "metric": "samples_per_s",
             "scope": "instance", "instance": str(i), "steady_rows": 30, "first_median": 100.0,
             "last_median": last, "drop_pct": 100.0 - last, "first_lineno": 1,
             "last_lineno": 90} for i, last in enumerate((80.0, 85.0, 99.0))]
    found = trainlog_findings.throughput_drift(pd.DataFrame(rows))
    assert sorted(f.subject for f in found) == ["instance 0", "instance 1"]
    found = trainlog_findings.throughput_drift(pd.DataFrame(rows[:2]))
    assert [f.subject for f in found] == ["2 instances"]

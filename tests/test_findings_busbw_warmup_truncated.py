"""The last findings rules of issue 15, each on real or really-generated inputs where it fires
and where it must not: ``low_busbw`` (mpitrace message sizes), ``long_warmup`` (training
logs) and ``truncated_input`` for a training log without its trainer's end-of-run summary."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace.formats.mpitrace import communication as comm
from dptrace.formats.mpitrace import findings as mpitrace_findings
from dptrace.formats.trainlog import findings as trainlog_findings
from dptrace.formats.trainlog import job
from dptrace.formats.trainlog import throughput as thr
from dptrace.reports.evidence import first, locate

FIX = Path(__file__).parent / "fixtures"
REAL = Path(__file__).resolve().parents[2] / "shared" / "realdata"
GEN = FIX / "trainlog" / "generated"


def _only(ds, kind: str, **kw) -> pd.DataFrame:
    f = dptrace.findings(ds, **kw)
    return f[f["kind"].astype(str) == kind]


def _real(*parts: str) -> Path:
    p = REAL.joinpath(*parts)
    if not p.exists():
        pytest.skip("shared/realdata is not beside the clone")
    return p


# -- low_busbw -----------------------------------------------------------------------------------

def _large_bins(path: Path) -> pd.DataFrame:
    """The bins the rule judges, computed here from the formula: a collective's bin of
    messages all over 1 MiB with >= 1% of the job's time; busbw = bytes x 2(n-1)/n / time
    (Allreduce), ratio to the job's best bin."""
    bins = comm.message_sizes(dptrace.load(path)["mpi_messages"])
    out = []
    for _, g in bins.groupby(["run", "job"], observed=True):
        share = g["time_s"] / g["time_s"].sum()
        best = g["busbw_bytes_per_s"].max()
        large = g[(g["bin_lo_bytes"] > 2 ** 20) & (share >= 0.01)
                  & g["busbw_bytes_per_s"].notna()]
        out.append(large.assign(ratio=large["busbw_bytes_per_s"] / best))
    return pd.concat(out)


def test_low_busbw_fires_on_the_thetagpu_guide():
    """The ThetaGPU data-parallel guide's profile (8 ranks): 50 MPI_Allreduces of 4-8 MiB
    (8,160,289 bytes on average) took 20.893 s, a busbw of 0.0342 GB/s, against 0.716 GB/s
    for its 16-32 MiB Allreduces."""
    path = FIX / "mpitrace" / "seed_001_thetagpu_guide_from_docs.txt"
    hit = _only(dptrace.load(path), "low_busbw")
    assert len(hit) == 1
    r = hit.iloc[0]
    n = 8
    want = 8160289.2 * 50 * 2 * (n - 1) / n / 20.893 / 0.715789e9    # the formula, by hand
    assert r["value"] == pytest.approx(100 * want, abs=0.1) and r["threshold"] == 50.0
    assert r["severity"] == "warning" and r["scope"] == "job"
    assert r["message"].startswith("MPI_Allreduce of 4,194,305-8,388,608 bytes in job ")
    assert "0.0342 GB/s (50 calls, 20.89 s)" in r["message"]
    assert "MPI_Allreduce of 16,777,217-33,554,432 bytes at 0.716 GB/s" in r["message"]
    assert "1 more large bin below 50% too" in r["message"]   # 32-64 MiB at 0.29
    assert r["evidence"].startswith("message_sizes.bins job=seed_001")
    # the evidence is the bin's row of the report (the HTML links it)
    tables = dptrace.report(dptrace.load(path)).tables
    section, table, row = locate(tables, *first(r), r["run"])
    bin_row = tables[f"{section}.{table}"].iloc[row]
    assert (bin_row["routine"], bin_row["calls"], bin_row["time_s"]) == \
        ("MPI_Allreduce", 50, pytest.approx(20.893))


def test_low_busbw_fires_on_a_run_with_a_late_rank_and_names_the_straggler():
    """tests/fixtures/busbw/late_rank_r3 (make_fixture.sh): 4 ranks allreduce 64 KiB to 16
    MiB; rank 3 comes 20 ms late to each Allreduce over 1 MiB, so the others' time there is
    mostly waiting: the 4 MiB bin's busbw is a sixth of the 1 MiB bin's."""
    path = FIX / "busbw" / "late_rank_r3"
    large = _large_bins(path)
    assert len(large) == 2 and (large["ratio"] < mpitrace_findings.BUSBW_FRACTION).all()
    f = dptrace.findings(dptrace.load(path))
    hit = f[f["kind"] == "low_busbw"]
    assert len(hit) == 1
    r = hit.iloc[0]
    assert r["value"] == pytest.approx(100 * large["ratio"].min())
    assert "MPI_Allreduce of 2,097,153-4,194,304 bytes in job 7301" in r["message"]
    # the late rank is a compute straggler, listed before this symptom, which names it
    kinds = f["kind"].astype(str).tolist()
    assert kinds.index("compute_straggler") < kinds.index("low_busbw")
    assert f.loc[f["kind"] == "compute_straggler", "subject"].tolist() == ["rank 3"]
    assert r["message"].endswith("Likely cause, listed above: rank 3 (compute_straggler).")


@pytest.mark.parametrize("path", [
    FIX / "mpitrace" / "alcfws_theta_knl32",                       # large bins 0.83-1.00
    FIX / "mpitrace" / "alcfws_theta_knl16_mpi_profile.75877.0",   # 0.66-1.00
    FIX / "mpitrace" / "alcfws_thetagpu_cpu8_mpi_profile.176429.0",  # 0.87-1.00
])
def test_low_busbw_is_quiet_where_large_messages_keep_up(path):
    large = _large_bins(path)
    assert len(large) >= 3                        # the rule had bins to judge
    assert (large["ratio"] >= mpitrace_findings.BUSBW_FRACTION).all()
    # the start-up Bcasts of the weights are slower (0.28-0.44 of the best) but hold < 1%
    assert "low_busbw" not in dptrace.findings(dptrace.load(path))["kind"].astype(str).tolist()


def test_low_busbw_threshold_override():
    knl16 = dptrace.load(FIX / "mpitrace" / "alcfws_theta_knl16_mpi_profile.75877.0")
    hit = _only(knl16, "low_busbw", thresholds={"low_busbw": 70})   # its 2-4 MiB bin: 66%
    assert len(hit) == 1 and hit.iloc[0]["threshold"] == 70.0
    assert 60 < hit.iloc[0]["value"] < 70
    seed = dptrace.load(FIX / "mpitrace" / "seed_001_thetagpu_guide_from_docs.txt")
    assert _only(seed, "low_busbw", thresholds={"low_busbw": 4}).empty      # 4.8%


# -- long_warmup -----------------------------------------------------------------------------------

KERAS = FIX / "trainlog" / "andrewor14_tf_keras_rank0_stderr.log"


def test_long_warmup_fires_on_a_run_that_takes_most_of_its_steps_to_speed_up():
    """Keras TimeHistory, 110 steps: 0.09 examples/s between steps 0 and 1 (22 s of graph
    building), then 36 rising to about 9,000 examples/s; half the steady rate (the second
    half's median, 4,741) is first reached at step 65: 64 of the 110 intervals before it."""
    hit = _only(dptrace.load(KERAS), "long_warmup")
    assert len(hit) == 1
    r = hit.iloc[0]
    assert r["subject"] == "instance 0" and r["threshold"] == 25.0
    assert r["value"] == pytest.approx(100 * 64 / 110)
    assert "took 64 figures of 110" in r["message"] and "(it did at step 65)" in r["message"]
    assert "4,741 samples/s" in r["message"]
    assert "the averages drop only its first 11 figures as warm-up" in r["message"]
    assert r["evidence"].endswith("name=examples/second instance=0")


def test_long_warmup_names_what_the_averages_drop():
    hit = _only(dptrace.load(KERAS), "long_warmup", warmup=0.7)
    assert "the averages drop its first 77 figures as warm-up." in hit.iloc[0]["message"]


def test_long_warmup_threshold_override():
    ds = dptrace.load(KERAS)
    assert _only(ds, "long_warmup", thresholds={"long_warmup": 60}).empty
    assert len(_only(ds, "long_warmup", thresholds={"long_warmup": 55})) == 1


@pytest.mark.parametrize("path", [
    GEN / "hf_trainer_1proc" / "train.log",                        # 73 tqdm figures: 0%
    GEN / "lightning_ddp2_rich" / "train_force_terminal.log",      # 312: 0%
    GEN / "lightning_ddp2_tqdm" / "train.log",                     # 336: 0%
    FIX / "trainlog" / "dschat_step1_opt1.3b_gbs128.log",          # 736 DeepSpeed steps: 0%
    FIX / "trainlog" / "megatron_ds_gpt3_125M_randomltd_baseline.log",   # 2.1%
])
def test_long_warmup_is_quiet_on_ordinary_runs(path):
    ds = dptrace.load(path)
    w = thr.warmup_length(ds["throughput"])
    judged = w[w["rows"] >= trainlog_findings.LONG_WARMUP_MIN_ROWS]
    assert len(judged) >= 1
    assert (judged["warmup_step_share"] <= 0.05).all()
    assert _only(ds, "long_warmup").empty


def test_long_warmup_is_quiet_on_tf_benchmarks_whose_first_interval_is_slow():
    """18 ranks of a TF benchmark: the first of 20 intervals builds the graph (about half the
    time by the rates) but it is one interval, 5% of the steps: not a long warm-up."""
    ds = dptrace.load(_real("perrank"))
    w = thr.warmup_length(ds["throughput"])
    assert len(w) == 22 and (w["warmup_step_share"] == 0.05).all()
    assert (w["warmup_time_share"] > 0.5).all()
    assert _only(ds, "long_warmup").empty


# -- truncated_input: a training log without its final summary --------------------------------

def _cut(src: Path, lines: int, tmp: Path) -> Path:
    """The first ``lines`` lines of ``src``, as a killed job leaves its log: cut at a line
    boundary (what a job killed between two prints leaves behind). Lines end at '\\n' only: a
    tqdm bar's '\\r' updates stay on their line."""
    out = tmp / src.name
    out.write_bytes(b"\n".join(src.read_bytes().split(b"\n")[:lines]) + b"\n")
    return out


def test_truncated_hf_trainer_log_fires(tmp_path):
    """hf_trainer_1proc/train.log: HF Trainer's loss dicts on lines 4-9, its train_runtime
    dict on line 10. Cut after line 9, as a job killed before train() returned."""
    src = GEN / "hf_trainer_1proc" / "train.log"
    assert _only(dptrace.load(src), "truncated_input").empty     # the whole log: quiet
    cut = _cut(src, 9, tmp_path)
    hit = _only(dptrace.load(cut), "truncated_input")
    assert len(hit) == 1
    r = hit.iloc[0]
    assert r["subject"] == str(cut) and r["scope"] == "input" and r["severity"] == "warning"
    assert r["message"] == (
        f"The training log {cut} has 6 lines of HF Trainer training (lines 4-9) but not the "
        "{'train_runtime': ...} dict HF Trainer prints when train() returns: the job was "
        "probably killed, or the log cut, before training finished.")
    assert r["evidence"] == f"inputs.sources source={cut}"
    # the evidence is the input's row of the report
    sources = dptrace.report(dptrace.load(cut)).tables["inputs.sources"]
    assert (sources["source"].astype(str) == str(cut)).sum() == 1


def test_truncated_horovod_benchmark_fires(tmp_path):
    """bench_np4.log (Horovod's pytorch_synthetic_benchmark.py, 4 ranks): Iter #0-#2 on lines
    6-8, 'Img/sec per CPU' and 'Total img/sec on 4 CPU(s)' on lines 9-10; cut after line 8."""
    src = GEN / "horovod_synthetic_benchmark" / "bench_np4.log"
    assert _only(dptrace.load(src), "truncated_input").empty
    hit = _only(dptrace.load(_cut(src, 8, tmp_path)), "truncated_input")
    assert len(hit) == 1
    assert "3 lines of Horovod benchmark training (lines 6-8)" in hit.iloc[0]["message"]
    assert "'Total img/sec on N ...'" in hit.iloc[0]["message"]


def test_truncated_second_run_of_a_real_log_fires_for_that_run_only(tmp_path):
    """The bagua-net docs paste two synthetic-benchmark runs (Iter lines 12-21 and 27-36, each
    with its Total line): cut inside the second, only the second run is truncated."""
    src = _real("trainlog", "bagua_net_synthetic_benchmark_from_docs.md")
    cut = _cut(src, 30, tmp_path)
    f = dptrace.findings(dptrace.load(cut))
    hit = f[f["kind"] == "truncated_input"]
    assert len(hit) == 1
    assert str(hit.iloc[0]["run"]).endswith("/2")
    assert "(lines 27-30)" in hit.iloc[0]["message"]


@pytest.mark.parametrize("path", [GEN, FIX / "straggler", FIX / "trainlog"])
def test_truncated_log_is_quiet_on_complete_logs(path):
    """Every generated log ran to its end; the straggler runs' logs carry their Total lines.
    Logs of trainers with no summary of their own (Megatron, DeepSpeed, Keras, tqdm) are not
    judged."""
    ds = dptrace.load(path)
    judged = job.end_summaries(ds["throughput"], ds["train_metrics"])
    assert len(judged) >= 1 and judged["summary"].all()
    f = dptrace.findings(ds)
    assert not f["evidence"].str.startswith("inputs.sources").any()


@pytest.mark.parametrize("name", ["trainlog", "perrank", "scaling"])
def test_truncated_log_is_quiet_on_real_logs(name):
    ds = dptrace.load(_real(name))
    judged = job.end_summaries(ds["throughput"], ds["train_metrics"])
    assert judged["summary"].all()
    assert not dptrace.findings(ds)["evidence"].str.startswith("inputs.sources").any()

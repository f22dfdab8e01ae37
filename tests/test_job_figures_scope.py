"""A line that states its own scope is the job's figure, never multiplied; an estimate says
so; a check between figures of two scopes is not a failure (issue 29, 1.1 and 3.4)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import dptrace
from dptrace.formats.trainlog import findings as trainlog_findings
from dptrace.formats.trainlog import job, rules, terminal

ROOT = Path(__file__).resolve().parent.parent
DDP = ROOT / "tests/fixtures/trainlog/generated/ddp_benchmark_num_gpus/train.log"
EZPZ = (ROOT / "../shared/realdata/trainlog/alcfws_ezpz_hf_trainer_from_docs.md").resolve()


def _read(line: str) -> rules.Rows:
    found = rules.Rows()
    found.seg = (None, 1, 0)
    assert rules.generic_rate(line, found) or any(
        rec(line, found) for _, rec in rules.SPECIFIC)
    return found


@pytest.mark.parametrize("line, scope, world", [
    # the line (a DDP benchmark's rank 0, 8 GPUs)
    ("Throughput: 4751.982 images/s, Batch size: 16, Num of GPUs: 8, Total time: 3.502 s",
     "global", 8),
    # tests/fixtures/trainlog/generated/ddp_samples_per_rank/train.log lines 3, 2 and 32
    ("global 6800.4 samples/sec", "global", None),
    ("step 20: 3406.4 samples/sec/rank", "device", None),
    ("done: 200 steps on 2 ranks; after warm-up 23040 samples in 3.50s = 6584.5 samples/sec",
     "global", 2),
    ("step 30 | 1234.5 samples/sec | world_size=4", "global", 4),
    ("total throughput: 812.0 tokens/s", "global", None),
    ("throughput: 7599.7 samples/sec", "instance", None),  # Graphcore's: no scope stated
])
def test_a_line_that_states_its_scope(line, scope, world):
    found = _read(line)
    assert [r[7] for r in found.tp] == [scope]
    said = [r[5] for r in found.tm if r[4] == "world_size"]
    assert said == ([float(world)] if world else [])


def test_ddp_benchmark_job_figure_is_the_printed_line_not_times_the_world():
    text = DDP.read_text()
    m = re.search(r"Throughput: ([0-9.]+) images/s, Batch size: \d+, Num of GPUs: (\d+)", text)
    assert m
    ds = dptrace.load(str(DDP))
    assert int(ds.runs["world_size"].iloc[0]) == int(m.group(2)) == 2
    table = job.job_figures(ds["throughput"], ds.runs, metrics=ds["train_metrics"])
    row = table[table["metric"].astype(str) == "images_per_s"].iloc[0]
    assert row["how"] == "steady_global" and row["value"] == pytest.approx(float(m.group(1)))
    # the ranks' own lines summed (after warm-up) agree with it: same scope, checked
    assert row["check_agrees"] is True or row["check_agrees"] == True  # noqa: E712
    assert not trainlog_findings.job_check_failed(table)


def test_an_estimate_says_so_in_words():
    if not EZPZ.exists():
        pytest.skip(f"{EZPZ} is not on this machine")
    ds = dptrace.load(str(EZPZ))
    table = job.job_figures(ds["throughput"], ds.runs, metrics=ds["train_metrics"])
    est = table[table["how"] == "rank0_times_world"]
    assert len(est) == 1 and "estimate" in str(est["rule"].iloc[0])
    assert "estimate" in terminal._HOW["rank0_times_world"]
    how = _column(terminal._job_table(table), "how")
    assert "estimate" in how[list(table["how"]).index("rank0_times_world")]


def _column(drawn, header: str) -> list[str]:
    return [str(c) for col in drawn.columns if col.header == header for c in col._cells]


def _log(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_check_against_one_process_figure_is_no_failure(tmp_path):
    # HF Trainer's job figure, and one process's own 'throughput' line (its rank and the
    # world size unknown): another scope, shown beside it, not a failed check
    path = _log(tmp_path, [
        "throughput: 100.0 samples/sec",
        "{'train_runtime': 10.0, 'train_samples_per_second': 800.0, 'epoch': 1.0}"])
    ds = dptrace.load(str(path))
    table = job.job_figures(ds["throughput"], ds.runs, metrics=ds["train_metrics"])
    row = table[table["metric"].astype(str) == "samples_per_s"].iloc[0]
    assert row["how"] == "printed_global" and row["value"] == 800.0
    assert row["check_value"] == 100.0 and row["check_agrees"] is None
    assert "another scope" in row["check_name"]
    assert not trainlog_findings.job_check_failed(table)
    note = " ".join(_column(terminal._job_table(table), "rule / check"))
    assert "DOES NOT AGREE" not in note and "beside it" in note


def test_one_process_figure_is_compared_like_with_like():
    import pandas as pd
    ds = dptrace.load(str(DDP))
    tp = ds["throughput"]
    rank0 = tp[(tp["name"].astype(str) == "images/s")
               & (tp["instance"].astype(str) == "default0")]
    job_rows = tp[tp["name"].astype(str).str.startswith("images/s (")]
    assert len(rank0) == 6 and len(job_rows) == 1
    # without the world size: rank 0's rate is one process's, not compared with the job's
    row = job.job_figures(pd.concat([job_rows, rank0]), None).iloc[0]
    assert row["how"] == "steady_global" and row["check_agrees"] is None
    # with it (2, from 'Num of GPUs: 2'): rank 0's rate x 2, an estimate of the job's
    row = job.job_figures(pd.concat([job_rows, rank0]), ds.runs).iloc[0]
    assert row["check_name"] == "images/s (rank0_times_world)"
    assert row["check_agrees"] in (True, False)

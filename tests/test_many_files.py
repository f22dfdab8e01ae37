"""Thousands of small files (issue 32): small plain training logs are read many at once
(:func:`dptrace.formats.trainlog.read.parse_small`: their rows gathered, each table built,
finished and conformed once), and the Dataset is the one the file-by-file route gives:
the same tables (rows, dtypes, order), sources, problems and runs, on the real logs of
the fixtures and on the classes a batch leaves to that route (holes of NUL bytes, bars
without a description, SambaFlow's unprefixed instances, numbers that do not fit, rank
files, run headers, compressed and BOM inputs, companions)."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace.formats.trainlog import read

FIX = Path(__file__).parent / "fixtures"
BALANCED = FIX / "straggler" / "balanced" / "train.log"
REALDATA = Path("/work/shared/realdata")


def _same(got: dptrace.Dataset, want: dptrace.Dataset) -> None:
    assert sorted(got.tables) == sorted(want.tables)
    for name in want.tables:
        pd.testing.assert_frame_equal(got[name], want[name], obj=name)
    pd.testing.assert_frame_equal(got.sources, want.sources, obj="sources")
    pd.testing.assert_frame_equal(got.problems, want.problems, obj="problems")
    pd.testing.assert_frame_equal(got.runs, want.runs, obj="runs")


def _batched_and_alone(monkeypatch, paths) -> tuple[dptrace.Dataset, dptrace.Dataset, int]:
    """The Dataset with small logs read in batches, the one read file by file (the batch
    route off: no log is small), and how many logs the batches took."""
    taken = []
    rows_of = read._small_rows

    def spy(src):
        got = rows_of(src)
        if got is not None:
            taken.append(src.name)
        return got

    with monkeypatch.context() as m:
        m.setattr(read, "_small_rows", spy)
        batched = dptrace.load(paths, executor="serial")
    with monkeypatch.context() as m:
        m.setattr(read, "SMALL_BYTES", 0)
        alone = dptrace.load(paths, executor="serial")
    return batched, alone, len(taken)


def test_real_training_logs_read_in_batches_equal_file_by_file(monkeypatch) -> None:
    """Every real log of the fixtures (DeepSpeed, Megatron, HF Trainer, tqdm, Keras,
    Horovod, SambaFlow, torchtitan, ...), in one load: the same Dataset both ways."""
    batched, alone, taken = _batched_and_alone(monkeypatch, [str(FIX / "trainlog")])
    assert taken >= 40
    assert len(batched["throughput"]) > 5_000 and len(batched["train_metrics"]) > 5_000
    _same(batched, alone)


@pytest.mark.skipif(not (REALDATA / "trainlog").is_dir(), reason="no shared realdata")
@pytest.mark.parametrize("folder", ["trainlog", "perrank"])
def test_realdata_folders_read_in_batches_equal_file_by_file(monkeypatch, folder) -> None:
    batched, alone, taken = _batched_and_alone(monkeypatch, [str(REALDATA / folder)])
    assert taken > 0
    _same(batched, alone)


def _odd_inputs(root: Path) -> None:
    """Real lines in the classes a batch leaves to the file-by-file route, and the plain
    ones between them, in one folder of loose files and job folders."""
    text = BALANCED.read_bytes()
    for k in range(3):   # plain copies, each its own job
        (root / f"job{k}").mkdir()
        (root / f"job{k}" / "train.log").write_bytes(text)
    half = len(text) // 2
    (root / "hole.log").write_bytes(text[:half] + b"\0" * 64 + text[half:])
    # two benchmark runs in one file: run headers split it into parts
    (root / "two_runs.log").write_bytes(text + text)
    # SambaFlow's e2e lines without a prefix: the k-th is instance k
    (root / "sambaflow.log").write_bytes(b"e2e samples_per_sec: 563.9653143065\n"
                                         b"e2e samples_per_sec: 613.7697389922524\n")
    (root / "sambaflow_prefixed.log").write_bytes(b"0: e2e samples_per_sec: 563.96\n"
                                                  b"1: e2e samples_per_sec: 613.76\n")
    # numbers that do not fit their column
    (root / "inf.log").write_bytes(b"[1,0]<stdout>:Iter #0: 2760.1e3080 img/sec per CPU\n"
                                   b"[1,0]<stdout>:Iter #1: 584.5 img/sec per CPU\n")
    (root / "huge_step.log").write_bytes(
        "Epoch 1:  50%|\u2588\u2588\u2588  | 99999999999999999999/3247 [00:01<00:00, "
        "7.50it/s]\n".encode())
    # the last number cut by the end of the file
    (root / "killed.out").write_bytes(b"0: e2e samples_per_sec: 563.9653143065\n"
                                      b"2: e2e samples_per_sec: 60")
    # per-rank files: the rank from the path, with and without prefixes on the lines
    lines = [ln.split(b":", 1)[1] for ln in text.splitlines(keepends=True)]
    (root / "ranks").mkdir()
    for r in range(2):
        (root / "ranks" / f"rank{r}.log").write_bytes(b"".join(lines))
    (root / "ranks" / "rank2.log").write_bytes(b"".join(lines[:8]) + text[:400])
    # a bar without a description after the datasets library's line
    (root / "bare_bar.log").write_bytes(
        b"Found cached dataset parquet (/home/u/.cache/huggingface/datasets/x)\n"
        b"100%|##########| 2/2 [00:00<00:00, 354.85it/s]\n"
        b"{'loss': 2.1, 'learning_rate': 5e-05, 'epoch': 0.5}\n")
    with open(root / "train.log.gz", "wb") as fh:   # compressed: never in a batch
        fh.write(gzip.compress(text))
    (root / "bom.log").write_bytes(b"\xef\xbb\xbf" + text)
    (root / "empty.log").write_bytes(b"")
    (root / "README").write_bytes(b"nothing to read here\n")
    shutil.copy(FIX / "nccl" / "tflogs_4rank_j8_rank.0_stderr.log", root / "with_nccl.log")


def test_odd_inputs_among_small_logs_equal_file_by_file(monkeypatch, tmp_path) -> None:
    _odd_inputs(tmp_path)
    batched, alone, taken = _batched_and_alone(monkeypatch, [str(tmp_path)])
    assert taken >= 6   # the copies, two_runs, prefixed SambaFlow, rank0/1, killed
    assert (batched.sources["status"] != "failed").all()
    assert batched.runs["run"].nunique() > 10
    _same(batched, alone)
    # the two benchmark runs in one file are two parts (runs) both ways
    tp = batched["throughput"]
    two = tp[tp["source"].astype(str).str.endswith("two_runs.log")]
    assert sorted(two["part"].unique().tolist()) == [0, 1]


def test_many_copies_are_each_their_own_job(monkeypatch, tmp_path) -> None:
    """300 copies of a real 1.3 KB Horovod benchmark log, each its own job folder: every
    copy's rows are the one file's rows (20 img/sec per CPU figures and 8 summary lines of
    four ranks), with its own source and run."""
    text = BALANCED.read_bytes()
    for k in range(300):
        (tmp_path / f"job{k:03d}").mkdir()
        (tmp_path / f"job{k:03d}" / "train.log").write_bytes(text)
    one = dptrace.load(str(BALANCED), executor="serial")
    ds = dptrace.load(str(tmp_path), executor="serial")
    tp = ds["throughput"]
    assert len(tp) == 300 * len(one["throughput"])
    assert len(ds["train_metrics"]) == 300 * len(one["train_metrics"])
    assert tp["run"].nunique() == 300 and len(ds.runs) == 300
    first = tp[tp["run"] == "job000"].drop(columns=["run", "source"]).reset_index(drop=True)
    want = one["throughput"].drop(columns=["run", "source"])
    pd.testing.assert_frame_equal(first, want, check_categorical=False)
    counts = tp.groupby("source", observed=True).size()
    assert (counts == len(one["throughput"])).all() and len(counts) == 300
    assert (ds.sources["status"] == "ok").all()

"""``dptrace watch`` on real logs replayed by a writer process (tests/watch_writer.py) in
pieces of random sizes at a controlled rate, cutting lines and tqdm redraws anywhere:

- every snapshot's job figures (and its tables' row counts: nothing counted twice) equal
  those of ``dptrace.load`` of the bytes the snapshot says it read, copied aside;
- the final snapshot's Dataset equals ``dptrace.load`` of the finished files, table by table,
  and its report equals ``dptrace report``'s;
- per-rank files appearing one after another in a watched folder join the run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace.analyses import Analyses
from dptrace.watch.run import Watch

ROOT = Path(__file__).parent
REALDATA = ROOT.parent.parent / "shared" / "realdata"
WRITER = ROOT / "watch_writer.py"

#: one log of each kind the issue names: HF Trainer, DeepSpeed, Megatron, tqdm-heavy,
#: an NCCL INFO log; per-rank torchrun/mpirun files are in their own test below
LOGS = {
    "hf_trainer": ROOT / "fixtures/trainlog/generated/hf_trainer_1proc/train.log",
    "hf_ds_slurm": REALDATA / "trainlog/bigscience_hf_ds_gpt2_base_n4_slurm-1832555.out",
    "deepspeed": REALDATA / "trainlog/mlprof_deepspeed_thetagpu_16gpu.log",
    "megatron": REALDATA / "trainlog/megatron_ds_gpt3_125M_8gpu.log",
    "tqdm_heavy": REALDATA / "trainlog/dschat_check7b_16gpu_training.log",
    "lightning_tqdm": ROOT / "fixtures/trainlog/generated/lightning_ddp2_tqdm/train.log",
    "nccl_info": REALDATA / "nccl/polaris_resnet50_ddp_2n8gpu_OFI_TIMEOUT_2025-06-26.log",
}

#: the logs whose refreshes take their job figure from the fold (one input, no run header
#: that splits it: docs/watch.md); the others' from every row
FOLDED = {"hf_trainer", "hf_ds_slurm", "deepspeed", "megatron", "tqdm_heavy",
          "lightning_tqdm"}


def writer(pairs: list[tuple[Path, Path]], *, seed: int, rate: float, max_piece: int,
           extra: tuple[str, ...] = ()) -> subprocess.Popen:
    args = [sys.executable, str(WRITER), "--seed", str(seed), "--rate", str(rate),
            "--max-piece", str(max_piece), *extra]
    for src, dst in pairs:
        args += [str(src), str(dst)]
    return subprocess.Popen(args, stdout=subprocess.PIPE, text=True)


def job_figures(ds: dptrace.Dataset) -> list[tuple[str, str, float]]:
    job = Analyses(ds, {"warmup": 0.1})["throughput.job"]
    if job is None or job.empty:
        return []
    return sorted((str(r.metric), str(r.how), float(r.value)) for r in job.itertuples()
                  if pd.notna(r.value))


def instance_rows(ds: dptrace.Dataset, job: list[dict]) -> list[dict]:
    """The per-instance rows a snapshot of ``ds`` shows of the job figures ``job``, made by
    the ordinary context (``throughput.instances`` over every row)."""
    from dptrace.watch import snapshot as snap_mod

    return snap_mod._instance_rows(Analyses(ds, {"warmup": 0.1}), job)


def moved(rows: list[dict], watched: Path, mirror: Path) -> list[dict]:
    """``rows`` with their sources named as in the copy (``mirror``) of ``watched``."""
    return [{**r, "source": None if r.get("source") is None else
             str(r["source"]).replace(str(watched), str(mirror), 1)} for r in rows]


def snap_figures(snap) -> list[tuple[str, str, float]]:
    return sorted((j["metric"], str(j["how"]), float(j["value"])) for j in snap.job
                  if j["value"] is not None)


def prefix_copy(snap, watched: Path, mirror: Path) -> Path:
    """The bytes each file of the snapshot was read to, copied under ``mirror`` with the
    same relative paths (and the same folder name: runs are named after it)."""
    target = mirror / watched.name
    target.mkdir(parents=True, exist_ok=True)
    for f in snap.files:
        rel = Path(f["file"]).relative_to(watched)
        out = target / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(f["file"], "rb") as fh:
            out.write_bytes(fh.read(f["read_bytes"]))
    return target


def rows(ds: dptrace.Dataset) -> dict[str, int]:
    return {k: len(ds[k]) for k in ds.tables if k in ("throughput", "train_metrics",
                                                       "nccl_setup", "nccl_events", "nccl_env")}


def replay_and_check(tmp_path: Path, pairs: list[tuple[Path, Path]], watched: Path, *,
                     seed: int, rate: float, max_piece: int, interval: float = 0.15,
                     max_checks: int = 12, extra: tuple[str, ...] = ()) -> list:
    """Replay, watching ``watched``; each snapshot (up to ``max_checks`` of them) against a
    load of its bytes; the snapshots."""
    proc = writer(pairs, seed=seed, rate=rate, max_piece=max_piece, extra=extra)
    # every interval, whatever a snapshot costs (the CPU budget is benchmarks/bench_watch.py's)
    w = Watch([str(watched)], interval=interval, idle_exit=1.5, cpu_share=1.0, datasets=0)
    snaps, checked = [], 0
    try:
        for k, snap in enumerate(w.snapshots()):
            snaps.append(snap)
            if checked < max_checks and (k % 2 == 0 or snap.final) and snap.files:
                mirror = prefix_copy(snap, watched, tmp_path / f"mirror{k}")
                ds = dptrace.load(str(mirror))
                assert snap_figures(snap) == job_figures(ds), (k, snap.files)
                assert moved(snap.instances, watched, mirror) == instance_rows(
                    ds, moved(snap.job, watched, mirror)), (k, snap.files)
                assert rows(snap.dataset) == rows(ds), (k, snap.files)
                checked += 1
    finally:
        proc.wait(timeout=120)
    assert proc.returncode == 0
    assert snaps[-1].final and checked >= 2
    return snaps


def same_dataset(a: dptrace.Dataset, b: dptrace.Dataset) -> None:
    assert sorted(a.tables) == sorted(b.tables)
    for k in a.tables:
        pd.testing.assert_frame_equal(a[k], b[k], obj=k)
    pd.testing.assert_frame_equal(a.sources, b.sources, obj="sources")
    pd.testing.assert_frame_equal(a.runs, b.runs, obj="runs")


@pytest.mark.parametrize("kind", sorted(LOGS))
def test_replayed_log_snapshots_equal_report_of_bytes_so_far(kind: str, tmp_path: Path) -> None:
    src = LOGS[kind]
    if not src.is_file():
        pytest.skip(f"{src} not here")
    watched = tmp_path / "job"
    watched.mkdir()
    dst = watched / src.name
    size = src.stat().st_size
    # the replay takes about 2.5 s, whatever the log's size
    snaps = replay_and_check(tmp_path, [(src, dst)], watched, seed=len(kind),
                             rate=size / 2.5, max_piece=max(64, size // 40))
    assert len(snaps) >= 3
    if kind in FOLDED:   # (the job figure from the log's fold, not from every row)
        assert sum(s.folded for s in snaps) >= len(snaps) // 2, [s.folded for s in snaps]
    reads = [s.files[0]["read_bytes"] for s in snaps if s.files]
    assert reads == sorted(reads)           # bytes read only grow
    final = dptrace.load(str(watched))
    same_dataset(snaps[-1].dataset, final)
    assert dptrace.report(snaps[-1].dataset).to_json() == dptrace.report(final).to_json()
    assert snaps[-1].files[0]["read_bytes"] == size


PERRANK = REALDATA / "perrank" / "tflogs_mpirun_outfile_4rank_j8"


@pytest.mark.skipif(not PERRANK.is_dir(), reason="no per-rank logs")
def test_per_rank_files_appearing_join_the_run(tmp_path: Path) -> None:
    watched = tmp_path / PERRANK.name
    files = sorted(p for p in PERRANK.rglob("*") if p.is_file())
    pairs = [(p, watched / p.relative_to(PERRANK)) for p in files]
    size = sum(p.stat().st_size for p in files)
    snaps = replay_and_check(tmp_path, pairs, watched, seed=7, rate=size / 3.0,
                             max_piece=3000, extra=("--stagger", "0.3"))
    counts = [len(s.files) for s in snaps]
    assert counts[0] < len(files) and counts[-1] == len(files)   # files joined on the way
    assert any("joined the run" in n for n in snaps[-1].notes)
    final = dptrace.load(str(watched))
    same_dataset(snaps[-1].dataset, final)
    assert dptrace.report(snaps[-1].dataset).to_json() == dptrace.report(final).to_json()
    ranks = {i["instance"] for i in snaps[-1].instances}
    assert {"0", "1", "2", "3"} <= {str(r) for r in ranks}


def test_truncated_and_rotated_files_restart_with_a_note(tmp_path: Path) -> None:
    src = LOGS["megatron"]
    if not src.is_file():
        pytest.skip("no megatron log")
    data = src.read_bytes()
    log = tmp_path / "train.log"
    log.write_bytes(data[:100_000])
    w = Watch([str(log)], interval=0.05, datasets=0)
    w.follower.poll()
    first = w.live.snapshot(w.follower, w.started)
    assert first.files[0]["read_bytes"] <= 100_000
    log.write_bytes(data[:50_000])                       # truncated: shorter
    w.follower.poll()
    assert any("truncated" in n for n in w.follower.notes)
    snap = w.live.snapshot(w.follower, w.started)
    assert rows(snap.dataset) == rows(dptrace.load(str(log)))
    os.replace(_write(tmp_path / "new.log", data), log)   # rotated: a new inode
    w.follower.poll()
    assert any("rotated" in n for n in w.follower.notes)
    final = w.final()
    same_dataset(final.dataset, dptrace.load(str(log)))


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path

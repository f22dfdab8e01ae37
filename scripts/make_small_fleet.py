"""Make a fleet of small runs: job folders copied from this repository's real fixtures (the
smallest real logs of each kind), for the 1,000-run survey test (tests/test_fleet_thousand.py)
and ``benchmarks/bench_survey.py --mix small``.

    python scripts/make_small_fleet.py DEST N

Kinds, in a fixed cycle of 100 folders (:data:`CYCLE`): HF Trainer + DeepSpeed (a Jean-Zay
Slurm log, 55 KB), a DeepSpeed training log with its comms logger (56 KB), PyTorch DDP
(20 KB), Megatron-DeepSpeed (240 KB, the smallest real Megatron log here), torchrun's
per-rank logs (``--log-dir``), NCCL logs of one DDP job on sockets and on libfabric + GDR,
Horovod TF2 (13 KB), and, fewer (their analysis costs 5-10 times a log's), the 4-rank
mpitrace + Horovod benchmark runs of tests/fixtures/straggler and a Horovod timeline with
its MPI profiles (tests/fixtures/horovod_mpi/delayed_r2); two folders in 100 hold two jobs
(a Slurm log and another job's MPI profiles: two runs).

Stragglers are injected on known hosts (nothing else is synthesised): the MPI profiles'
host column gets ``node-<folder>-<rank>`` names of its own per folder, except that in every
copy of straggler/delayed_r2 (rank 2 sleeps 15 ms more per step) rank 2 runs on
:data:`BAD_HOSTS` in turn: each is the straggler of every other such copy, so the survey
must name exactly these as repeat offenders, each with its number of runs
(:func:`make_small_fleet` returns per folder its kind and its injected host).
"""

from __future__ import annotations

import functools
import os
import re
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
#: the hosts the copies of delayed_r2 put their slow rank 2 on, in turn
BAD_HOSTS = ("node-bad-a", "node-bad-b")
#: kind -> the paths (relative to tests/fixtures) copied into each folder of that kind
KINDS: dict[str, tuple[str, ...]] = {
    "hf_deepspeed": ("trainlog/bigscience_hf_ds_gpt2_n16_bs4.out",),
    "deepspeed": ("trainlog/mlprof_deepspeed_comms_logger_polaris.log",),
    "ddp": ("trainlog/mlprof_ddp_thetagpu_16gpu.log",),
    "megatron": ("trainlog/megatron_ds_gpt3_125M_8gpu.log",),
    "torchrun": ("trainlog/generated/hf_trainer_torchrun2/logs/"
                 "68a8a846-a514-47aa-b7b9-2734f7d3cbcf_98a435bg",),
    "nccl_socket": ("compare_setup/polaris_resnet50_ddp_2n8gpu_socket_2025-06-26.log",),
    "nccl_gdr": ("compare_setup/polaris_resnet50_ddp_2n8gpu_ofi_gdr_2025-01-15.log",),
    "horovod_tf2": ("trainlog/alcfws_horovod_tf2_cpu_n8.out",),
    "mpitrace_straggler": ("straggler/delayed_r2",),
    "mpitrace_balanced": ("straggler/balanced",),
    "horovod_timeline": ("horovod_mpi/delayed_r2",),
    "two_jobs": ("trainlog/bigscience_hf_ds_gpt2_base_n4_slurm-1832555.out",
                 "straggler/balanced/mpi_profile.*"),
}
#: how many folders of each kind in every 100 (the cheap logs first)
CYCLE: tuple[tuple[str, int], ...] = (
    ("hf_deepspeed", 19), ("deepspeed", 14), ("ddp", 13), ("megatron", 4), ("torchrun", 14),
    ("nccl_socket", 12), ("nccl_gdr", 12), ("horovod_tf2", 6), ("mpitrace_straggler", 2),
    ("mpitrace_balanced", 1), ("horovod_timeline", 1), ("two_jobs", 2))
_HOST_ROW = re.compile(rb"^(\s*(\d+)\s+)vm(?=\s)", re.M)


def kinds_in_order(n: int) -> list[str]:
    """The kinds of folders 0..n-1: :data:`CYCLE` spread evenly over each 100."""
    cycle = [k for k, count in CYCLE for _ in range(count)]
    assert len(cycle) == 100
    # interleave, so that every batch of a survey holds a mix (not 19 HF logs in a row)
    order = sorted(range(100), key=lambda i: (i * 37) % 100)
    return [cycle[order[i % 100]] for i in range(n)]


def _host(m: re.Match[bytes], index: int, slow: str | None) -> bytes:
    """A host row's new name: ``slow`` for rank 2 when given, else the folder's own."""
    rank = int(m.group(2))
    name = slow if slow and rank == 2 else f"node-{index:05d}-{rank}"
    return m.group(1) + name.encode()


def _copy(src: Path, dest: Path, index: int, bad: str | None) -> str | None:
    """Copy ``src`` (a file or a directory's files) under ``dest``; the MPI profiles' host
    column renamed; gives the host rank 2 of a delayed_r2 copy was put on."""
    files = sorted(p for p in src.rglob("*") if p.is_file()) if src.is_dir() else [src]
    put = None
    for path in files:
        rel = path.relative_to(src) if src.is_dir() else Path(path.name)
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        data = path.read_bytes()
        if path.name.startswith("mpi_profile.") and b"MPI timing summary for all ranks" in data:
            slow = bad if src.name == "delayed_r2" and src.parent.name == "straggler" else None
            data = _HOST_ROW.sub(functools.partial(_host, index=index, slow=slow), data)
            put = slow or put
        target.write_bytes(data)
    return put


def make_small_fleet(dest: str | os.PathLike[str], n: int) -> dict[str, tuple[str, str | None]]:
    """``n`` job folders under ``dest`` (``job-<i>-<kind>``); folder -> (kind, the host a
    straggler was injected on, or None)."""
    root = Path(dest)
    root.mkdir(parents=True, exist_ok=True)
    out: dict[str, tuple[str, str | None]] = {}
    stragglers = 0
    for i, kind in enumerate(kinds_in_order(n)):
        folder = root / f"job-{i:05d}-{kind}"
        bad = None
        if kind == "mpitrace_straggler":
            bad = BAD_HOSTS[stragglers % len(BAD_HOSTS)]
            stragglers += 1
        put = None
        for rel in KINDS[kind]:
            srcs = sorted(FIXTURES.glob(rel)) if "*" in rel else [FIXTURES / rel]
            for src in srcs:
                put = _copy(src, folder, i, bad) or put
        out[str(folder)] = (kind, put)
    return out


if __name__ == "__main__":
    target, count = sys.argv[1], int(sys.argv[2])
    if os.path.exists(target) and os.listdir(target):
        sys.exit(f"{target}: not empty")
    made = make_small_fleet(target, count)
    print(f"{len(made)} job folders in {target}")

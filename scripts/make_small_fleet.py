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

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"


def _make_fleet() -> ModuleType:
    """tests/fixtures/fleet/make_fleet.py (its copying of job folders), imported by path."""
    if "make_fleet" in sys.modules:
        return sys.modules["make_fleet"]
    spec = importlib.util.spec_from_file_location("make_fleet",
                                                  FIXTURES / "fleet" / "make_fleet.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_fleet"] = module
    spec.loader.exec_module(module)
    return module


make_fleet = _make_fleet()
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


def kinds_in_order(n: int) -> list[str]:
    """The kinds of folders 0..n-1: :data:`CYCLE` spread evenly over each 100."""
    cycle = [k for k, count in CYCLE for _ in range(count)]
    assert len(cycle) == 100
    # interleave, so that every batch of a survey holds a mix (not 19 HF logs in a row)
    order = sorted(range(100), key=lambda i: (i * 37) % 100)
    return [cycle[order[i % 100]] for i in range(n)]


def make_small_fleet(dest: str | os.PathLike[str], n: int) -> dict[str, tuple[str, str | None]]:
    """``n`` job folders under ``dest`` (``job-<i>-<kind>``); folder -> (kind, the host a
    straggler was injected on, or None)."""
    stragglers = iter(range(n))

    def bad(kind: str) -> str | None:   # the straggler copies' hosts, in turn
        if kind != "mpitrace_straggler":
            return None
        return BAD_HOSTS[next(stragglers) % len(BAD_HOSTS)]

    return make_fleet.make_folders(dest, kinds_in_order(n), KINDS, bad)


if __name__ == "__main__":
    target, count = sys.argv[1], int(sys.argv[2])
    if os.path.exists(target) and os.listdir(target):
        sys.exit(f"{target}: not empty")
    made = make_small_fleet(target, count)
    print(f"{len(made)} job folders in {target}")

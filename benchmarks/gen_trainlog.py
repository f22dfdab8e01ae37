"""Generate a large ``slurm-*.out`` of a data-parallel job, with throughput lines in real formats.

    python benchmarks/gen_trainlog.py OUT [--size-mb 1000] [--instances 64] [--seed 0]

Every line carries the ``srun --label`` prefix, right-aligned to the width of the largest
rank as srun prints it (``" 3: "``, ``"63: "`` for 64 tasks). Most lines (> 95 %) are noise:
TensorFlow and PyTorch warnings, ``NCCL INFO`` lines, DataLoader tracebacks, ``set -x``
exports, wandb and DeepSpeed chatter. Between them, in timeline order:

* tqdm bars of every rank, several ``\\r``-separated updates per physical line (only the
  first segment carries the prefix; some lines start with ``\\r`` as tqdm writes them),
  ``it/s`` training bars and ``s/it`` evaluation bars, each closed by tqdm's identical redraw;
* rank 0: DeepSpeed ``timer.py`` lines, HF Trainer loss dicts, Horovod ``Iter #`` lines;
* at the end: Horovod summary (rank 0), HF ``train_runtime`` dict and SambaFlow
  ``e2e samples_per_sec`` line per rank.

Next to OUT it writes ``OUT.expected.json``: the lines of each kind and the rows that
``dptrace.read_trainlog`` must find (see ``docs/trainlog.md``). Noise lines come from a pool
of pre-rendered lines, partly re-rendered per chunk so timestamps move on, and are written in
~4 MB joined chunks: 1 GB takes 10-12 s.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import math
import random
import string
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

MB = 1_000_000
#: noise entries (messages of one or more lines) per written chunk
CHUNK_ENTRIES = 32_000
POOL_SIZE = 10_000
FRESH_PER_CHUNK = 1_000
RUN = 4
#: share of physical lines that carry a throughput figure (the rest is noise)
TP_LINE_SHARE = 0.025
START = datetime(2023, 4, 14, 8, 0, 0)
BATCH_PER_RANK = 4
EVAL_STEPS = 16
#: tqdm's partial blocks, empty to 7/8 (tqdm.std.Bar.UTF)
BLOCKS = " " + "".join(chr(c) for c in range(0x258F, 0x2587, -1))
BAR_WIDTH = 10
CR = "\r"

# --- noise ----------------------------------------------------------------------------------

_NCCL = "{host}:{pid}:{tid} [{dev}] NCCL INFO "
_SITE = "/usr/lib/python3.8/site-packages/"
_WARN = "  warnings.warn("
#: (weight, template); multi-line templates get the prefix on every line
NOISE: tuple[tuple[int, str], ...] = (
    (6, "{tf}: I tensorflow/core/platform/cpu_feature_guard.cc:193] This TensorFlow binary is "
        "optimized with oneAPI Deep Neural Network Library (oneDNN) to use the following CPU "
        "instructions in performance-critical operations:  AVX2 AVX512F AVX512_VNNI FMA\n"
        "To enable them in other operations, rebuild TensorFlow with the appropriate compiler "
        "flags."),
    (6, "{tf}: W tensorflow/compiler/xla/stream_executor/platform/default/dso_loader.cc:64] "
        "Could not load dynamic library 'libnvinfer.so.7'; dlerror: libnvinfer.so.7: cannot "
        "open shared object file: No such file or directory; LD_LIBRARY_PATH: "
        "/opt/cray/pe/lib64:/soft/compilers/cudatoolkit/cuda-11.8.0/lib64"),
    (3, "{tf}: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: Cannot "
        "dlopen some TensorRT libraries. If you would like to use Nvidia GPU with TensorRT, "
        "please make sure the missing libraries mentioned above are installed properly."),
    (4, "{tf}: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1613] Created device "
        "/job:localhost/replica:0/task:0/device:GPU:0 with 38249 MB memory:  -> device: {dev}, "
        "name: NVIDIA A100-SXM4-40GB, pci bus id: 0000:{bus}:00.0, compute capability: 8.0"),
    (2, "{tf}: I tensorflow/compiler/xla/service/service.cc:173] XLA service 0x{addr} "
        "initialized for platform CUDA (this does not guarantee that XLA will be used). "
        "Devices:"),
    (2, "{tf}: I tensorflow/compiler/mlir/mlir_graph_optimization_pass.cc:354] MLIR V1 "
        "optimization pass is not enabled"),
    (4, _NCCL + "Bootstrap : Using hsn0:10.201.{a}.{b}<0>"),
    (3, _NCCL + "NET/OFI Selected Provider is cxi (found 4 nics)"),
    (3, _NCCL + "Using network AWS Libfabric"),
    (4, _NCCL + "Setting affinity for GPU {dev} to ffff0000,00000000,ffff0000"),
    (10, _NCCL + "Channel {ch:02d}/32 :    0   1   2   3   4   5   6   7   8   9  10  11  12"
         "  13  14  15"),
    (10, _NCCL + "Trees [0] {nxt}/-1/-1->{rank}->{prv} [1] {nxt}/-1/-1->{rank}->{prv} "
         "[2] -1/-1/-1->{rank}->{prv} [3] -1/-1/-1->{rank}->{prv}"),
    (14, _NCCL + "Channel {ch:02d}/0 : {rank}[{dev}] -> {nxt}[{ndev}] via P2P/IPC/read"),
    (14, _NCCL + "Channel {ch:02d}/0 : {prv}[{pdev}] -> {rank}[{dev}] [receive] via "
         "NET/AWS Libfabric/{nic}/GDRDMA"),
    (3, _NCCL + "Connected all rings"),
    (3, _NCCL + "Connected all trees"),
    (3, _NCCL + "threadThresholds 8/8/64 | 512/8/64 | 512 | 512"),
    (3, _NCCL + "32 coll channels, 32 p2p channels, 32 p2p channels per peer"),
    (3, _NCCL + "comm 0x{addr} rank {rank} nranks {nranks} cudaDev {dev} busId {bus}000 - "
        "Init COMPLETE"),
    (2, _NCCL + "NCCL_NET_GDR_LEVEL set by environment to PHB"),
    (3, _SITE + "torch/distributed/distributed_c10d.py:2387: UserWarning: "
        "torch.distributed._all_gather_base is a private function and will be deprecated. "
        "Please use torch.distributed.all_gather_into_tensor instead.\n" + _WARN),
    (2, _SITE + "torch/utils/data/dataloader.py:560: UserWarning: This DataLoader will create "
        "16 worker processes in total. Our suggested max number of worker in current system is "
        "8, which is smaller than what this DataLoader is going to create. Please be aware that "
        "excessive worker creation might get DataLoader running slow or even freeze, lower the "
        "worker number to avoid potential slowness/freeze if necessary.\n"
        "  warnings.warn(_create_warning_msg("),
    (2, _SITE + "torch/nn/modules/module.py:1501: UserWarning: Using a target size "
        "(torch.Size([{bs}])) that is different to the input size (torch.Size([{bs}, 1])). "
        "This will likely lead to incorrect results due to broadcasting. Please ensure they "
        "have the same size.\n  return forward_call(*args, **kwargs)"),
    (2, _SITE + "transformers/optimization.py:411: FutureWarning: This implementation of AdamW "
        "is deprecated and will be removed in a future version. Use the PyTorch implementation "
        "torch.optim.AdamW instead, or set `no_deprecation_warning=True` to disable this "
        "warning\n" + _WARN),
    # 'site-packages/setuptools' holds 's/s', one of the parser's keywords: a realistic miss
    (2, _SITE + "setuptools/distutils_patch.py:25: UserWarning: Distutils was imported before "
        "Setuptools. This usage is discouraged and may exhibit undesirable behavior or errors. "
        "Please use Setuptools' objects directly or at least import Setuptools first.\n"
        + _WARN),
    (1, _SITE + "torch/distributed/launch.py:181: FutureWarning: The module "
        "torch.distributed.launch is deprecated\nand will be removed in future. Use torchrun.\n"
        "Note that --use-env is set by default in torchrun.\nIf your script expects "
        "`--local-rank` argument to be set, please\nchange it to read from "
        "`os.environ['LOCAL_RANK']` instead. See \n"
        "https://pytorch.org/docs/stable/distributed.html#launch-utility for \n"
        "further instructions\n\n" + _WARN),
    (1, "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x{addr}>\n"
        "Traceback (most recent call last):\n"
        '  File "' + _SITE + 'torch/utils/data/dataloader.py", line 1478, in __del__\n'
        "    self._shutdown_workers()\n"
        '  File "' + _SITE + 'torch/utils/data/dataloader.py", line 1442, in _shutdown_workers\n'
        "    if self._persistent_workers or self._workers_status[worker_id]:\n"
        "AttributeError: '_MultiProcessingDataLoaderIter' object has no attribute "
        "'_workers_status'"),
    (2, "+ export NCCL_DEBUG=INFO\n+ export NCCL_NET_GDR_LEVEL=PHB\n"
        "+ export MASTER_ADDR={host0}\n+ export MASTER_PORT=29500"),
    (2, "++ hostname\n+ export RANK={rank}\n+ export LOCAL_RANK={dev}\n"
        "+ export WORLD_SIZE={nranks}\n+ export OMP_NUM_THREADS=8"),
    (1, "+ cd /lus/grand/projects/datascience/foremans/projects/Megatron-DeepSpeed\n"
        "+ python3 pretrain_gpt.py --deepspeed --deepspeed_config ds_config.json "
        "--micro-batch-size {bs} --log-interval 10 --seed 1234"),
    (1, "wandb: Tracking run with wandb version 0.15.0\n"
        "wandb: Run data is saved locally in "
        "/lus/grand/projects/datascience/foremans/wandb/run-20230414_{hms}-{runid}\n"
        "wandb: Run `wandb offline` to turn off syncing.\nwandb: Syncing run dulcet-sun-{b}"),
    (1, "wandb: \u2b50\ufe0f View project at https://wandb.ai/foremans/dptrace-bench\n"
        "wandb: \U0001f680 View run at https://wandb.ai/foremans/dptrace-bench/runs/{runid}"),
    (2, "wandb: WARNING Step cannot be set when using syncing with tensorboard. Please log your "
        "step values as a metric such as 'global_step'"),
    (3, "[{ds}] [INFO] [logging.py:96:log_dist] [Rank 0] rank={rank} | comm op: all_reduce | "
        "time (ms): {ms} | msg size: {a}.0 MB | algbw (Gbps): {g}  | busbw (Gbps): {g} "),
    (2, "[{ds}] [INFO] [comm.py:652:init_distributed] Initializing TorchBackend in DeepSpeed "
        "with backend nccl"),
    (2, "Using /home/foremans/.cache/torch_extensions/py38_cu117 as PyTorch extensions root...\n"
        "No modifications detected for re-loaded extension module utils, skipping build step..."
        "\nLoading extension module utils...\nTime to load utils op: 0.{ms} seconds"),
    (2, "[W socket.cpp:601] [c10d] The client socket has failed to connect to [{host0}]:29500 "
        "(errno: 99 - Cannot assign requested address)."),
    (2, "[W ProcessGroupNCCL.cpp:1569] Rank {rank} using best-guess GPU {dev} to perform barrier "
        "as devices used by this process are currently unknown. This can potentially cause a "
        "hang if this rank to GPU mapping is incorrect.Specify device_ids in barrier() to force "
        "use of a particular device."),
)
_TEMPLATES = [t for _, t in NOISE]


@dataclass(frozen=True)
class Rank:
    """One srun task: its label prefix and the host/pid fields its noise lines print."""

    rank: int
    prefix: str
    host: str
    pid: int


def make_ranks(n: int) -> list[Rank]:
    """srun --label pads to the width of the largest rank (``"%*d: "``)."""
    width = len(str(n - 1))
    return [Rank(r, f"{r:>{width}}: ", f"x3006c0s{r // 4 % 40}b{r // 160}n0", 41000 + 37 * r)
            for r in range(n)]


class Clock:
    """Simulated job time in seconds since START, formatted as the loggers print it."""

    def __init__(self) -> None:
        self.t = 0.0
        self._second, self._stamp = -1, ""

    def stamp(self) -> str:
        """``2023-04-14 08:27:19``; strftime only when the second changes."""
        s = int(self.t)
        if s != self._second:
            self._second = s
            self._stamp = (START + timedelta(seconds=s)).strftime("%Y-%m-%d %H:%M:%S")
        return self._stamp

    def tf(self, rng: random.Random) -> str:  # 2023-04-14 08:27:19.411234 (TensorFlow)
        return f"{self.stamp()}.{int(rng.random() * 1e6):06d}"

    def ds(self, rng: random.Random) -> str:  # 2023-04-14 08:27:19,411 (Python logging)
        return f"{self.stamp()},{int(rng.random() * 1e3):03d}"


class NoisePool:
    """Pre-rendered noise entries; sampling from it is what makes the generator fast."""

    def __init__(self, rng: random.Random, ranks: list[Rank], clock: Clock) -> None:
        self.rng, self.ranks, self.clock = rng, ranks, clock
        self.entries = [self._fresh() for _ in range(POOL_SIZE)]

    def _fresh(self) -> str:
        """One noise message of a random rank, every line prefixed, ending with a newline."""
        rng = self.rng
        rk = rng.choice(self.ranks)
        i = rng.choices(_INDEX, cum_weights=_CUM_WEIGHTS)[0]
        body = _TEMPLATES[i].format_map({k: _FIELDS[k](rng, rk, self) for k in _NEEDS[i]})
        return "".join(f"{rk.prefix}{line}\n" for line in body.split("\n"))

    def refresh(self) -> None:
        """Re-render part of the pool at the current time."""
        for i in self.rng.sample(range(POOL_SIZE), FRESH_PER_CHUNK):
            self.entries[i] = self._fresh()

    def sample(self, k: int) -> list[str]:
        """k entries: runs of RUN consecutive pool entries from random places (fewer draws)."""
        entries, out = self.entries, []
        for start in self.rng.choices(range(POOL_SIZE - RUN), k=-(-k // RUN)):
            out += entries[start:start + RUN]
        del out[k:]
        return out


_Field = Callable[[random.Random, Rank, NoisePool], object]
_FIELDS: dict[str, _Field] = {
    "tf": lambda rng, rk, p: p.clock.tf(rng),
    "ds": lambda rng, rk, p: p.clock.ds(rng),
    "hms": lambda rng, rk, p: p.clock.stamp()[11:].replace(":", ""),
    "host": lambda rng, rk, p: rk.host,
    "host0": lambda rng, rk, p: p.ranks[0].host,
    "pid": lambda rng, rk, p: rk.pid,
    "tid": lambda rng, rk, p: rk.pid + int(rng.random() * 400),
    "rank": lambda rng, rk, p: rk.rank,
    "nranks": lambda rng, rk, p: len(p.ranks),
    "nxt": lambda rng, rk, p: (rk.rank + 1) % len(p.ranks),
    "prv": lambda rng, rk, p: (rk.rank - 1) % len(p.ranks),
    "dev": lambda rng, rk, p: rk.rank % 4,
    "ndev": lambda rng, rk, p: (rk.rank + 1) % 4,
    "pdev": lambda rng, rk, p: (rk.rank - 1) % 4,
    "bus": lambda rng, rk, p: f"{7 + 64 * (rk.rank % 4):02x}",
    "ch": lambda rng, rk, p: int(rng.random() * 32),
    "nic": lambda rng, rk, p: int(rng.random() * 4),
    "a": lambda rng, rk, p: int(rng.random() * 256),
    "b": lambda rng, rk, p: int(rng.random() * 256),
    "ms": lambda rng, rk, p: 10 + int(rng.random() * 990),
    "g": lambda rng, rk, p: f"{1 + rng.random() * 89:.2f}",
    "addr": lambda rng, rk, p: f"{rng.getrandbits(40):x}",
    "runid": lambda rng, rk, p: f"{rng.getrandbits(40):010x}",
    "bs": lambda rng, rk, p: BATCH_PER_RANK,
}
_NEEDS = [frozenset(f for _, f, _, _ in string.Formatter().parse(t) if f) for t in _TEMPLATES]
_INDEX = range(len(_TEMPLATES))
_CUM_WEIGHTS = list(itertools.accumulate(w for w, _ in NOISE))


# --- throughput lines ------------------------------------------------------------------------


@dataclass
class Counts:
    """What was written; turned into OUT.expected.json."""

    tqdm_lines: int = 0
    tqdm_segments: int = 0
    tqdm_rate_segments: int = 0
    tqdm_close_redraws: int = 0
    deepspeed_lines: int = 0
    hf_loss_dicts: int = 0
    horovod_iter_lines: int = 0
    horovod_summary_lines: int = 0
    hf_final_dicts: int = 0
    sambaflow_lines: int = 0

    def throughput_lines(self) -> int:
        return (self.tqdm_lines + self.deepspeed_lines + self.hf_loss_dicts
                + self.horovod_iter_lines + self.horovod_summary_lines + self.hf_final_dicts
                + self.sambaflow_lines)


@functools.lru_cache(maxsize=1 << 16)
def fmt_interval(seconds: int) -> str:
    """tqdm.format_interval: ``01:03`` or ``1:01:03``."""
    m, s = divmod(seconds, 60)
    h, m = divmod(m, 60)
    return f"{h:d}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


@functools.lru_cache(maxsize=1 << 14)
def bar_head(desc: str | None, n: int, total: int) -> str:
    """``Training:  45%|████▌     | 450/1000 [`` (shared by every rank at the same step)."""
    frac = n / total
    full, part = divmod(int(frac * BAR_WIDTH * 8), 8)
    bar = "\u2588" * full
    if full < BAR_WIDTH:
        bar += BLOCKS[part] + " " * (BAR_WIDTH - full - 1)
    head = f"{desc}: " if desc else ""
    return f"{head}{frac * 100:3.0f}%|{bar}| {n}/{total} ["


def bar_update(desc: str | None, n: int, total: int, elapsed: float, rate: float | None) -> str:
    """One tqdm status string, as ``tqdm.format_meter`` renders it without a terminal."""
    head = bar_head(desc, n, total) + fmt_interval(int(elapsed))
    if rate is None:
        return head + "<?, ?it/s]"
    left = fmt_interval(int((total - n) / rate))
    if rate < 1:
        return f"{head}<{left}, {1 / rate:5.2f}s/it]"
    return f"{head}<{left}, {rate:5.2f}it/s]"


@dataclass
class Instance:
    """One rank's training progress and speed."""

    rank: Rank
    it_per_s: float
    eval_s_per_it: float
    epoch: int = 0
    n: int = 0


class Job:
    """The training timeline: ticks of a few steps each, every rank printing its bar."""

    def __init__(self, rng: random.Random, ranks: list[Rank], clock: Clock, steps_per_epoch: int,
                 est_steps: int) -> None:
        self.rng, self.clock, self.counts = rng, clock, Counts()
        self.steps_per_epoch, self.est_steps = steps_per_epoch, max(est_steps, 1)
        slow = rng.randrange(len(ranks))  # one straggler, for the report to find
        self.inst = [Instance(rk, rng.uniform(6.9, 7.3) * (0.8 if rk.rank == slow else 1.0),
                              rng.uniform(1.9, 2.2)) for rk in ranks]
        self.gstep = 0
        self.ds_avg = 0.0

    def tick(self) -> list[str]:
        """A few training steps: every rank's bar line, rank 0's logger lines, epoch ends."""
        rng, out = self.rng, []
        steps = rng.randint(3, 6)
        order = list(self.inst)
        rng.shuffle(order)
        for inst in order:
            first = inst.n
            out.append(self._train_line(inst, steps))
            if inst.rank.rank == 0:
                out.extend(self._rank0_lines(inst, first))
            if inst.n == self.steps_per_epoch:
                out.append(self._eval_line(inst))
                inst.epoch, inst.n = inst.epoch + 1, 0
        self.clock.t += steps / 7.0
        return out

    def _physical(self, inst: Instance, segments: list[str]) -> str:
        """One physical line of updates: srun labels only its start; tqdm writes '\\r' before
        each update, so some lines start with one."""
        c = self.counts
        c.tqdm_lines += 1
        c.tqdm_segments += len(segments)
        lead = CR if self.rng.random() < 0.3 else ""
        return f"{inst.rank.prefix}{lead}{CR.join(segments)}\n"

    def _train_line(self, inst: Instance, steps: int) -> str:
        total, rng, segs = self.steps_per_epoch, self.rng, []
        if inst.n == 0:
            segs.append(bar_update("Training", 0, total, 0.0, None))
        for n in range(inst.n + 1, min(total, inst.n + steps) + 1):
            rate = inst.it_per_s * rng.uniform(0.97, 1.03)
            segs.append(bar_update("Training", n, total, n / inst.it_per_s, rate))
            self.counts.tqdm_rate_segments += 1
            inst.n = n
        if inst.n == total:  # close(): tqdm redraws the final state, identical
            segs.append(segs[-1])
            self.counts.tqdm_rate_segments += 1
            self.counts.tqdm_close_redraws += 1
        return self._physical(inst, segs)

    def _eval_line(self, inst: Instance) -> str:
        """A whole evaluation bar (no description, s/it), as bigscience's slurm logs show it."""
        segs = [bar_update(None, 0, EVAL_STEPS, 0.0, None)]
        for n in range(1, EVAL_STEPS + 1):
            spi = inst.eval_s_per_it * self.rng.uniform(0.95, 1.05)
            segs.append(bar_update(None, n, EVAL_STEPS, n * inst.eval_s_per_it, 1 / spi))
        segs.append(segs[-1])
        self.counts.tqdm_rate_segments += EVAL_STEPS + 1
        self.counts.tqdm_close_redraws += 1
        return self._physical(inst, segs)

    def _rank0_lines(self, inst: Instance, first: int) -> list[str]:
        out = []
        for n in range(first + 1, inst.n + 1):
            g = inst.epoch * self.steps_per_epoch + n
            self.gstep = g
            if g % 10 == 0:
                out.append(inst.rank.prefix + self._deepspeed(inst.epoch, g))
                out.append(f"{inst.rank.prefix}Iter #{g // 10 - 1}: "
                           f"{self.rng.gauss(240.0, 6.0):.1f} img/sec per GPU\n")
                self.counts.horovod_iter_lines += 1
            if g % 50 == 0:
                out.append(inst.rank.prefix + self._hf_loss(g))
        return out

    def _deepspeed(self, epoch: int, g: int) -> str:
        cur = len(self.inst) * BATCH_PER_RANK * 7.0 * self.rng.uniform(0.95, 1.03)
        k = g // 10
        self.ds_avg = cur if k == 1 else self.ds_avg + (cur - self.ds_avg) / k
        self.counts.deepspeed_lines += 1
        return (f"[{self.clock.ds(self.rng)}] [INFO] [timer.py:199:stop] "
                f"epoch={epoch}/micro_step={g}/global_step={g}, "
                f"RunningAvgSamplesPerSec={self.ds_avg!r}, CurrSamplesPerSec={cur!r}, "
                "MemAllocated=3.96GB, MaxMemAllocated=11.65GB\n")

    def _hf_loss(self, g: int) -> str:
        loss = round(2.0 + 3.0 * math.exp(-g / 3000) + self.rng.gauss(0.0, 0.05), 4)
        lr = 5e-05 * max(1e-3, 1.0 - g / (1.2 * self.est_steps))
        self.counts.hf_loss_dicts += 1
        return (f"{{'loss': {loss!r}, 'learning_rate': {lr!r}, "
                f"'epoch': {round(g / self.steps_per_epoch, 2)!r}}}\n")

    def finish(self) -> list[str]:
        """Summaries at the end: Horovod (rank 0), then HF and SambaFlow lines per rank."""
        rng, c, out = self.rng, self.counts, []
        steps = max(self.gstep, 1)
        runtime = max(self.clock.t, 1.0)
        p0 = self.inst[0].rank.prefix
        out.append(f"{p0}Img/sec per GPU: {rng.gauss(240.0, 2.0):.1f} +-{rng.uniform(2, 6):.1f}\n")
        out.append(f"{p0}Total img/sec on {len(self.inst)} GPU(s): "
                   f"{240.0 * len(self.inst):.1f} +-{rng.uniform(100, 300):.1f}\n")
        c.horovod_summary_lines += 2
        order = list(self.inst)
        rng.shuffle(order)
        epoch = round(steps / self.steps_per_epoch, 2)
        for inst in order:
            rt = runtime * rng.uniform(0.999, 1.001)
            out.append(f"{inst.rank.prefix}{{'train_runtime': {round(rt, 4)!r}, "
                       f"'train_samples_per_second': "
                       f"{round(steps * BATCH_PER_RANK * len(self.inst) / rt, 3)!r}, "
                       f"'train_steps_per_second': {round(steps / rt, 3)!r}, "
                       f"'epoch': {float(epoch)!r}}}\n")
        c.hf_final_dicts += len(order)
        rng.shuffle(order)
        for inst in order:
            t = steps / inst.it_per_s * rng.uniform(0.99, 1.01)
            out.append(f"{inst.rank.prefix}inner train loop time : {t!r} for {inst.epoch + 1} "
                       f"epochs, number of global steps: {steps}, e2e samples_per_sec: "
                       f"{steps * BATCH_PER_RANK / t:.10f}\n")
        c.sambaflow_lines += len(order)
        return out


# --- writing ---------------------------------------------------------------------------------


def splice(rng: random.Random, noise: list[str], events: list[str]) -> str:
    """Scatter the events, in order, between the noise lines; join into one string."""
    for pos, ev in zip(sorted(rng.choices(range(len(noise)), k=len(events))), events,
                       strict=True):
        noise[pos] += ev
    return "".join(noise)


def chunk(pool: NoisePool, job: Job, k: int, last: bool) -> tuple[bytes, list[str]]:
    """k noise entries with the next ticks' throughput lines among them (and the end)."""
    pool.refresh()
    noise = pool.sample(k)
    events: list[str] = []
    want = k * TP_LINE_SHARE / (1 - TP_LINE_SHARE)
    while len(events) < want:
        events.extend(job.tick())
    if last:
        events.extend(job.finish())
    return splice(pool.rng, noise, events).encode(), events


def header(ranks: list[Rank]) -> str:
    """Each rank's ``set -x`` preamble, interleaved line by line."""
    return "".join(f"{rk.prefix}{fmt.format(h0=ranks[0].host, r=rk.rank, n=len(ranks))}\n"
                   for fmt in ("+ export NCCL_DEBUG=INFO", "+ export MASTER_ADDR={h0}",
                               "+ export MASTER_PORT=29500", "+ export RANK={r}",
                               "+ export WORLD_SIZE={n}", "+ export OMP_NUM_THREADS=8")
                   for rk in ranks)


def estimate_steps(size: int, instances: int, line_bytes: float) -> int:
    tp_lines = size / line_bytes * TP_LINE_SHARE
    return int(tp_lines / max(instances, 1) * 4.5)


def generate(out: Path, size_mb: float, instances: int = 64, seed: int = 0) -> dict:
    """Write the log and its ``.expected.json``; return the expectations."""
    rng, clock = random.Random(seed), Clock()
    ranks = make_ranks(instances)
    pool = NoisePool(rng, ranks, clock)
    target = int(size_mb * MB)
    entry_bytes = sum(len(e.encode()) for e in pool.entries) / POOL_SIZE
    line_bytes = entry_bytes * POOL_SIZE / sum(e.count("\n") for e in pool.entries)
    est_steps = estimate_steps(target, instances, line_bytes * 1.1)
    job = Job(rng, ranks, clock, min(1000, max(20, est_steps // 3)), est_steps)
    data, last = header(ranks).encode(), False
    written = lines = 0
    noise_lines = data.count(b"\n")
    per_entry = entry_bytes * 1.06  # chunk bytes per noise entry, events included
    with open(out, "wb") as fh:
        while True:
            fh.write(data)
            written += len(data)
            lines += data.count(b"\n")
            if last:
                break
            need = (target - written) / per_entry
            last = need <= CHUNK_ENTRIES
            k = max(1, min(CHUNK_ENTRIES, round(need)))
            data, events = chunk(pool, job, k, last)
            noise_lines += data.count(b"\n") - sum(ev.count("\n") for ev in events)
            per_entry = len(data) / k
    expected = expectations(job.counts, size_mb, instances, seed, written, lines, noise_lines)
    expected_path(out).write_text(json.dumps(expected, indent=2) + "\n")
    return expected


def expected_path(out: Path) -> Path:
    return out.with_name(out.name + ".expected.json")


def expectations(c: Counts, size_mb: float, instances: int, seed: int, size: int, lines: int,
                 noise_lines: int) -> dict:
    """Rows dptrace must find, by table and pattern (rules in docs/trainlog.md)."""
    tqdm_rows = c.tqdm_rate_segments - c.tqdm_close_redraws
    tp = {"tqdm": tqdm_rows, "deepspeed": 2 * c.deepspeed_lines,
          "horovod_benchmark": c.horovod_iter_lines + c.horovod_summary_lines,
          "hf_trainer": 2 * c.hf_final_dicts, "sambaflow": c.sambaflow_lines}
    # loss dicts: loss, learning_rate; final dict: train_runtime_s; SambaFlow: loop time,
    # epochs, global steps; 'Total img/sec on N GPU(s)': devices
    tm = {"hf_trainer": 2 * c.hf_loss_dicts + c.hf_final_dicts, "sambaflow": 3 * c.sambaflow_lines,
          "horovod_benchmark": 1 if c.horovod_summary_lines else 0}
    return {
        "generator": "benchmarks/gen_trainlog.py",
        "params": {"size_mb": size_mb, "instances": instances, "seed": seed},
        "bytes": size, "lines": lines, "noise_lines": noise_lines,
        "throughput_lines": c.throughput_lines(),
        "noise_share": noise_lines / lines if lines else 0.0,
        "counts": vars(c),
        "throughput_rows": tp, "throughput_rows_total": sum(tp.values()),
        "train_metrics_rows": tm, "train_metrics_rows_total": sum(tm.values()),
        "instances": instances,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--size-mb", type=float, default=1000.0)
    ap.add_argument("--instances", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    t = time.perf_counter()
    exp = generate(a.out, a.size_mb, a.instances, a.seed)
    dt = time.perf_counter() - t
    print(f"wrote {a.out}: {exp['bytes'] / MB:.1f} MB, {exp['lines']:,} lines "
          f"({exp['noise_share']:.1%} noise), {exp['throughput_rows_total']:,} throughput rows "
          f"expected, in {dt:.1f} s ({exp['bytes'] / MB / dt:.0f} MB/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Line recognisers for training logs: one function per family of throughput lines.

Each recogniser takes the text of one output segment (a physical line, or one
``\\r``-separated tqdm update) with the launcher prefix removed, and appends what it finds
to a :class:`Rows` collector. It returns True when it recognised the line, which stops
the generic fallbacks from reading the same numbers twice.

Real lines each recogniser was written against (from ``tests/fixtures/trainlog``)::

    inner train loop time : 36.314290046691895 for 10 epochs, number of global steps: 10, e2e samples_per_sec: 563.9653143065
    {'e2e_train_time': 2179.2292835712433, 'training_sequences_per_second': 192467.31088004305, 'final_loss': 4.781678199768066}
    {'train_runtime': 836.394, 'train_samples_per_second': 1.196, 'train_steps_per_second': 0.005, 'epoch': 1.0}
      train_samples_per_second =     70.544
    [timer.py:199:stop] epoch=0/micro_step=10/global_step=10, RunningAvgSamplesPerSec=173.44, CurrSamplesPerSec=171.97, MemAllocated=3.96GB
    samples/second:                                               853.56
     iteration       10/    1000 | consumed samples:           40 | elapsed time per iteration (ms): 19932.4 | ... | global batch size:     4 |
    Iter #3: 2794.5 img/sec GPU
    Img/sec per GPU: 85.8 +-3.8
    Total img/sec on 32 GPU(s): 2744.9 +-122.3
    TimeHistory: 0.06 seconds, 36.16 examples/second between steps 1 and 2
     12%|█▎        | 2/16 [02:00<13:54, 59.61s/it]
    [INFO] throughput: 7599.7 samples/sec
    Epoch: 0 	Loss: 55.910 	Time/epoch: 5.76
    Train Epoch: 1 [640/6250 (10%)]	Loss: 0.035994
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ... import schema
from ...registry import lazy_pattern

#: a number: '12', '12.', '12.5', '.5', '1e-3'. The digits after the point only follow a point
#: (not ``\d+\.?\d*``, which splits a run of digits in every way there is: a 1,000-digit
#: number on a line with '/s' took 27 s to search, 5,000 digits hours; issue 30's fuzzer)
NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_F = float


def _int(x: float) -> int | float:
    """A step given as a float (``'step': 6.0``): its int, or the float itself when it is not
    finite (``nan``, ``1e999``), which the parser then makes missing (beyond Int64: with a
    problem; see ``trainlog._fit_numbers``) instead of failing on the file."""
    return int(x) if math.isfinite(x) else x


#: launcher prefixes: ``srun --label`` (``3: ``), ``mpirun --tag-output`` (``[1,3]<stdout>:``),
#: PyTorch's ``[rank3]:`` (torchtitan; also ``[rank3] ``: a global rank, like srun's), torchrun
#: ``--tee`` (``[default3]:``: a local rank, kept as the role) and a bare ``[3] `` rank tag
PREFIX = lazy_pattern(
    r"^\s*(?:(?P<srun>\d{1,6}): "
    r"|\[(?P<job>\d+),(?P<rank>\d+)\]<std(?:out|err|diag)>:"
    r"|\[(?P<hvd>\d{1,6})\]<std(?:out|err)>:"  # horovodrun (gloo): '[0]<stdout>:'
    r"|\[rank(?P<grank>\d+)\](?::|\s)"
    r"|\[(?P<role>[A-Za-z_]+\d+)\]:"
    r"|\[(?P<bare>\d{1,6})\]\s)"
)


def split_prefix(text: str) -> tuple[str | None, str]:
    """(launcher instance, rest of the text) of a text that may start with a launcher prefix."""
    m = PREFIX.match(text)
    if not m:
        return None, text
    label = m["srun"] or m["rank"] or m["hvd"] or m["grank"] or m["role"] or m["bare"]
    return label, text[m.end():]


TP_COLS = ("prefix", "lineno", "seg", "pattern", "name", "metric", "value", "scope", "step",
           "epoch", "label")
TM_COLS = ("prefix", "lineno", "seg", "pattern", "name", "value", "step", "epoch")


@dataclass
class Rows:
    """Row collector for the two tables a training log fills (tuples; one frame at the end).

    ``tp`` and ``tm`` are lists of tuples, or (the fast engine's) columnar Tables of the C
    extension, which take the same tuples through ``append`` (see :mod:`.fast`)."""

    tp: Any = field(default_factory=list)
    tm: Any = field(default_factory=list)
    #: where the current segment is: (launcher instance, lineno, segment number); set by the
    #: scanner before the recognisers run
    seg: tuple[str | None, int, int] = (None, 0, 0)
    #: run headers, one per header line: (launcher instance, lineno, kind); see :data:`HEADERS`
    headers: list[tuple[str | None, int, str]] = field(default_factory=list)
    #: per printer (launcher instance): the figures of an HF Trainer '***** Running training
    #: *****' block seen so far (its batch sizes are printed on separate lines)
    hf_block: dict[str | None, dict[str, float]] = field(default_factory=dict)
    #: the segment whose world size :func:`run_facts` read last (the fallbacks still read
    #: the rates of that line, not its world size again)
    world_at: tuple[str | None, int, int] | None = None

    def header(self, kind: str) -> None:
        """Record a line that starts a run (``kind``: a key of :data:`HEADERS`)."""
        self.headers.append((self.seg[0], self.seg[1], kind))

    def rate(self, pattern: str, name: str, metric: str, value: float, scope: str,
             step: int | float | None = None, epoch: float | None = None,
             label: str | None = None,
             ) -> None:
        self.tp.append((*self.seg, pattern, name, metric, value, scope, step, epoch, label))

    def metric(self, pattern: str, name: str, value: float, step: int | float | None = None,
               epoch: float | None = None) -> None:
        self.tm.append((*self.seg, pattern, name, value, step, epoch))


Recogniser = Callable[[str, Rows], bool]


@functools.lru_cache(maxsize=4096)
def _snake(key: str) -> str:
    """'elapsed time per iteration (ms)' -> 'elapsed_time_per_iteration_ms' (a few keys
    repeat on every line: cached)."""
    return re.sub(r"[^0-9a-z]+", "_", key.lower()).strip("_")


@functools.lru_cache(maxsize=256)
def _unit_metric(word: str) -> str:
    """Map a unit word ('samples', 'img', 'it', 'tokens', 'B') to a metric column value."""
    w = word.lower() if word in ("B", "bytes") else word.lower().rstrip("s")
    return _UNITS.get(w) or f"{_snake(word)}_per_s"


_UNITS = {
    "sample": "samples_per_s", "example": "samples_per_s", "ex": "samples_per_s",
    "exp": "samples_per_s", "byte": "bytes_per_s", "bytes": "bytes_per_s",
    "sequence": "sequences_per_s", "seq": "sequences_per_s",
    "image": "images_per_s", "img": "images_per_s",
    "token": "tokens_per_s", "tok": "tokens_per_s",
    "it": "iterations_per_s", "iteration": "iterations_per_s", "step": "steps_per_s",
    "b": "bytes_per_s", "batche": "batches_per_s", "batch": "batches_per_s",
}


# --- SambaFlow -------------------------------------------------------------------------

_SAMBA = lazy_pattern(
    r"(?:inner train loop time\s*:\s*(?P<t>" + NUM + r")\s*for\s*(?P<ep>\d+)\s*epochs?,"
    r"\s*number of global steps:\s*(?P<steps>\d+),\s*)?e2e samples_per_sec:\s*(?P<v>" + NUM + ")"
)


def sambaflow(text: str, rows: Rows) -> bool:
    m = _SAMBA.search(text)
    if not m:
        return False
    rows.rate("sambaflow", "e2e samples_per_sec", "samples_per_s", _F(m["v"]), "instance")
    if m["t"]:
        rows.metric("sambaflow", "train_loop_time_s", _F(m["t"]))
        rows.metric("sambaflow", "epochs", _F(m["ep"]))
        rows.metric("sambaflow", "global_steps", _F(m["steps"]))
    return True


# --- Python dicts: HF Trainer, SambaNova transformers hook --------------------------------

_DICT = lazy_pattern(r"\{'[^{}]{0,4000}\}")
_PAIR = lazy_pattern(r"'(\w+)':\s*'?(" + NUM + r"|nan|inf)'?(?=\s*[,}])")
_DICT_KEYS = ("loss", "learning_rate", "train_runtime", "e2e_train_time", "grad_norm",
              "eval_loss", "train_loss", "final_loss")


def py_dict(text: str, rows: Rows) -> bool:
    found = False
    for d in _DICT.finditer(text):
        pairs = {k: _F(v) for k, v in _PAIR.findall(d.group(0))}
        if not any(k in pairs or k.endswith("_per_second") for k in _DICT_KEYS) and not any(
                k.endswith("_per_second") for k in pairs):
            continue
        found = True
        pattern = _dict_pattern(pairs)
        epoch = pairs.pop("epoch", None)
        step = pairs.pop("step", None)
        stepi = _int(step) if step is not None else None
        for key, value in pairs.items():
            if key.endswith("_per_second") and not key.startswith(("eval_", "test_", "predict_")):
                word = key[: -len("_per_second")].split("_")[-1]
                rows.rate(pattern, key, _unit_metric(word), value, _dict_scope(key), stepi,
                          epoch)
            else:
                rows.metric(pattern, _dict_metric_name(key), value, stepi, epoch)
    return found


#: HF Trainer's figures that are per device: ``include_tokens_per_second`` "computes the number
#: of tokens per second per device" (TrainingArguments' docs); its samples and steps per second
#: cover the job
_PER_DEVICE_KEYS = frozenset({"train_tokens_per_second", "tokens_per_second"})


def _dict_scope(key: str) -> str:
    return "device" if key in _PER_DEVICE_KEYS else "global"


def _dict_pattern(pairs: dict[str, float]) -> str:
    if "e2e_train_time" in pairs or "training_sequences_per_second" in pairs:
        return "transformers_hook"
    if any(k in pairs for k in _HF_MARKERS):
        return "hf_trainer"
    return "py_dict"


_HF_MARKERS = ("train_runtime", "learning_rate", "train_samples_per_second", "grad_norm",
               "eval_runtime", "train_steps_per_second")


def _dict_metric_name(key: str) -> str:
    if key.endswith(("_runtime", "_train_time")):
        return key + "_s"
    return key


# the logger may prefix the line: '[INFO|trainer_pt_utils.py:912] 2021-05-25 ... >>   train_...'
_HF_TABLE = lazy_pattern(r"(?:^|\s)(?P<k>(?:train_)?\w+_per_second)\s*=\s*(?P<v>" + NUM + r")\s*$")


def hf_metrics_table(text: str, rows: Rows) -> bool:
    m = _HF_TABLE.search(text)
    if not m or m["k"].startswith(("eval_", "test_", "predict_")):
        return False
    word = m["k"][: -len("_per_second")].split("_")[-1]
    rows.rate("hf_metrics_table", m["k"], _unit_metric(word), _F(m["v"]), _dict_scope(m["k"]))
    return True


# --- DeepSpeed -------------------------------------------------------------------------------

_DS_RATE = lazy_pattern(r"\b(\w*SamplesPerSec)=(" + NUM + ")")
_DS_STEP = lazy_pattern(r"global_step=(\d+)|\b\d+/(\d+),\s*\w*SamplesPerSec")
_DS_EPOCH = lazy_pattern(r"\bepoch=(\d+)")
_DS_FLOPS = lazy_pattern(r"^\s*samples/second:\s*(" + NUM + r")\s*$")


def deepspeed(text: str, rows: Rows) -> bool:
    found = _DS_RATE.findall(text)
    if not found:
        return False
    sm = _DS_STEP.search(text)
    step = int(sm.group(1) or sm.group(2)) if sm else None
    em = _DS_EPOCH.search(text)
    epoch = _F(em.group(1)) if em else None
    for name, value in found:
        # ThroughputTimer counts train_batch_size samples per step: the whole job's rate
        rows.rate("deepspeed", name, "samples_per_s", _F(value), "global", step, epoch)
    return True


def deepspeed_flops(text: str, rows: Rows) -> bool:
    m = _DS_FLOPS.match(text)
    if not m:
        return False
    # the flops profiler divides micro_batch * world_size by the iteration latency
    rows.rate("deepspeed_flops", "samples/second", "samples_per_s", _F(m.group(1)), "global")
    return True


# --- Megatron-LM / Megatron-DeepSpeed ---------------------------------------------------------

_MEG_ITER = lazy_pattern(r"\biteration\s+(\d+)\s*/\s*(\d+)\s*\|")
_MEG_FIELD = lazy_pattern(r"([A-Za-z][A-Za-z0-9 ._()/-]{0,60}?)\s*:\s*(" + NUM + r")\s*(?=\||$)")


def megatron(text: str, rows: Rows) -> bool:
    """An iteration record. ``elapsed time per iteration`` is a step time (train_metrics
    ``step_time_s``), not a throughput; the job's ``samples_per_s`` is the printed ``samples
    per second`` (Megatron-DeepSpeed), else ``global batch size`` / step time."""
    m = _MEG_ITER.search(text)
    if not m or "per iteration" not in text:
        return False
    step = int(m.group(1))
    fields = {" ".join(k.split()): _F(v) for k, v in _MEG_FIELD.findall(text[m.end():])}
    seconds = _iteration_seconds(fields)
    if "samples per second" in fields:
        rows.rate("megatron", "samples per second", "samples_per_s",
                  fields["samples per second"], "global", step)
    elif seconds and (gbs := fields.get("global batch size")):
        rows.rate("megatron", "elapsed time per iteration", "samples_per_s", gbs / seconds,
                  "global", step)
    for key, value in fields.items():
        if not key.startswith("elapsed time per iteration") and key != "samples per second":
            rows.metric("megatron", _meg_name(key), value, step)
    if seconds:
        rows.metric("megatron", "step_time_s", seconds, step)
    return True


def _iteration_seconds(fields: dict[str, float]) -> float | None:
    if "elapsed time per iteration (ms)" in fields:
        return fields["elapsed time per iteration (ms)"] / 1000.0 or None
    return fields.get("elapsed time per iteration (s)") or None


def _meg_name(key: str) -> str:
    name = _snake(key.replace("number of ", ""))
    return {"tflops": "tflops_per_gpu"}.get(name, name)


# --- nanoGPT and modded-nanogpt: step times ------------------------------------------------

#: nanoGPT train.py: ``iter 10: loss 3.2000, time 35.20ms, mfu 1.20%``
_NANOGPT = lazy_pattern(r"\biter (\d+): loss (" + NUM + r"), time (" + NUM + r")ms, mfu (" + NUM
                      + r")%")
#: modded-nanogpt: ``step:100/1750 train_time:12345ms step_avg:123.45ms`` (training) and
#: ``step:1845/1845 val_loss:3.2772 train_time:114005ms step_avg:61.79ms`` (validation)
_MODDED = lazy_pattern(r"\bstep:(\d+)/\d+ (?:val_loss:(" + NUM + r") )?train_time:(" + NUM +
                     r")ms step_avg:(" + NUM + r")ms")


def nanogpt(text: str, rows: Rows) -> bool:
    if m := _NANOGPT.search(text):
        step = int(m.group(1))
        rows.metric("nanogpt", "loss", _F(m.group(2)), step)
        rows.metric("nanogpt", "step_time_s", _F(m.group(3)) / 1000.0, step)
        rows.metric("nanogpt", "mfu_pct", _F(m.group(4)), step)
        return True
    if m := _MODDED.search(text):
        step = int(m.group(1))
        if m.group(2) is not None:  # a validation line: its times repeat the step's
            rows.metric("modded_nanogpt", "val_loss", _F(m.group(2)), step)
            return True
        # step_avg = train_time / step: the mean step time so far (the only one printed)
        rows.metric("modded_nanogpt", "step_time_avg_s", _F(m.group(4)) / 1000.0, step)
        rows.metric("modded_nanogpt", "train_time_s", _F(m.group(3)) / 1000.0, step)
        return True
    return False


# --- Horovod / tf_cnn_benchmarks synthetic benchmarks -----------------------------------------

_HVD_ITER = lazy_pattern(r"Iter #(\d+):\s*(" + NUM + r")\s*img/sec\s+(per\s+)?(GPU|CPU|\w+)")
_HVD_MEAN = lazy_pattern(r"Img/sec per (GPU|CPU|\w+):\s*(" + NUM + r")(?:\s*\+-\s*(" + NUM + "))?")
_HVD_TOTAL = lazy_pattern(r"Total img/sec on (\d+) (GPU|CPU|\w+)\(s\):\s*(" + NUM + r")"
                        r"(?:\s*\+-\s*(" + NUM + "))?")
_TFCNN_STEP = lazy_pattern(r"^\s*(\d+)\s+images/sec:\s*(" + NUM + ")")
_TFCNN_TOTAL = lazy_pattern(r"^\s*total images/sec:\s*(" + NUM + ")")


def horovod_benchmark(text: str, rows: Rows) -> bool:
    if m := _HVD_ITER.search(text):
        # Horovod prints 'img/sec per GPU'; Bagua's port prints 'img/sec GPU' with the
        # job total (its per-GPU summary is total/world size), so no 'per' means global
        scope = "device" if m.group(3) else "global"
        name = f"img/sec {'per ' if m.group(3) else ''}{m.group(4)}"
        rows.rate("horovod_benchmark", name, "images_per_s", _F(m.group(2)), scope,
                  int(m.group(1)))
    elif m := _HVD_MEAN.search(text):
        rows.rate("horovod_benchmark", f"Img/sec per {m.group(1)}", "images_per_s",
                  _F(m.group(2)), "device")
    elif m := _HVD_TOTAL.search(text):
        rows.rate("horovod_benchmark", "Total img/sec", "images_per_s", _F(m.group(3)), "global")
        if m.group(4):  # '+-122.3': 1.96 standard deviations of the timed iterations' rates
            rows.metric("horovod_benchmark", "total_img_sec_ci", _F(m.group(4)))
        rows.metric("horovod_benchmark", "devices", _F(m.group(1)))
        rows.metric("horovod_benchmark", "world_size", _F(m.group(1)))
    elif m := _TFCNN_STEP.search(text):
        rows.rate("horovod_benchmark", "images/sec", "images_per_s", _F(m.group(2)), "device",
                  int(m.group(1)))
    elif m := _TFCNN_TOTAL.search(text):
        rows.rate("horovod_benchmark", "total images/sec", "images_per_s", _F(m.group(1)),
                  "global")
    else:
        return False
    return True


# --- run headers and world size statements -------------------------------------------------

#: kinds of :meth:`Rows.header`: lines that start a run (one record per header line: when
#: 16 ranks each print one, that is 16 records; read.py decides what is a new run)
HEADERS: dict[str, str] = {
    "hf_trainer": "'***** Running training *****' (HF Trainer; DeepSpeed-Chat prints it too)",
    "horovod_benchmark": "the 'Number of GPUs: N' (or CPUs) line of the Horovod synthetic "
                         "benchmark's 'Model: / Batch size: / Number of GPUs:' block",
    "benchmark": "'Running benchmark...' (Horovod and Bagua synthetic benchmarks: the timed "
                 "part starts; after the block above in Horovod's)",
    "megatron": "'using world size: N, ...' (Megatron-LM / Megatron-DeepSpeed argument "
                "checks, rank 0, first line of a run)",
}
#: pattern of a ``world_size`` train_metrics row -> what the log said
WORLD_SIZE_FROM: dict[str, str] = {
    "horovod_benchmark": "Horovod benchmark: 'Number of GPUs' / 'Total img/sec on N GPU(s)'",
    "launcher": "'Running on N tasks'",
    "env": "WORLD_SIZE= / world_size= / 'world size: N'",
    "hf_trainer": "HF: 'Num processes' / total train batch size",
    "deepspeed": "DeepSpeed launcher: dist_world_size / MPI settings",
    "rank_of": "'worker N of M' / 'MEMBER: N/M' / store-based barrier 'with N nodes'",
    "generic": "a rate's own line: 'Num of GPUs: N' / 'num_gpus=N' / 'on N GPUs' / "
               "'world size: N' beside the figure",
    "torchrun": "torchrun: its agent's 'global_world_sizes=[N, ...]' / a launch line's "
                "'--nproc_per_node N --nnodes M'",
}

_HF_RUN = lazy_pattern(r"\*{3,}\s*Running training\s*\*{3,}")
_BENCH_RUN = lazy_pattern(r"(?:^|\s)Running benchmark\.\.\.\s*$")
_HVD_DEVICES = lazy_pattern(r"(?:^|\s)Number of (GPU|CPU)s:\s*(\d+)\s*$")
_MEG_WORLD = lazy_pattern(r"\busing world size:\s*(\d+)")
_TASKS = lazy_pattern(r"\bRunning on (\d+) tasks?\b")
#: DeepSpeed's launcher (launch.py) and its MPI discovery (comm.py); not its config print
#: 'world_size ....... N', which is the data-parallel size (1 in a 64-rank 3D-parallel job)
_DS_WORLD = lazy_pattern(r"\bdist_world_size=(\d+)|Discovered MPI settings of .*?\bworld_size=(\d+)")
#: not LOCAL_WORLD_SIZE, dist_world_size, args.world_size (the lookbehind)
_ENV_WORLD = lazy_pattern(r"(?<![\w.])(?:(?:OMPI_COMM_)?WORLD_SIZE|world_size|SLURM_NTASKS"
                        r"|SLURM_NPROCS)=(\d+)\b")
_WORDS_WORLD = lazy_pattern(r"(?<![\w.])(?<!local )world size\s*[:=]\s*(\d+)\b", re.IGNORECASE)
_NUM_PROCS = lazy_pattern(r"\bNum processes\s*[:=]\s*(\d+)\b")
#: torchrun's elastic agent at LOGLEVEL=INFO (torch 1.9+): its 'Rendezvous complete for
#: workers. Result:' block lists 'global_world_sizes=[4, 4]' (the job's world for each local
#: worker; '[defaultN]:' prefixes are local ranks)
_ELASTIC_WORLD = lazy_pattern(r"\bglobal_world_sizes=\[(\d+)[,\]]")
#: a torchrun / torch.distributed.launch command line: '--nproc_per_node 4 ... --nnodes 16'
#: (both on the line; an elastic range '--nnodes 1:4' says no world)
_LAUNCH_PROCS = lazy_pattern(r"--nproc[_-]per[_-]node[= ](\d+)\b")
_LAUNCH_NODES = lazy_pattern(r"--nnodes[= ](\d+)\b(?!:)")
#: 'Horovod: I am worker 3 of 8.', 'Global Rank: 0 / 16', 'GLOBAL_RANK: 14, MEMBER: 15/16'
#: (not 'Global Rank: 6 / 15': mlprof prints the last rank there, not the world size);
#: torch.distributed's 'Rank 9: Completed store-based barrier for key:... with 16 nodes.'
#: ('nodes' are its processes: the world size)
_RANK_OF = lazy_pattern(r"\bworker\s+\d+\s+of\s+(\d+)\b|\bMEMBER:\s*\d+/(\d+)\b"
                      r"|Completed store-based barrier for key:\S+ with (\d+) nodes")
#: the HF Trainer's '***** Running training *****' block, one figure a line
_HF_BATCH = lazy_pattern(r"\b(Instantaneous batch size per device|Total train batch size|Gradient "
                       r"Accumulation steps)\b[^=]{0,60}=\s*(\d[\d,]*)\s*$")
_HF_KEYS = {"Instantaneous batch size per device": "device", "Total train batch size": "total",
            "Gradient Accumulation steps": "accumulation"}


def run_facts(text: str, rows: Rows) -> bool:
    """Run headers (:data:`HEADERS`) and world size statements (:data:`WORLD_SIZE_FROM`)."""
    if _HF_RUN.search(text):
        rows.header("hf_trainer")
        rows.hf_block.pop(rows.seg[0], None)
        return True
    if _BENCH_RUN.search(text):
        rows.header("benchmark")
        return True
    if m := _HVD_DEVICES.search(text):
        rows.header("horovod_benchmark")
        rows.metric("horovod_benchmark", "world_size", _F(m.group(2)))
        return True
    if m := _HF_BATCH.search(text):
        return _hf_batch(rows, _HF_KEYS[m.group(1)], _F(m.group(2).replace(",", "")))
    if m := _MEG_WORLD.search(text):
        rows.header("megatron")
        rows.metric("env", "world_size", _F(m.group(1)))
        return True
    if m := _ELASTIC_WORLD.search(text):
        rows.metric("torchrun", "world_size", _F(m.group(1)))
        return True
    if (m := _LAUNCH_PROCS.search(text)) and (n := _LAUNCH_NODES.search(text)):
        rows.metric("torchrun", "world_size", _F(m.group(1)) * _F(n.group(1)))
        return True
    for rx, pattern in ((_DS_WORLD, "deepspeed"), (_TASKS, "launcher"), (_NUM_PROCS, "hf_trainer"),
                        (_ENV_WORLD, "env"), (_WORDS_WORLD, "env"), (_RANK_OF, "rank_of")):
        if m := rx.search(text):
            rows.metric(pattern, "world_size", _F(m.group(m.lastindex or 1)))
            rows.world_at = rows.seg
            # a rate on the same line ('... 1234 samples/s, world_size=8') is still read
            return not (_GENERIC.search(text) or _GENERIC_UNIT_FIRST.search(text))
    return False


def _hf_batch(rows: Rows, key: str, value: float) -> bool:
    """One line of the HF block; with the three figures of a printer, its world size."""
    block = rows.hf_block.setdefault(rows.seg[0], {})
    block[key] = value
    if len(block) == 3:
        del rows.hf_block[rows.seg[0]]
        per_step = block["device"] * block["accumulation"]
        world = block["total"] / per_step if per_step else 0.0
        if world >= 1 and world == int(world):
            rows.metric("hf_trainer", "world_size", world)
    return True


# --- torchtitan --------------------------------------------------------------------------------

#: 'step:  4  loss:  7.62585  grad_norm: 26.6250  memory: 66.91GiB(37.51%)  tps: 10,050
#: tflops: 314.71  mfu: 13.99%' (torchtitan's metrics logger: tps is tokens per second per
#: device, as are tflops and mfu)
_TITAN = lazy_pattern(r"\bstep:\s*(\d+)\s+loss:\s*(" + NUM + r")(?P<rest>.*?)\btps:\s*"
                    r"(?P<tps>\d[\d,]*)(?:\s+tflops:\s*(?P<tf>" + NUM + r"))?"
                    r"(?:\s+mfu:\s*(?P<mfu>" + NUM + r")%)?")
_TITAN_GRAD = lazy_pattern(r"\bgrad_norm:\s*(" + NUM + ")")


def torchtitan(text: str, rows: Rows) -> bool:
    m = _TITAN.search(text)
    if not m:
        return False
    step = int(m.group(1))
    rows.rate("torchtitan", "tps", "tokens_per_s", _F(m["tps"].replace(",", "")), "device",
              step)
    rows.metric("torchtitan", "loss", _F(m.group(2)), step)
    if g := _TITAN_GRAD.search(m["rest"]):
        rows.metric("torchtitan", "grad_norm", _F(g.group(1)), step)
    if m["tf"]:
        rows.metric("torchtitan", "tflops", _F(m["tf"]), step)
    if m["mfu"]:
        rows.metric("torchtitan", "mfu_pct", _F(m["mfu"]), step)
    return True


# --- Keras TimeHistory (TF official models) ---------------------------------------------------

_KERAS = lazy_pattern(r"TimeHistory:\s*(" + NUM + r")\s*seconds,\s*(" + NUM +
                    r")\s*examples/second between steps (\d+) and (\d+)")


def keras(text: str, rows: Rows) -> bool:
    m = _KERAS.search(text)
    if not m:
        return False
    step = int(m.group(4))
    # TF official models give TimeHistory the global batch size: the rate covers the job
    rows.rate("keras", "examples/second", "samples_per_s", _F(m.group(2)), "global", step)
    rows.metric("keras", "interval_time_s", _F(m.group(1)), step)
    return True


# --- MXNet's Speedometer ---------------------------------------------------------------------

#: MXNet's ``mx.callback.Speedometer``, every ``frequent`` batches: ``Epoch[0] Batch [20-40]
#: \tSpeed: 77689.35 samples/sec\taccuracy=0.001145`` (``Iter[0] Batch [20]`` in MXNet 0.x)
_SPEEDOMETER = lazy_pattern(r"\b(?:Epoch|Iter)\[(\d+)\]\s*Batch\s*\[\d+(?:-\d+)?\]\s*Speed:\s*("
                          + NUM + r")\s*samples/sec")
_SPEEDOMETER_METRIC = lazy_pattern(r"\b([A-Za-z][\w-]*)=(" + NUM + r"|nan)(?=\s|$)")


def mxnet_speedometer(text: str, rows: Rows) -> bool:
    """One Speedometer line: a series without a step (a figure every ``frequent`` batches).
    Speed is ``frequent x batch_size / seconds`` with the batch the script gives it; MXNet
    with Horovod gives it on rank 0 alone with the job's batch (Horovod's MXNet examples:
    ``Speedometer(args.batch_size * hvd.size())`` under ``if hvd.rank() == 0``; the MLPerf
    MXNet ResNet logs' ``Speed:`` is their MLLOG ``throughput``): the job's rate."""
    m = _SPEEDOMETER.search(text)
    if not m:
        return False
    epoch = _F(m.group(1))
    rows.rate("mxnet_speedometer", "Speed", "samples_per_s", _F(m.group(2)), "global",
              None, epoch)
    for name, value in _SPEEDOMETER_METRIC.findall(text[m.end():]):
        rows.metric("mxnet_speedometer", _snake(name), _F(value), None, epoch)
    return True


# --- tqdm and the progress bars built on it (HF, Lightning) ------------------------------------

# the bracket '[elapsed<left, rate unit/s, postfix]' starts with a literal, which re finds fast;
# the count 'n/total' right before it is read from the end of the preceding text
_TQDM = lazy_pattern(
    r"\[(?P<elapsed>\d[\d:]*)(?:<(?P<left>[\d:?]+))?,\s*"
    r"(?:(?P<rate>" + NUM + r")|\?)\s*(?P<scale>[kMGT]?)(?P<unit>[A-Za-z_]{1,30})/"
    r"(?P<per>s|[A-Za-z_]{1,30})(?P<post>[^\]]{0,500})\]"
)
_TQDM_COUNT = lazy_pattern(r"(\d+(?:\.\d+)?[kMGT]?)(?:/(?:\d+(?:\.\d+)?[kMGT]?|\?))?[A-Za-z]{0,20}"
                         r"\s*$")
_SCALE = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_POSTFIX = lazy_pattern(r"(\w+)=(" + NUM + r")(?=[,\]\s]|$)")
_EPOCH_IN_DESC = lazy_pattern(r"\bEpoch\s+(\d+)")
_DIGITS = lazy_pattern(r"\d+(?:\.\d+)?")
#: launcher tags and partial bar blocks left in a bar's description by flattened copies
_BAR_NOISE = lazy_pattern(r"\[\d+,\d+\]<std\w+>:|\[(?:INFO|WARNING)\]\s*|[\u2580-\u259f]+")


def tqdm_bar(text: str, rows: Rows) -> bool:
    m = _TQDM.search(text)
    if not m:
        return False
    before = text[max(0, m.start() - 240):m.start()]
    cm = _TQDM_COUNT.search(before, max(0, len(before) - 40))
    if not cm:
        return False
    found = tqdm_row(rows, before[:cm.start()], cm.group(1), m)
    if "{'" in text[m.end():]:
        _after_bar(text, m.end(), rows)
    return found


def _after_bar(text: str, at: int, rows: Rows) -> None:
    """A Python dict printed right after a bar, as its own line that lost its newline:
    ``...13.93it/s][default0]:{'train_runtime': '5.071', ...}``. The launcher tag before the
    dict is its printer's; it is a segment of its own (tqdm repeats are dropped by segment)."""
    prefix, body = split_prefix(text[at:])
    saved = rows.seg
    rows.seg = (saved[0] if prefix is None else prefix, saved[1], saved[2] + at)
    try:
        py_dict(body, rows)
    finally:
        rows.seg = saved


#: one whole tqdm update (a ``\r``-separated segment): what precedes the count (launcher
#: prefix, description, percentage and bar), the count, the bracket, and what follows
TQDM_SEGMENT = lazy_pattern(
    r"(?P<pre>[^\r]{0,240}?)(?P<n>\d+(?:\.\d+)?[kMGT]?)(?:/(?:\d+(?:\.\d+)?[kMGT]?|\?))?"
    r"[A-Za-z]{0,20}[ \t]*\[\d[\d:]*(?:<[\d:?]+)?,[ \t]*(?:(?P<rate>" + NUM + r")|\?)[ \t]*"
    r"(?P<scale>[kMGT]?)(?P<unit>[A-Za-z_]{1,30})/(?P<per>s|[A-Za-z_]{1,30})(?P<post>[^\]\r]{0,500})"
    r"\](?![^\r]*\{')[^\r]*"   # not an update when a dict follows the bar: see _after_bar
)


def tqdm_row(rows: Rows, desc: str, count: str, m: re.Match[str]) -> bool:
    """Add the row of one tqdm update: ``desc`` precedes the count, ``m`` has the bracket."""
    if m["rate"] is None:  # '?it/s': no rate yet
        return True
    rate = _F(m["rate"])
    kind = rate_unit(m["scale"], m["unit"], m["per"])
    if kind is None:
        return False
    metric, factor, inverse = kind
    if inverse:
        if rate == 0:
            return True
        value = 1.0 / rate
    else:
        value = rate * factor
    label, epoch = _desc_label(desc)
    step = int(count) if count.isdigit() else _tqdm_count(count)
    rows.rate("tqdm", "tqdm", metric, value, "instance", step, epoch, label)
    if "=" in m["post"]:
        for name, val in postfix_pairs(m["post"]):
            rows.metric("tqdm", name, val, step, epoch)
    return True


def rate_unit(scale: str, unit: str, per: str) -> tuple[str, float, bool] | None:
    """(metric, factor, inverted) of a tqdm rate's unit, or None (no row): ``unit/s`` is
    rate x scale, ``s/unit`` ('2.05s/it', seconds per unit) is 1/rate."""
    if per == "s":
        return _unit_metric(unit), _SCALE[scale], False
    if unit == "s":
        return _unit_metric(per), 1.0, True
    return None


def postfix_pairs(post: str) -> list[tuple[str, float]]:
    """(metric name, value) of the ``key=value`` pairs of a tqdm postfix (``loss=0.53``)."""
    return [(_snake(key), _F(val)) for key, val in _POSTFIX.findall(post)]


@functools.lru_cache(maxsize=8192)
def _desc_label(desc: str) -> tuple[str | None, float | None]:
    """Label and epoch of what precedes a bar's count (repeats a lot: cached)."""
    return _bar_label(_strip_bar(desc))


def _strip_bar(desc: str) -> str:
    """'Training:  45%|####5     | ' -> 'Training:  ' (drop the percentage and the bar)."""
    cut = desc.rfind("%|")
    if cut < 0:
        return desc
    while cut > 0 and desc[cut - 1].isdigit():
        cut -= 1
    return desc[:cut]


@functools.lru_cache(maxsize=4096)
def _bar_label(desc: str) -> tuple[str | None, float | None]:
    """A bar's description as a label (numbers -> '#', so epochs group) and its epoch."""
    desc = _BAR_NOISE.sub("", desc).strip().rstrip(":|").strip()[-80:]
    em = _EPOCH_IN_DESC.search(desc)
    return _DIGITS.sub("#", desc) or None, _F(em.group(1)) if em else None


def _tqdm_count(n: str) -> int | float:
    """A count with a fraction or a scale ('12.5', '1.5k'); inf when it overflows a float."""
    scale = _SCALE.get(n[-1]) if n and n[-1].isalpha() else None
    return _int(float(n[:-1]) * scale if scale else float(n))


# --- Lightning's RichProgressBar ------------------------------------------------------------

#: Lightning's RichProgressBar columns: description, bar, ``completed/total`` (``--`` when
#: unsized), ``elapsed • remaining`` (h:mm:ss, ``-:--:--``), ``{speed:.2f}it/s`` (``0.00``
#: before a speed is known), then the metrics as ``name: value``:
#: ``Epoch 1/4  ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 63/63 0:00:01 • 0:00:00 52.68it/s v_num: 1 train_loss: 0.28``
_RICH = lazy_pattern(
    r"(?P<desc>[^\u2500-\u257f]*?)[\u2500-\u257f]+\s+(?P<n>\d+)/(?:\d+|--)\s+[^\u2022]{1,40}"
    r"\u2022\s*(?:[^\u2022\s]{1,40}?(?:,? [^\u2022\s]{1,20}){0,3}\s+)?(?P<rate>" + NUM
    + r")it/s(?=\s|$)(?P<post>.*)")
_RICH_METRIC = lazy_pattern(r"([A-Za-z_][\w/.-]*):\s*(" + NUM + r")(?=\s|$)")
_RICH_EPOCH = lazy_pattern(r"^(\s*Epoch\s+\d+)/\d+")


def rich_bar(text: str, rows: Rows) -> bool:
    m = _RICH.search(text)
    if not m:
        return False
    rate = _F(m["rate"])
    if rate == 0:  # '0.00it/s': no speed yet (as tqdm's '?it/s')
        return True
    label, epoch = _desc_label(_RICH_EPOCH.sub(r"\1", m["desc"]))
    step = int(m["n"])
    rows.rate("rich_bar", "rich_bar", "iterations_per_s", rate, "instance", step, epoch, label)
    for name, value in _RICH_METRIC.findall(m["post"]):
        rows.metric("rich_bar", _snake(name), _F(value), step, epoch)
    return True


# --- phase: whether a throughput row measures training --------------------------------------

#: what a throughput row measures, in order of importance: training steps, evaluation, and the
#: work around training: loading (checkpoint shards, dataset preprocessing, compilation) and
#: downloads (model or dataset files)
PHASES = schema.PHASES
#: descriptions of bars that download (checked first: 'Downloading checkpoint shards' is one):
#: huggingface_hub 'Downloading (…)of-#.safetensors' and 'Fetching # files', transformers
#: 'Downloading shards', uploads
_DOWNLOAD_LABEL = lazy_pattern(r"download|upload|\bfetching\b", re.IGNORECASE)
#: descriptions of bars that load or prepare, as tqdm is given them by real tools (the label
#: has its digits as '#'): transformers 'Loading checkpoint shards' (DeepSpeed-Chat), Graphcore
#: 'Graph compilation', the datasets library's 'Map (num_proc=#)', 'Filter', 'Generating train
#: split', 'Resolving data files', 'Extracting data files', 'Computing checksums', 'Saving the
#: dataset', run_clm's 'Running tokenizer on dataset' and 'Grouping texts in chunks of #'.
#: Checked before _EVAL_LABEL: 'Generating validation split' and 'Tokenizing test set' load
_LOAD_LABEL = lazy_pattern(
    r"\bload(?:ing)?\b|checkpoint shards|\bresolving\b|extract"
    r"|\bgenerating \S+ split|^\W*(?:map|filter)\b|tokeni[sz]|pre-?process|grouping texts"
    r"|\bpacking\b|\bsaving\b|creating parquet|checksum|compil|\bconvert", re.IGNORECASE)
#: evaluation bars: 'Evaluating', 'Evaluation', 'Validation DataLoader #' and 'Sanity Checking
#: DataLoader #' (Lightning), 'Validating', 'Testing', 'Predicting'
_EVAL_LABEL = lazy_pattern(r"\b(?:eval\w*|valid\w*|val|test\w*|predict\w*|inference"
                         r"|sanity check\w*)\b", re.IGNORECASE)
#: figures named for evaluation: HF eval_samples_per_second, test_..., predict_...
_EVAL_NAME = lazy_pattern(r"(?:eval|val|validation|test|predict)_", re.IGNORECASE)
_TRAIN, _EVAL, _LOAD, _DOWNLOAD = (PHASES.index(p) for p in ("train", "eval", "load", "download"))
#: metrics of bars that move bytes: a download unless the label says otherwise
_BYTE_METRICS = frozenset({"bytes_per_s"})


@functools.lru_cache(maxsize=4096)
def label_phase(label: str) -> int:
    """Index in :data:`PHASES` of a bar labelled ``label``: download, load, eval, else train."""
    if _DOWNLOAD_LABEL.search(label):
        return _DOWNLOAD
    if _LOAD_LABEL.search(label):
        return _LOAD
    return _EVAL if _EVAL_LABEL.search(label) else _TRAIN


def phases(name: pd.Series, label: pd.Series, metric: pd.Series | None = None) -> pd.Series:
    """The ``phase`` column (categories :data:`PHASES`) of throughput rows, from each row's
    bar label and name, and its metric when given: a row without a label is training unless
    its name says eval; a bar counting bytes (``MB/s``) whose label says nothing is a download.

    Vectorised: each distinct label, name and metric is classified once (a log has few).
    """
    lab_codes, labels = schema.factorize(label)
    by_label = np.array([label_phase(str(x)) for x in labels] + [_TRAIN], dtype=np.int8)
    codes = schema.lookup(by_label, lab_codes)  # code -1 (no label) takes the appended train
    name_codes, names = schema.factorize(name)
    eval_name = np.array([bool(_EVAL_NAME.match(str(x))) for x in names] + [False])
    named_eval = schema.lookup(eval_name, name_codes)
    codes = np.where((codes == _TRAIN) & named_eval, np.int8(_EVAL), codes)
    if metric is not None:
        met_codes, metrics = schema.factorize(metric)
        moves = np.array([str(x) in _BYTE_METRICS for x in metrics] + [False])
        moved = schema.lookup(moves, met_codes)
        codes = np.where((codes == _TRAIN) & moved, np.int8(_DOWNLOAD), codes)
    return pd.Series(pd.Categorical.from_codes(codes, categories=PHASES), index=name.index)


# --- loss lines of the Horovod / PyTorch examples and key=value loggers -----------------------

_TF2_EPOCH = lazy_pattern(r"Epoch:\s*(\d+)\s+Loss:\s*(" + NUM + r")\s+Time/epoch:\s*(" + NUM + ")")
_PT_EXAMPLE = lazy_pattern(r"Train Epoch:\s*(\d+)\s*\[(\d+)/(\d+)\s*\((\d+)%\)\]\s*Loss:\s*(" +
                         NUM + ")")
_TOOK = lazy_pattern(r"\bepoch\s+(\d+)\s+took:\s*(" + NUM + r")s")
_KV = lazy_pattern(r"\b([A-Za-z_]\w*)=(" + NUM + r")(%?)(?=[\s,|;)\]]|$)")
_LOSS = lazy_pattern(r"\b((?:[A-Za-z]{1,20}[ _])?[Ll]oss)\s*[:=]\s*(" + NUM + r")(?![\w.])")
_STEP_HINT = lazy_pattern(r"\b(?:step|iter(?:ation)?)\s*[=:#]?\s*(\d+)", re.IGNORECASE)
_EPOCH_HINT = lazy_pattern(r"\bepoch\s*[=:#]?\s*(\d+)", re.IGNORECASE)


def example_losses(text: str, rows: Rows) -> bool:
    if m := _TF2_EPOCH.search(text):
        epoch = _F(m.group(1))
        rows.metric("loss_line", "loss", _F(m.group(2)), epoch=epoch)
        rows.metric("loss_line", "epoch_time_s", _F(m.group(3)), epoch=epoch)
        return True
    if m := _PT_EXAMPLE.search(text):
        # step: the sample offset within the epoch, as the example prints it
        rows.metric("loss_line", "loss", _F(m.group(5)), int(m.group(2)), _F(m.group(1)))
        return True
    return False


def key_value(text: str, rows: Rows) -> bool:
    """``epoch=1.0000 step=6.0000 dt=0.0037 batch_loss=0.0042`` and ``epoch 1 took: 1.1s loss=..``."""
    pairs = {k: (v, pct) for k, v, pct in _KV.findall(text)}
    if not any("loss" in k.lower() for k in pairs):
        return False
    took = _TOOK.search(text)
    step_key = next((k for k in ("step", "global_step", "iter", "iteration") if k in pairs), None)
    step = _int(_F(pairs.pop(step_key)[0])) if step_key else None
    epoch = _F(pairs.pop("epoch")[0]) if "epoch" in pairs else None
    if took:
        epoch = _F(took.group(1))
        rows.metric("key_value", "epoch_time_s", _F(took.group(2)), step, epoch)
    for key, (value, pct) in pairs.items():
        name = "step_time_s" if key == "dt" else _snake(key) + ("_pct" if pct else "")
        rows.metric("key_value", name, _F(value), step, epoch)
    return True


def generic_loss(text: str, rows: Rows) -> bool:
    found = _LOSS.findall(text)
    if not found:
        return False
    sm, em = _STEP_HINT.search(text), _EPOCH_HINT.search(text)
    step = int(sm.group(1)) if sm else None
    epoch = _F(em.group(1)) if em else None
    for key, value in found:
        rows.metric("loss_line", _snake(key), _F(value), step, epoch)
    return True


# --- anything else that prints '<number> <unit>/s' ---------------------------------------------

_UNIT_WORDS = r"(samples|sequences|seqs|images|imgs|img|examples|tokens|toks|tok)"
#: (a number starts where no digit or point is before it: trying every start inside a run of
#: digits is quadratic in its length)
_GENERIC = lazy_pattern(r"(?<![\d.])(" + NUM + r")\s*" + _UNIT_WORDS + r"\s*/\s*(s|sec|second)\b")
#: the unit before the number: 'samples/sec 2249.7', 'samples/sec(global)=525.3'
_GENERIC_UNIT_FIRST = lazy_pattern(
    r"(?<![\w/])" + _UNIT_WORDS + r"\s*/\s*(s|sec|second)\b(\s*\([\w ]{1,20}\)|\s*/\s*\w{1,10})?"
    r"\s*([:=])?\s*(" + NUM + r")(?![\w.])")
_GENERIC_HINT = lazy_pattern(r"(\w+)\s*[:=]\s*$")
#: what right after the unit makes the figure a device's ('/rank', '/gpu', ' per GPU', ...)
#: or the job's ('(global)')
_AFTER_DEVICE = lazy_pattern(r"^\s*(?:/|\(?per[ _-]?)(?:rank|gpu|device)\b", re.IGNORECASE)
_AFTER_GLOBAL = lazy_pattern(r"^\s*\(global\)", re.IGNORECASE)
#: ... or before the number, back to the previous field ('global 3633.1 samples/sec',
#: 'throughput per GPU: 1816.6 samples/sec')
_BEFORE_GLOBAL = lazy_pattern(r"\b(?:global|total|aggregate)\b", re.IGNORECASE)
_BEFORE_DEVICE = lazy_pattern(r"\bper[ _-]?(?:gpu|device|rank)\b", re.IGNORECASE)
_FIELD_END = lazy_pattern(r".*[,|;\]]", re.DOTALL)
#: a line that states how many processes or devices its figures cover: 'Num of GPUs: 8'
#: (a DDP benchmark's rank 0: 'Throughput: 4751.982 images/s, Batch size: 16, Num of GPUs: 8,
#: Total time: 3.502 s'), 'num_gpus=8', 'world size: 8', 'on 8 GPUs', 'on 32 GPU(s)', 'on 2
#: nodes'. Its figures are the job's (unless their own words say per device); a count of
#: processes or devices is also the job's world size (nodes are not)
_STATED_COUNT = lazy_pattern(
    r"\b(?:num(?:ber)?[ _]?(?:of[ _])?|n_?)(?:gpus|devices|ranks|workers|processes|replicas)"
    r"\s*[:=]\s*(?P<n>\d+)\b"
    r"|(?<![\w.])(?<!local )world[ _]size\s*[:=]\s*(?P<w>\d+)\b"
    r"|\bon\s+(?P<on>\d+)\s+(?:gpus?|gpu\(s\)|devices?|ranks?|workers?|processes|cpus?|hpus?"
    r"|xpus?|tpus?)(?!\w)"
    r"|\bon\s+\d+\s+(?:nodes?|hosts?|machines?)\b", re.IGNORECASE)


def _line_scope(text: str, start: int, unit_end: int, stated: bool = False) -> str:
    """Scope of a generic figure from the words around it: device ('/rank', 'per GPU'),
    global ('(global)', 'global', 'total' before it, or ``stated``: the line says how many
    processes or devices its figures cover), else instance."""
    after = text[unit_end:unit_end + 16]
    if _AFTER_DEVICE.match(after):
        return "device"
    if _AFTER_GLOBAL.match(after):
        return "global"
    before = text[max(0, start - 40):start]
    if cut := _FIELD_END.match(before):
        before = before[cut.end():]
    if _BEFORE_DEVICE.search(before):
        return "device"
    if stated or _BEFORE_GLOBAL.search(before):
        return "global"
    return "instance"


def stated_count(text: str) -> tuple[str | None, int | None]:
    """(the words of the line that state the processes or devices its figures cover, how
    many processes or devices that is: the world size; None for nodes or no statement)."""
    m = _STATED_COUNT.search(text)
    if m is None:
        return None, None
    n = m["n"] or m["w"] or m["on"]
    return " ".join(m.group(0).split()), int(n) if n else None


def generic_rate(text: str, rows: Rows) -> bool:
    """``<number> <unit>/s`` and ``<unit>/s [:=] <number>``, in the order of the line. A unit
    between two numbers goes with the one after it when ``:`` or ``=`` says so ('step 20
    samples/sec(global)=525.3'), else with the one before it ('100 samples/sec 200')."""
    after = list(_GENERIC_UNIT_FIRST.finditer(text))
    taken = [m.span(1) for m in after if m.group(4)]  # units with ':' or '=' after them
    found: list[tuple[int, str, str, str, int, int]] = []  # (where, unit, per, number, scope)
    for m in _GENERIC.finditer(text):
        if not any(a <= m.start(2) < b for a, b in taken):
            found.append((m.start(), m.group(2), m.group(3), m.group(1), m.start(), m.end()))
    for m in after:
        if m.group(4) or not any(w <= m.start() < e for w, _, _, _, _, e in found):
            found.append((m.start(), m.group(1), m.group(2), m.group(5), m.start(), m.end(2)))
    if not found:
        return False
    step, epoch = _hint(_STEP_HINT, text), _epoch_hint(text)
    stated, world = stated_count(text)
    for _, unit, per, number, start, unit_end in sorted(found):
        scope = _line_scope(text, start, unit_end, stated is not None)
        # a figure whose line states its scope is a series of its own ('done: 200 steps on
        # 2 ranks; ... = 6584.5 samples/sec' is not one more of the 'global 6800.4
        # samples/sec' lines printed every 20 steps)
        name = f"{unit}/{per} ({stated})" if stated and scope == "global" else f"{unit}/{per}"
        rows.rate("generic", name, _unit_metric(unit), _F(number), scope, step, epoch)
    if world and rows.world_at != rows.seg:  # not read already by run_facts
        rows.metric("generic", "world_size", _F(world), step, epoch)
    return True


def _hint(rx: re.Pattern[str], text: str) -> int | None:
    m = rx.search(text)
    return int(m.group(1)) if m else None


def _epoch_hint(text: str) -> float | None:
    m = _EPOCH_HINT.search(text)
    return _F(m.group(1)) if m else None


#: specific recognisers, each with the literals one of which its line must contain (a cheap
#: ``in`` test that spares the regex). The first that recognises a segment owns it: a tqdm
#: bar's ``loss=`` postfix is not read again as a key=value line. tqdm comes first because
#: most hits in large logs are its updates.
SPECIFIC: tuple[tuple[tuple[str, ...], Recogniser], ...] = (
    (("/s]", "/s,", "s/it", "s/s"), tqdm_bar),
    (("it/s",), rich_bar),
    (("e2e samples_per_sec",), sambaflow),
    (("{'",), py_dict),
    (("_per_second",), hf_metrics_table),
    (("SamplesPerSec",), deepspeed),
    (("samples/second:",), deepspeed_flops),
    (("per iteration",), megatron),
    (("img/sec", "Img/sec", "images/sec"), horovod_benchmark),
    (("TimeHistory",), keras),
    (("Speed: ",), mxnet_speedometer),
    (("tps: ",), torchtitan),
    (("ms, mfu", "step_avg:"), nanogpt),
    (("Running ", "Number of ", "orld size", "orld_size=", "WORLD_SIZE=", "SLURM_N", "Num proc",
      "batch size", "Accumulation steps", "worker ", "MEMBER:", "store-based",
      "world_sizes=[", "per_node"), run_facts),
    (("Loss:",), example_losses),
    (("oss=",), key_value),
)
#: fallbacks, used only when no specific recogniser matched the segment
FALLBACK: tuple[tuple[tuple[str, ...], Recogniser], ...] = (
    (("/s",), generic_rate),
    (("oss",), generic_loss),
)

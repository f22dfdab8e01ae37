"""Every threshold a findings rule uses, in one place.

Each is the constant the analysis (or, for two drawer-only highlights, the drawer) already
applies today, re-exported here so that a rule and the table it reads can never disagree:
change a threshold in its analysis module and the finding follows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..analysis import communication as comm
from ..analysis import horovod as hv
from ..analysis import throughput as thr
from ..analysis import tiles as tl

#: throughput: an instance more than this fraction below its series' median is a straggler
#: (``analysis.throughput.STRAGGLER_THRESHOLD``, counted by ``throughput_summary``)
STRAGGLER_FRACTION: float = thr.STRAGGLER_THRESHOLD
#: throughput: share of each instance's steps dropped as warm-up before comparing
WARMUP_FRACTION: float = thr.WARMUP_FRACTION

#: mpitrace: Allreduces up to this size count as small (``analysis.communication.SMALL_BYTES``)
SMALL_BYTES: int = comm.SMALL_BYTES
#: mpitrace: flag a job when small Allreduces hold more than this share of its MPI time
#: (``analysis.communication.SMALL_SHARE``, the ``dominated`` column of ``small_messages``)
SMALL_SHARE: float = comm.SMALL_SHARE
#: mpitrace: ... and only when those Allreduces took at least this many seconds per rank:
#: mpitrace prints milliseconds, so a one-rank run's 0.001 s of local Allreduce copies is
#: "100%" of nothing (tests/fixtures/scaling/weak/n1). Real jobs that fire hold seconds
#: per rank (Theta knl32: 21 s)
SMALL_MIN_S_PER_RANK: float = 0.01
#: mpitrace: a rank's own file and rank 0's table disagree beyond this (``rank_times``)
TABLE_TOLERANCE_S: float = comm.TABLE_TOLERANCE_S

#: Horovod: a negotiation needs ticks from this many ranks to name a last rank
MIN_RANKS: int = hv.MIN_RANKS
#: Horovod: a rank the others waited for (last to report, NEGOTIATION_WAIT_US or more after
#: the first) in at least this share of the compared steady-state negotiations is a straggler
#: (the Horovod section marks that rank, and only it, in its ``straggler`` column: the
#: drawer's red is the rule's own judgement)
LAST_SHARE: float = 0.5
#: Horovod: a last tick less than this after the first rank's is the coordinator's reading
#: order within one cycle, not a wait (``analysis.horovod.WAIT_US``)
NEGOTIATION_WAIT_US: float = hv.WAIT_US
#: Horovod: compared steady-state negotiations (a tensor's second or later) a timeline needs
#: before a rank is named. Start-up (the broadcasts, the first step) is never judged: real
#: balanced runs put one rank last in all of it (tests/fixtures/horovod_mpi/normal: rank 1 in
#: 19 of 21, up to 12.6 ms; the 2019 timelines: rank 0, up to 3.1 s, while the initial state
#: is broadcast from it), and with the response cache on it is all the ticks there are.
#: Ten is a few steps of a small model: one step's tensors alone (the 2019 timelines have 6
#: per step, 654 steady ones in all) are too few to tell a rank that is late every step
NEGOTIATION_MIN_STEADY: int = 10

#: SambaNova: a tile at or above this %idle with no PID is idle (``analysis.tiles.IDLE_PCT``)
IDLE_PCT: float = tl.IDLE_PCT

# -- compute straggler (mpitrace): decided from real runs, not taken from an analysis module ---
#
# A rank is a compute straggler when its time in MPI is below the median of the other ranks'
# by a gap that is (1) large against the run: at least COMPUTE_GAP_SHARE of the job's elapsed
# time, and (2) an outlier against the others' spread: at least COMPUTE_GAP_MADS median
# absolute deviations of the others' MPI times (the deviation floored at COMPUTE_MAD_FLOOR_S,
# mpitrace's resolution), in a job of at least COMPUTE_MIN_RANKS ranks with an MPI time.
# Measured gaps (gap / elapsed; gap / MAD of the others), tests/fixtures/straggler/
# noise_runs.tsv:
# - 14 balanced 4-rank runs of tests/fixtures/straggler/dp_steps.c on a loaded 2-core VM (4
#   kept as fixtures, 10 more measured): gap at most 0.016 s, 0.2-1.2% of elapsed (0.4-3.2
#   MADs: with 4 ranks the spread alone does not tell noise from a straggler; the share does);
# - the same with one rank 3 ms slower per 40 ms step (22 steps): 3.0-5.0% and 5.2-13 MADs;
#   with 15 ms (delayed_r2): 0.33 s, 16.8%, 8.3 MADs;
# - real jobs without a lone slow rank: ThetaGPU cpu8 176429 (a continuous spread: 1.4%, 2.1
#   MADs), ThetaGPU gpu8 2475362 (a continuous spread of 3.6-8.4 s: 10.8% but 3.0 MADs), the
#   Polaris/ThetaGPU NCCL jobs (MPI at start-up only: gaps of 0.00-0.02 s, 0.0%);
# - real jobs with one (or two) ranks well below all others: Theta knl32 19013 rank 0 (7.0%,
#   11.5 MADs, the others' extra time in 8-byte Allreduces), Theta knl16 75877 rank 0 (10.6%,
#   16 MADs), ThetaGPU gpu8 163698 ranks 4 and 0 (35% and 32%, 6.1 and 5.6 MADs), the 16-rank
#   job of alcfws_MPI_README_from_docs.md ranks 0 and 2 (8.0% and 7.7%, 7.3 and 7.0 MADs).
#: compute straggler: the gap must be at least this share of the job's elapsed time
COMPUTE_GAP_SHARE: float = 0.02
#: compute straggler: ... and at least this many median absolute deviations of the others
COMPUTE_GAP_MADS: float = 4.0
#: compute straggler: the others' median absolute deviation is at least this (s): mpitrace
#: prints 0.001 s, rank 0's table 0.01 s (so a rounded time is within 0.005 s)
COMPUTE_MAD_FLOOR_S: float = 0.005
#: compute straggler: ranks with an MPI time a job needs (a median and a spread of the others)
COMPUTE_MIN_RANKS: int = 3
#: compute straggler: where rank profiles show it, at least this share of the others' extra
#: MPI time (over the straggler's, routine by routine) must be in collectives
COLLECTIVE_SHARE: float = 0.5
#: waiting rank (the other side: one rank with far MORE MPI time than the others, which
#: hardly wait: it waits for them) uses the compute straggler's gap thresholds, and the
#: others' median MPI time must be at most this fraction of the rank's. Real jobs where the
#: rank with the most MPI time is only the top of a spread, and must not fire: ThetaGPU gpu8
#: 2475362 rank 7 (8.35 s vs a median of 5.46 s, 0.65), tests/fixtures/straggler/delayed_r2
#: rank 1 (1.07 s vs 0.896 s, 0.84: the others wait for rank 2 too); one idle rank:
#: tests/fixtures/mpip/idle_r5 (mpiP, rank 5 with no compute: 4.71 s, 98.4% of its time, vs
#: a median of 0.648 s, 13.6%: 0.14; issue 29's report: 75.65% vs 0.4-1.6%, about 0.015)
WAITING_RATIO: float = 0.5

# -- collective straggler (PyTorch profiler traces) -----------------------------------------
#
# In synchronous data parallelism the other ranks wait for a slow rank inside the collective
# (an all-reduce of gradients cannot finish before every rank has joined), so the slow rank's
# collectives are the shortest. A rank is a collective straggler when its communication time
# (union of its collective kernels, or of gloo:* work on a CPU trace) is below the median of
# the other ranks' by at least COLLECTIVE_GAP_SHARE of its run's profiled span, and at most
# COLLECTIVE_RATIO of that median. Measured (tests/fixtures/torchtrace, 2 ranks, 3 steps,
# gloo on a shared 2-core VM): rank 1 sleeping 50 ms per step: 4.6 ms vs 158.3 ms, a gap of
# 84% of the 183 ms span, ratio 0.03; balanced: 27.5 ms vs 28.2 ms (1.3% of the span, ratio
# 0.98).
#: collective straggler: the gap must be at least this share of the run's profiled span
COLLECTIVE_GAP_SHARE: float = 0.10
#: collective straggler: ... and the rank's communication at most this fraction of the others'
COLLECTIVE_RATIO: float = 0.5

# -- one rank named by several sources ---------------------------------------------------------
#: sources (compute straggler, negotiation straggler, throughput straggler) that must name one
#: rank of a run for one cross_source_straggler finding of severity critical
CROSS_SOURCES: int = 2

#: mpitrace: ranks spending more than this share of their elapsed time in MPI, on average over
#: the job's ranks (``communication.jobs.comm_share_mean``). Real jobs: Horovod on MPI with
#: CPU training 17% (ThetaGPU CPU, 8 ranks) to 81-87% (Theta KNL); NCCL jobs under 1%
COMM_SHARE: float = 0.25

#: throughput: the last third of an instance's steady steps slower than the first third by
#: more than this fraction (median against median) is a drift. Real logs drift by -5% to
#: +4% (tests/test_findings_rules15.py): noise stays well below
DRIFT_FRACTION: float = 0.10
#: throughput: an instance needs this many steady (after warm-up) figures to judge a drift
#: (thirds of at least 5: one slow step, a checkpoint, moves no median)
DRIFT_MIN_ROWS: int = 15

# -- low bus bandwidth (mpitrace): a job-internal reference, the hardware peak is unknown -----
#
# Per bin of ``communication.message_sizes`` (collectives only, bins with >= 10 ms), busbw is
# nccl-tests' bus bandwidth: algbw = bytes / time (the collective's buffer: mpitrace's bytes x
# n for Allgather(v) and Alltoall(v)), busbw = algbw x 2(n-1)/n for Allreduce, (n-1)/n for
# Allgather, ReduceScatter and Alltoall, 1 for Bcast and Reduce: the figure comparable across
# collectives and sizes. mpitrace's times include waiting for late ranks, so every busbw is a
# lower bound and the job's best bin is the closest to what its network reached. A bin is
# large when all its messages are more than LARGE_BYTES (bandwidth-bound, not latency-bound),
# and it counts when it holds at least BUSBW_MIN_SHARE of the job's time in the table (a few
# start-up broadcasts of the weights, which also hold the ranks' start-up skew, are no
# finding). Measured ratios (a large bin's busbw / the job's best bin's, bins that count):
# - real jobs (shared/realdata/mpitrace): Theta KNL 32 ranks 19013 (and the 2021 README's copy)
#   MPI_Allreduce 2-4 MiB 0.83, 16-32 MiB 1.00, 32-64 MiB 0.94; Theta KNL 16 ranks 75877
#   0.66, 1.00, 0.92; ThetaGPU CPU 8 ranks 176429 0.87, 1.00, 0.98; the 16-rank job of
#   alcfws_MPI_README_from_docs.md: Allreduce 4-8 MiB 0.57 of a 3-call 4-8 MiB Bcast. The
#   start-up Bcasts left out by the share: 0.28-0.94. The ThetaGPU guide's profile
#   (tests/fixtures/mpitrace/seed_001_thetagpu_guide_from_docs.txt, 8 ranks): 50 Allreduces
#   of 4-8 MiB at 0.034 GB/s, 0.048 of its 16-32 MiB bin's 0.716 GB/s, and 32-64 MiB at 0.29;
# - this project's runs of tests/fixtures/busbw/allreduce_sizes.c on a shared 2-core VM
#   (shared memory, no network): with no delay (2 and 4 ranks, 4 runs,
#   tests/fixtures/busbw/noise_runs.tsv), 0.16-0.95 from run to run (memory bandwidth under
#   other jobs' load: single-node runs on a loaded VM are no reference for a network); with
#   rank 3 arriving 20 ms late at each allreduce of more than 1 MiB (the kept fixture
#   tests/fixtures/busbw/late_rank_r3): 4 MiB 0.17, 16 MiB 0.36.
# Half the best bin sits below the large bins of every real job but the guide's (0.57 and up)
# and above the guide's and the late-rank run's.
#: low_busbw: a large bin below this fraction of the job's best bin's busbw
BUSBW_FRACTION: float = 0.5
#: low_busbw: bins whose messages are all more than this many bytes are large
LARGE_BYTES: int = 1 << 20
#: low_busbw: a large bin counts when it holds at least this share of the job's time in the
#: message-size table
BUSBW_MIN_SHARE: float = 0.01

# below_system_busbw: a run with nccl-tests output beside the job's evidence (an mpitrace
# profile, PyTorch profiler traces) holds what this system's collectives reach when nothing
# else runs; a large bin of the job's collectives (all messages > LARGE_BYTES) with at least
# SYSTEM_MIN_SHARE of the job's collective time (a few start-up broadcasts are no finding)
# below SYSTEM_BUSBW_FRACTION of the test's busbw at that size is a finding. Real pairs:
# HTA's A100 NCCL 2-rank trace beside superbench's 8-GPU A100 all_reduce_perf (the test's
# system is like the trace's, not the same machine): 8-32 MB allreduce kernels at 2.1-8.7
# GB/s, 2-6% of the test's 90-150 GB/s (each kernel's time holds its wait for the other
# rank). Half the system's figure leaves room for the job's sizes being busier than the
# test's (other traffic, a second communicator) and still flags a job an order off.
#: below_system_busbw: a large bin below this fraction of the system's nccl-tests busbw
SYSTEM_BUSBW_FRACTION: float = 0.5
#: below_system_busbw: a bin counts when it holds at least this share of the job's
#: collective time (in one kind of evidence)
SYSTEM_MIN_SHARE: float = 0.05

# -- long warm-up (training logs) ----------------------------------------------------------------
#
# Per training series and instance printed per step (``analysis.throughput.warmup_length``):
# the warm-up is the figures before the first that reaches WARMUP_REACH of the steady rate
# (the median of the second half); it is long when its steps are more than
# LONG_WARMUP_SHARE of the steps the series covers, with at least LONG_WARMUP_MIN_ROWS
# figures. Steps, not the time estimate: one first interval that holds a graph build makes the
# estimated time share 51-94% in ordinary TF benchmark runs (shared/realdata/perrank), which
# is no warm-up that could be dropped. Measured step shares (series of >= 15 figures):
# - real logs (shared/realdata trainlog, perrank, scaling, nccl): 0% (DeepSpeed, Megatron,
#   dschat 736 steps, BLOOM), 2.1% (Megatron-DeepSpeed randomltd), 5.0% (TF benchmarks, 18
#   and 4 ranks: the first of 20 intervals), 11.9% (the Lightning issue excerpt, which pastes
#   two runs into one bar); andrewor14_tf_keras_rank0_stderr.log: 58.2% (its rate rises from
#   36 to 9,000 examples/s over the run, reaching half the steady rate only at step 65 of 110);
# - generated logs (tests/fixtures/trainlog/generated): 0-1.0% (HF Trainer, Lightning tqdm and
#   rich bars, DDP, drift/steady).
#: :func:`analysis.throughput.warmup_length`: warm-up lasts until this share of the steady rate
WARMUP_REACH: float = thr.WARMUP_REACH
#: long_warmup: the warm-up's share of the steps above which it is long
LONG_WARMUP_SHARE: float = 0.25
#: long_warmup: figures a series needs to judge its warm-up
LONG_WARMUP_MIN_ROWS: int = 15


#: SambaNova: an instance whose tiles executed less than this share of the time on average
#: (``tiles.instances.exec_mean_pct``). Real instances training: 89.9-96.9%; the docs' PID
#: 49880 caught loading its program: 6.2%
LOW_EXEC_PCT: float = 50.0
#: SambaNova: an instance whose tiles spent more than this share of the time loading the
#: program or its arguments or checkpointing (``pload + aload + chkpt`` means). Real
#: training instances: 0.2-1.3%; PID 49880: 13.0%
LOAD_PCT: float = 10.0

# -- runs side by side (dptrace compare / dptrace scaling: :mod:`.runs`) --------------------

#: compare: the job throughput of the candidate this many percent below the base's is a
#: warning (below it, the change is reported as info). Repeated runs of one job on this
#: machine differ by under 1% (tests/fixtures/straggler: balanced .. balanced_4, 2,297 to
#: 2,317 images/s), a real regression by far more (the delayed rank: -35%)
THROUGHPUT_CHANGE_PCT: float = 5.0
#: compare: MPI (or Horovod collective) time per rank this many percent above the base's is
#: a warning. The balanced repeats differ by up to 10% (0.31-0.34 s); 25% is past that
COMM_CHANGE_PCT: float = 25.0
#: scaling: an efficiency below this (speedup over the ideal, as a fraction) is a warning.
#: 0.8 is the usual line of "scales well" in HPC scaling studies (weak scaling of
#: data-parallel training on a fast network reaches 0.9 and more)
SCALING_EFFICIENCY: float = 0.8


# -- overrides: `dptrace report --threshold KIND=VALUE`, `dptrace.findings(ds, thresholds=)` --

@dataclass(frozen=True)
class Threshold:
    """A rule's threshold a user may override: by the finding's ``kind``, in the unit of the
    findings table's ``threshold`` column (``scale`` turns it into the rule's argument
    ``param``: a % into a fraction)."""

    kind: str
    param: str
    default: float
    unit: str
    doc: str
    scale: float = 1.0

    def argument(self, value: float) -> float:
        return value * self.scale


#: every threshold that can be overridden, by kind (what ``--threshold`` accepts)
OVERRIDABLE: dict[str, Threshold] = {t.kind: t for t in (
    Threshold("throughput_straggler", "straggler", 100.0 * STRAGGLER_FRACTION, "%",
              "an instance this far below its series' median after warm-up is a straggler",
              scale=0.01),
    Threshold("small_message_allreduce", "share", 100.0 * SMALL_SHARE, "%",
              f"Allreduces of at most {SMALL_BYTES} bytes holding more than this share of a "
              "job's MPI time", scale=0.01),
    Threshold("comm_share_high", "share", 100.0 * COMM_SHARE, "%",
              "mean share of the ranks' elapsed time spent in MPI", scale=0.01),
    Threshold("throughput_drift", "drift", 100.0 * DRIFT_FRACTION, "%",
              "the last third of an instance's steady figures slower than the first third by "
              "this much", scale=0.01),
    Threshold("low_exec", "pct", LOW_EXEC_PCT, "%",
              "an instance's tiles executing less than this share of the time on average"),
    Threshold("load_overhead", "pct", LOAD_PCT, "%",
              "an instance's tiles loading program or arguments or checkpointing more than "
              "this share of the time"),
    Threshold("negotiation_straggler", "share", 100.0 * LAST_SHARE, "%",
              "share of a timeline's compared steady-state Horovod negotiations in which the "
              "others waited 1 ms or more for a rank",
              scale=0.01),
    Threshold("low_busbw", "fraction", 100.0 * BUSBW_FRACTION, "%",
              f"a bin of collectives of more than {LARGE_BYTES:,} bytes reaching less than "
              "this share of the bus bandwidth of the job's best bin", scale=0.01),
    Threshold("below_system_busbw", "fraction", 100.0 * SYSTEM_BUSBW_FRACTION, "%",
              f"a bin of the job's collectives of more than {LARGE_BYTES:,} bytes reaching "
              "less than this share of the busbw this system's nccl-tests measured at that "
              "size", scale=0.01),
    Threshold("long_warmup", "share", 100.0 * LONG_WARMUP_SHARE, "%",
              "the steps before a series first reaches half its steady rate, as a share of "
              "its steps", scale=0.01),
    Threshold("compute_straggler", "share", 100.0 * COMPUTE_GAP_SHARE, "%",
              "a rank this share of the job's elapsed time below the other ranks' median MPI "
              f"time (and >= {COMPUTE_GAP_MADS:g} median absolute deviations of theirs)",
              scale=0.01),
    Threshold("throughput_change", "drop_pct", THROUGHPUT_CHANGE_PCT, "%",
              "compare: the candidate's job throughput this far below the base's"),
    Threshold("comm_time_change", "grow_pct", COMM_CHANGE_PCT, "%",
              "compare: MPI (or Horovod collective) time per rank this far above the base's"),
    Threshold("scaling_efficiency", "floor", 100.0 * SCALING_EFFICIENCY, "%",
              "scaling: an efficiency (speedup over the ideal) below this", scale=0.01),
)}


def parse_overrides(items: Iterable[str] | Mapping[str, float]) -> dict[str, float]:
    """``KIND=VALUE`` texts (or a mapping) checked against :data:`OVERRIDABLE`: the values by
    kind. Raises ValueError naming what is wrong and what is accepted."""
    pairs: list[tuple[str, object]] = []
    if isinstance(items, Mapping):
        pairs = [(str(k), v) for k, v in items.items()]
    else:
        for text in items:
            key, sep, given = str(text).partition("=")
            if not sep:
                raise ValueError(f"--threshold {text!r}: expected KIND=VALUE, e.g. "
                                 "throughput_straggler=10")
            pairs.append((key.strip(), given.strip()))
    out: dict[str, float] = {}
    for kind, value in pairs:
        if kind not in OVERRIDABLE:
            raise ValueError(f"no threshold named {kind!r}; these can be set: "
                             + ", ".join(sorted(OVERRIDABLE)))
        try:
            number = float(value)  # type: ignore[arg-type]  # checked: any text or number
        except (TypeError, ValueError):
            raise ValueError(f"threshold {kind}={value!r} is not a number") from None
        if not math.isfinite(number) or number < 0:
            raise ValueError(f"threshold {kind}={value!r} must be a finite number >= 0 "
                             f"({OVERRIDABLE[kind].unit})")
        out[kind] = number
    return out

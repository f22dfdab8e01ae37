"""The MPI tables ``dptrace compare`` and ``scaling`` match across runs (mpitrace, and mpiP's
rows in the same tables): per job, per size bin, per routine, per rank."""

from __future__ import annotations

from collections.abc import Mapping

from ...analysis.compare import Comm, Measure, Metric, S, Wide, register_measures
from ...analysis.messages import SMALL_BYTES
from ...reports.fmt import bin_label


def _bin(k: Mapping[str, object]) -> str:
    """``MPI_Allreduce 4-8 MiB``: a routine's power-of-two size bin as a range of sizes."""
    try:
        return f"{k['routine']} {bin_label(int(k['bin']), int(k['bin_hi_bytes']))}"  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return f"{k['routine']} bin {k['bin']}"


#: a largest change in a collective of at most :data:`SMALL_BYTES`: waiting, not sending
_SMALL_HINT = ("a small collective that grows is waiting, not sending: look for a rank that "
               "arrives late (dptrace report on the candidate names a straggler)")
#: a largest change in a routine or a larger size bin: bandwidth
_LARGE_HINT = ("a large-message collective that grows is bandwidth: check the network, the "
               "bucket or fusion size (DDP bucket_cap_mb, HOROVOD_FUSION_THRESHOLD)")


def small_bin(key: str) -> bool:
    """A size bin's key (``MPI_Allreduce 5-8 B``) whose largest size is a small message."""
    tail = key.rsplit(" ", 2)
    if len(tail) < 2 or tail[-1] != "B":
        return False
    try:
        return int(tail[-2].split("-")[-1]) <= SMALL_BYTES
    except ValueError:
        return False


register_measures(
    Measure("communication.jobs", (), (
        Metric("elapsed_max_s", "max", "s", None), Metric("comm_mean_s", "sum", "s", S),
        Metric("comm_max_s", "max", "s"), Metric("comm_share_mean", "mean", "share"),
        Metric("comm_imbalance", "max", "x")), lambda k: "MPI per rank", order=10,
        comm=Comm("comm_mean_s", "elapsed_max_s", "comm_share_mean", "MPI time per rank",
                  "MPI", "mpitrace")),
    Measure("message_sizes.bins", ("routine", "bin", "bin_hi_bytes"), (
        Metric("time_s_per_rank", "sum", "s", S), Metric("calls_per_rank", "sum", "calls"),
        Metric("busbw_bytes_per_s", "mean", "B/s")), _bin, order=20,
        family="mpi", family_rank=0,
        wide=(Wide("message_sizes", "time_s_per_rank", views=("compare", "scaling"),
                   order=30),),
        hint=lambda key: _SMALL_HINT if small_bin(key) else _LARGE_HINT),
    Measure("communication.routines", ("routine",), (
        Metric("time_s_per_rank", "sum", "s", S), Metric("calls_per_rank", "sum", "calls"),
        Metric("bytes_per_rank", "sum", "B"), Metric("time_share", "mean", "share")),
        lambda k: str(k["routine"]), order=30, family="mpi", family_rank=1,
        wide=(Wide("routines", "time_s_per_rank", order=20),), growth="time_s_per_rank",
        hint=lambda key: _LARGE_HINT),
    Measure("communication.ranks", ("rank",), (
        Metric("comm_time_s", "sum", "s", S), Metric("elapsed_s", "max", "s"),
        Metric("comm_share", "mean", "share")), lambda k: f"rank {k['rank']}", order=40,
        wide=(Wide("ranks", "comm_time_s", views=("compare",), order=10),)),
)

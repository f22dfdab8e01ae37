"""The MPI tables ``dptrace compare`` and ``scaling`` match across runs (mpitrace, and mpiP's
rows in the same tables): per job, per size bin, per routine, per rank."""

from __future__ import annotations

from collections.abc import Mapping

from ...analysis.compare import Measure, Metric, S, register_measures
from ...reports.fmt import bin_label


def _bin(k: Mapping[str, object]) -> str:
    """``MPI_Allreduce 4-8 MiB``: a routine's power-of-two size bin as a range of sizes."""
    try:
        return f"{k['routine']} {bin_label(int(k['bin']), int(k['bin_hi_bytes']))}"  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return f"{k['routine']} bin {k['bin']}"


register_measures(
    Measure("communication.jobs", (), (
        Metric("elapsed_max_s", "max", "s", None), Metric("comm_mean_s", "sum", "s", S),
        Metric("comm_max_s", "max", "s"), Metric("comm_share_mean", "mean", "share"),
        Metric("comm_imbalance", "max", "x")), lambda k: "MPI per rank", order=10),
    Measure("message_sizes.bins", ("routine", "bin", "bin_hi_bytes"), (
        Metric("time_s_per_rank", "sum", "s", S), Metric("calls_per_rank", "sum", "calls"),
        Metric("busbw_bytes_per_s", "mean", "B/s")), _bin, order=20,
        family="mpi", family_rank=0),
    Measure("communication.routines", ("routine",), (
        Metric("time_s_per_rank", "sum", "s", S), Metric("calls_per_rank", "sum", "calls"),
        Metric("bytes_per_rank", "sum", "B"), Metric("time_share", "mean", "share")),
        lambda k: str(k["routine"]), order=30, family="mpi", family_rank=1),
    Measure("communication.ranks", ("rank",), (
        Metric("comm_time_s", "sum", "s", S), Metric("elapsed_s", "max", "s"),
        Metric("comm_share", "mean", "share")), lambda k: f"rank {k['rank']}", order=40),
)

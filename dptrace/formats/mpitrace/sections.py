"""mpitrace sections: communication per job, and message sizes per collective.

Both appear only when the Dataset has mpitrace tables; mpiP reports fill the same
``mpi_ranks`` and ``mpi_routines`` (not ``mpi_messages``), so the communication section is
theirs too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ... import analyses
from ...dataset import Dataset
from ...reports.model import Section
from ...reports.registry import SectionSpec, register_section
from . import communication as comm


def build_communication(ds: Dataset, opts: Mapping[str, Any]) -> Section | None:
    ranks, routines = ds["mpi_ranks"], ds["mpi_routines"]
    if ranks.empty and routines.empty:
        return None
    a = analyses.of(ds, opts)
    rt = a["communication.ranks"]
    if rt is None:   # mpiP's routines without its task rows
        rt = comm.rank_times(ranks)
        jobs = comm.job_summary(rt, ds["mpi_jobs"])
        top = comm.top_routines(routines, n=None)
    else:
        jobs, top = a["communication.jobs"], a["communication.routines"]
    small = a["communication.small_messages"]
    return Section(
        COMMUNICATION.name, COMMUNICATION.title,
        "Per job: time in MPI per rank (comm) against its elapsed time (an mpiP report: "
        "MPITime against AppTime); min/median/max ranks as mpitrace picks them; COV = "
        "std/mean and imbalance = max/mean of comm over the ranks listed. Routine totals cover "
        "the ranks that wrote a profile (an mpiP report's rows of every rank count them all). "
        "MPI times include waiting at collectives: a high share often means imbalance "
        "elsewhere.",
        {"jobs": jobs, "ranks": rt, "routines": top,
         "small_messages": comm.small_messages(ds["mpi_messages"], routines)
         if small is None else small},
    )


def build_message_sizes(ds: Dataset, opts: Mapping[str, Any]) -> Section | None:
    messages = ds["mpi_messages"]
    if messages.empty:
        return None
    return Section(
        MESSAGE_SIZES.name, MESSAGE_SIZES.title,
        "Power-of-two size bins (bin k holds sizes above the lower bound up to the upper), "
        "summed over the ranks with a profile. Bandwidth is an estimate in nccl-tests terms "
        "(algbw = size/time; busbw = algbw x 2(n-1)/n for Allreduce, (n-1)/n for Allgather, "
        "ReduceScatter and Alltoall, 1 for Bcast and Reduce); times include waiting, so it is "
        "a lower bound. Bins with under 10 ms get none (mpitrace prints ms).",
        {"bins": analyses.of(ds, opts)["communication.message_sizes"]},
    )


COMMUNICATION = register_section(SectionSpec(
    "communication", "Communication (mpitrace, mpiP)", order=30, build=build_communication,
    figures="dptrace.formats.mpitrace.figures:communication_figures",
    terminal="dptrace.formats.mpitrace.terminal:draw_communication"))
MESSAGE_SIZES = register_section(SectionSpec(
    "message_sizes", "Message sizes per collective (mpitrace)", order=40,
    build=build_message_sizes, figures="dptrace.formats.mpitrace.figures:message_size_figures",
    terminal="dptrace.formats.mpitrace.terminal:draw_message_sizes"))

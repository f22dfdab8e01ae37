"""The mpiP callsites section: per job, the callsites holding the most MPI time, with where
in the program each call is. Its ranks and routines are in the communication section (the
mpitrace package's, which reads ``mpi_ranks`` and ``mpi_routines`` of both tools)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...dataset import Dataset
from ...reports.model import Section
from ...reports.registry import SectionSpec, register_section
from ..mpitrace import communication as comm

#: callsites listed per job (all are in --json and the exports via mpi_callsites)
TOP = 10


def build(ds: Dataset, opts: Mapping[str, Any]) -> Section | None:
    sites = ds["mpi_callsites"]
    if sites.empty:
        return None
    return Section(
        SPEC.name, SPEC.title,
        f"Per mpiP report, the {TOP} callsites with the most MPI time, summed over the ranks "
        "(a concise report: over the tasks it counts). Where: the file:line mpiP looked up, "
        "or the return address it could not name (often other ranks' copies of the same "
        "call). mpiP prints 3-4 significant digits; times include waiting at collectives.",
        {"callsites": comm.top_callsites(sites, n=TOP)},
    )


def facts(section: Section) -> dict[str, str]:
    t = section.tables["callsites"]
    return {"mpiP": f"{t['site'].count()} top callsite(s) listed"}


SPEC = register_section(SectionSpec(
    "mpi_callsites", "MPI callsites (mpiP)", order=35, build=build,
    figures="dptrace.formats.mpip.figures:callsite_figures",
    terminal="dptrace.formats.mpip.terminal:draw_callsites", facts=facts))

"""The NCCL section: per run, the network NCCL chose between nodes and on how many processes,
the transports and GPUDirect RDMA of its channels, its warnings, errors and timeouts; the
processes one by one; the NCCL settings and layout the log states."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ... import analyses
from ...dataset import Dataset
from ...reports.model import Section
from ...reports.registry import SectionSpec, register_section
from . import compute as nccl


def build(ds: Dataset, opts: Mapping[str, Any]) -> Section | None:
    setup, events, env = ds["nccl_setup"], ds["nccl_events"], ds["nccl_env"]
    if setup.empty and events.empty:
        return None
    return Section(
        SPEC.name, SPEC.title,
        "What NCCL set up, from its NCCL_DEBUG=INFO lines: the network it chose for traffic "
        "between nodes (IB, a plugin such as AWS Libfabric, or TCP sockets), the transports "
        "of its channels (via NET/..., P2P, SHM) and whether they use GPUDirect RDMA; then "
        "its warnings, errors and collective timeouts. Often only some processes print: "
        "the counts are of the processes that did.",
        {"overview": analyses.of(ds, opts)["nccl.overview"],   # (the findings' own)
         "processes": nccl.processes(setup),
         "events": events.reset_index(drop=True),
         "settings": env.reset_index(drop=True)},
    )


def facts(section: Section) -> dict[str, str]:
    o = section.tables["overview"]
    nets = "; ".join(str(v) for v in o["networks"].dropna().tolist())
    return {"NCCL": nets or "network not printed"}


SPEC = register_section(SectionSpec(
    "nccl", "NCCL setup", order=54, build=build,
    figures="dptrace.formats.nccl.figures:nccl_figures",
    terminal="dptrace.formats.nccl.terminal:draw_nccl", facts=facts))

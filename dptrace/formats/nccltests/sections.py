"""The NCCL tests section: per test, bus bandwidth by message size, its peak and where it is
reached, the average the test printed, ranks and hosts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ... import analyses
from ...dataset import Dataset
from ...reports.model import Section
from ...reports.registry import SectionSpec, register_section
from . import compute as nt


def build(ds: Dataset, opts: Mapping[str, Any]) -> Section | None:
    rows, summary = ds["nccl_tests"], ds["nccl_tests_summary"]
    if rows.empty:
        return None
    tables = {"tests": nt.overview(rows, summary), "busbw": nt.curve(rows)}
    jvs = _job_vs_system(ds, opts)
    if not jvs.empty:
        tables["job_vs_system"] = jvs
    return Section(
        SPEC.name, SPEC.title,
        "nccl-tests measure the bus bandwidth (busbw) a collective reaches on this system at "
        "each message size, out of place and in place; busbw is comparable across rank "
        "counts. Peak: the highest busbw printed and at which size; avg: the test's own "
        "'# Avg bus bandwidth' line (the mean over every size, small ones included)."
        + (" The job's own collectives in the same run (mpitrace, PyTorch profiler traces) "
           "are placed against the test's out-of-place busbw at their size; their times "
           "include waiting for late ranks." if "job_vs_system" in tables else ""),
        tables,
    )


def _job_vs_system(ds: Dataset, opts: Mapping[str, Any]) -> pd.DataFrame:
    """Each run's collectives against its own nccl-tests (the table the findings judge)."""
    if ds["mpi_messages"].empty and ds["torch_events"].empty:
        return pd.DataFrame()
    parts = [t for run in analyses.of(ds, opts).of_runs().values()
             if (t := run["nccltests.job_vs_system"]) is not None and not t.empty]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def facts(section: Section) -> dict[str, str]:
    o = section.tables["tests"]
    peak = o["peak_busbw_gbps"].max()
    best = f", peak busbw {peak:.1f} GB/s" if pd.notna(peak) else ""
    return {"nccl-tests": f"{len(o)} test(s){best}"}


SPEC = register_section(SectionSpec(
    "nccl_tests", "NCCL tests", order=55, build=build,
    figures="dptrace.formats.nccltests.figures:nccl_tests_figures",
    terminal="dptrace.formats.nccltests.terminal:draw_nccl_tests", facts=facts))

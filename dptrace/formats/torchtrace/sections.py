"""The PyTorch profiler section: per rank, where the profiled time went (computation,
communication, their overlap, exposed communication, idle), step times and communication
per collective and size."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...dataset import Dataset
from ...reports.model import Section
from ...reports.registry import SectionSpec, register_section
from . import compute as tt


def build(ds: Dataset, opts: Mapping[str, Any]) -> Section | None:
    events = ds["torch_events"]
    if events.empty:
        return None
    return Section(
        SPEC.name, SPEC.title,
        "Per rank (one PyTorch profiler trace each), as HolisticTraceAnalysis defines them: "
        "the span runs from the first GPU kernel to the last (CPU traces: CPU ops and gloo "
        "collectives); computation is the time a compute kernel runs, communication the "
        "time an NCCL kernel runs, overlap the time both run (overlap % is of "
        "communication); exposed communication runs with no computation beside it; idle is "
        "the span with nothing running. A rank whose collectives are much shorter than the "
        "others' is the one they wait for.",
        {"ranks": tt.breakdown(events), "steps": tt.steps(events),
         "collectives": tt.collectives(events)},
    )


def facts(section: Section) -> dict[str, str]:
    ranks = section.tables["ranks"]
    return {"PyTorch profiler": f"{len(ranks)} trace(s)"}


SPEC = register_section(SectionSpec(
    "torch_profile", "PyTorch profiler", order=57, build=build,
    figures="dptrace.formats.torchtrace.figures:torch_figures",
    terminal="dptrace.formats.torchtrace.terminal:draw_torch_profile", facts=facts))

"""The Inputs section: one row per input file, what was detected and how it went."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...dataset import Dataset
from ..model import Section
from ..registry import SectionSpec, register_section


def build(ds: Dataset, opts: Mapping[str, Any]) -> Section:
    return Section(
        SPEC.name, SPEC.title,
        "One row per input file: the format detected from its content, the rows it gave, "
        "and its status (ok; partial: part skipped; empty: nothing recognised; "
        "unknown/failed: skipped; skipped: a file in a directory that no format recognises, "
        "noted once and not counted in the exit code).",
        {"sources": ds.sources, "runs": ds.runs},
    )


SPEC = register_section(SectionSpec(
    "inputs", "Inputs", order=10, build=build, views=("report", "compare", "scaling"),
    terminal="dptrace.reports.terminal.inputs:draw_inputs"))

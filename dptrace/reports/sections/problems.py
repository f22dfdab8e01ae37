"""The Problems section: what was skipped or looked suspicious, with file and line."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...dataset import Dataset
from ..model import Section
from ..registry import SectionSpec, register_section


def build(ds: Dataset, opts: Mapping[str, Any]) -> Section | None:
    if ds.problems.empty:
        return None
    return Section(
        SPEC.name, SPEC.title,
        "What was skipped (error) or looked suspicious (warning), with file and line.",
        {"problems": ds.problems},
    )


SPEC = register_section(SectionSpec(
    "problems", "Problems", order=90, build=build, views=("report", "compare", "scaling"),
    terminal="dptrace.reports.terminal.problems:draw_problems"))

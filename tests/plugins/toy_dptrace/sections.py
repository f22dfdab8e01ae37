"""The toy format's report section."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dptrace import analyses
from dptrace.dataset import Dataset
from dptrace.reports.model import Section
from dptrace.reports.registry import SectionSpec, register_section


def build(ds: Dataset, opts: Mapping[str, Any]) -> Section | None:
    waits = analyses.of(ds, opts)["toy.waits"]
    if waits is None:
        return None
    return Section(SPEC.name, SPEC.title, "Busy and waiting seconds per rank.",
                   {"ranks": waits})


SPEC = register_section(SectionSpec("toy", "Toy profile", order=900, build=build))

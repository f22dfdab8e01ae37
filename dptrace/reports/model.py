"""The report model: a declarative list of sections built from a Dataset.

Each section has a name, a title, a caption that says how to read it, and its data
tables (analysis results). Every face (terminal, JSON, HTML) renders the same model;
a section appears only when its data exists.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from ..analysis import throughput as thr
from ..dataset import Dataset


@dataclass
class Section:
    """One part of the report: what it is called, how to read it, and its tables."""

    name: str
    title: str
    caption: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)


@dataclass
class Report:
    """All sections for one Dataset, in display order."""

    dataset: Dataset
    sections: list[Section]

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)


SectionFn = Callable[[Dataset, dict], "Section | None"]


def inputs_section(ds: Dataset, opts: dict) -> Section:
    return Section(
        "inputs", "Inputs",
        "One row per input file: the format detected from its content, the rows it gave, "
        "and its status (ok; partial: part skipped; empty: nothing recognised; "
        "unknown/failed: skipped).",
        {"sources": ds.sources},
    )


def throughput_section(ds: Dataset, opts: dict) -> Section | None:
    tp = ds["throughput"]
    if tp.empty:
        return None
    fraction = opts.get("warmup", thr.WARMUP_FRACTION)
    return Section(
        "throughput", "Throughput",
        "Per series (one kind of throughput line in one log): the value per instance after "
        f"warm-up (first {fraction:.0%} of each instance's steps dropped), and the job figure. "
        "Per-instance and per-device rates are summed; lines that already cover the whole job "
        "(scope global) are never summed again. 'mean' is the SambaNova convention.",
        {
            "summary": thr.throughput_summary(tp, fraction),
            "instances": thr.per_instance(tp, fraction),
        },
    )


def problems_section(ds: Dataset, opts: dict) -> Section | None:
    if ds.problems.empty:
        return None
    return Section(
        "problems", "Problems",
        "What was skipped (error) or looked suspicious (warning), with file and line.",
        {"problems": ds.problems},
    )


def _sections() -> list[SectionFn]:
    from .mpi_sections import communication_section, message_sizes_section
    from .tiles_sections import tiles_section

    return [inputs_section, throughput_section, communication_section, message_sizes_section,
            tiles_section, problems_section]


SECTIONS: list[SectionFn] = _sections()


def build(ds: Dataset, **opts: object) -> Report:
    """Run every section function on ``ds``; keep the sections that have data."""
    sections = [s for fn in SECTIONS if (s := fn(ds, opts)) is not None]
    return Report(ds, sections)

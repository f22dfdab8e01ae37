"""The Findings section: what to look at first, from every rule of :mod:`dptrace.findings`.

It comes first in every face (terminal, HTML, JSON: ``sections.findings.tables.findings``)
and is always there: "no findings" is an answer too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...dataset import Dataset
from ...findings import build as build_findings
from ..model import Section
from ..registry import SectionSpec, register_section

CAPTION = (
    "What to look at first: every check dptrace makes (stragglers, small-message Allreduces, "
    "idle tiles, files that disagree, inputs cut short), most severe first. critical: a number "
    "in this report may be wrong; warning: worth a look before trusting or tuning; info: "
    "context for reading the numbers. The evidence of each finding (the report table and rows "
    "behind it) is in --json and the HTML.")


def build(ds: Dataset, opts: Mapping[str, Any]) -> Section:
    """The Findings section of ``ds`` (``opts``: ``warmup``, as for the throughput section)."""
    return Section(SPEC.name, SPEC.title, CAPTION, {"findings": build_findings(ds, **opts)})


SPEC = register_section(SectionSpec(
    "findings", "Findings", order=5, build=build,
    terminal="dptrace.reports.terminal.findings:draw_findings"))

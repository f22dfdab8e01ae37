"""The Findings section: what to look at first, from every rule of :mod:`dptrace.findings`.

It comes first in every face (terminal, HTML, JSON: ``sections.findings.tables.findings``)
and is always there: "no findings" is an answer too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ... import analyses
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


CAPTIONS = {
    "compare": "What changed from the base run to the candidate, most severe first: the job "
    "throughput, the largest single change in time and the communication time against the "
    "time outside it. Each finding links to its row of the comparison.",
    "scaling": "How the job scales, most severe first: runs that got slower with more "
    "workers, efficiency below the threshold with the cost that grew most, runs that lack "
    "what scaling needs. Each finding links to its row of the scaling table.",
}


def build(ds: Dataset, opts: Mapping[str, Any]) -> Section:
    """The Findings section of ``ds`` (``opts``: ``warmup``, as for the throughput section;
    ``thresholds``). In the compare and scaling views: the findings about the runs side by
    side (:mod:`dptrace.findings.runs`), from the view's own section."""
    view = opts.get("view", "report")
    if view == "report":
        found = build_findings(analyses.of(ds, opts))
    else:
        from . import runs

        found = runs.findings(ds, opts)
    return Section(SPEC.name, SPEC.title, CAPTIONS.get(view, CAPTION), {"findings": found})


SPEC = register_section(SectionSpec(
    "findings", "Findings", order=5, build=build, views=("report", "compare", "scaling"),
    terminal="dptrace.reports.terminal.findings:draw_findings"))

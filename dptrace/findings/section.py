"""The Findings section of the report: the ``findings`` table, built by :func:`build`.

Not yet in ``reports.model``'s list of sections: the section registry wires it in. Its
terminal drawer is :func:`dptrace.findings.terminal.draw`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..reports.model import Section
from . import build

if TYPE_CHECKING:
    from ..dataset import Dataset

TITLE = "Findings"
CAPTION = (
    "What to look at first: every check dptrace makes (stragglers, small-message Allreduces, "
    "idle tiles, files that disagree, inputs cut short), most severe first. critical: a number "
    "in this report may be wrong; warning: worth a look before trusting or tuning; info: "
    "context for reading the numbers. Evidence names the section table and rows behind each "
    "finding.")


def findings_section(ds: Dataset, opts: dict) -> Section:
    """The Findings section of ``ds`` (``opts`` as for every section: ``warmup``, ...).

    Always returned, also without findings: "no findings" is an answer. The table is
    ``findings`` (the schema's ``findings`` table)."""
    return Section("findings", TITLE, CAPTION, {"findings": build(ds, **opts)})

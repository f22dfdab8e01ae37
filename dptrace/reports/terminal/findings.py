"""The terminal face of the Findings section: one line per finding, most severe first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from ..model import Section

#: rich style of each severity's label
STYLES = {"critical": "bold red", "warning": "yellow", "info": "cyan"}


def _text(v: object) -> str:
    return "" if v is None or v is pd.NA or (isinstance(v, float) and v != v) else str(v)


def draw_findings(section: Section, opts: Mapping[str, Any] | None = None) -> RenderableType:
    """Title, caption, then per finding its severity (coloured) and message, with the hint
    dim beneath; one dim "no findings" line when there is none.

    Text goes in as :class:`rich.text.Text`, so a ``[`` in a file name is never markup.
    With several runs, each message starts with its run."""
    findings = section.tables["findings"]
    several = findings["run"].nunique() > 1
    head: list[RenderableType] = [Text(section.title, style="bold"),
                                  Text(section.caption, style="dim")]
    if findings.empty:
        return Group(*head, Text("no findings", style="dim"))
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")            # wraps under itself, never cut
    for r in findings.itertuples(index=False):
        sev = str(r.severity)
        body = Text(f"{_text(r.run)}: " if several else "", style="bold")
        body.append(_text(r.message))
        if _text(r.hint):   # the evidence (table and rows) is in --json and the HTML
            body.append("\n" + _text(r.hint), style="dim")
        grid.add_row(Text(sev, style=STYLES.get(sev, "")), body)
    return Group(*head, grid)

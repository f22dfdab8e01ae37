"""The rich drawer of the Inputs section: one row per input file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from rich.console import RenderableType
from rich.text import Text

from ..fit import KEY, PATH, TEXT, Col, FitTable, common_dir, fold
from ..fmt import fmt, text
from ..model import Section
from .generic import under

#: inputs table, when it does not fit (see :mod:`dptrace.reports.fit`): format, variant and
#: message wrap, then the variant is hidden, then the paths (relative to the directory all
#: inputs share, named once in the title) fold, then rows and format are hidden. An empty
#: variant or message column is left out.
INPUT_DROP = ("variant", fold("input"), "rows", "format")


def draw_inputs(section: Section, opts: Mapping[str, Any] | None = None) -> RenderableType:
    src = section.tables["sources"]
    prefix, names = common_dir(src["source"].astype(str))
    rows = [(name, _breakable(text(r.format)), _breakable(text(r.variant)), str(r.status),
             fmt(int(r.rows)) if pd.notna(r.rows) else "-", text(r.message))
            for name, r in zip(names, src.itertuples(index=False), strict=True)]
    cols = [Col("input", PATH), Col("format", TEXT), Col("variant", TEXT), Col("status", KEY),
            Col("rows"), Col("message", TEXT, floor=16)]
    keep = [k for k, col in enumerate(cols) if col.kind != TEXT or col.name == "format"
            or any(row[k] for row in rows)]
    table = FitTable([cols[k] for k in keep], [d for d in INPUT_DROP if d.removeprefix(
                         "fold:") in {cols[k].name for k in keep}],
                     title=under(section.title, prefix), caption=section.caption, boxed=True)
    styles = {"ok": "green", "partial": "yellow", "empty": "yellow", "skipped": "dim"}
    for row in rows:
        cells: list[str | Text] = list(row)
        cells[3] = Text(row[3], style=styles.get(row[3], "red"))
        table.add_row(*[cells[k] for k in keep])
    return table


def _breakable(value: str) -> str:
    """'sntilestat+trainlog' -> 'sntilestat + trainlog', so a narrow column wraps it whole."""
    return value.replace("+", " + ")

"""The rich drawer of the Problems section: where, how bad, what."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from rich.console import RenderableType
from rich.text import Text

from ..fit import KEY, PATH, TEXT, Col, FitTable, common_dir
from ..fmt import text
from ..model import Section
from .generic import under

_SEVERITY_STYLE = {"error": "red", "warning": "yellow", "info": "dim"}


def draw_problems(section: Section, opts: Mapping[str, Any] | None = None) -> RenderableType:
    probs = section.tables["problems"]
    prefix, names = common_dir(probs["source"].map(text))
    table = FitTable([Col("where", PATH), Col("severity", KEY), Col("message", TEXT, floor=16)],
                     title=under(section.title, prefix), caption=section.caption, boxed=True)
    for name, r in zip(names, probs.itertuples(index=False), strict=True):
        where = f"{name}:{r.line}" if pd.notna(r.line) else name
        table.add_row(where, Text(str(r.severity),
                                  style=_SEVERITY_STYLE.get(str(r.severity), "yellow")),
                      str(r.message))
    return table

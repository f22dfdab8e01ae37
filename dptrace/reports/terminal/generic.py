"""The drawer of a section that has none of its own: every table, identifiers whole."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from rich.console import Group, RenderableType
from rich.text import Text

from ..fit import KEY, NUM, PATH, TEXT, Col, FitTable, common_dir, fold
from ..fmt import fmt, text
from ..model import Section


def under(title: str, prefix: str) -> str:
    """'Inputs (under examples/data/)': the directory every path of the table is in, once."""
    return f"{title} (under {prefix})" if prefix else title


#: columns a section without its own drawer keeps whole (the rest give way from the right)
GENERIC_KEYS = ("source", "job", "run", "rank", "pid", "instance", "routine", "activity",
                "op", "tile", "xrdu", "rdu", "tensor", "name", "metric")


def draw_generic(section: Section, opts: Mapping[str, Any] | None = None) -> RenderableType:
    """A section without its own drawer: every table, identifiers whole, the rest giving way
    (a source path folds first, then columns are hidden from the right)."""
    parts: list[RenderableType] = [Text(section.title, style="bold")]
    for name, df in section.tables.items():
        cols = [Col(str(c), PATH if str(c) == "source" else KEY if str(c) in GENERIC_KEYS else
                    NUM if pd.api.types.is_numeric_dtype(df[c]) else TEXT) for c in df.columns]
        drop = [fold(c.name) for c in cols if c.kind == PATH]
        drop += [c.name for c in reversed(cols) if c.kind not in (KEY, PATH)]
        shown = df.head(50)
        prefix = ""
        if "source" in shown.columns:
            prefix, rel = common_dir(shown["source"].map(text))
            shown = shown.assign(source=rel)
        table = FitTable(cols, drop, title=under(name, prefix), boxed=True)
        for r in shown.itertuples(index=False):
            table.add_row(*[fmt(v) for v in r])
        parts.append(table)
    return Group(*parts)

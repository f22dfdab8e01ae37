"""Where a finding's evidence is in the report: its section, table and row.

A finding's evidence is structured (:class:`dptrace.findings.Evidence`): the findings
table's ``evidence_table`` (the table of each row, '; ' between the rows of a finding that
merges several sources) and ``evidence_key`` (JSON: one object of column values per row);
``evidence`` is the same as text for reading. Nothing here splits that text. The row is the
first whose columns equal every value as text (and whose ``run`` is the finding's, when
both have one). The HTML face links each finding to that row.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pandas as pd

#: a table's rows as the HTML writes them: id of the whole table, and of its i-th row
TABLE_ID = "t-{section}-{table}"
ROW_ID = "r-{section}-{table}-{row}"


def anchor(template: str, **parts: Any) -> str:
    """An element id from ``template``: characters other than letters, digits, '-' and '_'
    become '_' (ids of the page never hold text from an input)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", template.format(**parts))


def rows(table: Any, key: Any) -> list[tuple[str, dict[str, Any]]]:
    """The evidence rows of a finding, from its ``evidence_table`` and ``evidence_key``
    columns: (table, {column: value}) each; [] when they are missing or do not decode."""
    if not isinstance(table, str) or not table or not isinstance(key, str):
        return []
    names = table.split("; ")
    try:
        keys = json.loads(key)
    except ValueError:
        return []
    if not isinstance(keys, list) or len(keys) != len(names):
        return []
    return [(n, k if isinstance(k, dict) else {}) for n, k in zip(names, keys, strict=True)]


def of_finding(f: Any) -> list[tuple[str, dict[str, Any]]]:
    """The evidence rows of a finding: a :class:`~dptrace.findings.Finding` (its ``rows``)
    or a row of the findings table (its ``evidence_table`` and ``evidence_key``: a pandas
    row, a named tuple, a dict)."""
    found = getattr(f, "rows", None)
    if isinstance(found, tuple):
        return [(e.table, e.key_dict()) for e in found]
    if isinstance(f, (dict, pd.Series)):
        return rows(f.get("evidence_table"), f.get("evidence_key"))
    return rows(getattr(f, "evidence_table", None), getattr(f, "evidence_key", None))


def first(f: Any) -> tuple[str, dict[str, Any]]:
    """The first evidence row of a finding (``("", {})`` when it has none)."""
    found = of_finding(f)
    return found[0] if found else ("", {})


def text(table: str, key: dict[str, Any]) -> str:
    """An evidence row as the faces show it: ``'communication.ranks job=19013 rank=0'``."""
    return " ".join([table, *(f"{k}={v}" for k, v in key.items())])


def _text(value: Any) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return "None"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def locate(tables: dict[str, pd.DataFrame], name: str, wanted: dict[str, Any],
           run: Any = None) -> tuple[str, str, int | None] | None:
    """(section, table, row position or None) of the evidence row ``wanted`` of table
    ``name`` in the report's ``tables`` (keyed ``section.table``); None when it names no
    table of the report (an input table such as ``mpi_ranks``). The row is None when no row
    matches every value."""
    df = tables.get(name)
    if df is None or "." not in name:
        return None
    section, table = name.split(".", 1)
    hit = pd.Series(True, index=df.index)
    for col, value in wanted.items():
        if col not in df.columns:
            return section, table, None
        hit &= df[col].map(_text) == _text(value)
    if run is not None and not (isinstance(run, float) and run != run) and "run" in df.columns:
        same_run = df["run"].astype("object").astype(str) == str(run)
        if (hit & same_run).any():
            hit &= same_run
    where = hit.to_numpy().nonzero()[0]
    return section, table, (int(where[0]) if len(where) else None)

"""Where a finding's evidence is in the report: its section, table and row.

A finding's ``evidence`` reads ``'<section>.<table> key=value key=value ...'`` (see
:mod:`dptrace.findings.rules`). Values may hold spaces ('name=e2e samples_per_sec'), so the
text is split only before ``key=`` where ``key`` is a column of the named table. The row is
the first whose columns equal every value as text (and whose ``run`` is the finding's, when
both have one). The HTML face links each finding to that row.
"""

from __future__ import annotations

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


def parse(evidence: str, columns: list[str] | None = None) -> tuple[str, dict[str, str]]:
    """(table key, {column: value}) of an evidence text. With ``columns``, a value runs up
    to the next ``column=`` (it may hold spaces); without, up to the next space."""
    head, _, rest = str(evidence).strip().partition(" ")
    if not rest:
        return head, {}
    if columns:
        names = "|".join(re.escape(c) for c in sorted(columns, key=len, reverse=True))
        pieces = re.split(rf"(?:^| )(?=(?:{names})=)", rest)
    else:
        pieces = rest.split(" ")
    keys: dict[str, str] = {}
    for piece in pieces:
        key, sep, value = piece.partition("=")
        if sep and key:
            keys[key] = value
    return head, keys


def split_evidence(evidence: str, names: list[str]) -> list[str]:
    """The pieces of an evidence text that joins several sources with '; ' (a straggler
    named by the MPI profiles and the timeline), each ``table key=value ...``: split only
    where '; ' is followed by one of the table ``names`` and a space."""
    if not names:
        return [str(evidence)]
    alts = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return [p for p in re.split(rf"; (?=(?:{alts}) )", str(evidence).strip()) if p]


def _text(value: Any) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return "None"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def locate(tables: dict[str, pd.DataFrame], evidence: str, run: Any = None,
           ) -> tuple[str, str, int | None] | None:
    """(section, table, row position or None) of ``evidence`` in the report's ``tables``
    (keyed ``section.table``); None when it names no table of the report (an input table
    such as ``mpi_ranks``). The row is None when no row matches every value."""
    key = str(evidence).strip().split(" ", 1)[0]
    df = tables.get(key)
    if df is None or "." not in key:
        return None
    section, table = key.split(".", 1)
    _, wanted = parse(evidence, [str(c) for c in df.columns])
    hit = pd.Series(True, index=df.index)
    for col, value in wanted.items():
        if col not in df.columns:
            return section, table, None
        hit &= df[col].map(_text) == value
    if run is not None and not (isinstance(run, float) and run != run) and "run" in df.columns:
        same_run = df["run"].astype("object").astype(str) == str(run)
        if (hit & same_run).any():
            hit &= same_run
    where = hit.to_numpy().nonzero()[0]
    return section, table, (int(where[0]) if len(where) else None)

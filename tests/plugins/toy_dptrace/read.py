"""The toy format's reader: a bad line costs that line, with a problem naming it."""

from __future__ import annotations

import pandas as pd

from dptrace import schema
from dptrace.errors import Problem
from dptrace.registry import ParseResult
from dptrace.sources import Source

from .tables import TOY_RANKS


def parse(source: Source) -> ParseResult:
    problems: list[Problem] = []
    with source.buffer(problems) as raw:
        text = bytes(raw).decode("utf-8", "replace")
    rows = []
    for lineno, line in enumerate(text.splitlines(), 1):
        words = line.split()
        if lineno == 1 or not words:
            continue
        try:
            if words[0] != "rank" or words[2] != "busy_s" or words[4] != "wait_s":
                raise ValueError("not 'rank R busy_s X wait_s Y'")
            rows.append({"source": source.name, "rank": int(words[1]),
                         "busy_s": float(words[3]), "wait_s": float(words[5]),
                         "lineno": lineno})
        except (IndexError, ValueError) as exc:
            problems.append(Problem(source.name, f"line {lineno}: {exc}; the line is skipped",
                                    line=lineno, severity="error"))
    df = schema.conform(pd.DataFrame(rows), TOY_RANKS)
    return ParseResult({"toy_ranks": df} if rows else {}, problems)

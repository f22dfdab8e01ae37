"""JSON face of the report: the same sections as the terminal, machine-readable.

Top-level keys (documented in the README):
``dptrace_version``, ``exit_code``, ``sections`` (name -> {title, caption, tables}),
where each table is a list of records with the analysis' column names. Missing values
are ``null``; numbers are plain JSON numbers in the unit their column names.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

import numpy as np
import pandas as pd

from .. import __version__
from .model import Report


def to_dict(report: Report, exit_code: int) -> dict[str, Any]:
    """The report as plain Python data, ready for ``json.dumps``."""
    return {
        "dptrace_version": __version__,
        "exit_code": exit_code,
        "sections": {
            s.name: {
                "title": s.title,
                "caption": s.caption,
                "tables": {k: records(df) for k, df in s.tables.items()},
            }
            for s in report.sections
        },
    }


def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """DataFrame rows as dicts with JSON-safe scalars (NaN/NA -> None, numpy -> Python)."""
    cols = [str(c) for c in df.columns]
    return [{c: _scalar(v) for c, v in zip(cols, row, strict=True)}
            for row in df.itertuples(index=False, name=None)]


def _scalar(v: Any) -> Any:
    """JSON-safe: NaN/NA -> None, numpy -> Python, times as ISO 8601, durations in s."""
    if isinstance(v, np.datetime64 | np.timedelta64):
        v = pd.Timestamp(v) if isinstance(v, np.datetime64) else pd.Timedelta(v)
    elif isinstance(v, np.generic):
        v = v.item()
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, dt.timedelta):  # pandas Timedelta included
        return v.total_seconds()
    if isinstance(v, dt.date):  # pandas Timestamp included
        return v.isoformat()
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    return v


def dumps(report: Report, exit_code: int) -> str:
    return json.dumps(to_dict(report, exit_code), indent=2, ensure_ascii=False)

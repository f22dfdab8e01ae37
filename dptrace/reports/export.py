"""Exports: every table of a Dataset, one file per table, as CSV, Parquet or JSON.

Files are ``DIR/<table>.<ext>`` for each table with rows (``dptrace schema`` documents
them), plus ``sources``, ``problems``, ``runs`` (one row per run) and ``findings`` (what
the report says first: :func:`dptrace.findings`), these four even when empty. Column
names and dtypes are the schema's (``schema.conform`` already ran); CSV writes missing
values as empty fields, JSON as ``null`` (an array of records, timestamps in ISO 8601).
Parquet keeps the dtypes: each file declares its table's explicit Arrow schema
(:func:`dptrace.schema.arrow_schema`, written by :func:`dptrace.store.write_frame`), so an
empty table or an all-null column is typed too, and pandas reads the pandas dtypes back.

CSV cells of text that a spreadsheet would run as a formula (starting with ``=``, ``+``,
``-``, ``@``, tab or CR: OWASP's "CSV injection") get a leading ``'``, unless
``raw=True`` (``dptrace export --raw``); numbers are never changed.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from .. import store
from ..dataset import Dataset
from ..errors import DptraceError
from ..findings import build as build_findings
from .safe_text import FORMULA_START, csv_cell

FORMATS = ("csv", "parquet", "json")


def check_format(fmt: str) -> None:
    """Raise a one-line DptraceError when ``fmt`` is unknown or its library is missing."""
    if fmt not in FORMATS:
        raise DptraceError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt == "parquet" and importlib.util.find_spec("pyarrow") is None:
        raise DptraceError("Parquet export needs pyarrow, which is missing from this "
                           "installation: pip install pyarrow (or use --format csv or json)")


def tables(ds: Dataset, findings: pd.DataFrame | None = None, *, warmup: float = 0.1,
           thresholds: Mapping[str, float] | None = None) -> dict[str, pd.DataFrame]:
    """Every table to export, by name: the parsed tables, then sources, problems, runs and
    findings (``findings`` when given, else built from ``ds`` with ``warmup`` and
    ``thresholds``, as :func:`dptrace.findings` does)."""
    if findings is None:
        findings = build_findings(ds, warmup=warmup, thresholds=dict(thresholds or {}))
    return {**{name: ds[name] for name in ds.tables}, "sources": ds.sources,
            "problems": ds.problems, "runs": ds.runs, "findings": findings}


def check_directory(directory: str | Path) -> Path:
    """The export directory, created if needed; a one-line DptraceError when it names a
    file or cannot be made (checked before any input is read)."""
    out = Path(directory)
    if out.exists() and not out.is_dir():
        raise DptraceError(f"--to {directory}: exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DptraceError(f"--to {directory}: cannot create the directory "
                           f"({exc.strerror or exc})") from None
    return out


def export(ds: Dataset, directory: str | Path, fmt: str = "csv", *, raw: bool = False,
           findings: pd.DataFrame | None = None, warmup: float = 0.1,
           thresholds: Mapping[str, float] | None = None) -> list[Path]:
    """Write every table of ``ds`` (:func:`tables`: the findings included) to
    ``directory`` (created if needed); return the paths.

    ``raw``: write CSV text cells as they are (no ``'`` before formula-leading text).
    ``findings``: the findings table to write (a report's); by default built from ``ds``
    with ``warmup`` and ``thresholds`` (overrides by kind, already checked)."""
    check_format(fmt)
    out = check_directory(directory)
    found = tables(ds, findings, warmup=warmup, thresholds=thresholds)
    return [_write(df, out / f"{name}.{fmt}", fmt, raw, name) for name, df in found.items()]


def guard_formulas(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with :func:`csv_cell` applied to its text columns (the same frame when no cell
    starts like a formula)."""
    out = df
    for col in df.columns:
        s = df[col]
        is_cat = isinstance(s.dtype, pd.CategoricalDtype)
        values = s.cat.categories if is_cat else s
        if not (values.dtype == object or pd.api.types.is_string_dtype(values.dtype)):
            continue
        text = pd.Series(values).dropna()
        text = text[text.map(lambda v: isinstance(v, str))].astype(str)
        if not text.str.startswith(FORMULA_START).any():
            continue
        out = out if out is not df else df.copy()
        out[col] = s.astype(object).map(csv_cell, na_action="ignore")
    return out


def _write(df: pd.DataFrame, path: Path, fmt: str, raw: bool = False, table: str = "") -> Path:
    if fmt == "csv":
        (df if raw else guard_formulas(df)).to_csv(path, index=False)
    elif fmt == "parquet":
        store.write_frame(df, path, table or path.stem)
    else:
        text = df.to_json(orient="records", date_format="iso", force_ascii=False, indent=1)
        path.write_text(unescape_slashes(text or "[]"), encoding="utf-8")
    return path


#: pandas' JSON writer escapes every '/' as '\/' (valid JSON, but paths become unreadable);
#: an escaped slash is one preceded by an odd number of backslashes
_ESCAPED_SLASH = re.compile(r"(?<!\\)((?:\\\\)*)\\/")


def unescape_slashes(text: str) -> str:
    """``text`` (JSON from pandas) with ``\\/`` written as ``/``; ``\\\\/`` (a backslash,
    then a slash) is left alone."""
    return _ESCAPED_SLASH.sub(r"\1/", text)

"""Exports: every table of a Dataset, one file per table, as CSV, Parquet or JSON.

Files are ``DIR/<table>.<ext>`` for each table with rows (``dptrace schema`` documents
them), plus ``sources`` and ``problems``. Column names and dtypes are the schema's
(``schema.conform`` already ran); CSV writes missing values as empty fields, JSON as
``null`` (an array of records, timestamps in ISO 8601). Parquet keeps the dtypes and
uses pyarrow, a core dependency.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pandas as pd

from ..dataset import Dataset
from ..errors import DptraceError

FORMATS = ("csv", "parquet", "json")


def check_format(fmt: str) -> None:
    """Raise a one-line DptraceError when ``fmt`` is unknown or its library is missing."""
    if fmt not in FORMATS:
        raise DptraceError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt == "parquet" and importlib.util.find_spec("pyarrow") is None:
        raise DptraceError("Parquet export needs pyarrow, which is missing from this "
                           "installation: pip install pyarrow (or use --format csv or json)")


def tables(ds: Dataset) -> dict[str, pd.DataFrame]:
    """Every table to export, by name: the parsed tables, then sources and problems."""
    return {**{name: ds[name] for name in ds.tables}, "sources": ds.sources,
            "problems": ds.problems}


def export(ds: Dataset, directory: str | Path, fmt: str = "csv") -> list[Path]:
    """Write every table of ``ds`` to ``directory`` (created if needed); return the paths."""
    check_format(fmt)
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    return [_write(df, out / f"{name}.{fmt}", fmt) for name, df in tables(ds).items()]


def _write(df: pd.DataFrame, path: Path, fmt: str) -> Path:
    if fmt == "csv":
        df.to_csv(path, index=False)
    elif fmt == "parquet":
        df.to_parquet(path, index=False)
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

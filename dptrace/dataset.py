"""``Dataset``: tables parsed from a set of inputs, where they came from, what went wrong."""

from __future__ import annotations

import html
from collections.abc import Iterator, Mapping

import pandas as pd

from . import schema


class Dataset(Mapping[str, pd.DataFrame]):
    """Tables by name (``ds["throughput"]``), plus ``sources`` and ``problems`` DataFrames.

    ``ds.tables`` lists the tables that have rows. Asking for a known table that no input
    filled returns an empty frame with the schema's columns; an unknown name is a KeyError.
    """

    def __init__(self, tables: Mapping[str, pd.DataFrame], sources: pd.DataFrame,
                 problems: pd.DataFrame) -> None:
        self._tables = {k: v for k, v in tables.items() if len(v)}
        self.sources = sources
        self.problems = problems

    @property
    def tables(self) -> list[str]:
        """Names of the tables that have at least one row."""
        return list(self._tables)

    def __getitem__(self, name: str) -> pd.DataFrame:
        if name in self._tables:
            return self._tables[name]
        if name in schema.TABLES:
            return schema.TABLES[name].empty()
        raise KeyError(f"no table {name!r}; known tables: {', '.join(schema.TABLES)}")

    def __iter__(self) -> Iterator[str]:
        return iter(self._tables)

    def __len__(self) -> int:
        return len(self._tables)

    @property
    def skipped(self) -> bool:
        """True when some input, or part of one, was skipped. Files of a directory or glob
        that no format recognises (status ``skipped``, an ``info`` problem) do not count."""
        return bool((self.problems["severity"] == "error").any()) or bool(
            (~self.sources["status"].isin(("ok", "skipped"))).any()
        )

    def __repr__(self) -> str:
        tables = ", ".join(f"{k}[{len(v)}]" for k, v in self._tables.items()) or "no tables"
        return f"<Dataset {len(self.sources)} sources; {tables}; {len(self.problems)} problems>"

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{html.escape(k)}</td><td>{len(v)}</td></tr>" for k, v in self._tables.items()
        )
        # every cell comes from an input (file names, messages): pandas escapes them
        src = self.sources[["source", "format", "status", "rows"]].to_html(index=False,
                                                                             escape=True)
        probs = (
            self.problems.head(20).to_html(index=False, escape=True) if len(self.problems)
            else "<p>none</p>"
        )
        return (
            "<div class='dptrace-dataset'><h4>dptrace Dataset</h4>"
            f"<b>Sources</b>{src}<b>Tables</b><table><tr><th>table</th><th>rows</th></tr>"
            f"{rows}</table><b>Problems ({len(self.problems)})</b>{probs}</div>"
        )

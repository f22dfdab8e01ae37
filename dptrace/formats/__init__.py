"""One package per input format: ``dptrace/formats/<name>/``, the package named as the format.

Each package's ``__init__`` holds the format's light spec (``SPEC``: name, tables, sniffing
rule, the engines it offers; it imports nothing heavy, no pandas), ``tables.py`` its tables'
schema (registered into :mod:`dptrace.schema`), and ``read.py`` the reader (``parse``, and
``parse_many`` for a format that reads many files at once), imported on first use by
:mod:`dptrace.registry`. A format with two routes names them like pandas engines:
``general.py`` (correct on anything, line or record by line) and ``fast.py`` (block or
columnar, declining to the general route where the layout does not fit), chosen with
``engine="auto"|"fast"|"general"``. Horovod timelines have one route (blocks, record by
record where a block does not decode) and no engine option.

A format's part of the report lives in its package too: ``sections.py`` (its section specs
and builders, found by :func:`dptrace.reports.registry.sections`; a format without one has
no section), ``terminal.py`` (their rich drawers) and ``figures.py`` (their plotly figures).
The spec, the tables and the parse routes never import these nor anything of
:mod:`dptrace.reports`: parsing does not pay for the report.

A package here whose name does not start with ``_`` is a format: :func:`names` finds it, so
a new format is one new package. Modules starting with ``_`` are shared by formats:
:mod:`._chrome` reads the Chrome trace-event container (Horovod timelines; PyTorch
profiler traces are the same container).
"""

from __future__ import annotations

import pkgutil


def names() -> list[str]:
    """The format packages under this one, in name order."""
    return sorted(info.name for info in pkgutil.iter_modules(__path__)
                  if info.ispkg and not info.name.startswith("_"))

"""One package per input format: ``dptrace/formats/<name>/``.

Each package's ``__init__`` holds the format's light spec (``SPEC``: name, tables, sniffing
rule; it imports nothing heavy, no pandas), ``tables.py`` its tables' schema (registered into
:mod:`dptrace.schema`), and ``read.py`` the reader (``parse``, and ``parse_many`` for a
format that reads many files at once), with its routes (``general.py``, ``fast.py``) beside.
A package here whose name does not start with ``_`` is a format: :func:`names` finds it, so
a new format is one new package. Modules starting with ``_`` (:mod:`._chrome`) are shared
by formats.
"""

from __future__ import annotations

import pkgutil


def names() -> list[str]:
    """The format packages under this one, in name order."""
    return sorted(info.name for info in pkgutil.iter_modules(__path__)
                  if info.ispkg and not info.name.startswith("_"))

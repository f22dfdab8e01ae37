"""Fleets of jobs (issue 33): `dptrace survey` over many runs, its Parquet cache, and the
engines that run the per-run work (serial, a process pool, Dask: :mod:`dptrace.fleet.engines`).

``dptrace.fleet.survey(...)`` returns a :class:`~dptrace.fleet.api.Fleet` (both names
load on first use: importing this package imports no pandas). The modules:
:mod:`.discover` (job folders and their files' fingerprints), :mod:`.versions` (parser and
analysis versions), :mod:`.cache` (the Parquet cache), :mod:`.work` (one task: a batch of
folders), :mod:`.analyse` (a folder's fleet rows), :mod:`.api` (``survey``, ``Fleet``),
:mod:`.summary` (what the terminal shows first), :mod:`.tables` (the fleet tables'
schema), :mod:`.command` (``dptrace survey`` and ``dptrace cache``), :mod:`.engines`
(where tasks run).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .api import Fleet as Fleet
    from .api import survey as survey

__all__ = ["Fleet", "survey"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        module = importlib.import_module(".api", __name__)
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
